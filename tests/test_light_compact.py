"""Compaction without a JVM (issue #71): pyiceberg's replace commit and delta-rs's OPTIMIZE run a small bin-pack; Spark
the rest (sorts, purges, features the light libraries do not write, work over lakecat.maintain.light-max-bytes).

Tables written by lakecat through Spark and by pyiceberg / delta-rs directly; after a light compaction the rows (read by
pyiceberg / delta-rs and by Spark), partitions, field ids and statistics are checked, and so is the commit's kind
(Iceberg ``replace``, Delta OPTIMIZE with ``dataChange=false``). A compaction paused between its plan and its commit
while another process deletes or appends never loses the other's commit. One small-file rule: health, compact and
maintain give a partition of seven small files the same verdict.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import pyiceberg_catalog, read_arrow, version_ids

import lakecat.engine_choice as engine_choice
from lakecat.identifiers import TableIdent
from lakecat.metastore import Registry

pytestmark = pytest.mark.spark

SCHEMA = "id BIGINT NOT NULL, region STRING, v STRING"
TARGET = "1MB"


def _batch(start: int, n: int, region: str | None = None) -> pa.Table:
    ids = list(range(start, start + n))
    regions = [region or ("eu" if i % 2 == 0 else "us") for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "region": regions, "v": [f"v{i}" for i in ids]})


def library_table(catalog, name: str, fmt: str, batches: list[pa.Table]):
    """A table partitioned by region written by pyiceberg (its appends) or delta-rs (write_deltalake), one commit a
    batch; registered in lakecat's catalog as such tables are (no Spark)."""
    ident = TableIdent.parse(name)
    catalog.metastore.ready()
    if fmt == "iceberg":
        sql = pyiceberg_catalog(catalog)
        sql.create_namespace_if_not_exists(ident.namespace)
        tbl = sql.create_table((ident.namespace, ident.name), schema=batches[0].schema)
        with tbl.update_spec() as spec:
            spec.add_identity("region")
        for b in batches:
            tbl.append(b)
    else:
        from deltalake import write_deltalake

        location = f"{catalog.config.warehouse_uri.rstrip('/')}/{ident.namespace}/{ident.name}"
        for b in batches:
            write_deltalake(location, b, mode="append", partition_by=["region"])
        Registry(catalog.metastore, "lakecat_delta_tables", "delta").register(ident, location, {})
    return catalog.load_table(name)


def spark_table(catalog, spark, name: str, fmt: str, commits: int):
    t = catalog.create_table(name, schema=SCHEMA, format=fmt, partition_by="region")
    for i in range(commits):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({2 * i}, 'eu', 'v{2 * i}'), ({2 * i + 1}, 'us', 'v{2 * i + 1}')")
    return t


def light_rows(catalog, t) -> list[tuple]:
    """Rows through pyiceberg or delta-rs (no Spark), sorted."""
    return sorted((r["id"], r["region"], r["v"]) for r in read_arrow(catalog, t).to_pylist())


def spark_rows(t) -> list[tuple]:
    return sorted(tuple(r) for r in t.to_spark().select("id", "region", "v").collect())


def iceberg_files(catalog, t) -> list:
    tbl = pyiceberg_catalog(catalog).load_table((t.entry.ident.namespace, t.entry.ident.name))
    return [task.file for task in tbl.scan().plan_files()]


def delta_last_commit(t) -> list[dict]:
    root = t.location.removeprefix("file://")
    last = sorted(glob.glob(f"{root}/_delta_log/*.json"))[-1]
    return [json.loads(line) for line in Path(last).read_text().splitlines() if line.strip()]


