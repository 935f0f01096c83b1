"""Bring your own tables (issue #14): `register` tables written outside lakecat — by delta-rs, by pyiceberg in
another catalog, by plain Spark SQL at a higher protocol / format version — and run every command on them;
`convert` a directory of Parquet files to each format in place; every bad input is one line, an exit code, nothing
registered and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers import read_arrow


def _ok(cli, *args):
    code, out, err = cli(*args, "--json")
    assert code == 0, (args, out, err)
    return json.loads(out)


def _error(cli, args, exit_code):
    code, out, err = cli(*args, "--json")
    assert code == exit_code, (args, out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return json.loads(out)["error"]["message"]


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "region": ["eu", "us"] * (n // 2),
                     "amount": pa.array([float(i) for i in range(start, start + n)], pa.float64())})  # fmt: skip


def _files_under(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_mtime_ns for p in sorted(path.rglob("*")) if p.is_file()}


# --- tables written outside lakecat ---------------------------------------------------------------
def _write_outside(table_format: str, tmp_path: Path) -> Path:
    """Two appends of 10 rows, partitioned by region: delta-rs's write_deltalake, or pyiceberg into a SqlCatalog of
    its own (another catalog database, another warehouse)."""
    if table_format == "delta":
        from deltalake import write_deltalake

        location = tmp_path / "orders_delta"
        for start in (0, 10):
            write_deltalake(str(location), _rows(start, 10), mode="append", partition_by=["region"])
        return location
    from pyiceberg.catalog.sql import SqlCatalog

    other = SqlCatalog("elsewhere", uri=f"sqlite:///{tmp_path / 'elsewhere.db'}", warehouse=f"file://{tmp_path / 'wh'}")
    other.create_namespace("shop")
    data = _rows(0, 10)
    tbl = other.create_table(("shop", "orders"), schema=data.schema)
    with tbl.update_spec() as spec:
        spec.add_identity("region")
    tbl = other.load_table(("shop", "orders"))
    tbl.append(data)
    tbl.append(_rows(10, 10))
    return Path(tbl.metadata.location.removeprefix("file://"))


def _outside_versions(table_format: str, location: Path) -> list[int]:
    """Versions as the writer's own library sees them (no lakecat code)."""
    if table_format == "delta":
        from deltalake import DeltaTable

        return sorted(h["version"] for h in DeltaTable(str(location)).history())
    from pyiceberg.table import StaticTable

    from lakecat.formats.iceberg.adapter import newest_metadata

    metadata, _ = newest_metadata(f"file://{location}")
    return sorted(s.snapshot_id for s in StaticTable.from_metadata(metadata).metadata.snapshots)


