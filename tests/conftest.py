"""Shared fixtures: one Spark session per run, a private LAKECAT_HOME, a format parametrization."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest

# Keep a developer's own ~/.lakecat and LAKECAT_* settings out of the run: decided before lakecat is imported.
_HOME = Path(tempfile.mkdtemp(prefix="lakecat-test-"))
# The jar cache is the one setting kept: CI points LAKECAT_JARS_CACHE at one (initially empty) cache for the whole run.
for var in [v for v in os.environ if v.startswith("LAKECAT_") and v != "LAKECAT_JARS_CACHE"]:
    os.environ.pop(var)
os.environ["LAKECAT_HOME"] = str(_HOME)
# lakecat sizes its Spark driver for the machine it runs on (lakecat.sizing); the suite pins the small settings of the
# 2-core CI machine, so that it runs alike anywhere. Tests of the sizing itself give it their own environment.
os.environ["LAKECAT_SPARK_MASTER"] = "local[2]"
os.environ["SPARK_DRIVER_MEMORY"] = "960m"
os.environ["NO_COLOR"] = "1"
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

FORMATS = ["iceberg", "delta"]


def pytest_addoption(parser):
    parser.addoption("--spark-connect", action="store_true", default=False,
                     help="run the Spark path through a local Spark Connect engine (lakecat local engine) instead of "
                          "an in-process session")  # fmt: skip


_ROOT = Path(__file__).resolve().parent.parent
# Tools' own caches may appear in the checkout; anything else a run leaves there is a test writing outside its
# temporary directory.
_CACHES = ("__pycache__", ".pyc", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis")
_CHECKOUT_BEFORE: set[str] | None = None


def _checkout_entries() -> set[str] | None:
    """What ``git status`` shows of the checkout (untracked and ignored entries too), or None outside git."""
    try:
        proc = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=normal"], cwd=_ROOT,
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return {line for line in proc.stdout.splitlines() if not any(c in line for c in _CACHES)}


def pytest_configure(config):
    global _CHECKOUT_BEFORE
    # In process unless asked: a local engine a test starts (tests/test_connect.py) must not capture the session.
    if not config.getoption("--spark-connect"):
        os.environ["LAKECAT_ENGINE"] = "in-process"
    _CHECKOUT_BEFORE = _checkout_entries()


def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001
    try:
        from lakecat.spark import stop_spark

        stop_spark()
    finally:
        shutil.rmtree(_HOME, ignore_errors=True)
    after = _checkout_entries()
    if _CHECKOUT_BEFORE is not None and after is not None and (left := sorted(after - _CHECKOUT_BEFORE)):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = "the run left files in the checkout (tests must write under their own temporary directory): "
        if reporter is not None:
            reporter.write("\n")
            reporter.write_line(message + ", ".join(left), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def lakecat_home() -> Path:
    return _HOME


@pytest.fixture(scope="session")
def spark_engine():
    """A local Spark engine (``lakecat local engine``) for the default catalog, on a free port; yields it."""
    from lakecat.config import resolve_config
    from lakecat.engine_local import LocalEngine
    from lakecat.processes import free_port

    engine = LocalEngine(resolve_config(None), port=free_port())
    engine.start()
    try:
        yield engine
    finally:
        from lakecat.engine import is_connect
        from lakecat.spark import active_session, stop_spark

        session = active_session()
        if session is not None and is_connect(session):
            stop_spark()  # release the session while its engine still answers (after, the client retries for minutes)
        engine.stop()


@pytest.fixture(scope="session")
def catalog(request):
    import lakecat

    if request.config.getoption("--spark-connect"):
        engine = request.getfixturevalue("spark_engine")
        os.environ["LAKECAT_ENGINE"] = engine.status()["url"]
    return lakecat.connect()


@pytest.fixture(scope="session")
def spark(catalog):
    return catalog.session()


@pytest.fixture(params=FORMATS, ids=FORMATS)
def table_format(request) -> str:
    request.applymarker(getattr(pytest.mark, request.param))
    return request.param


def pytest_collection_modifyitems(config, items):  # noqa: ARG001
    """A parametrized table_format test carries its format's marker, so `-m delta` selects one format; a
    ``notimpl("capability")`` test becomes a strict xfail for every format whose adapter lacks the capability
    (expected to raise UnsupportedOperationError), so a gap that closes is noticed (the ibis way)."""
    from lakecat.errors import UnsupportedOperationError
    from lakecat.formats import get_format

    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "table_format" not in callspec.params:
            continue
        fmt = callspec.params["table_format"]
        item.add_marker(getattr(pytest.mark, fmt))
        for mark in item.iter_markers("notimpl"):
            missing = [cap for cap in mark.args if not get_format(fmt).supports(cap)]
            if missing:
                item.add_marker(pytest.mark.xfail(strict=True, raises=UnsupportedOperationError,
                                                  reason=f"{fmt} lacks {', '.join(missing)}"))  # fmt: skip


@pytest.fixture
def ns() -> str:
    """A fresh namespace per test, so tests never see each other's tables."""
    return "t_" + uuid.uuid4().hex[:10]


@pytest.fixture
def cli():
    """Run a lakecat command in-process; returns (exit_code, stdout, stderr)."""
    from lakecat.commands.main import app, configure_logging
    from typer.testing import CliRunner

    configure_logging(verbose=False)  # what main() does once per process
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        result = runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return invoke


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory):
    """A real single-node KRaft broker for the whole run, on a free port; yields "127.0.0.1:port"."""
    from lakecat.kafka_local import LocalKafka
    from lakecat.processes import free_port

    broker = LocalKafka(data_dir=tmp_path_factory.mktemp("kafka-session"), port=free_port())
    try:
        yield broker.start(timeout=120)
    finally:
        broker.stop()


_NO_JVM_PROBE = (
    "import sys; from lakecat.commands.main import main\n"
    "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    "assert 'pyspark' not in sys.modules and 'py4j' not in sys.modules, 'a JVM path was imported'\n"
    "import os; forbidden = [m for m in os.environ.get('LAKECAT_PROBE_FORBID', '').split(',') if m in sys.modules]\n"
    "assert not forbidden, f'imported {forbidden}'\n"
    "sys.exit(code)\n"
)


@pytest.fixture
def light_cli(lakecat_home):
    """Run a metadata command in a fresh process (``env`` added to its environment); fail if it imported the Spark path
    (or a module of ``forbid``). Returns its JSON."""
    import json
    import subprocess

    def invoke(*args: str, forbid: tuple[str, ...] = (), env: dict[str, str] | None = None):
        env = {**os.environ, "LAKECAT_HOME": str(lakecat_home), "LAKECAT_PROBE_FORBID": ",".join(forbid), **(env or {})}
        proc = subprocess.run([sys.executable, "-c", _NO_JVM_PROBE, *map(str, args), "--json"],
                              env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    return invoke


@pytest.fixture
def lakecat(capsys, monkeypatch):
    """Run `lakecat ARGS` through main() in-process, stdout and stderr captured (not a terminal); returns
    (exit code, stdout, stderr)."""
    from lakecat.commands.main import main

    def invoke(*args: Any, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        with monkeypatch.context() as m:
            m.setattr(sys, "argv", ["lakecat", *map(str, args)])
            for k, v in (env or {}).items():
                m.setenv(k, v)
            capsys.readouterr()
            with pytest.raises(SystemExit) as exit_:
                main()
            out, err = capsys.readouterr()
        return exit_.value.code or 0, out, err

    return invoke
