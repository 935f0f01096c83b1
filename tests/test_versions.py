"""history / timetravel / changes / rollback on both formats, with commits by Spark and by other engines."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from helpers import pyiceberg_catalog

from lakecat.errors import InvalidArgumentError, VersionNotFoundError

pytestmark = pytest.mark.spark

SCHEMA = "id BIGINT NOT NULL, v STRING"


def run_json(cli, *args):
    code, out, err = cli(*args, "--json")
    return code, json.loads(out), err


def iso_ms(ts: str) -> int:
    return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def three_appends_and_a_delete(catalog, spark, name, table_format):
    """The 'done when' table: three appends of two rows each, then a delete of id 3 — all by Spark."""
    t = catalog.create_table(name, schema=SCHEMA, format=table_format)
    for i in range(3):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({2 * i + 1}, 'a{i}'), ({2 * i + 2}, 'b{i}')")
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 3")
    data = [e for e in reversed(t.history().entries) if e.operation != "create"]  # oldest first
    assert [e.operation for e in data] == ["append", "append", "append", "delete"]
    return t, [e.version for e in data], [e.timestamp for e in data]


def independent_count(catalog, t) -> int:
    """Rows in the table's current version, read by pyiceberg or delta-rs (not by Spark)."""
    if t.format == "iceberg":
        return (
            pyiceberg_catalog(catalog)
            .load_table((t.entry.ident.namespace, t.entry.ident.name))
            .scan()
            .to_arrow()
            .num_rows
        )
    from deltalake import DeltaTable

    return DeltaTable(t.location).to_pyarrow_table().num_rows


