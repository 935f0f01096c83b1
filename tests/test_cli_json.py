"""Every lakecat command with --json: exactly one JSON document on stdout, the contract's keys, errors as JSON.

The commands are enumerated from the Typer app, so a new command fails `test_every_command_is_covered` until it
is run here (or named in COVERED_ELSEWHERE with the test that runs it). Commands go through `main()`, the
console-script entry point, in-process: the one Spark session of the test run serves them all.
"""

from __future__ import annotations

import json
import re
import socket
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from lakecat.commands._common import leaf_commands
from lakecat.commands.main import app
from typer.main import get_command

from lakecat.processes import free_port

ROOT = Path(__file__).resolve().parent.parent

# Commands too heavy to repeat here, and the test that runs them with --json and parses the document.
COVERED_ELSEWHERE = {
    ("quickstart",): "tests/test_quickstart.py::test_quickstart_twice",
    ("local", "kafka", "start"): "tests/test_kafka_local.py::test_cli_local_kafka_start_status_stop",
    ("local", "rest", "start"): "tests/test_rest_catalog.py::test_local_rest_commands",
    ("local", "rest", "status"): "tests/test_rest_catalog.py::test_local_rest_commands",
    ("local", "rest", "stop"): "tests/test_rest_catalog.py::test_local_rest_commands",
    ("register",): "tests/test_byo.py::test_register_delta_rs_table_and_run_every_command",
    ("convert",): "tests/test_byo.py::test_convert_parquet_directory",
    ("mirror",): "tests/test_mirror.py::test_cli_mirror_sync_verify_and_a_mirror_that_differs",
    ("local", "engine", "start"): "tests/test_connect.py::test_engine_status_and_second_start",
    ("local", "engine", "status"): "tests/test_connect.py::test_engine_status_and_second_start",
    ("local", "engine", "stop"): "tests/test_connect.py::test_engine_stop",
    ("maintenance-log",): "tests/test_service.py::test_service_compacts_the_urgent_table_logs_and_exports",
    ("policy", "set"): "tests/test_policy.py::test_policy_inherits_catalog_namespace_table_without_a_jvm",
    ("policy", "show"): "tests/test_policy.py::test_policy_inherits_catalog_namespace_table_without_a_jvm",
    ("append",): "tests/test_writes.py::test_cli_append_and_delete_without_a_jvm",
    ("delete",): "tests/test_writes.py::test_cli_append_and_delete_without_a_jvm",
    ("namespaces",): "tests/test_facade.py::test_rename_moves_the_catalog_entry_not_the_files",
    ("rename",): "tests/test_facade.py::test_rename_moves_the_catalog_entry_not_the_files",
}

# The keys the command pages document for each command's --json (docs/commands/*.md; more are fine).
LIST_KEYS = {"name", "format", "location"}
DESCRIBE_KEYS = {
    "name",
    "format",
    "location",
    "schema",
    "partitioning",
    "properties",
    "current_version",
    "files",
    "size_bytes",
}
COLUMN_KEYS = {"name", "type", "nullable"}
HISTORY_KEYS = {"version", "timestamp", "operation", "summary"}
INGEST_KEYS = {"rows_written", "rows_dead_lettered", "batches", "duration_s"}
COMPACT_KEYS = {"files_before", "files_after", "bytes_before", "bytes_after", "dry_run"}
EXPIRE_KEYS = {"expired_versions", "deleted_files", "deleted_bytes", "retained_versions", "dry_run"}
# The keys the docs (docs/commands/) document for the other commands.
ORPHAN_KEYS = {"orphan_files", "deleted_files", "deleted_bytes", "older_than", "cutoff", "dry_run"}
MAINTAIN_KEYS = {"tables", "failed", "succeeded", "skipped", "dry_run", "duration_s"}
MAINTAIN_TABLE_KEYS = {"name", "format", "status", "actions", "policy", "error", "error_type", "duration_s"}
HEALTH_KEYS = {"tables", "verdicts", "duration_s"}
HEALTH_TABLE_KEYS = {"name", "format", "verdict", "reason", "needs", "data_files", "data_bytes", "small_files",
                     "file_sizes", "delete_files", "deleted_rows_ratio", "versions", "oldest_version_age_s",
                     "old_version_bytes", "last_compaction", "last_expiry", "last_orphan_cleanup", "partition_skew",
                     "stream_last_commit"}  # fmt: skip
