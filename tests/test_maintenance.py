"""compact / expire / clean-orphans / maintain / alter on both formats, checked with independent readers."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from helpers import read_rows, version_ids

pytestmark = pytest.mark.spark

SCHEMA = "id BIGINT NOT NULL, region STRING, v STRING"
COMMITS = 12


def build(catalog, spark, name, fmt, *, commits=COMMITS, properties=None):
    """A table partitioned by region with many small commits: 2 files per commit."""
    t = catalog.create_table(name, schema=SCHEMA, format=fmt, partition_by="region", properties=properties)
    for i in range(commits):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({2 * i}, 'eu', 'a{i}'), ({2 * i + 1}, 'us', 'b{i}')")
    return t


def contents(catalog, t):
    """Rows through an independent reader: pyiceberg or delta-rs (no Spark)."""
    return sorted((r["id"], r["region"], r["v"]) for r in read_rows(catalog, t))


def data_files(t):
    from lakecat.maintenance import data_files as listed

    return listed(t)


def live_files(t):
    return sorted(f.path for f in data_files(t))


def disk(t):
    """Every file under the table's directory, with its modification time."""
    root = Path(t.location.replace("file://", ""))
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def age_log(t, seconds=7200):
    """Date the Delta log back: expiry cuts it only before a checkpoint older than an hour."""
    then = time.time() - seconds
    for p in (Path(t.location.replace("file://", "").replace("file:", "")) / "_delta_log").iterdir():
        os.utime(p, (then, then))


def versions(t):
    return version_ids(t.catalog, t.name)


def expected_rows(commits=COMMITS):
    return sorted(
        [(2 * i, "eu", f"a{i}") for i in range(commits)] + [(2 * i + 1, "us", f"b{i}") for i in range(commits)]
    )


def run_json(cli, *args):
    code, out, err = cli(*args, "--json")
    return code, json.loads(out), err


# --- compact ----------------------------------------------------------------------------------
def test_compact_dry_run_changes_nothing_then_compacts(cli, catalog, spark, ns, table_format):
    t = build(catalog, spark, f"{ns}.c", table_format)
    files, on_disk, vers = live_files(t), disk(t), versions(t)
    assert len(files) == 2 * COMMITS
    assert contents(catalog, t) == expected_rows()

    code, doc, err = run_json(cli, "compact", t.name, "--target-file-size", "1MB", "--dry-run")
    assert code == 0, err
    assert doc["dry_run"] is True and doc["files_before"] == 2 * COMMITS
    assert doc["files_rewritten"] == 2 * COMMITS and doc["files_after"] == 2
    assert sorted(p["partition"] for p in doc["partitions"]) == ["region=eu", "region=us"]
    assert all(p["files"] == COMMITS and p["estimated_output_files"] == 1 for p in doc["partitions"])
    assert live_files(t) == files and disk(t) == on_disk and versions(t) == vers  # not a byte changed

    code, doc, err = run_json(cli, "compact", t.name, "--target-file-size", "1MB")
    assert code == 0, err
    for key in (
        "files_before",
        "files_after",
        "bytes_before",
        "bytes_after",
        "dry_run",
        "files_rewritten",
        "duration_s",
    ):
        assert key in doc
    assert doc["dry_run"] is False and doc["files_before"] == 2 * COMMITS and doc["files_after"] == 2
    assert doc["files_rewritten"] == 2 * COMMITS and len(live_files(t)) == 2
    assert doc["bytes_after"] == sum(f.size for f in data_files(t))  # the totals from metadata match the file list
    assert 0 < doc["engine_s"] <= doc["duration_s"]
    assert contents(catalog, t) == expected_rows()
    assert t.to_spark().count() == 2 * COMMITS

    # nothing left to do: no empty commit
    vers = versions(t)
    res = t.compact(target_file_size="1MB")
    assert res.files_rewritten == 0 and versions(t) == vers