def test_history_timetravel_and_python_api(cli, catalog, spark, ns, table_format):
    name = f"{ns}.tt"
    t, versions, stamps = three_appends_and_a_delete(catalog, spark, name, table_format)

    code, doc, err = run_json(cli, "history", name)
    assert code == 0, err
    assert [e["version"] for e in doc][:4] == versions[::-1]  # newest first
    assert set(doc[0]) == {"version", "version_str", "timestamp", "operation", "summary"}
    assert doc[0]["version_str"] == str(doc[0]["version"])
    assert doc[0]["operation"] == "delete" and doc[0]["summary"]["rows_removed"] == 1
    assert doc[0]["summary"]["engine_operation"] in ("DELETE", "delete", "overwrite")
    assert all(e["summary"]["rows_added"] == 2 for e in doc[1:4])
    assert all(e["timestamp"].endswith("Z") for e in doc)
    if table_format == "delta":
        assert doc[-1]["operation"] == "create" and doc[-1]["version"] == 0
    assert len(run_json(cli, "history", name, "--limit", "2")[1]) == 2

    # time travel by version: 2, 4, 6 rows after the appends, 5 after the delete
    for version, expected in zip(versions, (2, 4, 6, 5), strict=True):
        code, doc, err = run_json(cli, "timetravel", name, "--version", version, "--count")
        assert code == 0, err
        assert doc["count"] == expected and doc["version"] == version
    # by timestamp: at a commit's own time -> that commit; between two commits -> the earlier one
    code, doc, _ = run_json(cli, "timetravel", name, "--as-of", stamps[1], "--count")
    assert (doc["version"], doc["count"]) == (versions[1], 4)
    between = iso((iso_ms(stamps[1]) + iso_ms(stamps[2])) // 2)
    code, doc, _ = run_json(cli, "timetravel", name, "--as-of", between, "--count")
    assert (doc["version"], doc["count"], doc["as_of"]) == (versions[1], 4, between)
    naive = between.rstrip("Z")  # naive means UTC
    assert run_json(cli, "timetravel", name, "--as-of", naive, "--count")[1]["version"] == versions[1]
    # rows, --where as a predicate, --limit
    code, doc, err = run_json(cli, "timetravel", name, "--version", versions[2], "--where", "id > 4 AND v LIKE '%2'")
    assert code == 0, err
    assert sorted(r["id"] for r in doc["rows"]) == [5, 6] and doc["columns"] == ["id", "v"]
    code, doc, _ = run_json(cli, "timetravel", name, "--version", versions[2], "--limit", "4")
    assert doc["returned"] == 4 and doc["truncated"] is True
    code, out, _ = cli("timetravel", name, "--version", versions[2], "--where", "id = 5")
    assert code == 0 and "a2" in out and "1 row" in out and "1 rows" not in out

    # the Python twin
    h = t.history(limit=3)
    assert [e.version for e in h] == versions[::-1][:3] and h.to_dict()[0]["version"] == versions[-1]
    view = t.as_of(version=versions[1])
    assert view.version == versions[1] and view.count() == 4
    assert sorted(view.to_pandas()["id"]) == [1, 2, 3, 4]
    assert view.to_arrow(where="id < 3").num_rows == 2 and view.to_spark().count() == 4
    assert t.as_of(timestamp=between).version == versions[1]
    with pytest.raises(TypeError):
        t.as_of(versions[1])  # options are keyword-only


def test_changes(cli, catalog, spark, ns, table_format):
    name = f"{ns}.ch"
    t, versions, stamps = three_appends_and_a_delete(catalog, spark, name, table_format)

    code, doc, err = run_json(cli, "changes", name, "--since", versions[0])
    assert code == 0, err
    assert doc["since_version"] == versions[0] and doc["until_version"] == versions[-1]
    assert doc["columns"][-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]
    got = [(r["id"], r["_change_type"], r["_commit_version"]) for r in doc["rows"]]
    assert sorted(got) == sorted([(3, "insert", versions[1]), (4, "insert", versions[1]), (5, "insert", versions[2]),
                                  (6, "insert", versions[2]), (3, "delete", versions[3])])  # fmt: skip
    assert got[-1] == (3, "delete", versions[3])  # commit order
    by_version = dict(zip(versions, stamps, strict=True))
    assert all(r["_commit_timestamp"] == by_version[r["_commit_version"]] for r in doc["rows"])

    code, doc, _ = run_json(cli, "changes", name, "--since", versions[0], "--until", versions[1])
    assert sorted((r["id"], r["_change_type"]) for r in doc["rows"]) == [(3, "insert"), (4, "insert")]
    code, doc, _ = run_json(cli, "changes", name, "--since", versions[1], "--count")
    assert doc["count"] == 3 and doc["until_version"] == versions[-1]
    code, doc, _ = run_json(cli, "changes", name, "--since", versions[-1])  # resume: nothing new
    assert code == 0 and doc["rows"] == [] and doc["until_version"] == versions[-1]
    code, doc, _ = run_json(cli, "changes", name, "--since", "-1", "--count")  # from the first commit
    assert doc["count"] == 7

    ch = t.changes(since=versions[2])
    assert ch.until_version == versions[-1] and ch.count() == 1
    pdf = ch.to_pandas()
    assert list(pdf["_change_type"]) == ["delete"] and list(pdf["id"]) == [3]
    assert set(ch.to_spark().columns) == {"id", "v", "_change_type", "_commit_version", "_commit_timestamp"}


def assert_same_snapshot_view(t):
    """Iceberg: the version log reads the metadata file itself (no pyiceberg import); it must see the commits, the
    current snapshot and the snapshot log exactly as pyiceberg's parse of the same file does."""
    from lakecat.formats.iceberg.versions import _commits, _metadata_json, snapshot_view

    meta = t.adapter.load(t).metadata
    light = snapshot_view(_metadata_json(t.refresh().metadata_location))
    assert _commits(light) == _commits(meta)
    assert light.current_snapshot_id == meta.current_snapshot_id
    assert [(e.snapshot_id, e.timestamp_ms) for e in light.snapshot_log] == [
        (e.snapshot_id, e.timestamp_ms) for e in meta.snapshot_log]  # fmt: skip


def test_rollback(cli, catalog, spark, ns, table_format, light_cli):
    name = f"{ns}.rb"
    t, versions, stamps = three_appends_and_a_delete(catalog, spark, name, table_format)

    rc, _, err = cli("rollback", name, "--version", versions[1])  # nobody to confirm: refuse, change nothing
    assert rc == 2 and "--yes" in err and independent_count(catalog, t) == 5

    doc = light_cli("rollback", name, "--version", versions[1], "--yes")  # pyiceberg / delta-rs commit it: no JVM
    assert (doc["from_version"], doc["to_version"], doc["changed"]) == (versions[-1], versions[1], True)
    assert independent_count(catalog, t) == 4  # pyiceberg / delta-rs agree
    assert t.as_of(version=doc["current_version"]).count() == 4
    top = t.history().entries[0]
    assert top.operation == "restore" and top.summary["restored_version"] == versions[1]
    if table_format == "iceberg":
        assert doc["current_version"] == versions[1]
        with pytest.raises(VersionNotFoundError, match="not an ancestor"):  # rolled-back snapshot: not in the line
            t.changes(since=versions[2])
    else:
        assert doc["current_version"] == versions[-1] + 1  # Delta commits a RESTORE
        got = sorted((r["id"], r["_change_type"]) for r in t.changes(since=versions[-1]).read().rows)
        assert got == [(3, "insert"), (5, "delete"), (6, "delete")]

    # forwards again, by timestamp: the state just after the delete
    code, doc, err = run_json(cli, "rollback", name, "--as-of", stamps[-1], "--yes")
    assert code == 0, err
    assert doc["to_version"] == versions[-1] and independent_count(catalog, t) == 5
    again = t.rollback(version=doc["current_version"])
    assert again.changed is False  # at that version already
    if table_format == "iceberg":  # appends, a delete, two pointer moves
        assert_same_snapshot_view(t)


def test_commits_by_other_engines(cli, catalog, spark, ns, table_format):
    """pyiceberg / delta-rs appends and deletes: history, time travel, changes and rollback see them right."""
    name = f"{ns}.other"
    t = catalog.create_table(name, schema=SCHEMA, format=table_format)
    batches = [
        pa.table({"id": pa.array(ids, pa.int64()), "v": [f"x{i}" for i in ids]}) for ids in ([1, 2], [3, 4], [5, 6])
    ]
    if table_format == "iceberg":
        ptbl = pyiceberg_catalog(catalog).load_table((ns, "other"))
        for b in batches:
            ptbl.append(b.cast(ptbl.schema().as_arrow()))
        ptbl.delete("id = 3")  # copy-on-write: rewrites the file holding 3 and 4
    else:
        from deltalake import DeltaTable, write_deltalake

        for b in batches:
            write_deltalake(t.location, b, mode="append")
        DeltaTable(t.location).delete("id = 3")

    hist = [e for e in reversed(t.history().entries) if e.operation != "create"]
    assert [e.operation for e in hist] == ["append", "append", "append", "delete"], [e.to_dict() for e in hist]
    versions = [e.version for e in hist]
    assert hist[-1].summary["rows_removed"] >= 1 and all(e.summary["rows_added"] == 2 for e in hist[:3])

    assert [run_json(cli, "timetravel", name, "--version", v, "--count")[1]["count"] for v in versions] == [2, 4, 6, 5]
    code, doc, err = run_json(cli, "changes", name, "--since", versions[0])
    assert code == 0, err
    assert sorted((r["id"], r["_change_type"], r["_commit_version"]) for r in doc["rows"]) == sorted([
        (3, "insert", versions[1]), (4, "insert", versions[1]), (5, "insert", versions[2]), (6, "insert", versions[2]),
        (3, "delete", versions[3])])  # fmt: skip
    code, doc, err = run_json(cli, "rollback", name, "--version", versions[2], "--yes")
    assert code == 0, err
    assert independent_count(catalog, t) == 6
    if table_format == "iceberg":  # snapshots pyiceberg wrote (its own summaries)
        assert_same_snapshot_view(t)


def test_iceberg_merge_on_read_delete_changes(cli, catalog, spark, ns):
    name = f"{ns}.mor"
    t = catalog.create_table(name, schema=SCHEMA, format="iceberg", properties={"write.delete.mode": "merge-on-read"})
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 2")
    versions = [e.version for e in reversed(t.history().entries)]
    code, doc, err = run_json(cli, "changes", name, "--since", versions[0])
    assert code == 0, err
    assert [(r["id"], r["_change_type"], r["_commit_version"]) for r in doc["rows"]] == [(2, "delete", versions[1])]


def test_errors(cli, catalog, spark, ns, table_format):
    name = f"{ns}.err"
    t, versions, stamps = three_appends_and_a_delete(catalog, spark, name, table_format)
    missing = 987654321
    before = iso(iso_ms(stamps[0]) - 3_600_000)
    cases = [
        (["timetravel", name, "--version", missing, "--count"], 1, "VersionNotFoundError", "does not exist"),
        (["timetravel", name, "--as-of", before, "--count"], 1, "VersionNotFoundError", "no version as of"),
        (["timetravel", name, "--as-of", "last tuesday"], 2, "InvalidArgumentError", "invalid timestamp"),
        (["timetravel", name], 2, "InvalidArgumentError", "exactly one"),
        (
            ["timetravel", name, "--version", versions[0], "--as-of", stamps[0]],
            2,
            "InvalidArgumentError",
            "exactly one",
        ),
        (["timetravel", name, "--version", versions[0], "--where", "id >"], 2, "InvalidArgumentError", "--where"),
        (["timetravel", name, "--version", versions[0], "--where", "nope = 1"], 2, "InvalidArgumentError", "nope"),
        (
            ["timetravel", name, "--version", versions[0], "--where", "1=1; DROP TABLE x"],
            2,
            "InvalidArgumentError",
            "--where",
        ),
        (["changes", name, "--since", missing], 1, "VersionNotFoundError", "does not exist"),
        (["changes", name, "--since", versions[0], "--until", missing], 1, "VersionNotFoundError", "does not exist"),
        (["rollback", name, "--version", missing, "--yes"], 1, "VersionNotFoundError", "does not exist"),
        (["rollback", name, "--as-of", "2026-13-45", "--yes"], 2, "InvalidArgumentError", "invalid timestamp"),
        (["history", f"{ns}.missing"], 1, "TableNotFoundError", "not found"),
        (["timetravel", "bad name", "--version", "1"], 2, "InvalidArgumentError", "invalid table name"),
    ]
    for args, code, kind, msg in cases:
        rc, out, err = cli(*args, "--json")
        assert rc == code, (args, out, err)
        doc = json.loads(out)["error"]
        assert doc["type"] == kind and msg in doc["message"], (args, doc)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (args, err)
    with pytest.raises(InvalidArgumentError):
        t.changes(since=versions[1], until=versions[0]) if table_format == "delta" else t.as_of(version="x")

    # a version whose files were removed: Iceberg expires the snapshot, Delta vacuums the data files
    if table_format == "iceberg":
        spark.sql(f"CALL local.system.expire_snapshots(table => '{ns}.err', snapshot_ids => array({versions[0]}))")
        read = ["timetravel", name, "--version", versions[0], "--count"]
    else:
        from deltalake import DeltaTable

        DeltaTable(t.location).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
        read = ["timetravel", name, "--version", versions[1], "--count"]  # the file with id 3 is gone
    since = versions[0] if table_format == "iceberg" else 0  # Delta: the change feed needs the vacuumed file
    for args in (read, ["changes", name, "--since", since, "--count"]):
        rc, out, err = cli(*args, "--json")
        assert rc == 1, (args, out, err)
        assert json.loads(out)["error"]["type"] == "VersionNotFoundError" and len(err.strip().splitlines()) == 1, err
    assert run_json(cli, "timetravel", name, "--version", versions[-1], "--count")[1]["count"] == 5


def test_every_command_prints_json(cli, catalog, spark, ns, table_format):
    name = f"{ns}.js"
    t = catalog.create_table(name, schema="id BIGINT, ts TIMESTAMP, amount DECIMAL(10,2)", format=table_format)
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, TIMESTAMP'2026-01-01 10:00:00', 1.50)")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (2, TIMESTAMP'2026-01-02 10:00:00', 2.50)")
    first, last = [e.version for e in reversed(t.history().entries) if e.operation == "append"]
    runs = [
        ["history", name], ["history", name, "--limit", "1"],
        ["timetravel", name, "--version", first], ["timetravel", name, "--version", first, "--count"],
        ["changes", name, "--since", first], ["changes", name, "--since", first, "--count"],
        ["rollback", name, "--version", first, "--yes"],
    ]  # fmt: skip
    docs = []
    for args in runs:
        code, out, err = cli(*args, "--json")
        assert code == 0, (args, err)
        docs.append(json.loads(out))
    assert docs[2]["rows"] == [{"id": 1, "ts": "2026-01-01T10:00:00.000Z", "amount": "1.50"}]
    assert docs[4]["rows"][0]["_commit_version"] == last and docs[6]["to_version"] == first