ROLLBACK_KEYS = {"from_version", "to_version", "current_version", "changed"}
DROP_KEYS = {"name", "format", "location", "purged"}
ALTER_KEYS = {"table", "format", "properties"}
ALTER_SCHEMA_KEYS = {"table", "format", "changes", "upgrades", "schema", "partitioning", "column_mapping", "dry_run"}
TAG_KEYS = {"table", "format", "action", "name", "kind", "version"}
REF_KEYS = {"name", "kind", "version", "retain", "expires"}
CATALOG_KEYS = {"name", "source", "active"}
KAFKA_STATUS_KEYS = {"running", "pid", "bootstrap", "data_dir", "version"}
ERROR_KEYS = {"type", "message"}

SCHEMA = "id BIGINT NOT NULL, ts TIMESTAMP, region STRING, v STRING"
SGR = re.compile(r"\x1b\[[0-9;]*m")  # a colour or style escape


def app_commands() -> dict[tuple[str, ...], Any]:
    """Every command of the Typer app by its words, e.g. ("local", "kafka", "start")."""
    return dict(leaf_commands(get_command(app)))


def takes_table(cmd: Any) -> bool:
    return any(p.param_type_name == "argument" and p.name == "name" for p in cmd.params)


def one_document(out: str) -> Any:
    """stdout is exactly one JSON document (json.loads refuses trailing text or a second document)."""
    assert out.strip(), "nothing on stdout"
    return json.loads(out)


def check_error(lakecat, args: list[Any], exit_code: int, error_type: str) -> dict[str, Any]:
    code, out, err = lakecat(*args, "--json")
    assert code == exit_code, (args, code, out, err)
    doc = one_document(out)
    assert set(doc) == {"error"} and ERROR_KEYS <= set(doc["error"]), doc
    assert doc["error"]["type"] == error_type and doc["error"]["message"], (args, doc)
    assert doc["error"].get("exit_code", exit_code) == exit_code
    lines = [line for line in err.splitlines() if line.strip()]  # usage errors too: one line, the reason
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return doc["error"]


# --- coverage ----------------------------------------------------------------------------------
def test_every_command_is_covered():
    """Each command of the app is run by the scenario below, or by the test named in COVERED_ELSEWHERE."""
    commands = set(app_commands())
    scenario = set(_scenario_commands())
    missing = commands - scenario - set(COVERED_ELSEWHERE)
    assert not missing, f"commands not run with --json anywhere: {sorted(missing)} — add them to the scenario"
    assert not (scenario - commands), f"the scenario runs commands the app lacks: {sorted(scenario - commands)}"
    for path, where in COVERED_ELSEWHERE.items():
        assert path in commands, f"COVERED_ELSEWHERE names {path}, which the app lacks"
        file, test = where.split("::")
        source = (ROOT / file).read_text()
        match = re.search(rf"^def {test}\(.*?(?=^def |\Z)", source, re.S | re.M)
        assert match, f"{where} does not exist"
        body = match.group(0)
        assert "--json" in body and "json.loads" in body, f"{where} does not parse `lakecat {' '.join(path)} --json`"
        assert all(f'"{word}"' in body for word in path), f"{where} does not run `lakecat {' '.join(path)}`"


