"""Benchmark: `lakecat ingest --cdc debezium` against the same MERGE written by hand as a plain foreachBatch job.

Run from the checkout's root:  python -m benchmarks.cdc [--events 50000] [--keys 5000] [--batch 10000] [--bootstrap HOST:PORT]
Produces N Debezium change events (creates, updates, deletes with tombstones; heavy key repetition) keyed by id to a
3-partition topic of a private local KRaft broker (or --bootstrap), then drains the topic with trigger available-now
into a fresh table of each format: once with lakecat (envelope parse + validation + dead-letter split + last event per
key + one idempotent MERGE per batch) and once with a plain job (readStream kafka -> from_json -> foreachBatch:
row_number per key by offset -> MERGE INTO). Same Spark session, same batch size; both tables must end equal.
Prints one JSON document: events/s for each, and lakecat / plain. The suite's ``cdc`` section runs it as a
subprocess (``run_section``), in a JVM of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from .measure import child_env, last_json, rounded, run_measured

SCHEMA = "id BIGINT NOT NULL, name STRING, amt DECIMAL(10,2), ts TIMESTAMP, region STRING"


def change_events(n: int, keys: int, seed: int = 5) -> tuple[list[tuple[bytes, bytes | None]], int]:
    """(key, value) Debezium messages and the number of rows the source ends with."""
    rnd = random.Random(seed)
    alive: dict[int, int] = {}
    out: list[tuple[bytes, bytes | None]] = []
    for j in range(n):
        i = rnd.randrange(keys)
        key = json.dumps({"id": i}).encode()
        row = {"id": i, "name": f"n{i}-{j}", "amt": f"{j % 10000 / 100:.2f}",
               "ts": f"2026-01-{1 + i % 28:02d}T{j % 24:02d}:00:00Z", "region": ("eu", "us", "ap")[i % 3]}  # fmt: skip
        if i not in alive:
            ev = {"before": None, "after": row, "op": "c", "ts_ms": 1_767_225_600_000 + j}
            alive[i] = j
        elif rnd.random() < 0.8:
            ev = {"before": {"id": i}, "after": row, "op": "u", "ts_ms": 1_767_225_600_000 + j}
        else:
            ev = {"before": {"id": i}, "after": None, "op": "d", "ts_ms": 1_767_225_600_000 + j}
            del alive[i]
            out.append((key, json.dumps(ev).encode()))
            out.append((key, None))  # the tombstone Debezium sends after a delete
            continue
        out.append((key, json.dumps(ev).encode()))
    return out, len(alive)


def plain_cdc(spark, table, bootstrap: str, topic: str, batch: int, checkpoint: str) -> None:  # type: ignore[no-untyped-def]
    """The hand-written job: what a Spark user writes for Debezium -> MERGE without lakecat."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    schema = (
        "before STRUCT<id: BIGINT>, after STRUCT<id: BIGINT, name: STRING, amt: DECIMAL(10,2), ts: TIMESTAMP, "
        "region: STRING>, op STRING"
    )
    target = table.spark_name
    cols = ["id", "name", "amt", "ts", "region"]

    def apply(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        ev = df.select(F.from_json(F.col("value").cast("string"), schema).alias("e"),
                       F.from_json(F.col("key").cast("string"), "id BIGINT").alias("k"), "offset")  # fmt: skip
        ev = ev.select(F.coalesce(F.col("e.after.id"), F.col("e.before.id"), F.col("k.id")).alias("id"),
                       *[F.col(f"e.after.{c}").alias(c) for c in cols[1:]],
                       F.when(F.col("e").isNull() | (F.col("e.op") == "d"), "d").otherwise("u").alias("op"), "offset")  # fmt: skip
        w = Window.partitionBy("id").orderBy(F.col("offset").desc())
        last = ev.withColumn("rn", F.row_number().over(w)).where("rn = 1").drop("rn", "offset")
        view = f"plain_src_{batch_id}"
        last.createOrReplaceTempView(view)
        df.sparkSession.sql(
            f"MERGE INTO {target} t USING {view} s ON t.id = s.id "
            "WHEN MATCHED AND s.op = 'd' THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET {', '.join(f't.{c} = s.{c}' for c in cols[1:])} "
            f"WHEN NOT MATCHED AND s.op <> 'd' THEN INSERT ({', '.join(cols)}) VALUES ({', '.join('s.' + c for c in cols)})"
        )

    q = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
         .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", str(batch)).load()
         .writeStream.foreachBatch(apply).option("checkpointLocation", checkpoint).trigger(availableNow=True).start())  # fmt: skip
    q.awaitTermination()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--keys", type=int, default=None, help="distinct keys (default events / 10)")
    ap.add_argument("--batch", type=int, default=10_000, help="max records per micro-batch (both jobs)")
    ap.add_argument("--bootstrap", help="use this broker instead of starting one")
    ap.add_argument("--formats", default="iceberg,delta")
    args = ap.parse_args()
    keys = args.keys or max(1, args.events // 10)

    work = Path(tempfile.mkdtemp(prefix="lakecat-bench-cdc-"))
    os.environ["LAKECAT_HOME"] = str(work / "home")
    import lakecat
    from lakecat.kafka_local import LocalKafka, create_topic, produce
    from lakecat.processes import free_port

    broker = None
    try:
        bootstrap = args.bootstrap
        if not bootstrap:
            broker = LocalKafka(data_dir=work / "kafka", port=free_port())
            bootstrap = broker.start(timeout=180)
        topic = "cdc_" + uuid.uuid4().hex[:8]
        create_topic(bootstrap, topic, partitions=3)
        messages, alive = change_events(args.events, keys)
        t0 = time.perf_counter()
        produce(bootstrap, topic, messages)
        produce_s = time.perf_counter() - t0
        cat = lakecat.connect()
        spark = cat.session()
        spark.sparkContext.setLogLevel("ERROR")
        out: dict = {"events": len(messages), "change_events": args.events, "keys": keys, "rows_at_end": alive,
                     "batch": args.batch, "produce_s": round(produce_s, 1)}  # fmt: skip
        for fmt in args.formats.split(","):
            figures = {}
            for kind in ("plain", "lakecat"):
                name = f"bench.cdc_{fmt}_{kind}"
                table = cat.create_table(name, schema=SCHEMA, format=fmt, partition_by=["region"])
                t0 = time.perf_counter()
                if kind == "lakecat":
                    report = cat.ingest(name, lakecat.KafkaSource(bootstrap, topic), cdc="debezium", key=["id"],
                                        max_records_per_batch=args.batch)  # fmt: skip
                    assert report.rows_dead_lettered == 0, report
                else:
                    plain_cdc(spark, table, bootstrap, topic, args.batch, str(work / f"ckpt_{fmt}"))
                seconds = time.perf_counter() - t0
                rows = table.to_spark().count()
                assert rows == alive, (kind, fmt, rows, alive)
                figures[kind] = seconds
            out[fmt] = {"plain_s": round(figures["plain"], 2), "lakecat_s": round(figures["lakecat"], 2),
                        "plain_events_s": round(len(messages) / figures["plain"]),
                        "lakecat_events_s": round(len(messages) / figures["lakecat"]),
                        "ratio": round(figures["plain"] / figures["lakecat"], 3)}  # fmt: skip
        print(json.dumps(out, indent=2))
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def run_section(*, events: int | None, bootstrap: str | None, timeout: float) -> dict[str, Any]:
    """Runs this benchmark as a subprocess (own JVM) and returns its JSON plus its peak RSS."""
    cmd = [sys.executable, "-m", "benchmarks.cdc"]
    if events:
        cmd += ["--events", str(events)]
    if bootstrap:
        cmd += ["--bootstrap", bootstrap]
    env = child_env({k: v for k, v in os.environ.items() if k != "LAKECAT_HOME"})
    run = run_measured(cmd, env=env, timeout=timeout, interval=0.25)
    if run["rc"] != 0:
        return {"error": f"benchmarks.cdc exited {run['rc']}: {run['stderr'].strip()[-800:]}", "command": cmd[1:]}
    try:
        doc = last_json(run["stdout"])
    except ValueError:
        return {"error": f"benchmarks.cdc printed no JSON: {run['stdout'].strip()[-400:]}", "command": cmd[1:]}
    doc = doc if isinstance(doc, dict) else {"output": doc}
    doc["wall_s"] = rounded(run["seconds"], 1)
    doc["peak_mb"] = run["peak_mb"]
    return doc


if __name__ == "__main__":
    main()
