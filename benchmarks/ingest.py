"""The ``ingest`` section: lakecat's Kafka ingest against the hand-written Structured Streaming job."""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lakecat.units import parse_duration

from .baselines import baseline
from .measure import TreeSampler, child_env, release_state, rounded, say

SCHEMA = "id BIGINT, ts TIMESTAMP, name STRING, amt DECIMAL(10,2)"  # nullable: the plain job cannot promise NOT NULL


# --- Spark side: the plain baseline jobs -------------------------------------------------------
def json_events(n: int, start: int = 0) -> Iterator[str]:
    for i in range(start, start + n):
        yield json.dumps({"id": i, "ts": f"2026-01-{1 + i % 28:02d}T{i % 24:02d}:00:00", "name": f"name-{i}",
                          "amt": round(i % 10000 / 100, 2)})  # fmt: skip


def produce_counted(bootstrap: str, topic: str, n: int, timeout: float) -> int:
    """Produce ``json_events(n)`` to ``topic`` in this process; the events' bytes (what ``produce_events`` runs)."""
    from lakecat.kafka_local import produce

    size = 0

    def counted() -> Iterator[str]:
        nonlocal size
        for e in json_events(n):
            size += len(e)
            yield e

    produce(bootstrap, topic, counted(), timeout=timeout)
    return size


def produce_events(bootstrap: str, topic: str, n: int, *, timeout: float) -> int:
    """Produce ``json_events(n)`` to ``topic`` from a child process (``produce_counted``); the events' bytes. The
    harness's producer is not the driver: librdkafka's buffers stay in glibc's arenas after the producer is gone, and
    in this process they would count in every later phase's peak memory."""
    code = (
        "import sys; from benchmarks.ingest import produce_counted as p; "
        "print(p(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))"
    )
    out = subprocess.run([sys.executable, "-c", code, bootstrap, topic, str(n), str(timeout)], capture_output=True,
                         text=True, check=False, env=child_env())  # fmt: skip
    if out.returncode:
        raise RuntimeError(f"producing {n:,} events failed: {out.stderr.strip()[-400:]}")
    return int(out.stdout.split()[-1])


#: ``--dedupe-key`` in the ingest section: the events' ``id`` within a watermark on their ``ts`` long enough that no
#: event is late (the events' times span 28 days), so both jobs keep every event and remember every key.
DEDUPE_KEY, DEDUPE_WATERMARK = "id", "60d"
INGEST_MODES = ("json", "dedupe")


def plain_frame(spark: Any, bootstrap: str, topic: str, *, batch: int | None = None,
                kafka_options: dict[str, str] | None = None) -> Any:  # fmt: skip
    """The baseline's stream before its sink: ``readStream.format("kafka")`` from the earliest offset (``batch``
    records per micro-batch at most, the extra reader ``kafka_options``) -> ``from_json`` of ``SCHEMA`` -> its fields."""
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest"))  # fmt: skip
    for k, v in (kafka_options or {}).items():
        reader = reader.option(k, v)
    if batch:
        reader = reader.option("maxOffsetsPerTrigger", str(batch))
    return reader.load().select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("j")).select("j.*")


def plain_query(spark: Any, catalog: Any, table: Any, bootstrap: str, topic: str, *, checkpoint: str,
                batch: int | None = None, every_s: int | None = None, name: str | None = None,
                dedupe: bool = False, kafka_options: dict[str, str] | None = None) -> Any:  # fmt: skip
    """The baseline: ``readStream.format("kafka") -> from_json -> writeStream`` into ``table``; started.

    With ``dedupe``, what a user writes for lakecat's ``--dedupe-key id --watermark 60d``:
    ``withWatermark("ts", ...) .dropDuplicatesWithinWatermark(["id"])`` between the two. ``kafka_options``: extra
    reader options (the "tuned" baseline gets lakecat's own Kafka consumer defaults)."""
    df = plain_frame(spark, bootstrap, topic, batch=batch, kafka_options=kafka_options)
    if dedupe:
        seconds = int(parse_duration(DEDUPE_WATERMARK).total_seconds())
        df = df.withWatermark("ts", f"{seconds} seconds").dropDuplicatesWithinWatermark([DEDUPE_KEY])
    writer = df.writeStream.outputMode("append").option("checkpointLocation", checkpoint)
    if name:
        writer = writer.queryName(name)
    writer = writer.trigger(processingTime=f"{every_s} seconds") if every_s else writer.trigger(availableNow=True)
    return baseline(table.format).stream_to(writer, catalog, table)