def test_the_command_table_matches_the_modules():
    """`lakecat.commands.main.COMMANDS` (which module a command line imports) names exactly what each module
    registers, and a command line imports its own command module only."""
    import importlib
    import subprocess

    import typer
    from lakecat.commands import main as cli

    for module, names in cli.COMMANDS.items():
        root = typer.Typer()
        importlib.import_module(f"lakecat.commands.{module}").register(root)
        registered = [c.name for c in root.registered_commands] + [g.name for g in root.registered_groups]
        assert sorted(registered) == sorted(names), (
            f"commands/{module}.py registers {registered}, COMMANDS says {names}"
        )
    probe = ("import sys; from lakecat.commands.main import run_cli; run_cli(['history', '-h']); "
             "print(sorted(m for m in sys.modules if m.startswith('lakecat.commands.') and not m.split('.')[-1].startswith('_')))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "['lakecat.commands.main', 'lakecat.commands.versions']", out


def _scenario_commands() -> list[tuple[str, ...]]:
    """The commands `test_every_command_with_json` runs (it asserts it ran exactly these)."""
    commands = [
        ("catalogs",), ("create",), ("ingest",), ("list",), ("describe",), ("history",), ("timetravel",),
        ("read",), ("changes",), ("alter",), ("compact",), ("expire",), ("clean-orphans",), ("maintain",), ("rollback",),
        ("drop",), ("local", "kafka", "status"), ("local", "kafka", "stop"), ("jars", "fetch"), ("jars", "list"), ("doctor",),
        ("tag",), ("tags",), ("untag",), ("branch",), ("publish",),
    ]  # fmt: skip
    if ("health",) in app_commands():
        commands.append(("health",))
    if ("upsert",) in app_commands():  # came with CDC; kept conditional so this file also runs on a tree without it
        commands.append(("upsert",))
    return commands


# --- every command, --json, both formats ----------------------------------------------------------
@pytest.mark.spark
def test_every_command_with_json(lakecat, catalog, spark, ns, table_format, tmp_path):
    commands = app_commands()
    ran: set[tuple[str, ...]] = set()

    def ok(*args: Any) -> Any:
        code, out, err = lakecat(*args, "--json")
        assert code == 0, (args, out, err)
        ran.add(tuple(map(str, args[:3] if args[0] == "local" else args[:2] if args[0] == "jars" else args[:1])))
        return one_document(out)

    name, dlq = f"{ns}.events", f"{ns}.events_dlq"

    cats = ok("catalogs")
    assert cats and all(CATALOG_KEYS <= set(c) for c in cats) and sum(c["active"] for c in cats) == 1

    d = ok("create", name, "--format", table_format, "--schema", SCHEMA, "--partition-by", "days(ts)",
           "--property", "lakecat.expire.retain-last=2")  # fmt: skip
    assert DESCRIBE_KEYS <= set(d) and d["partitioning"] == ["days(ts)"] and d["files"] == 0

    landing = tmp_path / "landing"
    landing.mkdir()
    good = [{"id": i, "ts": f"2026-01-0{1 + i % 2}T10:00:00", "region": "eu", "v": f"a{i}"} for i in range(4)]
    (landing / "0.json").write_text("\n".join(map(json.dumps, good)) + "\nnot json\n")
    report = ok("ingest", name, "--files", landing, "--file-format", "json")
    assert INGEST_KEYS <= set(report)
    assert (report["rows_written"], report["rows_dead_lettered"]) == (4, 1) and report["batches"] >= 1

    t = catalog.load_table(name)  # a second commit, into the same day partitions: something to compact
    spark.sql(f"INSERT INTO {t.spark_name} (id, ts, region, v) VALUES "
              "(10, TIMESTAMP'2026-01-01 11:00:00', 'us', 'b10'), (11, TIMESTAMP'2026-01-02 11:00:00', 'us', 'b11')")  # fmt: skip

    tables = ok("list", ns)
    assert all(LIST_KEYS <= set(row) for row in tables)
    assert [(row["name"], row["format"]) for row in tables] == [(name, table_format), (dlq, table_format)]

    d = ok("describe", name)
    assert DESCRIBE_KEYS <= set(d) and all(COLUMN_KEYS <= set(c) for c in d["schema"])
    assert d["files"] >= 2 and d["size_bytes"] > 0 and d["current_version"] is not None

    history = ok("history", name)
    assert history and all(HISTORY_KEYS <= set(e) for e in history)
    assert [e["timestamp"] for e in history] == sorted((e["timestamp"] for e in history), reverse=True)  # newest first
    assert history[0]["version"] == d["current_version"]
    ingested = [e["version"] for e in history if e["operation"] == "append"][-1]  # the oldest append: the ingest

    rows = ok("timetravel", name, "--version", ingested)
    assert {"rows", "columns", "version"} <= set(rows) and "count" not in rows
    assert rows["version"] == ingested and sorted(r["id"] for r in rows["rows"]) == [0, 1, 2, 3]
    counted = ok("timetravel", name, "--version", ingested, "--count")
    assert "rows" not in counted and counted["count"] == 4 and counted["version"] == ingested

    now = ok("read", name, "--columns", "id", "--limit", "0")  # the current version, as timetravel shapes it
    assert now["version"] == d["current_version"] and now["columns"] == ["id"]
    assert sorted(r["id"] for r in now["rows"]) == [0, 1, 2, 3, 10, 11]
    assert ok("read", name, "--count")["count"] == 6

    changes = ok("changes", name, "--since", ingested)
    assert {"rows", "since_version", "until_version"} <= set(changes) and "count" not in changes
    assert sorted((r["id"], r["_change_type"]) for r in changes["rows"]) == [(10, "insert"), (11, "insert")]
    assert changes["until_version"] == d["current_version"]
    counted = ok("changes", name, "--since", ingested, "--count")
    assert counted["count"] == 2 and "rows" not in counted and counted["since_version"] == ingested

    if ("upsert",) in commands:
        source = tmp_path / "upsert.json"
        source.write_text(json.dumps({"id": 1, "ts": "2026-01-02T10:00:00", "region": "eu", "v": "changed"}) + "\n"
                          + json.dumps({"id": 99, "ts": "2026-01-03T10:00:00", "region": "eu", "v": "new"}) + "\n")  # fmt: skip
        merged = ok("upsert", name, "--from", source, "--key", "id", "--file-format", "json")
        assert (merged["rows_in"], merged["inserted"], merged["updated"], merged["deleted"]) == (2, 1, 1, 0)
        latest = ok("history", name, "--limit", "1")[0]["version"]
        assert ok("timetravel", name, "--version", latest, "--count")["count"] == 7  # one updated, one inserted

    altered = ok("alter", name, "--property", "lakecat.compact.target-file-size=1MB")
    assert ALTER_KEYS <= set(altered) and altered["properties"]["lakecat.compact.target-file-size"] == "1MB"

    evolved = ok("alter", name, "--add-column", "extra STRING COMMENT 'added'")
    assert ALTER_SCHEMA_KEYS <= set(evolved) and evolved["schema"][-1]["name"] == "extra"

    tagged = ok("tag", name, "first", "--version", ingested)
    assert TAG_KEYS <= set(tagged) and tagged["version"] == ingested and tagged["action"] == "tagged"
    refs = ok("tags", name)
    assert [r["name"] for r in refs["tags"]] == ["first"] and all(REF_KEYS <= set(r) for r in refs["tags"])
    assert ok("timetravel", name, "--tag", "first", "--count")["count"] == 4
    assert ok("describe", name)["tags"][0]["name"] == "first"
    if catalog.load_table(name).adapter.supports("branches"):
        assert ok("branch", name, "audit")["kind"] == "branch"
        assert ok("publish", name, "audit")["action"] == "published"
    else:
        for args in (("branch", name, "audit"), ("publish", name, "audit")):
            check_error(lakecat, list(args), 3, "UnsupportedOperationError")
            ran.add(args[:1])
    assert ok("untag", name, "first")["action"] == "untagged"

    plan = ok("compact", name, "--dry-run")
    assert COMPACT_KEYS <= set(plan) and plan["dry_run"] is True and plan["files_rewritten"] >= 2
    done = ok("compact", name)
    assert COMPACT_KEYS <= set(done) and done["dry_run"] is False
    assert done["files_after"] < done["files_before"] == plan["files_before"]

    for extra in (["--dry-run"], []):
        expired = ok("expire", name, *extra)  # the default window (7d): every version here is younger
        assert EXPIRE_KEYS <= set(expired) and expired["dry_run"] is bool(extra)
        assert expired["expired_versions"] == [] and expired["deleted_files"] == 0
        assert ok("history", name, "--limit", "1")[0]["version"] in expired["retained_versions"]

    orphans = ok("clean-orphans", name, "--dry-run")
    assert ORPHAN_KEYS <= set(orphans) and orphans["dry_run"] is True

    maintained = ok("maintain", name, "--dry-run")  # a pattern matching one table
    assert MAINTAIN_KEYS <= set(maintained) and maintained["failed"] == 0 and maintained["dry_run"] is True
    assert [tm["name"] for tm in maintained["tables"]] == [name]
    assert all(MAINTAIN_TABLE_KEYS <= set(tm) for tm in maintained["tables"])

    if ("health",) in commands:
        checked = ok("health", f"{ns}.*")
        assert HEALTH_KEYS <= set(checked) and [h["name"] for h in checked["tables"]] == [name, dlq]
        assert all(HEALTH_TABLE_KEYS <= set(h) and h["format"] == table_format for h in checked["tables"])
        auto = ok("maintain", name, "--auto", "--dry-run")
        assert MAINTAIN_KEYS <= set(auto) and auto["auto"] is True and auto["tables"][0]["health"]["verdict"]

    rolled = ok("rollback", name, "--version", ingested, "--yes")
    assert ROLLBACK_KEYS <= set(rolled) and rolled["changed"] is True and rolled["to_version"] == ingested
    assert ok("timetravel", name, "--version", rolled["current_version"], "--count")["count"] == 4

    dropped = ok("drop", dlq, "--yes", "--purge")
    assert DROP_KEYS <= set(dropped) and dropped["purged"] is True and dropped["name"] == dlq
    assert [row["name"] for row in ok("list", ns)] == [name]

    broker = ["--port", free_port(), "--data-dir", tmp_path / "kafka"]  # no broker there: nothing starts
    status = ok("local", "kafka", "status", *broker)
    assert KAFKA_STATUS_KEYS <= set(status) and status["running"] is False
    stopped = ok("local", "kafka", "stop", *broker)
    assert stopped["stopped"] is False and stopped["running"] is False

    fetched = ok("jars", "fetch")  # the session's set is cached by now: nothing to download
    assert {"cache", "repository", "sets"} <= set(fetched) and [s["name"] for s in fetched["sets"]] == ["spark"]
    assert fetched["sets"][0]["fetched"] is False
    listing = ok("jars", "list")
    assert listing["ok"] and all({"coordinate", "file", "size", "sha1", "sha1_ok"} <= set(j) for j in listing["jars"])
    report = ok("doctor")
    assert report["ok"] and all({"name", "ok", "detail", "fix"} <= set(c) for c in report["checks"])
    extension = next(c for c in report["checks"] if c["name"] == "extension")
    assert extension["ok"] and "lakecat-spark.jar" in extension["detail"]  # shipped in the package (lakecat.jvm)

    assert ran == set(_scenario_commands())


# --- errors, every command -------------------------------------------------------------------------
def _table_args(path: tuple[str, ...], tmp_path: Path) -> list[Any]:
    """What a command needs besides TABLE to get as far as looking the table up."""
    source = tmp_path / "rows.json"
    source.write_text('{"id": 1}\n')
    return {
        ("create",): ["--format", "delta", "--schema", "id BIGINT"],
        ("timetravel",): ["--version", "1"],
        ("changes",): ["--since", "0"],
        ("rollback",): ["--version", "1", "--yes"],
        ("drop",): ["--yes"],
        ("tag",): ["t1"],
        ("untag",): ["t1"],
        ("branch",): ["b1"],
        ("publish",): ["b1"],
        ("ingest",): ["--files", tmp_path],
        ("upsert",): ["--from", source, "--key", "id", "--file-format", "json"],
        ("append",): ["--from", source, "--file-format", "json"],
        ("delete",): ["--where", "id = 1"],
        ("rename",): ["elsewhere.renamed"],
        ("register",): ["--location", tmp_path],
        ("convert",): ["--from", tmp_path, "--format", "delta"],
    }.get(path, [])


def test_every_command_reports_errors_as_json(lakecat, tmp_path):
    """A bad table name is a usage error (exit 2), a missing table a failure (exit 1): each one JSON document
    {"error": {"type", "message"}} on stdout with --json, and one line on stderr."""
    for path, cmd in app_commands().items():
        if takes_table(cmd):
            extra = _table_args(path, tmp_path)
            error = check_error(lakecat, [*path, "no_namespace", *extra], 2, "InvalidArgumentError")
            assert "namespace.table" in error["message"]
            check_error(lakecat, [*path, "bad-ns.t", *extra], 2, "InvalidArgumentError")
            if path not in (("create",), ("register",), ("convert",)):  # these make the table
                error = check_error(lakecat, [*path, "nowhere.missing", *extra], 1, "TableNotFoundError")
                assert "nowhere.missing" in error["message"]
    # the commands without a table have errors of their own
    check_error(lakecat, ["list", "bad-namespace"], 2, "InvalidArgumentError")
    check_error(lakecat, ["list", "--format", "parquet"], 2, "InvalidArgumentError")
    check_error(lakecat, ["maintain", "--plan", tmp_path / "missing.toml"], 2, "InvalidArgumentError")
    check_error(lakecat, ["describe", "a.b", "--catalog", "no_such_catalog"], 1, "ConfigError")
    with socket.socket() as busy:  # the port is taken: refused before anything starts
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        check_error(
            lakecat, ["local", "kafka", "start", "--port", port, "--data-dir", tmp_path / "k"], 1, "LocalKafkaError"
        )


def test_every_command_reports_usage_errors_as_json(lakecat):
    """An unknown option or a bad option value is a usage error: exit 2 and {"error": {"type": "UsageError"}}."""
    for path in app_commands():
        check_error(lakecat, [*path, "--no-such-option"], 2, "UsageError")
    check_error(lakecat, ["quickstart", "--events", "0"], 2, "UsageError")


# --- human output ----------------------------------------------------------------------------------
@pytest.fixture
def human_table(catalog, spark, ns, table_format):
    """A small partitioned table with three commits (two appends, a delete)."""
    t = catalog.create_table(f"{ns}.h", schema=SCHEMA, format=table_format, partition_by="region")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, TIMESTAMP'2026-01-01 10:00:00.250', 'eu', '[red]not markup[/]')")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (2, TIMESTAMP'2026-01-01 11:00:00', 'eu', 'b')")
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 2")
    return t


