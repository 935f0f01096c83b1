"""Dependencies lakecat imports only when a feature needs them, and the one line that names what to install.

Like pyiceberg's extras: the PostgreSQL metastore's driver and the Prometheus client are optional
(``pip install 'lakecat[postgres]'``, ``'lakecat[metrics]'``); DuckDB, the Kafka client and the Spark Connect client
come with every install but are imported on demand too, so an install that lost one says which to put back
instead of failing with a stack trace.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from types import ModuleType

from .errors import MissingDependencyError

#: The distribution that provides a module, as lakecat's own requirements name it (where that differs).
_DISTRIBUTION = {
    "psycopg2": "psycopg2-binary",
    "prometheus_client": "prometheus-client",
    "confluent_kafka": "confluent-kafka",
    "grpc": "pyspark[connect]",  # grpcio, through pyspark's connect extra
    "grpc_status": "pyspark[connect]",
    "google.rpc": "pyspark[connect]",
    "zstandard": "pyspark[connect]",
}
#: The modules pyspark's Spark Connect client imports besides pandas and pyarrow (pyspark[connect]).
CONNECT_CLIENT = ("grpc", "grpc_status", "google.rpc", "zstandard")


def _requirement(module: str) -> str:
    """What to ``pip install`` for a module lakecat depends on: its requirement as lakecat's metadata spells it."""
    dist = _DISTRIBUTION.get(module, module.replace("_", "-"))
    want, _, extra = dist.partition("[")  # the requirement must carry the extra too (pyspark is listed twice)
    try:
        requires = importlib.metadata.requires("lakecat") or []
    except importlib.metadata.PackageNotFoundError:
        requires = []
    for req in requires:
        name = re.split(r"[\s\[<>=!~;]", req, maxsplit=1)[0]
        if ";" not in req and name.lower().replace("_", "-") == want.lower() and (not extra or f"[{extra}" in req):
            return req
    return dist


def install_hint(module: str, *, extra: str | None) -> str:
    """``pip install 'lakecat[EXTRA]'`` for an optional dependency, else the requirement that provides ``module``."""
    return f"pip install 'lakecat[{extra}]'" if extra else f"pip install '{_requirement(module)}'"


def require(module: str, *, extra: str | None, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or fail with one line naming what to install (exit 2).

    Args:
        module: The module to import (``"psycopg2"``).
        extra: lakecat's extra that installs it (``"postgres"``), or None for a dependency of every install.
        feature: What needs it, as the message's subject (``"the PostgreSQL metastore"``).

    Raises:
        MissingDependencyError: The module is not installed, or is installed but cannot be imported.

    Example:
        >>> require("psycopg2", extra="postgres", feature="the PostgreSQL metastore")  # doctest: +SKIP
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        hint = install_hint(module, extra=extra)
        missing = getattr(e, "name", None)
        if isinstance(e, ModuleNotFoundError) and (missing == module or module.startswith(f"{missing}.")):
            raise MissingDependencyError(f"{feature} needs {module}, which is not installed: {hint}") from None
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise MissingDependencyError(f"{feature} needs {module}, which cannot be imported ({first}): {hint}") from None


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (a PyPI name) from its metadata, without importing it; None when
    it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
