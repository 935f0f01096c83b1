"""A dependency lakecat loads on demand, hidden: the real command fails in one line naming what to install, exit 2.

Each test hides one module (``sys.modules[name] = None`` makes ``import name`` raise ImportError) and runs the
command through ``run_cli`` in this process, on a catalog of its own (tables written without Spark).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lakecat.commands.main import run_cli

import lakecat
from lakecat.errors import MissingDependencyError
from tests.helpers import light_tables


def _hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = run_cli(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line(err: str, install: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert install in lines[0], lines[0]
    assert "internal error" not in lines[0] and "Traceback" not in err
    return lines[0]


@pytest.fixture(scope="module")
def light_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A catalog of its own with one Iceberg (``x.t000``) and one Delta table (``x.t001``), written without Spark."""
    base = tmp_path_factory.mktemp("extras")
    conf = base / "extras.toml"
    conf.write_text(f'name = "extras"\nwarehouse = "{base / "wh"}"\nmetastore = "sqlite:///{base / "ms.db"}"\n')
    light_tables(lakecat.connect(str(conf)), "x", 2, commits=2)
    return conf


def test_postgres_metastore_without_psycopg2(tmp_path, monkeypatch, capsys):
    team = tmp_path / "team.toml"  # no server needed: the import fails before any connection
    team.write_text(f'name = "team"\nwarehouse = "{tmp_path / "wh"}"\nmetastore = "postgresql://u:p@127.0.0.1:1/db"\n')
    _hide(monkeypatch, "psycopg2")
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, "list", "--catalog", "team.toml")
    assert code == 2, err
    line = _one_line(err, "pip install 'lakecat[postgres]'")
    assert "PostgreSQL metastore needs psycopg2, which is not installed" in line
    assert out == ""


def test_postgres_metastore_without_sqlalchemy(tmp_path, monkeypatch, capsys):
    team = tmp_path / "team.toml"
    team.write_text(f'name = "team"\nwarehouse = "{tmp_path / "wh"}"\nmetastore = "postgresql://u:p@127.0.0.1:1/db"\n')
    _hide(monkeypatch, "sqlalchemy")
    code, _, err = _run(capsys, "list", "--catalog", str(team), "--json")
    assert code == 2, err
    _one_line(err, "pip install 'sqlalchemy")


def test_health_prometheus_without_client(light_catalog, tmp_path, monkeypatch, capsys):
    _hide(monkeypatch, "prometheus_client")
    target = tmp_path / "health.prom"
    code, _, err = _run(capsys, "health", "--catalog", str(light_catalog), "--prometheus", str(target))
    assert code == 2, err
    assert "exporting Prometheus metrics needs prometheus_client" in _one_line(err, "pip install 'lakecat[metrics]'")
    assert not target.exists()


def test_ingest_metrics_port_without_client(light_catalog, tmp_path, monkeypatch, capsys):
    _hide(monkeypatch, "prometheus_client")
    landing = tmp_path / "landing"
    landing.mkdir()
    code, _, err = _run(capsys, "ingest", "x.t001", "--catalog", str(light_catalog), "--files", str(landing),
                        "--metrics-port", "0")  # fmt: skip
    assert code == 2, err
    _one_line(err, "pip install 'lakecat[metrics]'")


def test_light_read_without_duckdb(light_catalog, monkeypatch, capsys):
    _hide(monkeypatch, "duckdb")
    code, _, err = _run(capsys, "timetravel", "x.t001", "--catalog", str(light_catalog), "--version", "0",
                        "--where", "id >= 2", "--engine", "light")  # fmt: skip
    assert code == 2, err
    assert "needs duckdb, which is not installed" in _one_line(err, "pip install 'duckdb")


def test_kafka_ingest_without_client(light_catalog, monkeypatch, capsys):
    _hide(monkeypatch, "confluent_kafka", "confluent_kafka.admin")
    code, _, err = _run(capsys, "ingest", "x.t001", "--catalog", str(light_catalog), "--kafka", "127.0.0.1:1",
                        "--topic", "events")  # fmt: skip
    assert code == 2, err
    assert "reading Kafka needs confluent_kafka" in _one_line(err, "pip install 'confluent-kafka")


def test_local_kafka_without_client(monkeypatch, capsys):
    _hide(monkeypatch, "confluent_kafka", "confluent_kafka.admin")
    monkeypatch.delitem(sys.modules, "lakecat.kafka_local", raising=False)  # imported afresh, without the client
    code, _, err = _run(capsys, "local", "kafka", "status")
    assert code == 2, err
    _one_line(err, "pip install 'confluent-kafka")


def test_spark_connect_without_grpc(light_catalog, monkeypatch, capsys):
    import lakecat.spark

    _hide(monkeypatch, "grpc")
    monkeypatch.setattr(lakecat.spark, "_session", None)  # an in-process session of an earlier test is not asked
    monkeypatch.setenv("LAKECAT_ENGINE", "sc://127.0.0.1:1")
    code, _, err = _run(capsys, "create", "x.connect", "--catalog", str(light_catalog), "--format", "delta",
                        "--schema", "id BIGINT", "--engine", "spark")  # fmt: skip
    assert code == 2, err
    line = _one_line(err, "pip install 'pyspark[connect]")
    assert "the Spark Connect client needs grpc, which is not installed" in line


def test_object_storage_without_pyarrow_s3(monkeypatch):
    """A pyarrow built without S3 (pyarrow.fs raises ImportError for the missing class)."""
    from pyarrow import fs

    from lakecat.config import pyarrow_filesystem

    monkeypatch.delattr(fs, "S3FileSystem")
    monkeypatch.setattr(fs, "_not_imported", [*getattr(fs, "_not_imported", []), "S3FileSystem"])
    with pytest.raises(MissingDependencyError, match=r"object storage needs pyarrow with S3 support.*pip install"):
        pyarrow_filesystem("s3a://bucket/warehouse")
    assert MissingDependencyError.exit_code == 2


def test_an_installed_module_is_returned():
    from lakecat.extras import install_hint, require

    assert require("json", extra=None, feature="a test").dumps([1]) == "[1]"
    assert install_hint("psycopg2", extra="postgres") == "pip install 'lakecat[postgres]'"
