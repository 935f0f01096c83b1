"""Table layouts on both formats: clustering keys (create / alter / describe), Iceberg format version 3, deletion
vectors — and that upsert, CDC ingest and deletes then mark rows instead of rewriting files while Spark, pyiceberg
and delta-rs read exactly the same rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import pyiceberg_catalog

from lakecat.config import load_config_file
from lakecat.errors import ConfigError

pytestmark = pytest.mark.spark

SCHEMA = "id BIGINT NOT NULL, name STRING, region STRING, ts TIMESTAMP"


def describe(lakecat, name: str) -> dict:
    code, out, err = lakecat("describe", name, "--json")
    assert code == 0, err
    return json.loads(out)


# --- refusals before any engine starts ---------------------------------------------------------
@pytest.mark.parametrize(
    ("fmt", "flags", "words", "exit_code"),
    [
        ("delta", ("--cluster-by", "id", "--partition-by", "region"), "replaces partitioning", 2),  # a combination
        ("delta", ("--format-version", "3"), "not supported for delta tables — it is Iceberg's", 3),
        ("delta", ("--cluster-by", "zorder(id, region)"), "picks its own", 3),
        ("delta", ("--cluster-by", "id, name, region, ts, id2"), "no column 'id2'", 2),
        ("delta", ("--cluster-by", "id, name, region, ts"), None, 2),  # 4 keys: allowed (checked below with a fifth)
        ("iceberg", ("--format-version", "4"), "format version 2 or 3", 2),
        ("iceberg", ("--cluster-by", "zorder(id)"), "two or more columns", 2),
        ("iceberg", ("--cluster-by", "days(ts)"), "plain columns", 2),
        ("iceberg", ("--cluster-by", "id, id"), "appears twice", 2),
        ("iceberg", ("--cluster-by", "nope"), "no column 'nope'", 2),
    ],
)
def test_create_refuses_a_layout_with_a_sentence(lakecat, ns, fmt, flags, words, exit_code):
    if words is None:  # a fifth key on Delta
        code, _, err = lakecat("create", f"{ns}.t", "--format", fmt, "--schema", SCHEMA + ", k INT",
                               "--cluster-by", "id, name, region, ts, k")  # fmt: skip
        assert code == 2 and "at most 4" in err, err
        return
    code, _, err = lakecat("create", f"{ns}.t", "--format", fmt, "--schema", SCHEMA, *flags)
    assert code == exit_code, err
    assert words in err, err
    code, out, _ = lakecat("list", ns, "--json")
    assert json.loads(out) == []  # nothing was created


def test_tables_section_of_the_catalog_config(tmp_path):
    base = 'name = "x"\nwarehouse = "/tmp/w"\nmetastore = "sqlite:////tmp/w.db"\n'
    cfg = tmp_path / "x.toml"
    cfg.write_text(base + "[tables]\nformat-version = 3\ndeletion-vectors = true\n")
    loaded = load_config_file(cfg)
    assert (loaded.default_format_version, loaded.default_deletion_vectors) == (3, True)
    assert "tables" not in loaded.format_options
    for bad, words in (("format-version = 4", "2 or 3"), ("deletion-vectors = 'yes'", "true or false"),
                       ("zorder = true", r"unknown \[tables\] key")):  # fmt: skip
        cfg.write_text(base + f"[tables]\n{bad}\n")
        with pytest.raises(ConfigError, match=words):
            load_config_file(cfg)


# --- clustering: create, alter, describe -------------------------------------------------------
def test_clustering_create_alter_describe(lakecat, light_cli, catalog, spark, ns, table_format):
    name = f"{ns}.clustered"
    partition = ("--partition-by", "days(ts)") if table_format == "iceberg" else ()  # Iceberg: both at once
    code, _, err = lakecat("create", name, "--format", table_format, "--schema", SCHEMA, "--cluster-by", "region, id",
                           *partition)  # fmt: skip
    assert code == 0, err
    d = light_cli("describe", name)  # answered without a JVM
    assert d["clustering"] == ["region", "id"]
    assert d["deletion_vectors"] is False and d["delete_mode"] == "copy-on-write"
    t = catalog.load_table(name)
    if table_format == "iceberg":
        assert d["format_version"] == 2 and d["clustering_method"] == "sort"
        assert d["sort_order"] == ["region ASC NULLS FIRST", "id ASC NULLS FIRST"]
        tbl = pyiceberg_catalog(catalog).load_table((ns, "clustered"))  # the independent reader agrees
        assert [tbl.schema().find_column_name(f.source_id) for f in tbl.sort_order().fields] == ["region", "id"]
    else:
        assert d["clustering_method"] == "liquid" and "clustering" in d["table_features"]
        detail = spark.sql(f"DESCRIBE DETAIL {t.spark_name}").collect()[0]
        assert list(detail["clusteringColumns"]) == ["region", "id"]
        assert d["format_version"] == detail["minWriterVersion"]
    code, _, err = lakecat("describe", name)
    assert "clustering:   region, id" in err or "clustering:   region, id" in _, err

    code, out, err = lakecat("alter", name, "--cluster-by", "id", "--json")
    assert code == 0, err
    assert json.loads(out)["clustering"] == ["id"]
    if table_format == "iceberg":
        code, out, err = lakecat("alter", name, "--cluster-by", "zorder(id, region)", "--json")
        assert code == 0, err
        d = describe(lakecat, name)
        assert (d["clustering"], d["clustering_method"], d["sort_order"]) == (["id", "region"], "zorder", [])
    else:
        code, _, err = lakecat("alter", name, "--cluster-by", "zorder(id, region)")
        assert code == 3 and "picks its own" in err, err
    code, out, err = lakecat("alter", name, "--cluster-by", "none", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["dry_run"] and describe(lakecat, name)["clustering"], err
    code, out, err = lakecat("alter", name, "--cluster-by", "none", "--json")
    assert code == 0, err
    assert describe(lakecat, name)["clustering"] == []
    code, _, err = lakecat("alter", name, "--cluster-by", "id", "--add-column", "x INT")
    assert code == 2 and "an alter of their own" in err, err


def test_delta_refuses_clustering_a_partitioned_table(lakecat, ns):
    name = f"{ns}.parted"
    code, _, err = lakecat("create", name, "--format", "delta", "--schema", SCHEMA, "--partition-by", "region")
    assert code == 0, err
    code, _, err = lakecat("alter", name, "--cluster-by", "id")
    assert code == 2 and "partitioned" in err, err
    assert describe(lakecat, name)["clustering"] == []


def test_iceberg_clustering_keys_follow_renames_and_drops(lakecat, ns):
    name = f"{ns}.keys"
    code, _, err = lakecat("create", name, "--format", "iceberg", "--schema", SCHEMA + ", k INT",
                           "--cluster-by", "zorder(region, name, id)")  # fmt: skip
    assert code == 0, err
    for args, clustering, method in (
        (("--rename-column", "name=label"), ["region", "label", "id"], "zorder"),
        (("--drop-column", "label"), ["region", "id"], "zorder"),
        (("--drop-column", "id"), ["region"], "sort"),  # one key left: a sort by it
        (("--drop-column", "region"), [], None),  # a sort key (Iceberg refuses to drop it while the order uses it)
    ):
        code, _, err = lakecat("alter", name, *args)
        assert code == 0, (args, err)
        d = describe(lakecat, name)
        assert (d["clustering"], d["clustering_method"]) == (clustering, method), (args, d)
    assert d["sort_order"] == [] and "lakecat.clustering" not in d["properties"]
    # a key another engine renamed or dropped is left out when the property is read back, not an error
    code, _, err = lakecat("alter", name, "--property", "lakecat.clustering=zorder(ts, gone, k)")
    assert code == 0, err
    assert describe(lakecat, name)["clustering"] == ["ts", "k"]
    code, out, err = lakecat("health", name, "--json")
    assert code == 0 and json.loads(out)["tables"][0]["clustering"] == ["ts", "k"], (out, err)


def test_delta_clustering_keys_under_column_mapping(lakecat, catalog, spark, ns):
    name = f"{ns}.mapped"
    code, _, err = lakecat("create", name, "--format", "delta", "--schema", SCHEMA, "--cluster-by", "region, id",
                           "--property", "delta.columnMapping.mode=name")  # fmt: skip
    assert code == 0, err
    t = catalog.load_table(name)
    for first in (0, 5):  # one file each (Spark writes a file per task), with overlapping key ranges
        spark.sql(f"INSERT INTO {t.spark_name} SELECT /*+ COALESCE(1) */ id, 'n', IF(id % 2 = 0, 'eu', 'us'), "
                  f"CAST(NULL AS TIMESTAMP) FROM range({first}, {first + 10})")  # fmt: skip
    log = Path(t.location.removeprefix("file://"), "_delta_log")
    actions = [json.loads(line) for f in sorted(log.glob("*.json")) for line in f.read_text().splitlines()]
    logged = [a["domainMetadata"] for a in actions if a.get("domainMetadata", {}).get("domain") == "delta.clustering"]
    physical = json.loads(logged[-1]["configuration"])["clusteringColumns"]
    assert all(path[0].startswith("col-") for path in physical), physical  # the log names the physical columns
    d = describe(lakecat, name)
    detail = spark.sql(f"DESCRIBE DETAIL {t.spark_name}").collect()[0]
    assert d["clustering"] == list(detail["clusteringColumns"]) == ["region", "id"]
    code, out, err = lakecat("health", name, "--json")
    h = json.loads(out)["tables"][0]
    assert code == 0 and h["clustering"] == ["region", "id"], (out, err)
    assert h["overlapping_files"] == 2, h  # the files' statistics were found for the logical keys


# --- deletion vectors: every writer marks rows, every reader sees the same rows ----------------------
def _spark_rows(catalog, name: str) -> list[tuple]:
    t = catalog.load_table(name)
    return sorted(tuple(r) for r in t.adapter.read_current(t).select("id", "name", "region").collect())


def _independent_rows(catalog, name: str) -> list[tuple]:
    """pyiceberg's scan (it applies v3 deletion vectors and v2 position deletes); delta-rs's DataFusion reader (its
    pyarrow-dataset reader refuses deletion vectors)."""
    import pyarrow as pa

    entry = catalog.entry(name)
    if entry.format == "iceberg":
        arrow = pyiceberg_catalog(catalog).load_table((entry.ident.namespace, entry.ident.name)).scan().to_arrow()
    else:
        from deltalake import DeltaTable, QueryBuilder

        reader = QueryBuilder().register("t", DeltaTable(entry.location)).execute("SELECT * FROM t")
        arrow = pa.RecordBatchReader.from_stream(reader).read_all()
    return sorted((r["id"], r["name"], r["region"]) for r in arrow.select(["id", "name", "region"]).to_pylist())


def _assert_marked(catalog, name: str, kind: str) -> None:
    """The table's last commit marked rows: no data file left the table, and a deletion vector (Delta, Iceberg v3)
    or a position delete file (Iceberg v2) was written."""
    entry = catalog.entry(name)
    if entry.format == "iceberg":
        tbl = pyiceberg_catalog(catalog).load_table((entry.ident.namespace, entry.ident.name))
        summary = tbl.current_snapshot().summary.additional_properties
        assert int(summary.get("deleted-data-files", 0)) == 0, summary
        marks = "added-dvs" if kind == "deletion vectors" else "added-position-delete-files"
        assert int(summary.get(marks, 0)) >= 1, summary
        return
    from deltalake import DeltaTable

    version = DeltaTable(entry.location).version()
    actions = [json.loads(line) for line in
               (Path(entry.location.removeprefix("file://")) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]  # fmt: skip
    adds = {a["add"]["path"]: a["add"] for a in actions if "add" in a}
    removed = [a["remove"]["path"] for a in actions if "remove" in a]
    assert any(a.get("deletionVector") for a in adds.values()), actions
    assert all(adds.get(p, {}).get("deletionVector") for p in removed), removed  # each one re-added with its marks


def _debezium(op: str, before: dict | None, after: dict | None, ts_ms: int) -> str:
    return json.dumps({"before": before, "after": after, "op": op, "ts_ms": ts_ms, "source": {"table": "t"}})


@pytest.mark.parametrize(("fmt", "version"), [("delta", None), ("iceberg", 3), ("iceberg", 2)],
                         ids=["delta", "iceberg-v3", "iceberg-v2"])  # fmt: skip
def test_deletion_vectors_mark_rows_and_readers_agree(lakecat, catalog, spark, ns, tmp_path, fmt, version):
    name = f"{ns}.dv"
    flags = ("--format-version", str(version)) if version else ()
    code, out, err = lakecat(
        "create", name, "--format", fmt, "--schema", SCHEMA, "--deletion-vectors", *flags, "--json"
    )
    assert code == 0, err
    created = json.loads(out)
    kind = "position deletes" if version == 2 else "deletion vectors"
    assert (created["deletion_vectors"], created["delete_mode"]) == (True, kind)
    if version:
        assert created["format_version"] == version
    else:
        assert "deletionVectors" in created["table_features"]
    rows = [(i, f"n{i}", ("eu", "us")[i % 2], None) for i in range(40)]
    t = catalog.load_table(name)
    df = spark.createDataFrame(rows, "id BIGINT, name STRING, region STRING, ts TIMESTAMP").coalesce(1)
    if fmt == "iceberg":
        df.writeTo(t.spark_name).append()
    else:
        df.write.format("delta").mode("append").save(t.location)

    # upsert: two updates, one delete, one insert
    src = tmp_path / "changes"
    src.mkdir()
    (src / "a.json").write_text("\n".join(json.dumps(r) for r in [
        {"id": 1, "name": "one", "region": "eu", "op": "U"}, {"id": 2, "name": "two", "region": "us", "op": "U"},
        {"id": 3, "name": None, "region": None, "op": "D"}, {"id": 100, "name": "new", "region": "ap", "op": "I"},
    ]) + "\n")  # fmt: skip
    code, out, err = lakecat("upsert", name, "--from", str(src), "--file-format", "json", "--key", "id",
                             "--delete-when", "op = 'D'", "--json")  # fmt: skip
    assert code == 0, err
    _assert_marked(catalog, name, kind)
    want = sorted([(i, f"n{i}", ("eu", "us")[i % 2]) for i in range(4, 40)] + [(1, "one", "eu"), (2, "two", "us"),
                                                                                (0, "n0", "eu"), (100, "new", "ap")])  # fmt: skip
    assert _spark_rows(catalog, name) == want
    assert _independent_rows(catalog, name) == want
    if version == 2:
        return  # the CDC path below is the same MERGE; once per delete kind is enough

    # CDC ingest: a delete and an update, from landed Debezium files
    landing = tmp_path / "cdc"
    landing.mkdir()
    (landing / "e.json").write_text("\n".join([
        _debezium("d", {"id": 5, "name": "n5", "region": "us"}, None, 1000),
        _debezium("u", {"id": 6, "name": "n6", "region": "eu"}, {"id": 6, "name": "six", "region": "eu"}, 1001),
    ]) + "\n")  # fmt: skip
    code, out, err = lakecat("ingest", name, "--files", str(landing), "--cdc", "debezium", "--key", "id", "--json")
    assert code == 0, err
    _assert_marked(catalog, name, kind)
    want = sorted([r for r in want if r[0] not in (5, 6)] + [(6, "six", "eu")])
    assert _spark_rows(catalog, name) == want
    assert _independent_rows(catalog, name) == want

    # and off again: the next delete rewrites the file (copy-on-write), the rows still agree
    code, out, err = lakecat("alter", name, "--deletion-vectors", "off", "--json")
    assert code == 0 and json.loads(out)["deletion_vectors"] is False, err
    assert describe(lakecat, name)["delete_mode"] == "copy-on-write"
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 7")
    want = [r for r in want if r[0] != 7]
    assert _spark_rows(catalog, name) == _independent_rows(catalog, name) == want


def test_alter_deletion_vectors_on_and_config_default(lakecat, catalog, ns, table_format, monkeypatch):
    name = f"{ns}.later"
    code, _, err = lakecat("create", name, "--format", table_format, "--schema", SCHEMA)
    assert code == 0, err
    code, _, err = lakecat("alter", name, "--deletion-vectors", "maybe")
    assert code == 2 and "use on or off" in err, err
    code, out, err = lakecat("alter", name, "--deletion-vectors", "on", "--json")
    assert code == 0 and json.loads(out)["deletion_vectors"] is True, err
    code, out, err = lakecat("alter", name, "--cluster-by", "region", "--json")  # keys on a table created without
    assert code == 0 and json.loads(out)["clustering"] == ["region"], err
    # the catalog config's [tables] defaults, and a flag that overrides them
    monkeypatch.setattr(catalog.config, "default_deletion_vectors", True)
    monkeypatch.setattr(catalog.config, "default_format_version", 3)
    d = catalog.create_table(f"{ns}.byconfig", schema=SCHEMA, format=table_format).describe()
    assert d.deletion_vectors is True
    if table_format == "iceberg":
        assert d.format_version == 3 and d.delete_mode == "deletion vectors"
    d = catalog.create_table(f"{ns}.byflag", schema=SCHEMA, format=table_format, deletion_vectors=False).describe()
    assert d.deletion_vectors is False


# --- Delta: a partition rewrite never drops NOT NULL silently --------------------------------------------
def test_delta_partition_rewrite_refuses_not_null_columns(lakecat, catalog, spark, ns):
    from deltalake import DeltaTable

    name = f"{ns}.nn"
    code, _, err = lakecat("create", name, "--format", "delta", "--schema", "id BIGINT NOT NULL, region STRING")
    assert code == 0, err
    t = catalog.load_table(name)
    spark.createDataFrame([(1, "eu"), (2, "us")], "id BIGINT, region STRING").write.format("delta").mode(
        "append").save(t.location)  # fmt: skip
    version = DeltaTable(t.location).version()
    for dry_run in (("--dry-run",), ()):
        code, out, err = lakecat("alter", name, "--partition-by", "region", "--rewrite", *dry_run, "--json")
        assert code == 3, err
        assert "NOT NULL columns (id)" in json.loads(out)["error"]["message"]
    d = describe(lakecat, name)
    assert (d["partitioning"], [c["nullable"] for c in d["schema"]]) == ([], [False, True])
    assert DeltaTable(t.location).version() == version  # nothing committed


# --- Iceberg v3: pyiceberg reads it but does not write it; metadata changes go through Spark ------------
def test_iceberg_v3_metadata_changes(lakecat, catalog, spark, ns):
    name = f"{ns}.v3"
    code, _, err = lakecat("create", name, "--format", "iceberg", "--schema", SCHEMA, "--format-version", "3")
    assert code == 0, err
    t = catalog.load_table(name)
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'a', 'eu', NULL)")
    for args in (("--property", "team=sales"), ("--add-column", "x INT AFTER id"), ("--rename-column", "name=label"),
                 ("--partition-by", "region"), ("--cluster-by", "id")):  # fmt: skip
        code, _, err = lakecat("alter", name, *args)
        assert code == 0, (args, err)
    code, _, err = lakecat("tag", name, "first")
    assert code == 0, err
    d = describe(lakecat, name)
    assert d["format_version"] == 3 and d["properties"]["team"] == "sales"
    assert [c["name"] for c in d["schema"]] == ["id", "x", "label", "region", "ts"]
    assert (d["partitioning"], d["clustering"], [r["name"] for r in d["tags"]]) == (["region"], ["id"], ["first"])
    tbl = pyiceberg_catalog(catalog).load_table((ns, "v3"))  # the independent reader sees the same table
    assert tbl.format_version == 3 and [f.name for f in tbl.schema().fields][:3] == ["id", "x", "label"]
    assert tbl.scan().to_arrow().to_pylist() == [{"id": 1, "x": None, "label": "a", "region": "eu", "ts": None}]
    # a sort key's column is dropped with its key (through Spark on version 3)
    code, _, err = lakecat("alter", name, "--drop-column", "id")
    assert code == 0, err
    d = describe(lakecat, name)
    assert (d["clustering"], d["sort_order"], [c["name"] for c in d["schema"]]) == (
        [],
        [],
        ["x", "label", "region", "ts"],
    )
