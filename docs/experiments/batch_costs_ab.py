"""lakecat's ingest with one of its costs taken away at a time, against the plain job (an experiment, not part of the
bench; the variants that drop a counter report wrong counts). One topic of N bench events; each job reads it
``available-now`` at BATCH (env, default 50,000) records per micro-batch into a new table of FORMAT; one untimed round
of every job, then ROUNDS alternating rounds; prints each run and each job's median wall and Spark JVM CPU time, and
the code the JVM compiled in each run (Spark's codegen counters), its time in collections, the heap in use
after it, the JIT's compile time and its code cache.

    python docs/experiments/batch_costs_ab.py 2000000 3 iceberg plain,lakecat,counts,off

``JAVA_OPTIONS`` (env) adds JVM options to the embedded catalog's Spark driver (``spark.driver.extraJavaOptions``).
``JFR`` (env, a directory) keeps a Java Flight Recorder recording (its ``profile`` settings) of each timed run there, as
``<job>_<n>.jfr`` (``jfr print --events jdk.ExecutionSample``; the stream's thread is named after its query).

Jobs (comma-separated):
- ``plain``: the bench's baseline (``from_json`` -> ``writeStream``); ``lakecat``: lakecat's ingest as it is.
- ``counts``: the stream's observation counts rows and bad records only (the unknown-field columns are still computed).
- ``nonames``: every counter but the names of unknown fields (``collect_set``).
- ``off``: ``count_unknown_fields="off"`` (no unknown-field columns or counters).
- ``noobs``: no observation at all (the batch reports 0 rows: no dead-letter write either).
- ``noutf8``: no UTF-8 check (``is_valid_utf8`` replaced by true).
- a name with ``off``, ``noobs`` and ``noutf8`` in it takes all of those away at once.
- ``fb``: the plain job with its table write in ``foreachBatch`` (``df.writeTo(table).append()``; Delta:
  ``df.write.format("delta").mode("append").save(path)``): what a user's own two-sink job pays before any check.
- ``<job>_split``: the Kafka reader given ``minPartitions`` = SPLIT (env, default 6): 3 partitions on 2 cores.
- ``<job>_L``: the bench's progress listener (``lakecat.bench.suite._Progress``) registered during the run.
"""

from __future__ import annotations

import os
import pathlib
import sys

from rounds import alternate, lakecat_home, topic_of_events  # docs/experiments/rounds.py

# e.g. JAVA_OPTIONS=-XX:ReservedCodeCacheSize=128m: the embedded catalog with them
home = lakecat_home("lakecat-batch-costs-", os.environ.get("JAVA_OPTIONS", ""))

from pyspark.sql import DataFrame  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.streaming import readwriter  # noqa: E402

import lakecat  # noqa: E402
from lakecat import ingest  # noqa: E402
from lakecat.bench.suite import SCHEMA, _Progress, plain_frame, plain_query  # noqa: E402

N, ROUNDS, FORMAT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
JOBS = tuple(sys.argv[4].split(","))
BATCH = int(os.environ.get("BATCH", "50000"))
mode = {"job": "lakecat"}
real_exprs, real_plan, real_counted = (
    ingest._Pipeline._batch_exprs,
    ingest._Pipeline.plan,
    ingest._Pipeline._counted_by_stream,
)
real_load, real_observe, real_utf8 = readwriter.DataStreamReader.load, DataFrame.observe, F.is_valid_utf8


def batch_exprs(self, has_unknown: bool, sampled: bool):  # type: ignore[no-untyped-def]
    exprs = real_exprs(self, has_unknown, sampled)
    if mode["job"] in ("counts", "nonames") and has_unknown:
        none = {"unknown": "long", "names": "array<string>", "checked": "long"}
        drop = set(none) if mode["job"] == "counts" else {"names"}
        keep = [m for m in exprs.metrics if not any(f"AS {d}" in str(m) or f"AS `{d}`" in str(m) for d in drop)]
        exprs.metrics = keep + [F.lit(None).cast(none[d]).alias(d) for d in sorted(drop)]
    return exprs


def plan(self):  # type: ignore[no-untyped-def]
    if "noobs" in mode["job"]:
        DataFrame.observe = lambda df, *a, **k: df  # type: ignore[method-assign]
    if "noutf8" in mode["job"]:
        F.is_valid_utf8 = lambda c: F.lit(True)  # type: ignore[assignment]
    try:
        return real_plan(self)
    finally:
        DataFrame.observe, F.is_valid_utf8 = real_observe, real_utf8  # type: ignore[method-assign]


