"""Which session a Spark-path command uses: the warm local engine at an interactive terminal, in process in scripts and
CI, whatever ``[spark] engine`` / ``LAKECAT_ENGINE`` say; an engine lakecat started by itself stops when idle. One
real run under a pseudo-terminal (slow: it starts the engine) checks the line a person sees and that the next command
reuses the engine."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lakecat import engine_idle, engine_local
from lakecat.config import CatalogConfig, Metastore, load_config_file
from lakecat.engine_local import IN_PROCESS, LOCAL, RUNNING, LocalEngineError, choose_engine, idle_stop
from lakecat.errors import ConfigError, InvalidConfigError

START_LINE = "starting lakecat's local engine in the background"


def _config(**kw) -> CatalogConfig:
    return CatalogConfig(name="local", warehouse="/tmp/wh", metastore=Metastore("sqlite:////tmp/m.db"), **kw)


@pytest.mark.parametrize(
    ("environ", "config", "at_terminal", "expected"),
    [
        ({}, {}, True, LOCAL),  # a person at a terminal: the warm engine
        ({}, {}, False, RUNNING),  # a script or CI: in process, unless an engine runs for the catalog
        ({"LAKECAT_ENGINE": "in-process"}, {}, True, IN_PROCESS),
        ({"LAKECAT_ENGINE": "local"}, {}, False, LOCAL),  # a script that wants the warm engine
        ({"LAKECAT_ENGINE": "auto"}, {"spark_engine": "in-process"}, True, LOCAL),  # the environment wins
        ({"LAKECAT_ENGINE": "sc://spark:15002"}, {}, True, "sc://spark:15002"),
        ({"LAKECAT_ENGINE": "sc://spark:15002"}, {}, False, "sc://spark:15002"),
        ({"LAKECAT_ENGINE": "in-process"}, {"spark_engine": "sc://team:15002"}, True, IN_PROCESS),
        ({}, {"spark_engine": "in-process"}, True, IN_PROCESS),
        ({}, {"spark_engine": "local"}, False, LOCAL),
        ({}, {"spark_engine": "sc://team:15002"}, True, "sc://team:15002"),
    ],
)
def test_choose_engine(environ, config, at_terminal, expected):
    assert choose_engine(_config(**config), environ=environ, at_terminal=at_terminal) == expected


def test_a_bad_choice_is_a_config_error():
    with pytest.raises(ConfigError, match="LAKECAT_ENGINE must be auto, in-process, local or a Spark Connect URL"):
        choose_engine(_config(), environ={"LAKECAT_ENGINE": "warm"}, at_terminal=True)
    with pytest.raises(ConfigError, match="LAKECAT_ENGINE must be auto, .* like sc://host:15002, not 'http"):
        choose_engine(_config(), environ={"LAKECAT_ENGINE": "http://spark:15002"}, at_terminal=True)


def test_interactive_needs_terminals_and_no_ci(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Tty())
    monkeypatch.setattr(sys, "stderr", Tty())
    assert engine_local.interactive({})
    assert engine_local.interactive({"CI": "false"})
    assert not engine_local.interactive({"CI": "true"})
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # piped input: a script
    assert not engine_local.interactive({})


def test_the_python_api_stays_in_process_at_a_terminal(monkeypatch):
    """Only the ``lakecat`` command starts the engine by itself: a notebook or script keeps its own JVM."""
    monkeypatch.setattr(engine_local, "_terminal_command", False)
    monkeypatch.setattr(engine_local, "interactive", lambda environ=None: True)
    assert engine_local.engine_url(_config(), environ={}, say=pytest.fail) is None


def test_an_engine_that_cannot_start_falls_back_to_in_process(monkeypatch):
    def refuse(self, **kw):
        raise LocalEngineError("the Spark Connect server exited with code 1; no log")

    monkeypatch.setattr(engine_local, "_terminal_command", True)
    monkeypatch.setattr(engine_local, "interactive", lambda environ=None: True)
    monkeypatch.setattr(engine_local.LocalEngine, "start", refuse)
    monkeypatch.setattr(engine_local, "engine_state", lambda data_dir: None)  # no engine runs (another test's may)
    said: list[str] = []
    assert engine_local.engine_url(_config(), environ={"LAKECAT_ENGINE_IDLE": "20m"}, say=said.append) is None
    assert said == [
        f"{START_LINE} (stops after 20 min idle; `lakecat local engine stop` stops it now)",
        "lakecat's local engine did not start (the Spark Connect server exited with code 1; no log): running in process",
    ]


def test_an_engine_of_another_catalog_is_left_alone(monkeypatch):
    monkeypatch.setattr(engine_local, "_terminal_command", True)
    monkeypatch.setattr(engine_local, "interactive", lambda environ=None: True)
    monkeypatch.setattr(engine_local, "engine_state", lambda data_dir: {"pid": 1, "port": 15002, "catalog": "team",
                                                                        "source": "/etc/team.toml"})  # fmt: skip
    said: list[str] = []
    assert engine_local.engine_url(_config(), environ={}, say=said.append) is None
    assert said == ["lakecat's local engine serves catalog 'team' (/etc/team.toml): running in process "
                    "(`lakecat local engine stop` stops it)"]  # fmt: skip


def test_idle_stop():
    assert idle_stop(_config(), {}) == 15 * 60
    assert idle_stop(_config(engine_idle="1h"), {}) == 3600
    assert idle_stop(_config(engine_idle="1h"), {"LAKECAT_ENGINE_IDLE": "90s"}) == 90
    assert idle_stop(_config(), {"LAKECAT_ENGINE_IDLE": "0"}) is None  # until stopped
    with pytest.raises(ConfigError, match="LAKECAT_ENGINE_IDLE: invalid duration"):
        idle_stop(_config(), {"LAKECAT_ENGINE_IDLE": "soon"})


def test_engine_key_of_a_catalog_config(tmp_path):
    conf = tmp_path / "team.toml"
    head = 'name = "team"\nwarehouse = "/tmp/wh"\nmetastore = "sqlite:////tmp/m.db"\n[spark]\n'
    conf.write_text(head + 'engine = "in-process"\nengine-idle = "1h"\n')
    loaded = load_config_file(conf)
    assert (loaded.spark_engine, loaded.engine_idle) == ("in-process", "1h")
    conf.write_text(head + 'engine = "sc://spark:15002"\ntoken = "t0k"\n')  # a Spark Connect server, with its token
    assert load_config_file(conf).spark_engine == "sc://spark:15002/;token=t0k"
    for body, match in [('engine = "warm"\n', "must be auto, in-process, local"),
                        ('engine = "local"\ntoken = "t0k"\n', "token without a Spark Connect")]:  # fmt: skip
        conf.write_text(head + body)
        with pytest.raises(ConfigError, match=match):
            load_config_file(conf)
    conf.write_text(head + 'remote = "sc://spark:15002"\n')  # not a key: refused, never read as in process
    with pytest.raises(InvalidConfigError, match='has no key remote; use engine = "sc://host:port"') as refused:
        load_config_file(conf)
    assert refused.value.exit_code == 2


def test_the_watchdog_stops_an_idle_engine(tmp_path):
    """A stand-in process with the engine's command-line marker; no client marks activity, so it is stopped."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", engine_idle.SERVER_MARKER])
    try:
        (tmp_path / "engine-state.json").write_text(json.dumps({"pid": proc.pid, "port": 1, "catalog": "local"}))
        engine_idle.mark_active(tmp_path)
        started = time.monotonic()
        engine_idle.watch(tmp_path, proc.pid, 1.0, poll_s=0.1)
        assert proc.wait(timeout=30) != 0 and time.monotonic() - started < 30
        assert json.loads((tmp_path / "engine-state.json").read_text())["pid"] is None
        assert "no client for 1s: stopping the engine" in (tmp_path / "engine.log").read_text()
    finally:
        proc.kill()
        proc.wait()


