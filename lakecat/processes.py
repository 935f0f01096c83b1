"""Local server processes lakecat starts (Kafka broker, Spark engine): free ports, whether a recorded pid still runs."""

from __future__ import annotations

import contextlib
import os
import pathlib
import socket


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
