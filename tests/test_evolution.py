"""Tables that change shape, on both formats: schema evolution, partition evolution, tags and branches.

Every evolved table is read back by an independent reader (pyiceberg; delta-rs) and a format's gap is a strict
xfail derived from its capabilities.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import delta_arrow, pyiceberg_catalog, read_branch_ids, read_rows

from lakecat.engine import is_connect
from lakecat.errors import InvalidArgumentError, UnsupportedOperationError

pytestmark = pytest.mark.spark

SCHEMA = "id BIGINT NOT NULL, n INT, f FLOAT, amount DECIMAL(5,2), region STRING, v STRING"


def run_json(cli, *args):
    code, out, err = cli(*args, "--json")
    return code, json.loads(out), err


def metadata_commits(catalog, t) -> int:
    """Commits of the table's metadata, counted by the independent reader (Iceberg metadata files; Delta versions)."""
    entry = catalog.entry(t.name)
    if entry.format == "iceberg":
        tbl = pyiceberg_catalog(catalog).load_table((entry.ident.namespace, entry.ident.name))
        return len(tbl.metadata.metadata_log) + 1
    from deltalake import DeltaTable

    return DeltaTable(entry.location).version()


def independent_schema(catalog, t) -> dict[str, str]:
    """column -> type as the independent reader sees it."""
    entry = catalog.entry(t.name)
    if entry.format == "iceberg":
        tbl = pyiceberg_catalog(catalog).load_table((entry.ident.namespace, entry.ident.name))
        return {f.name: str(f.field_type) for f in tbl.schema().fields}
    from deltalake import DeltaTable

    return {f.name: str(f.type.type) for f in DeltaTable(entry.location).schema().fields}


def land(tmp_path, name, rows):
    d = tmp_path / name
    d.mkdir()
    (d / "0.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return d


def make(catalog, spark, ns, table_format, name="e"):
    t = catalog.create_table(f"{ns}.{name}", schema=SCHEMA, format=table_format, partition_by="region")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 10, 1.5, 1.25, 'eu', 'a'), (2, 20, 2.5, 2.5, 'us', 'b')")
    return t


# --- schema evolution ----------------------------------------------------------------------------
def test_schema_evolution_one_commit_each_ingest_and_upsert_around_a_rename(
    cli, catalog, spark, ns, table_format, tmp_path
):
    t = make(catalog, spark, ns, table_format)
    code, doc, err = run_json(cli, "ingest", t.name, "--files", land(tmp_path, "before", [
        {"id": 3, "n": 30, "f": 3.5, "amount": 3.75, "region": "eu", "v": "c"}]), "--file-format", "json", "--no-dlq")  # fmt: skip
    assert code == 0 and doc["rows_written"] == 1, err

    before = metadata_commits(catalog, t)
    code, doc, err = run_json(cli, "alter", t.name, "--add-column", "note STRING COMMENT 'free text' AFTER id",
                              "--add-column", "score DOUBLE", "--set-comment", "n=a count")  # fmt: skip
    assert code == 0, err
    assert metadata_commits(catalog, t) == before + 3  # one commit per change
    names = [c["name"] for c in doc["schema"]]
    assert names[:2] == ["id", "note"] and names[-1] == "score"
    by_name = {c["name"]: c for c in doc["schema"]}
    assert by_name["note"]["comment"] == "free text" and by_name["n"]["comment"] == "a count"
    assert {"note", "score"} <= set(independent_schema(catalog, t))

    # rename and drop: Delta must enable column mapping first, only when asked
    upgrade = t.adapter.schema_upgrade(t, "rename")
    before = metadata_commits(catalog, t)
    if upgrade:
        code, doc, err = run_json(cli, "alter", t.name, "--rename-column", "v=label")
        assert code == 2 and "column mapping" in doc["error"]["message"] and "--yes" in doc["error"]["message"], doc
        assert len(err.strip().splitlines()) == 1
        assert metadata_commits(catalog, t) == before  # nothing changed
    code, doc, err = run_json(cli, "alter", t.name, "--rename-column", "v=label", "--drop-column", "score", "--yes")
    assert code == 0, err
    ops = [e.operation for e in t.history()][: metadata_commits(catalog, t) - before]  # newest first
    if upgrade:  # the protocol upgrade is its own commit(s), before the changes
        assert ops[:2] == ["alter_schema", "alter_schema"] and set(ops[2:]) == {"set_properties"}, ops
    else:
        assert metadata_commits(catalog, t) == before + 2
    assert doc["upgrades"] == ([upgrade] if upgrade else [])
    assert doc["column_mapping"] in ("id", "name")
    schema = independent_schema(catalog, t)
    assert "label" in schema and "v" not in schema and "score" not in schema

    # the independent reader reads the renamed column, old rows included (no rewrite)
    rows = sorted((r["id"], r["label"]) for r in read_rows(catalog, t))
    assert rows == [(1, "a"), (2, "b"), (3, "c")]

    # ingest after the rename (new name), then an upsert on the evolved table
    code, doc, err = run_json(cli, "ingest", t.name, "--files", land(tmp_path, "after", [
        {"id": 4, "note": "x", "n": 40, "f": 4.5, "amount": 4.5, "region": "us", "label": "d"}]), "--file-format", "json", "--no-dlq")  # fmt: skip
    assert code == 0 and doc["rows_written"] == 1, err
    fix = tmp_path / "fix.json"
    fix.write_text(
        json.dumps({"id": 1, "note": "fixed", "n": 11, "f": 1.5, "amount": 1.25, "region": "eu", "label": "A"}) + "\n"
    )
    code, doc, err = run_json(cli, "upsert", t.name, "--from", fix, "--key", "id", "--file-format", "json")
    assert code == 0 and doc["updated"] == 1, err
    rows = sorted((r["id"], r["label"], r["note"]) for r in read_rows(catalog, t))
    assert rows == [(1, "A", "fixed"), (2, "b", None), (3, "c", None), (4, "d", "x")]

    code, doc, err = run_json(cli, "describe", t.name)
    assert code == 0 and doc["column_mapping"] in ("id", "name"), err


