"""Benchmark: a Delta table's Iceberg mirror (`lakecat mirror --as iceberg`).

Run from the checkout's root:  python -m benchmarks.mirror [--files 10000] [--rows-per-file 20] [--commits 10]
[--rounds 3] [--large-files 100] [--large-rows-per-file 100000] [--out F] [--docs]
Writes a Delta table of N files with delta-rs (one file per partition), registers it, and measures: the first mirror
(Iceberg metadata over every file), the catch-up of one Delta commit of 10 files (``mirror --sync``, lakecat's own
work: the log read and the Iceberg commit), and a full read of the mirror by pyiceberg against delta-rs reading the
Delta table and pyiceberg reading a native Iceberg table of the same shape (the control), side by side in each round;
the reads again over a table of few large files. No JVM. Prints one JSON document; ``--docs`` writes its table into
docs/commands/mirror.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from .measure import machine_info, rounded
from .report import publish

PAGE = "docs/commands/mirror.md"


def _rows(files: int, rows_per_file: int, first_part: int) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    n = files * rows_per_file
    start = first_part * rows_per_file
    ids = pa.array(range(start, start + n), pa.int64())
    local = pc.subtract(ids, start)
    names = pa.array([f"n{k}" for k in range(997)])
    return pa.table({
        "id": ids,
        "part": pc.add(pc.divide(local, rows_per_file), first_part).cast(pa.int32()),
        "name": pc.take(names, pc.subtract(local, pc.multiply(pc.divide(local, 997), 997))),
        "amount": pc.multiply(local.cast(pa.float64()), 0.5),
    })  # fmt: skip


def _spread(values: list[float]) -> dict[str, float | None]:
    return {"median": rounded(statistics.median(values)), "min": rounded(min(values)), "max": rounded(max(values))}


def _native_iceberg(work: Path, name: str, schema: Any, data: Any) -> Any:
    """The control: an Iceberg table written by pyiceberg itself with the mirror's schema and identity partitioning,
    so it has the same number of files — what any Iceberg table of that shape costs pyiceberg to read."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    catalog = SqlCatalog("control", uri=f"sqlite:///{work}/control.db", warehouse=f"file://{work}/control")
    catalog.create_namespace_if_not_exists("bench")
    spec = PartitionSpec(PartitionField(schema.find_field("part").field_id, 1000, IdentityTransform(), "part"))
    table = catalog.create_table(("bench", name), schema=schema, partition_spec=spec)
    table.append(data.cast(schema.as_arrow()))
    return catalog.load_table(("bench", name))


def _reads(location: str, mirror: Any, native: Any, rounds: int) -> dict[str, Any]:
    """Full reads side by side in each round: delta-rs of the Delta table, pyiceberg of the mirror and of the
    native control; the order rotates from round to round so that no reader always runs first or last."""
    import deltalake

    readers = {
        "delta": lambda: deltalake.DeltaTable(location).to_pyarrow_table(),
        "mirror": lambda: mirror.refresh().scan().to_arrow(),
        "native": lambda: native.scan().to_arrow(),
    }
    seconds: dict[str, list[float]] = {k: [] for k in readers}
    for r in range(rounds):
        names = list(readers)
        rows = {}
        for k in names[r % 3 :] + names[: r % 3]:
            t0 = time.perf_counter()
            rows[k] = readers[k]().num_rows
            seconds[k].append(time.perf_counter() - t0)
        assert len(set(rows.values())) == 1, rows
    delta, mirrored, control = seconds["delta"], seconds["mirror"], seconds["native"]
    return {
        "rows": rows["delta"], "read_delta_rs_s": _spread(delta), "read_pyiceberg_s": _spread(mirrored),
        "read_native_iceberg_s": _spread(control),
        "read_ratio_pyiceberg_over_delta_rs": _spread([m / d for m, d in zip(mirrored, delta, strict=True)]),
        "read_ratio_native_iceberg_over_delta_rs": _spread([c / d for c, d in zip(control, delta, strict=True)]),
        "read_ratio_mirror_over_native_iceberg": _spread([m / c for m, c in zip(mirrored, control, strict=True)]),
    }  # fmt: skip


def _large_files(work: Path, cat: Any, files: int, rows_per_file: int, rounds: int) -> dict[str, Any]:
    """The same reads over a table of few large files, where pyiceberg's per-file cost matters less."""
    import deltalake

    from lakecat.formats import get_format

    location = str(work / "large")
    data = _rows(files, rows_per_file, 0)
    deltalake.write_deltalake(location, data, partition_by=["part"])
    cat.register_table("bench.large", location=location)
    cat.load_table("bench.large").mirror(as_format="iceberg")
    mirror = get_format("iceberg").library_catalog(cat).load_table(("bench", "large"))
    native = _native_iceberg(work, "large", mirror.schema(), data)
    return {"files": files, "rows_per_file": rows_per_file, **_reads(location, mirror, native, rounds)}


