"""This machine and this process: lakecat's development servers, its jar cache, ``doctor``'s checks, the newcomer tour,
and what a program that runs lakecat commands sets for its process. A public module (``lakecat.local``), as the
``lakecat local``, ``jars``, ``doctor`` and ``quickstart`` commands use it.

Example:
    >>> from lakecat import local
    >>> broker = local.LocalKafka(data_dir=local.lakecat_home() / "kafka", port=9092)
    >>> broker.start()
    'localhost:9092'
    >>> local.run_doctor(lakecat.resolve_config(None)).ok
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import lakecat_home
from .doctor import Check, DoctorReport, run_doctor
from .engine_local import LocalEngine, terminal_command
from .formats import local_server
from .formats.base import LocalServer
from .interrupt import install as install_interrupt_handler
from .interrupt import requested as interrupt_requested
from .jars import CacheListing, FetchResult, list_cache
from .jars import fetch as fetch_jars
from .jars import repository as jar_repository
from .processes import is_loopback
from .quickstart import run_quickstart

if TYPE_CHECKING:
    from .kafka_local import LocalKafka

__all__ = [
    "CacheListing",
    "Check",
    "DoctorReport",
    "FetchResult",
    "LocalEngine",
    "LocalKafka",
    "LocalServer",
    "fetch_jars",
    "install_interrupt_handler",
    "interrupt_requested",
    "is_loopback",
    "jar_repository",
    "lakecat_home",
    "list_cache",
    "local_server",
    "run_doctor",
    "run_quickstart",
    "terminal_command",
]


def __getattr__(name: str) -> Any:
    """``LocalKafka`` loads the Kafka client library: only when asked for."""
    if name == "LocalKafka":
        from .kafka_local import LocalKafka

        return LocalKafka
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