def counted(self, df, batch_id):  # type: ignore[no-untyped-def]
    if "noobs" in mode["job"]:
        return {"rows": 0, "bad": 0, "unknown": 0, "checked": 0, "names": []}
    return real_counted(self, df, batch_id)


def load(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    if mode["job"].endswith("_split"):
        self.option("minPartitions", os.environ.get("SPLIT", "6"))
    return real_load(self, *args, **kwargs)


ingest._Pipeline._batch_exprs = batch_exprs  # type: ignore[method-assign]
ingest._Pipeline.plan = plan  # type: ignore[method-assign]
ingest._Pipeline._counted_by_stream = counted  # type: ignore[method-assign]
readwriter.DataStreamReader.load = load  # type: ignore[method-assign]


def foreach_batch_job(spark, table, bootstrap: str, topic: str, checkpoint: str) -> None:  # type: ignore[no-untyped-def]
    """The plain job (``plain_query``'s reader and parse) with its write in ``foreachBatch``."""

    def write(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        if table.format == "delta":
            df.write.format("delta").mode("append").save(table.location)
        else:
            df.writeTo(table.spark_name).append()

    df = plain_frame(spark, bootstrap, topic, batch=BATCH)
    query = (
        df.writeStream.foreachBatch(write).option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    )
    query.awaitTermination()


def main() -> None:
    with topic_of_events(home, N, "bc_") as (cat, spark, pid, bootstrap, topic):
        codegen = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics
        management = spark._jvm.java.lang.management.ManagementFactory
        beans, jit, pools = (
            management.getGarbageCollectorMXBeans(),
            management.getCompilationMXBean(),
            management.getMemoryPoolMXBeans(),
        )
        memory = management.getMemoryMXBean()

        def code_cache() -> str:  # used / max of the JIT's code heaps, MB
            # "CodeHeap '...'" pools when the code cache is segmented (a 240 MB one or more), else one "CodeCache"
            heaps = [p for p in pools if "CodeHeap" in p.getName() or p.getName() == "CodeCache"]
            used = sum(p.getUsage().getUsed() for p in heaps) / 2**20
            peak = sum(p.getPeakUsage().getUsed() for p in heaps) / 2**20
            return f"{used:.0f} MB (peak {peak:.0f}) of {sum(p.getUsage().getMax() for p in heaps) / 2**20:.0f}"

        def gc_s() -> float:
            return float(sum(b.getCollectionTime() for b in beans)) / 1000

        def run(job: str, n: int) -> None:
            listener = _Progress(spark) if job.endswith("_L") else None
            recording = None
            if os.environ.get("JFR") and n > len(JOBS):  # a timed run: JFR's profile recording of it
                jfr = spark._jvm.jdk.jfr
                recording = jfr.Recording(jfr.Configuration.getConfiguration("profile"))
                recording.start()
            compiled, gc0, jit0 = codegen.METRIC_COMPILATION_TIME().getCount(), gc_s(), jit.getTotalCompilationTime()
            mode["job"] = job = job.removesuffix("_L")
            table = cat.create_table(f"bench.{job}_{n}", schema=SCHEMA, format=FORMAT)
            checkpoint = str(home / "ck" / f"{job}_{n}")
            try:
                if job.startswith("fb"):
                    foreach_batch_job(spark, table, bootstrap, topic, checkpoint)
                elif job.startswith("plain"):
                    plain_query(
                        spark, cat, table, bootstrap, topic, checkpoint=checkpoint, batch=BATCH
                    ).awaitTermination()
                else:
                    report = cat.ingest(table.name, lakecat.KafkaSource(bootstrap, topic), max_records_per_batch=BATCH,
                                        checkpoint=checkpoint, count_unknown_fields="off" if "off" in job else "sample")  # fmt: skip
                    assert "noobs" in job or report.rows_written == N, report
            finally:
                if listener is not None:
                    listener.close()
                if recording is not None:
                    path = pathlib.Path(os.environ["JFR"]) / f"{job}_{n}.jfr"
                    recording.dump(spark._jvm.java.io.File(str(path)).toPath())
                    recording.close()
            heap = memory.getHeapMemoryUsage().getUsed()
            print(f"   {job}: classes compiled {codegen.METRIC_COMPILATION_TIME().getCount() - compiled}, "
                  f"GC {gc_s() - gc0:.2f} s, heap used after {heap / 2**20:.0f} MB, "
                  f"JIT {(jit.getTotalCompilationTime() - jit0) / 1000:.2f} s, code cache {code_cache()}", flush=True)  # fmt: skip

        alternate(JOBS, ROUNDS, run, pid)


if __name__ == "__main__":
    main()