def test_compact_totals_after_deletes(catalog, spark, ns, table_format):
    """With rows deleted (Iceberg delete files, Delta deletion vectors) the totals after a compaction are still
    those of the live data files: Iceberg's snapshot totals count delete files too, so lakecat lists then."""
    props = ({"write.delete.mode": "merge-on-read"} if table_format == "iceberg"
             else {"delta.enableDeletionVectors": "true"})  # fmt: skip
    t = build(catalog, spark, f"{ns}.d", table_format, commits=4, properties=props)
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 0")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (100, 'eu', 'x'), (101, 'us', 'y')")
    res = t.compact(target_file_size="1MB")
    files = data_files(t)
    assert (res.files_after, res.bytes_after) == (len(files), sum(f.size for f in files))
    assert res.files_after < res.files_before
    # delta-rs reads no deletion vectors: the rows through Spark
    assert sorted(tuple(r) for r in t.to_spark().select("id", "region", "v").collect()) == [
        r for r in expected_rows(4) if r[0] != 0] + [(100, "eu", "x"), (101, "us", "y")]  # fmt: skip


def test_compact_zorder_where_and_refusals(cli, catalog, spark, ns, table_format):
    t = build(catalog, spark, f"{ns}.z", table_format, commits=6)
    us_files = [f for f in live_files(t) if "region=us" in f]

    plan = t.compact(strategy="zorder", by=["id", "v"], where="region = 'eu'", target_file_size="1MB", dry_run=True)
    assert [p.partition for p in plan.partitions] == ["region=eu"] and plan.files_rewritten == 6
    res = t.compact(strategy="zorder", by="id, v", where="region = 'eu'", target_file_size="1MB")
    assert res.files_after == 7 and res.files_rewritten == 6
    assert [f for f in live_files(t) if "region=us" in f] == us_files  # the other partition is untouched
    assert contents(catalog, t) == expected_rows(6)

    bad = [
        (["--where", "region = 'eu'; DROP TABLE x"], 2, "not allowed"),
        (["--where", "region = 'eu' -- x"], 2, "not allowed"),
        (["--where", "region = = 'eu'"], 2, "invalid --where"),
        (["--where", "nosuchcol = 1"], 2, "invalid --where"),
        (["--strategy", "zorder"], 2, "needs --by"),
        (["--strategy", "fold"], 2, "invalid strategy"),
        (["--target-file-size", "lots"], 2, "invalid size"),
    ]
    if t.adapter.compaction_predicate_columns(t) is not None:  # the format compacts by partition predicates only
        bad.append((["--where", "id > 3"], 2, "partition columns only"))
    if not t.adapter.supports("compact_sort"):
        bad.append((["--strategy", "sort", "--by", "id"], 3, f"not supported for {table_format}"))
    for args, code, msg in bad:
        rc, doc, err = run_json(cli, "compact", t.name, *args)
        assert rc == code, (args, doc, err)
        assert msg in doc["error"]["message"], (args, doc)
        assert "Traceback" not in err
    assert contents(catalog, t) == expected_rows(6)


@pytest.mark.notimpl("compact_sort")
def test_compact_sort(catalog, spark, ns, table_format):
    t = build(catalog, spark, f"{ns}.s", table_format, commits=6)
    res = t.compact(strategy="sort", by=["v"], target_file_size="1MB", where="id >= 0")
    assert res.files_after == 2
    assert contents(catalog, t) == expected_rows(6)


