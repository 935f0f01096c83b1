"""Benchmark: `lakecat health --json` (the whole process) on a catalog of many small tables of both formats.

The tables are written without Spark — pyiceberg into lakecat's metastore (the Iceberg JDBC catalog tables)
and delta-rs into a directory registered in lakecat's Delta registry — so building 200 tables takes
seconds, not 200 Spark commits. Prints the median wall time of a few runs and checks no JVM was started.

    python -m benchmarks.experiments.health_200 [--tables 200] [--runs 5] [--home DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def build(home: Path, tables: int) -> None:
    os.environ["LAKECAT_HOME"] = str(home)
    import pyarrow as pa
    from deltalake import write_deltalake

    import lakecat
    from lakecat.formats import get_format
    from lakecat.identifiers import TableIdent
    from lakecat.metastore import Registry

    cat = lakecat.connect()
    cat.entries()  # the metastore's tables exist
    iceberg = get_format("iceberg")
    sql = iceberg.sql_catalog(cat)  # type: ignore[attr-defined]
    registry = Registry(cat.metastore, "lakecat_delta_tables", "delta")
    sql.create_namespace_if_not_exists("bench")
    for i in range(tables):
        data = pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()), "region": ["eu", "us"] * 5})
        name = f"t{i:03d}"
        if i % 2 == 0:
            tbl = sql.create_table(("bench", name), schema=data.schema)
            for _ in range(3):
                tbl.append(data)
        else:
            location = str(home / "warehouse" / "bench" / name)
            for _ in range(3):
                write_deltalake(location, data, mode="append", partition_by=["region"])
            registry.register(TableIdent("bench", name), "file://" + location, {})


PROBE = (
    "import sys; from lakecat.commands.main import main\n"
    "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    "assert 'pyspark' not in sys.modules and 'py4j' not in sys.modules, 'a JVM path was imported'\n"
    "sys.exit(code)\n"
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--home", type=Path, default=None)
    args = ap.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="lakecat-health-bench-"))
    if not (home / "catalog.db").exists():
        started = time.monotonic()
        build(home, args.tables)
        print(f"built {args.tables} tables in {time.monotonic() - started:.1f}s under {home}", file=sys.stderr)
    env = {**os.environ, "LAKECAT_HOME": str(home)}
    times = []
    for _ in range(args.runs):
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, "health", "--json"], env=env, capture_output=True, text=True
        )
        times.append(time.monotonic() - started)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
    print(
        json.dumps(
            {
                "tables": len(doc["tables"]),
                "verdicts": doc["verdicts"],
                "runs_s": [round(t, 2) for t in times],
                "median_s": round(statistics.median(times), 2),
                "jvm": False,
            }
        )
    )


if __name__ == "__main__":
    main()
