"""Local server processes lakecat starts (Kafka broker, Spark engine): free ports, whether a recorded pid still runs."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pathlib
import signal
import socket
import time
from typing import Any

_LOG = logging.getLogger(__name__)


def port_free(port: int) -> bool:
    """True when nothing listens on 127.0.0.1:``port`` (bound as the JVM binds, with SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVM does
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port on 127.0.0.1 that is free right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pid_alive(pid: int, marker: str) -> bool:
    """Whether ``pid`` runs, and is the program whose command line holds ``marker`` (not a reused pid)."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child that exited: reap it
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    cmdline = pathlib.Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():  # guard against pid reuse and zombies
        try:
            stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":  # exited after the waitpid above: reap it now if it is ours
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                return False
            return marker in cmdline.read_text()
        except (OSError, IndexError):
            return False
    return True


def read_state(path: pathlib.Path) -> dict[str, Any] | None:
    """A server's recorded state (JSON object), or None when the file is missing or not one."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def terminate(pid: int, marker: str, *, timeout: float, what: str) -> bool:
    """SIGTERM ``pid``, then SIGKILL after ``timeout`` seconds; True once the process (``marker`` in its command line)
    is gone, False when it outlived the SIGKILL too."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not pid_alive(pid, marker):
                return True
            time.sleep(0.2)
        _LOG.warning("%s (pid %d) did not exit after %s", what, pid, sig.name)
    return False
