"""Benchmark: metadata commands (light path, no JVM) against a bare Spark session start.

Not a test. Run:  python tests/bench/bench_metadata.py [--repeat 5]
Prints one JSON document: median wall-clock seconds of whole `lakecat` processes (`list`, `describe`
on an Iceberg and a Delta table, `history` when available) and of a plain Python process that only
starts a Spark session with the same jars (what any Spark-based tool pays before its first answer).
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

SPARK_ONLY = """
import sys
from pyspark.sql import SparkSession
from delta import configure_spark_with_delta_pip
from lakecat import spark as ls
b = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
     .config("spark.jars.excludes", ls.KAFKA_TOKEN_PROVIDER_EXCLUDE))
b = configure_spark_with_delta_pip(b, extra_packages=[ls.ICEBERG_RUNTIME, ls.KAFKA_SQL, ls.KAFKA_TOKEN_PROVIDER, ls.SQLITE_JDBC])
s = b.getOrCreate(); s.range(1).count(); s.stop()
"""


def timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="lakecat-bench-"))
    env = {**os.environ, "LAKECAT_HOME": str(home)}
    lakecat = [sys.executable, "-m", "lakecat.commands.main"]
    import lakecat as lc

    os.environ["LAKECAT_HOME"] = str(home)
    cat = lc.connect()
    for fmt in ("iceberg", "delta"):
        t = cat.create_table(f"bench.t_{fmt}", schema="id BIGINT, ts TIMESTAMP", format=fmt, partition_by="days(ts)")
        for i in range(10):
            cat.session().sql(f"INSERT INTO {t.spark_name} VALUES ({i}, TIMESTAMP'2026-01-0{i % 9 + 1} 00:00:00')")
    from lakecat.spark import stop_spark

    stop_spark()
    commands = {
        "list": ["list", "--json"],
        "describe_iceberg": ["describe", "bench.t_iceberg", "--json"],
        "describe_delta": ["describe", "bench.t_delta", "--json"],
    }
    probe = subprocess.run([*lakecat, "history", "--help"], env=env, capture_output=True)
    if probe.returncode == 0:
        commands["history_iceberg"] = ["history", "bench.t_iceberg", "--json"]
        commands["history_delta"] = ["history", "bench.t_delta", "--json"]
    figures = {name: statistics.median(timed([*lakecat, *cmd], env) for _ in range(args.repeat)) for name, cmd in commands.items()}
    figures["spark_session_start"] = statistics.median(
        timed([sys.executable, "-c", SPARK_ONLY], env) for _ in range(max(1, args.repeat // 2))
    )
    figures["ratio_describe_vs_spark_start"] = round(figures["describe_iceberg"] / figures["spark_session_start"], 3)
    print(json.dumps({"unit": "seconds (median, whole process)", "repeat": args.repeat, **{k: round(v, 3) for k, v in figures.items()}}, indent=2))


if __name__ == "__main__":
    main()
