"""A warm engine: `lakecat local engine` (a Spark Connect server with lakecat's setup) and the Spark path through it.

The commands run as real `lakecat` processes that find the running engine by themselves (no
LAKECAT_ENGINE), and each checks that it started no JVM of its own. The tables they change are read
back with pyiceberg / delta-rs. The whole Spark-path suite runs through an engine with ``--spark-connect``.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from helpers import committed_versions, light_tables, new_topic, read_rows, service_until_first_pass

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
    env = {k: v for k, v in os.environ.items() if k != "LAKECAT_ENGINE"}
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


def test_the_engines_jvm_starts_with_lakecats_environment(engine):
    """The engine's JVM (spark-submit's exec of java, the recorded pid) has ``JVM_ENVIRONMENT``; a user's own wins."""
    from lakecat.spark import JVM_ENVIRONMENT

    raw = pathlib.Path(f"/proc/{engine.status()['pid']}/environ").read_bytes()
    environ = dict(v.split(b"=", 1) for v in raw.split(b"\0") if b"=" in v)
    for k, v in JVM_ENVIRONMENT.items():
        assert environ[k.encode()].decode() == os.environ.get(k, v)


def test_engine_refuses_a_busy_port(engine, tmp_path):
    from lakecat.config import resolve_config
    from lakecat.engine_local import LocalEngine, LocalEngineError

    port = int(engine.status()["url"].rsplit(":", 1)[1])
    with pytest.raises(LocalEngineError, match=f"port {port} is already in use"):
        LocalEngine(resolve_config(None), port=port, data_dir=tmp_path / "other").start()
    assert not (tmp_path / "other" / "engine-state.json").exists()


def test_spark_path_commands_run_on_the_engine(engine, table_format, ns, tmp_path, catalog):
    name = f"{ns}.orders"
    created, probe = _ok(
        "create", name, "--format", table_format, "--schema", "id BIGINT, v STRING", "--engine", "spark"
    )
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

    history, _ = _ok("history", name)  # newest first
    # the oldest commit by the table's history: Iceberg snapshot ids are random, so min() of them is any commit
    counted, _ = _ok("changes", name, "--since", history[-1]["version"], "--count")
    assert counted["count"] >= 20
    after_first_upsert = [h for h in history if h["summary"].get("rows_added") == 100][-1]["version"]
    back, _ = _ok("timetravel", name, "--version", after_first_upsert, "--count")
    assert back["count"] == 100
    _ok("rollback", name, "--version", after_first_upsert, "--yes")
    rows = {r["id"]: r["v"] for r in read_rows(catalog, name)}
    assert len(rows) == 100 and rows[95] == "v95"

    code, _, err, _ = _lakecat("compact", name, "--where", "id = = 1", "--dry-run")
    assert code == 2 and "invalid --where" in err


def test_what_connect_cannot_do_is_one_line_and_exit_3(engine, ns):
    name = f"{ns}.events"
    _ok("create", name, "--format", "iceberg", "--schema", "id BIGINT")
    code, out, err, probe = _lakecat(
        "clean-orphans", name, "--older-than", "1h", "--force", "--dry-run", "--engine", "spark"
    )
    assert code == 3, err
    assert "Spark Connect" in err and "LAKECAT_ENGINE=in-process" in err
    assert len([ln for ln in err.splitlines() if ln.startswith("error:")]) == 1
    # the same command runs in process when asked to
    code, out, err, probe = _lakecat("clean-orphans", name, "--older-than", "1h", "--force", "--dry-run", "--engine", "spark", "--json",
                                     env_extra={"LAKECAT_ENGINE": "in-process"})  # fmt: skip
    assert code == 0, err
    assert probe["jvm"] and json.loads(out)["dry_run"]