@pytest.mark.spark
def test_register_delta_rs_table_and_run_every_command(cli, light_cli, catalog, spark, ns, table_format, tmp_path):
    """Named for Delta (the JSON coverage test points here); runs on both formats: delta-rs and pyiceberg writers."""
    location = _write_outside(table_format, tmp_path)
    before = _outside_versions(table_format, location)
    name = f"{ns}.orders"

    code, out, err = cli("register", name, "--location", location, "--json")  # format detected
    assert code == 0, err
    reg = json.loads(out)
    assert (reg["name"], reg["format"], reg["records"]) == (name, table_format, 20)
    assert catalog.entry(name).format == table_format
    if table_format == "iceberg":  # a table directory: which metadata file was taken is said
        assert reg["metadata_location"].endswith(".metadata.json") and "took metadata/" in reg["notes"][0]
    assert _outside_versions(table_format, location) == before  # registering commits nothing

    d = light_cli("describe", name)  # no JVM
    assert d["format"] == table_format and d["records"] == 20 and d["partitioning"] == ["region"]
    history = light_cli("history", name)
    assert sorted(h["version"] for h in history) == before
    first, second = history[-1]["version"], history[0]["version"]

    assert _ok(cli, "timetravel", name, "--version", first, "--count")["count"] == 10
    assert _ok(cli, "timetravel", name, "--version", second, "--count")["count"] == 20

    if table_format == "delta":  # delta-rs wrote it without a change data feed: exit 3, and how to turn it on
        message = _error(cli, ["changes", name, "--since", first], 3)
        assert "alter" in message and "delta.enableChangeDataFeed=true" in message
        _ok(cli, "alter", name, "--property", "delta.enableChangeDataFeed=true")
        since = _ok(cli, "history", name, "--limit", "1")[0]["version"]
    else:
        changes = _ok(cli, "changes", name, "--since", first)
        assert sorted(r["id"] for r in changes["rows"]) == list(range(10, 20))
        since = second

    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "0.json").write_text(
        "\n".join(json.dumps({"id": 100 + i, "region": "eu", "amount": 1.5}) for i in range(3)) + "\n"
    )
    assert _ok(cli, "ingest", name, "--files", landing, "--file-format", "json", "--no-dlq")["rows_written"] == 3
    changes = _ok(cli, "changes", name, "--since", since)
    assert sorted((r["id"], r["_change_type"]) for r in changes["rows"]) == [
        (100, "insert"),
        (101, "insert"),
        (102, "insert"),
    ]

    fixes = tmp_path / "fixes.json"
    fixes.write_text(json.dumps({"id": 1, "region": "us", "amount": 99.0}) + "\n")
    merged = _ok(cli, "upsert", name, "--from", fixes, "--key", "id", "--file-format", "json")
    assert (merged["inserted"], merged["updated"]) == (0, 1)

    assert _ok(cli, "compact", name)["files_after"] <= _ok(cli, "compact", name, "--dry-run")["files_before"]
    assert _ok(cli, "expire", name, "--dry-run")["expired_versions"] == []
    assert _ok(cli, "clean-orphans", name, "--dry-run")["dry_run"] is True

    rows = read_arrow(catalog, name)  # the writer's own library reads what lakecat committed
    assert rows.num_rows == 23 and pc.sum(rows["amount"]).as_py() == sum(range(20)) - 1.0 + 99.0 + 4.5

    rolled = _ok(cli, "rollback", name, "--version", second, "--yes", "--force")
    assert rolled["changed"] is True
    assert read_arrow(catalog, name).num_rows == 20
    assert set(before) <= {h["version"] for h in light_cli("history", name)}  # the writer's commits are all still there

    dropped = _ok(cli, "drop", name, "--yes")
    assert dropped["purged"] is False and not catalog.table_exists(name)
    assert any(location.rglob("*.parquet"))  # a registered table's files stay
    assert set(before) <= set(_outside_versions(table_format, location))


def _independent_count(catalog, name: str) -> int:
    """Rows as pyiceberg, or delta-rs's DataFusion reader (it applies deletion vectors), count them."""
    entry = catalog.entry(name)
    if entry.format == "iceberg":
        return read_arrow(catalog, name).num_rows
    from deltalake import DeltaTable, QueryBuilder

    batches = QueryBuilder().register("t", DeltaTable(entry.location)).execute("SELECT count(*) AS n FROM t").read_all()
    return int(pa.table(batches).column("n")[0].as_py())


def _spark_sql_table(spark, table_format: str, tmp_path: Path) -> tuple[Path, str]:
    """Plain Spark SQL, no lakecat helper: Delta with deletion vectors on, Iceberg v2 merge-on-read (delete files)
    in a Hadoop catalog of its own; partitioned, 10 rows inserted, 3 deleted."""
    if table_format == "delta":
        location = tmp_path / "dv"
        name = f"delta.`{location}`"
        spark.sql(f"CREATE TABLE {name} (id BIGINT, region STRING) USING delta PARTITIONED BY (region) "
                  "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")  # fmt: skip
    else:
        spark.conf.set("spark.sql.catalog.byo_hadoop", "org.apache.iceberg.spark.SparkCatalog")
        spark.conf.set("spark.sql.catalog.byo_hadoop.type", "hadoop")
        spark.conf.set("spark.sql.catalog.byo_hadoop.warehouse", str(tmp_path / "hadoop"))
        name = "byo_hadoop.db.mor"
        location = tmp_path / "hadoop" / "db" / "mor"
        spark.sql(f"CREATE TABLE {name} (id BIGINT, region STRING) USING iceberg PARTITIONED BY (region) "
                  "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')")  # fmt: skip
    spark.sql(f"INSERT INTO {name} SELECT id, IF(id % 2 = 0, 'eu', 'us') FROM range(10)")
    spark.sql(f"DELETE FROM {name} WHERE id < 3")
    return location, name


