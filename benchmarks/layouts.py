"""Benchmark: today's layouts on both formats — clustering, deletion vectors, incremental clustering.

Run from the checkout's root::

    python -m benchmarks.layouts [--rows 10000000] [--files 40] [--rounds 3] [--formats iceberg,delta]
        [--out F.json] [--docs [docs/layouts.md]]

One process, one Spark session (lakecat's defaults for this machine), a private ``LAKECAT_HOME``. For each format:

- ``query``: the same rows (``id``, a random key ``k``, a payload) written as ``--files`` files in random order to a
  plain table and to a table clustered by ``k`` (``create --cluster-by k``, then ``compact --full`` with a target file
  size of the data's size / ``--files``, so both tables have about as many files). Then ``timetravel --where
  "k = X" --count`` and a range of 0.1% of the keys, ``--rounds`` times on each engine (light, Spark): files the read
  planned to open (``files_scanned`` of ``files_total``) and seconds.
- ``upsert``: an upsert of 1% of the rows (random ids, new payloads) into a copy-on-write table and into one with
  deletion vectors (Delta ``delta.enableDeletionVectors``; Iceberg format v3 merge-on-read): bytes the commit wrote
  (new files under the table's location, metadata included) and seconds.
- ``cluster``: on the clustered table, 10 small appends then ``compact`` (incremental clustering), and 10 more then
  ``compact --full``: files and bytes rewritten, seconds, and health's clustering depth before and after each.

Prints one JSON document; ``--docs`` writes the generated table into the ``layouts`` block of docs/layouts.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .measure import machine_info, rounded, say
from .report import publish

APPENDS = 10  # the small appends before an incremental clustering
SCHEMA = "id BIGINT, k BIGINT, v STRING"


def _bytes_under(location: str) -> dict[str, int]:
    root = Path(location.removeprefix("file://"))
    return {str(p): p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.name.endswith(".crc")}


def _insert(spark: Any, t: Any, rows: int, files: int, *, start: int = 0, payload: str = "payload") -> None:
    """``rows`` rows with ids from ``start``, random keys over [0, rows), as ``files`` files in random order."""
    spark.sql(f"INSERT INTO {t.spark_name} SELECT /*+ REPARTITION({files}) */ id, pmod(xxhash64(id), {rows}), "
              f"concat('{payload}-', id, '-', repeat('x', 40)) FROM range({start}, {start + rows})")  # fmt: skip


def _spread(values: list[float]) -> dict[str, float | None]:
    return {"median": rounded(statistics.median(values)), "min": rounded(min(values)), "max": rounded(max(values))}


def _query(t: Any, where: str, rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for engine in ("light", "spark"):
        seconds, last = [], None
        for _ in range(rounds):
            view = t.as_of(version=t.adapter.current_version(t), engine=engine)
            started = time.perf_counter()
            last = view.read(where=where, count=True)
            seconds.append(time.perf_counter() - started)
        assert last is not None
        out[engine] = {"seconds": _spread(seconds), "count": last.count, "answered_by": last.engine}
        out["files_scanned"], out["files_total"] = last.files_scanned, last.files_total
    return out


def measure_query(cat: Any, fmt: str, rows: int, files: int, rounds: int) -> tuple[dict[str, Any], Any]:
    spark = cat.session()
    plain = cat.create_table(f"bench_{fmt}.plain", schema=SCHEMA, format=fmt)
    clustered = cat.create_table(f"bench_{fmt}.clustered", schema=SCHEMA, format=fmt, cluster_by="k")
    for t in (plain, clustered):
        _insert(spark, t, rows, files)
    data_bytes = sum(_bytes_under(plain.location).values())
    target = max(1, data_bytes // files)
    started = time.perf_counter()
    full = clustered.compact(full=True, target_file_size=target)
    out: dict[str, Any] = {"target_file_size": target, "cluster_full_s": rounded(time.perf_counter() - started),
                           "clustered_files": full.files_after, "plain_files": plain.health().data_files,
                           "depth": {"plain": None, "clustered": clustered.health().clustering_depth}}  # fmt: skip
    key = rows // 3
    width = max(1, rows // 1000)
    for label, where in (("point", f"k = {key}"), ("range", f"k >= {key} AND k < {key + width}")):
        out[label] = {name: _query(t, where, rounds) for name, t in (("plain", plain), ("clustered", clustered))}
        c, p = out[label]["clustered"], out[label]["plain"]
        assert c["spark"]["count"] == p["spark"]["count"] == c["light"]["count"], (label, c, p)
        if c["files_scanned"] is not None and c["files_total"]:  # the goal: a selective read opens few of the files
            out[label]["clustered_files_share"] = rounded(c["files_scanned"] / c["files_total"], 4)
    return out, clustered


def measure_upsert(cat: Any, fmt: str, rows: int, files: int, work: Path) -> dict[str, Any]:
    spark = cat.session()
    source = work / f"upsert-{fmt}"
    changed = max(1, rows // 100)
    (spark.range(rows).selectExpr("id", f"pmod(xxhash64(id), {rows}) AS k")
     .where("pmod(xxhash64(id, 7), 100) = 0").limit(changed)
     .selectExpr("id", "k", "concat('updated-', id, '-', repeat('y', 40)) AS v")
     .write.mode("overwrite").parquet(str(source)))  # fmt: skip
    out: dict[str, Any] = {"rows_changed": spark.read.parquet(str(source)).count()}
    for mode, dv in (("copy_on_write", False), ("deletion_vectors", True)):
        t = cat.create_table(f"bench_{fmt}.upsert_{mode}", schema=SCHEMA, format=fmt, deletion_vectors=dv,
                             format_version=(3 if dv else 2) if fmt == "iceberg" else None)  # fmt: skip
        _insert(spark, t, rows, files)
        before = _bytes_under(t.location)
        started = time.perf_counter()
        res = t.upsert(str(source), key="id", file_format="parquet")
        seconds = time.perf_counter() - started
        after = _bytes_under(t.location)
        written = sum(size for path, size in after.items() if path not in before)
        out[mode] = {"seconds": rounded(seconds), "bytes_written": written, "updated": res.updated,
                     "table_bytes": sum(before.values())}  # fmt: skip
        assert t.as_of(version=t.adapter.current_version(t)).count() == rows
    out["bytes_ratio"] = rounded(out["deletion_vectors"]["bytes_written"] / out["copy_on_write"]["bytes_written"], 4)
    return out


def measure_cluster(cat: Any, t: Any, rows: int) -> dict[str, Any]:
    spark = cat.session()
    out: dict[str, Any] = {}
    small = max(1, rows // 1000)
    for step, full in (("incremental", False), ("full", True)):
        for i in range(APPENDS):
            _insert(spark, t, small, 1, start=rows + (i + (APPENDS if full else 0)) * small, payload="late")
        before = t.health()
        started = time.perf_counter()
        res = t.compact(full=full, target_file_size=before.data_bytes // max(1, before.data_files))
        seconds = time.perf_counter() - started
        out[step] = {"seconds": rounded(seconds), "files_rewritten": res.files_rewritten, "files_added": res.files_added,
                     "files_before": res.files_before, "depth_before": before.clustering_depth,
                     "depth_after": t.health().clustering_depth}  # fmt: skip
    inc, full_ = out["incremental"], out["full"]
    out["files_ratio"] = (
        rounded(inc["files_rewritten"] / full_["files_rewritten"], 4) if full_["files_rewritten"] else None
    )
    out["seconds_ratio"] = rounded(inc["seconds"] / full_["seconds"], 4) if full_["seconds"] else None
    return out


def run(rows: int, files: int, rounds: int, formats: list[str]) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="lakecat-bench-layouts-"))
    os.environ["LAKECAT_HOME"] = str(work / "home")
    doc: dict[str, Any] = {"machine": machine_info(), "rows": rows, "files": files, "rounds": rounds, "formats": {}}
    try:
        import lakecat

        cat = lakecat.connect()
        for fmt in formats:
            say(f"{fmt}: selective queries, clustered vs plain ({rows:,} rows)")
            query, clustered = measure_query(cat, fmt, rows, files, rounds)
            say(f"{fmt}: upsert of 1% with deletion vectors vs copy-on-write")
            upsert = measure_upsert(cat, fmt, rows, files, work)
            say(f"{fmt}: incremental clustering after {APPENDS} small appends vs full")
            doc["formats"][fmt] = {"query": query, "upsert": upsert, "cluster": measure_cluster(cat, clustered, rows)}
    finally:
        doc["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        shutil.rmtree(work, ignore_errors=True)
    return doc


def markdown(doc: dict[str, Any]) -> list[str]:
    """The docs table: one row per format and measurement."""
    m = doc["machine"]
    lines = [
        "| format | measurement | clustered / deletion vectors | plain / copy-on-write | ratio |",
        "|---|---|---|---|---|",
    ]
    for fmt, f in doc["formats"].items():
        for label in ("point", "range"):
            q = f["query"][label]
            c, p = q["clustered"], q["plain"]
            lines.append(f"| {fmt} | {label} query: files read | {c['files_scanned']} of {c['files_total']} | "
                         f"{p['files_scanned']} of {p['files_total']} | {q.get('clustered_files_share', 0):.1%} |")  # fmt: skip
            for engine in ("spark", "light"):
                cs, ps = c[engine]["seconds"]["median"], p[engine]["seconds"]["median"]
                lines.append(f"| {fmt} | {label} query: seconds ({engine}, median of {doc['rounds']}) | {cs:.2f} | "
                             f"{ps:.2f} | {cs / ps:.2f} |")  # fmt: skip
        u = f["upsert"]
        dv, cow = u["deletion_vectors"], u["copy_on_write"]
        lines.append(f"| {fmt} | upsert of 1% ({u['rows_changed']:,} rows): bytes written | {dv['bytes_written']:,} | "
                     f"{cow['bytes_written']:,} | {u['bytes_ratio']:.1%} |")  # fmt: skip
        lines.append(f"| {fmt} | upsert of 1%: seconds | {dv['seconds']:.1f} | {cow['seconds']:.1f} | "
                     f"{dv['seconds'] / cow['seconds']:.2f} |")  # fmt: skip
        cl = f["cluster"]
        inc, full = cl["incremental"], cl["full"]
        lines.append(f"| {fmt} | clustering after {APPENDS} small appends: files rewritten (incremental / full) | "
                     f"{inc['files_rewritten']} | {full['files_rewritten']} | {cl['files_ratio'] or 0:.1%} |")  # fmt: skip
        lines.append(f"| {fmt} | clustering after {APPENDS} small appends: seconds (incremental / full) | "
                     f"{inc['seconds']:.1f} | {full['seconds']:.1f} | {cl['seconds_ratio'] or 0:.2f} |")  # fmt: skip
    lines += ["", (f"{doc['rows']:,} rows per table in about {doc['files']} files, measured side by side in one process "
                   f"on {m['cpu_count']} cores shared with other work (load average {m['load_average_start'][0]} at the "
                   f"start, {m['load_average_end'][0]} at the end): seconds are contended, the file and byte counts "
                   "are not. Query seconds: median of the rounds (the JSON has the spread); upsert and clustering: "
                   "one run each.")]  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.layouts", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--formats", default="iceberg,delta")
    ap.add_argument("--out", help="write the JSON document here too")
    ap.add_argument("--docs", nargs="?", const="docs/layouts.md", help="write the generated table into this page")
    args = ap.parse_args(argv)
    doc = run(args.rows, args.files, args.rounds, [f.strip() for f in args.formats.split(",") if f.strip()])
    command = "python -m benchmarks.layouts " + " ".join(argv if argv is not None else sys.argv[1:])
    publish(doc, name="layouts", lines=markdown, command=command.strip(), out=args.out, page=args.docs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