@pytest.mark.notimpl("widen_column")
def test_widen_types(catalog, spark, ns, table_format):
    """In place: Iceberg's own type promotion; Delta's type widening (a protocol upgrade, hence ``yes``)."""
    t = make(catalog, spark, ns, table_format, "w")
    res = t.alter(widen={"n": "BIGINT", "f": "DOUBLE", "amount": "DECIMAL(10,2)"}, confirm=True)
    types = {c.name: c.type for c in res.schema}
    assert (types["n"], types["f"], types["amount"]) == ("BIGINT", "DOUBLE", "DECIMAL(10,2)")
    schema = {k: v.replace(" ", "") for k, v in independent_schema(catalog, t).items()}
    assert (schema["n"], schema["f"], schema["amount"]) == ("long", "double", "decimal(10,2)")
    spark.sql(
        f"INSERT INTO {t.spark_name} (id, n, f, amount, region, v) VALUES (3, 30000000000, 3.5, 12345678.5, 'eu', 'c')"
    )
    if table_format == "delta":
        # delta-rs neither reads nor writes the typeWidening reader feature: lakecat reads such a table through Spark
        with pytest.raises(Exception, match="(?i)typeWidening"):
            delta_arrow(t.location)
        rows = {r["id"]: r.asDict() for r in spark.read.format("delta").load(t.location).collect()}
    else:
        rows = {r["id"]: r for r in read_rows(catalog, t)}
    assert rows[3]["n"] == 30000000000 and rows[1]["n"] == 10 and float(rows[3]["amount"]) == 12345678.5