# --- expire -----------------------------------------------------------------------------------
def test_expire_retain_last(cli, catalog, spark, ns, table_format):
    t = build(catalog, spark, f"{ns}.e", table_format)
    t.compact(target_file_size="1MB")
    live = {f.replace("file://", "").replace("file:", "") for f in live_files(t)}
    small = [
        p
        for p in disk(t)
        if p.endswith(".parquet") and "/metadata/" not in p and "_delta_log" not in p and p not in live
    ]
    assert len(small) == 2 * COMMITS and len(live) == 2
    before_vers, on_disk, rows = versions(t), disk(t), contents(catalog, t)

    # a short window without --force is refused, and says why
    rc, doc, err = run_json(cli, "expire", t.name, "--older-than", "1h", "--retain-last", "2")
    assert rc == 2 and "safety floor" in doc["error"]["message"] and "--force" in doc["error"]["message"]

    rc, plan, err = run_json(cli, "expire", t.name, "--older-than", "0s", "--retain-last", "2", "--force", "--dry-run")
    assert rc == 0, err
    assert plan["dry_run"] is True and len(plan["expired_versions"]) == len(before_vers) - 2
    assert versions(t) == before_vers and disk(t) == on_disk  # the dry run changed nothing

    if table_format == "delta":  # the log is cut only before a checkpoint an hour old (a reader may be reading it)
        age_log(t)
    rc, doc, err = run_json(cli, "expire", t.name, "--older-than", "0s", "--retain-last", "2", "--force")
    assert rc == 0, err
    for key in ("expired_versions", "deleted_files", "deleted_bytes", "retained_versions", "dry_run"):
        assert key in doc
    assert doc["expired_versions"] == plan["expired_versions"]
    assert contents(catalog, t) == rows

    if table_format == "iceberg":
        snaps = versions(t)
        assert len(snaps) == 2 and sorted(doc["retained_versions"]) == snaps  # exactly two snapshots remain
        expired = doc["expired_versions"][0]
        with pytest.raises(Exception, match="(?i)snapshot") as info:
            spark.sql(f"SELECT count(*) FROM {t.spark_name} VERSION AS OF {expired}").collect()
        print("iceberg expired-version error:", str(info.value).splitlines()[0])
        for sid in snaps:  # the two retained snapshots read fine
            assert len(spark.sql(f"SELECT id, v FROM {t.spark_name} VERSION AS OF {sid}").collect()) == 2 * COMMITS
    else:
        from deltalake import DeltaTable

        retained = doc["retained_versions"]
        assert retained == before_vers[:2][::-1] or sorted(retained) == sorted(before_vers)[-2:]
        oldest = min(retained)
        for v in doc["expired_versions"]:
            assert v < oldest
        start = doc["log_truncated_before"]  # Spark's checkpoint at or before the oldest kept version
        assert start is not None and start <= oldest
        with pytest.raises(Exception, match="DELTA_VERSION_NOT_FOUND|Cannot time travel") as info:
            spark.read.format("delta").option("versionAsOf", start - 1).load(t.location).count()
        print("delta expired-version error:", str(info.value).splitlines()[0])
        with pytest.raises(Exception):  # noqa: B017 - delta-rs agrees
            DeltaTable(t.location, version=0).to_pyarrow_table()
        for v in retained:
            df = spark.read.format("delta").option("versionAsOf", v).load(t.location)
            assert len(df.select("id", "v").collect()) == 2 * COMMITS  # reads the files (count() may use stats)

    # retain only the current version: the small files the compaction replaced are deleted now
    if table_format == "delta":
        age_log(t)
    res = t.expire(older_than="0s", retain_last=1, force=True)
    assert res.deleted_files > 0 and res.deleted_bytes > 0
    assert all(not os.path.exists(p) for p in small)
    if table_format == "iceberg":
        assert len(versions(t)) == 1
    else:  # the log starts at the newest checkpoint an hour old: the one the first expiry wrote
        assert min(versions(t)) == res.log_truncated_before == oldest
    assert contents(catalog, t) == rows and t.to_spark().count() == 2 * COMMITS


def test_expire_defaults_keep_recent_versions(catalog, spark, ns, table_format):
    t = build(catalog, spark, f"{ns}.k", table_format, commits=3)
    before = versions(t)
    res = t.expire()  # default window 7d: every version is younger, nothing goes
    assert res.expired_versions == [] and res.deleted_files == 0 and versions(t) == before
    assert res.older_than == "1w"


