"""lakecat's benchmark suite: every figure next to the plain-Spark baseline measured in the same run.

Run::

    python -m lakecat.bench [--quick] [--scale 2m] [--out FILE.json] [--docs [docs/performance.md]] [--from-json FILE.json]

Sections (``--sections``, all by default):

- ``ingest``: N JSON events from a 3-partition Kafka topic into a fresh table of each format, ``available-now``,
  lakecat's ``cat.ingest`` against the hand-written ``readStream.format("kafka") -> from_json -> writeStream``
  job; rows/s, CPU seconds of the driver (Python + JVM), Spark's per-trigger timings, lakecat's setup time.
  ``--scale 2m`` sets the event count (2,000,000); the document states the input's size (JSON bytes and the topic's
  log on disk).
- ``freshness``: events produced at a steady rate to a 1-partition topic while a ``trigger="every 1s"``
  stream runs (lakecat's ``cat.ingest(..., background=True)`` handle, or the plain job); a poller runs
  ``SELECT max(id)`` and records, per event, the time from produce to the first query that returned it.
- ``cdc``: ``lakecat/bench/cdc.py`` (``python -m lakecat.bench.cdc``), run as a subprocess
  when the script is not there.
- ``compact``: ``Table.compact`` against the engine's own command (Iceberg ``rewrite_data_files``, Delta
  ``OPTIMIZE``) on identical tables of many small files, and the query speedup after; then the same on two
  unpartitioned tables of ``compact_big_files`` (10,000) files of ``compact_big_rows_per_file`` rows each, with the
  driver's peak memory. Each lakecat run is split into the engine's procedure and lakecat's own overhead (planning
  from metadata before, the totals after, the maintenance record). One warm-up round that is not counted, then
  ``compact_repeat`` (8) rounds per pair in alternating order (both tables rolled back to the same files between
  rounds): medians of the times, and lakecat / engine as the median of the rounds' ratios (paired). The 2,000-file
  pair runs ``compact_small_repeat`` (32) rounds (its ~2 s jobs spread by ±30% between rounds; with 16 the median
  ratio moved by more than 5% from run to run), each opened by an untimed compaction of a third copy: whichever
  compaction runs first after the rollbacks is slower.
- ``metadata``: whole ``lakecat list/describe/history`` processes (light path, no JVM) against a process that
  only starts a bare Spark session with the same jars.
- ``engine``: whole ``lakecat compact --dry-run`` / ``rollback`` / ``upsert`` (100 rows) processes on a warm local
  engine (``lakecat local engine``, Spark Connect: no JVM in the lakecat process) against the same commands with
  ``LAKECAT_SPARK_REMOTE=off`` (each process starts its own Spark); wall seconds and peak RSS of the lakecat process.
- ``start``: the Spark start of a lakecat session (``cat.session()`` after ``lakecat.connect()``: jars from
  lakecat's cache, both extensions, the catalog registered) against a bare ``SparkSession.builder.getOrCreate()``,
  each in a fresh process, alternating, timed inside the process from the call to the session (interpreter,
  imports and the catalog's own setup excluded).

The driver's memory (peak RSS of Python + JVM) and CPU time are sampled from the process tree for every phase.
Everything runs in a private ``LAKECAT_HOME`` (temp dir) with its own Kafka broker; the Spark work runs in one
child process (``--child``), so the suite's own process never starts a JVM. When a section fails (exit 1), the
child's output and Spark's logs are copied out of the temp dir before it is removed (``logs_kept`` in the JSON).
``--docs`` rewrites the generated
block of the docs site's Performance page (between ``<!-- bench:start -->`` and ``<!-- bench:end -->``) from the
JSON document (``--readme FILE`` does the same for any Markdown file with a ``## Performance`` section); ``--from-json`` renders a saved document without running anything.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..formats import format_names, get_format
from ..units import parse_duration
from . import light

SECTIONS = ("ingest", "freshness", "cdc", "compact", "metadata", "light", "start", "engine")
SPARK_SECTIONS = ("ingest", "freshness", "compact")
SCHEMA = "id BIGINT, ts TIMESTAMP, name STRING, amt DECIMAL(10,2)"  # nullable: the plain job cannot promise NOT NULL
START_MARK = "<!-- bench:start -->"
END_MARK = "<!-- bench:end -->"
DOCS_PAGE = "docs/performance.md"  # the docs site's Performance page (``--docs``)

#: Sizes. ``--quick`` finishes in a few minutes on 2 cores; the default is what the README reports.
FULL: dict[str, Any] = {
    "events": 200_000, "batch": 50_000, "ingest_repeat": 6, "ingest_modes": "json,dedupe", "ingest_plain": 2,
    "ingest_big_events": 2_000_000, "ingest_big_repeat": 4,
    "fresh_seconds": 60, "fresh_rate": 50, "fresh_poll": "metadata",
    "cdc_events": None,  # lakecat.bench.cdc's own default
    "compact_files": 2000, "compact_rows": 200_000, "compact_target": "64MB",
    "compact_big_files": 10_000, "compact_big_rows_per_file": 1000, "compact_repeat": 8, "compact_small_repeat": 32,
    "meta_commits": 20, "meta_repeat": 5, "spark_start_repeat": 2, "start_repeat": 5, "engine_repeat": 3,
    "light_rows": 2_500, "light_big_rows": 2_000_000, "light_big_files": 200, "light_repeat": 5,
}  # fmt: skip
QUICK: dict[str, Any] = {
    "events": 10_000, "batch": 5_000, "ingest_repeat": 1, "ingest_modes": "json,dedupe", "ingest_plain": 1,
    "ingest_big_events": 0, "ingest_big_repeat": 1,
    "fresh_seconds": 8, "fresh_rate": 20, "fresh_poll": "metadata",
    "cdc_events": 2_000,
    "compact_files": 100, "compact_rows": 10_000, "compact_target": "64MB",
    "compact_big_files": 200, "compact_big_rows_per_file": 1000, "compact_repeat": 1, "compact_small_repeat": 1,
    "meta_commits": 3, "meta_repeat": 2,
    "spark_start_repeat": 0,  # 0: the suite's own Spark child's session start stands in for a separate bare start
    "start_repeat": 2,
    "light_rows": 2_500, "light_big_rows": 100_000, "light_big_files": 20, "light_repeat": 2,
    "engine_repeat": 1,
}  # fmt: skip

SPARK_ONLY = """
from pyspark.sql import SparkSession
from lakecat import jars
from lakecat.config import resolve_config
paths = jars.jar_paths(jars.config_spark_set(resolve_config()))
b = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
     .config("spark.jars", ",".join(map(str, paths))))
s = b.getOrCreate(); s.range(1).count(); s.stop()
"""


def _say(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(float(x), digits)


def _pct(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) of ``values``, linear between closest ranks."""
    if not values:
        return None
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


# --- the machine -------------------------------------------------------------------------------
def _java_version() -> str | None:
    java = shutil.which("java")
    if os.environ.get("JAVA_HOME") and (Path(os.environ["JAVA_HOME"]) / "bin" / "java").exists():
        java = str(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    if java is None:
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "([^"]+)"', out)
    vendor = out.splitlines()[1].split("(")[0].strip() if len(out.splitlines()) > 1 else ""
    return f"{m.group(1)} ({vendor})" if m else out.strip().splitlines()[0] if out.strip() else None


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """CPU, memory, OS and the versions of everything that runs, for the report's ``machine`` block."""
    cpu_model = platform.processor() or None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    mem_gib = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 1024**2, 1)
    if mem_gib is None:
        with contextlib.suppress(ImportError):
            import psutil

            mem_gib = round(psutil.virtual_memory().total / 1024**3, 1)

    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
        "memory_gib": mem_gib,
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": _java_version(),
        "pyspark": _version("pyspark"),
        "delta_spark": _version("delta-spark"),
        "iceberg_spark_runtime": __import__("lakecat.formats.iceberg.spark", fromlist=["RUNTIME"]).RUNTIME.rsplit(
            ":", 1
        )[1],
        "pyiceberg": _version("pyiceberg"),
        "deltalake": _version("deltalake"),
        "lakecat": _version("lakecat"),
        "date": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "load_average_start": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }


# --- memory and CPU of a process tree ----------------------------------------------------------
def _proc_table() -> dict[int, tuple[int, str, int, float]]:
    """pid -> (ppid, name, rss bytes, cpu seconds) for every process (psutil, else /proc)."""
    table: dict[int, tuple[int, str, int, float]] = {}
    try:
        import psutil
    except ImportError:
        psutil = None  # type: ignore[assignment]
    if psutil is not None:
        for p in psutil.process_iter(["ppid", "name", "memory_info", "cpu_times"]):
            info = p.info
            if info.get("memory_info") is None or info.get("cpu_times") is None:
                continue
            cpu = info["cpu_times"].user + info["cpu_times"].system
            table[p.pid] = (info["ppid"] or 0, info["name"] or "", info["memory_info"].rss, cpu)
        return table
    page = os.sysconf("SC_PAGE_SIZE")
    tick = os.sysconf("SC_CLK_TCK")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        f = stat[stat.rfind(")") + 2 :].split()
        table[int(d)] = (int(f[1]), name, int(f[21]) * page, (int(f[11]) + int(f[12])) / tick)
    return table