@pytest.mark.delta
def test_delta_widen_in_place_behind_yes_or_by_rewrite_for_every_reader(cli, catalog, spark, ns):
    # in place: the typeWidening protocol upgrade locks delta-rs out, so it needs --yes (exit 2 without, as column
    # mapping does), and says which readers and that --rewrite is the alternative
    t = make(catalog, spark, ns, "delta", "wy")
    before = metadata_commits(catalog, t)
    code, doc, err = run_json(cli, "alter", t.name, "--widen", "n=BIGINT")
    message = doc["error"]["message"]
    assert code == 2 and all(w in message for w in ("typeWidening", "delta-rs", "--rewrite", "--yes")), doc
    assert metadata_commits(catalog, t) == before
    code, doc, err = run_json(cli, "alter", t.name, "--widen", "n=BIGINT", "--yes")
    assert code == 0 and len(doc["upgrades"]) == 1 and "typeWidening" in doc["upgrades"][0], err
    described = run_json(cli, "describe", t.name)[1]
    assert {c["name"]: c["type"] for c in described["schema"]}["n"] == "BIGINT"
    assert described["properties"]["delta.enableTypeWidening"] == "true"
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (3, 30000000000, 3.5, 3.75, 'eu', 'c')")
    current = t.describe().current_version
    code, doc, err = run_json(cli, "timetravel", t.name, "--version", current)  # lakecat reads it through Spark
    assert code == 0 and sorted((r["id"], r["n"]) for r in doc["rows"]) == [(1, 10), (2, 20), (3, 30000000000)], err
    with pytest.raises(Exception, match="(?i)typeWidening"):  # delta-rs (the deltalake package) is locked out
        delta_arrow(t.location)

    # a rewrite would make NOT NULL columns nullable (Delta cannot set it back): exit 3, nothing changed
    code, doc, err = run_json(cli, "alter", t.name, "--widen", "f=DOUBLE", "--rewrite")
    assert code == 3 and "NOT NULL columns (id)" in doc["error"]["message"], doc

    # Delta refuses to rewrite a table with column mapping and the change data feed under a new schema: exit 3
    nullable = SCHEMA.replace(" NOT NULL", "")
    t = catalog.create_table(f"{ns}.wm", schema=nullable, format="delta")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 10, 1.5, 1.25, 'eu', 'a')")
    code, doc, err = run_json(cli, "alter", t.name, "--rename-column", "v=label", "--yes")
    assert code == 0 and doc["column_mapping"] == "name", err
    before = metadata_commits(catalog, t)
    code, doc, err = run_json(cli, "alter", t.name, "--set-comment", "n=x", "--widen", "n=BIGINT", "--rewrite")
    assert code == 3 and "column mapping and the change data feed" in doc["error"]["message"], doc
    assert metadata_commits(catalog, t) == before  # refused before the comment's commit

    # by rewrite: no protocol upgrade, no --yes; partitioning, comments and properties kept
    t = catalog.create_table(f"{ns}.wr", schema=nullable, format="delta", partition_by="region")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 10, 1.5, 1.25, 'eu', 'a'), (2, 20, 2.5, 2.5, 'us', 'b')")
    code, doc, err = run_json(cli, "alter", t.name, "--set-comment", "n=a count")
    assert code == 0, err
    code, doc, err = run_json(cli, "alter", t.name, "--widen", "id=INT", "--rewrite")
    assert code == 2 and "not a widening" in doc["error"]["message"], doc
    before, properties = metadata_commits(catalog, t), t.describe().properties
    code, doc, err = run_json(
        cli, "alter", t.name, "--widen", "n=BIGINT", "--widen", "f=DOUBLE", "--rewrite", "--dry-run"
    )
    assert code == 0 and doc["dry_run"] and doc["upgrades"] == [] and doc["rewrite_files"] == 2, doc
    assert {c["name"]: c["type"] for c in doc["schema"]}["n"] == "INT" and metadata_commits(catalog, t) == before
    code, doc, err = run_json(cli, "alter", t.name, "--widen", "n=BIGINT", "--widen", "f=DOUBLE", "--rewrite")
    assert code == 0 and doc["upgrades"] == [] and doc["rewrite_files"] == 2, err
    assert metadata_commits(catalog, t) == before + 1  # every widening in one commit
    by_name = {c["name"]: c for c in doc["schema"]}
    assert (by_name["n"]["type"], by_name["f"]["type"], by_name["n"]["comment"]) == ("BIGINT", "DOUBLE", "a count")
    assert doc["partitioning"] == ["region"]
    assert doc["properties"] == properties  # the change data feed stays on
    assert "typeWidening" not in (t.adapter.load(t).protocol().reader_features or [])
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (3, 30000000000, 3.5, 3.75, 'eu', 'c')")
    from deltalake import DeltaTable

    assert {f.name: str(f.type.type) for f in DeltaTable(t.location).schema().fields}["n"] == "long"
    arrow = delta_arrow(t.location)  # delta-rs reads the rewritten table, old rows and new
    assert str(arrow.schema.field("n").type) == "int64"
    assert sorted((r["id"], r["n"], r["v"]) for r in arrow.to_pylist()) == [
        (1, 10, "a"), (2, 20, "b"), (3, 30000000000, "c")]  # fmt: skip
    code, doc, err = run_json(cli, "changes", t.name, "--since", before + 1)  # the change data after the rewrite
    assert code == 0 and [(r["id"], r["_change_type"]) for r in doc["rows"]] == [(3, "insert")], doc