def check_light_result(catalog, t, fmt: str, before: list[tuple], partitions_before: set[str]) -> None:
    """Rows, partitions, commit kind, field ids and statistics after a light compaction."""
    from lakecat.maintenance import data_files

    assert light_rows(catalog, t) == before
    assert {f.partition for f in data_files(t)} == partitions_before
    if fmt == "iceberg":
        tbl = pyiceberg_catalog(catalog).load_table((t.entry.ident.namespace, t.entry.ident.name))
        assert tbl.current_snapshot().summary.operation.value == "replace"
        ids = {f.name: f.field_id for f in tbl.schema().fields}
        import pyarrow.parquet as pq

        for f in iceberg_files(catalog, t):
            schema = pq.read_schema(f.file_path.removeprefix("file://"))
            assert {n: int(schema.field(n).metadata[b"PARQUET:field_id"]) for n in schema.names} == ids
            assert f.record_count > 0 and f.value_counts and f.lower_bounds and f.upper_bounds  # column metrics
            assert f.partition[0] in ("eu", "us")
    else:
        actions = delta_last_commit(t)
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        assert info["operation"] == "OPTIMIZE"
        adds = [a["add"] for a in actions if "add" in a]
        removes = [a["remove"] for a in actions if "remove" in a]
        assert adds and removes and all(a["dataChange"] is False for a in adds + removes)
        for a in adds:
            stats = json.loads(a["stats"])
            assert stats["numRecords"] > 0 and "id" in stats["minValues"] and "id" in stats["maxValues"]
            assert a["partitionValues"]["region"] in ("eu", "us")


@pytest.mark.parametrize("writer", ["spark", "library"])
def test_light_compaction_leaves_what_spark_would(catalog, spark, ns, table_format, writer):
    if writer == "spark":
        t = spark_table(catalog, spark, f"{ns}.w", table_format, commits=6)
    else:
        t = library_table(catalog, f"{ns}.w", table_format, [_batch(10 * i, 4) for i in range(6)])
    from lakecat.maintenance import data_files

    before, parts = light_rows(catalog, t), {f.partition for f in data_files(t)}
    assert spark_rows(t) == before

    plan = t.compact(target_file_size=TARGET, dry_run=True)
    assert plan.engine == "light" and "lakecat.maintain.light-max-bytes" in plan.engine_reason
    res = t.compact(target_file_size=TARGET)
    assert (res.engine, res.files_before, res.files_after, res.files_rewritten) == ("light", 12, 2, 12)
    check_light_result(catalog, t, table_format, before, parts)
    if table_format == "iceberg":
        spark.sql(f"REFRESH TABLE {t.spark_name}")  # pyiceberg committed: Spark's cached table is stale
    assert spark_rows(t) == before  # Spark reads what the light engine wrote


def test_light_compaction_runs_without_a_jvm(light_cli, catalog, ns, table_format):
    t = library_table(catalog, f"{ns}.nojvm", table_format, [_batch(10 * i, 4) for i in range(4)])
    before = light_rows(catalog, t)
    doc = light_cli("compact", t.name, "--target-file-size", TARGET, env={"CI": "true"})  # fails if pyspark loaded
    assert doc["engine"] == "light" and doc["files_after"] == 2 and doc["files_rewritten"] == 8
    assert light_rows(catalog, t) == before


def _with_deletes(catalog, spark, ns, fmt):
    props = {"write.delete.mode": "merge-on-read"} if fmt == "iceberg" else {"delta.enableDeletionVectors": "true"}
    t = catalog.create_table(f"{ns}.del", schema=SCHEMA, format=fmt, partition_by="region", properties=props)
    for i in range(4):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({4 * i}, 'eu', 'a'), ({4 * i + 1}, 'eu', 'b'), "
                  f"({4 * i + 2}, 'us', 'c'), ({4 * i + 3}, 'us', 'd')")  # fmt: skip
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 4")
    return t


def test_deletes_send_compaction_to_spark_and_forced_light_writes_nothing(cli, catalog, spark, ns, table_format):
    t = _with_deletes(catalog, spark, ns, table_format)
    before = spark_rows(t)
    history = version_ids(catalog, t.name)

    plan = t.compact(target_file_size=TARGET, dry_run=True)
    assert plan.engine == "spark" and "delet" in plan.engine_reason, plan.engine_reason
    code, out, err = cli("compact", t.name, "--target-file-size", TARGET, "--engine", "light")
    assert code == 3 and "cannot run without Spark" in err and len(err.strip().splitlines()) == 1, err
    assert version_ids(catalog, t.name) == history  # nothing committed
    code, out, err = cli("compact", t.name, "--target-file-size", TARGET, "--dry-run")
    assert code == 0 and "engine: spark" in out, out

    res = t.compact(target_file_size=TARGET)
    assert res.engine == "spark" and res.files_after < res.files_before
    assert spark_rows(t) == before and 4 not in [r[0] for r in before]