@pytest.mark.spark
def test_register_spark_sql_table_with_deletes(cli, light_cli, catalog, spark, ns, table_format, tmp_path):
    location, _ = _spark_sql_table(spark, table_format, tmp_path)
    before = _outside_versions(table_format, location)
    name = f"{ns}.mor"
    reg = _ok(cli, "register", name, "--location", location, "--format", table_format)
    if table_format == "iceberg":
        assert "version-hint.text" in reg["notes"][0]
    health = light_cli("describe", name)
    assert health["partitioning"] == ["region"]
    history = light_cli("history", name)
    assert sorted(h["version"] for h in history) == before
    assert _independent_count(catalog, name) == 7
    inserted = [h["version"] for h in history if h["operation"] == "append"][0]
    assert _ok(cli, "timetravel", name, "--version", inserted, "--count")["count"] == 10
    _ok(cli, "compact", name)
    assert _independent_count(catalog, name) == 7
    assert set(before) <= set(_outside_versions(table_format, location))  # history kept, not rewritten
    _ok(cli, "drop", name, "--yes")
    assert location.exists()


def test_register_takes_the_location_as_spark_spells_it(cli, light_cli, ns, table_format, tmp_path):
    """``file:/x``, the spelling of Spark's and Delta's ``DESCRIBE DETAIL``, is the local directory ``/x``."""
    location = _write_outside(table_format, tmp_path)
    name = f"{ns}.spelled"
    reg = _ok(cli, "register", name, "--location", f"file:{location}")
    assert (reg["format"], reg["records"]) == (table_format, 20)
    assert light_cli("describe", name)["records"] == 20


# --- bad input ---------------------------------------------------------------------------------------
def test_register_refuses_bad_input(cli, catalog, ns, tmp_path):
    from deltalake import write_deltalake

    table = tmp_path / "t"
    write_deltalake(str(table), _rows(0, 4))
    empty = tmp_path / "empty"
    empty.mkdir()
    parquet_only = tmp_path / "parquet"
    parquet_only.mkdir()
    pq.write_table(_rows(0, 2), parquet_only / "a.parquet")
    corrupt = tmp_path / "corrupt" / "metadata"
    corrupt.mkdir(parents=True)
    (corrupt / "v1.metadata.json").write_text("{not json")
    ambiguous = tmp_path / "ambiguous" / "metadata"
    ambiguous.mkdir(parents=True)
    for n in ("00003-a.metadata.json", "00003-b.metadata.json", "00002-c.metadata.json"):
        (ambiguous / n).write_text("{}")
    files_before = _files_under(tmp_path)

    assert "no such file" in _error(cli, ["register", f"{ns}.a", "--location", tmp_path / "nope"], 2)
    assert "no table at" in _error(cli, ["register", f"{ns}.a", "--location", empty], 2)
    assert "_delta_log" in _error(cli, ["register", f"{ns}.a", "--location", parquet_only, "--format", "delta"], 2)
    assert "convert" in _error(cli, ["register", f"{ns}.a", "--location", parquet_only], 2)
    assert "not a readable Iceberg metadata file" in _error(
        cli, ["register", f"{ns}.a", "--location", corrupt / "v1.metadata.json"], 2)  # fmt: skip
    assert "not a readable Iceberg metadata file" in _error(
        cli, ["register", f"{ns}.a", "--location", corrupt.parent], 2
    )
    message = _error(cli, ["register", f"{ns}.a", "--location", ambiguous.parent], 2)
    assert "ambiguous" in message and "00003-a.metadata.json" in message and "00003-b.metadata.json" in message
    assert "00002" not in message
    assert catalog.entries(ns) == []

    _ok(cli, "register", f"{ns}.a", "--location", table)
    assert f"registered as {ns}.a" in _error(cli, ["register", f"{ns}.b", "--location", f"file://{table}/"], 1)
    assert "already exists" in _error(cli, ["register", f"{ns}.a", "--location", table], 1)
    assert [str(e.ident) for e in catalog.entries(ns)] == [f"{ns}.a"]
    assert _files_under(tmp_path) == files_before  # nothing written anywhere


