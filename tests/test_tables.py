"""create / list / describe / drop on both formats, checked with independent readers."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.spark

SCHEMA = "id BIGINT NOT NULL, ts TIMESTAMP, region STRING, amount DECIMAL(10,2)"


def test_create_partitioned_table(cli, catalog, ns, table_format):
    name = f"{ns}.orders"
    code, out, err = cli("create", name, "--format", table_format, "--schema", SCHEMA,
                         "--partition-by", "days(ts), region", "--property", "lakecat.expire.retain-last=5", "--json")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["name"] == name and doc["format"] == table_format
    assert doc["partitioning"] == ["days(ts)", "region"]
    assert doc["properties"]["lakecat.expire.retain-last"] == "5"
    assert [c["name"] for c in doc["schema"]][:4] == ["id", "ts", "region", "amount"]
    assert doc["schema"][0] == {"name": "id", "type": "BIGINT", "nullable": False, "comment": None, "generated": None}
    assert doc["files"] == 0 and doc["size_bytes"] == 0
    assert doc["capabilities"]["time_travel"] is True

    entry = catalog.entry(name)
    if table_format == "iceberg":  # independent reader: pyiceberg over the same SQLite catalog, same name
        from pyiceberg.catalog.sql import SqlCatalog

        pc = SqlCatalog("local", uri=catalog.config.metastore.sqlalchemy_url, warehouse=catalog.config.warehouse_uri)
        tbl = pc.load_table((ns, "orders"))
        assert [(f.name, str(f.transform)) for f in tbl.spec().fields] == [("ts_day", "day"), ("region", "identity")]
        assert tbl.schema().find_field("id").required
    else:  # independent reader: delta-rs
        from deltalake import DeltaTable

        dt = DeltaTable(entry.location)
        assert dt.metadata().partition_columns == ["ts_day", "region"]
        assert dt.metadata().configuration["delta.enableChangeDataFeed"] == "true"
        gen = {f.name: f.metadata.get("delta.generationExpression") for f in dt.schema().fields}
        assert gen["ts_day"] == "CAST(`ts` AS DATE)"

    code, out, _ = cli("list", ns, "--json")
    assert code == 0
    assert json.loads(out) == [{"name": name, "format": table_format, "location": entry.location, "mirrors": []}]


def test_list_shows_both_formats(cli, catalog, ns):
    catalog.create_table(f"{ns}.ice", schema="id BIGINT", format="iceberg")
    catalog.create_table(f"{ns}.dl", schema="id BIGINT", format="delta")
    code, out, _ = cli("list", ns, "--json")
    assert code == 0
    assert [(t["name"], t["format"]) for t in json.loads(out)] == [(f"{ns}.dl", "delta"), (f"{ns}.ice", "iceberg")]
    code, out, _ = cli("list", ns, "--format", "delta", "--json")
    assert [t["name"] for t in json.loads(out)] == [f"{ns}.dl"]
    code, out, _ = cli("list", ns)
    assert f"{ns}.dl" in out and "iceberg" in out


def test_bucket_and_truncate(catalog, ns, table_format):
    spec = ["bucket(4, id)", "truncate(2, region)"]
    if table_format == "delta":
        with pytest.raises(lakecat_errors().UnsupportedOperationError, match="not supported for delta tables"):
            catalog.create_table(f"{ns}.b", schema=SCHEMA, format=table_format, partition_by=spec)
        assert not catalog.table_exists(f"{ns}.b")
        spec = ["truncate(2, region)"]
    t = catalog.create_table(f"{ns}.b", schema=SCHEMA, format=table_format, partition_by=spec)
    assert t.describe().partitioning == spec


def lakecat_errors():
    import lakecat.errors

    return lakecat.errors


def test_describe_counts_files_and_rows(catalog, spark, ns, table_format):
    t = catalog.create_table(f"{ns}.d", schema=SCHEMA, format=table_format, partition_by="region")
    spark.sql(f"INSERT INTO {t.spark_name} (id, ts, region, amount) VALUES "
              "(1, TIMESTAMP'2026-01-01 10:00:00', 'eu', 1.50), (2, TIMESTAMP'2026-01-02 10:00:00', 'us', 2.00)")  # fmt: skip
    d = t.describe()
    assert d.files == 2 and d.size_bytes > 0 and d.records == 2
    assert d.current_version is not None


def test_delta_generated_partition_prunes_on_source_column(catalog, spark, ns):
    t = catalog.create_table(f"{ns}.p", schema=SCHEMA, format="delta", partition_by="days(ts)")
    for day in (1, 2, 3):
        spark.sql(
            f"INSERT INTO {t.spark_name} (id, ts, region, amount) VALUES ({day}, TIMESTAMP'2026-03-0{day} 12:00:00', 'eu', 1)"
        )
    assert t.describe().files == 3
    df = t.to_spark().where("ts >= TIMESTAMP'2026-03-03 00:00:00'")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "ts_day" in plan  # Delta derived a partition filter on the generated column from the ts filter
    assert len(df.inputFiles()) == 1 and df.count() == 1


def test_create_errors(cli, catalog, ns, table_format):
    name = f"{ns}.e"
    cases = [
        (
            ["create", "shop.x; DROP TABLE y", "--format", table_format, "--schema", "id BIGINT"],
            2,
            "invalid table name",
        ),
        (["create", name, "--format", "parquet", "--schema", "id BIGINT"], 2, "unknown format"),
        (["create", name, "--format", table_format, "--schema", "id BIGINTY"], 2, "unknown type"),
        (
            ["create", name, "--format", table_format, "--schema", "id BIGINT", "--partition-by", "days(id)"],
            2,
            "not a date",
        ),
        (
            ["create", name, "--format", table_format, "--schema", "id BIGINT", "--partition-by", "weeks(id)"],
            2,
            "invalid partition transform",
        ),
        (["create", name, "--format", table_format, "--schema", "id BIGINT", "--property", "novalue"], 2, "key=value"),
    ]
    for args, code, msg in cases:
        rc, out, err = cli(*args, "--json")
        assert rc == code, (args, out, err)
        doc = json.loads(out)
        assert msg in doc["error"]["message"]
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not catalog.table_exists(name)

    assert cli("create", name, "--format", table_format, "--schema", "id BIGINT")[0] == 0
    rc, out, err = cli("create", name, "--format", table_format, "--schema", "id BIGINT")
    assert rc == 1 and "already exists" in err
    assert cli("create", name, "--format", table_format, "--schema", "id BIGINT", "--if-not-exists")[0] == 0
    other = "delta" if table_format == "iceberg" else "iceberg"
    rc, _, err = cli("create", name, "--format", other, "--schema", "id BIGINT")
    assert rc == 1 and "already exists" in err
    rc, out, err = cli("describe", f"{ns}.missing", "--json")
    assert rc == 1 and json.loads(out)["error"]["type"] == "TableNotFoundError"


def test_drop(cli, catalog, spark, ns, table_format):
    keep = catalog.create_table(f"{ns}.keep", schema="id BIGINT", format=table_format)
    gone = catalog.create_table(f"{ns}.gone", schema="id BIGINT", format=table_format)
    spark.sql(f"INSERT INTO {gone.spark_name} VALUES (1)")
    local = catalog.local_path(gone.location)
    assert local.exists()
    rc, _, err = cli("drop", f"{ns}.gone")  # no terminal to confirm on, no --yes: refuse, touch nothing
    assert rc == 2 and "--yes" in err and catalog.table_exists(f"{ns}.gone")
    rc, _, err = cli("drop", f"{ns}.gonne", "--yes")  # a typo never touches another table
    assert rc == 1 and "not found" in err
    rc, out, _ = cli("drop", f"{ns}.gone", "--yes", "--purge", "--json")
    assert rc == 0 and json.loads(out)["purged"] is True
    assert not catalog.table_exists(f"{ns}.gone") and not local.exists()
    assert catalog.table_exists(f"{ns}.keep") and catalog.local_path(keep.location).exists()
    rc, _, _ = cli("drop", f"{ns}.keep", "--yes")
    assert rc == 0 and not catalog.table_exists(f"{ns}.keep") and catalog.local_path(keep.location).exists()


def test_delta_create_interrupted_before_its_catalog_row_is_adopted(catalog, spark, ns):
    """A Delta create writes the table's first commit, then its catalog row; killed between the two (a stream
    creating its dead-letter table), the next create of the same table adopts the empty table it left. A location
    holding data is still refused and kept. (An Iceberg create is one catalog commit: nothing is left half-done.)"""
    from deltalake import DeltaTable

    from lakecat.errors import TableAlreadyExistsError

    probe = catalog.create_table(f"{ns}.probe", schema="id BIGINT", format="delta")
    half = probe.location.rstrip("/").rsplit("/", 1)[0] + "/half"
    spark.sql(f"CREATE TABLE delta.`{half}` (id BIGINT, note STRING) USING delta")  # what the killed create wrote
    adopted = catalog.create_table(f"{ns}.half", schema="id BIGINT, note STRING", format="delta", if_not_exists=True)
    assert adopted.location.rstrip("/") == half and catalog.table_exists(f"{ns}.half")
    assert DeltaTable(half).version() == 0 and [f.name for f in DeltaTable(half).schema().fields] == ["id", "note"]

    full = probe.location.rstrip("/").rsplit("/", 1)[0] + "/full"
    spark.sql(f"CREATE TABLE delta.`{full}` (id BIGINT) USING delta")
    spark.sql(f"INSERT INTO delta.`{full}` VALUES (7)")
    with pytest.raises(TableAlreadyExistsError, match="not empty"):
        catalog.create_table(f"{ns}.full", schema="id BIGINT", format="delta")
    assert not catalog.table_exists(f"{ns}.full") and DeltaTable(full).to_pyarrow_table().num_rows == 1
    other = probe.location.rstrip("/").rsplit("/", 1)[0] + "/other"
    spark.sql(f"CREATE TABLE delta.`{other}` (id BIGINT) USING delta")  # empty, but not the columns asked for
    with pytest.raises(TableAlreadyExistsError, match="not empty"):
        catalog.create_table(f"{ns}.other", schema="id BIGINT, extra STRING", format="delta")


def test_notebook_session_reaches_both_formats_by_name(catalog, ns):
    catalog.create_table(f"{ns}.nb_ice", schema="id BIGINT", format="iceberg")
    catalog.create_table(f"{ns}.nb_delta", schema="id BIGINT", format="delta")
    spark = catalog.spark
    spark.sql(f"INSERT INTO local.{ns}.nb_ice VALUES (1), (2)")
    spark.sql(f"INSERT INTO {ns}.nb_delta VALUES (3)")
    assert spark.sql(f"SELECT count(*) FROM local.{ns}.nb_ice").first()[0] == 2
    assert spark.sql(f"SELECT count(*) FROM {ns}.nb_delta").first()[0] == 1


def test_notebook_session_survives_a_table_whose_files_are_gone(catalog, ns, tmp_path, caplog):
    """One registered Delta table whose log was removed behind lakecat's back costs a warning, not the session."""
    import shutil

    import deltalake
    import pyarrow as pa

    location = tmp_path / "lost"
    deltalake.write_deltalake(str(location), pa.table({"id": pa.array([1], pa.int64())}))
    catalog.register_table(f"{ns}.lost", location=str(location))
    catalog.create_table(f"{ns}.kept", schema="id BIGINT", format="delta")
    shutil.move(location / "_delta_log", tmp_path / "log-aside")
    try:
        with caplog.at_level("WARNING", logger="lakecat.catalog"):
            spark = catalog.spark
        assert spark.sql(f"SELECT count(*) FROM {ns}.kept").first()[0] == 0
        assert f"{ns}.lost is not reachable by name in this session" in caplog.text
    finally:  # the session's catalog is shared: leave no broken table behind
        shutil.move(tmp_path / "log-aside", location / "_delta_log")


