"""Benchmark: a Delta table's Iceberg mirror (`lakecat mirror --as iceberg`).

Run from the checkout's root:  python -m benchmarks.mirror [--files 10000] [--rows-per-file 20] [--commits 10]
[--rounds 3] [--out F] [--docs]
Writes a Delta table of N files with delta-rs (one file per partition), registers it, and measures: the first mirror
(Iceberg metadata over every file), the catch-up of one Delta commit of 10 files (``mirror --sync``, lakecat's own
work: the log read and the Iceberg commit), and a full read of the mirror by pyiceberg against delta-rs reading the
Delta table, side by side in each round. No JVM. Prints one JSON document; ``--docs`` writes its table into
docs/commands/mirror.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from .measure import machine_info, rounded
from .report import write_named_block

PAGE = "docs/commands/mirror.md"


def _rows(files: int, rows_per_file: int, first_part: int) -> Any:
    import pyarrow as pa

    n = files * rows_per_file
    return pa.table({
        "id": pa.array(range(first_part * rows_per_file, first_part * rows_per_file + n), pa.int64()),
        "part": pa.array([first_part + i // rows_per_file for i in range(n)], pa.int32()),
        "name": pa.array([f"n{i % 997}" for i in range(n)]),
        "amount": pa.array([i * 0.5 for i in range(n)]),
    })  # fmt: skip


def _spread(values: list[float]) -> dict[str, float | None]:
    return {"median": rounded(statistics.median(values)), "min": rounded(min(values)), "max": rounded(max(values))}


def measure(files: int, rows_per_file: int, commits: int, rounds: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="lakecat-bench-mirror-"))
    os.environ["LAKECAT_HOME"] = str(work / "home")
    import deltalake

    import lakecat
    from lakecat.formats import get_format

    try:
        location = str(work / "events")
        t0 = time.perf_counter()
        deltalake.write_deltalake(location, _rows(files, rows_per_file, 0), partition_by=["part"])
        write_s = time.perf_counter() - t0
        cat = lakecat.connect()
        cat.register_table("bench.events", location=location)
        table = cat.load_table("bench.events")
        t0 = time.perf_counter()
        first = table.mirror(as_format="iceberg")
        first_s = time.perf_counter() - t0
        sync_s = []
        for c in range(commits):
            deltalake.write_deltalake(location, _rows(10, rows_per_file, files + 10 * c), mode="append")
            t0 = time.perf_counter()
            res = table.sync_mirrors()[0]
            sync_s.append(time.perf_counter() - t0)
            assert res.commits == 1 and res.behind == 0, res
        iceberg = get_format("iceberg").library_catalog(cat).load_table(("bench", "events"))
        delta_read, iceberg_read = [], []
        for _ in range(rounds):
            t0 = time.perf_counter()
            a = deltalake.DeltaTable(location).to_pyarrow_table()
            delta_read.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            b = iceberg.refresh().scan().to_arrow()
            iceberg_read.append(time.perf_counter() - t0)
            assert a.num_rows == b.num_rows, (a.num_rows, b.num_rows)
        ratios = [i / d for i, d in zip(iceberg_read, delta_read, strict=True)]
        return {
            "files": files + 10 * commits, "rows": a.num_rows, "first_mirror_files": first.files,
            "write_s": rounded(write_s, 2), "first_mirror_s": rounded(first_s, 2),
            "sync_10_files_s": _spread(sync_s), "commits": commits,
            "read_delta_rs_s": _spread(delta_read), "read_pyiceberg_s": _spread(iceberg_read),
            "read_ratio_pyiceberg_over_delta_rs": _spread(ratios), "rounds": rounds,
        }  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


def docs_lines(doc: dict[str, Any]) -> list[str]:
    f = doc["figures"]
    load = doc["machine"].get("load_average_start")
    return [
        "| measure | figure |",
        "|---|---|",
        f"| first mirror of {f['first_mirror_files']:,} files | {f['first_mirror_s']} s |",
        f"| `--sync` of one Delta commit of 10 files (median of {f['commits']}; min–max) | "
        f"{f['sync_10_files_s']['median']} s ({f['sync_10_files_s']['min']}–{f['sync_10_files_s']['max']}) |",
        f"| full read, delta-rs (median of {f['rounds']}) | {f['read_delta_rs_s']['median']} s |",
        f"| full read of the mirror, pyiceberg (median of {f['rounds']}) | {f['read_pyiceberg_s']['median']} s |",
        f"| pyiceberg / delta-rs, per round (median; min–max) | {f['read_ratio_pyiceberg_over_delta_rs']['median']}× "
        f"({f['read_ratio_pyiceberg_over_delta_rs']['min']}–{f['read_ratio_pyiceberg_over_delta_rs']['max']}) |",
        "",
        f"A table of {f['files']:,} files and {f['rows']:,} rows written by delta-rs (one file per partition), on "
        f"{doc['machine']['cpu_count']} cores shared with other work (load average {load} at the start, "
        f"{doc['machine'].get('load_average_end')} at the end): absolute seconds are contended, the ratio is "
        "measured side by side in each round. Goals: a sync of at most 0.2 s per commit, and a pyiceberg read of the "
        "mirror within 1.2× of delta-rs's read of the table; both readers read the same Parquet files.",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--rows-per-file", type=int, default=20)
    ap.add_argument("--commits", type=int, default=10, help="Delta commits of 10 files each, one sync per commit")
    ap.add_argument("--rounds", type=int, default=3, help="side-by-side read rounds")
    ap.add_argument("--out", help="also write the JSON document to this file")
    ap.add_argument("--docs", action="store_true", help=f"write the generated table into {PAGE}")
    args = ap.parse_args()
    machine = machine_info()
    figures = measure(args.files, args.rows_per_file, args.commits, args.rounds)
    machine["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    doc = {"machine": machine, "figures": figures,
           "sizes": {"files": args.files, "rows_per_file": args.rows_per_file, "commits": args.commits}}  # fmt: skip
    text = json.dumps(doc, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    if args.docs:
        command = (
            f"python -m benchmarks.mirror --files {args.files} --commits {args.commits} --rounds {args.rounds} --docs"
        )
        write_named_block(PAGE, "mirror", docs_lines(doc), command=command)


if __name__ == "__main__":
    main()
