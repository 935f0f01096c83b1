"""Where a micro-batch's wall time goes, lakecat's ingest against the plain job (an experiment, not part of the bench).
One topic of N bench events, read ``available-now`` at 50,000 records per micro-batch into a new table of FORMAT, the
jobs in the order given (run the first of each once more to leave out the JVM's warm-up); per run: wall and Spark JVM
CPU time, the executors' time and CPU (Spark's stage data), the stages' own span, Spark's ``durationMs`` parts, and for
lakecat each batch's Python callback and table write, and the write's time before its job starts and after it ends.

    python docs/experiments/batch_timeline.py 2000000 iceberg plain,lakecat,plain,lakecat,lakecat,plain
"""

from __future__ import annotations

import collections
import functools
import os
import pathlib
import statistics
import sys
import tempfile
import time
from typing import Any

home = pathlib.Path(tempfile.mkdtemp(prefix="lakecat-batch-timeline-"))
os.environ["LAKECAT_HOME"] = str(home)

from rounds import jvm_cpu_s, topic_of_events  # noqa: E402  (docs/experiments/rounds.py)

import lakecat  # noqa: E402
from lakecat import ingest  # noqa: E402
from lakecat.bench.suite import SCHEMA, _Progress, plain_query  # noqa: E402
from lakecat.formats.delta.adapter import DeltaFormat  # noqa: E402
from lakecat.formats.iceberg.adapter import IcebergFormat  # noqa: E402

N, FORMAT, JOBS = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
SPANS: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)


def timed(cls: Any, name: str) -> None:
    real = getattr(cls, name)

    @functools.wraps(real)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.time()
        try:
            return real(*args, **kwargs)
        finally:
            SPANS[name].append((started, time.time()))

    setattr(cls, name, wrapper)


timed(ingest._Pipeline, "_batch")
timed(IcebergFormat, "append_batch")
timed(DeltaFormat, "append_batch")


def main() -> None:
    with topic_of_events(home, N, "tl_") as (cat, spark, pid, bootstrap, topic):
        store, jvm = spark._jsparkSession.sparkContext().statusStore(), spark._jvm
        progress = _Progress(spark)

        def stages() -> dict[tuple[int, int], Any]:
            listed = store.stageList(jvm.java.util.ArrayList(), False, False,
                                     spark.sparkContext._gateway.new_array(jvm.double, 0), jvm.java.util.ArrayList())  # fmt: skip
            it, out = listed.iterator(), {}
            while it.hasNext():
                s = it.next()
                out[(s.stageId(), s.attemptId())] = s
            return out

        for n, job in enumerate(JOBS):
            before, name = set(stages()), f"{job}_{n}"
            table = cat.create_table(f"bench.{name}", schema=SCHEMA, format=FORMAT)
            SPANS.clear()
            c0, t0 = jvm_cpu_s(pid), time.perf_counter()
            if job == "plain":
                plain_query(spark, cat, table, bootstrap, topic, checkpoint=str(home / "ck" / name), batch=50_000,
                            name=f"plain_{name}").awaitTermination()  # fmt: skip
            else:
                cat.ingest(table.name, lakecat.KafkaSource(bootstrap, topic), max_records_per_batch=50_000,
                           checkpoint=str(home / "ck" / name))  # fmt: skip
            wall, cpu = time.perf_counter() - t0, jvm_cpu_s(pid) - c0
            time.sleep(1.0)  # the last progress event arrives asynchronously
            new = [s for k, s in stages().items() if k not in before and s.completionTime().isDefined()]
            jobs = sorted(
                (s.submissionTime().get().getTime() / 1000, s.completionTime().get().getTime() / 1000) for s in new
            )
            run_s = sum(s.executorRunTime() for s in new) / 1000
            exec_cpu = sum(s.executorCpuTime() for s in new) / 1e9
            span = sum(b - a for a, b in jobs)
            parts = progress.summary("plain_" + name if job == "plain" else "lakecat_ingest_bench_" + name)[
                "duration_ms"
            ]
            print(f"{name}: wall {wall:.2f} s, JVM CPU {cpu:.2f} s, executors {run_s:.2f} s ({exec_cpu:.2f} s CPU) "
                  f"in {len(new)} stages spanning {span:.2f} s; durationMs {parts}", flush=True)  # fmt: skip
            writes, calls = SPANS.get("append_batch", []), SPANS.get("_batch", [])
            if len(writes) == len(jobs) and calls:
                pre = [j[0] - w[0] for w, j in zip(writes, jobs, strict=True)]
                post = [w[1] - j[1] for w, j in zip(writes, jobs, strict=True)]
                print(f"   python callbacks {sum(b - a for a, b in calls):.2f} s, table writes "
                      f"{sum(b - a for a, b in writes):.2f} s: before the job {sum(pre):.2f} s "
                      f"(median {statistics.median(pre) * 1000:.0f} ms), after it {sum(post):.2f} s "
                      f"(median {statistics.median(post) * 1000:.0f} ms)", flush=True)  # fmt: skip
        progress.close()


if __name__ == "__main__":
    main()