def test_metadata_commands_start_no_jvm(catalog, ns, light_cli):
    catalog.create_table(f"{ns}.light_ice", schema="id BIGINT, ts TIMESTAMP", format="iceberg", partition_by="days(ts)")
    catalog.create_table(f"{ns}.light_delta", schema="id BIGINT, ts TIMESTAMP", format="delta", partition_by="days(ts)")
    assert {t["name"] for t in light_cli("list", ns)} == {f"{ns}.light_ice", f"{ns}.light_delta"}
    for name in ("light_ice", "light_delta"):
        assert light_cli("describe", f"{ns}.{name}")["partitioning"] == ["days(ts)"]


@pytest.mark.iceberg
@pytest.mark.parametrize("version", ["1", "2"])
def test_iceberg_describe_from_the_metadata_file_equals_pyicebergs_view(catalog, spark, ns, version, monkeypatch):
    """``describe`` of an Iceberg table reads its metadata file as JSON (no pyiceberg import); after schema and partition
    evolution, tags and branches, on format v1 and v2 files, it says exactly what pyiceberg's parsed metadata says, and
    its column types are Spark's."""
    t = catalog.create_table(f"{ns}.m{version}", schema="id BIGINT NOT NULL, ts TIMESTAMP, amount DECIMAL(10,2), "
                             "tags ARRAY<STRING>, attrs MAP<STRING, INT>, info STRUCT<region: STRING, zone: INT>, raw BINARY",
                             format="iceberg", partition_by="days(ts), bucket(4, id)",
                             properties={"format-version": version})  # fmt: skip
    name = t.spark_name
    spark.sql(f"INSERT INTO {name} VALUES (1, TIMESTAMP'2026-01-01 10:00:00', 1.50, array('a'), map('k', 1), "
              "named_struct('region', 'eu', 'zone', 2), X'01')")  # fmt: skip
    spark.sql(f"ALTER TABLE {name} ADD COLUMNS (note STRING COMMENT 'free text', seen TIMESTAMP_NTZ)")
    spark.sql(f"ALTER TABLE {name} RENAME COLUMN amount TO price")
    spark.sql(f"ALTER TABLE {name} ADD PARTITION FIELD truncate(2, info.region)")
    spark.sql(f"ALTER TABLE {name} DROP PARTITION FIELD bucket(4, id)")
    spark.sql(f"INSERT INTO {name} VALUES (2, TIMESTAMP'2026-01-02 10:00:00', 2.00, array(), map(), "
              "named_struct('region', 'us', 'zone', 1), X'02', 'n', TIMESTAMP_NTZ'2026-01-02 00:00:00')")  # fmt: skip
    first = t.history()[-1].version
    t.tag("before", version=first, retain="7d")
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH audit")

    light = t.describe()
    adapter = type(t.adapter)
    monkeypatch.setattr(adapter, "metadata_file_doc", lambda self, table: None)  # as for a REST catalog: via pyiceberg
    assert t.describe() == light

    assert [c.name for c in light.schema] == ["id", "ts", "price", "tags", "attrs", "info", "raw", "note", "seen"]
    # a v1 spec keeps a dropped field as void (v1 specs must keep their fields' positions)
    assert light.partitioning == ["days(ts)", *(["void(id)"] if version == "1" else []), "truncate(2, info.region)"]
    assert [s.current for s in light.partition_specs].count(True) == 1 and len(light.partition_specs) >= 2
    assert light.records == 2 and light.files >= 2 and light.current_version == t.describe().current_version
    assert [(r.name, r.retain) for r in light.tags] == [("before", "1w")] and [b.name for b in light.branches] == [
        "audit"
    ]
    assert {c.name: c.comment for c in light.schema}["note"] == "free text"
    assert not {c.name: c.nullable for c in light.schema}["id"]
    spark_types = {f.name: f.dataType.simpleString() for f in spark.table(name).schema.fields}
    assert {c.name: c.type.replace(" ", "").lower() for c in light.schema} == spark_types
