"""Where a streaming ingest counts its batches: in each batch's table write, or in the streaming plan (an experiment,
not part of the bench).

One Spark session, one local Kafka broker, one topic of N events of the bench's shape; three jobs read it
``available-now`` at 50,000 per micro-batch into a new table of FORMAT each, one untimed round of every job first,
then ROUNDS rounds in alternating order; prints each job's median wall time and the Spark JVM's CPU time (/proc).

    python docs/experiments/observation_ab.py 1000000 6 iceberg

Jobs:
- ``plain``: the bench's baseline (``from_json`` -> ``writeStream``).
- ``batch``: lakecat's ingest with each batch observing itself (what lakecat does through Spark Connect, and what it
  did everywhere before): the streaming plan is built as for a remote session, so it carries no observation.
- ``stream``: lakecat's ingest as it runs in process: the streaming plan's own observation, read back per batch.
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile

home = pathlib.Path(tempfile.mkdtemp(prefix="lakecat-observation-ab-"))
os.environ["LAKECAT_HOME"] = str(home)

from rounds import alternate, topic_of_events  # noqa: E402  (docs/experiments/rounds.py)

import lakecat  # noqa: E402
from lakecat import ingest  # noqa: E402
from lakecat.bench.suite import SCHEMA, plain_query  # noqa: E402

N, ROUNDS, FORMAT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
JOBS = ("plain", "batch", "stream")
mode = {"job": "stream"}
real_plan = ingest._Pipeline.plan


def plan(self):  # type: ignore[no-untyped-def]
    if mode["job"] != "batch":
        return real_plan(self)
    self.remote = True  # the plan of a remote session: no observation in it, so each batch observes itself
    try:
        return real_plan(self)
    finally:
        self.remote = False


ingest._Pipeline.plan = plan  # type: ignore[method-assign]


def main() -> None:
    with topic_of_events(home, N, "ab_") as (cat, spark, pid, bootstrap, topic):

        def run(job: str, n: int) -> None:
            table = cat.create_table(f"bench.{job}_{n}", schema=SCHEMA, format=FORMAT)
            checkpoint = str(home / "ck" / f"{job}_{n}")
            if job == "plain":
                plain_query(spark, cat, table, bootstrap, topic, checkpoint=checkpoint, batch=50_000).awaitTermination()
                return
            mode["job"] = job
            report = cat.ingest(table.name, lakecat.KafkaSource(bootstrap, topic), max_records_per_batch=50_000,
                                checkpoint=checkpoint)  # fmt: skip
            assert report.rows_written == N, report

        alternate(JOBS, ROUNDS, run, pid)


if __name__ == "__main__":
    main()
