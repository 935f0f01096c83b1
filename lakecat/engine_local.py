"""A warm local Spark engine: a Spark Connect server with lakecat's jars, extensions and catalog settings.

``lakecat local engine start`` starts it the way Spark's ``start-connect-server.sh`` does (``spark-submit
--class org.apache.spark.sql.connect.service.SparkConnectServer``; the ``spark-connect`` jar ships in the
pyspark wheel) with the same settings as lakecat's in-process session (``lakecat.spark.engine_spark_conf``) but
the collector (G1, which gives an idle server's heap back), for one catalog. While it runs, Spark-path commands on
that catalog connect to it instead of starting a JVM of their own (``engine_url``). Its pid, port and catalog are
recorded in ``$LAKECAT_HOME/engine/engine-state.json`` so that a later process can find, reuse or stop it.

Which session a Spark-path command uses is decided here too (``choose_engine``, ``engine_url``): at an interactive
terminal the ``lakecat`` command starts this engine in the background by itself (it stops after an idle time,
``lakecat.engine_idle``); scripts and CI stay in process unless configured.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import engine_idle
from .config import ENGINE_CHOICES
from .engine import first_line
from .errors import ConfigError, EnvironmentProblemError, LakecatError
from .processes import free_port, listening, port_free, start_server, terminate
from .spark import (
    ENGINE_ENV,
    ENGINE_SERVER_CLASS,
    ENGINE_STATE_FILE,
    LOOPBACK,
    _check_java,
    engine_dir,
    engine_jars,
    engine_spark_conf,
    engine_state,
    jvm_environment,
    loopback_only,
)
from .units import format_duration, parse_duration

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
    """A Spark Connect server for one catalog, on 127.0.0.1:``port``, with its state in ``data_dir``.

    With ``idle_stop`` (seconds), a watchdog (``lakecat.engine_idle``) stops the server once no lakecat process has
    used it for that long.
    """

    def __init__(self, config: CatalogConfig, *, port: int = DEFAULT_PORT, data_dir: Path | None = None,
                 idle_stop: float | None = None) -> None:  # fmt: skip
        self.config = config
        self.port = port
        self.data_dir = (data_dir or engine_dir()).expanduser().resolve()
        self.log_file = self.data_dir / "engine.log"
        self.idle_stop = idle_stop

    def _tail(self, lines: int = 8) -> str:
        try:
            text = [ln.strip() for ln in self.log_file.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return f"no log at {self.log_file}"
        text = [ln for ln in text if not ln.startswith("at ")][-lines:]
        return " | ".join(text)[-1500:] + f" (see {self.log_file})"

    def _record(self, pid: int) -> None:
        state = {"pid": pid, "port": self.port, "catalog": self.config.name, "source": self.config.source,
                 "idle_stop": self.idle_stop}  # fmt: skip
        (self.data_dir / ENGINE_STATE_FILE).write_text(json.dumps(state))

    def _watch(self, pid: int) -> None:
        """Start the idle watchdog beside the server (detached like it, so that it outlives this process)."""
        engine_idle.mark_active(self.data_dir)
        with open(self.log_file, "ab") as log:
            subprocess.Popen([sys.executable, engine_idle.__file__, str(self.data_dir), str(pid), str(self.idle_stop)],
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip

    def command(self) -> list[str]:
        """The ``spark-submit`` command line of the server."""
        sizing = self.config.sizing()
        conf = {
            **engine_spark_conf(self.config, server=True, sizing=sizing),
            "spark.app.name": "lakecat-engine",
            "spark.master": sizing.master,
            "spark.jars": ",".join(engine_jars(self.config)),
            "spark.connect.grpc.binding.address": LOOPBACK,
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
            raise LocalEngineError(f"port {self.port} is already in use; pass another port=").with_cli_terms(
                {"another port=": "--port"}
            )
        _check_java()
        cmd = self.command()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        loopback = loopback_only(self.config, self.config.sizing().master)
        env = {
            **jvm_environment(os.environ, loopback=loopback),
            "SPARK_HOME": str(_pyspark_home()),
            "PYSPARK_PYTHON": sys.executable,
        }
        env.pop("SPARK_REMOTE", None)
        env.pop("SPARK_CONNECT_MODE_ENABLED", None)
        url = f"sc://127.0.0.1:{self.port}"
        pid = start_server(
            cmd, what="the Spark Connect server", log_file=self.log_file, cwd=self.data_dir, env=env,
            ready=lambda: listening(self.port), record=self._record, stop=self.stop, error=LocalEngineError,
            timeout=timeout, not_ready="did not listen", tail=self._tail,
        )  # fmt: skip
        if self.idle_stop:
            self._watch(pid)
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
        """``{"running", "pid", "url", "catalog", "idle_stop", "log"}`` of the server recorded in ``data_dir``
        (``idle_stop``: the seconds without a client after which it stops by itself, None: until stopped)."""
        state = engine_state(self.data_dir)
        return {"running": state is not None, "pid": state["pid"] if state else None,
                "url": f"sc://127.0.0.1:{state['port']}" if state else None,
                "catalog": state.get("catalog") if state else None,
                "idle_stop": state.get("idle_stop") if state else None, "log": str(self.log_file)}  # fmt: skip


# --- which session a Spark-path command uses ---------------------------------------------------------------------
IDLE_ENV = "LAKECAT_ENGINE_IDLE"
DEFAULT_IDLE = "15m"
#: What ``choose_engine`` returns besides an ``sc://`` URL: an in-process session; the local engine, started when
#: none runs; a local engine that already runs for the catalog, else in process.
IN_PROCESS, LOCAL, RUNNING = "in-process", "local", "running"
_terminal_command = False


def terminal_command() -> None:
    """Mark this process as the ``lakecat`` command: ``auto`` then means the local engine at a terminal. (The Python
    API keeps its in-process session, whose JVM a notebook or a script may use directly, unless configured.)"""
    global _terminal_command
    _terminal_command = True


def interactive(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a person is at this command: stdin and stderr are terminals and ``CI`` is not set."""
    env = os.environ if environ is None else environ
    if env.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return False
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed streams
        return False


