"""The ``freshness`` section: produce -> visible latency with a 1 s trigger, lakecat's handle against the plain job."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .baselines import baseline
from .ingest import SCHEMA, json_events, plain_query
from .measure import TreeSampler, quantile, rounded, say


# --- freshness ---------------------------------------------------------------------------------
def visible_rows(cat: Any, table: Any, how: str) -> Callable[[], int]:
    """A cheap poll: how many rows a reader starting now sees.

    ``metadata`` reads the newest committed snapshot the way lakecat's light path does (pyiceberg: the snapshot
    summary's ``total-records``; delta-rs: the add actions' ``numRecords``), tens of milliseconds whatever the
    load; ``spark`` runs ``SELECT count(*)`` in the driver's Spark session (answered from metadata too, but it
    competes with the stream for the same cores and adds its own planning time).
    """
    if how == "spark":
        spark, sql = cat.session(), f"SELECT count(*) FROM {table.spark_name}"
        return lambda: int(spark.sql(sql).collect()[0][0])
    return baseline(table.format).row_count_poll(table)


def _freshness_once(cat: Any, bootstrap: str, fmt: str, kind: str, *, seconds: float, rate: float, poll: str,
                    home: Path) -> dict[str, Any]:  # fmt: skip
    from confluent_kafka import Producer

    import lakecat
    from lakecat.kafka_local import create_topic

    spark = cat.session()
    label = f"f_{kind}_{fmt}"
    topic = f"fresh_{label}_{uuid.uuid4().hex[:6]}"
    # one partition: every commit makes a prefix of the events visible, so a row count names the newest one
    create_topic(bootstrap, topic, partitions=1)
    table = cat.create_table(f"bench.{label}", schema=SCHEMA, format=fmt)
    ck = str(home / "ck" / label)
    handle = query = None
    if kind == "plain":
        query = plain_query(spark, cat, table, bootstrap, topic, checkpoint=ck, every_s=1, name=f"plain_{label}")
        progress: Callable[[], Any] = lambda: query.lastProgress  # noqa: E731
    else:
        handle = cat.ingest(table.name, lakecat.KafkaSource(bootstrap, topic), trigger="every 1s", background=True,
                            checkpoint=ck)  # fmt: skip
        progress = handle.progress
    count = visible_rows(cat, table, poll)
    try:
        deadline = time.monotonic() + 180
        while progress() is None and time.monotonic() < deadline:  # the first (empty) trigger has run
            time.sleep(0.2)
        count()  # warm the poll
        time.sleep(1.0)
        n = max(1, int(seconds * rate))
        produced: list[float] = [0.0] * n
        failed: list[str] = []
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})

        def produce_loop() -> None:
            t0 = time.monotonic()
            for i, value in enumerate(json_events(n)):
                wait = t0 + i / rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                produced[i] = time.monotonic()
                producer.produce(topic, value=value)
                producer.poll(0)
            if producer.flush(60):
                failed.append("produce did not finish")

        thread = threading.Thread(target=produce_loop, name="lakecat-bench-producer", daemon=True)
        thread.start()
        seen = 0
        latencies: list[float] = []
        polls: list[float] = []
        deadline = time.monotonic() + seconds + 120
        while seen < n and time.monotonic() < deadline:
            q0 = time.monotonic()
            rows = count()
            q1 = time.monotonic()
            polls.append(q1 - q0)
            if rows > seen:  # events seen..rows-1 became visible between the previous poll and this one
                latencies.extend(q1 - produced[i] for i in range(seen, min(rows, n)))
                seen = rows
            time.sleep(0.1)  # a resolution far below the 1 s trigger, without taking a core from the stream
        thread.join(timeout=60)
        if failed or seen < n:
            raise RuntimeError(f"freshness {kind} {fmt}: {seen} of {n} events became visible ({failed})")
        commits = None
        with contextlib.suppress(Exception):
            commits = len(table.history())
    finally:
        if handle is not None:
            handle.stop()
        if query is not None:
            with contextlib.suppress(Exception):
                query.stop()
    return {"events": n, "p50_s": rounded(quantile(latencies, 0.5)), "p95_s": rounded(quantile(latencies, 0.95)),
            "max_s": rounded(max(latencies)), "poll_p50_s": rounded(quantile(polls, 0.5)), "polls": len(polls),
            "commits": commits}  # fmt: skip


def freshness(cat: Any, bootstrap: str, *, seconds: float, rate: float, formats: list[str], home: Path,
              poll: str = "metadata", sampler: TreeSampler | None = None) -> dict[str, Any]:  # fmt: skip
    """Produce -> visible latency with a 1 s trigger, lakecat's ingest handle against the plain job."""
    sampler = sampler or TreeSampler()
    results: dict[str, Any] = {}
    for fmt in formats:
        row: dict[str, Any] = {}
        for kind in ("plain", "lakecat"):
            with sampler.phase(f"freshness_{kind}_{fmt}") as usage:
                got = _freshness_once(cat, bootstrap, fmt, kind, seconds=seconds, rate=rate, poll=poll, home=home)
            got["cpu_s"] = usage["cpu_s"]
            say(f"freshness {kind} {fmt}: p50 {got['p50_s']}s p95 {got['p95_s']}s (poll p50 {got['poll_p50_s']}s)")
            row[kind] = got
        row["ratio_p50"] = rounded(row["lakecat"]["p50_s"] / max(row["plain"]["p50_s"], 1e-9))
        row["ratio_p95"] = rounded(row["lakecat"]["p95_s"] / max(row["plain"]["p95_s"], 1e-9))
        results[fmt] = row
    what = ("the newest snapshot's row count, read without Spark (pyiceberg / delta-rs)" if poll == "metadata"
            else "SELECT count(*) FROM <table> in the driver's Spark session")  # fmt: skip
    return {"trigger": "every 1s", "rate_per_s": rate, "seconds": seconds, "topic_partitions": 1, "poll": poll,
            "poll_query": what, "results": results}  # fmt: skip
