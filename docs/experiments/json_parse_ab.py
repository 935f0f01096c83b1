"""Spark's ``from_json`` against lakecat's ``lakecat_from_json`` on the same records (an experiment, not part of the
bench): N events of the bench's shape, cached in memory as Kafka-style binary values, then ROUNDS alternating rounds of
parsing them all in PERMISSIVE mode with a corrupt-record column and summing one field, in lakecat's Spark session
(``local[2]``). Prints each round's seconds; round 0 warms the JIT.

    python docs/experiments/json_parse_ab.py [N] [ROUNDS]
"""

from __future__ import annotations

import sys
import time

import lakecat
from lakecat import jvm


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    spark = lakecat.connect().session()
    if not jvm.available(spark):
        sys.exit(f"no lakecat_from_json in this session: {jvm.problem()}")
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("ts", T.TimestampType()),
                           T.StructField("kind", T.StringType()), T.StructField("amount", T.DoubleType()),
                           T.StructField("user", T.StringType()), T.StructField("_c", T.StringType())])  # fmt: skip
    event = F.struct(F.col("id"), F.lit("2024-05-01T12:00:00Z").alias("ts"), F.lit("click").alias("kind"),
                     (F.col("id") * 0.5).alias("amount"), F.concat(F.lit("user-"), F.col("id") % 1000).alias("user"))  # fmt: skip
    src = spark.range(n).select(F.to_json(event).cast("binary").alias("value")).cache()
    src.count()
    text = F.col("value").cast("string")
    for r in range(rounds):
        for name, fast in (("from_json", False), ("lakecat_from_json", True)):
            p = jvm.from_json(text, schema, "_c", fast=fast)
            t = time.perf_counter()
            src.select(p.alias("p")).select(F.sum(F.col("p.id")), F.count(F.col("p._c"))).collect()
            print(f"round {r} {name}: {time.perf_counter() - t:.2f} s", flush=True)
    src.unpersist()


if __name__ == "__main__":
    main()
