"""create / drop / property changes without a JVM (pyiceberg, delta-rs), on both formats: the light create gives the
table Spark's CREATE TABLE gives (checked against a Spark-created twin with pyiceberg / delta-rs), Spark writes and
reads it, and what the light libraries cannot do exactly goes to Spark with the reason."""

from __future__ import annotations

import json

import pytest

from tests.helpers import pyiceberg_catalog, read_rows

pytestmark = pytest.mark.spark

SCHEMA = ("id BIGINT NOT NULL COMMENT 'order id', ts TIMESTAMP, region STRING COMMENT 'sales region', "
          "amount DECIMAL(10,2), tags ARRAY<STRING>, info STRUCT<a: INT, b: STRING>")  # fmt: skip
#: What each format partitions by without Spark: Iceberg's hidden transforms, Delta's plain partition columns.
PARTITIONS = {"iceberg": ["days(ts)", "region", "bucket(4, id)"], "delta": ["region"]}
PROPERTIES = {"lakecat.expire.retain-last": "5", "team": "sales"}
#: Delta's legacy writer version 4 has these features (Spark's own create lists the ones it uses as table features).
LEGACY_WRITER_4 = {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"}


def _iceberg(catalog, name: str):
    ns, table = name.split(".")
    return pyiceberg_catalog(catalog).load_table((ns, table))


def _delta(catalog, name: str):
    from deltalake import DeltaTable

    return DeltaTable(catalog.entry(name).location)


def _definition(catalog, name: str, fmt: str) -> dict:
    """The table's definition as the format's own library reads it (no lakecat code)."""
    if fmt == "iceberg":
        tbl = _iceberg(catalog, name)
        return {"schema": tbl.schema().fields, "spec": [(f.name, str(f.transform), f.source_id, f.field_id)
                                                       for f in tbl.spec().fields],
                "properties": dict(tbl.properties), "format_version": tbl.format_version}  # fmt: skip
    dt = _delta(catalog, name)
    return {"schema": json.loads(dt.schema().to_json()), "partitions": list(dt.metadata().partition_columns),
            "properties": dict(dt.metadata().configuration)}  # fmt: skip


def test_light_create_is_spark_create(catalog, spark, ns, table_format):
    light = catalog.create_table(f"{ns}.light", schema=SCHEMA, format=table_format,
                                 partition_by=PARTITIONS[table_format], properties=PROPERTIES, engine="light")  # fmt: skip
    twin = catalog.create_table(f"{ns}.twin", schema=SCHEMA, format=table_format,
                                partition_by=PARTITIONS[table_format], properties=PROPERTIES, engine="spark")  # fmt: skip
    assert (light.engine, light.engine_reason) == ("light", None)
    assert twin.engine == "spark" and "asked for Spark" in twin.engine_reason

    # same field ids, types, NOT NULL, comments, partition spec, properties, version — read by pyiceberg / delta-rs
    assert _definition(catalog, light.name, table_format) == _definition(catalog, twin.name, table_format)
    if table_format == "iceberg":
        tbl = _iceberg(catalog, light.name)
        assert tbl.format_version == 2 and tbl.properties["write.parquet.compression-codec"] == "zstd"
        assert tbl.schema().find_field("id").required and tbl.schema().find_field("id").doc == "order id"
        assert tbl.location().rstrip("/").endswith(f"/{ns}/light")
    else:
        protocol = _delta(catalog, light.name).protocol()
        spark_protocol = _delta(catalog, twin.name).protocol()
        assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 4)
        assert protocol.writer_features is None and set(spark_protocol.writer_features or ()) <= LEGACY_WRITER_4
        assert spark_protocol.min_reader_version == 1
    described = [catalog.load_table(n).describe() for n in (light.name, twin.name)]
    assert described[0].schema == described[1].schema and described[0].partitioning == described[1].partitioning

    # Spark writes and reads the light table; the format's own reader sees the rows; NOT NULL holds for Spark's writes
    spark.sql(f"INSERT INTO {light.spark_name} VALUES (1, TIMESTAMP '2026-01-02 03:04:05', 'eu', 12.50, array('a'), "
              "named_struct('a', 1, 'b', 'x')), (2, NULL, 'us', NULL, NULL, NULL)")  # fmt: skip
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {light.spark_name}").collect()) == [1, 2]
    assert sorted((r["id"], r["region"]) for r in read_rows(catalog, light.name)) == [(1, "eu"), (2, "us")]
    with pytest.raises(Exception, match="(?i)null"):
        spark.sql(f"INSERT INTO {light.spark_name} VALUES (NULL, NULL, 'eu', NULL, NULL, NULL)")
    assert len(read_rows(catalog, light.name)) == 2