def test_bad_input_changes_nothing(cli, catalog, spark, ns, table_format):
    t = make(catalog, spark, ns, table_format, "b")
    before = metadata_commits(catalog, t)
    described = t.describe().to_dict()
    widens = t.adapter.supports("widen_column")  # a format without it refuses every widening first (exit 3)
    bad = [
        (["--widen", "n=SMALLINT"], 2 if widens else 3, "not a widening" if widens else "not supported"),
        (["--widen", "amount=DECIMAL(4,2)"], 2 if widens else 3, "not a widening" if widens else "not supported"),
        (["--widen", "v=BIGINT"], 2 if widens else 3, "not a widening" if widens else "not supported"),
        (["--rename-column", "v=n"], 2, "has a column n already"),
        (["--drop-column", "region"], 2, "partitioned by it"),
        (["--drop-column", "nosuch"], 2, "no column 'nosuch'"),
        (["--add-column", "n BIGINT"], 2, "has a column n already"),
        (["--add-column", "z INT NOT NULL"], 2, "has rows"),
        (["--add-column", "z INT AFTER nosuch"], 2, "no column 'nosuch'"),
        (["--add-column", "z WHATEVER"], 2, "unknown type"),
        (["--rename-column", "v"], 2, "old=new"),
        (["--partition-by", "nosuch"], 2, "no column"),
        (["--property", "a=b", "--add-column", "z INT"], 2, "not both"),
    ]
    for args, code, msg in bad:
        rc, doc, err = run_json(cli, "alter", t.name, *args, "--yes")
        assert rc == code, (args, doc, err)
        assert msg in doc["error"]["message"], (args, doc)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert metadata_commits(catalog, t) == before
    assert t.describe().to_dict()["schema"] == described["schema"]

    current = t.describe().current_version
    code, doc, err = run_json(cli, "tag", t.name, "v1")
    assert code == 0 and doc["version"] == current, err
    for args, code, msg in [
        (["tag", t.name, "v1"], 1, "already"),
        (["tag", t.name, "v2", "--version", "987654321"], 1, "does not exist"),
        (["tag", t.name, "bad name!"], 2, "invalid tag name"),
        (["tag", t.name, "v3", "--retain", "soon"], 2, "invalid duration"),
        (["untag", t.name, "nosuch"], 1, "no tag 'nosuch'"),
        (["timetravel", t.name, "--tag", "nosuch"], 1, "no tag 'nosuch'"),
        (["timetravel", t.name, "--tag", "v1", "--version", str(current)], 2, "not both"),
    ]:
        rc, doc, err = run_json(cli, *args)
        assert rc == code, (args, doc, err)
        assert msg in doc["error"]["message"], (args, doc)
    assert [r["name"] for r in run_json(cli, "tags", t.name)[1]["tags"]] == ["v1"]


# --- named versions ------------------------------------------------------------------------------
def test_tags_timetravel_changes_rollback(cli, catalog, spark, ns, table_format):
    t = catalog.create_table(f"{ns}.tg", schema="id BIGINT NOT NULL, v STRING", format=table_format)
    for i in range(3):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({i}, 'v{i}')")
    versions = [e.version for e in reversed(t.history().entries) if e.operation == "append"]

    code, doc, err = run_json(cli, "tag", t.name, "first", "--version", versions[0], "--retain", "30d")
    assert code == 0 and doc["version"] == versions[0] and doc["retain"] == "30d", err
    code, doc, err = run_json(cli, "tag", t.name, "second", "--version", versions[1])
    assert code == 0, err
    code, doc, err = run_json(cli, "tags", t.name)
    assert code == 0, err
    assert [(r["name"], r["version"], r["retain"]) for r in doc["tags"]] == [
        ("first", versions[0], "30d"),
        ("second", versions[1], None),
    ]
    if table_format == "iceberg":  # the tag is Iceberg's own ref, as pyiceberg (an independent reader) sees it
        refs = pyiceberg_catalog(catalog).load_table((t.entry.ident.namespace, t.entry.ident.name)).metadata.refs
        assert refs["first"].snapshot_id == versions[0] and refs["first"].max_ref_age_ms == 30 * 86400 * 1000
    described = run_json(cli, "describe", t.name)[1]
    assert [r["name"] for r in described["tags"]] == ["first", "second"]

    code, doc, err = run_json(cli, "timetravel", t.name, "--tag", "first", "--count")
    assert code == 0 and doc["count"] == 1 and doc["version"] == versions[0], err
    code, doc, err = run_json(cli, "changes", t.name, "--since-tag", "first", "--tag", "second")
    assert code == 0, err
    assert [(r["id"], r["_change_type"]) for r in doc["rows"]] == [(1, "insert")]
    code, doc, err = run_json(cli, "rollback", t.name, "--tag", "second", "--yes")
    assert code == 0 and doc["to_version"] == versions[1], err
    assert sorted(r["id"] for r in read_rows(catalog, t)) == [0, 1]

    code, doc, err = run_json(cli, "untag", t.name, "first")
    assert code == 0 and doc["version"] == versions[0], err
    assert [r["name"] for r in run_json(cli, "tags", t.name)[1]["tags"]] == ["second"]