def tree_usage(root: int | None = None, exclude: tuple[int, ...] = ()) -> dict[str, float]:
    """RSS (MB, of the Python and the JVM processes) and CPU seconds of ``root`` and all its descendants."""
    root = root or os.getpid()
    table = _proc_table()
    if root not in table:
        return {"python_mb": 0.0, "jvm_mb": 0.0, "total_mb": 0.0, "cpu_s": 0.0}
    kids: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in table.items():
        kids.setdefault(ppid, []).append(pid)
    todo, seen = [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid in exclude or pid not in table:
            continue
        seen.add(pid)
        todo.extend(kids.get(pid, ()))
    # Only JVMs and Pythons count: a JVM's short-lived helpers (a fork on its way to exec'ing chmod, bash, ...)
    # report the whole parent's RSS for a moment, which would count the JVM twice.
    jvms = [p for p in seen if table[p][1] == "java" and table.get(table[p][0], (0, ""))[1] != "java"]
    pythons = [p for p in seen if table[p][1].startswith("python")] + ([root] if table[root][1] != "java" else [])
    jvm = sum(table[p][2] for p in jvms)
    py = sum(table[p][2] for p in set(pythons))
    cpu = sum(table[p][3] for p in seen)
    mb = 1024 * 1024
    return {"python_mb": py / mb, "jvm_mb": jvm / mb, "total_mb": (jvm + py) / mb, "cpu_s": cpu}


class TreeSampler:
    """Samples a process tree's RSS in the background; ``phase(label)`` records the peak and CPU of a stretch."""

    def __init__(self, root: int | None = None, *, interval: float = 0.25) -> None:
        self.root = root or os.getpid()
        self.interval = interval
        self.peaks: dict[str, dict[str, float]] = {}
        self._active: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lakecat-bench-sampler", daemon=True)

    def start(self) -> TreeSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _record(self, usage: dict[str, float]) -> None:
        with self._lock:
            for label in {"overall", *self._active}:
                peak = self.peaks.setdefault(label, {"python_mb": 0.0, "jvm_mb": 0.0, "total_mb": 0.0})
                for k in ("python_mb", "jvm_mb", "total_mb"):
                    peak[k] = max(peak[k], usage[k])

    def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):
                self._record(tree_usage(self.root))
            self._stop.wait(self.interval)

    @contextlib.contextmanager
    def phase(self, label: str) -> Iterator[dict[str, float]]:
        """Yields a dict filled at exit with wall seconds ``s``, ``cpu_s`` and the phase's peak RSS (MB)."""
        out: dict[str, float] = {}
        started = time.monotonic()
        start = tree_usage(self.root)
        with self._lock:  # a label measured twice (repeats) keeps the higher peak
            self._active.add(label)
        self._record(start)
        try:
            yield out
        finally:
            end = tree_usage(self.root)
            self._record(end)
            with self._lock:
                self._active.discard(label)
                peak = dict(self.peaks.get(label, {}))
            out["s"] = round(time.monotonic() - started, 3)
            out["cpu_s"] = round(end["cpu_s"] - start["cpu_s"], 2)
            out.update({k: round(v) for k, v in peak.items()})

    def report(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {k: {kk: round(vv) for kk, vv in v.items()} for k, v in self.peaks.items()}


def run_measured(cmd: list[str], *, env: dict[str, str] | None = None, timeout: float = 1800,
                 interval: float = 0.05) -> dict[str, Any]:  # fmt: skip
    """Run a command; its wall seconds, peak RSS of its process tree (MB), stdout, stderr and exit code."""
    out_f = tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=out_f, stderr=err_f, stdin=subprocess.DEVNULL)
    peak = {"python_mb": 0.0, "jvm_mb": 0.0, "total_mb": 0.0}
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        with contextlib.suppress(Exception):
            u = tree_usage(proc.pid)
            for k in peak:
                peak[k] = max(peak[k], u[k])
        if time.monotonic() > deadline:
            proc.kill()
            break
        time.sleep(interval)
    rc = proc.wait()
    seconds = time.perf_counter() - started
    out_f.seek(0)
    err_f.seek(0)
    stdout, stderr = out_f.read().decode(errors="replace"), err_f.read().decode(errors="replace")
    out_f.close()
    err_f.close()
    return {
        "seconds": seconds,
        "rc": rc,
        "stdout": stdout,
        "stderr": stderr,
        "peak_mb": {k: round(v) for k, v in peak.items()},
    }


# --- Spark side: the plain baseline jobs -------------------------------------------------------
def _events(n: int, start: int = 0) -> Iterator[str]:
    for i in range(start, start + n):
        yield json.dumps({"id": i, "ts": f"2026-01-{1 + i % 28:02d}T{i % 24:02d}:00:00", "name": f"name-{i}",
                          "amt": round(i % 10000 / 100, 2)})  # fmt: skip


def _produce_counted(bootstrap: str, topic: str, n: int, timeout: float) -> int:
    """Produce ``_events(n)`` to ``topic`` in this process; the events' bytes (what ``_produce_events`` runs)."""
    from lakecat.kafka_local import produce

    size = 0

    def counted() -> Iterator[str]:
        nonlocal size
        for e in _events(n):
            size += len(e)
            yield e

    produce(bootstrap, topic, counted(), timeout=timeout)
    return size


def _produce_events(bootstrap: str, topic: str, n: int, *, timeout: float) -> int:
    """Produce ``_events(n)`` to ``topic`` from a child process (``_produce_counted``); the events' bytes. The
    harness's producer is not the driver: in this process librdkafka's buffers for 2M events stayed in glibc's arenas
    after the producer was gone (+38 MB of the driver's RSS until the process ended, 32 MB of it given back by a
    ``malloc_trim``), and so counted in every later phase's peak (docs/performance.md, 2026-11-29, twentieth)."""
    code = (
        "import sys; from lakecat.bench.suite import _produce_counted as p; "
        "print(p(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))"
    )
    out = subprocess.run([sys.executable, "-c", code, bootstrap, topic, str(n), str(timeout)], capture_output=True,
                         text=True, check=False)  # fmt: skip
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
    return table.adapter.baseline().stream_to(writer, catalog, table)


def release_state(spark: Any, timeout: float = 30.0) -> bool:
    """Unload every state store and collect the JVM's heap, between two timed ingest runs and before each compaction
    phase (not timed); True if done. With ``-XX:+UseAdaptiveSizePolicyWithSystemGC`` (lakecat's JVM options) the
    collection also gives the heap it leaves free back, beyond ``MaxHeapFreeRatio``.

    Spark unloads a stopped query's state stores only at its next maintenance (every 60 s): a 2M-event
    ``--dedupe-key`` run leaves ~0.5 GB of keys in the 1 GB heap, and the run after it, of either job, pays for it in
    collections. Both jobs get this. ``StateStore.unloadAll()`` takes only the providers' lock, unlike
    ``StateStore.stop()``, which also waits for the maintenance pool under it and deadlocks against a maintenance
    thread. It runs on a thread of its own and is waited on for ``timeout`` at most: a call that does not return by then
    is left behind and the section's ``state_released`` says so (a lock it held would still stall the next stateful
    query)."""
    done = threading.Event()

    def unload() -> None:
        with contextlib.suppress(Exception):  # a Spark without this internal object: runs go on as before
            jvm = spark._jvm
            getattr(getattr(jvm.org.apache.spark.sql.execution.streaming.state, "StateStore$"), "MODULE$").unloadAll()
            jvm.java.lang.System.gc()
            done.set()

    worker = threading.Thread(target=unload, name="bench-release-state", daemon=True)
    worker.start()
    worker.join(timeout)
    return done.is_set()