# --- orphans ----------------------------------------------------------------------------------
def test_clean_orphans(cli, catalog, spark, ns, table_format):
    t = build(catalog, spark, f"{ns}.o", table_format, commits=3)
    root = Path(t.location.replace("file://", ""))
    data_dir = root / "data" if table_format == "iceberg" else root
    old = data_dir / "region=eu" / "orphan-old.parquet"
    new = data_dir / "region=eu" / "orphan-new.parquet"
    for p in (old, new):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"not referenced by any version" * 10)
    ten_days_ago = time.time() - 10 * 86400
    os.utime(old, (ten_days_ago, ten_days_ago))
    files, rows = live_files(t), contents(catalog, t)

    rc, doc, err = run_json(cli, "clean-orphans", t.name, "--older-than", "2h")
    assert rc == 2 and "safety floor" in doc["error"]["message"]

    rc, doc, err = run_json(cli, "clean-orphans", t.name, "--dry-run")
    assert rc == 0, err
    assert [Path(f.replace("file:", "")).name for f in doc["orphan_files"]] == ["orphan-old.parquet"]
    assert doc["dry_run"] is True and old.exists() and new.exists()

    rc, doc, err = run_json(cli, "clean-orphans", t.name)
    assert rc == 0, err
    assert doc["deleted_files"] == 1 and doc["deleted_bytes"] == 290
    assert not old.exists() and new.exists()  # the young orphan may belong to a commit in flight: kept
    assert live_files(t) == files and all(os.path.exists(f.replace("file://", "").replace("file:", "")) for f in files)
    assert contents(catalog, t) == rows


# --- metadata upkeep --------------------------------------------------------------------------
def test_rewrite_metadata(catalog, spark, ns, table_format):
    t = build(catalog, spark, f"{ns}.m", table_format, commits=6)
    rows = contents(catalog, t)
    plan = t.rewrite_metadata(dry_run=True)
    assert plan.needed and plan.dry_run
    res = t.rewrite_metadata()
    if table_format == "iceberg":
        assert res.before == 6 and res.after < res.before
    else:
        assert (Path(t.location.replace("file://", "")) / "_delta_log" / f"{6:020d}.checkpoint.parquet").exists()
    assert contents(catalog, t) == rows and t.to_spark().count() == 12


# --- properties / maintain --------------------------------------------------------------------
def test_alter_policy_properties(cli, catalog, ns, table_format):
    t = catalog.create_table(f"{ns}.p", schema=SCHEMA, format=table_format,
                             properties={"lakecat.compact.target-file-size": "64MB"})  # fmt: skip
    rc, doc, err = run_json(cli, "alter", t.name, "--property", "lakecat.expire.retain-last=7",
                            "--property", "lakecat.compact.strategy=zorder")  # fmt: skip
    assert rc == 0, err
    assert doc["properties"]["lakecat.expire.retain-last"] == "7"
    assert t.describe().properties["lakecat.compact.target-file-size"] == "64MB"
    rc, doc, err = run_json(cli, "alter", t.name, "--unset", "lakecat.compact.strategy")
    assert rc == 0 and "lakecat.compact.strategy" not in t.describe().properties
    for bad in ("lakecat.expire.older-than=soon", "lakecat.expire.retain-last=0", "lakecat.compact.typo=1"):
        rc, doc, _ = run_json(cli, "alter", t.name, "--property", bad)
        assert rc == 2, bad