def test_a_tagged_version_survives_expiry_and_orphan_cleanup(cli, catalog, spark, ns, table_format):
    t = catalog.create_table(f"{ns}.keep", schema="id BIGINT NOT NULL, v STRING", format=table_format)
    for i in range(3):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({i}, 'v{i}')")
    tagged = t.history().entries[0].version  # the third append
    code, _, err = run_json(cli, "tag", t.name, "keep", "--version", tagged)
    assert code == 0, err
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id < 2")  # the tagged version's files leave the current one
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (9, 'v9')")

    code, doc, err = run_json(cli, "expire", t.name, "--older-than", "0s", "--retain-last", "1", "--force")
    assert code == 0, err
    assert tagged in doc["retained_versions"] and tagged not in doc["expired_versions"] and doc["expired_versions"]
    code, doc, err = run_json(cli, "clean-orphans", t.name, "--older-than", "0s", "--force")
    if table_format == "iceberg" and is_connect(spark):
        # documented (README, docs/warm-engine.md): Iceberg's procedure refuses a window under 24 h, and the action API
        # lakecat uses for it in process is not reachable through Spark Connect: exit 3, one line, nothing removed
        assert code == 3 and "through Spark Connect" in err, err
    else:
        assert code == 0, err

    code, doc, err = run_json(cli, "timetravel", t.name, "--tag", "keep")
    assert code == 0, err
    assert sorted(r["id"] for r in doc["rows"]) == [0, 1, 2]
    if table_format == "delta":  # delta-rs reads the tagged version too
        assert sorted(r["id"] for r in delta_arrow(t.location, tagged).to_pylist()) == [0, 1, 2]
    assert sorted(r["id"] for r in read_rows(catalog, t)) == [2, 9]


@pytest.mark.notimpl("branches")
def test_branch_write_audit_publish(catalog, spark, ns, table_format):
    t = catalog.create_table(f"{ns}.wap", schema="id BIGINT NOT NULL, v STRING", format=table_format)
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'a')")
    res = t.branch("audit")
    assert res.version == t.describe().current_version
    staged = t.upsert(spark.createDataFrame([(1, "A"), (2, "b")], "id BIGINT, v STRING"), key="id", branch="audit")
    assert (staged.inserted, staged.updated) == (1, 1) and staged.version != res.version
    assert sorted((r["id"], r["v"]) for r in read_rows(catalog, t)) == [(1, "a")]  # main is untouched while audited
    assert t.on_branch("audit").to_spark().count() == 2
    assert [b.name for b in t.tags().branches] == ["audit"]
    published = t.publish("audit")
    assert published.current_version == t.describe().current_version
    assert sorted((r["id"], r["v"]) for r in read_rows(catalog, t)) == [(1, "A"), (2, "b")]


