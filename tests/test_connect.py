"""A warm engine: `lakecat local engine` (a Spark Connect server with lakecat's setup) and the Spark path through it.

The commands run as real `lakecat` processes that find the running engine by themselves (no
LAKECAT_SPARK_REMOTE), and each checks that it started no JVM of its own. The tables they change are read
back with pyiceberg / delta-rs. The whole Spark-path suite runs through an engine with ``--spark-connect``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import read_rows, version_ids

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# A lakecat command in a fresh process; afterwards: which session it used, and that no JVM ran in it.
_PROBE = (
    "import sys, json\nfrom lakecat.commands.main import main\n"
    "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    "from pyspark import SparkContext\nimport lakecat.spark as s\n"
    "session = s.active_session()\n"
    "print(json.dumps({'session': type(session).__module__ if session else None,"
    " 'jvm': SparkContext._gateway is not None}), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


@pytest.fixture(scope="module")
def engine(spark_engine):
    return spark_engine


def _lakecat(*args, env_extra=None, timeout=600):
    env = {k: v for k, v in os.environ.items() if k != "LAKECAT_SPARK_REMOTE"}
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-c", _PROBE, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    probe = json.loads(proc.stderr.strip().splitlines()[-1])
    return proc.returncode, proc.stdout, proc.stderr, probe


def _ok(*args):
    code, out, err, probe = _lakecat(*args, "--json")
    assert code == 0, err
    assert not probe["jvm"], "the lakecat process started a JVM"
    return json.loads(out), probe


def test_engine_status_and_second_start(engine, cli):
    code, out, _ = cli("local", "engine", "status", "--json")
    assert code == 0
    status = json.loads(out)
    assert status["running"] and status["url"] == engine.status()["url"] and status["catalog"] == "local"
    # a second start finds the running engine (whatever --port says) instead of starting another
    code, out, _ = cli("local", "engine", "start", "--port", "1", "--json")
    assert code == 0 and json.loads(out)["pid"] == status["pid"]
    code, out, _ = cli("local", "engine", "status")
    assert code == 0 and out.strip().count("\n") == 0 and "running on sc://127.0.0.1:" in out


def test_engine_refuses_a_busy_port(engine, tmp_path):
    from lakecat.config import resolve_config
    from lakecat.engine_local import LocalEngine, LocalEngineError

    port = int(engine.status()["url"].rsplit(":", 1)[1])
    with pytest.raises(LocalEngineError, match=f"port {port} is already in use"):
        LocalEngine(resolve_config(None), port=port, data_dir=tmp_path / "other").start()
    assert not (tmp_path / "other" / "engine-state.json").exists()


def test_spark_path_commands_run_on_the_engine(engine, table_format, ns, tmp_path, catalog):
    name = f"{ns}.orders"
    created, probe = _ok("create", name, "--format", table_format, "--schema", "id BIGINT, v STRING")
    assert probe["session"].startswith("pyspark.sql.connect")
    assert created["format"] == table_format
    source = tmp_path / "rows.json"
    source.write_text("".join(json.dumps({"id": i, "v": f"v{i}"}) + "\n" for i in range(100)))
    merged, _ = _ok("upsert", name, "--from", source, "--key", "id", "--file-format", "json")
    assert merged["inserted"] == 100
    source.write_text("".join(json.dumps({"id": i, "v": f"w{i}"}) + "\n" for i in range(90, 110)))
    merged, _ = _ok("upsert", name, "--from", source, "--key", "id", "--file-format", "json")
    assert (merged["inserted"], merged["updated"]) == (10, 10)
    rows = {r["id"]: r["v"] for r in read_rows(catalog, name)}
    assert len(rows) == 110 and rows[95] == "w95" and rows[5] == "v5"

    plan, _ = _ok("compact", name, "--dry-run")
    assert plan["dry_run"] and plan["files_before"] >= 1
    done, _ = _ok("compact", name, "--strategy", "zorder", "--by", "id")
    assert done["files_after"] <= done["files_before"]
    assert len(read_rows(catalog, name)) == 110

    first = version_ids(catalog, name)
    counted, _ = _ok("changes", name, "--since", min(first), "--count")
    assert counted["count"] >= 20
    history, _ = _ok("history", name)
    after_first_upsert = [h for h in history if h["summary"].get("rows_added") == 100][-1]["version"]
    back, _ = _ok("timetravel", name, "--version", after_first_upsert, "--count")
    assert back["count"] == 100
    _ok("rollback", name, "--version", after_first_upsert, "--yes")
    rows = {r["id"]: r["v"] for r in read_rows(catalog, name)}
    assert len(rows) == 100 and rows[95] == "v95"

    code, _, err, _ = _lakecat("compact", name, "--where", "id = = 1", "--dry-run")
    assert code == 2 and "invalid --where" in err


def test_what_connect_cannot_do_is_one_line_and_exit_3(engine, ns, tmp_path):
    name = f"{ns}.events"
    _ok("create", name, "--format", "iceberg", "--schema", "id BIGINT")
    landed = tmp_path / "landed"
    landed.mkdir()
    (landed / "a.json").write_text('{"id": 1}\n')
    for args in (("ingest", name, "--files", landed, "--file-format", "json"),
                 ("clean-orphans", name, "--older-than", "1h", "--force", "--dry-run")):  # fmt: skip
        code, out, err, probe = _lakecat(*args)
        assert code == 3, err
        assert "Spark Connect" in err and "LAKECAT_SPARK_REMOTE=off" in err
        assert len([ln for ln in err.splitlines() if ln.startswith("error:")]) == 1
    # the same commands run in process when asked to
    code, out, err, probe = _lakecat("ingest", name, "--files", landed, "--file-format", "json", "--json",
                                     env_extra={"LAKECAT_SPARK_REMOTE": "off"})  # fmt: skip
    assert code == 0, err
    assert probe["jvm"] and json.loads(out)["rows_written"] == 1


def test_unreachable_remote_fails_fast(ns):
    from lakecat.processes import free_port

    create = ("create", f"{ns}.never", "--format", "delta", "--schema", "id BIGINT")
    code, _, err, probe = _lakecat(*create, env_extra={"LAKECAT_SPARK_REMOTE": f"sc://127.0.0.1:{free_port()}"})
    assert code == 1 and "does not accept connections" in err and not probe["jvm"]
    code, _, err, _ = _lakecat(*create, env_extra={"LAKECAT_SPARK_REMOTE": "http://localhost:15002"})
    assert code != 0 and "sc://host:15002" in err


def test_remote_and_token_from_the_catalog_config(tmp_path, monkeypatch):
    from lakecat.config import load_config_file
    from lakecat.errors import ConfigError

    monkeypatch.setenv("TEAM_SPARK_TOKEN", "s3cr3t")
    conf = tmp_path / "team.toml"
    conf.write_text('name = "team"\nwarehouse = "/tmp/wh"\nmetastore = "sqlite:////tmp/m.db"\n'
                    '[spark]\nremote = "sc://spark.example.com:15002"\ntoken = "${TEAM_SPARK_TOKEN}"\n')  # fmt: skip
    assert load_config_file(conf).spark_remote == "sc://spark.example.com:15002/;token=s3cr3t"
    conf.write_text('name = "team"\nwarehouse = "/tmp/wh"\nmetastore = "sqlite:////tmp/m.db"\n[spark]\ntoken = "x"\n')
    with pytest.raises(ConfigError, match="token without"):
        load_config_file(conf)


def test_engine_stop(engine, cli, request):
    if request.config.getoption("--spark-connect"):
        pytest.skip("the rest of this --spark-connect run uses the engine")
    code, out, _ = cli("local", "engine", "stop")
    assert code == 0 and out.strip() == "Spark engine stopped"
    code, out, _ = cli("local", "engine", "status", "--json")
    assert code == 0 and not json.loads(out)["running"]
    code, out, _ = cli("local", "engine", "stop")
    assert code == 0 and out.strip() == "Spark engine was not running"
