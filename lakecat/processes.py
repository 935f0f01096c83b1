"""Local server processes lakecat starts (Kafka broker, Spark engine, Iceberg REST server): start one and wait for it,
free ports, whether a recorded pid still runs, stop it."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import pathlib
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_LOG = logging.getLogger(__name__)


def port_free(port: int, *, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on ``host``:``port`` (bound as the JVM binds, with SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVM does
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine's loopback only: 127.0.0.0/8, ::1, or a name that resolves to nothing else."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in found)


def listening(port: int) -> bool:
    """True when something accepts connections on 127.0.0.1:``port``."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
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


def log_tail(path: pathlib.Path, *, lines: int = 20) -> str:
    """The last ``lines`` lines of a server's log, headed by its path: what a failed start shows."""
    try:
        text = "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        text = "(missing)"
    return f"end of {path}:\n{text}"


def start_server(
    cmd: Sequence[str],
    *,
    what: str,
    log_file: pathlib.Path,
    cwd: pathlib.Path,
    ready: Callable[[], bool],
    record: Callable[[int], None],
    stop: Callable[[], object],
    error: Callable[[str], Exception],
    timeout: float,
    poll: float = 0.25,
    env: Mapping[str, str] | None = None,
    not_ready: str = "did not answer",
    tail: Callable[[], str] | None = None,
) -> int:
    """Start a server process detached from this one and wait until ``ready()`` says it serves.

    The process gets its own session (a Ctrl-C of the caller does not reach it) and appends its output to
    ``log_file``; ``record(pid)`` runs right after it starts, so a later process can find or stop it even
    when this one dies while waiting.

    Args:
        cmd: The command line.
        what: The server as messages name it (``"kafka"``, ``"the REST catalog server"``).
        log_file: Its stdout and stderr, appended.
        cwd: Its working directory.
        ready: Whether it serves yet; asked every ``poll`` seconds.
        record: Called with the pid before waiting (writes the caller's state file).
        stop: Called when it does not come up in time (stops it and clears the state).
        error: Builds the exception raised on failure from its message.
        timeout: Seconds to wait for ``ready()``.
        poll: Seconds between two ``ready()`` calls.
        env: Its environment (default: this process's).
        not_ready: How the timeout message says it failed (``"did not listen"``).
        tail: The end of its log for a failure message (default: :func:`log_tail` of ``log_file``).

    Returns:
        The server's pid.

    Raises:
        Exception: ``error(message)`` when the process exits before it is ready, or does not become ready within
            ``timeout`` seconds; the message ends with the end of its log.
    """
    show_tail = tail or (lambda: log_tail(log_file))
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                cwd=cwd, env=None if env is None else dict(env), start_new_session=True)  # fmt: skip
    record(proc.pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise error(f"{what} exited with code {proc.returncode}; {show_tail()}")
        if ready():
            return proc.pid
        time.sleep(poll)
    stop()
    raise error(f"{what} {not_ready} within {timeout:.0f}s; {show_tail()}")
