"""Apache Iceberg's own REST catalog server, run locally over a lakecat catalog's metastore (development only).

``org.apache.iceberg.rest.RESTCatalogServer`` (the test fixtures of ``iceberg-open-api``, the server of the
``apache/iceberg-rest-fixture`` image) is started from the jar set ``rest`` of lakecat's resolver — no Maven,
no Docker. Backed by Iceberg's JdbcCatalog over the same SQLite file and catalog name as lakecat's embedded
catalog, it serves that catalog's Iceberg tables to any engine that speaks the REST protocol (pyiceberg's
RestCatalog, DuckDB, Trino, Spark's RESTCatalog), and tables created through it are lakecat's tables too.

It has no authentication: for development and tests. In production run a REST catalog with authentication (Apache
Polaris, Lakekeeper). The stock server listens on every interface and has no setting for the address, so lakecat runs
it through its own launcher (``lakecat/java/LoopbackRESTCatalogServer.java``: the same catalog, servlet and Jetty
handlers on one address), prebuilt in the package (``lakecat/java/lakecat-rest.jar``). It listens on 127.0.0.1 unless
``host`` says otherwise.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from ...errors import EnvironmentProblemError, InvalidConfigError, MissingDependencyError, UnsupportedOperationError
from ...jar_sets import REST_ICEBERG_VERSION, rest_set
from ...jars import JarResolutionError, jar_paths, java_executable
from ...jvm import MISSING_JAR, REST_LAUNCHER_JAR, packaged_jar
from ...processes import pid_alive, port_free, read_state, start_server, terminate
from . import rest

if TYPE_CHECKING:
    from ..base import CatalogContext

_LOG = logging.getLogger(__name__)
_STATE_FILE = "rest-state.json"
_STOCK = "org.apache.iceberg.rest.RESTCatalogServer"
_LAUNCHER = "org.apache.iceberg.rest.LoopbackRESTCatalogServer"
_HOST_PROPERTY = "lakecat.rest.host"
_MARKER = "RESTCatalogServer"  # in the command line of either main class: tells our server from a reused pid
_WILDCARDS = ("0.0.0.0", "::")  # every interface: what the stock server binds
DEFAULT_PORT = 8181
DEFAULT_HOST = "127.0.0.1"


class LocalRestError(EnvironmentProblemError, RuntimeError):
    """The local REST catalog server cannot be resolved, started or stopped (exit 1)."""


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _ready(host: str, port: int) -> bool:
    reach = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)  # a wildcard answers on loopback too
    try:
        with urllib.request.urlopen(f"{_url(reach, port)}/v1/config", timeout=2) as resp:  # noqa: S310 - our own URL
            return bool(resp.status == 200)
    except (OSError, urllib.error.URLError):
        return False


class LocalRestCatalog:
    """Iceberg's REST catalog server serving one lakecat catalog; its pid and port live in ``data_dir``.

    Args:
        data_dir: Where the state file and ``server.log`` live.
        port: The port to listen on.
        host: The address to listen on: loopback unless told otherwise (the server has no authentication).
        catalog: The lakecat catalog to serve (needed by ``start`` only): its Iceberg tables must live in its
            own SQLite metastore (``[iceberg] type`` jdbc, the default).
    """

    def __init__(
        self,
        *,
        data_dir: pathlib.Path,
        port: int = DEFAULT_PORT,
        host: str = DEFAULT_HOST,
        catalog: CatalogContext | None = None,
    ) -> None:
        self.data_dir = pathlib.Path(data_dir).expanduser().resolve()
        self.port = port
        self.host = host
        self.catalog = catalog
        self.log_file = self.data_dir / "server.log"

    def _read_state(self) -> dict[str, Any] | None:
        return read_state(self.data_dir / _STATE_FILE)

    def _running_state(self) -> dict[str, Any] | None:
        state = self._read_state()
        if state and isinstance(state.get("pid"), int) and pid_alive(state["pid"], _MARKER):
            return state
        return None

    def _environment(self) -> dict[str, str]:
        ctx = self.catalog
        if ctx is None:  # pragma: no cover - the command always passes one
            raise InvalidConfigError("which catalog should the REST server serve? (pass --catalog)")
        config = ctx.config
        if rest.is_external(config):
            raise InvalidConfigError(f"catalog {config.name!r} keeps its Iceberg tables in a {rest.kind(config)} catalog "
                                     "already: serve a catalog whose Iceberg tables live in lakecat's metastore")  # fmt: skip
        path = config.metastore.sqlite_path
        if path is None:
            raise UnsupportedOperationError(f"local rest: serves SQLite metastores only; catalog {config.name!r} uses "
                                            f"{config.metastore.kind}")  # fmt: skip
        ctx.metastore  # noqa: B018 - the JDBC catalog tables exist (V0 schema, WAL mode) before the server opens them
        # The server reads CATALOG_<property> ('_' a dot, '__' a dash); none of the caller's may leak in.
        env = {k: v for k, v in os.environ.items() if not k.startswith("CATALOG_")}
        env.update({
            "CATALOG_URI": f"jdbc:sqlite:{path}",
            "CATALOG_WAREHOUSE": config.warehouse_uri,
            "CATALOG_CATALOG_NAME": ctx.metastore.catalog_name,  # the catalog_name of the rows it serves
            "CATALOG_JDBC_SCHEMA__VERSION": "V0",  # serve lakecat's tables as they are: never alter them
            "CATALOG_REST_PORT": str(self.port),
        })  # fmt: skip
        return env

    def start(self, *, timeout: float = 60.0) -> str:
        """Start the server unless the one recorded in ``data_dir`` runs already; returns its URI.

        Raises:
            LocalRestError: Java or the jars are missing, the port is taken, or the server does not come up.
            MissingDependencyError: The launcher's jar is missing (a source tree never installed), and ``host`` is
                not a wildcard.
        """
        state = self._running_state()
        if state:
            return _url(state.get("host", DEFAULT_HOST), state["port"])
        if not port_free(self.port, host=self.host):
            raise LocalRestError(f"port {self.port} is already in use; pass another port=").with_cli_terms(
                {"another port=": "--port"}
            )
        try:
            java = java_executable()
        except EnvironmentProblemError as e:
            raise LocalRestError(str(e)) from e
        env = self._environment()
        try:
            jars = jar_paths(rest_set())
        except JarResolutionError as e:
            raise LocalRestError(str(e)) from e
        self.data_dir.mkdir(parents=True, exist_ok=True)
        classpath, main = self._main(jars)
        cmd = [java, "-Xms64m", "-Xmx384m", "-Djava.awt.headless=true", "-cp", classpath, *main]
        pid = start_server(
            cmd, what="the REST catalog server", log_file=self.log_file, cwd=self.data_dir, env=env,
            ready=lambda: _ready(self.host, self.port), record=self._record, stop=self.stop, error=LocalRestError,
            timeout=timeout, poll=0.3,
        )  # fmt: skip
        _LOG.info("started the Iceberg REST catalog server (pid %d) on %s", pid, _url(self.host, self.port))
        return _url(self.host, self.port)

    def _main(self, jars: list[pathlib.Path]) -> tuple[str, list[str]]:
        """The class path and the main class (with its options): lakecat's launcher on ``host``; Iceberg's own server
        when ``host`` is every interface anyway and the launcher's jar is missing (a source tree never installed)."""
        classpath = os.pathsep.join(map(str, jars))
        launcher = packaged_jar(REST_LAUNCHER_JAR)
        if launcher is None:
            if self.host in _WILDCARDS:
                return classpath, [_STOCK]
            raise MissingDependencyError(
                f"listening on {self.host} needs {REST_LAUNCHER_JAR.name}, which {MISSING_JAR} (or pass host='0.0.0.0' "
                "to run Iceberg's own server on every interface, no authentication)"
            ).with_cli_terms({"host='0.0.0.0'": "--host 0.0.0.0"})
        return os.pathsep.join([str(launcher), classpath]), [f"-D{_HOST_PROPERTY}={self.host}", _LAUNCHER]

    def _record(self, pid: int) -> None:
        assert self.catalog is not None
        config = self.catalog.config
        (self.data_dir / _STATE_FILE).write_text(json.dumps({
            "pid": pid, "port": self.port, "host": self.host, "catalog": config.name, "warehouse": config.warehouse_uri,
            "metastore": str(config.metastore.sqlite_path), "version": REST_ICEBERG_VERSION,
        }))  # fmt: skip

    def stop(self, *, timeout: float = 20.0) -> bool:
        """Stop the server: SIGTERM, then SIGKILL after ``timeout`` seconds. Returns whether one was running."""
        state = self._running_state()
        old = self._read_state()
        if old is not None:
            (self.data_dir / _STATE_FILE).write_text(json.dumps({**old, "pid": None}))
        if state is None:
            return False
        pid = state["pid"]
        if terminate(pid, _MARKER, timeout=timeout, what="the REST catalog server"):
            return True
        raise LocalRestError(f"could not stop the REST catalog server (pid {pid}); kill it manually")

    def status(self) -> dict[str, Any]:
        """``{"running", "pid", "uri", "host", "catalog", "warehouse", "metastore", "data_dir", "version"}``
        (``host``: the address it listens on)."""
        state = self._running_state()
        old = state or {}
        host = old.get("host", DEFAULT_HOST) if state else None
        return {"running": state is not None, "pid": old.get("pid"), "host": host,
                "uri": _url(host, old["port"]) if host else None, "catalog": old.get("catalog"),
                "warehouse": old.get("warehouse"), "metastore": old.get("metastore"), "data_dir": str(self.data_dir),
                "version": REST_ICEBERG_VERSION}  # fmt: skip