@contextmanager
def _no_color_env(monkeypatch):
    with monkeypatch.context() as m:
        m.delenv("NO_COLOR", raising=False)  # conftest sets it for the whole run
        yield


@pytest.mark.spark
def test_human_output_colours_widths_and_progress(lakecat, human_table, monkeypatch):
    t = human_table
    versions = [e.version for e in t.history()]  # newest first
    terminal = {"TTY_COMPATIBLE": "1", "COLUMNS": "80"}  # what rich takes for a terminal 80 columns wide
    human = [
        ["list", t.name.split(".")[0]], ["describe", t.name], ["history", t.name], ["catalogs"],
        ["timetravel", t.name, "--version", versions[1]], ["changes", t.name, "--since", versions[-1]],
        ["compact", t.name, "--dry-run"], ["expire", t.name, "--dry-run"],
    ]  # fmt: skip

    with _no_color_env(monkeypatch):
        for args in human:
            # NO_COLOR on a terminal: no escape at all in the data, no colour in the progress line
            code, out, err = lakecat(*args, env={**terminal, "NO_COLOR": "1"})
            assert code == 0, (args, err)
            assert "\x1b" not in out, (args, out)
            assert not SGR.search(err), (args, err)
            assert max(len(line) for line in out.splitlines()) <= 80, (args, out)
            # not a terminal (a pipe, a file): plain text, one line per row
            code, out, err = lakecat(*args)
            assert code == 0 and "\x1b" not in out + err, args
        code, _, err = lakecat("describe", "nowhere.missing", env={**terminal, "NO_COLOR": "1"})
        assert code == 1 and err.startswith("error: ") and "\x1b" not in err

        # a terminal without NO_COLOR gets styles; history keeps every version whole at 80 columns
        code, out, _ = lakecat("history", t.name, env=terminal)
        assert code == 0 and SGR.search(out)
        plain = SGR.sub("", out)
        assert all(str(v) in plain for v in versions), plain
        # cell values are text, never rich markup; times are UTC without the T and Z
        code, out, _ = lakecat("timetravel", t.name, "--version", versions[1])
        assert "[red]not markup[/]" in out and "2026-01-01 10:00:00.250" in out
        # --json never shows progress, even on a terminal (compact runs Spark here)
        code, out, err = lakecat("compact", t.name, "--target-file-size", "1MB", "--json", env=terminal)
        assert code == 0 and err == "" and one_document(out)["files_after"] <= one_document(out)["files_before"]


def test_human_units():
    from datetime import datetime, timedelta

    from lakecat.commands._common import exact_size, human_age, human_duration, human_time

    assert [human_duration(s) for s in (0.04, 12.34, 125, 3725, 2 * 86400 + 3600)] == [
        "0.0s",
        "12.3s",
        "2m 05s",
        "1h 02m",
        "2d 01h",
    ]
    assert human_time("2026-01-31T12:00:03.120Z") == "2026-01-31 12:00:03.120"
    assert human_time("2026-01-31T12:00:03") == "2026-01-31 12:00:03" and human_time(None) == "-"
    now = datetime(2026, 1, 31, 12, 0, 0).astimezone()
    assert [human_age(now - timedelta(seconds=s), now) for s in (0.2, 45, 200, 7300, 3 * 86400, 15 * 86400)] == [
        "just now", "45s ago", "3m ago", "2h ago", "3d ago", "2w ago"]  # fmt: skip
    assert [exact_size(n) for n in (128 * 1000**2, 1024**3, 1536, 0)] == ["128MB", "1GiB", "1.5 KiB", "0 B"]