def test_engine_choice_follows_strategy_limit_and_request(cli, catalog, ns, table_format):
    t = library_table(catalog, f"{ns}.choice", table_format, [_batch(10 * i, 4) for i in range(4)])
    assert t.compact(target_file_size=TARGET, dry_run=True, engine="spark").engine == "spark"
    zorder = t.compact(strategy="zorder", by="id", target_file_size=TARGET, dry_run=True)
    assert zorder.engine == "spark" and "only Spark" in zorder.engine_reason
    t.set_properties({"lakecat.maintain.light-max-bytes": "1KB"})
    over = t.compact(target_file_size=TARGET, dry_run=True)
    assert over.engine == "spark" and "over the light engine's" in over.engine_reason
    code, _, err = cli("compact", t.name, "--engine", "bogus", "--dry-run")
    assert code == 2 and "invalid engine" in err


# --- a writer between the plan and the commit ------------------------------------------------------
_OTHER_WRITER = r"""
import sys
import pyarrow as pa
fmt, what, where = sys.argv[1], sys.argv[2], sys.argv[3:]
if fmt == "delta":
    from deltalake import DeltaTable, write_deltalake
    location, = where
    if what == "delete":
        DeltaTable(location).delete("id = 0")
    else:
        write_deltalake(location, pa.table({"id": pa.array([1000], pa.int64()), "region": ["eu"], "v": ["new"]}),
                        mode="append", partition_by=["region"])
else:
    from pyiceberg.catalog.sql import SqlCatalog
    name, uri, warehouse, namespace, table = where
    tbl = SqlCatalog(name, uri=uri, warehouse=warehouse).load_table((namespace, table))
    if what == "delete":
        tbl.delete("id = 0")
    else:
        tbl.append(pa.table({"id": pa.array([1000], pa.int64()), "region": ["eu"], "v": ["new"]}))
"""


@pytest.mark.parametrize("what", ["delete", "append"])
def test_a_commit_between_plan_and_commit_is_never_undone(catalog, ns, table_format, what, monkeypatch):
    t = library_table(catalog, f"{ns}.race_{what}", table_format, [_batch(10 * i, 4) for i in range(6)])
    before = light_rows(catalog, t)
    where = ([t.location] if table_format == "delta" else
             [catalog.name, catalog.config.metastore.sqlalchemy_url, catalog.config.warehouse_uri,
              t.entry.ident.namespace, t.entry.ident.name])  # fmt: skip
    paused: list[str] = []

    def other_process_writes(table: str, action: str) -> None:
        if paused:
            return
        paused.append(f"{table} {action}")
        subprocess.run([sys.executable, "-c", _OTHER_WRITER, table_format, what, *where], check=True, timeout=120,
                       env={**os.environ})  # fmt: skip

    monkeypatch.setattr(engine_choice, "before_light_commit", other_process_writes)
    res = t.compact(target_file_size=TARGET)
    assert paused == [f"{t.name} compact"] and res.engine == "light"
    rows = light_rows(catalog, t)
    if what == "delete":  # the compaction conflicted, planned again on the new version: row 0 stays deleted
        assert res.retries >= 1
        assert rows == [r for r in before if r[0] != 0]
    else:  # an append conflicts with no compaction: it is kept
        assert rows == sorted([*before, (1000, "eu", "new")])
    assert len(_live(t)) <= 3  # compacted: at most a file per partition and the appended one
    if table_format == "iceberg":
        assert not _unreferenced_data_files(catalog, t)  # the failed attempt's files were deleted


