"""Benchmark: costs that grow with the work, not faster — each figure at a small and a 10x (or 5x, 20x) larger size.

Run from the checkout's root::

    python -m benchmarks.scale [--events 1000000] [--big-events 10000000] [--batch 50000]
        [--tables 20] [--big-tables 200] [--files 10000] [--big-files 50000]
        [--snapshots 100] [--big-snapshots 2000] [--parts ingest,malformed,tables,compact,expire]
        [--formats iceberg,delta] [--out F.json] [--docs [docs/catalogs.md]]

Every measured run is a process of its own (a ``lakecat`` command, or this module's ``--child`` for what needs the
Python API), with lakecat's defaults for this machine (``lakecat.sizing``: no pinned master, heap or partitions), so
each peak RSS is one process tree's (Python + JVM), not a harness's:

- ``ingest``: N and 10N JSON events (event times 100 ms apart) from a 3-partition topic of a private broker into a
  fresh table, ``available-now``, ``--batch`` records per micro-batch; seconds of the stream and peak RSS. Then the
  same with ``--dedupe-key id --watermark 1m``: the state's rows and memory at their largest over the batches.
- ``malformed``: the N-event topic with one record in 100 replaced by one that is not JSON, against the clean topic
  (the same N), alternating, two rounds: records/s of each and their ratio.
- ``tables``: ``lakecat health --json`` and ``lakecat maintain --auto --json`` over T and 10T small tables of both
  formats (3 appends each: 3 small files, 3 versions; built without Spark as ``experiments.health_200`` does);
  seconds per table.
- ``compact``: ``Table.compact`` of F and 5F small files (``compaction.compaction_big``, one process per size);
  seconds and the driver's peak RSS.
- ``expire``: ``lakecat expire --retain-last 1`` of a table with S and 20S versions (pyiceberg / delta-rs appends);
  seconds.
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
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .ingest import SCHEMA
from .measure import child_env, last_json, machine_info, rounded, run_measured, say
from .report import machine_note, publish

PARTS = ("ingest", "malformed", "tables", "compact", "expire")
SIDES = ("lakecat", "engine")  # the two compactions measured side by side
DEDUPE_WATERMARK = "1m"
BAD_EVERY = 100  # the malformed topic: one record in 100
#: the ``lakecat`` command, run by this interpreter (what the console script does)
LAKECAT = [sys.executable, "-c", "import sys; from lakecat.commands.main import main; sys.argv[0] = 'lakecat'; main()"]


# --- inputs ------------------------------------------------------------------------------------
def timed_events(n: int, *, bad_every: int = 0) -> Iterator[bytes]:
    """``n`` JSON events whose times advance 100 ms each (a watermark moves through them); with ``bad_every``,
    every ``bad_every``-th is a record that is not JSON instead."""
    base = 1_767_225_600  # 2026-01-01T00:00:00Z
    for i in range(n):
        if bad_every and i % bad_every == bad_every - 1:
            yield b"not json {" + str(i).encode()
            continue
        t = base + i // 10
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{i % 10}00"
        yield json.dumps({"id": i, "ts": ts, "name": f"name-{i}", "amt": round(i % 10000 / 100, 2)}).encode()


def produce_topic(bootstrap: str, topic: str, n: int, bad_every: int = 0) -> None:
    """Produce ``timed_events`` to ``topic`` (3 partitions) from a child process: the producer's buffers are not the
    harness's."""
    from lakecat.kafka_local import create_topic

    create_topic(bootstrap, topic, partitions=3)
    code = (
        "import sys; from lakecat.kafka_local import produce; from benchmarks.scale import timed_events as e; "
        "produce(sys.argv[1], sys.argv[2], e(int(sys.argv[3]), bad_every=int(sys.argv[4])), timeout=3600)"
    )
    run = run_measured([sys.executable, "-c", code, bootstrap, topic, str(n), str(bad_every)], env=child_env(),
                       timeout=7200, interval=1.0)  # fmt: skip
    if run["rc"]:
        raise RuntimeError(f"producing {n:,} events failed: {run['stderr'].strip()[-400:]}")


