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
- ``packed``: the batch as ``_Pipeline`` hands it over now: parsed without the dead letter's detail, packed
  (``lakecat.ingest._pack_bad``).
- ``no_observation``: ``wide`` without the observation (its counters are what the report and the dead-letter
  decision need, so lakecat keeps it).
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile
import uuid

home = pathlib.Path(tempfile.mkdtemp(prefix="lakecat-batch-shape-"))
os.environ["LAKECAT_HOME"] = str(home)

from pyspark.sql import Observation  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from rounds import alternate, topic_of_events  # noqa: E402  (docs/experiments/rounds.py)

import lakecat  # noqa: E402
from lakecat.bench.suite import SCHEMA  # noqa: E402
from lakecat.ingest import _batch_columns, _pack_bad, _parse_json  # noqa: E402
from lakecat.records import CHECKED, ERROR, UNKNOWN  # noqa: E402
from lakecat.sources.base import StreamOptions  # noqa: E402

N, ROUNDS = int(sys.argv[1]), int(sys.argv[2])
JOBS = ("plain", "wide", "packed", "no_observation")


def main() -> None:
    with topic_of_events(home, N, "shape_") as (cat, spark, pid, bootstrap, topic):
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
                if job == "packed":  # as _Pipeline hands it over: without the dead letter's detail, packed
                    df = _parse_json(raw, fields, keep_value=False, count_unknown="sample", detail=False)
                    df = _pack_bad(df, _batch_columns(fields, with_metadata=False))
                else:
                    df = _parse_json(raw, fields, keep_value=False, count_unknown="sample")
                observe = job != "no_observation"
                batch = lambda d, b: write(classified(d, observe))  # noqa: E731
            (df.writeStream.foreachBatch(batch).option("checkpointLocation", str(home / "ck" / f"{job}_{n}"))
             .trigger(availableNow=True).start().awaitTermination())  # fmt: skip

        alternate(JOBS, ROUNDS, run, pid)


if __name__ == "__main__":
    main()