def test_deletes_committed_between_plan_and_commit_send_the_retry_to_spark(catalog, spark, ns, table_format,
                                                                           monkeypatch):  # fmt: skip
    """Spark deletes with delete files / deletion vectors while the light compaction is paused before its commit: the
    commit is refused, the retry finds what only Spark rewrites exactly and runs on Spark; the row stays deleted."""
    props = (
        {"write.delete.mode": "merge-on-read"} if table_format == "iceberg" else {"delta.enableDeletionVectors": "true"}
    )
    t = catalog.create_table(f"{ns}.mor", schema=SCHEMA, format=table_format, partition_by="region", properties=props)
    for i in range(6):  # two rows a file: the delete hides one row of a file (a delete file, a deletion vector)
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({4 * i}, 'eu', 'a'), ({4 * i + 1}, 'eu', 'b'), "
                  f"({4 * i + 2}, 'us', 'c'), ({4 * i + 3}, 'us', 'd')")  # fmt: skip
    before = spark_rows(t)
    paused: list[str] = []

    def spark_deletes(table: str, action: str) -> None:
        if not paused:
            paused.append(table)
            spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 0")

    monkeypatch.setattr(engine_choice, "before_light_commit", spark_deletes)
    res = t.compact(target_file_size=TARGET)
    if table_format == "iceberg":
        spark.sql(f"REFRESH TABLE {t.spark_name}")
    assert spark_rows(t) == [r for r in before if r[0] != 0]
    assert paused and res.engine == "spark" and "found after the engine was chosen" in res.engine_reason, res
    assert res.retries >= 1


def _live(t) -> list[str]:
    from lakecat.maintenance import data_files

    return [f.path for f in data_files(t)]


def _unreferenced_data_files(catalog, t) -> set[str]:
    """Parquet files under the table's data directory that no snapshot references."""
    tbl = pyiceberg_catalog(catalog).load_table((t.entry.ident.namespace, t.entry.ident.name))
    referenced = {e.data_file.file_path.removeprefix("file://")
                  for s in tbl.metadata.snapshots for m in s.manifests(tbl.io)
                  for e in m.fetch_manifest_entry(tbl.io, discard_deleted=False)}  # fmt: skip
    on_disk = set(glob.glob(f"{t.location.removeprefix('file://')}/data/**/*.parquet", recursive=True))
    return on_disk - referenced


# --- one small-file rule ---------------------------------------------------------------------------
def test_one_small_file_rule_for_health_compact_and_maintain(cli, catalog, spark, ns, table_format):
    """A partition of seven small files is due for health, compact --dry-run and maintain (plain and --auto); one of
    three is due for none of them; all say it with the same rule."""
    busy = library_table(catalog, f"{ns}.busy", table_format,
                         [_batch(10 * i, 1, "eu") for i in range(7)] + [_batch(100 + i, 1, "us") for i in range(3)])  # fmt: skip
    calm = library_table(catalog, f"{ns}.calm", table_format, [_batch(10 * i, 2) for i in range(3)])
    for t in (busy, calm):
        t.set_properties({"lakecat.compact.target-file-size": TARGET})

    def verdicts(t) -> dict[str, object]:
        code, out, err = cli("health", t.name, "--json")
        assert code == 0, err
        h = json.loads(out)["tables"][0]
        code, out, err = cli("compact", t.name, "--dry-run", "--json")
        assert code == 0, err
        plan = json.loads(out)
        got = {"health": "compact" in h["needs"], "compact": any(p["due"] for p in plan["partitions"])}
        for auto in ((), ("--auto",)):
            code, out, err = cli("maintain", t.name, *auto, "--dry-run", "--json")
            assert code == 0, err
            act = next(a for a in json.loads(out)["tables"][0]["actions"] if a["action"] == "compact")
            got["maintain" + "".join(auto)] = act["status"] == "would-run"
            if not auto and act["status"] == "skipped":
                assert plan["due_rule"].removesuffix(" in one partition") in act["reason"], act
        assert h["thresholds"]["due_rule"] == plan["due_rule"]
        if got["health"]:
            assert plan["due_rule"] in h["reason"] and "7 small files" in h["reason"], h["reason"]
        return got

    assert verdicts(busy) == {"health": True, "compact": True, "maintain": True, "maintain--auto": True}
    assert verdicts(calm) == {"health": False, "compact": False, "maintain": False, "maintain--auto": False}

    code, out, err = cli("maintain", busy.name, "--json")  # the due table compacted, on the light engine, and logged
    assert code == 0, err
    act = next(a for a in json.loads(out)["tables"][0]["actions"] if a["action"] == "compact")
    assert act["status"] == "done" and act["result"]["engine"] == "light", act
    code, out, err = cli("maintenance-log", busy.name, "--json")
    assert code == 0, err
    assert [r["engine"] for r in json.loads(out) if r["action"] == "compact"] == ["light"]