def test_the_maintenance_service_runs_on_the_engine(engine, ns, catalog):
    """`maintain --auto --every` on the engine: a pass compacts an Iceberg and a Delta table that pyiceberg and
    delta-rs wrote (12 small appends each), with no JVM in the service's process; SIGTERM ends it with exit 0."""
    from lakecat.maintenance import data_files

    names = light_tables(catalog, ns, 2, commits=12)
    catalog.set_policy(f"{ns}.*", {"lakecat.maintain.light-max-bytes": "1"})  # every step is Spark's: on the engine
    before = {
        n: (sorted(r["id"] for r in read_rows(catalog, n)), len(data_files(catalog.load_table(n)))) for n in names
    }
    env = {k: v for k, v in os.environ.items() if k != "LAKECAT_ENGINE"}
    code, out, err = service_until_first_pass(
        [sys.executable, "-c", _PROBE, "maintain", f"{ns}.*", "--auto", "--every", "1s", "--json"],
        env,
    )
    assert code == 0, err
    probe = json.loads(err.strip().splitlines()[-1])
    assert probe["session"].startswith("pyspark.sql.connect") and not probe["jvm"], probe
    doc = json.loads(out)
    assert doc["stopped_by"] == "SIGTERM" and doc["runs"]["failed"] == 0 and doc["runs"]["ok"] >= 2, doc
    for n in names:
        ids, files_before = before[n]
        assert sorted(r["id"] for r in read_rows(catalog, n)) == ids
        assert len(data_files(catalog.load_table(n))) < files_before, n


# --- ingest: the stream runs in the engine, its batches in the engine's Python worker -------------------
def _event(i: int, **extra) -> bytes:
    return json.dumps({"id": i, "v": f"v{i}", **extra}).encode()


@pytest.mark.kafka
def test_ingest_runs_on_the_engine(engine, table_format, ns, kafka_bootstrap, catalog, tmp_path):
    from lakecat.kafka_local import produce

    topic = new_topic(kafka_bootstrap)
    produce(kafka_bootstrap, topic, [_event(i) for i in range(300)] + [b'{"id": 1, "v": ', _event(0, id="x")])
    name = f"{ns}.events"
    _ok("create", name, "--format", table_format, "--schema", "id BIGINT NOT NULL, v STRING")
    base = ("ingest", name, "--kafka", kafka_bootstrap, "--topic", topic)
    metrics = tmp_path / "metrics.jsonl"
    report, probe = _ok(*base, "--max-records-per-batch", "100", "--metrics-file", str(metrics))
    assert probe["session"].startswith("pyspark.sql.connect")
    # the batch counters come back from the engine's worker
    assert (report["rows_written"], report["rows_dead_lettered"]) == (300, 2) and report["batches"] >= 3
    # one metrics line per batch, with Spark's row count (the Connect server's progress has it per source only)
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert len(lines) == report["batches"] and sum(m["rows_written"] for m in lines) == 300
    assert all(m["input_rows"] and m["rows_per_s"] is not None for m in lines)
    reasons = [r for m in lines for r in m["dead_lettered_by_reason"].items()]  # counted in the engine's worker
    assert sorted(reasons) == [("invalid_json", 1), ("type_mismatch", 1)]
    assert sorted(r["id"] for r in read_rows(catalog, name)) == list(range(300))
    dead = read_rows(catalog, f"{name}_dlq")
    assert sorted(r["error"] for r in dead) == ["invalid_json", "type_mismatch"]

    # a field the table lacks: --merge-schema infers its type in the engine and adds the column
    produce(kafka_bootstrap, topic, [_event(300 + i, color="red") for i in range(20)])
    report, _ = _ok(*base, "--merge-schema")
    assert report["rows_written"] == 20 and report["added_columns"] == ["color"]
    rows = read_rows(catalog, name)
    assert len(rows) == 320 and {r["color"] for r in rows if r["id"] >= 300} == {"red"}

    again, _ = _ok(*base)  # exactly once: the checkpoint and the table's markers say everything is in
    assert again["rows_written"] == 0 and again["rows_dead_lettered"] == 0
    assert len(read_rows(catalog, name)) == 320 and len(read_rows(catalog, f"{name}_dlq")) == 2


