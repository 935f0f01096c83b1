"""Benchmark: `lakecat compact` against the engines' own compaction, both formats.

Not a test. Run:  python tests/bench/bench_compact.py [--files 2000] [--rows 200000]
For each format, one write repartitioned into N files builds a table of many small files; an identical copy
is built the same way. lakecat's compaction (dry-run planning from metadata + the engine call + before/after
metadata reads) runs on one, the engine's own command on the other (Iceberg `CALL <catalog>.system.
rewrite_data_files`, Delta `OPTIMIZE`), same target size. A filtered and a full query are timed before and
after. Prints one JSON document. Uses a private LAKECAT_HOME in a temp dir.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time


def _timed(fn):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = fn()
    return round(time.perf_counter() - started, 3), value


def _queries(spark, name: str, fmt: str, location: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    def df():  # type: ignore[no-untyped-def]
        return spark.table(name) if fmt == "iceberg" else spark.read.format("delta").load(location)

    out = {}
    for label, q in (
        ("filtered_query_s", lambda: df().where("region = 'r3' AND id % 97 = 0").agg({"amount": "sum"}).collect()),
        ("full_query_s", lambda: df().agg({"amount": "sum", "id": "count"}).collect()),
    ):
        q()  # warm the plan caches once; the figure is the second run
        out[label], _ = _timed(q)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--target", default="64MB")
    parser.add_argument("--formats", default="iceberg,delta")
    args = parser.parse_args()

    home = tempfile.mkdtemp(prefix="lakecat-bench-compact-")
    os.environ["LAKECAT_HOME"] = home
    import lakecat
    from lakecat.units import parse_size

    cat = lakecat.connect()
    spark = cat.session()
    target = parse_size(args.target)
    report: dict[str, object] = {"files": args.files, "rows": args.rows, "target_file_size": target}
    try:
        for fmt in args.formats.split(","):
            tables = {}
            for which in ("lakecat", "engine"):
                # Iceberg would otherwise shuffle by partition before writing (distribution-mode hash): few files
                props = {"write.distribution-mode": "none", "write.spark.fanout.enabled": "true"} if fmt == "iceberg" else {}
                t = cat.create_table(f"bench.c_{fmt}_{which}", schema="id BIGINT, region STRING, amount DOUBLE",
                                     format=fmt, partition_by="region", properties=props)  # fmt: skip
                data = (spark.range(args.rows).selectExpr("id", "concat('r', CAST(id % 4 AS STRING)) AS region",
                                                          "rand(42) * 100 AS amount")  # fmt: skip
                        .repartition(args.files // 4, "region", "id"))
                build_s, _ = _timed(lambda: data.writeTo(t.spark_name).append() if fmt == "iceberg" else
                                    data.write.format("delta").mode("append").save(t.location))  # fmt: skip
                tables[which] = t
            lt, et = tables["lakecat"], tables["engine"]
            row = {"build_s": build_s, "files_before": lt.describe().files}
            row["before"] = _queries(spark, lt.spark_name if fmt == "iceberg" else "", fmt, lt.location)
            row["dry_run_s"], plan = _timed(lambda: lt.compact(target_file_size=target, dry_run=True))
            row["dry_run_estimated_files_after"] = plan.files_after
            row["lakecat_compact_s"], res = _timed(lambda: lt.compact(target_file_size=target))
            row["files_after"] = res.files_after
            if fmt == "iceberg":
                sql = (f"CALL {cat.name}.system.rewrite_data_files(table => 'bench.c_iceberg_engine', "
                       f"options => map('target-file-size-bytes', '{target}', 'min-input-files', '2'))")  # fmt: skip
                row["engine_compact_s"], _ = _timed(lambda: spark.sql(sql).collect())
            else:
                from delta.tables import DeltaTable

                spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(target))
                row["engine_compact_s"], _ = _timed(lambda: DeltaTable.forPath(spark, et.location).optimize().executeCompaction().collect())
                spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
            row["engine_files_after"] = et.describe().files
            row["after"] = _queries(spark, lt.spark_name if fmt == "iceberg" else "", fmt, lt.location)
            row["lakecat_over_engine"] = round(row["lakecat_compact_s"] / max(row["engine_compact_s"], 1e-9), 2)
            report[fmt] = row
    finally:
        from lakecat.spark import stop_spark

        stop_spark()
        shutil.rmtree(home, ignore_errors=True)
    sys.stdout.write(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
