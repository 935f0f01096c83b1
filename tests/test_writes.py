"""Plain writes and deletes (``Table.append`` / ``overwrite`` / ``delete``, ``lakecat append`` / ``delete``) on both
formats: pyiceberg / delta-rs without a JVM where they write the table as Spark would, Spark where the table has what
they do not write; every result read back by the other format's independent reader (pyiceberg, deltalake)."""

from __future__ import annotations

import json
import time
from datetime import date

import pytest

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")

SCHEMA = "id BIGINT NOT NULL, region STRING, day DATE, amount DOUBLE"


def _rows(ids, regions=None, days=None) -> pa.Table:
    n = len(ids)
    regions = regions if regions is not None else ["eu"] * n
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "region": pa.array(regions, pa.string()),
        "day": pa.array(days if days is not None else [date(2026, 1, 1 + i % 3) for i in range(n)], pa.date32()),
        "amount": pa.array([float(i) for i in ids], pa.float64()),
    })  # fmt: skip


def independent_rows(catalog, name: str) -> list[dict]:
    """The table's current rows as its format's own library reads them (pyiceberg / deltalake), sorted by id."""
    from lakecat.formats import get_format

    entry = catalog.entry(name)
    if entry.format == "delta":
        tbl = pa.table(deltalake.DeltaTable(entry.location).to_pyarrow_table())
    else:
        ns, table = name.split(".")
        tbl = get_format("iceberg").library_catalog(catalog).load_table((ns, table)).scan().to_arrow()
    return sorted(tbl.select(["id", "region"]).to_pylist(), key=lambda r: r["id"])


def _version(table) -> int | None:
    table.refresh()
    return table.adapter.current_version(table)


# --- the light path ------------------------------------------------------------------------------
def test_append_overwrite_delete_without_a_jvm_read_back_independently(catalog, ns, table_format):
    name = f"{ns}.plain"
    t = catalog.create_table(name, schema=SCHEMA, format=table_format)
    regions = ["eu", "us", None, "eu", "us", None]
    r = t.append(_rows([1, 2, 3, 4, 5, 6], regions))
    assert (r.engine, r.engine_reason, r.rows, r.committed) == ("light", None, 6, True), r
    assert r.version == _version(t)
    assert independent_rows(catalog, name) == [
        {"id": i, "region": g} for i, g in zip([1, 2, 3, 4, 5, 6], regions, strict=True)
    ]
    # an int32 column into BIGINT casts; a missing nullable column is null
    small = pa.table({"id": pa.array([7], pa.int32()), "REGION": ["eu"]})
    assert t.append(small).engine == "light"
    assert {"id": 7, "region": "eu"} in independent_rows(catalog, name)
    # NOT (region = 'eu'): a row whose region is null is neither, and stays (as Spark's DELETE keeps it)
    d = t.delete(where="NOT (region = 'eu') AND id < 7")
    assert (d.engine, d.rows, d.committed) == ("light", 2, True), d
    assert [r["id"] for r in independent_rows(catalog, name)] == [1, 3, 4, 6, 7]
    # a delete no row matches commits nothing
    before = _version(t)
    none = t.delete(where="id IN (100, 200) OR region = 'nowhere'")
    assert (none.rows, none.committed, none.version) == (0, False, None) and _version(t) == before
    # overwrite where: the rows it selects are replaced (every new row matches it)
    o = t.overwrite(_rows([30, 31], ["eu", "eu"]), where="region = 'eu'")
    assert (o.engine, o.operation, o.rows) == ("light", "overwrite", 2), o
    assert independent_rows(catalog, name) == [{"id": 3, "region": None}, {"id": 6, "region": None},
                                               {"id": 30, "region": "eu"}, {"id": 31, "region": "eu"}]  # fmt: skip
    # and Spark reads what the light libraries wrote
    assert sorted(r.id for r in t.to_spark().collect()) == [3, 6, 30, 31]
    full = t.overwrite(_rows([9]))
    assert full.engine == "light" and [r["id"] for r in independent_rows(catalog, name)] == [9]
    history = [e.operation for e in t.history().entries]
    assert full.version == t.history().entries[0].version
    assert {"append", "delete"} <= set(history), history