# --- the measured processes --------------------------------------------------------------------
def child_ingest(a: argparse.Namespace) -> dict[str, Any]:
    """In a child: one ``cat.ingest`` of ``a.topic`` into a fresh table; its seconds, counts and state."""
    import lakecat

    cat = lakecat.connect()
    name = f"bench.s_{uuid.uuid4().hex[:8]}"
    cat.create_table(name, schema=SCHEMA, format=a.format)
    state: dict[str, int] = {"rows": 0, "bytes": 0}

    def seen(_handle: Any, progress: dict[str, Any] | None) -> None:
        for op in (progress or {}).get("stateOperators") or []:
            state["rows"] = max(state["rows"], int(op.get("numRowsTotal") or 0))
            state["bytes"] = max(state["bytes"], int(op.get("memoryUsedBytes") or 0))

    report = cat.ingest(name, lakecat.KafkaSource(a.bootstrap, a.topic), max_records_per_batch=a.batch,
                        on_progress=seen, dedupe_key="id" if a.dedupe else None,
                        watermark=DEDUPE_WATERMARK if a.dedupe else None)  # fmt: skip
    out: dict[str, Any] = {"duration_s": report.duration_s, "rows_written": report.rows_written,
           "rows_dead_lettered": report.rows_dead_lettered, "batches": report.batches}  # fmt: skip
    if a.dedupe:
        out["state_rows_max"], out["state_mb_max"] = state["rows"], rounded(state["bytes"] / 2**20, 1)
    return out


def child_compact(a: argparse.Namespace) -> dict[str, Any]:
    """In a child: ``compaction_big`` of ``a.files`` small files (lakecat's side and the engine's), one untimed round
    first: the first compaction in a JVM pays for its class loading. 1,000 rows a file: Iceberg's writer checks its
    target size every 1,000 rows, so fewer rows would not make that many files."""
    import lakecat

    from .compaction import compaction_big

    return compaction_big(lakecat.connect(), files=a.files, rows_per_file=1000, target="128MB", formats=[a.format],
                          repeat=2)  # fmt: skip


def measured(cmd: list[str], home: Path, *, timeout: float = 7200) -> dict[str, Any]:
    """Run ``cmd`` with ``LAKECAT_HOME=home``: its JSON, wall seconds and the peak RSS of its process tree (MB)."""
    env = child_env({**os.environ, "LAKECAT_HOME": str(home)})
    run = run_measured(cmd, env=env, timeout=timeout, interval=0.25)
    if run["rc"] not in (0, 1):  # maintain and health exit 1 for a finding
        raise RuntimeError(f"{' '.join(cmd[1:4])} exited {run['rc']}: {run['stderr'].strip()[-800:]}")
    try:
        doc = last_json(run["stdout"])
    except ValueError:
        raise RuntimeError(f"{' '.join(cmd[1:4])} printed no JSON: {run['stderr'].strip()[-1500:]}") from None
    return {"doc": doc, "wall_s": rounded(run["seconds"], 2), "peak_mb": run["peak_mb"]["total_mb"]}


def ingest_run(home: Path, bootstrap: str, topic: str, fmt: str, batch: int, *, dedupe: bool = False) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.scale", "--child", "ingest", "--bootstrap", bootstrap, "--topic", topic,
           "--format", fmt, "--batch", str(batch)] + (["--dedupe"] if dedupe else [])  # fmt: skip
    run = measured(cmd, home)
    return {**run.pop("doc"), **run}