def test_create_alter_drop_from_a_script_start_no_jvm(catalog, ns, table_format, light_cli):
    """`lakecat create` in CI (a script: CI=true) imports no Spark path; so do a property change and a drop."""
    name = f"{ns}.scripted"
    env = {"CI": "true"}
    doc = light_cli("create", name, "--format", table_format, "--schema", SCHEMA, "--partition-by",
                    ", ".join(PARTITIONS[table_format]), "--property", "team=sales", env=env)  # fmt: skip
    assert doc["engine"] == "light" and doc["engine_reason"] is None and doc["properties"]["team"] == "sales"
    assert _definition(catalog, name, table_format)["properties"]["team"] == "sales"
    doc = light_cli("alter", name, "--property", "lakecat.expire.retain-last=3", env=env)
    assert doc["engine"] == "light" and doc["properties"]["lakecat.expire.retain-last"] == "3"
    doc = light_cli("policy", "set", name, "compact.target-file-size=64MB", env=env)
    assert doc["engine"] == "light" and doc["policy"]["lakecat.compact.target-file-size"] == "64MB"
    assert _definition(catalog, name, table_format)["properties"]["lakecat.compact.target-file-size"] == "64MB"
    location = catalog.entry(name).location
    doc = light_cli("drop", name, "--yes", "--purge", env=env)
    assert doc["engine"] == "light" and doc["purged"] is True
    assert not catalog.table_exists(name) and not catalog.local_path(location).exists()


def test_drop_with_and_without_purge(catalog, spark, ns, table_format):
    kept = catalog.create_table(f"{ns}.kept", schema="id BIGINT", format=table_format, engine="light")
    spark.sql(f"INSERT INTO {kept.spark_name} VALUES (1)")
    result = catalog.drop_table(kept.name)
    assert (result.engine, result.purged) == ("light", False) and not catalog.table_exists(kept.name)
    local = catalog.local_path(kept.location)
    assert local.exists() and any(local.rglob("*.parquet"))  # the files stay

    purged = catalog.create_table(f"{ns}.purged", schema="id BIGINT", format=table_format, engine="light")
    spark.sql(f"INSERT INTO {purged.spark_name} VALUES (1)")
    result = catalog.drop_table(purged.name, purge=True)
    assert result.purged and not catalog.local_path(purged.location).exists()

    by_spark = catalog.create_table(f"{ns}.by_spark", schema="id BIGINT", format=table_format)
    result = catalog.drop_table(by_spark.name, engine="spark")
    assert result.engine == "spark" and not catalog.table_exists(by_spark.name)
    assert catalog.local_path(by_spark.location).exists()
    with pytest.raises(Exception, match="invalid engine"):
        catalog.drop_table(f"{ns}.nothing", engine="jvm")


def test_properties_set_and_unset(catalog, spark, ns, table_format):
    from lakecat.errors import NotExactError
    from lakecat.policy_admin import set_policy

    t = catalog.create_table(f"{ns}.props", schema="id BIGINT", format=table_format, engine="light")
    done = t.set_properties({"lakecat.expire.retain-last": "4", "team": "sales"})
    assert done.engine == "light" and done.properties["team"] == "sales"
    assert _definition(catalog, t.name, table_format)["properties"]["lakecat.expire.retain-last"] == "4"
    if table_format == "delta":  # a commit of its own (Iceberg's property changes write metadata, no snapshot)
        assert catalog.load_table(t.name).history().entries[0].operation == "set_properties"

    unset = t.set_properties(unset=["team"])
    assert "team" not in _definition(catalog, t.name, table_format)["properties"] and "team" not in unset.properties
    if table_format == "iceberg":
        assert unset.engine == "light"
    else:  # delta-rs has no unset: Spark does it, and says so
        assert unset.engine == "spark" and "unset" in unset.engine_reason
        with pytest.raises(NotExactError, match="unset"):
            t.set_properties(unset=["lakecat.expire.retain-last"], engine="light")

    assert set_policy(catalog, t.name, {"expire.retain-last": "6"}).engine == "light"
    assert _definition(catalog, t.name, table_format)["properties"]["lakecat.expire.retain-last"] == "6"
    forced = t.set_properties({"team": "ops"}, engine="spark")
    assert forced.engine == "spark" and _definition(catalog, t.name, table_format)["properties"]["team"] == "ops"
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1)")  # Spark still writes the table after the light commits
    assert [r["id"] for r in read_rows(catalog, t.name)] == [1]


