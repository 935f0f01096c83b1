"""--dedupe-key at scale: the state store in the JVM's heap (Spark's default) or in RocksDB (an experiment, not part
of the bench). Jobs: ``plain`` (the bench's baseline), ``heap`` (lakecat's ``--dedupe-key id --watermark 60d``; both
with Spark's default store, every key in the JVM's heap), ``rocksdb`` (the same with the session naming RocksDB's store);
per run: the JVM's time in collections and its peak RSS. One untimed round first, then ROUNDS alternating rounds.

    python docs/experiments/dedupe_state_ab.py 2000000 2 iceberg
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile

home = pathlib.Path(tempfile.mkdtemp(prefix="lakecat-dedupe-ab-"))
os.environ["LAKECAT_HOME"] = str(home)

from rounds import alternate, topic_of_events  # noqa: E402

import lakecat  # noqa: E402
from lakecat.bench.suite import SCHEMA, TreeSampler, plain_query, release_state, tree_usage  # noqa: E402

N, ROUNDS, FORMAT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
JOBS = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else ("plain", "heap", "rocksdb")
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def gc_s(spark) -> float:  # type: ignore[no-untyped-def]
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    return sum(b.getCollectionTime() for b in beans) / 1000


def main() -> None:
    with topic_of_events(home, N, "dd_") as (cat, spark, pid, bootstrap, topic):
        sampler = TreeSampler(pid).start()  # the Spark JVM's own RSS (not the broker's)

        def run(job: str, n: int) -> None:
            release_state(spark)
            table = cat.create_table(f"bench.{job}_{n}", schema=SCHEMA, format=FORMAT)
            checkpoint = str(home / "ck" / f"{job}_{n}")
            g0 = gc_s(spark)
            if job == "rocksdb":  # the session names RocksDB: the query reads it when it starts
                spark.conf.set(PROVIDER, ROCKSDB)
            try:
                with sampler.phase(f"{job}_{n}") as usage:
                    if job == "plain":
                        plain_query(
                            spark, cat, table, bootstrap, topic, checkpoint=checkpoint, batch=50_000, dedupe=True
                        ).awaitTermination()
                    else:
                        report = cat.ingest(
                            table.name,
                            lakecat.KafkaSource(bootstrap, topic),
                            max_records_per_batch=50_000,
                            checkpoint=checkpoint,
                            dedupe_key=["id"],
                            watermark="60d",
                        )
                        assert report.rows_written == N, report
            finally:
                spark.conf.unset(PROVIDER)
            after = tree_usage(pid)["jvm_mb"]
            print(
                f"   {job}: GC {gc_s(spark) - g0:.1f} s, JVM RSS peak {usage['jvm_mb']:.0f} MB, after {after:.0f} MB",
                flush=True,
            )

        try:
            alternate(JOBS, ROUNDS, run, pid)
        finally:
            sampler.stop()


if __name__ == "__main__":
    main()
