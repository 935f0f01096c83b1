"""Benchmark: `lakecat ingest` against a plain hand-written Structured Streaming job, both formats.

Not a test. Run:  python tests/bench/bench_ingest.py [--events 200000] [--batch 50000] [--bootstrap HOST:PORT]
Produces N JSON events to a 3-partition topic on a local KRaft broker (started in a temp dir unless
--bootstrap is given), then drains the topic with trigger available-now into a fresh table of each format:
once with lakecat (parse + validate + dead-letter split + idempotent foreachBatch writes) and once with the
plain job (readStream kafka -> from_json -> writeStream.format(...)). Same Spark session, same batch size.
Prints one JSON document: rows/s for each, and lakecat / plain.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sys
import tempfile
import time
import uuid
from pathlib import Path

SCHEMA = "id BIGINT, ts TIMESTAMP, name STRING, amt DECIMAL(10,2)"  # nullable: the plain job cannot promise NOT NULL


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _events(n: int):  # type: ignore[no-untyped-def]
    for i in range(n):
        yield json.dumps({"id": i, "ts": f"2026-01-{1 + i % 28:02d}T{i % 24:02d}:00:00", "name": f"name-{i}",
                          "amt": round(i % 10000 / 100, 2)})  # fmt: skip


def _plain(spark, catalog, table, bootstrap: str, topic: str, batch: int, checkpoint: str) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    schema = "id BIGINT, ts TIMESTAMP, name STRING, amt DECIMAL(10,2)"
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", str(batch)).load()
          .select(F.from_json(F.col("value").cast("string"), schema).alias("j")).select("j.*"))  # fmt: skip
    writer = df.writeStream.outputMode("append").option("checkpointLocation", checkpoint).trigger(availableNow=True)
    if table.format == "delta":
        query = writer.format("delta").start(table.location)
    else:
        query = writer.format("iceberg").toTable(f"{catalog.name}.{table.entry.ident}")
    query.awaitTermination()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=50_000, help="max records per micro-batch (both jobs)")
    ap.add_argument("--bootstrap", help="use this broker instead of starting one")
    ap.add_argument("--formats", default="iceberg,delta")
    args = ap.parse_args()

    home = Path(tempfile.mkdtemp(prefix="lakecat-bench-"))
    os.environ["LAKECAT_HOME"] = str(home)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import lakecat
    from lakecat.kafka_local import LocalKafka, create_topic, produce

    broker = None
    try:
        bootstrap = args.bootstrap
        if bootstrap is None:
            broker = LocalKafka(data_dir=home / "kafka", port=_free_port())
            bootstrap = broker.start(timeout=120)
        topic = "bench_" + uuid.uuid4().hex[:8]
        create_topic(bootstrap, topic, partitions=3)
        t0 = time.monotonic()
        produce(bootstrap, topic, _events(args.events), timeout=300)
        produce_s = time.monotonic() - t0

        cat = lakecat.connect()
        spark = cat.session()
        # warm-up: the first micro-batch of a JVM pays for class loading and codegen; not part of either figure
        warm = cat.create_table("bench.warmup", schema=SCHEMA, format="delta")
        cat.ingest(warm.name, lakecat.KafkaSource(bootstrap, topic), max_records_per_batch=5000,
                   checkpoint=str(home / "ck" / "warmup"), trigger="available-now", dlq=False)  # fmt: skip
        results: dict[str, dict[str, float]] = {}
        for fmt in args.formats.split(","):
            figures: dict[str, float] = {}
            for kind in ("plain", "lakecat"):
                table = cat.create_table(f"bench.{kind}_{fmt}", schema=SCHEMA, format=fmt)
                started = time.monotonic()
                if kind == "plain":
                    _plain(spark, cat, table, bootstrap, topic, args.batch, str(home / "ck" / f"plain_{fmt}"))
                else:
                    report = cat.ingest(table.name, lakecat.KafkaSource(bootstrap, topic), max_records_per_batch=args.batch,
                                        checkpoint=str(home / "ck" / f"lakecat_{fmt}"))  # fmt: skip
                    assert report.rows_written == args.events, report
                seconds = time.monotonic() - started
                figures[f"{kind}_s"] = round(seconds, 2)
                figures[f"{kind}_rows_per_s"] = round(args.events / seconds)
            figures["ratio"] = round(figures["lakecat_rows_per_s"] / figures["plain_rows_per_s"], 3)
            results[fmt] = figures
        print(json.dumps({"events": args.events, "batch": args.batch, "produce_s": round(produce_s, 1),
                          "cores": os.cpu_count(), "results": results}, indent=2))  # fmt: skip
    finally:
        if broker is not None:
            broker.stop()
        from lakecat.spark import stop_spark

        stop_spark()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
