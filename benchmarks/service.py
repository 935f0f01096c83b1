"""Benchmark: what the maintenance service costs per table — idle passes, one due table, passes over many due tables.

Run from the checkout's root::

    python -m benchmarks.service [--tables 20] [--big-tables 200] [--due-tables 20] [--big-due-tables 200]
        [--files 20] [--pass-files 5] [--rounds 3] [--script-tables 16]
        [--parts idle,one,due,script,versus] [--out F.json] [--docs [docs/maintenance-service.md]]

The figures the maintenance-service page states: ``--big-tables 10000 --big-due-tables 1000``.

Each part runs in a process of its own against a private catalog, with lakecat's defaults for the machine (no pinned
master, heap or partitions); the tables are written without Spark (pyiceberg; delta-rs), half of each format:

- ``idle``: passes of one service (``lakecat.service.Service.run_pass``) over T and 10T small tables where nothing
  is due (one file, one version each), no JVM: its first pass (health of every table, from metadata) and the next
  one (what every later pass of a running service pays: each table's commit pointer, health only where it moved).
- ``one``: a due small table (``--files`` small files, as many versions) compacted and expired by one pass in a warm
  session (a first table of the same format warmed it), ``--rounds`` tables per format.
- ``due``: one pass over D and 10D due small tables (``--pass-files`` files and versions each), after a warm-up
  table: seconds in all and per table, and how the per-table cost grows from D to 10D.
- ``script``: ``CI=true lakecat maintain --auto 'script.*'`` from a fresh process over S due small tables (``--pass-files``
  files and versions each): the whole process's seconds per table, and whether a JVM ran in its process tree.
- ``versus``: a due small table (``--files`` appends, a small file in each of 2 partitions) compacted three ways on
  identical copies in one process: the light engine, lakecat on a warm Spark session (``engine="spark"``) and the
  engine's own procedure (``rewrite_data_files`` / ``OPTIMIZE``) — ``benchmarks.compaction.compaction_light``.

Each part's peak RSS (the part's process tree) is reported beside it.

The plan makes expiry due at once (``expire.older-than = 1s``, ``retain-last = 1``, forced). Prints one JSON
document; ``--docs`` writes its table into the page's ``bench:service`` block.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .measure import child_env, last_json, machine_info, rounded, run_measured, say
from .report import machine_note, publish

PARTS = ("idle", "one", "due", "script", "versus")
#: ``python -c`` of the ``script`` part: the command line, then whether the Spark path was imported (stderr's last line).
_PROBE = (
    "import sys\nfrom lakecat.commands.main import main\ntry:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    "print('jvm' if 'py4j' in sys.modules else 'no-jvm', file=sys.stderr)\nsys.exit(code)\n"
)
#: The plan's expiry window: every version older than this (beyond the newest) is due for expiry.
EXPIRE_WINDOW_S = 1
PLAN = f"""\
[defaults]
expire.older-than = "{EXPIRE_WINDOW_S}s"
expire.retain-last = 1
force = true
"""


def past_the_window() -> None:
    """Wait until the versions just written are past the plan's expiry window (delta-rs writes twenty in well under
    a second), so that a pass finds them due for expiry."""
    time.sleep(EXPIRE_WINDOW_S + 0.5)


# --- the child: one catalog, one process ---------------------------------------------------------
def build(home: Path, namespace: str, tables: int, versions: int, formats: list[str], first: int = 0) -> list[str]:
    """``tables`` small tables ``namespace.tNNN`` of ``versions`` one-file appends each, written without Spark."""
    import pyarrow as pa
    from deltalake import write_deltalake

    import lakecat
    from lakecat.formats import get_format
    from lakecat.identifiers import TableIdent
    from lakecat.metastore import Registry

    cat = lakecat.connect()
    cat.entries()  # the metastore's tables exist
    sql = get_format("iceberg").sql_catalog(cat)  # type: ignore[attr-defined]
    registry = Registry(cat.metastore, "lakecat_delta_tables", "delta")
    sql.create_namespace_if_not_exists(namespace)
    names = []
    for i in range(first, first + tables):
        fmt, name = formats[i % len(formats)], f"t{i:03d}"
        data = pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()), "region": ["eu", "us"] * 5})
        if fmt == "iceberg":
            tbl = sql.create_table((namespace, name), schema=data.schema)
            for _ in range(versions):
                tbl.append(data)
        else:
            location = str(home / "warehouse" / namespace / name)
            for _ in range(versions):
                write_deltalake(location, data, mode="append")
            registry.register(TableIdent(namespace, name), "file://" + location, {})
        names.append(f"{namespace}.{name}")
    return names


def one_pass(cat: Any, pattern: str, plan: Path, service: Any = None, number: int = 1) -> dict[str, Any]:
    """One service pass over the tables matching ``pattern`` (pass ``number`` of ``service``, else of a new
    service); its seconds and outcomes."""
    from lakecat.service import Service, ServiceOptions

    started = time.monotonic()
    p = (service or Service(cat, ServiceOptions(pattern=pattern, plan=plan))).run_pass(number)
    if p.error:
        raise RuntimeError(f"pass over {pattern} failed: {p.error}")
    seconds = rounded(time.monotonic() - started)
    actions: dict[str, float] = {}
    if p.tables == 1:  # one table: where its seconds went, from the maintenance log
        from lakecat.maintenance_log import RunLog

        for r in RunLog(cat.metastore).runs(pattern):
            key = f"{r.action}{f' ({r.tier})' if r.tier else ''} {r.outcome}"
            actions[key] = round(actions.get(key, 0) + r.seconds, 3)
    return {"seconds": seconds, "tables": p.tables, "queued": p.queued, "worked": p.worked, "runs": p.runs,
            "verdicts": p.verdicts, "actions": actions, "evaluated": p.evaluated, "unchanged": p.unchanged}  # fmt: skip


def jvm_started() -> bool:
    return "py4j" in sys.modules


def child(a: argparse.Namespace) -> dict[str, Any]:
    home = Path(a.home)
    os.environ["LAKECAT_HOME"] = str(home)
    plan = home / "plan.toml"
    plan.write_text(PLAN)
    import lakecat

    formats = a.formats.split(",")
    out: dict[str, Any] = {}
    if a.child == "idle":
        t0 = time.monotonic()
        build(home, "bench", a.n, 1, formats)
        out["build_s"] = rounded(time.monotonic() - t0, 1)
        cat = lakecat.connect()
        from lakecat.service import Service, ServiceOptions

        service = Service(cat, ServiceOptions(pattern="bench.*", plan=plan))  # as a running service: its first pass
        out["passes"] = [one_pass(cat, "bench.*", plan, service, n) for n in (1, 2)]  # judges all, the next the moved
        out["jvm"] = jvm_started()
    elif a.child == "versus":
        from .compaction import compaction_light

        out = compaction_light(lakecat.connect(), commits=a.files, rows_per_commit=1000, target="128MB",
                               formats=formats)  # fmt: skip
    elif a.child == "one":
        cat = lakecat.connect()
        for fmt in formats:
            first = build(home, f"warm_{fmt}", 1, a.files, [fmt])[0]
            names = build(home, f"one_{fmt}", a.rounds, a.files, [fmt])
            past_the_window()
            out[fmt] = {"warm_up": one_pass(cat, first, plan), "rounds": [one_pass(cat, n, plan) for n in names]}
            out[fmt]["files_after"] = [len(cat.load_table(n).adapter.data_files(cat.load_table(n))) for n in names]
    else:
        t0 = time.monotonic()
        build(home, "bench", a.n, a.pass_files, formats)
        out["build_s"] = rounded(time.monotonic() - t0, 1)
        warm = build(home, "warm", len(formats), a.pass_files, formats)
        past_the_window()
        cat = lakecat.connect()
        for name in warm:
            one_pass(cat, name, plan)
        out["pass"] = one_pass(cat, "bench.*", plan)
        out["files_after"] = sorted({len(cat.load_table(e.ident).adapter.data_files(cat.load_table(e.ident)))
                                     for e in cat.entries("bench")})  # fmt: skip
    return out


# --- the parent: one process per part ------------------------------------------------------------
def script(a: argparse.Namespace, work: Path) -> dict[str, Any]:
    """``CI=true lakecat maintain --auto`` over ``a.script_tables`` due tables, timed as a user's script runs it."""
    home = work / "script"
    home.mkdir(parents=True)
    env = child_env({k: v for k, v in os.environ.items() if not k.startswith("LAKECAT_")})
    env.update({"LAKECAT_HOME": str(home), "CI": "true"})
    built = run_measured([sys.executable, "-c", "import sys; from benchmarks.service import build; from pathlib import "
                          f"Path; build(Path({str(home)!r}), 'script', {a.script_tables}, {a.pass_files}, "
                          f"{a.formats.split(',')!r})"], env=env, timeout=3600)  # fmt: skip
    if built["rc"] != 0:
        raise RuntimeError(f"script: building the tables failed: {built['stderr'].strip()[-1500:]}")
    plan = home / "plan.toml"
    plan.write_text(PLAN)
    run = run_measured([sys.executable, "-c", _PROBE, "maintain", "--auto", "script.*", "--plan", str(plan), "--json"],
                       env=env, timeout=3600, interval=0.05)  # fmt: skip
    if run["rc"] != 0:
        raise RuntimeError(f"script: exit {run['rc']}: {run['stderr'].strip()[-1500:]}")
    report = json.loads(run["stdout"])
    done = sorted({a["action"] for t in report["tables"] for a in t["actions"] if a["status"] == "done"})
    return {"seconds": rounded(run["seconds"], 2), "tables": a.script_tables,
            "per_table_s": rounded(run["seconds"] / a.script_tables), "done": done,
            "jvm": run["stderr"].strip().splitlines()[-1] != "no-jvm" or run["peak_mb"]["jvm_mb"] > 0,
            "peak_mb": run["peak_mb"]}  # fmt: skip