@pytest.mark.notimpl("branches")
def test_ingest_into_a_branch_then_publish(cli, catalog, spark, ns, table_format, tmp_path):
    """Write-audit-publish for streams: `ingest --branch` stages the events on the branch (main untouched, bad
    records dead-lettered), exactly once on the branch's lineage — also when the stream crashed before its
    checkpoint commit and an expiry removed the branch snapshot that carried its marker — and `publish` brings
    the audited rows to main."""
    t = catalog.create_table(f"{ns}.wapi", schema="id BIGINT NOT NULL, v STRING", format=table_format)
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (0, 'main')")
    t.branch("audit")
    landing = tmp_path / "landing"
    landing.mkdir()
    for f in range(3):
        rows = [json.dumps({"id": f * 10 + i, "v": f"e{i}"}) for i in range(1, 4)]
        (landing / f"part-{f}.json").write_text("\n".join(rows + (["not json"] if f == 0 else [])) + "\n")
    code, doc, err = run_json(cli, "ingest", t.name, "--files", str(landing), "--branch", "audit",
                              "--max-files-per-batch", "1")  # fmt: skip
    assert code == 0 and (doc["rows_written"], doc["rows_dead_lettered"], doc["branch"]) == (9, 1, "audit"), err
    staged = [0, 1, 2, 3, 11, 12, 13, 21, 22, 23]
    assert [r["id"] for r in read_rows(catalog, t)] == [0]  # main is untouched while the batches are audited
    assert read_branch_ids(catalog, t.name, "audit") == staged
    # the crash after the last table commit (its checkpoint lost the record of batch 2), then an auditor's write
    checkpoint = Path(doc["checkpoint"].removeprefix("file://"))
    for done in (checkpoint / "commits").glob("*2*"):
        done.unlink()
    spark.sql(f"INSERT INTO {t.on_branch('audit').spark_name} VALUES (99, 'auditor')")
    staged.append(99)
    # an expiry keeping one version must not cut the unpublished branch off from main
    code, exp, err = run_json(cli, "expire", t.name, "--retain-last", "1", "--older-than", "0s", "--force")
    assert code == 0 and exp["expired_versions"] == [], exp
    assert read_branch_ids(catalog, t.name, "audit") == staged
    code, doc, err = run_json(cli, "publish", t.name, "audit")
    assert code == 0, err
    assert sorted(r["id"] for r in read_rows(catalog, t)) == staged
    # published: now the expiry removes the snapshot that carried the stream's marker; the restart finds it saved
    code, exp, err = run_json(cli, "expire", t.name, "--retain-last", "1", "--older-than", "0s", "--force")
    assert code == 0 and len(exp["expired_versions"]) == 4, exp
    code, doc, err = run_json(cli, "ingest", t.name, "--files", str(landing), "--branch", "audit")
    assert code == 0 and doc["rows_written"] == 0 and doc["batches_skipped"] == 1, doc  # replayed, not doubled
    assert read_branch_ids(catalog, t.name, "audit") == staged
    code, doc, err = run_json(cli, "ingest", t.name, "--files", str(landing), "--branch", "nope")
    assert code == 1 and "no branch 'nope'" in doc["error"]["message"], doc  # nothing started


def test_branches_answer_exit_3_where_the_format_has_none(cli, catalog, spark, ns, table_format):
    t = catalog.create_table(f"{ns}.nb", schema="id BIGINT NOT NULL", format=table_format)
    if t.adapter.supports("branches"):
        pytest.skip(f"{table_format} has branches")
    for args in (["branch", t.name, "audit"], ["publish", t.name, "audit"]):
        code, doc, err = run_json(cli, *args)
        assert code == 3 and f"not supported for {table_format} tables" in doc["error"]["message"], doc
        assert "branches" in doc["error"]["message"]


# --- partition evolution -------------------------------------------------------------------------
def test_partition_evolution(cli, catalog, spark, ns, table_format):
    # nullable id: Delta refuses to rewrite NOT NULL columns (test_layouts)
    t = catalog.create_table(f"{ns}.p", schema="id BIGINT, ts TIMESTAMP, region STRING, kind STRING",
                             format=table_format, partition_by="region")  # fmt: skip
    for i in range(3):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({i}, TIMESTAMP'2026-01-0{i + 1} 10:00:00', 'eu', 'k{i % 2}')")
    # in place (Iceberg) a rewrite would be ignored, so it is refused; else (Delta) only a rewrite changes it
    in_place = t.adapter.partition_evolution_in_place
    code, doc, err = run_json(cli, "alter", t.name, "--partition-by", "kind", *(("--rewrite",) if in_place else ()))
    if in_place:
        assert code == 2 and "changes partitioning in place" in doc["error"]["message"], doc
    else:
        assert code == 3 and "--rewrite" in doc["error"]["message"], doc
    rewrite = () if in_place else ("--rewrite",)
    code, doc, err = run_json(cli, "alter", t.name, "--partition-by", "kind", *rewrite, "--dry-run")
    assert code == 0 and doc["dry_run"] is True and doc["partitioning"] == ["region"], err
    if not in_place:
        assert doc["rewrite_files"] == 3 and doc["rewrite_bytes"] > 0
    code, doc, err = run_json(cli, "alter", t.name, "--partition-by", "kind", *rewrite)
    assert code == 0 and doc["partitioning"] == ["kind"], err
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (7, TIMESTAMP'2026-01-05 10:00:00', 'us', 'k1')")
    assert sorted(r["id"] for r in read_rows(catalog, t)) == [0, 1, 2, 7]
    d = run_json(cli, "describe", t.name)[1]
    if t.adapter.partition_evolution_in_place:  # the old layout stays for old files: the spec history shows both
        assert [s["fields"] for s in d["partition_specs"]] == [["region"], ["kind"]]
    res = t.compact(target_file_size="1MB")  # compaction works per spec
    assert res.files_after <= res.files_before
    assert sorted(r["id"] for r in read_rows(catalog, t)) == [0, 1, 2, 7]


