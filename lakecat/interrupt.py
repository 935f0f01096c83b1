"""Ctrl-C during a Spark command: the running jobs are cancelled and the command ends as "interrupted".

pyspark's own SIGINT handler calls into the JVM from inside the call it interrupts (py4j's socket is mid-read), which
breaks the connection: the user reads py4j tracebacks and an unrelated error. lakecat's handler (installed by the
``lakecat`` command, ``install``) never does that. Outside a JVM call it raises ``KeyboardInterrupt`` at once; inside
one it cancels the Spark jobs from another thread (and every job started after, so the command stops at its next
one), the call returns with the cancelled job's error, and ``requested()`` tells the command to end with exit 130.
A commit under way is not a job: it completes, so the table is as before or fully committed. A second Ctrl-C raises
``KeyboardInterrupt`` wherever the command is.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

log = logging.getLogger(__name__)

_requested = threading.Event()
_installed = False


def requested() -> bool:
    """Whether Ctrl-C (SIGINT) was pressed during this command."""
    return _requested.is_set()


def install() -> None:
    """Handle SIGINT the lakecat way in this process (from the main thread; elsewhere nothing changes)."""
    global _installed
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, _on_sigint)
    _installed = True


@contextlib.contextmanager
def jvm_starting() -> Iterator[None]:
    """Hold SIGINT while the in-process JVM starts (pyspark puts its own handler in place meanwhile); a Ctrl-C
    pressed then is handled, by lakecat's handler, as soon as the session exists. Without ``install``: nothing."""
    if not _installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, _on_sigint)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _in_jvm_call(frame: FrameType | None) -> bool:
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("py4j."):
            return True
        frame = frame.f_back
    return False


def _spark_context() -> Any:
    """The process's own SparkContext (None before the JVM starts, and for a Spark Connect session)."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark import SparkContext

    return SparkContext._active_spark_context


def _on_sigint(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 - the signal handler's signature
    again = _requested.is_set()
    _requested.set()
    context = _spark_context()
    if again or context is None or not _in_jvm_call(frame):
        raise KeyboardInterrupt
    threading.Thread(target=_cancel_jobs, args=(context,), name="lakecat-interrupt", daemon=True).start()


def _cancel_jobs(context: Any) -> None:
    """Cancel the running jobs now, and any job started later, until the process ends."""
    while True:
        try:
            context.cancelAllJobs()
        except Exception as e:  # noqa: BLE001 - the session may be stopping; the command ends anyway
            log.debug("cancelling Spark jobs: %s", e)
            return
        time.sleep(0.5)
