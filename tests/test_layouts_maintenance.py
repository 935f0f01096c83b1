"""Today's layouts kept up: a clustered table with deletion vectors (Delta) / an Iceberg v3 merge-on-read table with a
sort order, written by plain Spark SQL and registered; health's clustering and purge verdicts, `maintain --auto`
running the right rewrite, compaction that clusters, reads that stay exact (light path against Spark, row for row) and
the files a filtered read plans to open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import pyiceberg_catalog

COMMITS = 5  # each writes keys over the whole range: every file overlaps the others' key ranges
ROWS = 400  # per commit
PROPS = {"lakecat.health.small-files": "100"}  # every file here is small: keep the small-file verdict out of the way


def _ok(cli, *args):
    code, out, err = cli(*args, "--json")
    assert code == 0, (args, out, err)
    return json.loads(out)


def _plain_spark_table(spark, table_format: str, tmp_path: Path) -> tuple[Path, str]:
    """Plain Spark SQL, no lakecat: Delta liquid clustering with deletion vectors and the change data feed; Iceberg
    format v3, merge-on-read, ordered by k, in a Hadoop catalog of its own. One commit of rows."""
    props = ", ".join(f"'{k}' = '{v}'" for k, v in PROPS.items())
    if table_format == "delta":
        location = tmp_path / "clustered"
        name = f"delta.`{location}`"
        spark.sql(f"CREATE TABLE {name} (k BIGINT, v STRING) USING delta CLUSTER BY (k) TBLPROPERTIES "
                  f"('delta.enableDeletionVectors' = 'true', 'delta.enableChangeDataFeed' = 'true', {props})")  # fmt: skip
    else:
        spark.conf.set("spark.sql.catalog.layouts_hadoop", "org.apache.iceberg.spark.SparkCatalog")
        spark.conf.set("spark.sql.catalog.layouts_hadoop.type", "hadoop")
        spark.conf.set("spark.sql.catalog.layouts_hadoop.warehouse", str(tmp_path / "hadoop"))
        name = "layouts_hadoop.db.clustered"
        location = tmp_path / "hadoop" / "db" / "clustered"
        spark.sql(f"CREATE TABLE {name} (k BIGINT, v STRING) USING iceberg TBLPROPERTIES ('format-version' = '3', "
                  "'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', "
                  f"'write.merge.mode' = 'merge-on-read', {props})")  # fmt: skip
        spark.sql(f"ALTER TABLE {name} WRITE ORDERED BY k")
    _append(spark, name, 0)
    return location, name


def _append(spark, name: str, commit: int) -> None:
    spark.sql(f"INSERT INTO {name} SELECT id * {COMMITS} + {commit}, concat('v', id) FROM range({ROWS})")


def _independent_keys(catalog, name: str) -> list[int]:
    """The k column read by the format's own library (pyiceberg; delta-rs's query engine, which applies deletion
    vectors), sorted."""
    entry = catalog.entry(name)
    if entry.format == "iceberg":
        tbl = pyiceberg_catalog(catalog).load_table((entry.ident.namespace, entry.ident.name))
        return sorted(tbl.scan().to_arrow().column("k").to_pylist())
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    reader = QueryBuilder().register("t", DeltaTable(entry.location)).execute("SELECT k FROM t")
    return sorted(pa.RecordBatchReader.from_stream(reader).read_all().column("k").to_pylist())


def _read_both(cli, name: str, *args) -> list:
    """The same read through the light path and through Spark; asserts they answer alike and the light one did."""
    light = _ok(cli, *args, "--engine", "light")
    spark = _ok(cli, *args, "--engine", "spark")
    assert light["engine"] == "light" and spark["engine"] == "spark", (light, spark)
    if "count" in light:
        assert light["count"] == spark["count"]
        return light["count"]
    key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
    assert sorted(light["rows"], key=key) == sorted(spark["rows"], key=key)
    return light["rows"]


@pytest.mark.spark
def test_clustered_table_with_deletion_vectors_health_maintain_and_reads(cli, catalog, spark, ns, table_format,
                                                                         tmp_path):  # fmt: skip
    location, _ = _plain_spark_table(spark, table_format, tmp_path)
    name = f"{ns}.clustered"
    _ok(cli, "register", name, "--location", location, "--format", table_format)
    t = catalog.table(name)
    for commit in range(1, COMMITS):
        _append(spark, t.spark_name, commit)
    spark.sql(f"DELETE FROM {t.spark_name} WHERE k % 25 < 5")  # a fifth of every file's rows
    expected = sorted(k for k in range(COMMITS * ROWS) if k % 25 >= 5)

    h = _ok(cli, "health", name)["tables"][0]
    assert h["clustering"] == ["k"] and h["clustering_depth"] >= 4 and h["overlapping_files"] == h["data_files"], h
    assert h["deleted_rows"] == ROWS and h["delete_kind"] == "deletion vectors", h
    assert h["verdict"] == "purge" and h["needs"][:2] == ["purge", "cluster"], h
    assert "overlap" in h["reason"] and "hide 20% of the rows" in h["reason"]

    # reads stay exact on deletion vectors: the light path (pyiceberg / delta-rs) answers, row for row as Spark
    version = _ok(cli, "describe", name)["current_version"]
    rows = _read_both(cli, name, "timetravel", name, "--version", version, "--limit", "0")
    assert sorted(r["k"] for r in rows) == expected == _independent_keys(catalog, name)
    assert _ok(cli, "timetravel", name, "--version", version, "--count", "--where", "k < 100")["count"] == 80
    history = _ok(cli, "history", name)
    before_delete = history[1]["version"]
    changes = _ok(cli, "changes", name, "--since", before_delete, "--limit", "0")
    pairs = sorted((r["k"], r["_change_type"]) for r in changes["rows"])
    assert pairs == [(k, "delete") for k in range(COMMITS * ROWS) if k % 25 < 5]
    if (
        changes["engine"] == "light"
    ):  # Delta's change data feed with deletion vectors, read by delta-rs: as Spark reads it
        spark_changes = _ok(cli, "changes", name, "--since", before_delete, "--limit", "0", "--engine", "spark")
        assert pairs == sorted((r["k"], r["_change_type"]) for r in spark_changes["rows"])

    # a filtered read: the files the statistics cannot rule out, of all the version's files
    none = _ok(cli, "timetravel", name, "--version", version, "--count", "--where", "k = -1")
    assert none["count"] == 0 and none["files_scanned"] == 0 and none["files_total"] == h["data_files"], none

    plan = _ok(cli, "compact", name, "--dry-run")
    assert plan["strategy"] == "cluster" and plan["by"] == ["k"] and plan["dry_run"] is True, plan
    planned = _ok(cli, "maintain", name, "--auto", "--dry-run")["tables"][0]
    acts = {a["action"]: a for a in planned["actions"]}
    assert acts["cluster"]["status"] == "would-run" and "purge" not in acts, planned  # a recluster drops deletes too
    done = _ok(cli, "maintain", name, "--auto")["tables"][0]
    assert [a["status"] for a in done["actions"] if a["action"] == "cluster"] == ["done"], done

    h = _ok(cli, "health", name)["tables"][0]
    assert h["deleted_rows"] == 0 and h["clustering_depth"] < 4 and not {"cluster", "purge"} & set(h["needs"]), h
    assert _independent_keys(catalog, name) == expected
    after = _ok(cli, "timetravel", name, "--version", h["current_version"], "--count", "--where", "k = 7")
    assert after["count"] == 1 and 1 <= after["files_scanned"] <= after["files_total"], after

    # deletes alone: maintain --auto purges them (Delta REORG ... APPLY (PURGE), Iceberg's rewrite of the files)
    spark.sql(f"DELETE FROM {t.spark_name} WHERE k % 25 >= 5 AND k % 25 < 10")
    h = _ok(cli, "health", name)["tables"][0]
    assert h["needs"][:1] == ["purge"] and "cluster" not in h["needs"], h
    done = _ok(cli, "maintain", name, "--auto")["tables"][0]
    assert [a["status"] for a in done["actions"] if a["action"] == "purge"] == ["done"], done
    assert _independent_keys(catalog, name) == [k for k in expected if k % 25 >= 10]
    # Delta's REORG ... PURGE (and OPTIMIZE FULL) leave a clustered table's one-file cluster as it is, deletion
    # vector and all: a gap of the engine, checked so that its fix is noticed
    assert _ok(cli, "health", name)["tables"][0]["deleted_rows"] == (ROWS if table_format == "delta" else 0)


@pytest.mark.spark
def test_compact_full_reclusters_and_is_refused_without_keys(cli, catalog, ns, table_format):
    t = catalog.create_table(f"{ns}.plain", schema="k BIGINT", format=table_format)
    code, out, err = cli("compact", t.name, "--full", "--json")
    assert code == 2 and "has no clustering keys" in json.loads(out)["error"]["message"], (out, err)


def test_clustering_depth_from_key_ranges():
    from lakecat.formats.base import FileFact, HealthFacts
    from lakecat.health import _judge_clustering
    from lakecat.results import TableHealth

    def judged(bounds, keys=("k",)):
        h = TableHealth("t", "delta", "healthy", "")
        _judge_clustering(h, HealthFacts(files=[FileFact(1, "", 1, bounds=b) for b in bounds], commits=[],
                                         clustering=list(keys)))  # fmt: skip
        return h.overlapping_files, h.clustering_depth

    sorted_files = [((i * 10, i * 10 + 9),) for i in range(8)]
    assert judged(sorted_files) == (0, 1.0)  # disjoint ranges: a key value is in one file
    assert judged([((0, 100),)] * 8) == (8, 8.0)  # every file spans every key
    assert judged([*sorted_files, ((0, 100),)]) == (9, 2.78)  # one late append overlaps all
    boxes = [((0, 10), (0, 10)), ((0, 10), (20, 30)), ((5, 15), (5, 25))]  # two keys: boxes overlap on both or not
    assert judged(boxes, ("a", "b")) == (3, 2.33)
    assert judged([None, None]) == (None, None) and judged([]) == (None, None)


def test_stats_filter_rules_out_files_by_their_statistics():
    from lakecat.pruning import ColumnStats, stats_filter

    file = {"k": ColumnStats(10, 20, 0, 100), "s": ColumnStats("b", "d", 5, 100)}
    may = {w: stats_filter(w)(file) for w in ("k = 15", "k = 25", "k < 10", "k <= 10", "K > 19", "k IN (1, 30)",
                                             "k IN (1, 12)", "NOT k < 21", "k = 30 OR s = 'c'", "s = 'a' AND k = 15",
                                             "s IS NULL", "s IS NOT NULL", "other = 1", "k = '2026-01-01'")}  # fmt: skip
    assert [w for w, m in may.items() if not m] == [
        "k = 25",
        "k < 10",
        "k IN (1, 30)",
        "NOT k < 21",
        "s = 'a' AND k = 15",
    ]
    assert stats_filter("k = ") is None  # a predicate the parser does not read: no count
    assert stats_filter("k IS NULL")({"k": ColumnStats(1, 2, 0, 5)}) is False
