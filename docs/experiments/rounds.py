"""What the experiment scripts share: jobs timed in alternating rounds, wall time and the Spark JVM's CPU time."""

from __future__ import annotations

import contextlib
import os
import pathlib
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any


def lakecat_home(prefix: str, java_options: str = "", conf: str = "") -> pathlib.Path:
    """A new ``LAKECAT_HOME`` (set in ``os.environ``; call before lakecat starts Spark) whose embedded catalog adds
    ``java_options`` to the Spark driver's ``spark.driver.extraJavaOptions`` and the Spark settings ``conf``
    (``key=value,key=value``, e.g. ``spark.driver.memory=768m``); neither: the bundled config as it is."""
    home = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    os.environ["LAKECAT_HOME"] = str(home)
    pairs = [p.split("=", 1) for p in conf.split(",") if p]
    if java_options:
        pairs.append(["spark.driver.extraJavaOptions", java_options])
    if pairs:
        bundled = pathlib.Path(__file__).resolve().parents[2] / "catalog_conf" / "local.toml"
        (home / "catalogs").mkdir()
        (home / "catalogs" / "local.toml").write_text(
            bundled.read_text() + "".join(f'\n"{k}" = "{v}"' for k, v in pairs) + "\n"
        )
    return home


def jvm_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (from /proc)."""
    with open(f"/proc/{pid}/stat") as fh:
        parts = fh.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def alternate(jobs: Sequence[str], rounds: int, run: Callable[[str, int], None], pid: int) -> None:
    """One untimed round of every job, then ``rounds`` rounds in alternating order; prints each run, then each job's
    median wall time and JVM CPU time. ``run(job, n)`` runs one job to completion (``n`` numbers the runs)."""
    wall: dict[str, list[float]] = {j: [] for j in jobs}
    cpu: dict[str, list[float]] = {j: [] for j in jobs}
    n = 0
    for r in range(rounds + 1):
        for job in jobs if r % 2 == 0 else list(jobs)[::-1]:
            n += 1
            c0, t0 = jvm_cpu_s(pid), time.perf_counter()
            run(job, n)
            s, c = time.perf_counter() - t0, jvm_cpu_s(pid) - c0
            print(f"round {r} {job}: {s:.2f} s, JVM CPU {c:.2f} s" + (" (untimed)" if r == 0 else ""), flush=True)
            if r:
                wall[job].append(s)
                cpu[job].append(c)
    for job in jobs:
        print(f"{job:15} median {statistics.median(wall[job]):6.2f} s   JVM CPU {statistics.median(cpu[job]):6.2f} s   "
              f"runs {[round(x, 2) for x in wall[job]]}")  # fmt: skip


@contextlib.contextmanager
def topic_of_events(home: pathlib.Path, n: int, prefix: str) -> Iterator[tuple[Any, Any, int, str, str]]:
    """A local Kafka broker under ``home`` with a new 3-partition topic of ``n`` bench events, and lakecat's catalog
    and Spark session: yields ``(catalog, spark, the Spark JVM's pid, bootstrap, topic)``; stops the broker after."""
    import lakecat
    from lakecat.bench.suite import _events
    from lakecat.kafka_local import LocalKafka, create_topic, free_port, produce

    broker = LocalKafka(data_dir=home / "kafka", port=free_port())
    bootstrap = broker.start(timeout=180)
    try:
        cat = lakecat.connect()
        spark = cat.session()
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        topic = prefix + uuid.uuid4().hex[:6]
        create_topic(bootstrap, topic, partitions=3)
        produce(bootstrap, topic, _events(n), timeout=900)
        yield cat, spark, pid, bootstrap, topic
    finally:
        broker.stop()