def measured(a: argparse.Namespace, part: str, work: Path, n: int = 0) -> dict[str, Any]:
    home = work / f"{part}_{n}"
    home.mkdir(parents=True)
    cmd = [sys.executable, "-m", "benchmarks.service", "--child", part, "--home", str(home), "--n", str(n),
           "--files", str(a.files), "--pass-files", str(a.pass_files), "--rounds", str(a.rounds),
           "--formats", a.formats]  # fmt: skip
    env = child_env({k: v for k, v in os.environ.items() if not k.startswith("LAKECAT_")})
    run = run_measured(cmd, env=env, timeout=7200, interval=0.5)
    if run["rc"] != 0:
        raise RuntimeError(f"{part} {n}: exit {run['rc']}: {run['stderr'].strip()[-1500:]}")
    doc = last_json(run["stdout"])
    doc["wall_s"], doc["peak_mb"] = rounded(run["seconds"], 1), run["peak_mb"]
    return doc


def run_all(a: argparse.Namespace) -> dict[str, Any]:
    parts = [p for p in a.parts.split(",") if p]
    doc: dict[str, Any] = {"machine": machine_info(), "parts": parts,
                           "sizes": {k: getattr(a, k) for k in ("tables", "big_tables", "due_tables", "big_due_tables",
                                                                 "files", "pass_files", "rounds", "script_tables",
                                                                 "formats")}}  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="lakecat-bench-service-"))
    try:
        if "idle" in parts:
            doc["idle"] = {}
            for n in (a.tables, a.big_tables):
                r = measured(a, "idle", work, n)
                doc["idle"][str(n)] = r
                say(f"idle pass over {n} tables: {r['passes'][0]['seconds']}s (again {r['passes'][1]['seconds']}s)")
        if "one" in parts:
            doc["one"] = measured(a, "one", work)
            for fmt in a.formats.split(","):
                say(f"one due table ({fmt}): {[r['seconds'] for r in doc['one'][fmt]['rounds']]}s")
        if "due" in parts:
            doc["due"] = {}
            for n in (a.due_tables, a.big_due_tables):
                r = measured(a, "due", work, n)
                r["per_table_s"] = rounded(r["pass"]["seconds"] / n)
                doc["due"][str(n)] = r
                say(f"due pass over {n} tables: {r['pass']['seconds']}s ({r['per_table_s']}s per table)")
            s, b = doc["due"][str(a.due_tables)], doc["due"][str(a.big_due_tables)]
            doc["due"]["per_table_ratio"] = rounded(b["per_table_s"] / s["per_table_s"], 2)
        if "versus" in parts:
            doc["versus"] = measured(a, "versus", work)
            for fmt, r in doc["versus"]["results"].items():
                say(
                    f"a due {fmt} table: light {r['light_s']}s, lakecat on Spark {r['spark_s']}s, engine {r['engine_s']}s"
                )
        if "script" in parts:
            doc["script"] = script(a, work)
            say(
                f"maintain --auto from a script over {a.script_tables} tables: {doc['script']['seconds']}s "
                f"({doc['script']['per_table_s']}s a table), JVM: {doc['script']['jvm']}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return doc


#: The maintenance service's stated figures, by part and size.
_TARGETS = {"idle": {"200": "≤ 20 s", "10000": "≤ 10 s"}, "due": {"200": "≤ 10 min", "1000": "≤ 10 min"}}


_PAST = {
    "compact": "compacted",
    "expire": "expired",
    "clean-orphans": "cleaned of orphans",
    "rewrite-metadata": "checkpointed",
}


def _steps_ran(one: dict[str, Any]) -> str:
    """What the single-table passes did, from their maintenance log: "compacted and expired", or only "compacted"."""
    ran = {key.split(" ")[0] for r in one["rounds"] for key in r["actions"] if key.endswith(" ok")}
    order = [*_PAST, *sorted(ran - set(_PAST))]
    return " and ".join(_PAST.get(step, step) for step in sorted(ran, key=order.index)) or "maintained"


def docs_lines(doc: dict[str, Any]) -> list[str]:
    """The Markdown table of the figures and the sentence saying how they were measured."""
    m, z = doc["machine"], doc["sizes"]
    rows = ["| what | measured | target |", "|---|---|---|"]
    for n, r in (doc.get("idle") or {}).items():
        first, again = r["passes"][0], r["passes"][1]
        rss = f"; peak RSS {r['peak_mb']['total_mb']:,} MB" if isinstance(r.get("peak_mb"), dict) else ""
        jvm = "a JVM started" if r["jvm"] else "no JVM"
        judged = f"{again['evaluated']:,} judged again" if "evaluated" in again else "health only where one moved"
        rows.append(f"| {int(n):,} small tables where nothing is due: a running service's pass (each table's commit "
                    f"pointer read, {judged}; {jvm}) | {again['seconds']} s{rss} | "
                    f"{_TARGETS['idle'].get(n, '')} |")  # fmt: skip
        rows.append(f"| the same tables, the service's first pass (health of every table from its metadata) | "
                    f"{first['seconds']} s | |")  # fmt: skip
    for fmt in z["formats"].split(","):
        one = (doc.get("one") or {}).get(fmt)
        if one:
            secs = [r["seconds"] for r in one["rounds"]]
            rows.append(f"| a due {fmt} table ({z['files']} small files, {z['files']} versions) {_steps_ran(one)}, "
                        f"one service pass | {rounded(statistics.median(secs), 2)} s (median of {len(secs)}: "
                        f"{min(secs)}–{max(secs)} s) | ≤ 0.5 s |")  # fmt: skip
    due = doc.get("due") or {}
    for n in (str(z["due_tables"]), str(z["big_due_tables"])):
        if n in due:
            r = due[n]
            rows.append(f"| a pass over {int(n):,} due small tables ({z['pass_files']} files and versions each; compacted "
                        f"and expired) | {r['pass']['seconds']} s ({r['per_table_s']} s per table) | "
                        f"{_TARGETS['due'].get(n, '')} |")  # fmt: skip
    if "per_table_ratio" in due:
        rows.append(f"| per-table cost, {z['big_due_tables']} vs {z['due_tables']} due tables | {due['per_table_ratio']}× | "
                    "flat |")  # fmt: skip
    for fmt, r in ((doc.get("versus") or {}).get("results") or {}).items():
        rows.append(f"| a due {fmt} table ({r['files_before']} small files in 2 partitions) compacted: the light engine "
                    f"/ lakecat on a warm Spark session / the engine's own command (`rewrite_data_files` / `OPTIMIZE`), "
                    "identical copies, one run | "
                    f"{r['light_s']} s / {r['spark_s']} s / {r['engine_s']} s | ≤ 0.5 s light |")  # fmt: skip
    sc = doc.get("script")
    if sc:
        rows.append(f"| `CI=true lakecat maintain --auto` from a script over {sc['tables']} due small tables, the "
                    f"process start included ({', '.join(sc['done'])}) | {sc['seconds']} s ({sc['per_table_s']} s a "
                    f"table; {'a JVM ran' if sc['jvm'] else 'no JVM'}) | ≤ 0.5 s a table, no JVM |")  # fmt: skip
    rows += ["", f"Measured by `python -m benchmarks.service` with lakecat's defaults for the machine on "
             f"{machine_note(m)}. Tables written without Spark, half Iceberg and "
             "half Delta; one service pass (`maintain --auto --every`'s) each, the due ones after a warm-up table "
             "(which starts Spark where a step needs it); expiry made due by the plan "
             f"(`expire.older-than = {EXPIRE_WINDOW_S}s`, forced). Sizes: idle passes "
             f"over {z['tables']} and {z['big_tables']} tables, due passes over {z['due_tables']} and "
             f"{z['big_due_tables']}, {z['rounds']} single due tables per format"
             + (f", a script over {sc['tables']}." if sc else ".")]  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=20)
    ap.add_argument("--big-tables", type=int, default=200)
    ap.add_argument("--due-tables", type=int, default=20)
    ap.add_argument("--big-due-tables", type=int, default=200)
    ap.add_argument("--files", type=int, default=20, help="small files (and versions) of the one due table")
    ap.add_argument("--pass-files", type=int, default=5, help="small files (and versions) of each table of a due pass")
    ap.add_argument("--rounds", type=int, default=3, help="due tables measured one by one, per format")
    ap.add_argument("--script-tables", type=int, default=16, help="due tables of the script part")
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--formats", default="iceberg,delta")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--docs", nargs="?", const="docs/maintenance-service.md", help="write the table into this page")
    ap.add_argument("--from-json", type=Path, help="render a saved document (with --docs) without running anything")
    ap.add_argument("--child", choices=PARTS, help=argparse.SUPPRESS)
    ap.add_argument("--home", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a)))
        return
    doc = json.loads(a.from_json.read_text()) if a.from_json else run_all(a)
    publish(doc, name="service", lines=docs_lines, command="python -m benchmarks.service --docs", out=a.out, page=a.docs,
            echo=not a.from_json)  # fmt: skip


if __name__ == "__main__":
    main()
