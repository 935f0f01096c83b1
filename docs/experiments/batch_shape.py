"""What the shape of a streaming ingest's batches costs (an experiment, not part of the bench).

One Spark session, one local Kafka broker, one topic of N events of the bench's shape; every job reads it
``available-now`` at 50,000 per micro-batch with lakecat's Kafka consumer defaults and writes its batches with Spark's
``noop`` sink, so that only the batch's shape and the work on it differ. One untimed round of every job first, then
ROUNDS alternating rounds; prints each job's median wall time and the Spark JVM's CPU time (from /proc).

    python docs/experiments/batch_shape.py 1000000 6

Jobs:
- ``plain``: ``from_json`` -> ``foreachBatch`` -> write.
- ``wide``: lakecat's parse (``_parse_json``, unknown fields sampled) as the batch, every column of it (the shape
  before the ``BAD`` struct) -> observation -> good-rows filter -> write.
- ``packed``: the same, the batch packed as ``_Pipeline`` hands it over now (``lakecat.ingest._pack_bad``).
- ``no_observation``: ``wide`` without the observation (its counters are what the report and the dead-letter
  decision need, so lakecat keeps it).
"""

from __future__ import annotations

import os
import pathlib
import statistics
import sys
import tempfile
import time
import uuid

home = pathlib.Path(tempfile.mkdtemp(prefix="lakecat-batch-shape-"))
os.environ["LAKECAT_HOME"] = str(home)

from pyspark.sql import Observation  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

import lakecat  # noqa: E402
from lakecat.bench.suite import SCHEMA, _events  # noqa: E402
from lakecat.ingest import _batch_columns, _pack_bad, _parse_json  # noqa: E402
from lakecat.kafka_local import LocalKafka, create_topic, free_port, produce  # noqa: E402
from lakecat.records import CHECKED, ERROR, UNKNOWN  # noqa: E402
from lakecat.sources.base import StreamOptions  # noqa: E402

N, ROUNDS = int(sys.argv[1]), int(sys.argv[2])
JOBS = ("plain", "wide", "packed", "no_observation")


def jvm_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        parts = fh.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    broker = LocalKafka(data_dir=home / "kafka", port=free_port())
    bootstrap = broker.start(timeout=180)
    try:
        cat = lakecat.connect()
        spark = cat.session()
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        topic = "shape_" + uuid.uuid4().hex[:6]
        create_topic(bootstrap, topic, partitions=3)
        produce(bootstrap, topic, _events(N), timeout=900)
        fields = list(T._parse_datatype_string(SCHEMA).fields)
        names = [f.name for f in fields]
        source = lakecat.KafkaSource(bootstrap, topic)
        metrics = [F.count(F.lit(1)).alias("rows"), F.count(F.col(ERROR)).alias("bad"),
                   F.count(F.col(UNKNOWN)).alias("unknown"),
                   F.slice(F.array_distinct(F.flatten(F.collect_set(F.col(UNKNOWN)))), 1, 100).alias("names"),
                   F.count(F.when(F.col(CHECKED), 1)).alias("checked")]  # fmt: skip

        def write(df):  # type: ignore[no-untyped-def]
            df.write.format("noop").mode("overwrite").save()

        def classified(df, observe: bool):  # type: ignore[no-untyped-def]
            df = df.select(*names, ERROR, UNKNOWN, CHECKED)
            if observe:
                df = df.observe(Observation("shape_" + uuid.uuid4().hex[:8]), *metrics)
            return df.where(F.col(ERROR).isNull()).select(*names)

        def run(job: str, n: int) -> None:
            raw = source.open_raw(spark, StreamOptions(max_records_per_batch=50_000))
            if job == "plain":
                df = raw.select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("j")).select("j.*")
                batch = lambda d, b: write(d)  # noqa: E731
            else:
                df = _parse_json(raw, fields, keep_value=False, count_unknown="sample")
                if job == "packed":
                    df = _pack_bad(df, _batch_columns(fields, with_metadata=False))
                observe = job != "no_observation"
                batch = lambda d, b: write(classified(d, observe))  # noqa: E731
            (df.writeStream.foreachBatch(batch).option("checkpointLocation", str(home / "ck" / f"{job}_{n}"))
             .trigger(availableNow=True).start().awaitTermination())  # fmt: skip

        wall: dict[str, list[float]] = {j: [] for j in JOBS}
        cpu: dict[str, list[float]] = {j: [] for j in JOBS}
        n = 0
        for r in range(ROUNDS + 1):
            for job in JOBS if r % 2 == 0 else JOBS[::-1]:
                n += 1
                c0, t0 = jvm_cpu_s(pid), time.perf_counter()
                run(job, n)
                s, c = time.perf_counter() - t0, jvm_cpu_s(pid) - c0
                print(f"round {r} {job}: {s:.2f} s, JVM CPU {c:.2f} s" + (" (untimed)" if r == 0 else ""), flush=True)
                if r:
                    wall[job].append(s)
                    cpu[job].append(c)
        for job in JOBS:
            print(f"{job:15} median {statistics.median(wall[job]):6.2f} s   JVM CPU {statistics.median(cpu[job]):6.2f} s   "
                  f"runs {[round(x, 2) for x in wall[job]]}")  # fmt: skip
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