@pytest.mark.delta
def test_delta_properties_on_a_table_features_protocol_go_to_spark(catalog, ns):
    """delta-rs restates a protocol of table features when it commits properties: on such a table (Spark's create)
    Spark commits them, and the protocol stays as it was."""
    from lakecat.errors import NotExactError

    t = catalog.create_table(f"{ns}.features", schema="id BIGINT", format="delta", engine="spark")
    before = _delta(catalog, t.name).protocol()
    done = t.set_properties({"team": "sales"})
    assert done.engine == "spark" and "table features" in done.engine_reason
    after = _delta(catalog, t.name).protocol()
    assert (after.min_reader_version, after.min_writer_version, after.writer_features) == (
        before.min_reader_version, before.min_writer_version, before.writer_features)  # fmt: skip
    with pytest.raises(NotExactError, match="table features"):
        t.set_properties({"team": "ops"}, engine="light")


@pytest.mark.delta
def test_delta_generated_partition_column_is_created_by_spark(catalog, ns, cli):
    """A time transform on Delta is a generated column: Spark creates it (and says why), the light engine refuses."""
    t = catalog.create_table(f"{ns}.gen", schema="id BIGINT, ts TIMESTAMP", format="delta", partition_by="days(ts)")
    assert t.engine == "spark" and "generated columns" in t.engine_reason
    gen = {f.name: f.metadata.get("delta.generationExpression") for f in _delta(catalog, t.name).schema().fields}
    assert gen["ts_day"] == "CAST(`ts` AS DATE)"

    code, out, _ = cli("create", f"{ns}.gen_light", "--format", "delta", "--schema", "id BIGINT, ts TIMESTAMP",
                       "--partition-by", "days(ts)", "--engine", "light", "--json")  # fmt: skip
    assert code == 3 and "generated columns" in json.loads(out)["error"]["message"]
    assert not catalog.table_exists(f"{ns}.gen_light")
    assert not catalog.local_path(f"{catalog.config.warehouse_uri}/{ns}/gen_light").exists()  # nothing left behind
    code, out, err = cli("create", f"{ns}.gen_cli", "--format", "delta", "--schema", "id BIGINT, ts TIMESTAMP",
                         "--partition-by", "days(ts)", "--json")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["engine"] == "spark" and "generated columns" in doc["engine_reason"]


@pytest.mark.iceberg
def test_iceberg_format_version_3_is_created_by_spark(catalog, ns):
    t = catalog.create_table(f"{ns}.v3", schema="id BIGINT", format="iceberg", format_version=3)
    assert t.engine == "spark" and "format version 3" in t.engine_reason
    assert _iceberg(catalog, t.name).format_version == 3


def test_the_light_engine_leaves_spark_reserved_keys_to_spark(catalog, ns, table_format):
    """`comment`, `owner`, `location` are the table's own to Spark, not properties: the light engine refuses to set them
    as properties (Spark says what to use instead), and writes nothing."""
    from lakecat.errors import NotExactError

    with pytest.raises(NotExactError, match="comment"):
        catalog.create_table(f"{ns}.reserved", schema="id BIGINT", format=table_format, properties={"comment": "x"},
                             engine="light")  # fmt: skip
    assert not catalog.table_exists(f"{ns}.reserved")
    assert not catalog.local_path(f"{catalog.config.warehouse_uri}/{ns}/reserved").exists()
