"""The local engine's idle stop: clients mark their activity in a file, a small watchdog stops an idle engine.

A Spark Connect server has no idle shutdown of its own. Every lakecat process that uses the local engine touches
``$LAKECAT_HOME/engine/activity`` when it connects and every ``HEARTBEAT_S`` seconds while it holds the session
(``keep_alive``); the watchdog, started beside an engine that lakecat started with an idle limit, stops the engine
(SIGTERM, then SIGKILL) once nobody has touched the file for that long, and exits with the engine.

The watchdog runs this file as a script (``python engine_idle.py DIR PID SECONDS``): the standard library only, so
that it costs a few megabytes and never imports lakecat, pyspark or the JVM's jars.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

ACTIVITY_FILE = "activity"
#: How often a process that holds a session on the engine marks itself active.
HEARTBEAT_S = 30.0
#: The command-line marker of the engine's JVM (``lakecat.spark.ENGINE_SERVER_CLASS``; repeated here so that this
#: script needs no lakecat import).
SERVER_MARKER = "org.apache.spark.sql.connect.service.SparkConnectServer"
_STATE_FILE = "engine-state.json"
_beating: set[str] = set()
_beating_lock = threading.Lock()


def mark_active(data_dir: Path) -> None:
    """Record that the engine in ``data_dir`` is in use now."""
    with contextlib.suppress(OSError):
        (data_dir / ACTIVITY_FILE).touch()


def last_active(data_dir: Path, default: float) -> float:
    """When the engine in ``data_dir`` was last used (epoch seconds), ``default`` when never."""
    try:
        return max((data_dir / ACTIVITY_FILE).stat().st_mtime, default)
    except OSError:
        return default


def keep_alive(data_dir: Path) -> None:
    """Mark the engine active now and, from a daemon thread, every ``HEARTBEAT_S`` seconds while this process lives."""
    mark_active(data_dir)
    with _beating_lock:
        if str(data_dir) in _beating:
            return
        _beating.add(str(data_dir))

    def beat() -> None:
        while True:
            time.sleep(HEARTBEAT_S)
            mark_active(data_dir)

    threading.Thread(target=beat, name="lakecat-engine-heartbeat", daemon=True).start()


def _alive(pid: int) -> bool:
    """Whether the engine's JVM still runs (not a zombie, not a reused pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path(f"/proc/{pid}")
    if not proc.exists():  # no procfs: the signal test is all there is
        return True
    try:
        if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
        return SERVER_MARKER in (proc / "cmdline").read_text()
    except (OSError, IndexError):
        return False


def _stop(data_dir: Path, pid: int, idle_s: float) -> None:
    with contextlib.suppress(OSError), open(data_dir / "engine.log", "a") as log:
        log.write(f"lakecat: no client for {idle_s:.0f}s: stopping the engine (pid {pid})\n")
    for sig, wait in ((signal.SIGTERM, 60.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.5)
        if not _alive(pid):
            break
    state_file = data_dir / _STATE_FILE
    with contextlib.suppress(OSError, ValueError):
        state = json.loads(state_file.read_text())
        if isinstance(state, dict) and state.get("pid") == pid:
            state_file.write_text(json.dumps({**state, "pid": None}))


def watch(data_dir: Path, pid: int, idle_s: float, *, poll_s: float | None = None) -> None:
    """Stop the engine ``pid`` once ``data_dir``'s activity file is ``idle_s`` seconds old; return when it exits."""
    started = time.time()
    poll = poll_s if poll_s is not None else max(1.0, min(30.0, idle_s / 10))
    while _alive(pid):
        if time.time() - last_active(data_dir, started) >= idle_s:
            _stop(data_dir, pid, idle_s)
            return
        time.sleep(poll)


def main(argv: list[str]) -> int:
    data_dir, pid, idle_s = Path(argv[0]), int(argv[1]), float(argv[2])
    watch(data_dir, pid, idle_s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
