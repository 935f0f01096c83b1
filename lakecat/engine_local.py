"""A warm local Spark engine: a Spark Connect server with lakecat's jars, extensions and catalog settings.

``lakecat local engine start`` starts it the way Spark's ``start-connect-server.sh`` does (``spark-submit
--class org.apache.spark.sql.connect.service.SparkConnectServer``; the ``spark-connect`` jar ships in the
pyspark wheel) with the same settings as lakecat's in-process session (``lakecat.spark.engine_spark_conf``) but
the collector (G1, which gives an idle server's heap back), for one catalog. While it runs, Spark-path commands on
that catalog connect to it instead of starting a JVM of their own (``lakecat.spark.remote_url``). Its pid, port and catalog are recorded in
``$LAKECAT_HOME/engine/engine-state.json`` so that a later process can find, reuse or stop it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import EnvironmentProblemError
from .processes import listening, port_free, start_server, terminate
from .spark import (
    ENGINE_SERVER_CLASS,
    ENGINE_STATE_FILE,
    _check_java,
    engine_dir,
    engine_jars,
    engine_spark_conf,
    engine_state,
    jvm_environment,
)

if TYPE_CHECKING:
    from .config import CatalogConfig

_LOG = logging.getLogger(__name__)
DEFAULT_PORT = 15002


class LocalEngineError(EnvironmentProblemError, RuntimeError):
    """Raised when the local engine cannot be started or stopped."""


def _pyspark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


class LocalEngine:
    """A Spark Connect server for one catalog, on 127.0.0.1:``port``, with its state in ``data_dir``."""

    def __init__(self, config: CatalogConfig, *, port: int = DEFAULT_PORT, data_dir: Path | None = None) -> None:
        self.config = config
        self.port = port
        self.data_dir = (data_dir or engine_dir()).expanduser().resolve()
        self.log_file = self.data_dir / "engine.log"

    def _tail(self, lines: int = 8) -> str:
        try:
            text = [ln.strip() for ln in self.log_file.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return f"no log at {self.log_file}"
        text = [ln for ln in text if not ln.startswith("at ")][-lines:]
        return " | ".join(text)[-1500:] + f" (see {self.log_file})"

    def _record(self, pid: int) -> None:
        state = {"pid": pid, "port": self.port, "catalog": self.config.name, "source": self.config.source}
        (self.data_dir / ENGINE_STATE_FILE).write_text(json.dumps(state))

    def command(self) -> list[str]:
        """The ``spark-submit`` command line of the server."""
        sizing = self.config.sizing()
        conf = {
            **engine_spark_conf(self.config, server=True, sizing=sizing),
            "spark.app.name": "lakecat-engine",
            "spark.master": sizing.master,
            "spark.jars": ",".join(engine_jars(self.config)),
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            # foreachBatch functions and Python UDFs run in Python workers the server starts: this Python,
            # where lakecat is importable
            "spark.pyspark.python": sys.executable,
            "spark.pyspark.driver.python": sys.executable,
        }
        cmd = [str(_pyspark_home() / "bin" / "spark-submit"), "--class", ENGINE_SERVER_CLASS]
        for k, v in conf.items():
            cmd += ["--conf", f"{k}={v}"]
        return [*cmd, "spark-internal"]

    def start(self, *, timeout: float = 180.0) -> str:
        """Start the server unless the one recorded in ``data_dir`` runs; returns its ``sc://`` URL.

        Raises:
            LocalEngineError: the port is taken, another catalog's engine runs, or the server does not come up
                in time (the message ends with its log's last lines).
        """
        state = engine_state(self.data_dir)
        if state:
            if state.get("catalog") != self.config.name or state.get("source") != self.config.source:
                raise LocalEngineError(f"the local engine (pid {state['pid']}) serves catalog {state.get('catalog')!r}: "
                                       "stop it first (lakecat local engine stop)")  # fmt: skip
            return f"sc://127.0.0.1:{state['port']}"
        if not port_free(self.port):
            raise LocalEngineError(f"port {self.port} is already in use; pass --port")
        _check_java()
        cmd = self.command()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = {**jvm_environment(os.environ), "SPARK_HOME": str(_pyspark_home()), "PYSPARK_PYTHON": sys.executable}
        env.pop("SPARK_REMOTE", None)
        env.pop("SPARK_CONNECT_MODE_ENABLED", None)
        url = f"sc://127.0.0.1:{self.port}"
        pid = start_server(
            cmd, what="the Spark Connect server", log_file=self.log_file, cwd=self.data_dir, env=env,
            ready=lambda: listening(self.port), record=self._record, stop=self.stop, error=LocalEngineError,
            timeout=timeout, not_ready="did not listen", tail=self._tail,
        )  # fmt: skip
        _LOG.info("started the local engine (pid %d) on %s", pid, url)
        return url

    def stop(self, *, timeout: float = 60.0) -> bool:
        """Stop the server: SIGTERM (Spark's shutdown hooks stop its context), SIGKILL after ``timeout`` s.

        Returns:
            Whether a server was running.
        """
        state = engine_state(self.data_dir)
        old = engine_state(self.data_dir, running=False)
        if old is not None:
            (self.data_dir / ENGINE_STATE_FILE).write_text(json.dumps({**old, "pid": None}))
        if state is None:
            return False
        pid = state["pid"]
        if terminate(pid, ENGINE_SERVER_CLASS, timeout=timeout, what="the local engine"):
            return True
        raise LocalEngineError(f"could not stop the local engine (pid {pid}); kill it manually")

    def status(self) -> dict[str, Any]:
        """``{"running", "pid", "url", "catalog", "log"}`` of the server recorded in ``data_dir``."""
        state = engine_state(self.data_dir)
        return {"running": state is not None, "pid": state["pid"] if state else None,
                "url": f"sc://127.0.0.1:{state['port']}" if state else None,
                "catalog": state.get("catalog") if state else None, "log": str(self.log_file)}  # fmt: skip