def test_maintain_carries_on_past_a_failing_table(cli, catalog, spark, ns, table_format, tmp_path):
    good = build(catalog, spark, f"{ns}.good", table_format, commits=6,
                 properties={"lakecat.compact.target-file-size": "1MB"})  # fmt: skip
    tidy = build(catalog, spark, f"{ns}.tidy", table_format, commits=1)
    broken = build(catalog, spark, f"{ns}.broken", table_format, commits=1)
    shutil.rmtree(broken.location.replace("file://", ""))
    other = f"x{ns}.untouched"
    rows = contents(catalog, good)
    files = live_files(good)

    rc, doc, err = run_json(cli, "maintain", f"{ns}.*", "--dry-run")
    assert rc == 1, err
    by = {t["name"]: t for t in doc["tables"]}
    assert set(by) == {good.name, tidy.name, broken.name} and other not in by
    assert by[good.name]["status"] == "planned" and live_files(good) == files
    assert by[broken.name]["status"] == "failed" and by[broken.name]["error"]

    rc, doc, err = run_json(cli, "maintain", f"{ns}.*")
    assert rc == 1, err
    by = {t["name"]: t for t in doc["tables"]}
    assert doc["failed"] == 1 and len(doc["tables"]) == 3
    assert by[good.name]["status"] == "ok" and by[good.name]["error"] is None
    acts = {a["action"]: a for a in by[good.name]["actions"]}
    assert acts["compact"]["status"] == "done" and acts["compact"]["result"]["files_after"] == 2
    assert acts["expire"]["status"] == "skipped"
    assert by[tidy.name]["status"] == "skipped" and by[tidy.name]["format"] == table_format
    assert by[broken.name]["status"] == "failed" and by[broken.name]["error_type"]
    assert contents(catalog, good) == rows and len(live_files(good)) == 2

    # a plan file: per-table overrides, and the table property loses to a [[tables]] entry
    plan = tmp_path / "plan.toml"
    plan.write_text(
        f'[defaults]\ncompact.min-input-files = 2\n\n[[tables]]\nmatch = "{ns}.tidy"\nmaintain.enabled = false\n'
    )
    rc, doc, err = run_json(cli, "maintain", f"{ns}.t*", "--plan", str(plan), "--dry-run")
    assert rc == 0, err
    assert [t["name"] for t in doc["tables"]] == [tidy.name]
    assert doc["tables"][0]["actions"][0]["reason"] == "lakecat.maintain.enabled=false"
    plan.write_text("[defaults]\ncompact.nonsense = 1\n")
    rc, doc, err = run_json(cli, "maintain", f"{ns}.*", "--plan", str(plan))
    assert rc == 2 and "unknown setting" in doc["error"]["message"]


def test_example_plan_file_is_valid():
    from lakecat.maintenance import load_plan

    plan = load_plan(Path(__file__).parents[1] / "catalog_conf" / "maintenance-plan.example.toml")
    assert plan["defaults"]["lakecat.compact.target-file-size"] and plan["tables"]


# --- concurrency ------------------------------------------------------------------------------
@pytest.mark.slow
def test_compaction_during_a_live_stream_loses_no_row(catalog, spark, ns, table_format, tmp_path):
    t = catalog.create_table(f"{ns}.live", schema="id BIGINT, ts TIMESTAMP", format=table_format)
    stream = (spark.readStream.format("rate").option("rowsPerSecond", 20).load()
              .selectExpr("CAST(value AS BIGINT) AS id", "timestamp AS ts"))  # fmt: skip
    writer = (stream.writeStream.outputMode("append").trigger(processingTime="1 second")
              .option("checkpointLocation", str(tmp_path / "cp")))  # fmt: skip
    query = (
        writer.format(table_format).toTable(t.spark_name)
        if table_format == "iceberg"
        else (writer.format("delta").start(t.location))
    )
    try:
        deadline = time.time() + 120
        while len(live_files(t)) < 6 and time.time() < deadline:
            time.sleep(1)
        assert query.isActive, query.exception()
        results = [t.compact(target_file_size="1MB")]
        assert results[0].files_rewritten > 0
        deadline = time.time() + 60
        while len(live_files(t)) < 3 and time.time() < deadline:  # new small files land next to the big one
            time.sleep(1)
        # a second round while the stream keeps writing, on Spark (the first ran on the light engine: a small table)
        results.append(t.compact(target_file_size="1MB", engine="spark"))
        time.sleep(3)  # more batches land after the rewrite
        assert query.isActive, query.exception()
    finally:
        query.stop()
    ids = [r["id"] for r in t.to_spark().select("id").collect()]
    assert ids and sorted(ids) == list(range(len(ids)))  # every row exactly once, none lost
    assert [r.engine for r in results] == ["light", "spark"]
    print(f"{table_format}: {len(ids)} rows, retries {[r.retries for r in results]}")