def _parse_choice(value: str, where: str, *, at_terminal: bool) -> str:
    if value.startswith("sc://"):
        return value
    choice = value.strip().lower()
    if choice == "auto":
        return LOCAL if at_terminal else RUNNING
    if choice not in ENGINE_CHOICES:
        raise ConfigError(f"{where} must be auto, in-process, local or a Spark Connect URL like sc://host:15002, "
                          f"not {value!r}")  # fmt: skip
    return choice


def choose_engine(config: CatalogConfig, *, environ: Mapping[str, str], at_terminal: bool) -> str:
    """Where ``config``'s Spark path runs: an ``sc://`` URL, ``IN_PROCESS``, ``LOCAL`` or ``RUNNING``.

    ``LAKECAT_ENGINE`` (``auto``, ``in-process``, ``local`` or ``sc://...``), else the catalog's ``[spark] engine``,
    else ``auto``: ``LOCAL`` when ``at_terminal`` (an interactive ``lakecat`` command), else ``RUNNING``.
    """
    if value := environ.get(ENGINE_ENV, "").strip():
        return _parse_choice(value, ENGINE_ENV, at_terminal=at_terminal)
    return _parse_choice(config.spark_engine or "auto", f"[spark] engine of {config.source}", at_terminal=at_terminal)


def idle_stop(config: CatalogConfig, environ: Mapping[str, str]) -> float | None:
    """Seconds without a client after which an engine lakecat starts by itself stops (``LAKECAT_ENGINE_IDLE``, else
    ``[spark] engine-idle``, else 15 minutes); None for ``0`` (until stopped)."""
    where, text = next(((w, v.strip()) for w, v in ((IDLE_ENV, environ.get(IDLE_ENV)),
                        (f"[spark] engine-idle of {config.source}", config.engine_idle)) if v and v.strip()),
                       ("default", DEFAULT_IDLE))  # fmt: skip
    if text == "0":
        return None
    try:
        return parse_duration(text).total_seconds()
    except LakecatError as e:
        raise ConfigError(f"{where}: {e}") from None


def _minutes(seconds: float) -> str:
    return f"{int(seconds) // 60} min" if seconds % 60 == 0 else format_duration(timedelta(seconds=seconds))


def _running_url(config: CatalogConfig) -> str | None:
    state = engine_state(engine_dir())
    if state and state.get("catalog") == config.name and state.get("source") == config.source:
        engine_idle.keep_alive(engine_dir())
        return f"sc://127.0.0.1:{state['port']}"
    return None


def engine_url(config: CatalogConfig, *, environ: Mapping[str, str] | None = None,
               say: Callable[[str], object] = lambda line: print(line, file=sys.stderr, flush=True)) -> str | None:  # fmt: skip
    """The Spark Connect URL a new session for ``config`` connects to, or None for an in-process session.

    When the choice is the local engine and none runs, it is started in the background (one line through ``say``);
    when it cannot start, the session is in process (one line saying why).
    """
    env = os.environ if environ is None else environ
    choice = choose_engine(config, environ=env, at_terminal=_terminal_command and interactive(env))
    if choice.startswith("sc://"):
        return choice
    if choice == IN_PROCESS:
        return None
    if (url := _running_url(config)) is not None or choice == RUNNING:
        return url
    if (other := engine_state(engine_dir())) is not None:  # one local engine at a time, for one catalog
        say(f"lakecat's local engine serves catalog {other.get('catalog')!r} ({other.get('source')}): running in "
            "process (`lakecat local engine stop` stops it)")  # fmt: skip
        return None
    idle = idle_stop(config, env)
    engine = LocalEngine(config, port=DEFAULT_PORT if port_free(DEFAULT_PORT) else free_port(), idle_stop=idle)
    stops = f"stops after {_minutes(idle)} idle" if idle else "runs until stopped"
    say(f"starting lakecat's local engine in the background ({stops}; `lakecat local engine stop` stops it now)")
    try:
        url = engine.start()
    except LakecatError as e:
        say(f"lakecat's local engine did not start ({first_line(str(e))[:300]}): running in process")
        return None
    engine_idle.keep_alive(engine.data_dir)
    return url