class _Progress:
    """Collects every streaming query's progress (Spark's per-trigger ``durationMs``) by query name.

    The listener is a bare py4j object behind Spark's own Python listener wrapper: it keeps each event's progress as
    Spark's JSON (two py4j calls), read when the figures are summed. PySpark's ``StreamingQueryListener`` converts
    every event field by field first (``StreamingQueryProgress.fromJObject``: ~470 py4j calls a micro-batch here, each
    Java collection's end raised and converted as an exception). That ran while the next micro-batch did, on the same
    2 cores: at 2M events it added 4.6 s of Spark JVM CPU and 1.8 s of wall time to the plain job's ~20 s, 3.7 s and
    0.6 s to lakecat's (docs/performance.md, 2026-11-27, ninth). Through Spark Connect (no JVM here) PySpark's
    listener is used."""

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
    input_bytes = _produce_events(bootstrap, topic, events, timeout=max(600, events / 500))
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
    _produce_events(bootstrap, warm_topic, warm_n, timeout=600)
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
            # run after another row pays for the switch (the full run of 2026-11-27: 3-6 s of ~25 at 2M, Iceberg
            # after Delta's --dedupe-key), and with the rows interleaved that fell on rounds 2..n's first job but not
            # round 1's (which followed the small warm-up), lakecat's twice and plain's once in 4 rounds
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
                    _say(f"ingest {mode} {kind} {fmt}: {seconds:.1f}s ({events / seconds:,.0f} rows/s, "
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
                    row[f"{kind}_s"] = _r(s, 2)
                    row[f"{kind}_rows_per_s"] = round(events / s)
                    row[f"{kind}_cpu_s"] = _r(middle(x["cpu_s"] for x in rs), 2)
                    row[f"{kind}_runs_s"] = [_r(x["s"], 2) for x in rs]
                    row[f"{kind}_peak_mb"] = max((x["peak_mb"] or 0) for x in rs)
                    prefix = "lakecat_ingest_bench_" if kind == "lakecat" else "plain_"
                    triggers = [progress.summary(f"{prefix}{x['label']}") for x in rs]
                    row[f"{kind}_spark"] = triggers[0] if len(triggers) == 1 else triggers
                row["lakecat_setup_s"] = _r(middle(x["setup_s"] for x in runs[mode][fmt]["lakecat"]), 2)
                if plain:  # the ratio of the medians of the times (rows/s are rounded)
                    row["ratio"] = _r(row["plain_s"] / max(row["lakecat_s"], 1e-9))
                    row["cpu_ratio"] = _r(row["lakecat_cpu_s"] / max(row["plain_cpu_s"], 1e-9))
                if "tuned" in kinds:  # lakecat against the plain job given lakecat's Kafka consumer defaults
                    row["tuned_ratio"] = _r(row["tuned_s"] / max(row["lakecat_s"], 1e-9))
                results[fmt] = row
            by_mode[mode] = results
    finally:
        progress.close()
    out: dict[str, Any] = {"events": events, "batch": batch, "repeat": repeat,
                           "statistic": "median" if repeat > 2 else "mean", "order": "by_row", "topic_partitions": 3,
                           "produce_s": _r(produce_s, 1), "input_bytes": input_bytes,
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
    return table.adapter.baseline().row_count_poll(table)


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
            for i, value in enumerate(_events(n)):
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
    return {"events": n, "p50_s": _r(_pct(latencies, 0.5)), "p95_s": _r(_pct(latencies, 0.95)),
            "max_s": _r(max(latencies)), "poll_p50_s": _r(_pct(polls, 0.5)), "polls": len(polls),
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
            _say(f"freshness {kind} {fmt}: p50 {got['p50_s']}s p95 {got['p95_s']}s (poll p50 {got['poll_p50_s']}s)")
            row[kind] = got
        row["ratio_p50"] = _r(row["lakecat"]["p50_s"] / max(row["plain"]["p50_s"], 1e-9))
        row["ratio_p95"] = _r(row["lakecat"]["p95_s"] / max(row["plain"]["p95_s"], 1e-9))
        results[fmt] = row
    what = ("the newest snapshot's row count, read without Spark (pyiceberg / delta-rs)" if poll == "metadata"
            else "SELECT count(*) FROM <table> in the driver's Spark session")  # fmt: skip
    return {"trigger": "every 1s", "rate_per_s": rate, "seconds": seconds, "topic_partitions": 1, "poll": poll,
            "poll_query": what, "results": results}  # fmt: skip


# --- compaction --------------------------------------------------------------------------------
def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return round(time.perf_counter() - started, 3), value


def _queries(spark: Any, table: Any) -> dict[str, float]:
    def df() -> Any:
        return table.adapter.baseline().read(spark, table)

    out = {}
    for label, q in (
        ("filtered_query_s", lambda: df().where("region = 'r3' AND id % 97 = 0").agg({"amount": "sum"}).collect()),
        ("full_query_s", lambda: df().agg({"amount": "sum", "id": "count"}).collect()),
    ):
        q()  # warm the plan caches once; the figure is the second run
        out[label], _ = _timed(q)
    return out


def _engine_compact(cat: Any, spark: Any, table: Any, target_bytes: int) -> Callable[[], Any]:
    """The engine's own compaction of ``table`` as a user would call it (Iceberg ``rewrite_data_files``, Delta
    ``OPTIMIZE`` through delta-spark), for one target file size: the format's ``Baseline.compact``."""
    return table.adapter.baseline().compact(spark, cat, table, target_bytes)


def _compact_pair(cat: Any, spark: Any, lt: Any, et: Any, target_bytes: int, row: dict[str, Any], *,
                  repeat: int = 1, first: Any | None = None) -> None:  # fmt: skip
    """Dry run and ``Table.compact`` of ``lt``, the engine's own command on its copy ``et``; figures into ``row``.

    With ``repeat`` > 1, first one warm-up round that no figure counts (``warmup``: the first compaction after the
    tables' build often pays for class loading, code generation and the build's garbage, on the side that runs it, e.g. a
    Delta ``OPTIMIZE`` of 2,000 files at ~9 s against ~3 s after), then ``repeat`` rounds in alternating order
    (lakecat first in even rounds, the engine first in odd ones: an even ``repeat`` has each side first equally
    often), both tables rolled back to their version before compaction between rounds (the same files again, no
    rebuild); the times are medians over the counted rounds, ``lakecat_over_engine`` the median of the rounds'
    lakecat / engine ratios (``lakecat_over_engine_of_medians`` the ratio of the medians), each round's pair in
    ``rounds``.

    ``first``: a third copy of the table that the engine's command compacts (not timed) at the start of every round,
    rolled back with the other two: whichever compaction runs first after the rollbacks is slower (+20-40% on a
    2,000-file table, lakecat's or the engine's alike); with this one taking that place, the two timed sides run
    alike (docs/performance.md, 2026-11-28, seventeenth)."""
    row["dry_run_s"], plan = _timed(lambda: lt.compact(target_file_size=target_bytes, dry_run=True))
    row["dry_run_estimated_files_after"] = plan.files_after
    start = [(t, t.describe().current_version) for t in (lt, et, *([first] if first is not None else []))]

    def by_lakecat(one: dict[str, Any]) -> None:
        one["lakecat_compact_s"], res = _timed(lambda: lt.compact(target_file_size=target_bytes))
        one["lakecat_engine_s"] = res.engine_s  # lakecat's own part: the rest of Table.compact
        one["lakecat_overhead_s"] = _r(one["lakecat_compact_s"] - res.engine_s)
        one["files_after"] = res.files_after

    def by_engine(one: dict[str, Any]) -> None:
        one["engine_compact_s"], _ = _timed(_engine_compact(cat, spark, et, target_bytes))

    rounds: list[dict[str, Any]] = []
    warmup = repeat > 1
    for i in range(max(1, repeat) + warmup):
        if i:  # the same small files again
            for t, version in start:
                t.rollback(version=version, force=True)
        if first is not None:
            _engine_compact(cat, spark, first, target_bytes)()  # not timed: the first place after the rollbacks
        n = i - warmup  # the counted round's number; -1: the warm-up
        one: dict[str, Any] = {"first": "lakecat" if n % 2 == 0 else "engine"}
        for side in (by_lakecat, by_engine) if n % 2 == 0 else (by_engine, by_lakecat):
            side(one)
        if n < 0:
            row["warmup"] = one
        else:
            rounds.append(one)
    for key in ("lakecat_compact_s", "lakecat_engine_s", "lakecat_overhead_s", "engine_compact_s"):
        row[key] = _r(statistics.median(r[key] for r in rounds))
    row["files_after"] = rounds[-1]["files_after"]
    row["engine_files_after"] = et.describe().files
    of_medians = _r(row["lakecat_compact_s"] / max(row["engine_compact_s"], 1e-9), 2)
    # Paired: each round's two runs share the machine's state of the moment (the rollback before, the load, the heap),
    # and the rounds alone differed by up to 1.4x on one pair; the median of the rounds' ratios compares like with like
    row["lakecat_over_engine"] = (
        _r(statistics.median(r["lakecat_compact_s"] / max(r["engine_compact_s"], 1e-9) for r in rounds), 2)
        if len(rounds) > 1
        else of_medians
    )
    row["lakecat_over_engine_of_medians"] = of_medians
    row["repeat"] = len(rounds)
    if len(rounds) > 1:
        row["rounds"] = rounds


def _small_files_table(cat: Any, spark: Any, name: str, fmt: str, *, files: int, rows_per_file: int) -> Any:
    """An unpartitioned table of ``files`` data files of ``rows_per_file`` rows, written by one two-task job (each
    task rolls to a new file every ``rows_per_file`` rows: Iceberg at a 1-byte target size, which it checks every
    1,000 rows, Delta by ``maxRecordsPerFile``) and committed once."""
    t = cat.create_table(name, schema="id BIGINT, region STRING, amount DOUBLE", format=fmt)
    data = (spark.range(files * rows_per_file, numPartitions=2)
            .selectExpr("id", "concat('r', CAST(id % 4 AS STRING)) AS region", "rand(7) * 100 AS amount"))  # fmt: skip
    t.adapter.baseline().append_small_files(spark, data, t, rows_per_file)
    return t


def compaction_big(cat: Any, *, files: int, rows_per_file: int, target: str, formats: list[str],
                   sampler: TreeSampler | None = None, repeat: int = 1) -> dict[str, Any]:  # fmt: skip
    """Compaction of ``files`` small files (one unpartitioned table per format, an identical copy for the engine's
    own command): times, lakecat's own overhead and the driver's peak memory (Python + JVM)."""
    from lakecat.units import parse_size

    spark = cat.session()
    sampler = sampler or TreeSampler()
    target_bytes = parse_size(target)
    report: dict[str, Any] = {"files": files, "rows": files * rows_per_file, "rows_per_file": rows_per_file,
                              "target": target, "target_file_size": target_bytes, "results": {}}  # fmt: skip
    for fmt in formats:
        tables = {}
        row: dict[str, Any] = {"build_s": 0.0}
        for which in ("lakecat", "engine"):
            s, tables[which] = _timed(
                lambda which=which, fmt=fmt: _small_files_table(
                    cat, spark, f"bench.cb_{fmt}_{which}", fmt, files=files, rows_per_file=rows_per_file
                )
            )
            row["build_s"] = _r(row["build_s"] + s)
        lt, et = tables["lakecat"], tables["engine"]
        row["files_before"] = lt.describe().files
        row["engine_files_before"] = et.describe().files
        release_state(spark)  # not timed: the phase starts from a collected heap, as a new process would
        with sampler.phase(f"compact_big_{fmt}") as usage:
            _compact_pair(cat, spark, lt, et, target_bytes, row, repeat=repeat)
        row["cpu_s"] = usage["cpu_s"]
        row["peak_mb"] = {k: usage.get(k) for k in ("python_mb", "jvm_mb", "total_mb")}
        _say(
            f"compact {row['files_before']:,} files {fmt}: lakecat {row['lakecat_compact_s']}s (overhead "
            f"{row['lakecat_overhead_s']}s) engine {row['engine_compact_s']}s, peak {usage.get('total_mb')} MB"
        )
        report["results"][fmt] = row
    return report


def compaction(cat: Any, *, files: int, rows: int, target: str, formats: list[str],
               sampler: TreeSampler | None = None, big_files: int = 0, big_rows_per_file: int = 1000,
               repeat: int = 1, small_repeat: int | None = None) -> dict[str, Any]:  # fmt: skip
    """``Table.compact`` against the engine's own command on an identical copy (a third copy, compacted untimed, takes
    each round's first place: ``_compact_pair``'s ``first``), ``small_repeat`` rounds (default ``repeat``); queries
    before and after. With ``big_files``, also ``compaction_big`` (its figures under the ``big`` key, ``repeat``
    rounds)."""
    from lakecat.units import parse_size

    spark = cat.session()
    sampler = sampler or TreeSampler()
    target_bytes = parse_size(target)
    report: dict[str, Any] = {
        "files": files,
        "rows": rows,
        "target": target,
        "target_file_size": target_bytes,
        "results": {},
    }
    for fmt in formats:
        tables = {}
        build_s = 0.0
        baseline = get_format(fmt).baseline()
        for which in ("lakecat", "engine", "first"):
            t = cat.create_table(f"bench.c_{fmt}_{which}", schema="id BIGINT, region STRING, amount DOUBLE",
                                 format=fmt, partition_by="region", properties=baseline.many_files_properties)  # fmt: skip
            data = (spark.range(rows).selectExpr("id", "concat('r', CAST(id % 4 AS STRING)) AS region",
                                                 "rand(42) * 100 AS amount").repartition(max(1, files // 4), "region", "id"))  # fmt: skip
            secs, _ = _timed(lambda t=t, data=data, baseline=baseline: baseline.append(data, t))
            build_s = _r(build_s + secs)  # the three copies' build, as the 10,000-file row's
            tables[which] = t
        lt, et = tables["lakecat"], tables["engine"]
        row: dict[str, Any] = {"build_s": build_s, "files_before": lt.describe().files}
        release_state(spark)  # not timed: the phase starts from a collected heap, as a new process would
        with sampler.phase(f"compact_{fmt}") as usage:
            row["before"] = _queries(spark, lt)
            _compact_pair(cat, spark, lt, et, target_bytes, row, repeat=small_repeat or repeat, first=tables["first"])
            row["after"] = _queries(spark, lt)
        for q in ("filtered_query_s", "full_query_s"):
            row[f"{q.removesuffix('_s')}_speedup"] = _r(row["before"][q] / max(row["after"][q], 1e-9), 2)
        row["cpu_s"] = usage["cpu_s"]
        _say(f"compact {fmt}: lakecat {row['lakecat_compact_s']}s engine {row['engine_compact_s']}s "
             f"({row['files_before']} -> {row['files_after']} files)")  # fmt: skip
        report["results"][fmt] = row
    if big_files:
        try:
            report["big"] = compaction_big(cat, files=big_files, rows_per_file=big_rows_per_file, target=target,
                                           formats=formats, sampler=sampler, repeat=repeat)  # fmt: skip
        except Exception as e:  # noqa: BLE001 - the small-table figures stand on their own
            _say(f"compaction of {big_files} files failed: {e!r}")
            report["big"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
    return report


# --- metadata ----------------------------------------------------------------------------------
def make_metadata_tables(cat: Any, *, commits: int, formats: list[str]) -> list[str]:
    """One partitioned table per format with ``commits`` inserts after its creation."""
    names = []
    for fmt in formats:
        t = cat.create_table(f"bench.m_{fmt}", schema="id BIGINT, ts TIMESTAMP", format=fmt, partition_by="days(ts)")
        for i in range(commits):
            # a column list: Delta's days(ts) is a generated column the VALUES do not fill
            cat.session().sql(
                f"INSERT INTO {t.spark_name} (id, ts) VALUES ({i}, TIMESTAMP'2026-01-0{i % 9 + 1} 00:00:00')"
            )
        names.append(t.name)
    return names


def metadata(home: Path, *, repeat: int, spark_start_repeat: int, formats: list[str], commits: int,
             child_start: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Median wall seconds and peak RSS of whole ``lakecat`` processes vs a bare Spark session start.

    With ``spark_start_repeat`` 0 the baseline is ``child_start``: the session start (to a first ``count()``) the
    suite's Spark child measured on itself, which saves one more JVM start in ``--quick``.
    """
    env = {**os.environ, "LAKECAT_HOME": str(home), "NO_COLOR": "1"}
    lakecat_cmd = [sys.executable, "-m", "lakecat.commands.main"]
    commands = {"list": ["list", "--json"]}
    for fmt in formats:
        commands[f"describe_{fmt}"] = ["describe", f"bench.m_{fmt}", "--json"]
        commands[f"history_{fmt}"] = ["history", f"bench.m_{fmt}", "--json"]
    figures: dict[str, Any] = {}
    for name, cmd in commands.items():
        runs = [run_measured([*lakecat_cmd, *cmd], env=env, timeout=300) for _ in range(repeat)]
        bad = [r for r in runs if r["rc"] != 0]
        if bad:
            raise RuntimeError(f"lakecat {' '.join(cmd)} failed: {bad[0]['stderr'].strip()[-500:]}")
        figures[name] = {"s": _r(statistics.median(r["seconds"] for r in runs)),
                         "peak_mb": max(r["peak_mb"]["total_mb"] for r in runs)}  # fmt: skip
        _say(f"metadata {name}: {figures[name]['s']}s")
    if spark_start_repeat < 1 and child_start and child_start.get("s"):
        figures["spark_session_start"] = {"s": child_start["s"], "peak_mb": child_start.get("total_mb"),
                                          "jvm_peak_mb": child_start.get("jvm_mb"), "source": "the suite's Spark child"}  # fmt: skip
    else:
        starts = [
            run_measured([sys.executable, "-c", SPARK_ONLY], env=env, timeout=900)
            for _ in range(max(1, spark_start_repeat))
        ]
        bad = [r for r in starts if r["rc"] != 0]
        if bad:
            raise RuntimeError(f"bare Spark start failed: {bad[0]['stderr'].strip()[-500:]}")
        figures["spark_session_start"] = {"s": _r(statistics.median(r["seconds"] for r in starts)),
                                          "peak_mb": max(r["peak_mb"]["total_mb"] for r in starts),
                                          "jvm_peak_mb": max(r["peak_mb"]["jvm_mb"] for r in starts),
                                          "source": "a separate python process"}  # fmt: skip
    _say(f"metadata bare Spark session start: {figures['spark_session_start']['s']}s")
    spark_s = figures["spark_session_start"]["s"]
    ratios = {
        f"{name}_vs_spark_start": _r(f["s"] / spark_s) for name, f in figures.items() if name != "spark_session_start"
    }
    return {"unit": "seconds (median, whole process)", "repeat": repeat, "spark_start_repeat": spark_start_repeat,
            "commits": commits, "results": figures, "ratios": ratios}  # fmt: skip


# --- Spark start: a lakecat session against a bare getOrCreate --------------------------------------
START_BARE = """
import json, time
from pyspark.sql import SparkSession
t = time.perf_counter()
s = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
print(json.dumps({"s": time.perf_counter() - t}))
s.stop()
"""
START_LAKECAT = """
import json, time
import lakecat
cat = lakecat.connect()  # the catalog (metastore, config) is not the Spark start
t = time.perf_counter()
s = cat.session()
print(json.dumps({"s": time.perf_counter() - t}))
"""


def spark_start(home: Path, *, repeat: int) -> dict[str, Any]:
    """Median Spark start of a lakecat session vs a bare ``getOrCreate()``, fresh processes, alternating order.

    The jar set is fetched first (``lakecat jars fetch``), so the figure is a start from the cache: no resolution.
    """
    env = {**os.environ, "LAKECAT_HOME": str(home), "NO_COLOR": "1"}
    fetch = subprocess.run([sys.executable, "-m", "lakecat.commands.main", "jars", "fetch", "--json"], env=env,
                           capture_output=True, text=True, timeout=1800)  # fmt: skip
    if fetch.returncode != 0:
        raise RuntimeError(f"lakecat jars fetch failed: {fetch.stderr.strip()[-500:]}")
    times: dict[str, list[float]] = {"bare": [], "lakecat": []}
    for i in range(max(1, repeat)):
        order = ("bare", "lakecat") if i % 2 == 0 else ("lakecat", "bare")
        for kind in order:
            run = run_measured(
                [sys.executable, "-c", START_BARE if kind == "bare" else START_LAKECAT], env=env, timeout=600
            )
            if run["rc"] != 0:
                raise RuntimeError(f"{kind} Spark start failed: {run['stderr'].strip()[-500:]}")
            times[kind].append(_last_json(run["stdout"])["s"])
    bare, lake = statistics.median(times["bare"]), statistics.median(times["lakecat"])
    _say(f"spark start: bare {bare:.2f}s, lakecat {lake:.2f}s ({lake / bare:.2f}x)")
    return {"unit": "seconds (median, timed inside a fresh process)", "repeat": repeat,
            "bare_s": _r(bare), "lakecat_s": _r(lake), "ratio": _r(lake / bare),
            "runs": {k: [_r(v) for v in vs] for k, vs in times.items()}}  # fmt: skip


# --- a warm engine (Spark Connect) against a cold start per command ------------------------------
ENGINE_COMMANDS = ("compact_dry_run", "rollback", "upsert")


def engine(home: Path, *, repeat: int, formats: list[str]) -> dict[str, Any]:
    """Median wall seconds and peak RSS of whole lakecat processes: warm (local engine) vs cold (in-process Spark).

    Per round and format: an upsert of 100 rows, a rollback to the version before it, a ``compact --dry-run``;
    warm and cold rounds alternate. The lakecat process's peak RSS is its own tree's (the engine is not in it).
    """
    from ..config import resolve_config
    from ..engine_local import LocalEngine
    from ..processes import free_port

    env = {**os.environ, "LAKECAT_HOME": str(home), "NO_COLOR": "1"}
    env.pop("LAKECAT_SPARK_REMOTE", None)
    cold_env = {**env, "LAKECAT_SPARK_REMOTE": "off"}
    lakecat_cmd = [sys.executable, "-m", "lakecat.commands.main"]
    source = home / "engine-upsert.json"
    source.write_text("".join(json.dumps({"id": i, "v": f"v{i}"}) + "\n" for i in range(100)))
    old_home = os.environ.get("LAKECAT_HOME")
    os.environ["LAKECAT_HOME"] = str(home)
    try:
        server = LocalEngine(resolve_config(None), port=free_port())
    finally:
        if old_home is None:
            os.environ.pop("LAKECAT_HOME", None)
        else:
            os.environ["LAKECAT_HOME"] = old_home
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}

    def lakecat(*args: Any, cold: bool) -> dict[str, Any]:
        run = run_measured([*lakecat_cmd, *map(str, args), "--json"], env=cold_env if cold else env, timeout=900)
        if run["rc"] != 0:
            raise RuntimeError(f"lakecat {' '.join(map(str, args))} failed: {run['stderr'].strip()[-500:]}")
        return run

    started = time.perf_counter()
    server.start(timeout=600)
    engine_start_s = time.perf_counter() - started
    try:
        for fmt in formats:
            name = f"bench.engine_{fmt}"
            lakecat("create", name, "--format", fmt, "--schema", "id BIGINT, v STRING", cold=False)
            lakecat("upsert", name, "--from", source, "--key", "id", "--file-format", "json", cold=False)
            for i in range(max(1, repeat) * 2):
                mode = "cold" if i % 2 else "warm"
                box = runs.setdefault(f"{fmt}_{mode}", {c: [] for c in ENGINE_COMMANDS})
                history = json.loads(lakecat("history", name, "--limit", "1", cold=False)["stdout"])
                before = history[0]["version"]
                box["upsert"].append(lakecat("upsert", name, "--from", source, "--key", "id", "--file-format", "json",
                                             cold=mode == "cold"))  # fmt: skip
                box["rollback"].append(lakecat("rollback", name, "--version", before, "--yes", cold=mode == "cold"))
                box["compact_dry_run"].append(lakecat("compact", name, "--dry-run", cold=mode == "cold"))
                _say(f"engine {fmt} {mode}: " + ", ".join(f"{c} {box[c][-1]['seconds']:.1f}s" for c in ENGINE_COMMANDS))
    finally:
        server.stop()
    results: dict[str, Any] = {}
    for fmt in formats:
        for cmd in ENGINE_COMMANDS:
            warm, cold = runs[f"{fmt}_warm"][cmd], runs[f"{fmt}_cold"][cmd]
            w, c = statistics.median(r["seconds"] for r in warm), statistics.median(r["seconds"] for r in cold)
            results[f"{cmd}_{fmt}"] = {"warm_s": _r(w), "cold_s": _r(c), "ratio": _r(w / c),
                                       "warm_peak_mb": max(r["peak_mb"]["total_mb"] for r in warm),
                                       "cold_peak_mb": max(r["peak_mb"]["total_mb"] for r in cold)}  # fmt: skip
    return {"unit": "seconds (median, whole process)", "repeat": repeat, "engine_start_s": _r(engine_start_s),
            "results": results}  # fmt: skip


# --- CDC (the lead's script, when present) -----------------------------------------------------
def cdc_script() -> Path | None:
    path = Path(__file__).resolve().with_name("cdc.py")
    return path if path.is_file() else None


def _last_json(text: str) -> Any:
    text = text.strip()
    with contextlib.suppress(ValueError):
        return json.loads(text)
    lines = text.splitlines()
    for i in range(len(lines)):  # the first line that starts a document running to the end
        if lines[i].startswith("{"):
            with contextlib.suppress(ValueError):
                return json.loads("\n".join(lines[i:]))
    raise ValueError("no JSON document in the output")


def cdc(*, events: int | None, bootstrap: str | None, timeout: float) -> dict[str, Any]:
    """Runs ``lakecat/bench/cdc.py`` as a subprocess (own JVM) and returns its JSON plus its peak RSS."""
    script = cdc_script()
    if script is None:
        return {"skipped": "lakecat/bench/cdc.py not found"}
    cmd = [sys.executable, str(script)]
    if events:
        cmd += ["--events", str(events)]
    helptext = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    if bootstrap and "--bootstrap" in helptext.stdout:
        cmd += ["--bootstrap", bootstrap]
    env = {k: v for k, v in os.environ.items() if k != "LAKECAT_HOME"}
    run = run_measured(cmd, env=env, timeout=timeout, interval=0.25)
    if run["rc"] != 0:
        return {"error": f"lakecat.bench.cdc exited {run['rc']}: {run['stderr'].strip()[-800:]}", "command": cmd[1:]}
    try:
        doc = _last_json(run["stdout"])
    except ValueError:
        return {"error": f"lakecat.bench.cdc printed no JSON: {run['stdout'].strip()[-400:]}", "command": cmd[1:]}
    doc = doc if isinstance(doc, dict) else {"output": doc}
    doc["wall_s"] = _r(run["seconds"], 1)
    doc["peak_mb"] = run["peak_mb"]
    return doc


# --- the Spark child ---------------------------------------------------------------------------
def _modes(text: str) -> tuple[str, ...]:
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
    modes = _modes(sizes.get("ingest_modes") or "json")
    out = ingest_throughput(cat, bootstrap, events=sizes["events"], batch=sizes["batch"], formats=formats,
                            repeat=sizes["ingest_repeat"], home=home, sampler=sampler, modes=modes,
                            plain=int(sizes.get("ingest_plain", 1)))  # fmt: skip
    big = int(sizes.get("ingest_big_events") or 0)
    if big:
        _say(f"ingest at {big:,} events")
        try:
            out["big"] = ingest_throughput(cat, bootstrap, events=big, batch=sizes["batch"], formats=formats,
                                           repeat=int(sizes.get("ingest_big_repeat") or 4), home=home, sampler=sampler,
                                           modes=modes, plain=min(1, int(sizes.get("ingest_plain", 1))), tag="big")  # fmt: skip
        except Exception as e:  # noqa: BLE001 - keep the 200k figures
            _say(f"ingest at {big:,} events failed: {e!r}")
            out["big"] = {"events": big, "error": f"{type(e).__name__}: {e}"[:2000]}
    return out


def run_spark_sections(params: dict[str, Any]) -> dict[str, Any]:
    """Everything that needs the JVM, in this process: (metadata tables,) ingest, freshness, compaction."""
    home = Path(params["home"])
    os.environ["LAKECAT_HOME"] = str(home)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import lakecat

    sizes, formats, sections = params["sizes"], params["formats"], params["sections"]
    sampler = TreeSampler().start()
    out: dict[str, Any] = {}
    try:
        with sampler.phase("spark_session_start") as usage:
            cat = lakecat.connect()
            cat.session().range(1).count()
        out["session_start"] = usage
        jobs: list[tuple[str, Callable[[], Any]]] = [
            ("metadata", lambda: make_metadata_tables(cat, commits=sizes["meta_commits"], formats=formats)),
            ("light", lambda: light.make_tables(cat, rows=sizes["light_rows"], big_rows=sizes["light_big_rows"],
                                                big_files=sizes["light_big_files"], formats=formats)),
            ("ingest", lambda: ingest_section(cat, params["bootstrap"], sizes, formats=formats, home=home, sampler=sampler)),
            ("freshness", lambda: freshness(cat, params["bootstrap"], seconds=sizes["fresh_seconds"], rate=sizes["fresh_rate"],
                                            poll=sizes.get("fresh_poll", "metadata"), formats=formats, home=home,
                                            sampler=sampler)),
            ("compact", lambda: compaction(cat, files=sizes["compact_files"], rows=sizes["compact_rows"],
                                           target=sizes["compact_target"], formats=formats, sampler=sampler,
                                           big_files=sizes.get("compact_big_files") or 0,
                                           big_rows_per_file=sizes.get("compact_big_rows_per_file") or 1000,
                                           repeat=sizes.get("compact_repeat") or 1,
                                           small_repeat=sizes.get("compact_small_repeat"))),
        ]  # fmt: skip
        for name, job in jobs:
            if name not in sections:
                continue
            key = f"{name}_tables" if name in ("metadata", "light") else name
            _say(f"section {name}" + (" (its tables)" if name in ("metadata", "light") else ""))
            try:
                out[key] = job()
            except Exception as e:  # noqa: BLE001 - one failing section must not lose the others' figures
                _say(f"section {name} failed: {e!r}")
                out[key] = {"error": f"{type(e).__name__}: {e}"[:2000]}
    finally:
        from lakecat.spark import stop_spark

        with contextlib.suppress(Exception):
            stop_spark()
        sampler.stop()
    out["memory"] = sampler.report()
    return out


def _child_main(params_json: str, out_file: str) -> int:
    result = run_spark_sections(json.loads(params_json))
    Path(out_file).write_text(json.dumps(result))
    return 0


# --- the suite ---------------------------------------------------------------------------------


def _doc_formats(doc: dict[str, Any]) -> list[str]:
    """The formats a bench document measured, in its order (the built-in ones for a document without the list)."""
    return list(doc.get("formats") or format_names(builtin_only=True))


def ratios(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every ratio of the document, flat, each with which direction is better."""
    out: dict[str, dict[str, Any]] = {}

    def add(key: str, value: Any, better: str, what: str) -> None:
        if isinstance(value, (int, float)):
            out[key] = {"value": value, "better": better, "what": what}

    for fmt, row in (doc.get("ingest", {}).get("results") or {}).items():
        add(f"ingest.{fmt}.throughput", row.get("ratio"), "higher", "lakecat rows/s / plain rows/s")
        add(f"ingest.{fmt}.cpu", row.get("cpu_ratio"), "lower", "lakecat driver CPU s / plain driver CPU s")
        add(
            f"ingest.{fmt}.tuned_throughput",
            row.get("tuned_ratio"),
            "higher",
            "lakecat rows/s / rows/s of the plain job given lakecat's Kafka consumer defaults",
        )
    for fmt, row in (((doc.get("ingest") or {}).get("dedupe") or {}).get("results") or {}).items():
        add(
            f"ingest.{fmt}.dedupe_throughput",
            row.get("ratio"),
            "higher",
            "lakecat --dedupe-key rows/s / plain dropDuplicatesWithinWatermark rows/s",
        )
    big = (doc.get("ingest") or {}).get("big") or {}
    for fmt, row in (big.get("results") or {}).items():
        add(
            f"ingest_big.{fmt}.throughput",
            row.get("ratio"),
            "higher",
            f"lakecat rows/s / plain rows/s at {big['events']:,} events",
        )
    for fmt, row in ((big.get("dedupe") or {}).get("results") or {}).items():
        add(
            f"ingest_big.{fmt}.dedupe_throughput",
            row.get("ratio"),
            "higher",
            f"lakecat --dedupe-key rows/s / plain dropDuplicatesWithinWatermark rows/s at {big['events']:,} events",
        )
    for fmt, row in (doc.get("freshness", {}).get("results") or {}).items():
        add(f"freshness.{fmt}.p50", row.get("ratio_p50"), "lower", "lakecat p50 latency / plain p50 latency")
        add(f"freshness.{fmt}.p95", row.get("ratio_p95"), "lower", "lakecat p95 latency / plain p95 latency")
    c = doc.get("cdc") or {}
    for fmt in _doc_formats(doc):
        if isinstance(c.get(fmt), dict):
            add(
                f"cdc.{fmt}.throughput",
                c[fmt].get("ratio"),
                "higher",
                "lakecat events/s / plain events/s (lakecat.bench.cdc)",
            )
    for fmt, row in (doc.get("compact", {}).get("results") or {}).items():
        add(
            f"compact.{fmt}.time_vs_engine",
            row.get("lakecat_over_engine"),
            "lower",
            "lakecat compact s / engine command s",
        )
        add(
            f"compact.{fmt}.filtered_query_speedup",
            row.get("filtered_query_speedup"),
            "higher",
            "query s before / after",
        )
        add(f"compact.{fmt}.full_query_speedup", row.get("full_query_speedup"), "higher", "query s before / after")
    for fmt, row in (((doc.get("compact") or {}).get("big") or {}).get("results") or {}).items():
        add(
            f"compact.{fmt}.big_time_vs_engine",
            row.get("lakecat_over_engine"),
            "lower",
            "lakecat compact s / engine command s (compact_big_files small files)",
        )
    for name, value in (doc.get("metadata", {}).get("ratios") or {}).items():
        add(f"metadata.{name}", value, "lower", "lakecat process s / bare Spark session start s")
    for name, row in ((doc.get("light") or {}).get("results") or {}).items():
        add(f"light.{name}", row.get("ratio"), "lower", "lakecat process s / light-library one-liner process s")
    st = doc.get("start") or {}
    add("start.lakecat_vs_bare", st.get("ratio"), "lower", "lakecat session start s / bare getOrCreate s")
    for name, row in ((doc.get("engine") or {}).get("results") or {}).items():
        add(f"engine.{name}", row.get("ratio"), "lower", "warm-engine process s / cold-start process s")
    return out


def _compile_lakecat() -> None:
    """Byte-compile lakecat's modules, as installing the wheel does: a source checkout under
    ``PYTHONDONTWRITEBYTECODE`` otherwise compiles all of them in every whole-process measurement (~0.2 s),
    which the libraries it is compared with (compiled at install) never pay."""
    import compileall

    root = Path(__file__).resolve().parents[2]
    for package in ("lakecat", "commands"):  # the CLI's package too: every command imports it
        if (root / package).is_dir():
            compileall.compile_dir(str(root / package), quiet=1)


def keep_logs(home: Path, doc: dict[str, Any]) -> Path | None:
    """When a section failed, copy the Spark child's output and the Spark logs out of the suite's working directory
    ``home`` (removed at the end) into a new directory and return it; None when nothing failed or there is no log."""
    if not failed_sections(doc):
        return None
    logs = [f for f in [home / "child.log", *sorted((home / "logs").glob("*"))] if f.is_file()]
    if not logs:
        return None
    kept = Path(tempfile.mkdtemp(prefix="lakecat-bench-logs-"))
    for f in logs:
        shutil.copy2(f, kept / f.name)
    return kept


def run_suite(sizes: dict[str, Any], *, sections: list[str], formats: list[str], bootstrap: str | None = None,
              quick: bool = False) -> dict[str, Any]:  # fmt: skip
    """Run the selected sections (Spark work in one child process) and return the whole JSON document."""
    started = time.monotonic()
    doc: dict[str, Any] = {"suite": "lakecat.bench", "quick": quick, "machine": machine_info(), "sizes": sizes,
                           "formats": formats, "sections": sections}  # fmt: skip
    home = Path(tempfile.mkdtemp(prefix="lakecat-bench-"))
    env = {**os.environ, "LAKECAT_HOME": str(home), "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    _compile_lakecat()
    broker = None
    try:
        if bootstrap is None and {"ingest", "freshness", "cdc"} & set(sections):
            from ..kafka_local import LocalKafka, free_port

            broker = LocalKafka(data_dir=home / "kafka", port=free_port())
            bootstrap = broker.start(timeout=180)
            _say(f"kafka broker on {bootstrap}")
        if "start" in sections:  # first: before the long sections heat the machine
            _say("section start")
            try:
                doc["start"] = spark_start(home, repeat=sizes.get("start_repeat", 2))
            except Exception as e:  # noqa: BLE001
                doc["start"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        if "engine" in sections:
            _say("section engine")
            try:
                doc["engine"] = engine(home, repeat=sizes.get("engine_repeat", 1), formats=formats)
            except Exception as e:  # noqa: BLE001
                doc["engine"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        spark_sections = [s for s in sections if s in SPARK_SECTIONS or s in ("metadata", "light")]
        child: dict[str, Any] = {}
        if spark_sections:
            params = {
                "home": str(home),
                "bootstrap": bootstrap,
                "sizes": sizes,
                "formats": formats,
                "sections": spark_sections,
            }
            out_file = home / "child.json"
            log = home / "child.log"
            _say(f"spark child: {', '.join(spark_sections)} (log {log})")
            with open(log, "wb") as logf:
                proc = subprocess.Popen([sys.executable, "-m", "lakecat.bench", "--child", json.dumps(params),
                                         "--child-out", str(out_file)], env=env, stdin=subprocess.DEVNULL,
                                        stdout=logf, stderr=subprocess.PIPE)  # fmt: skip
                assert proc.stderr is not None
                for raw in proc.stderr:  # progress lines through to our stderr as they come, everything to the log
                    logf.write(raw)
                    logf.flush()
                    if raw.startswith(b"[bench"):
                        sys.stderr.write(raw.decode(errors="replace"))
                rc = proc.wait()
            child = json.loads(out_file.read_text()) if out_file.exists() else {}
            if rc != 0 or not child:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                child = {**child, "error": f"spark child exited {rc}: {tail}"}
                sys.stderr.write(tail)
            for name in SPARK_SECTIONS:
                if name in child:
                    doc[name] = child[name]
            doc["memory"] = {"spark_driver": child.get("memory", {}), "session_start": child.get("session_start")}
            if "error" in child:
                doc["spark_child_error"] = child["error"]
        made = child.get("metadata_tables") if spark_sections else None
        if "metadata" in sections and not isinstance(made, list):
            doc["metadata"] = {"error": f"its tables were not made: {(made or child).get('error', '?')}"[:2000]}
        elif "metadata" in sections:
            _say("section metadata")
            try:
                doc["metadata"] = metadata(home, repeat=sizes["meta_repeat"], spark_start_repeat=sizes["spark_start_repeat"],
                                           formats=formats, commits=sizes["meta_commits"],
                                           child_start=child.get("session_start"))  # fmt: skip
            except Exception as e:  # noqa: BLE001
                doc["metadata"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        made_light = child.get("light_tables") if spark_sections else None
        if "light" in sections and not (isinstance(made_light, dict) and "error" not in made_light):
            doc["light"] = {"error": f"its tables were not made: {(made_light or child).get('error', '?')}"[:2000]}
        elif "light" in sections:
            _say("section light")
            try:
                doc["light"] = light.measure(home, made_light, repeat=sizes["light_repeat"], formats=formats)  # type: ignore[arg-type]
            except Exception as e:  # noqa: BLE001
                doc["light"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        if "cdc" in sections:
            _say("section cdc")
            try:
                doc["cdc"] = cdc(events=sizes["cdc_events"], bootstrap=bootstrap, timeout=600 if quick else 3600)
            except Exception as e:  # noqa: BLE001
                doc["cdc"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
    finally:
        if broker is not None:
            with contextlib.suppress(Exception):
                broker.stop()
        with contextlib.suppress(OSError):
            kept = keep_logs(home, doc)
            if kept is not None:
                doc["logs_kept"] = str(kept)
                _say(f"a section failed: the Spark child's output and Spark's logs are kept in {kept}")
        shutil.rmtree(home, ignore_errors=True)
    doc["ratios"] = ratios(doc)
    doc["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    doc["wall_s"] = _r(time.monotonic() - started, 1)
    return doc


def failed_sections(doc: dict[str, Any]) -> list[str]:
    """The sections (and sub-parts: ``ingest.big``, ``compact.big``) that failed in this run; any makes the exit code 1."""
    failed = [s for s in SECTIONS if isinstance(doc.get(s), dict) and "error" in doc[s]]
    for s in ("ingest", "compact"):  # their part at scale fails on its own and keeps the rest
        big = doc[s].get("big") if isinstance(doc.get(s), dict) else None
        if isinstance(big, dict) and "error" in big:
            failed.append(f"{s}.big")
    return failed + (["spark_child"] if "spark_child_error" in doc else [])


# --- the README section ------------------------------------------------------------------------
def _n(x: Any, fmt: str = "{:,.0f}") -> str:
    return "–" if not isinstance(x, (int, float)) else fmt.format(x)


def _s(x: Any) -> str:
    if not isinstance(x, (int, float)):
        return "–"
    return f"{x:.2f} s" if x < 10 else f"{x:.1f} s"


def _x(x: Any) -> str:
    if not isinstance(x, (int, float)):
        return "–"
    return f"{x:.2f}×" if x < 10 else f"{x:.1f}×"


def _load(x: Any) -> str:
    return " / ".join(f"{v:.1f}" for v in x) if isinstance(x, list) else "?"


def _fmt_name(fmt: str) -> str:
    return fmt.capitalize()


def _rounds_note(results: dict[str, dict[str, Any]]) -> str:
    """How a compaction table's times were taken, when over several rounds."""
    n = max((int(r.get("repeat") or 1) for r in results.values()), default=1)
    warm = "after one warm-up round that is not counted, " if any("warmup" in r for r in results.values()) else ""
    if n <= 1:
        return ""
    if not any("lakecat_over_engine_of_medians" in r for r in results.values()):  # documents before the paired ratio
        return (f"; {warm}median of {n} rounds in alternating order (lakecat first, then the engine first, ...), both "
                "tables rolled back to the same files between rounds")  # fmt: skip
    return (f"; {warm}{n} rounds in alternating order (lakecat first, then the engine first, ...), both tables rolled "
            "back to the same files between rounds; times are medians, lakecat / engine the median of the rounds' "
            "ratios")  # fmt: skip


def _ingest_lines(ing: dict[str, Any], title: str) -> list[str]:
    """The ingest table (and its note) for one ingest document: the section's own, or its ``big`` one."""
    lines: list[str] = []
    rows = [(_fmt_name(fmt), r) for fmt, r in (ing.get("results") or {}).items()]
    rows += [
        (f"{_fmt_name(fmt)}, `--dedupe-key`", r) for fmt, r in ((ing.get("dedupe") or {}).get("results") or {}).items()
    ]
    tuned = any("tuned_ratio" in r for _, r in rows)  # a column for the plain job given lakecat's Kafka defaults
    size = (
        (
            f" — {ing['input_bytes'] / 1e6:,.0f} MB of JSON"
            + (
                f", {ing['topic_disk_bytes'] / 1e6:,.0f} MB of Kafka log on disk"
                if isinstance(ing.get("topic_disk_bytes"), int)
                else ""
            )
        )
        if isinstance(ing.get("input_bytes"), int)
        else ""
    )
    order = ", each row's runs together after one untimed run of it" if ing.get("order") == "by_row" else ""
    lines += ["", f"**{title}** ({ing['events']:,} JSON events{size} on a {ing.get('topic_partitions', 3)}-partition "
              f"topic, `available-now`, {ing['batch']:,} per micro-batch"
              f"{', ' + ing.get('statistic', 'mean') + ' of ' + str(ing['repeat']) + ' runs each, alternating order' if ing.get('repeat', 1) > 1 else ''}"
              f"{order}; "
              "plain = `readStream.format(\"kafka\") → from_json → writeStream`"
              + ("; `--dedupe-key`: lakecat `--dedupe-key id --watermark 60d` against the plain job with "
                 "`withWatermark(\"ts\", …).dropDuplicatesWithinWatermark([\"id\"])`, every event kept"
                 if (ing.get("dedupe") or {}).get("results") else "") + "):", "",
              "| format | plain rows/s | lakecat rows/s | lakecat MB/s (JSON in) | lakecat / plain |"
              + (" lakecat / tuned plain |" if tuned else "") + " driver CPU s plain / lakecat | lakecat setup |",
              "|---|---|---|---|---|---|---|" + ("---|" if tuned else "")]  # fmt: skip
    for name, r in rows:
        mb_s = (
            (ing["input_bytes"] / 1e6 / r["lakecat_s"])
            if isinstance(ing.get("input_bytes"), int) and r.get("lakecat_s")
            else None
        )
        lines.append(f"| {name} | {_n(r.get('plain_rows_per_s'))} | {_n(r.get('lakecat_rows_per_s'))} | {_n(mb_s, '{:.1f}')} | "
                     f"{_x(r.get('ratio'))} |{' ' + _x(r.get('tuned_ratio')) + ' |' if tuned else ''} "
                     f"{_n(r.get('plain_cpu_s'), '{:.1f}')} / {_n(r.get('lakecat_cpu_s'), '{:.1f}')} | "
                     f"{_s(r.get('lakecat_setup_s'))} |")  # fmt: skip
    if tuned:
        lines += ["", "*Tuned plain*: the same plain job given lakecat's Kafka consumer default "
                  "(`kafka.fetch.max.wait.ms` = 10, `lakecat.sources.kafka.CONSUMER_DEFAULTS`): lakecat's own cost, "
                  "apart from what that default saves."]  # fmt: skip
    return lines


def render_markdown(doc: dict[str, Any]) -> str:
    """The README's Performance section body (between the markers) for a suite document."""
    m = doc.get("machine", {})
    lines = [
        START_MARK,
        "<!-- generated by `python -m lakecat.bench --docs` (lakecat/bench.py); edit the generator, not this text -->",
        "",
        f"Measured by `{doc.get('command') or 'python -m lakecat.bench' + (' --quick' if doc.get('quick') else '')}` on "
        f"{m.get('date', '?')[:10]}: "
        f"{m.get('cpu_count', '?')} × {m.get('cpu_model') or 'unknown CPU'}, {m.get('memory_gib', '?')} GiB RAM, "
        f"{m.get('os', '?')}; Python {m.get('python', '?')}, Java {m.get('java') or '?'}, PySpark {m.get('pyspark', '?')}, "
        f"delta-spark {m.get('delta_spark', '?')}, Iceberg {m.get('iceberg_spark_runtime', '?')}. "
        f"Load average (1/5/15 min) {_load(m.get('load_average_start'))} at the start, {_load(m.get('load_average_end'))} at the end "
        "(the suite keeps both cores busy itself; other work on the machine moves absolute numbers — ratios measured in "
        "the same run are steadier). "
        'Every "plain" figure is the hand-written Spark baseline, run by the same suite in the same Spark session.',
    ]
    ing = doc.get("ingest") or {}
    if ing.get("results") or (ing.get("dedupe") or {}).get("results"):
        lines += _ingest_lines(ing, "Ingest, Kafka → table")
        if ing.get("state_released"):
            lines += ["", "Between two timed ingest runs the suite unloads Spark's state stores and collects the JVM's heap "
                      "(not timed, both jobs): a stopped `--dedupe-key` query's keys otherwise stay in the heap until "
                      "Spark's next state-store maintenance (every 60 s) and slow whichever run comes next."]  # fmt: skip
        big = ing.get("big") or {}
        if big.get("results") or (big.get("dedupe") or {}).get("results"):
            lines += _ingest_lines(big, f"Ingest at {big['events']:,} events")
        elif big.get("error"):
            lines += ["", f"**Ingest at scale**: failed in this run ({big['error'][:200]})."]
    elif ing.get("error"):
        lines += ["", f"**Ingest**: failed in this run ({ing['error'][:200]})."]
    fr = doc.get("freshness") or {}
    if fr.get("results"):
        lines += ["", f"**Freshness** (event produced → first poll that sees it committed; {fr['rate_per_s']} events/s "
                  f"for {fr['seconds']} s on a 1-partition topic, `trigger=\"every 1s\"`, lakecat through "
                  f"`cat.ingest(..., background=True)`; the poll: {fr.get('poll_query', 'a count of the rows')}):", "",
                  "| format | plain p50 / p95 | lakecat p50 / p95 | lakecat / plain (p50) |", "|---|---|---|---|"]  # fmt: skip
        for fmt, r in fr["results"].items():
            p, lc = r.get("plain", {}), r.get("lakecat", {})
            lines.append(f"| {_fmt_name(fmt)} | {_s(p.get('p50_s'))} / {_s(p.get('p95_s'))} | "
                         f"{_s(lc.get('p50_s'))} / {_s(lc.get('p95_s'))} | {_x(r.get('ratio_p50'))} |")  # fmt: skip
    c = doc.get("cdc") or {}
    cdc_rows = [(fmt, c[fmt]) for fmt in _doc_formats(doc) if isinstance(c.get(fmt), dict)]
    if cdc_rows:
        lines += ["", f"**CDC, Debezium events → MERGE** (`python -m lakecat.bench.cdc`: {_n(c.get('events'))} messages — "
                  f"{_n(c.get('change_events'))} change events over {_n(c.get('keys'))} keys, with tombstones — on a "
                  f"3-partition topic, `available-now`, {_n(c.get('batch'))} per micro-batch; plain = a hand-written "
                  "foreachBatch with `row_number` per key and `MERGE INTO`):", "",
                  "| format | plain events/s | lakecat events/s | lakecat / plain |", "|---|---|---|---|"]  # fmt: skip
        for fmt, r in cdc_rows:
            lines.append(f"| {_fmt_name(fmt)} | {_n(r.get('plain_events_s'))} | {_n(r.get('lakecat_events_s'))} | "
                         f"{_x(r.get('ratio'))} |")  # fmt: skip
    elif c.get("skipped") or c.get("error"):
        lines += ["", f"**CDC**: not measured in this run ({(c.get('skipped') or c.get('error'))[:200]})."]
    cp = doc.get("compact") or {}
    if cp.get("results"):
        res = cp["results"]
        fmts = list(res)
        target = cp.get("target") or f"{cp.get('target_file_size', 0):,} bytes"
        lines += ["", f"**Compaction** ({cp['files']:,} files, {cp['rows']:,} rows, {target} target; the engine's own command "
                  f"(`rewrite_data_files` / `OPTIMIZE`) runs on an identical copy{_rounds_note(res)}):", "",
                  "| | " + " | ".join(_fmt_name(f) for f in fmts) + " |", "|---" * (len(fmts) + 1) + "|"]  # fmt: skip

        def row(label: str, cell: Callable[[dict[str, Any]], str]) -> None:
            lines.append(f"| {label} | " + " | ".join(cell(res[f]) for f in fmts) + " |")

        row("files before → after", lambda r: f"{_n(r.get('files_before'))} → {_n(r.get('files_after'))}")
        row("dry run", lambda r: _s(r.get("dry_run_s")))
        row("`lakecat compact`", lambda r: _s(r.get("lakecat_compact_s")))
        if any("lakecat_engine_s" in r for r in res.values()):  # documents of earlier releases lack the split
            row(
                "of it: the engine's procedure / lakecat's own part",
                lambda r: f"{_s(r.get('lakecat_engine_s'))} / {_s(r.get('lakecat_overhead_s'))}",
            )
        row("the engine's own command", lambda r: _s(r.get("engine_compact_s")))
        row("lakecat / engine", lambda r: _x(r.get("lakecat_over_engine")))
        row(
            "filtered query before → after",
            lambda r: (
                f"{_s(r.get('before', {}).get('filtered_query_s'))} → "
                f"{_s(r.get('after', {}).get('filtered_query_s'))} ({_x(r.get('filtered_query_speedup'))} faster)"
            ),
        )
        row(
            "full query before → after",
            lambda r: (
                f"{_s(r.get('before', {}).get('full_query_s'))} → "
                f"{_s(r.get('after', {}).get('full_query_s'))} ({_x(r.get('full_query_speedup'))} faster)"
            ),
        )
    big = cp.get("big") or {}
    if big.get("results"):
        res = big["results"]
        fmts = list(res)
        lines += ["", f"**Compaction of {big['files']:,} small files** (one unpartitioned table, {big['rows']:,} rows, "
                  f"{big.get('rows_per_file', 0):,} per file, {big.get('target')} target; the engine's own command on an "
                  f"identical copy{_rounds_note(res)}):", "", "| | " + " | ".join(_fmt_name(f) for f in fmts) + " |",
                  "|---" * (len(fmts) + 1) + "|"]  # fmt: skip
        for label, cell in (
            ("files before → after", lambda r: f"{_n(r.get('files_before'))} → {_n(r.get('files_after'))}"),
            ("dry run", lambda r: _s(r.get("dry_run_s"))),
            ("`lakecat compact`", lambda r: _s(r.get("lakecat_compact_s"))),
            (
                "of it: the engine's procedure / lakecat's own part",
                lambda r: f"{_s(r.get('lakecat_engine_s'))} / {_s(r.get('lakecat_overhead_s'))}",
            ),
            ("the engine's own command", lambda r: _s(r.get("engine_compact_s"))),
            ("lakecat / engine", lambda r: _x(r.get("lakecat_over_engine"))),
            ("driver peak (Python + JVM)", lambda r: f"{_n((r.get('peak_mb') or {}).get('total_mb'))} MB"),
        ):
            lines.append(f"| {label} | " + " | ".join(cell(res[f]) for f in fmts) + " |")
    elif big.get("error"):
        lines += ["", f"**Compaction of many small files**: failed in this run ({big['error'][:200]})."]
    md = doc.get("metadata") or {}
    if md.get("results"):
        res = md["results"]
        spark = res.get("spark_session_start", {})
        lines += ["", f"**Metadata answers without a JVM** (whole process, median of {md.get('repeat')}; tables with "
                  f"{md.get('commits')} commits after creation):", "",
                  "| command | time | peak RSS | vs a bare Spark session start |", "|---|---|---|---|"]  # fmt: skip
        for name, f in res.items():
            if name == "spark_session_start":
                continue
            cmd, _, fmt = name.partition("_")
            label = f"`lakecat {cmd}`" + (f" ({_fmt_name(fmt)})" if fmt else "")
            lines.append(
                f"| {label} | {_s(f.get('s'))} | {_n(f.get('peak_mb'))} MB | {_x(md.get('ratios', {}).get(name + '_vs_spark_start'))} |"
            )
        what = (
            "lakecat's own Spark session start, to a first `count()`"
            if spark.get("source") == "the suite's Spark child"
            else "a bare Spark session start with the same jars, to a first `count()` (what any Spark-based tool pays first)"
        )
        lines.append(f"| {what} | {_s(spark.get('s'))} | {_n(spark.get('peak_mb'))} MB | 1.00× |")
    lines += light.render(doc.get("light") or {}, doc.get("sizes") or {})
    st = doc.get("start") or {}
    if st.get("ratio") is not None:
        lines += ["", f"**Spark start** (median of {st.get('repeat')}, each in a fresh process, alternating; timed from the call "
                  "to the session, imports excluded; jars from lakecat's cache, no resolution):", "",
                  "| bare `SparkSession.builder.getOrCreate()` | lakecat session (`cat.session()`: Delta + Iceberg + Kafka + "
                  "JDBC jars, both extensions, the catalog) | lakecat / bare |", "|---|---|---|",
                  f"| {_s(st.get('bare_s'))} | {_s(st.get('lakecat_s'))} | {_x(st.get('ratio'))} |"]  # fmt: skip
    elif st.get("error"):
        lines += ["", f"**Spark start**: failed in this run ({st['error'][:200]})."]
    en = doc.get("engine") or {}
    if en.get("results"):
        lines += ["", f"**A warm engine** (whole `lakecat` processes, median of {en.get('repeat')}; warm = a running "
                  f"`lakecat local engine` (Spark Connect, started once in {_s(en.get('engine_start_s'))}), cold = "
                  "`LAKECAT_SPARK_REMOTE=off`, a Spark start per process; peak RSS of the lakecat process tree):", "",
                  "| command | format | cold | warm | warm / cold | peak RSS cold → warm |", "|---|---|---|---|---|---|"]  # fmt: skip
        for name, r in en["results"].items():
            cmd, _, fmt = name.rpartition("_")
            label = {"compact_dry_run": "`compact --dry-run`", "upsert": "`upsert` (100 rows)"}.get(cmd, f"`{cmd}`")
            lines.append(f"| {label} | {_fmt_name(fmt)} | {_s(r.get('cold_s'))} | {_s(r.get('warm_s'))} | {_x(r.get('ratio'))} | "
                         f"{_n(r.get('cold_peak_mb'))} → {_n(r.get('warm_peak_mb'))} MB |")  # fmt: skip
    elif en.get("error"):
        lines += ["", f"**A warm engine**: failed in this run ({en['error'][:200]})."]
    mem = (doc.get("memory") or {}).get("spark_driver") or {}
    order = [f"{sec}_{kind}{fmt}{mode}" for sec, mode in (("ingest", ""), ("ingest", "_dedupe"), ("freshness", ""))
             for fmt in _doc_formats(doc) for kind in ("plain_", "lakecat_", "tuned_")]  # fmt: skip
    order += [f"compact_{kind}{fmt}" for kind in ("", "big_") for fmt in _doc_formats(doc)]
    phases = [(k, mem[k]) for k in order if k in mem]
    if phases:
        lines += ["", "**Driver memory** (peak RSS of the benchmark's driver process tree — Python + the Spark JVM — during "
                  "each phase, in MiB; one JVM serves every phase in turn, so a later phase inherits the heap an earlier one "
                  "grew):", "",
                  "| phase | Python | JVM | total |", "|---|---|---|---|"]  # fmt: skip
        for k, v in phases:
            lines.append(
                f"| {k.replace('_', ' ')} | {_n(v.get('python_mb'))} | {_n(v.get('jvm_mb'))} | {_n(v.get('total_mb'))} |"
            )
        if "overall" in mem:
            v = mem["overall"]
            lines.append(f"| whole run | {_n(v.get('python_mb'))} | {_n(v.get('jvm_mb'))} | {_n(v.get('total_mb'))} |")
            if isinstance(v.get("total_mb"), (int, float)):
                within = "within" if v["total_mb"] <= 2048 else "over"
                lines += [
                    "",
                    f"The whole run's driver peak, {_n(v['total_mb'])} MiB, is {within} the 2 GiB (2,048 MiB) "
                    "bound lakecat's JVM defaults aim at.",
                ]
    lines += ["", "Rerun: `python -m lakecat.bench --out bench.json` (full sizes; `--quick` for a smoke run), then "
              "`python -m lakecat.bench --from-json bench.json --docs` to regenerate this section.", END_MARK]  # fmt: skip
    return "\n".join(lines)


def update_readme(text: str, section: str) -> str:
    """Replace the generated block (or, the first time, the whole body of ``## Performance``) with ``section``."""
    if START_MARK in text and END_MARK in text:
        before, rest = text.split(START_MARK, 1)
        _, after = rest.split(END_MARK, 1)
        return before + section + after
    m = re.search(r"^## Performance[^\n]*\n", text, flags=re.MULTILINE)
    if m is None:
        return text.rstrip("\n") + "\n\n## Performance\n\n" + section + "\n"
    nxt = re.search(r"^## ", text[m.end() :], flags=re.MULTILINE)
    if nxt is None:
        return text[: m.end()] + "\n" + section + "\n"
    return text[: m.end()] + "\n" + section + "\n\n" + text[m.end() + nxt.start() :]


# --- command line ------------------------------------------------------------------------------
def _scale(text: str) -> int:
    """``2m`` -> 2_000_000, ``200k`` -> 200_000, ``50000`` -> 50_000 (for ``--scale``)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"invalid scale {text!r}: a positive count like 200k or 2m")
    return int(float(m.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2).lower()])


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m lakecat.bench", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Sections: " + ", ".join(SECTIONS) + ". Prints one JSON document on stdout; "
                                 "progress goes to stderr.")  # fmt: skip
    ap.add_argument(
        "--quick", action="store_true", help="small sizes (a few minutes on 2 cores) instead of the full ones"
    )
    ap.add_argument("--out", metavar="FILE.json", help="also write the JSON document to this file")
    ap.add_argument(
        "--readme",
        nargs="?",
        const="README.md",
        metavar="README.md",
        help="rewrite the '## Performance' section of this README from the results (default ./README.md)",
    )
    ap.add_argument(
        "--docs",
        nargs="?",
        const=DOCS_PAGE,
        metavar="PAGE.md",
        help=f"rewrite the generated block of the docs' Performance page (default ./{DOCS_PAGE})",
    )
    ap.add_argument("--from-json", metavar="FILE.json", help="render a saved document instead of running (with --docs)")
    ap.add_argument("--markdown", action="store_true", help="print the generated markdown section instead of the JSON")
    ap.add_argument(
        "--scale",
        metavar="N",
        type=_scale,
        help="events for the ingest section, e.g. 200k or 2m (the same as --set events=N)",
    )
    ap.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset of the sections")
    ap.add_argument("--formats", default="iceberg,delta")
    ap.add_argument("--bootstrap", metavar="HOST:PORT", help="use this Kafka broker instead of starting one")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one size, e.g. --set events=100000 (keys: " + ", ".join(FULL) + ")",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.child:
        return _child_main(args.child, args.child_out)
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
    else:
        sections = [s.strip() for s in args.sections.split(",") if s.strip()]
        unknown = [s for s in sections if s not in SECTIONS]
        if unknown:
            _parser().error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
        sizes = dict(QUICK if args.quick else FULL)
        if args.scale:  # the ingest section at this size alone
            sizes["events"], sizes["ingest_big_events"] = args.scale, 0
        for item in args.set:
            key, _, value = item.partition("=")
            if key not in sizes:
                _parser().error(f"--set {key}: unknown size; one of {', '.join(sizes)}")
            sizes[key] = (
                value
                if key in ("compact_target", "fresh_poll", "ingest_modes")
                else (None if value.lower() == "none" else float(value) if "." in value else int(value))
            )
        formats = [f.strip() for f in args.formats.split(",") if f.strip()]
        doc = run_suite(sizes, sections=sections, formats=formats, bootstrap=args.bootstrap, quick=args.quick)
        doc["command"] = shlex.join(["python", "-m", "lakecat.bench", *(argv if argv is not None else sys.argv[1:])])
    text = json.dumps(doc, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    for target in (args.readme, args.docs):
        if target:
            path = Path(target)
            path.write_text(update_readme(path.read_text(), render_markdown(doc)))
            _say(f"rewrote the Performance section of {path}")
    print(render_markdown(doc) if args.markdown else text)
    return 1 if failed_sections(doc) else 0


if __name__ == "__main__":
    sys.exit(main())