def _at_terminal(args: list[str], env: dict[str, str], timeout: float = 900) -> tuple[int, str]:
    """Run ``lakecat ARGS`` with stdin, stdout and stderr on a pseudo-terminal; returns (exit code, what it showed)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a person's terminal
        os.execve(sys.executable, [sys.executable, "-m", "lakecat.commands.main", *args], env)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
@pytest.mark.spark
def test_at_a_terminal_the_first_command_starts_the_engine_and_the_next_reuses_it(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "LAKECAT_ENGINE")}
    env.update({"LAKECAT_HOME": str(home), "LAKECAT_ENGINE_IDLE": "10m", "COLUMNS": "200"})

    def status() -> dict:
        proc = subprocess.run([sys.executable, "-m", "lakecat.commands.main", "local", "engine", "status", "--json"],
                              env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        return json.loads(proc.stdout)

    try:
        code, shown = _at_terminal(
            ["create", "s.first", "--format", "delta", "--schema", "id BIGINT", "--engine", "spark"], env
        )
        assert code == 0, shown
        assert f"{START_LINE} (stops after 10 min idle; `lakecat local engine stop` stops it now)" in shown
        first = status()
        assert first["running"] and first["idle_stop"] == 600
        code, shown = _at_terminal(
            ["create", "s.second", "--format", "delta", "--schema", "id BIGINT", "--engine", "spark"], env
        )
        assert code == 0, shown
        assert START_LINE not in shown
        assert status()["pid"] == first["pid"]  # the same engine answered
    finally:
        subprocess.run([sys.executable, "-m", "lakecat.commands.main", "local", "engine", "stop"], env=env,
                       capture_output=True, timeout=180)  # fmt: skip
    assert not status()["running"]
    assert Path(home / "engine" / engine_idle.ACTIVITY_FILE).exists()