def test_history_starts_no_jvm(catalog, spark, ns, light_cli, table_format):
    t = catalog.create_table(f"{ns}.light", schema="id BIGINT", format=table_format)
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1)")
    assert light_cli("history", f"{ns}.light")[0]["operation"] == "append"


def test_updates_show_pre_and_post_images(cli, catalog, spark, ns, table_format):
    name = f"{ns}.upd"
    t = catalog.create_table(name, schema=SCHEMA, format=table_format)
    if table_format == "iceberg":  # Iceberg computes update images from the table's identifier fields
        spark.sql(f"ALTER TABLE {t.spark_name} SET IDENTIFIER FIELDS id")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'a'), (2, 'b')")
    since = t.history(limit=1)[0].version
    spark.sql(f"UPDATE {t.spark_name} SET v = 'B' WHERE id = 2")
    code, doc, err = run_json(cli, "changes", name, "--since", since)
    assert code == 0, err
    assert [(r["id"], r["v"], r["_change_type"]) for r in doc["rows"]] == [
        (2, "b", "update_preimage"), (2, "B", "update_postimage")]  # fmt: skip


def test_commands_have_help_and_docs_entries(cli):
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "commands" / "versions.md").read_text()
    for command in ("history", "timetravel", "changes", "rollback"):
        code, out, _ = cli(command, "--help")
        assert code == 0 and "--json" in out
        assert f"## `lakecat {command}`" in page and f"lakecat {command} TABLE" in page