def test_unsupported_parts_are_refused_before_any_change(catalog, spark, ns, table_format):
    t = catalog.create_table(f"{ns}.u", schema="id BIGINT NOT NULL, n INT, ts TIMESTAMP", format=table_format,
                             partition_by="days(ts)")  # fmt: skip
    before = t.describe().to_dict()
    if t.adapter.supports("widen_by_rewrite"):  # Delta: an overwrite makes every column nullable (id is NOT NULL)
        with pytest.raises(UnsupportedOperationError, match=r"alter\(widen, rewrite=True\) on a table with NOT NULL"):
            t.alter(add_columns=["z INT"], widen={"n": "BIGINT"}, rewrite=True)
    else:  # a format that widens in place for every reader has nothing to rewrite: a usage error
        with pytest.raises(InvalidArgumentError, match="nothing to rewrite"):
            t.alter(add_columns=["z INT"], widen={"n": "BIGINT"}, rewrite=True)
    assert t.describe().to_dict()["schema"] == before["schema"]


# --- every rewrite keeps the schema exactly, or refuses ----------------------------------------------------------
def schema_facts(catalog, t) -> tuple[list, dict]:
    """Every column as the independent reader has it (Iceberg: id, name, type, required, doc; Delta: name, type,
    nullable and the field's metadata: comment, generation expression, column mapping id and physical name) and the
    table's properties."""
    entry = catalog.entry(t.name)
    if entry.format == "iceberg":
        tbl = pyiceberg_catalog(catalog).load_table((entry.ident.namespace, entry.ident.name))
        return [(f.field_id, f.name, str(f.field_type), f.required, f.doc) for f in tbl.schema().fields], dict(
            tbl.properties)  # fmt: skip
    from deltalake import DeltaTable

    dt = DeltaTable(entry.location)
    fields = [(f.name, str(f.type), f.nullable, dict(f.metadata)) for f in dt.schema().fields]
    return fields, dict(dt.metadata().configuration)


def test_rewrites_keep_the_schema_or_refuse(cli, catalog, spark, ns, table_format):
    """Partition evolution, widening and compaction on a table with NOT NULL and comments: the schema is the same
    after (Iceberg: in place, field ids and all), or the change is refused with exit 3 and nothing changes (Delta:
    an overwrite makes every column nullable)."""
    t = catalog.create_table(f"{ns}.keep_schema", format=table_format, partition_by="region",
                             schema="id BIGINT NOT NULL COMMENT 'the key', n INT COMMENT 'a count', kind STRING, "
                                    "region STRING")  # fmt: skip
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 10, 'a', 'eu'), (2, 20, 'b', 'us'), (3, 30, 'a', 'eu')")
    rows = sorted((r["id"], r["n"], r["kind"]) for r in read_rows(catalog, t))
    fields, properties = schema_facts(catalog, t)
    version = t.describe().current_version
    in_place = t.adapter.partition_evolution_in_place
    code, doc, err = run_json(cli, "alter", t.name, "--partition-by", "kind", *(() if in_place else ("--rewrite",)))
    if in_place:
        assert code == 0 and doc["partitioning"] == ["kind"], err
    else:
        assert code == 3 and "NOT NULL columns (id)" in doc["error"]["message"], doc
        assert t.describe().current_version == version
    assert schema_facts(catalog, t) == (fields, properties)
    widen = ("--widen", "n=BIGINT", "--rewrite") if t.adapter.supports("widen_by_rewrite") else ("--widen", "n=BIGINT")
    code, doc, err = run_json(cli, "alter", t.name, *widen)
    if t.adapter.supports("widen_by_rewrite"):
        assert code == 3 and "NOT NULL columns (id)" in doc["error"]["message"], doc
        assert schema_facts(catalog, t) == (fields, properties)
    else:  # in place: only n's type changes
        assert code == 0, err
        after, after_properties = schema_facts(catalog, t)
        assert after == [(i, c, "long" if c == "n" else kind, req, d) for i, c, kind, req, d in fields]
        assert after_properties == properties
        fields = after
    t.compact(target_file_size="1MB")
    assert schema_facts(catalog, t) == (fields, properties)
    assert sorted((r["id"], r["n"], r["kind"]) for r in read_rows(catalog, t)) == rows