def test_delete_dry_run_counts_and_commits_nothing(catalog, ns, table_format):
    t = catalog.create_table(f"{ns}.dry", schema=SCHEMA, format=table_format)
    t.append(_rows([1, 2, 3, 4], ["eu", "us", "eu", None]))
    before = _version(t)
    r = t.delete(where="region = 'eu'", dry_run=True)
    assert (r.dry_run, r.rows, r.committed, r.version, r.engine) == (True, 2, False, None, "light"), r
    assert _version(t) == before and len(independent_rows(catalog, t.name)) == 4
    pd = pytest.importorskip("pandas")
    p = t.append(pd.DataFrame({"id": [5], "region": ["eu"]}))
    assert (p.engine, p.rows) == ("light", 1) and {"id": 5, "region": "eu"} in independent_rows(catalog, t.name)
    assert t.delete(where="region = 'eu'", dry_run=True).rows == 3


def test_bad_input_is_one_line_and_writes_nothing(catalog, ns, table_format, lakecat, tmp_path):
    from lakecat.errors import InvalidArgumentError

    t = catalog.create_table(f"{ns}.bad", schema=SCHEMA, format=table_format)
    t.append(_rows([1]))
    before = _version(t)
    cases = [
        (pa.table({"id": pa.array(["x"])}), "column id is int64 in the table and string"),
        (pa.table({"id": pa.array([1], pa.int64()), "extra": [1]}), "column(s) extra the table lacks"),
        (pa.table({"region": ["eu"]}), "lacks the NOT NULL column id"),
        (pa.table({"id": pa.array([1.5])}), "does not cast"),
    ]
    for data, words in cases:
        for engine in (None, "spark"):
            with pytest.raises(InvalidArgumentError, match="nothing was written") as e:
                t.append(data, engine=engine)
            assert words in str(e.value), str(e.value)
    # a null into a NOT NULL column, on either engine
    nulls = pa.table({"id": pa.array([1, None], pa.int64())})
    for engine in (None, "spark"):
        with pytest.raises(InvalidArgumentError, match="id is NOT NULL, and 1 row"):
            t.append(nulls, engine=engine)
    with pytest.raises(InvalidArgumentError, match="no column 'nope'"):
        t.delete(where="nope = 1")
    with pytest.raises(InvalidArgumentError, match="do not match where"):
        t.overwrite(_rows([5], ["us"]), where="region = 'eu'")
    assert _version(t) == before
    # the CLI: exit 2, one line, a JSON error document
    (tmp_path / "bad.json").write_text('{"id": "not a number"}\n')
    code, out, err = lakecat("append", t.name, "--from", tmp_path / "bad.json", "--json")
    assert code == 2 and json.loads(out)["error"]["type"] == "InvalidArgumentError", (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert _version(t) == before


def test_cli_append_and_delete_without_a_jvm(catalog, ns, table_format, light_cli, lakecat, tmp_path):
    """`lakecat append --from FILE` and `lakecat delete --where` (--dry-run counts) on a plain table: no JVM in the
    process (the probe fails on an import of pyspark), and --json is one document."""
    name = f"{ns}.cli"
    catalog.create_table(name, schema=SCHEMA, format=table_format)
    import pyarrow.parquet as pq

    pq.write_table(_rows([1, 2, 3], ["eu", "us", "eu"]), tmp_path / "rows.parquet")
    (tmp_path / "more.csv").write_text("id,region,day\n4,eu,2026-01-02\n5,us,\n")
    (tmp_path / "more.jsonl").write_text('{"id": 6, "region": "eu", "day": "2026-01-03"}\n')
    doc = light_cli("append", name, "--from", tmp_path / "rows.parquet")
    assert (doc["engine"], doc["rows"], doc["committed"], doc["operation"]) == ("light", 3, True, "append"), doc
    assert doc["version_str"] == str(doc["version"])
    assert light_cli("append", name, "--from", tmp_path / "more.csv")["rows"] == 2
    assert light_cli("append", name, "--from", tmp_path / "more.jsonl", "--file-format", "json")["rows"] == 1
    dry = light_cli("delete", name, "--where", "region = 'eu'", "--dry-run")
    assert (dry["rows"], dry["dry_run"], dry["committed"]) == (4, True, False), dry
    done = light_cli("delete", name, "--where", "region = 'eu'")
    assert (done["rows"], done["engine"], done["committed"]) == (4, "light", True), done
    assert [r["id"] for r in independent_rows(catalog, name)] == [2, 5]
    # the same commands in process, human and --json
    code, out, err = lakecat("delete", name, "--where", "id = 2", "--json")
    assert code == 0 and json.loads(out)["rows"] == 1, err
    code, out, err = lakecat("append", name, "--from", tmp_path / "rows.parquet")
    assert code == 0 and "3 row(s) appended" in out + err and "no JVM" in out + err, (out, err)
    code, out, err = lakecat("append", name, "--from", tmp_path / "rows.parquet", "--where", "id = 1", "--json")
    assert code == 2 and json.loads(out)["error"]["type"] == "InvalidArgumentError"
    assert [r["id"] for r in independent_rows(catalog, name)] == [1, 2, 3, 5]


def test_spark_dataframes_and_forced_engines(catalog, ns, table_format, spark):
    from lakecat.errors import NotExactError

    t = catalog.create_table(f"{ns}.forced", schema=SCHEMA, format=table_format)
    df = spark.createDataFrame([(1, "eu"), (2, "us")], "id BIGINT, region STRING")
    r = t.append(df)
    assert (r.engine, r.engine_reason, r.rows) == ("spark", "the data is a Spark DataFrame", 2), r
    with pytest.raises(NotExactError, match="Spark DataFrame"):
        t.append(df, engine="light")
    s = t.append(_rows([3]), engine="spark")
    assert (s.engine, s.engine_reason) == ("spark", "asked for Spark (engine='spark')")
    # a predicate only Spark reads (arithmetic) goes to Spark; asked for light, it is refused
    d = t.delete(where="id + 0 = 3")
    assert d.engine == "spark" and d.rows == 1 and d.engine_reason, d
    with pytest.raises(NotExactError, match="without a JVM"):
        t.delete(where="id + 0 = 1", engine="light")
    o = t.overwrite(spark.createDataFrame([(5, "eu")], "id BIGINT, region STRING"), where="region = 'eu'")
    assert o.engine == "spark"
    assert independent_rows(catalog, t.name) == [{"id": 2, "region": "us"}, {"id": 5, "region": "eu"}]


def test_writes_keep_the_exactly_once_markers_of_ingest_streams(catalog, ns, table_format, spark):
    """A batch an ingest stream committed stays committed for it after light appends, overwrites and deletes."""
    from pyspark.sql import functions as F

    from lakecat.cdc import OP, merge

    t = catalog.create_table(f"{ns}.marked", schema=SCHEMA, format=table_format)
    src = spark.range(3).select(F.col("id"), F.lit("eu").alias("region"), F.lit("u").alias(OP))
    merge(t, src, ["id"], ["id", "region"], app_id="lakecat-test-app", batch_id=7)
    assert t.adapter.committed_batch(t, "lakecat-test-app") == 7
    assert t.append(_rows([10, 11], ["us", "us"])).engine == "light"
    assert t.overwrite(_rows([12], ["us"]), where="region = 'us'").engine == "light"
    assert t.delete(where="id = 0").engine == "light"
    t.refresh()
    assert t.adapter.committed_batch(t, "lakecat-test-app") == 7
    assert [r["id"] for r in independent_rows(catalog, t.name)] == [1, 2, 12]


# --- the Spark path: what the light libraries do not write -------------------------------------------
@pytest.mark.delta
def test_delta_deletion_vectors_delete_on_spark_and_mark_rows(catalog, ns):
    from lakecat.files import local_path

    t = catalog.create_table(f"{ns}.dv", schema=SCHEMA, format="delta", deletion_vectors=True)
    r = t.append(_rows(list(range(10)), ["eu", "us"] * 5))
    assert r.engine == "spark" and "deletion vectors" in r.engine_reason, r
    d = t.delete(where="region = 'eu'")
    assert (d.engine, d.rows) == ("spark", 5) and "deletion vectors" in d.engine_reason, d
    # delta-rs reads no table with deletion vectors; Spark's Delta reader is the reader here
    assert sorted(r.id for r in t.to_spark().collect()) == [1, 3, 5, 7, 9]
    last = sorted((local_path(t.location) / "_delta_log").glob("*.json"))[-1]
    assert '"deletionVector"' in last.read_text()  # rows marked, the file kept
    assert t.delete(where="region = 'us'", dry_run=True).rows == 5


@pytest.mark.delta
def test_delta_clustered_and_generated_tables_write_on_spark(catalog, ns):
    clustered = catalog.create_table(f"{ns}.cl", schema=SCHEMA, format="delta", cluster_by="region")
    r = clustered.append(_rows([1, 2], ["eu", "us"]))
    assert r.engine == "spark" and "liquid clustering" in r.engine_reason, r
    generated = catalog.create_table(f"{ns}.gen", schema="id BIGINT NOT NULL, ts TIMESTAMP, region STRING",
                                     format="delta", partition_by=["days(ts)"])  # fmt: skip
    g = generated.append(pa.table({"id": pa.array([1], pa.int64()), "ts": pa.array([0], pa.timestamp("us", "UTC"))}))
    assert g.engine == "spark" and "generated columns" in g.engine_reason, g
    assert independent_rows(catalog, generated.name) == [{"id": 1, "region": None}]


@pytest.mark.iceberg
def test_iceberg_merge_on_read_and_sorted_tables_write_on_spark(catalog, ns):
    mor = catalog.create_table(f"{ns}.mor", schema=SCHEMA, format="iceberg", deletion_vectors=True)
    assert mor.append(_rows([1, 2, 3], ["eu", "us", "eu"])).engine == "light"  # an append deletes nothing
    d = mor.delete(where="region = 'eu'")
    assert d.engine == "spark" and "merge-on-read" in d.engine_reason and d.rows == 2, d
    assert mor.health().delete_files >= 1  # rows marked by a delete file, as the table's mode says
    assert independent_rows(catalog, mor.name) == [{"id": 2, "region": "us"}]
    # the table has a delete file now: even an overwrite goes to Spark
    sorted_ = catalog.create_table(f"{ns}.srt", schema=SCHEMA, format="iceberg", cluster_by="region")
    s = sorted_.append(_rows([1], ["eu"]))
    assert s.engine == "spark" and "sort order" in s.engine_reason, s
    v3 = catalog.create_table(f"{ns}.v3", schema=SCHEMA, format="iceberg", format_version=3)
    assert "format version 3" in v3.append(_rows([1])).engine_reason


# --- mirrors follow every commit lakecat makes -------------------------------------------------
def _mirror_is_current(catalog, t) -> bool:
    from lakecat.formats import get_format
    from lakecat.formats.delta.mirror_commit import checksums

    ns, name = t.name.split(".")
    tbl = get_format("iceberg").library_catalog(catalog).load_table((ns, name))
    mirrored = int(tbl.current_snapshot().summary.additional_properties["lakecat.delta-version"])
    same = checksums(tbl.scan().to_arrow()) == checksums(deltalake.DeltaTable(t.location).to_pyarrow_table())
    return mirrored == deltalake.DeltaTable(t.location).version() and same


@pytest.mark.delta
def test_mirror_follows_append_delete_and_a_background_ingest(catalog, ns, tmp_path):
    import lakecat

    t = catalog.create_table(f"{ns}.m", schema=SCHEMA, format="delta")
    t.append(_rows([1, 2], ["eu", "us"]))
    t.mirror(as_format="iceberg")
    assert t.append(_rows([3, 4], ["eu", "us"])).engine == "light"
    assert _mirror_is_current(catalog, t)
    t.delete(where="region = 'eu'")
    assert _mirror_is_current(catalog, t)
    # a background stream: each batch's commit brings the mirror along, without the caller's help
    landing = tmp_path / "landing"
    landing.mkdir()
    for i in range(2):
        (landing / f"{i}.json").write_text(json.dumps({"id": 10 + i, "region": "eu", "day": "2026-01-01"}) + "\n")
    handle = catalog.ingest(t.name, lakecat.FileSource(str(landing), format="json"), background=True,
                            max_files_per_batch=1)  # fmt: skip
    handle.await_termination(300)
    handle.stop()
    deadline = time.monotonic() + 30
    while not _mirror_is_current(catalog, t):
        assert time.monotonic() < deadline, "the mirror stayed behind the background ingest"
        time.sleep(0.5)
    assert [r["id"] for r in independent_rows(catalog, t.name)] == [2, 4, 10, 11]


# --- the row filters the light libraries get: exactly the rows Spark's DELETE selects -------------------
PREDICATES = [
    "region = 'eu'",
    "NOT (region = 'eu')",
    "n > 2 OR region IS NULL",
    "NOT (n > 2 OR region = 'us')",
    "n NOT IN (1, 2)",
    "NOT n BETWEEN 1 AND 3",
    "n NOT BETWEEN 1 AND 3 OR `flag` = FALSE",
    "day >= DATE '2026-01-02' AND flag = TRUE",
    "2 < n AND region IS NOT NULL",
    "region IN ('eu', 'us') AND NOT (n = 1)",
    "NOT (NOT (day = DATE '2026-01-01'))",
]


def _nulls_table() -> pa.Table:
    return pa.table({
        "id": pa.array(range(8), pa.int64()),
        "region": pa.array(["eu", "us", None, "eu", "us", None, "eu", "x"]),
        "n": pa.array([1, None, 3, 4, None, 2, 5, 1], pa.int64()),
        "day": pa.array([date(2026, 1, 1), None, date(2026, 1, 2), date(2026, 1, 3), date(2026, 1, 1), None,
                         date(2026, 1, 2), date(2026, 1, 3)]),
        "flag": pa.array([True, None, False, True, True, False, None, True]),
    })  # fmt: skip


def test_light_row_filters_delete_the_rows_spark_would(tmp_path):
    """Each predicate's rows, as DuckDB selects them (the light path's reading of Spark SQL, with three-valued logic),
    are exactly what delta-rs and pyiceberg delete with the filter lakecat hands them — nulls included."""
    import duckdb
    from pyiceberg.catalog.sql import SqlCatalog

    from lakecat.errors import NotExactError
    from lakecat.formats.delta.writes import datafusion_sql
    from lakecat.formats.iceberg.writes import iceberg_expression
    from lakecat.predicate import row_filter, to_duckdb
    from lakecat.versions import count_matching

    data = _nulls_table()
    ice = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    ice.create_namespace("n")
    for i, pred in enumerate(PREDICATES):
        expected = {r[0] for r in duckdb.sql(f"SELECT id FROM data WHERE {to_duckdb(pred, data.schema)}").fetchall()}
        assert count_matching(data, pred) == len(expected), pred
        node = row_filter(pred, data.schema)
        location = str(tmp_path / f"d{i}")
        deltalake.write_deltalake(location, data)
        deltalake.write_deltalake(location, data.schema.empty_table(), mode="overwrite", predicate=datafusion_sql(node))
        left = set(pa.table(deltalake.DeltaTable(location).to_pyarrow_table()).column("id").to_pylist())
        assert set(range(8)) - left == expected, (pred, "delta-rs")
        tbl = ice.create_table(("n", f"t{i}"), schema=data.schema)
        tbl.append(data)
        tbl.delete(delete_filter=iceberg_expression(node))
        left = set(ice.load_table(("n", f"t{i}")).scan().to_arrow().column("id").to_pylist())
        assert set(range(8)) - left == expected, (pred, "pyiceberg")
    for pred in ("n + 1 = 2", "lower(region) = 'eu'", "flag", "n = 1.5", "region = 1", "day = '2026-01-01'"):
        with pytest.raises(NotExactError):
            row_filter(pred, data.schema)