@pytest.mark.kafka
def test_kill_9_of_the_engine_mid_stream_then_restart_is_exactly_once(table_format, ns, kafka_bootstrap, catalog,
                                                                      tmp_path):  # fmt: skip
    """Everything crashes mid-stream — the engine (its JVM and Python workers) and the lakecat process — and a
    restarted engine and stream finish the topic exactly once. A private engine: the shared one stays up."""
    from lakecat.config import resolve_config
    from lakecat.engine_local import LocalEngine
    from lakecat.kafka_local import produce
    from lakecat.processes import free_port, port_free

    topic = new_topic(kafka_bootstrap)
    n = 3000
    produce(kafka_bootstrap, topic, [_event(i) for i in range(n)] + [b"bad"] * 10)
    name = f"{ns}.crash"
    catalog.create_table(name, schema="id BIGINT NOT NULL, v STRING", format=table_format)
    own = LocalEngine(resolve_config(None), port=free_port(), data_dir=tmp_path / "engine")
    url = own.start()
    remote = {"LAKECAT_ENGINE": url}
    env = {**{k: v for k, v in os.environ.items() if k != "LAKECAT_ENGINE"}, **remote}
    base = ("ingest", name, "--kafka", kafka_bootstrap, "--topic", topic)
    proc = subprocess.Popen([sys.executable, "-m", "lakecat.commands.main", *base, "--max-records-per-batch", "150"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 420
        while committed_versions(catalog, name) < (3 if table_format == "delta" else 2):  # a few batches in
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no batch committed in time"
            time.sleep(0.2)
        os.killpg(own.status()["pid"], signal.SIGKILL)  # the engine's JVM and its Python workers, mid-stream
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    partial = read_rows(catalog, name)
    assert 0 < len(partial) < n and len({r["id"] for r in partial}) == len(partial)

    port = int(url.rsplit(":", 1)[1])
    gone = time.monotonic() + 60
    while not port_free(port) and time.monotonic() < gone:  # the killed JVM's sockets close as it goes
        time.sleep(0.5)
    try:
        assert own.start() == url
        code, out, err, probe = _lakecat(*base, "--max-records-per-batch", "1500", "--json", env_extra=remote)
        assert code == 0, err
        assert not probe["jvm"]
    finally:
        own.stop()
    rows = read_rows(catalog, name)
    assert len(rows) == n and {r["id"] for r in rows} == set(range(n))
    dead = read_rows(catalog, f"{name}_dlq")
    assert len(dead) == 10 and len({(r["kafka_partition"], r["kafka_offset"]) for r in dead}) == 10


def test_unreachable_remote_fails_fast(ns):
    from lakecat.processes import free_port

    create = ("create", f"{ns}.never", "--format", "delta", "--schema", "id BIGINT", "--engine", "spark")
    code, _, err, probe = _lakecat(*create, env_extra={"LAKECAT_ENGINE": f"sc://127.0.0.1:{free_port()}"})
    assert code == 1 and "does not accept connections" in err and not probe["jvm"]
    code, _, err, _ = _lakecat(*create, env_extra={"LAKECAT_ENGINE": "http://localhost:15002"})
    assert code != 0 and "sc://host:15002" in err


def test_an_sc_url_and_token_from_the_catalog_config(tmp_path, monkeypatch):
    from lakecat.config import load_config_file
    from lakecat.errors import ConfigError

    monkeypatch.setenv("TEAM_SPARK_TOKEN", "s3cr3t")
    conf = tmp_path / "team.toml"
    conf.write_text('name = "team"\nwarehouse = "/tmp/wh"\nmetastore = "sqlite:////tmp/m.db"\n'
                    '[spark]\nengine = "sc://spark.example.com:15002"\ntoken = "${TEAM_SPARK_TOKEN}"\n')  # fmt: skip
    assert load_config_file(conf).spark_engine == "sc://spark.example.com:15002/;token=s3cr3t"
    conf.write_text('name = "team"\nwarehouse = "/tmp/wh"\nmetastore = "sqlite:////tmp/m.db"\n[spark]\ntoken = "x"\n')
    with pytest.raises(ConfigError, match="token without"):
        load_config_file(conf)


def test_engine_stop(engine, cli, request):
    if request.config.getoption("--spark-connect"):
        pytest.skip("the rest of this --spark-connect run uses the engine")
    # the engine is the session's (conftest's spark_engine): later test files read through it, so it starts again
    request.addfinalizer(engine.start)
    code, out, _ = cli("local", "engine", "stop")
    assert code == 0 and out.strip() == "Spark engine stopped"
    code, out, _ = cli("local", "engine", "status", "--json")
    assert code == 0 and not json.loads(out)["running"]
    code, out, _ = cli("local", "engine", "stop")
    assert code == 0 and out.strip() == "Spark engine was not running"
