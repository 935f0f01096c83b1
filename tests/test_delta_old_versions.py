"""Delta versions committed long ago: lakecat's expiry, not Delta's ``deletedFileRetentionDuration``, decides which
are readable. Each commit of a table made through lakecat is aged (its log file's modification time, which is
Delta's commit time) to more than Delta's 7 days, then read on every path; rows are checked with delta-rs. A version
expiry removed files of gets lakecat's own one-line error (exit 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from deltalake import DeltaTable

from lakecat.config import load_config_file, resolve_config
from lakecat.engine import spark_conf
from lakecat.files import local_path
from lakecat.formats.delta.versions import TIME_TRAVEL_LIMIT_CONF
from lakecat.spark import engine_spark_conf

pytestmark = [pytest.mark.delta, pytest.mark.spark]

DAY = 86400
REFUSAL = "DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_RETENTION_DURATION"
ICT = "delta.enableInCommitTimestamps"


def age_commits(location: str, *, days: int = 8) -> None:
    """Make version v of the table look committed ``days + (last - v)`` days ago (older versions older; under the 30
    days after which Delta's own log cleanup would drop them). Delta's commit time is the commit file's modification
    time, or ``commitInfo.inCommitTimestamp`` on a table with in-commit timestamps: both are set."""
    log = local_path(location) / "_delta_log"
    commits = sorted(p for p in log.glob("*.json") if p.stem.isdigit())
    ict = DeltaTable(location).metadata().configuration.get(ICT, "false").lower() == "true"
    now, last = time.time(), int(commits[-1].stem)
    for path in commits:
        when = now - (days + last - int(path.stem)) * DAY
        if ict:
            lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            for action in lines:
                if "commitInfo" in action and "inCommitTimestamp" in action["commitInfo"]:
                    action["commitInfo"]["inCommitTimestamp"] = int(when * 1000)
            path.write_text("".join(json.dumps(a) + "\n" for a in lines))
            path.with_suffix(".crc").unlink(missing_ok=True)  # Delta's checksum repeats the timestamp
            (path.parent / f".{path.name}.crc").unlink(missing_ok=True)  # the local file system's checksum of the file
        os.utime(path, (when, when))


def rows_at(location: str, version: int | None = None) -> list[dict]:
    """The rows of a version read by delta-rs (not lakecat, not Spark), by id."""
    return sorted(DeltaTable(location, version=version).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def by_id(rows: list[dict]) -> list[dict]:
    return sorted(({"id": r["id"], "v": r["v"]} for r in rows), key=lambda r: r["id"])


def run_json(cli, *args):
    code, out, err = cli(*map(str, args), "--json")
    return code, json.loads(out), err


def test_lakecats_sessions_turn_deltas_time_travel_limit_off_and_a_users_setting_wins(tmp_path):
    """In process and on the local engine (both start from engine_spark_conf); no JVM needed to see it."""
    assert engine_spark_conf(resolve_config(None))[TIME_TRAVEL_LIMIT_CONF] == "false"
    assert engine_spark_conf(resolve_config(None), server=True)[TIME_TRAVEL_LIMIT_CONF] == "false"
    path = tmp_path / "own.toml"
    path.write_text(f'name = "own"\nwarehouse = "{tmp_path}/wh"\nmetastore = "sqlite:///{tmp_path}/c.db"\n'
                    f'[spark.conf]\n"{TIME_TRAVEL_LIMIT_CONF}" = "true"\n')  # fmt: skip
    assert engine_spark_conf(load_config_file(path))[TIME_TRAVEL_LIMIT_CONF] == "true"


def test_versions_older_than_deltas_retention_are_read_on_every_path(cli, catalog, spark, ns):
    name = f"{ns}.orders"
    t = catalog.create_table(name, schema="id BIGINT NOT NULL, v STRING", format="delta")  # version 0
    for i in range(3):  # versions 1, 2, 3
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({2 * i + 1}, 'a{i}'), ({2 * i + 2}, 'b{i}')")
    age_commits(t.location)
    expected = {v: rows_at(t.location, v) for v in range(4)}
    assert [len(expected[v]) for v in range(4)] == [0, 2, 4, 6]

    # the bug: with Delta's own limit on (its default), Spark refuses version 1 although every file of it is there
    assert spark.conf.get(TIME_TRAVEL_LIMIT_CONF) == "false"
    with spark_conf(spark, {TIME_TRAVEL_LIMIT_CONF: "true"}), pytest.raises(Exception, match=REFUSAL):
        spark.read.format("delta").option("versionAsOf", 1).load(t.location).collect()

    for engine in ("spark", "light"):
        code, doc, err = run_json(cli, "timetravel", name, "--version", 1, "--engine", engine)
        assert code == 0, err
        assert doc["engine"] == engine and by_id(doc["rows"]) == expected[1]
        code, doc, err = run_json(cli, "changes", name, "--since", 0, "--until", 2, "--engine", engine)
        assert code == 0, err
        assert {r["_change_type"] for r in doc["rows"]} == {"insert"}
        assert by_id(doc["rows"]) == expected[2]
    assert by_id(t.as_of(version=2, engine="spark").to_arrow().to_pylist()) == expected[2]

    code, _, err = run_json(cli, "tag", name, "first", "--version", 1)
    assert code == 0, err
    code, doc, err = run_json(cli, "timetravel", name, "--tag", "first", "--engine", "spark")
    assert code == 0, err
    assert doc["version"] == 1 and by_id(doc["rows"]) == expected[1]

    code, doc, err = run_json(cli, "rollback", name, "--version", 2, "--yes")  # version 4, committed now
    assert code == 0, err
    assert doc["to_version"] == 2 and rows_at(t.location) == expected[2]

    # expiry (the default window: the aged versions are older than it) keeps the newest version and the tagged one
    code, doc, err = run_json(cli, "expire", name, "--retain-last", 1)
    assert code == 0, err
    assert doc["expired_versions"] == [0, 2, 3] and doc["deleted_files"] >= 1  # version 3's own files
    # the log goes only before a checkpoint an hour old (a reader may be reading the log it replaces): the one this
    # expiry wrote at the tagged version, dated back, lets the next expiry cut the log there
    hour_ago = time.time() - 7200
    for path in (local_path(t.location) / "_delta_log").glob("*.checkpoint*.parquet"):
        os.utime(path, (hour_ago, hour_ago))
    code, doc, err = run_json(cli, "expire", name, "--retain-last", 1)
    assert code == 0 and doc["log_truncated_before"] == 1, err
    for engine in ("spark", "light"):
        code, doc, err = run_json(cli, "timetravel", name, "--version", 3, "--engine", engine)
        assert code == 1, (engine, doc)
        assert doc["error"]["type"] == "VersionNotFoundError" and len(err.strip().splitlines()) == 1, err
        message = doc["error"]["message"]
        assert message.startswith(f"version 3 of {name} is no longer readable: its data files were removed by expiry")
        assert "lakecat expire" in message and REFUSAL not in message
        code, doc, err = run_json(cli, "timetravel", name, "--version", 0, "--engine", engine)  # its log is gone
        assert code == 1 and len(err.strip().splitlines()) == 1, err
        assert doc["error"]["message"].startswith(f"version 0 of {name} is no longer readable: its log entries were "
                                                  "removed by expiry")  # fmt: skip
        # what expiry kept stays readable: the tagged version, and version 2 (the rollback's files are its files)
        for version, args in ((1, ("--tag", "first")), (2, ("--version", 2))):
            code, doc, err = run_json(cli, "timetravel", name, *args, "--engine", engine)
            assert code == 0, err
            assert by_id(doc["rows"]) == expected[version]


# A lakecat command in a fresh process that finds the running local engine (no LAKECAT_ENGINE); afterwards,
# which session it used and whether a JVM ran in it.
_PROBE = (
    "import sys, json\nfrom lakecat.commands.main import main\n"
    "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    "from pyspark import SparkContext\nimport lakecat.spark as s\n"
    "session = s.active_session()\n"
    "print(json.dumps({'session': type(session).__module__ if session else None,"
    " 'jvm': SparkContext._gateway is not None}), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _on_engine(*args):
    env = {k: v for k, v in os.environ.items() if k != "LAKECAT_ENGINE"}
    proc = subprocess.run([sys.executable, "-c", _PROBE, *map(str, args), "--json"], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    probe = json.loads(proc.stderr.strip().splitlines()[-1])
    assert probe["session"].startswith("pyspark.sql.connect") and not probe["jvm"], probe
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_an_old_version_is_read_through_the_local_engine(spark_engine, catalog, ns, tmp_path):
    name = f"{ns}.remote"
    _on_engine("create", name, "--format", "delta", "--schema", "id BIGINT, v STRING", "--engine", "spark")
    source = tmp_path / "rows.json"
    for batch in range(2):  # versions 1 and 2
        source.write_text(
            "".join(json.dumps({"id": i, "v": f"v{batch}"}) + "\n" for i in range(3 * batch, 3 * batch + 3))
        )
        _on_engine("upsert", name, "--from", source, "--key", "id", "--file-format", "json")
    location = catalog.entry(name).location
    age_commits(location)
    doc = _on_engine("timetravel", name, "--version", 1, "--engine", "spark")
    assert doc["engine"] == "spark" and by_id(doc["rows"]) == rows_at(location, 1) and len(doc["rows"]) == 3
    doc = _on_engine("changes", name, "--since", 0, "--until", 1, "--engine", "spark")
    assert by_id(doc["rows"]) == rows_at(location, 1)