@pytest.mark.delta
def test_delta_rewrites_keep_comments_generated_columns_column_ids_and_properties(cli, catalog, spark, ns):
    from deltalake import DeltaTable

    # a generated partition column (days(ts)), comments, column mapping (a rename), the change data feed, a CHECK
    t = catalog.create_table(f"{ns}.keep_all", format="delta", partition_by="days(ts)", properties={"team": "data"},
                             schema="id BIGINT COMMENT 'the key', ts TIMESTAMP, kind STRING, v STRING")  # fmt: skip
    spark.sql(f"INSERT INTO {t.spark_name} (id, ts, kind, v) VALUES (1, TIMESTAMP'2026-01-01 10:00:00', 'a', 'x'), "
              "(2, TIMESTAMP'2026-01-02 11:00:00', 'b', 'y')")  # fmt: skip
    spark.sql(f"ALTER TABLE {t.spark_name} ADD CONSTRAINT positive CHECK (id > 0)")
    assert run_json(cli, "alter", t.name, "--rename-column", "v=label", "--yes")[0] == 0
    rows = sorted(map(tuple, delta_arrow(t.location).to_pylist()), key=str)
    fields, properties = schema_facts(catalog, t)
    assert any(m.get("delta.generationExpression") for *_, m in fields)
    code, doc, err = run_json(cli, "alter", t.name, "--partition-by", "kind", "--rewrite")
    assert code == 0 and doc["partitioning"] == ["kind"], err
    assert DeltaTable(t.location).metadata().partition_columns == ["kind"]
    assert schema_facts(catalog, t) == (fields, properties)  # ids, physical names, generation, comments, CHECK
    assert sorted(map(tuple, delta_arrow(t.location).to_pylist()), key=str) == rows
    spark.sql(f"INSERT INTO {t.spark_name} (id, ts, kind, label) VALUES (3, TIMESTAMP'2026-01-03 12:00:00', 'a', 'z')")
    generated = next(n for n, *_, m in fields if m.get("delta.generationExpression"))
    new = [r for r in delta_arrow(t.location).to_pylist() if r["id"] == 3][0]
    assert str(new[generated]).startswith("2026-01-03"), new  # still generated
    with pytest.raises(Exception, match="(?i)positive|CHECK"):  # the constraint still holds
        spark.sql(
            f"INSERT INTO {t.spark_name} (id, ts, kind, label) VALUES (-1, TIMESTAMP'2026-01-03 12:00:00', 'a', 'z')"
        )

    # widening by rewrite: the generated column and the comments stay; a column a generation expression uses is refused
    w = catalog.create_table(f"{ns}.widen_gen", format="delta", partition_by="days(ts)",
                             schema="id BIGINT COMMENT 'the key', n INT COMMENT 'a count', ts TIMESTAMP")  # fmt: skip
    spark.sql(f"INSERT INTO {w.spark_name} (id, n, ts) VALUES (1, 10, TIMESTAMP'2026-01-01 10:00:00')")
    fields, properties = schema_facts(catalog, w)
    code, doc, err = run_json(cli, "alter", w.name, "--widen", "n=BIGINT", "--rewrite")
    assert code == 0, err
    assert schema_facts(catalog, w) == ([(c, "PrimitiveType(\"long\")" if c == "n" else k, nl, m)
                                         for c, k, nl, m in fields], properties)  # fmt: skip
    code, doc, err = run_json(cli, "alter", w.name, "--widen", "ts=TIMESTAMP_NTZ", "--rewrite")
    assert code == 2, doc  # not a widening: refused before the generated column is looked at
    location = str(Path(catalog.entry(w.name).location).parent / "uses_n")
    spark.sql(f"CREATE TABLE delta.`{location}` (id BIGINT, n INT, twice INT GENERATED ALWAYS AS (n * 2)) "
              "USING delta")  # fmt: skip
    spark.sql(f"INSERT INTO delta.`{location}` (id, n) VALUES (1, 10)")
    catalog.register_table(f"{ns}.uses_n", location=location)
    version = DeltaTable(location).version()
    code, doc, err = run_json(cli, "alter", f"{ns}.uses_n", "--widen", "n=BIGINT", "--rewrite")
    assert code == 3 and "twice = n * 2" in doc["error"]["message"], doc
    assert DeltaTable(location).version() == version