def measure(files: int, rows_per_file: int, commits: int, rounds: int, large: tuple[int, int]) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="lakecat-bench-mirror-"))
    os.environ["LAKECAT_HOME"] = str(work / "home")
    import deltalake
    import pyarrow as pa

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
        sync_s, appended = [], []
        for c in range(commits):
            appended.append(_rows(10, rows_per_file, files + 10 * c))
            deltalake.write_deltalake(location, appended[-1], mode="append")
            t0 = time.perf_counter()
            res = table.sync_mirrors()[0]
            sync_s.append(time.perf_counter() - t0)
            assert res.commits == 1 and res.behind == 0, res
        mirror = get_format("iceberg").library_catalog(cat).load_table(("bench", "events"))
        every_row = pa.concat_tables([_rows(files, rows_per_file, 0), *appended])
        native = _native_iceberg(work, "events", mirror.schema(), every_row)
        reads = _reads(location, mirror, native, rounds)
        return {
            "files": files + 10 * commits, "first_mirror_files": first.files,
            "write_s": rounded(write_s, 2), "first_mirror_s": rounded(first_s, 2),
            "sync_10_files_s": _spread(sync_s), "commits": commits, **reads, "rounds": rounds,
            "large_files": _large_files(work, cat, *large, rounds) if large[0] else None,
        }  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _range(s: dict[str, Any], unit: str = " s") -> str:
    return f"{s['median']}{unit} ({s['min']}–{s['max']})"


def _read_rows(f: dict[str, Any], shape: str) -> list[str]:
    return [
        f"| {shape}: full read, delta-rs (median; min–max) | {_range(f['read_delta_rs_s'])} |",
        f"| {shape}: full read of the mirror, pyiceberg | {_range(f['read_pyiceberg_s'])} |",
        f"| {shape}: full read of a native Iceberg table of the same shape, pyiceberg | "
        f"{_range(f['read_native_iceberg_s'])} |",
        f"| {shape}: mirror / delta-rs, per round | {_range(f['read_ratio_pyiceberg_over_delta_rs'], '×')} |",
        f"| {shape}: native Iceberg / delta-rs, per round | "
        f"{_range(f['read_ratio_native_iceberg_over_delta_rs'], '×')} |",
        f"| {shape}: mirror / native Iceberg, per round | {_range(f['read_ratio_mirror_over_native_iceberg'], '×')} |",
    ]


def docs_lines(doc: dict[str, Any]) -> list[str]:
    f = doc["figures"]
    large = f.get("large_files")
    load = doc["machine"].get("load_average_start")
    small = f"{f['files']:,} files of {doc['sizes']['rows_per_file']} rows"
    lines = [
        "| measure | figure |",
        "|---|---|",
        f"| first mirror of {f['first_mirror_files']:,} files | {f['first_mirror_s']} s |",
        f"| `--sync` of one Delta commit of 10 files (median of {f['commits']}; min–max) | "
        f"{_range(f['sync_10_files_s'])} |",
        *_read_rows(f, small),
    ]
    if large:
        lines += _read_rows(large, f"{large['files']:,} files of {large['rows_per_file']:,} rows")
    return [
        *lines,
        "",
        f"Tables written by delta-rs (one file per partition), read in {f['rounds']} rounds, each round reading with "
        "the three readers one after the other in an order that rotates from round to round, on "
        f"{doc['machine']['cpu_count']} cores shared with other work (load average {load} at the start, "
        f"{doc['machine'].get('load_average_end')} at the end): absolute seconds are contended, the ratios are taken "
        "per round. The native Iceberg table is written by pyiceberg with the mirror's schema and partitioning, so it "
        "has as many files: it is what pyiceberg takes to read any Iceberg table of that shape. pyiceberg opens each "
        "file and resolves its schema in Python, while delta-rs hands the whole file list to Arrow's scanner, so a "
        "table of many small files costs pyiceberg more whichever format it reads; the table of few large files shows "
        "the reads where that per-file cost matters less. Goals: a sync of at most 0.2 s per commit, and a pyiceberg "
        "read of the mirror within 1.2× of delta-rs's read of the table.",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--rows-per-file", type=int, default=20)
    ap.add_argument("--commits", type=int, default=10, help="Delta commits of 10 files each, one sync per commit")
    ap.add_argument("--rounds", type=int, default=3, help="side-by-side read rounds")
    ap.add_argument("--large-files", type=int, default=100, help="files of the few-large-files table (0: skip it)")
    ap.add_argument("--large-rows-per-file", type=int, default=100_000)
    ap.add_argument("--out", help="also write the JSON document to this file")
    ap.add_argument("--docs", action="store_true", help=f"write the generated table into {PAGE}")
    args = ap.parse_args()
    machine = machine_info()
    figures = measure(
        args.files, args.rows_per_file, args.commits, args.rounds, (args.large_files, args.large_rows_per_file)
    )
    machine["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    doc = {"machine": machine, "figures": figures,
           "sizes": {"files": args.files, "rows_per_file": args.rows_per_file, "commits": args.commits,
                     "large_files": args.large_files, "large_rows_per_file": args.large_rows_per_file}}  # fmt: skip
    command = (
        f"python -m benchmarks.mirror --files {args.files} --commits {args.commits} --rounds {args.rounds} "
        f"--large-files {args.large_files} --large-rows-per-file {args.large_rows_per_file}"
        + (f" --out {args.out}" if args.out else "")
        + " --docs"
    )
    publish(doc, name="mirror", lines=docs_lines, command=command, out=args.out, page=PAGE if args.docs else None)


if __name__ == "__main__":
    main()