class _Progress:
    """Collects every streaming query's progress (Spark's per-trigger ``durationMs``) by query name.

    The listener is a bare py4j object behind Spark's own Python listener wrapper: it keeps each event's progress as
    Spark's JSON (two py4j calls), read when the figures are summed. PySpark's ``StreamingQueryListener`` converts
    every event field by field first (``StreamingQueryProgress.fromJObject``: hundreds of py4j calls a micro-batch),
    and that work runs beside the next micro-batch, so it would be counted in the CPU and wall time of the jobs being
    measured. Through Spark Connect (no JVM here) PySpark's listener is used."""

    def __init__(self, spark: Any) -> None:
        self.collected: dict[str, list[dict[str, Any]]] = {}
        self.raw: list[str] = []
        raw = self.raw

        class Listener:  # implements Spark's PythonStreamingQueryListener
            def onQueryStarted(self, jevent: Any) -> None:
                pass

            def onQueryProgress(self, jevent: Any) -> None:
                raw.append(jevent.progress().json())

            def onQueryIdle(self, jevent: Any) -> None:
                pass

            def onQueryTerminated(self, jevent: Any) -> None:
                pass

            class Java:
                implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]

        jvm = getattr(spark, "_jvm", None)
        if jvm is not None:
            from pyspark import SparkContext
            from pyspark.java_gateway import ensure_callback_server_started

            ensure_callback_server_started(SparkContext._gateway)
            jlistener = jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper(Listener())
            spark._jsparkSession.streams().addListener(jlistener)
            self._remove: Callable[[], object] = lambda: spark._jsparkSession.streams().removeListener(jlistener)
            return
        from pyspark.sql.streaming import StreamingQueryListener

        class Converted(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                raw.append(event.progress.json)

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

        listener = Converted()
        spark.streams.addListener(listener)
        self._remove = lambda: spark.streams.removeListener(listener)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._remove()

    def _parse(self) -> None:
        """Move the raw progresses into ``collected`` (rows and durations by query name)."""
        while self.raw:
            p = json.loads(self.raw.pop(0))
            self.collected.setdefault(p.get("name") or str(p.get("id")), []).append(
                {"rows": p.get("numInputRows"), "durationMs": dict(p.get("durationMs") or {})}
            )

    def summary(self, prefix: str) -> dict[str, Any]:
        """Sum of each ``durationMs`` part over the triggers of queries named ``prefix*`` (ms)."""
        self._parse()
        parts: dict[str, int] = {}
        triggers = data = 0
        for name, progresses in self.collected.items():
            if not name.startswith(prefix):
                continue
            for p in progresses:
                triggers += 1
                data += 1 if p["rows"] else 0
                for k, v in p["durationMs"].items():
                    parts[k] = parts.get(k, 0) + int(v)
        return {"triggers": triggers, "triggers_with_data": data, "duration_ms": dict(sorted(parts.items()))}


# --- ingest throughput -------------------------------------------------------------------------
def ingest_throughput(cat: Any, bootstrap: str, *, events: int, batch: int, formats: list[str], repeat: int = 1,
                      home: Path, sampler: TreeSampler | None = None,
                      modes: tuple[str, ...] = ("json",), plain: int = 1, tag: str = "") -> dict[str, Any]:  # fmt: skip
    """lakecat's ``available-now`` ingest against the plain job, same topic, session and batch size.

    ``modes``: ``json`` (plain JSON ingest) and ``dedupe`` (``--dedupe-key``). The runs alternate (plain, lakecat,
    lakecat, plain, ...) and the figures are medians of ``repeat`` runs each (means of 2); each row (mode and format)
    runs its rounds together, after one untimed run of it (``order`` ``by_row`` in the document). An even ``repeat`` puts
    every job's median at the same place in the run order: the runs of one process drift (at 2M the first round ran
    ~30 s, the last ~22 s), and with an odd one the job whose middle run came later gained from it (with 3 rounds,
    plain's middle run was the 4th of 6 and lakecat's the 3rd; with 5 rounds and the tuned job, lakecat's came after
    plain's). ``plain=0`` runs
    lakecat's job alone (``--set ingest_plain=0``: the largest ingest the machine does in a given time, no ratio);
    ``plain=2`` adds a "tuned" plain job, given lakecat's Kafka consumer defaults (``CONSUMER_DEFAULTS``), so that
    ``tuned_ratio`` shows lakecat's own cost apart from what its defaults save.
    """
    kinds = {0: ("lakecat",), 1: ("plain", "lakecat")}.get(int(plain), ("plain", "lakecat", "tuned"))
    import lakecat
    from lakecat.kafka_local import create_topic

    spark = cat.session()
    sampler = sampler or TreeSampler()
    topic = "bench_" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, partitions=3)
    t0 = time.monotonic()
    input_bytes = produce_events(bootstrap, topic, events, timeout=max(600, events / 500))
    produce_s = time.monotonic() - t0
    tuned_options = lakecat.KafkaSource(bootstrap, topic).consumer_options()  # what lakecat's own reader gets
    topic_disk_bytes = _topic_disk_bytes(home, topic)

    def run(
        kind: str, mode: str, fmt: str, label: str, src: str, n: int, per_batch: int, *, named: bool
    ) -> float | None:
        """One job, to completion; lakecat's setup time (None for the plain job)."""
        table = cat.create_table(f"bench.{label}", schema=SCHEMA, format=fmt)
        ck = str(home / "ck" / label)
        dedupe = mode == "dedupe"
        if kind in ("plain", "tuned"):
            plain_query(spark, cat, table, bootstrap, src, checkpoint=ck, batch=per_batch, dedupe=dedupe,
                        name=f"plain_{label}" if named else None,
                        kafka_options=tuned_options if kind == "tuned" else None).awaitTermination()  # fmt: skip
            return None
        started = time.monotonic()
        extra = {"dedupe_key": DEDUPE_KEY, "watermark": DEDUPE_WATERMARK} if dedupe else {}
        report = cat.ingest(table.name, lakecat.KafkaSource(bootstrap, src), max_records_per_batch=per_batch,
                            checkpoint=ck, **extra)  # fmt: skip
        if report.rows_written != n:  # every event is distinct: dedupe must keep them all
            raise RuntimeError(f"lakecat ingest ({mode}) wrote {report.rows_written} of {n} rows")
        return time.monotonic() - started - report.duration_s

    # warm-up, both jobs, modes and formats on a small topic of its own: the first micro-batches of a JVM pay for
    # class loading and code generation; not part of any figure
    warm_topic, warm_n = topic + "_warm", max(1000, min(events // 10, 20_000))
    create_topic(bootstrap, warm_topic, partitions=3)
    produce_events(bootstrap, warm_topic, warm_n, timeout=600)
    for mode in modes:
        for fmt in formats:
            for kind in kinds:
                run(
                    kind,
                    mode,
                    fmt,
                    f"warm{tag}_{kind}_{mode}_{fmt}",
                    warm_topic,
                    warm_n,
                    max(1000, warm_n // 2),
                    named=False,
                )
    released = release_state(spark)
    progress = _Progress(spark)
    runs: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {
        m: {f: {k: [] for k in kinds} for f in formats} for m in modes
    }
    try:
        for mode, fmt in ((m, f) for m in modes for f in formats):
            # each row's runs back to back, after one untimed run of the row (released like the others): the first
            # run after another row pays for the switch, and with the rows interleaved that cost would fall on some
            # rounds' first job and not others, unevenly between lakecat and plain Spark
            run(kinds[-1], mode, fmt, f"i{tag}_lead_{mode}_{fmt}", topic, events, batch, named=False)
            released = release_state(spark) and released
            for r in range(repeat):
                for kind in kinds if r % 2 == 0 else kinds[::-1]:
                    label = f"i{tag}_{kind}_{mode}_{fmt}_{r}"
                    with sampler.phase(f"ingest_{kind}_{fmt}" + ("_dedupe" if mode == "dedupe" else "")) as usage:
                        started = time.monotonic()
                        setup = run(kind, mode, fmt, label, topic, events, batch, named=True)
                        seconds = time.monotonic() - started
                    released = release_state(spark) and released  # not timed
                    say(f"ingest {mode} {kind} {fmt}: {seconds:.1f}s ({events / seconds:,.0f} rows/s, "
                         f"cpu {usage['cpu_s']}s)")  # fmt: skip
                    runs[mode][fmt][kind].append({"s": seconds, "cpu_s": usage["cpu_s"], "setup_s": setup,
                                                  "label": label, "peak_mb": usage.get("total_mb")})  # fmt: skip
        time.sleep(1.0)  # the listener bus delivers the last progress events asynchronously
        middle = statistics.median if repeat > 2 else statistics.mean
        by_mode: dict[str, dict[str, Any]] = {}
        for mode in modes:
            results: dict[str, Any] = {}
            for fmt in formats:
                row: dict[str, Any] = {}
                for kind in kinds:
                    rs = runs[mode][fmt][kind]
                    s = middle(x["s"] for x in rs)
                    row[f"{kind}_s"] = rounded(s, 2)
                    row[f"{kind}_rows_per_s"] = round(events / s)
                    row[f"{kind}_cpu_s"] = rounded(middle(x["cpu_s"] for x in rs), 2)
                    row[f"{kind}_runs_s"] = [rounded(x["s"], 2) for x in rs]
                    row[f"{kind}_peak_mb"] = max((x["peak_mb"] or 0) for x in rs)
                    prefix = "lakecat_ingest_bench_" if kind == "lakecat" else "plain_"
                    triggers = [progress.summary(f"{prefix}{x['label']}") for x in rs]
                    row[f"{kind}_spark"] = triggers[0] if len(triggers) == 1 else triggers
                row["lakecat_setup_s"] = rounded(middle(x["setup_s"] for x in runs[mode][fmt]["lakecat"]), 2)
                if plain:  # the ratio of the medians of the times (rows/s are rounded)
                    row["ratio"] = rounded(row["plain_s"] / max(row["lakecat_s"], 1e-9))
                    row["cpu_ratio"] = rounded(row["lakecat_cpu_s"] / max(row["plain_cpu_s"], 1e-9))
                if "tuned" in kinds:  # lakecat against the plain job given lakecat's Kafka consumer defaults
                    row["tuned_ratio"] = rounded(row["tuned_s"] / max(row["lakecat_s"], 1e-9))
                results[fmt] = row
            by_mode[mode] = results
    finally:
        progress.close()
    out: dict[str, Any] = {"events": events, "batch": batch, "repeat": repeat,
                           "statistic": "median" if repeat > 2 else "mean", "order": "by_row", "topic_partitions": 3,
                           "produce_s": rounded(produce_s, 1), "input_bytes": input_bytes,
                           "topic_disk_bytes": topic_disk_bytes, "modes": list(modes), "state_released": released,
                           "results": by_mode.get("json", {})}  # fmt: skip
    if "dedupe" in by_mode:
        out["dedupe"] = {"key": DEDUPE_KEY, "watermark": DEDUPE_WATERMARK, "results": by_mode["dedupe"]}
    return out


def _topic_disk_bytes(home: Path, topic: str) -> int | None:
    """Bytes of ``topic``'s log segments when the suite's own broker (under ``home``) holds it; else None."""
    logs = home / "kafka" / "kraft-logs"
    dirs = (
        [d for d in logs.glob(f"{topic}-*") if d.is_dir() and d.name.rpartition("-")[0] == topic]
        if logs.is_dir()
        else []
    )
    if not dirs:
        return None
    return sum(f.stat().st_size for d in dirs for f in d.iterdir() if f.is_file() and f.suffix == ".log")


def parse_modes(text: str) -> tuple[str, ...]:
    modes = tuple(m.strip() for m in str(text).split(",") if m.strip())
    bad = [m for m in modes if m not in INGEST_MODES]
    if bad or not modes:
        raise ValueError(f"ingest_modes: {text!r} (use a comma-separated subset of {', '.join(INGEST_MODES)})")
    return modes


def ingest_section(
    cat: Any, bootstrap: str, sizes: dict[str, Any], *, formats: list[str], home: Path, sampler: TreeSampler
) -> dict[str, Any]:
    """The ingest section: ``events`` (200,000 in the full run), then, under ``big``, ``ingest_big_events`` (2,000,000)
    in ``ingest_big_repeat`` rounds against the plain job alone (no tuned job: the issue's bound is against plain)."""
    modes = parse_modes(sizes.get("ingest_modes") or "json")
    out = ingest_throughput(cat, bootstrap, events=sizes["events"], batch=sizes["batch"], formats=formats,
                            repeat=sizes["ingest_repeat"], home=home, sampler=sampler, modes=modes,
                            plain=int(sizes.get("ingest_plain", 1)))  # fmt: skip
    big = int(sizes.get("ingest_big_events") or 0)
    if big:
        say(f"ingest at {big:,} events")
        try:
            out["big"] = ingest_throughput(cat, bootstrap, events=big, batch=sizes["batch"], formats=formats,
                                           repeat=int(sizes.get("ingest_big_repeat") or 4), home=home, sampler=sampler,
                                           modes=modes, plain=min(1, int(sizes.get("ingest_plain", 1))), tag="big")  # fmt: skip
        except Exception as e:  # noqa: BLE001 - keep the 200k figures
            say(f"ingest at {big:,} events failed: {e!r}")
            out["big"] = {"events": big, "error": f"{type(e).__name__}: {e}"[:2000]}
    return out