# --- the parts ---------------------------------------------------------------------------------
def part_ingest(home: Path, bootstrap: str, topics: dict[int, str], a: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    small, big = a.events, a.big_events
    for fmt in a.formats:
        row: dict[str, Any] = {}
        for dedupe in (False, True):
            runs = {n: ingest_run(home, bootstrap, topics[n], fmt, a.batch, dedupe=dedupe) for n in (small, big)}
            key = "dedupe" if dedupe else "plain"
            row[key] = {"runs": {str(n): r for n, r in runs.items()},
                        "time_ratio": rounded(runs[big]["duration_s"] / runs[small]["duration_s"], 2),
                        "peak_ratio": rounded(runs[big]["peak_mb"] / runs[small]["peak_mb"], 2)}  # fmt: skip
            say(f"ingest {key} {fmt}: {row[key]['time_ratio']}x time, {row[key]['peak_ratio']}x peak")
        out[fmt] = row
    return out


def part_malformed(home: Path, bootstrap: str, clean: str, bad: str, a: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fmt in a.formats:
        rates: dict[str, list[float]] = {"clean": [], "malformed": []}
        for r in range(a.rounds):
            for kind in ("clean", "malformed") if r % 2 == 0 else ("malformed", "clean"):
                run = ingest_run(home, bootstrap, clean if kind == "clean" else bad, fmt, a.batch)
                rates[kind].append(a.events / run["duration_s"])
        ratios = [m / c for m, c in zip(rates["malformed"], rates["clean"], strict=True)]
        out[fmt] = {"clean_rows_s": round(statistics.median(rates["clean"])),
                    "malformed_rows_s": round(statistics.median(rates["malformed"])),
                    "ratio": rounded(statistics.median(ratios), 3), "round_ratios": [rounded(x, 3) for x in ratios]}  # fmt: skip
        say(f"malformed {fmt}: {out[fmt]['ratio']}x of clean ({out[fmt]['round_ratios']})")
    return out


def part_tables(work: Path, a: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in (a.tables, a.big_tables):
        home = work / f"tables_{n}"
        # experiments.health_200's builder, in a child: it sets LAKECAT_HOME for its process
        code = (
            "import sys; from pathlib import Path; from benchmarks.experiments.health_200 import build; "
            "build(Path(sys.argv[1]), int(sys.argv[2])); print('{}')"
        )
        measured([sys.executable, "-c", code, str(home), str(n)], home)
        row: dict[str, Any] = {}
        for verb in (["health", "--json"], ["maintain", "--auto", "--json"]):
            run = measured([*LAKECAT, *verb], home)
            row[verb[0]] = {"wall_s": run["wall_s"], "per_table_s": rounded(run["wall_s"] / n, 3),
                            "peak_mb": run["peak_mb"]}  # fmt: skip
            say(f"{verb[0]} over {n} tables: {run['wall_s']}s")
        out[str(n)] = row
    for name in ("health", "maintain"):
        out[f"{name}_per_table_ratio"] = rounded(
            out[str(a.big_tables)][name]["per_table_s"] / out[str(a.tables)][name]["per_table_s"], 2
        )
    return out


def part_compact(work: Path, a: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fmt in a.formats:
        runs = {}
        for n in (a.files, a.big_files):
            cmd = [sys.executable, "-m", "benchmarks.scale", "--child", "compact", "--files", str(n), "--format", fmt]
            run = measured(cmd, work / f"compact_{fmt}_{n}")
            row = run["doc"]["results"][fmt]
            runs[n] = {"files_before": row["files_before"], "lakecat_compact_s": row["lakecat_compact_s"],
                       "engine_compact_s": row["engine_compact_s"], "build_s": row["build_s"],
                       "phase_peak_mb": row["peak_mb"]["total_mb"], "process_peak_mb": run["peak_mb"],
                       **{f"{side}_peak_mb": row[f"{side}_peak_mb"] for side in SIDES if f"{side}_peak_mb" in row}}  # fmt: skip
            say(f"compact {n:,} files {fmt}: {row['lakecat_compact_s']}s, peak {row['peak_mb']['total_mb']} MB")
        s, b = runs[a.files], runs[a.big_files]
        out[fmt] = {"runs": {str(k): v for k, v in runs.items()},
                    "time_ratio": rounded(b["lakecat_compact_s"] / s["lakecat_compact_s"], 2),
                    "peak_ratio": rounded(b["phase_peak_mb"] / s["phase_peak_mb"], 2)}  # fmt: skip
        for side in SIDES:  # each side's own peak, from a collected heap
            if f"{side}_peak_mb" in s and f"{side}_peak_mb" in b:
                out[fmt][f"{side}_peak_ratio"] = rounded(
                    b[f"{side}_peak_mb"]["total_mb"] / s[f"{side}_peak_mb"]["total_mb"], 2
                )
    return out


def build_versions(home: Path, fmt: str, versions: int) -> str:
    """A table ``bench.v`` of ``versions`` one-row appends in ``home``'s catalog (pyiceberg / delta-rs, no Spark)."""
    code = f"""
import os, sys
os.environ["LAKECAT_HOME"] = sys.argv[1]
import pyarrow as pa
import lakecat
from lakecat.formats import get_format
from lakecat.identifiers import TableIdent
from lakecat.metastore import Registry
cat = lakecat.connect(); cat.entries()
n = int(sys.argv[2])
data = pa.table({{"id": pa.array([1], pa.int64()), "region": ["eu"]}})
if {fmt!r} == "iceberg":
    sql = get_format("iceberg").sql_catalog(cat)
    sql.create_namespace_if_not_exists("bench")
    t = sql.create_table(("bench", "v"), schema=data.schema)
    for _ in range(n):
        t.append(data)
else:
    from deltalake import write_deltalake
    loc = os.path.join(sys.argv[1], "warehouse", "bench", "v")
    for _ in range(n):
        write_deltalake(loc, data, mode="append")
    Registry(cat.metastore, "lakecat_delta_tables", "delta").register(TableIdent("bench", "v"), "file://" + loc, {{}})
print("{{}}")
"""
    measured([sys.executable, "-c", code, str(home), str(versions)], home, timeout=14400)
    return "bench.v"


def part_expire(work: Path, a: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fmt in a.formats:
        runs = {}
        for n in (a.snapshots, a.big_snapshots):
            home = work / f"expire_{fmt}_{n}"
            started = time.monotonic()
            name = build_versions(home, fmt, n)
            build_s = time.monotonic() - started
            run = measured([*LAKECAT, "expire", name, "--retain-last", "1", "--older-than",
                            "0s", "--force", "--json"], home)  # fmt: skip
            runs[n] = {"wall_s": run["wall_s"], "peak_mb": run["peak_mb"], "build_s": rounded(build_s, 1)}
            say(f"expire {n:,} versions {fmt}: {run['wall_s']}s")
        out[fmt] = {"runs": {str(k): v for k, v in runs.items()},
                    "time_ratio": rounded(runs[a.big_snapshots]["wall_s"] / runs[a.snapshots]["wall_s"], 2)}  # fmt: skip
    return out


# --- the docs table ----------------------------------------------------------------------------
def docs_lines(doc: dict[str, Any]) -> list[str]:
    """The generated table: each figure at both sizes, its growth and the bound it is held to."""
    a, m = doc["sizes"], doc["machine"]
    rows = ["| Measure | Format | Small | Large | Growth | Bound |", "|---|---|---|---|---|---|"]

    def add(what: str, fmt: str, small: Any, big: Any, growth: Any, bound: str) -> None:
        rows.append(f"| {what} | {fmt} | {small} | {big} | {f'{growth}×' if growth != '' else ''} | {bound} |")

    ev, big_ev = f"{a['events']:,}", f"{a['big_events']:,}"
    for fmt, r in doc.get("ingest", {}).items():
        for key, label in (("plain", "ingest"), ("dedupe", "ingest --dedupe-key")):
            runs = r[key]["runs"]
            s, b = runs[str(a["events"])], runs[str(a["big_events"])]
            add(f"{label}, {ev} vs {big_ev} events: s", fmt, s["duration_s"], b["duration_s"], r[key]["time_ratio"],
                "≤ 10.5×")  # fmt: skip
            add(f"{label}: peak RSS MB", fmt, s["peak_mb"], b["peak_mb"], r[key]["peak_ratio"], "≤ 1.5×")
            if key == "dedupe":
                add("dedupe state rows (max over batches)", fmt, f"{s['state_rows_max']:,}",
                    f"{b['state_rows_max']:,}", rounded(b["state_rows_max"] / max(1, s["state_rows_max"]), 2),
                    f"bounded by the {DEDUPE_WATERMARK} watermark")  # fmt: skip
    for fmt, r in doc.get("malformed", {}).items():
        add(f"ingest of {ev} events, 1% malformed vs clean: rows/s", fmt, f"{r['clean_rows_s']:,}",
            f"{r['malformed_rows_s']:,}", r["ratio"], "≥ 0.9×")  # fmt: skip
    t = doc.get("tables")
    if t:
        s, b = t[str(a["tables"])], t[str(a["big_tables"])]
        for verb in ("health", "maintain"):
            add(f"`{verb}{' --auto' if verb == 'maintain' else ''}`, {a['tables']} vs {a['big_tables']} tables: "
                "s per table", "both", s[verb]["per_table_s"], b[verb]["per_table_s"],
                t[f"{verb}_per_table_ratio"], "≤ 1.2×")  # fmt: skip
            # the process's start is in both; what one more table costs is the difference over the added tables
            extra = (b[verb]["wall_s"] - s[verb]["wall_s"]) / (a["big_tables"] - a["tables"])
            add(f"`{verb}`: s per added table", "both", "", rounded(extra, 3), "", "")
    for fmt, r in doc.get("compact", {}).items():
        s, b = r["runs"][str(a["files"])], r["runs"][str(a["big_files"])]
        add(f"compact {a['files']:,} vs {a['big_files']:,} files: s", fmt, s["lakecat_compact_s"],
            b["lakecat_compact_s"], r["time_ratio"], "≤ 5.5×")  # fmt: skip
        add("compact: driver peak MB", fmt, s["phase_peak_mb"], b["phase_peak_mb"], r["peak_ratio"], "≤ 1.5×")
        for side, label in (("lakecat", "lakecat's compaction alone"), ("engine", "the engine's procedure alone")):
            if f"{side}_peak_ratio" in r:
                ss, bb = s[f"{side}_peak_mb"], b[f"{side}_peak_mb"]
                add(f"compact: peak MB, {label} (JVM / Python)", fmt, f"{ss['jvm_mb']:,} / {ss['python_mb']:,}",
                    f"{bb['jvm_mb']:,} / {bb['python_mb']:,}", r[f"{side}_peak_ratio"], "")  # fmt: skip
    for fmt, r in doc.get("expire", {}).items():
        s, b = r["runs"][str(a["snapshots"])], r["runs"][str(a["big_snapshots"])]
        add(f"`expire`, {a['snapshots']:,} vs {a['big_snapshots']:,} versions: s", fmt, s["wall_s"], b["wall_s"],
            r["time_ratio"], "published")  # fmt: skip
    rows += ["", f"Measured with lakecat's defaults for the machine (no pinned master, heap or partitions) on "
             f"{machine_note(m)}; the growth is what to read. Each figure is one "
             "process's (`lakecat` command or API, Python and JVM)"
             + (f"; ingest at {a['batch']:,} records per micro-batch." if {"ingest", "malformed"} & set(doc) else ".")
             + (f" Measured parts: {', '.join(p for p in PARTS if p in doc)}." if set(PARTS) - set(doc) else "")]  # fmt: skip
    if any(f"{side}_peak_ratio" in r for r in doc.get("compact", {}).values() for side in SIDES):
        rows[-1] += (" A compaction's driver peak is the highest over its rounds; where a format has the rows \"alone\", "
                     "each of its compactions started from a collected heap, as a new `lakecat compact` process does.")  # fmt: skip
    for part in PARTS:  # a part measured again in a later run (``merge``) says where
        if f"{part}_machine" in doc:
            rows[-1] += (
                f" The {part} rows come from a later run ({doc[f'{part}_machine']['date'][:10]}) on {machine_note(doc[f'{part}_machine'])}."
            )
    return rows


def merge(into: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """``into`` with the parts ``run`` measured replaced by ``run``'s, each with the machine it ran on."""
    out = dict(into)
    for part in PARTS:
        if part in run:
            out[part], out[f"{part}_machine"] = run[part], run["machine"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--big-events", type=int, default=10_000_000)
    ap.add_argument("--batch", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the malformed / clean pair")
    ap.add_argument("--tables", type=int, default=20)
    ap.add_argument("--big-tables", type=int, default=200)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--big-files", type=int, default=50_000)
    ap.add_argument("--snapshots", type=int, default=100)
    ap.add_argument("--big-snapshots", type=int, default=2_000)
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--formats", default="iceberg,delta")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--docs", nargs="?", const="docs/catalogs.md", help="write the table into this page's block")
    ap.add_argument("--from-json", type=Path, help="render a saved document (with --docs) without running anything")
    ap.add_argument("--merge-into", type=Path, help="replace these parts in a saved document (and render that)")
    ap.add_argument("--child", choices=("ingest", "compact"), help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    ap.add_argument("--format", help=argparse.SUPPRESS)
    ap.add_argument("--dedupe", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.formats = a.formats.split(",")
    if a.child:
        print(json.dumps(child_ingest(a) if a.child == "ingest" else child_compact(a)))
        return
    doc = json.loads(a.from_json.read_text()) if a.from_json else run_all(a)
    if a.merge_into:  # the parts just measured replace theirs in a saved document
        doc = merge(json.loads(a.merge_into.read_text()), doc)
        a.merge_into.write_text(json.dumps(doc, indent=2) + "\n")
    publish(doc, name="scale", lines=docs_lines, command="python -m benchmarks.scale --docs", out=a.out, page=a.docs,
            echo=not a.from_json)  # fmt: skip


def run_all(a: argparse.Namespace) -> dict[str, Any]:
    """Every part of ``a.parts``; with ``--out``, the document so far is written after each part (a long run that is
    stopped keeps what it measured)."""
    from lakecat.kafka_local import LocalKafka
    from lakecat.processes import free_port

    parts = [p for p in a.parts.split(",") if p]
    doc: dict[str, Any] = {"machine": machine_info(), "parts": parts,
                           "sizes": {k: getattr(a, k) for k in ("events", "big_events", "batch", "rounds", "tables",
                                                                 "big_tables", "files", "big_files", "snapshots",
                                                                 "big_snapshots")}}  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="lakecat-bench-scale-"))
    broker = None

    def save(part: str, figures: dict[str, Any]) -> None:
        doc[part] = figures
        if a.out:
            a.out.write_text(json.dumps(doc, indent=2) + "\n")

    try:
        if {"ingest", "malformed"} & set(parts):
            broker = LocalKafka(data_dir=work / "kafka", port=free_port())
            bootstrap = broker.start(timeout=180)
            topics = {n: f"scale_{n}_{uuid.uuid4().hex[:6]}" for n in {a.events, a.big_events}}
            say(f"producing {a.events:,} events")
            produce_topic(bootstrap, topics[a.events], a.events)
            if "malformed" in parts:  # first: it needs the small topic only
                bad = f"scale_bad_{uuid.uuid4().hex[:6]}"
                produce_topic(bootstrap, bad, a.events, BAD_EVERY)
                save("malformed", part_malformed(work / "malformed", bootstrap, topics[a.events], bad, a))
            if "ingest" in parts:
                if a.big_events != a.events:
                    say(f"producing {a.big_events:,} events")
                    produce_topic(bootstrap, topics[a.big_events], a.big_events)
                save("ingest", part_ingest(work / "ingest", bootstrap, topics, a))
        if "tables" in parts:
            save("tables", part_tables(work, a))
        if "compact" in parts:
            save("compact", part_compact(work, a))
        if "expire" in parts:
            save("expire", part_expire(work, a))
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    doc["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return doc


if __name__ == "__main__":
    main()