def as_double_reader(out: str):
    """``out`` parsed the way jq 1.6 and JavaScript read JSON: every number a double."""
    return json.loads(out, parse_int=float)


def test_versions_survive_a_double_only_json_reader(cli, catalog, spark, ns, table_format):
    """The docs' resume recipe with jq 1.6 semantics: each version read from lakecat's JSON by a double-only reader
    (the ``_str`` keys) is fed back into the next command, on Iceberg snapshot ids above 2**53 and Delta versions."""
    name = f"{ns}.dbl"
    t = catalog.create_table(name, schema=SCHEMA, format=table_format)
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'a')")
    while table_format == "iceberg" and t.history().current_version <= 2**53:  # random ids: almost always above
        spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'a')")
    first_rows = independent_count(catalog, t)

    code, out, err = cli("history", name, "--json")
    assert code == 0, err
    newest = as_double_reader(out)[0]
    first = newest["version_str"]
    assert first == str(t.history().current_version)
    if table_format == "iceberg":  # the bug the _str keys fix: the number itself does not survive
        assert int(newest["version"]) != int(first)

    spark.sql(f"INSERT INTO {t.spark_name} VALUES (2, 'b'), (3, 'c')")
    code, out, err = cli("changes", name, "--since", first, "--json")
    assert code == 0, err
    doc = as_double_reader(out)
    assert sorted(r["id"] for r in doc["rows"]) == [2.0, 3.0]
    assert {r["_commit_version_str"] for r in doc["rows"]} == {doc["until_version_str"]}
    code, out, err = cli("changes", name, "--since", doc["until_version_str"], "--count", "--json")  # resume
    assert code == 0, err
    assert as_double_reader(out)["count"] == 0

    code, out, err = cli("describe", name, "--json")
    assert as_double_reader(out)["current_version_str"] == doc["until_version_str"]
    code, out, err = cli("timetravel", name, "--version", first, "--count", "--json")
    assert code == 0, err
    assert as_double_reader(out)["count"] == first_rows
    code, out, err = cli("tag", name, "before", "--version", first, "--json")
    assert code == 0, err
    assert as_double_reader(out)["version_str"] == first
    code, out, err = cli("rollback", name, "--version", first, "--yes", "--json")
    assert code == 0, err
    assert as_double_reader(out)["to_version_str"] == first
    assert independent_count(catalog, t) == first_rows

    # Python takes the string too; a version that went through a double is refused, not rounded to another one
    assert t.as_of(version=first).count() == first_rows
    assert t.changes(since=first, until=doc["until_version_str"]).count() == 2
    if table_format == "iceberg":
        with pytest.raises(InvalidArgumentError, match="lost digits"):
            t.as_of(version=float(first))
