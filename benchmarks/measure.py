"""What the benchmark sections measure with: the machine, a process tree's memory and CPU, timings, Spark's state."""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: The checkout's root: ``benchmarks`` runs from a checkout (it is not installed), so every child process that imports
#: it gets this on its path.
ROOT = Path(__file__).resolve().parent.parent


def child_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) with the checkout's root first on ``PYTHONPATH``."""
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([out["PYTHONPATH"]] if out.get("PYTHONPATH") else [])])
    return out


def say(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rounded(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(float(x), digits)


def quantile(values: list[float], q: float) -> float | None:
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


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return round(time.perf_counter() - started, 3), value


def last_json(text: str) -> Any:
    text = text.strip()
    with contextlib.suppress(ValueError):
        return json.loads(text)
    lines = text.splitlines()
    for i in range(len(lines)):  # the first line that starts a document running to the end
        if lines[i].startswith("{"):
            with contextlib.suppress(ValueError):
                return json.loads("\n".join(lines[i:]))
    raise ValueError("no JSON document in the output")