# --- convert -----------------------------------------------------------------------------------------
def _parquet_dir(tmp_path: Path) -> Path:
    """Hive-style partitions: region=eu/ with one file, region=us/ with two."""
    base = tmp_path / "landing"
    for region, parts in (("eu", 1), ("us", 2)):
        (base / f"region={region}").mkdir(parents=True)
        for i in range(parts):
            start = 100 * i + (0 if region == "eu" else 1000)
            data = pa.table({"id": pa.array(range(start, start + 5), pa.int64()),
                             "amount": pa.array([1.25 * k for k in range(5)], pa.float64())})  # fmt: skip
            pq.write_table(data, base / f"region={region}" / f"part-{i}.parquet")
    (base / "_SUCCESS").write_text("")
    return base


@pytest.mark.spark
def test_convert_parquet_directory(cli, light_cli, catalog, spark, ns, table_format, tmp_path):
    source = _parquet_dir(tmp_path)
    before = pq.read_table(source)  # pyarrow's own Hive-partitioned read
    name = f"{ns}.events"
    files_before = _files_under(source)

    plan = light_cli(
        "convert", name, "--from", source, "--format", table_format, "--partition-by", "region", "--dry-run"
    )
    assert plan["dry_run"] is True and plan["rows"] == 15 and plan["partitions"] == ["region=eu", "region=us"]
    assert sorted(plan["files"]) == ["region=eu/part-0.parquet", "region=us/part-0.parquet", "region=us/part-1.parquet"]
    assert [(c["name"], c["type"]) for c in plan["schema"]] == [
        ("id", "BIGINT"),
        ("amount", "DOUBLE"),
        ("region", "STRING"),
    ]
    assert _files_under(source) == files_before and not catalog.table_exists(name)

    code, out, err = cli("convert", name, "--from", source, "--format", table_format, "--json")
    assert code == 0, err
    done = json.loads(out)
    assert done["dry_run"] is False and done["rows"] == 15
    after = read_arrow(catalog, name)  # pyiceberg / delta-rs
    assert after.num_rows == before.num_rows == 15
    assert pc.sum(after["amount"]).as_py() == pc.sum(before["amount"]).as_py()
    assert pc.sum(after["id"]).as_py() == pc.sum(before["id"]).as_py()
    assert sorted(pc.unique(after["region"]).to_pylist()) == ["eu", "us"]
    data_files = {
        Path(f.path.removeprefix("file://")).name
        for f in catalog.load_table(name).adapter.data_files(catalog.load_table(name))
    }
    assert data_files == {"part-0.parquet", "part-1.parquet"}  # the files themselves, not copies
    assert all(files_before[f] == mtime for f, mtime in _files_under(source).items() if f in files_before)

    d = light_cli("describe", name)
    assert d["partitioning"] == ["region"] and d["files"] == 3
    landing = tmp_path / "more"
    landing.mkdir()
    (landing / "0.json").write_text(json.dumps({"id": 7, "amount": 2.0, "region": "eu"}) + "\n")
    _ok(cli, "ingest", name, "--files", landing, "--file-format", "json", "--no-dlq")
    assert read_arrow(catalog, name).num_rows == 16


def test_convert_refuses_mixed_schemas(cli, catalog, ns, tmp_path):
    source = tmp_path / "mixed"
    source.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), source / "a.parquet")
    pq.write_table(pa.table({"id": pa.array(["x"], pa.string())}), source / "b.parquet")
    files_before = _files_under(source)
    for fmt in ("iceberg", "delta"):
        message = _error(cli, ["convert", f"{ns}.m", "--from", source, "--format", fmt], 2)
        assert "a.parquet" in message and "b.parquet" in message and "id" in message
        assert "b.parquet" in _error(cli, ["convert", f"{ns}.m", "--from", source, "--format", fmt, "--dry-run"], 2)
    assert _files_under(source) == files_before and catalog.entries(ns) == []
    layout = _parquet_dir(tmp_path)
    assert "does not match the directory layout" in _error(
        cli, ["convert", f"{ns}.m", "--from", layout, "--format", "delta", "--partition-by", "day"], 2)  # fmt: skip
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no Parquet files" in _error(cli, ["convert", f"{ns}.m", "--from", empty, "--format", "delta"], 2)
    assert catalog.entries(ns) == []
