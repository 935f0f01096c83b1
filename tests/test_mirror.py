"""A Delta table also readable as an Iceberg table (``lakecat mirror``): tables written by delta-rs and by Spark,
mirrored, read back by pyiceberg and Spark's Iceberg reader at each version and compared with what delta-rs reads."""

from __future__ import annotations

import json
import time
from datetime import date, datetime

import pytest

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")


def _snapshots_by_version(tbl) -> dict[int, int]:
    """Delta version -> the Iceberg snapshot that mirrors it (from the snapshot summaries)."""
    return {
        int(s.summary.additional_properties["lakecat.delta-version"]): s.snapshot_id
        for s in tbl.snapshots()
        if "lakecat.delta-version" in s.summary.additional_properties
    }


def _iceberg(catalog, name: str):
    from lakecat.formats import get_format

    ns, table = name.split(".")
    return get_format("iceberg").library_catalog(catalog).load_table((ns, table))


def _assert_same_at_every_version(catalog, name: str, location: str) -> int:
    from lakecat.formats.delta.mirror_commit import checksums

    tbl = _iceberg(catalog, name)
    versions = _snapshots_by_version(tbl)
    for version, snapshot in versions.items():
        delta_side = checksums(deltalake.DeltaTable(location, version=version).to_pyarrow_table())
        iceberg_side = checksums(tbl.scan(snapshot_id=snapshot).to_arrow())
        assert delta_side == iceberg_side, f"version {version}"
    return len(versions)


def _rows(n: int, start: int = 0, region=("a b", "x/y%z=1", None)) -> pa.Table:
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "region": pa.array([region[i % len(region)] for i in range(n)]),
        "day": pa.array([date(2026, 1, 1 + i % 3) for i in range(n)]),
        "ts": pa.array([datetime(2026, 1, 1, 12, 0, 0, 123457 + i) for i in range(n)], pa.timestamp("us")),
        "amount": pa.array([float(i) / 3 for i in range(n)]),
    })  # fmt: skip


@pytest.fixture
def delta_rs_table(catalog, ns, tmp_path):
    """A table delta-rs wrote (escaped and null partition values, timestamp_ntz, a checkpoint), registered."""
    location = str(tmp_path / "events")
    deltalake.write_deltalake(location, _rows(9), partition_by=["region", "day"])
    deltalake.write_deltalake(location, _rows(6, start=100), mode="append")
    deltalake.DeltaTable(location).create_checkpoint()
    name = f"{ns}.events"
    catalog.register_table(name, location=location)
    return name, location


def test_delta_rs_table_reads_the_same_through_iceberg_at_every_version(catalog, delta_rs_table):
    name, location = delta_rs_table
    table = catalog.load_table(name)
    result = table.mirror(as_format="iceberg")
    assert (result.source_version, result.commits) == (1, 1)
    assert result.files == len(deltalake.DeltaTable(location).file_uris())
    # others write: an append, an overwrite of one partition, a delete, a schema change (a new column)
    deltalake.write_deltalake(location, _rows(4, start=200), mode="append")
    dt = deltalake.DeltaTable(location)
    dt.delete("id = 3")
    deltalake.write_deltalake(location, _rows(3, start=300).append_column("note", pa.array(["n", None, "m"])),
                              mode="append", schema_mode="merge")  # fmt: skip
    synced = table.sync_mirrors()[0]
    assert (synced.source_version, synced.commits, synced.behind) == (4, 3, 0)
    assert _assert_same_at_every_version(catalog, name, location) == 4
    tbl = _iceberg(catalog, name)
    # partition values from the log: escaped and null ones prune exactly
    assert tbl.scan(row_filter="region == 'x/y%z=1'").to_arrow().num_rows == 7
    assert tbl.scan(row_filter="region IS NULL").to_arrow().num_rows == 7
    assert tbl.properties["gc.enabled"] == "false" and "schema.name-mapping.default" in tbl.properties
    # one table in lakecat's list, with its mirror
    listed = [t for t in catalog.list_tables().to_dict() if t["name"] == name]
    assert listed == [{"name": name, "format": "delta", "location": table.location, "mirrors": ["iceberg"]}]
    assert table.describe().mirrors == ["iceberg"]
    assert all(v.equal for v in table.verify_mirrors())


def test_cli_mirror_sync_verify_and_a_mirror_that_differs(catalog, delta_rs_table, lakecat):
    name, location = delta_rs_table
    code, out, _ = lakecat("mirror", name, "--as", "iceberg", "--json")
    assert code == 0 and json.loads(out)["source_version"] == 1
    # a writer lakecat does not see: the mirror is behind, never wrong; verify compares at the mirrored version
    deltalake.write_deltalake(location, _rows(2, start=500), mode="append")
    code, out, _ = lakecat("mirror", name, "--verify", "--json")
    assert code == 0, out
    assert json.loads(out)["equal"] and json.loads(out)["source_version"] == 1
    code, out, _ = lakecat("mirror", name, "--sync", "--json")
    assert code == 0 and json.loads(out)["source_version"] == 2
    # a mirror that reads a file twice is caught
    tbl = _iceberg(catalog, name)
    one = next(iter(tbl.scan().plan_files())).file
    with (
        tbl.transaction() as tx,
        tx.update_snapshot(snapshot_properties={"lakecat.delta-version": "2"}).fast_append() as op,
    ):
        op.append_data_file(one)
    code, out, err = lakecat("mirror", name, "--verify", "--json")
    doc = json.loads(out)
    assert code == 1 and not doc["equal"], err
    assert {c["column"] for c in doc["checks"] if not c["equal"]} >= {"rows", "id"}
    code, out, _ = lakecat("mirror", name, "--drop", "--json")
    assert code == 0 and json.loads(out)["dropped"] == ["iceberg"]
    assert "mirrors" not in catalog.entry(name).properties


def test_mirror_of_an_iceberg_table_is_exit_3(catalog, ns, lakecat):
    catalog.create_table(f"{ns}.ice", schema="id BIGINT", format="iceberg")
    code, _, err = lakecat("mirror", f"{ns}.ice", "--as", "delta")
    assert code == 3 and "not supported for iceberg tables" in err


# --- tables Spark writes, kept in step with lakecat's commits, read by Spark's Iceberg reader -----------------------
def _spark_iceberg_checksums(catalog, spark, name: str) -> dict[str, str]:
    from lakecat.formats import get_format
    from lakecat.formats.delta.mirror_commit import checksums

    entry = catalog.entry(name)
    spark_name = get_format("iceberg").spark_name(catalog, entry)
    spark.sql(f"REFRESH TABLE {spark_name}")
    df = spark.table(spark_name)
    return checksums(df.select(*spark.read.format("delta").load(entry.location).columns).toArrow())


def _spark_delta_checksums(spark, location: str) -> dict[str, str]:
    """Delta on Spark's read (column mapping: the reader every Delta feature is exact with)."""
    from lakecat.formats.delta.mirror_commit import checksums

    return checksums(spark.read.format("delta").load(location).toArrow())


def _delta_checksums(location: str) -> dict[str, str]:
    from lakecat.formats.delta.mirror_commit import checksums

    return checksums(deltalake.DeltaTable(location).to_pyarrow_table())


def test_spark_written_table_kept_in_step_with_lakecat_commits(catalog, spark, ns, tmp_path):
    import lakecat

    name = f"{ns}.orders"
    t = catalog.create_table(name, schema="id BIGINT, ts TIMESTAMP, region STRING, amount DOUBLE, note STRING",
                             format="delta", partition_by=["days(ts)", "region"],
                             properties={"delta.enableDeletionVectors": "false"})  # fmt: skip
    # plain Spark writes first (another writer), with an escaped and a null partition value
    spark.sql(f"""INSERT INTO delta.`{t.location}` (id, ts, region, amount, note) VALUES
        (1, TIMESTAMP'2026-01-01 10:00:00.123456', 'eu west', 1.5, 'a'), (2, TIMESTAMP'2026-01-02 11:00:00', NULL, 2.5, NULL),
        (3, TIMESTAMP'2026-01-02 12:00:00', 'us-east', 3.5, 'c')""")  # fmt: skip
    assert t.mirror(as_format="iceberg").source_version == 1

    # lakecat's commits: each is followed by the mirror's
    fixes = tmp_path / "fixes"
    spark.createDataFrame([(2, "2026-01-02 11:00:00", None, 20.0, "fixed"), (4, "2026-01-03 09:00:00", "eu west", 4.0, "d")],
                          "id BIGINT, ts STRING, region STRING, amount DOUBLE, note STRING") \
        .selectExpr("id", "CAST(ts AS TIMESTAMP) ts", "region", "amount", "note").write.parquet(str(fixes))  # fmt: skip
    t.upsert(str(fixes), key="id", file_format="parquet")
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_text("\n".join(json.dumps({"id": 10 + i, "ts": "2026-01-03T08:00:00", "region": "us-east",
                                                         "amount": float(i), "note": None}) for i in range(5)))  # fmt: skip
    catalog.ingest(name, lakecat.FileSource(str(landing), format="json"), trigger="available-now",
                   checkpoint=str(tmp_path / "ckpt"))  # fmt: skip
    t.compact(target_file_size="1MB")
    current = t.history().to_dict()[0]["version"]
    mirror = _iceberg(catalog, name)
    versions = _snapshots_by_version(mirror)
    assert sorted(versions) == list(range(1, current + 1))  # one Iceberg commit per Delta version, none skipped
    assert _assert_same_at_every_version(catalog, name, t.location) == len(versions)
    assert _spark_iceberg_checksums(catalog, spark, name) == _delta_checksums(t.location)

    # column mapping turned on (a rename) and a new column: the mirror follows by Delta's column ids
    t.alter(add_columns=["channel STRING"], rename_columns={"note": "comment"}, confirm=True)
    spark.sql(f"INSERT INTO delta.`{t.location}` (id, ts, region, amount, comment, channel) VALUES "
              "(20, TIMESTAMP'2026-01-04 00:00:00', 'eu west', 5.0, 'e', 'web')")  # fmt: skip
    res = t.sync_mirrors()[0]
    assert res.behind == 0
    assert "comment" in _iceberg(catalog, name).schema().column_names
    assert _spark_iceberg_checksums(catalog, spark, name) == _spark_delta_checksums(spark, t.location)
    assert all(v.equal for v in t.verify_mirrors())

    # expiry: the mirror still reads the current version exactly
    t.expire(older_than="0s", retain_last=1, force=True)
    assert all(v.equal for v in t.verify_mirrors())
    assert _spark_iceberg_checksums(catalog, spark, name) == _spark_delta_checksums(spark, t.location)


def test_deletion_vectors_are_refused_with_the_version_and_the_fix(catalog, spark, ns, lakecat):
    name = f"{ns}.dv"
    t = catalog.create_table(name, schema="id BIGINT, v STRING", format="delta",
                             properties={"delta.enableDeletionVectors": "true"})  # fmt: skip
    spark.sql(f"INSERT INTO delta.`{t.location}` VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"DELETE FROM delta.`{t.location}` WHERE id = 2")
    version = t.history().to_dict()[0]["version"]
    code, _, err = lakecat("mirror", name, "--as", "iceberg")
    assert code == 3, err
    assert f"Delta version {version}" in err and "deletion vectors" in err and "--purge-deletes" in err
    assert "mirrors" not in catalog.entry(name).properties or not catalog.entry(name).properties["mirrors"]
    code, out, err = lakecat("mirror", name, "--as", "iceberg", "--purge-deletes", "--json")
    assert code == 0, err
    assert all(v.equal for v in t.verify_mirrors())
    assert _iceberg(catalog, name).scan().to_arrow().num_rows == 2


def _mirror_reads_what_delta_reads(catalog, name: str, location: str) -> None:
    """pyiceberg reads the mirror's current snapshot as delta-rs reads the Delta table at the version it mirrors."""
    from lakecat.formats.delta.mirror_commit import checksums

    tbl = _iceberg(catalog, name)
    version = int(tbl.current_snapshot().summary.additional_properties["lakecat.delta-version"])
    assert version == deltalake.DeltaTable(location).version()
    rows = tbl.scan().to_arrow()
    # delta-rs' DataFusion reader: its pyarrow one refuses a table with the deletion vectors feature
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(location))
    delta_rows = pa.table(query.execute("SELECT * FROM t").read_all())
    assert sorted(rows.column("id").to_pylist()) == sorted(delta_rows.column("id").to_pylist())
    assert checksums(rows) == checksums(delta_rows)


def test_a_mirror_stuck_behind_deletion_vectors_catches_up_after_the_fix_it_names(catalog, spark, ns, lakecat):
    """The refusal names `--purge-deletes`; running it (with --as, or with --sync) purges and the mirror skips the
    versions it cannot express up to the purge, then follows version by version again."""
    name = f"{ns}.dvs"
    t = catalog.create_table(name, schema="id BIGINT, v STRING", format="delta",
                             properties={"delta.enableDeletionVectors": "true"})  # fmt: skip
    spark.sql(f"INSERT INTO delta.`{t.location}` VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    assert lakecat("mirror", name, "--as", "iceberg")[0] == 0
    mirrored = t.history().to_dict()[0]["version"]
    spark.sql(f"DELETE FROM delta.`{t.location}` WHERE id = 2")  # a deletion vector: the mirror cannot follow
    spark.sql(f"INSERT INTO delta.`{t.location}` VALUES (5, 'e')")
    first_dv = mirrored + 1
    code, _, err = lakecat("mirror", name, "--sync")
    assert code == 3 and f"before Delta version {first_dv}" in err and "--purge-deletes" in err, err
    assert max(_snapshots_by_version(_iceberg(catalog, name))) == mirrored  # behind, never wrong

    code, out, err = lakecat("mirror", name, "--as", "iceberg", "--purge-deletes", "--json")  # the fix, as named
    assert code == 0, err
    doc = json.loads(out)
    purged = t.history().to_dict()[0]["version"]
    assert doc["source_version"] == purged and doc["behind"] == 0, doc
    assert any(f"{first_dv}-{purged - 1}" in n and "deletion vectors" in n for n in doc["notes"]), doc
    _mirror_reads_what_delta_reads(catalog, name, t.location)
    assert sorted(_snapshots_by_version(_iceberg(catalog, name))) == [mirrored, purged]  # what it skipped, no more

    # then version by version again; new deletion vectors stop it again, and --sync --purge-deletes purges, then syncs
    spark.sql(f"INSERT INTO delta.`{t.location}` VALUES (6, 'f')")
    spark.sql(f"DELETE FROM delta.`{t.location}` WHERE id = 3")
    assert lakecat("mirror", name, "--sync")[0] == 3
    assert lakecat("mirror", name, "--verify", "--purge-deletes")[0] == 2  # no purge where nothing follows it
    code, out, err = lakecat("mirror", name, "--sync", "--purge-deletes", "--json")
    assert code == 0, err
    assert json.loads(out)["source_version"] == t.history().to_dict()[0]["version"]
    _mirror_reads_what_delta_reads(catalog, name, t.location)
    assert sorted(_iceberg(catalog, name).scan().to_arrow().column("id").to_pylist()) == [1, 4, 5, 6]
    assert all(v.equal for v in t.verify_mirrors())


def test_a_mirror_that_no_longer_reads_what_delta_removes_is_rebuilt_by_sync(catalog, delta_rs_table, lakecat):
    """Someone changed the mirror itself (it lost a file); Delta then removes that file: --sync rebuilds the mirror
    from the current version rather than stopping for good."""
    name, location = delta_rs_table
    table = catalog.load_table(name)
    table.mirror(as_format="iceberg")
    tbl = _iceberg(catalog, name)
    lost = next(iter(tbl.scan().plan_files())).file
    with (
        tbl.transaction() as tx,
        tx.update_snapshot(snapshot_properties={"lakecat.delta-version": "1"}).overwrite() as op,
    ):
        op.delete_data_file(lost)
    deltalake.write_deltalake(location, _rows(3, start=900), mode="overwrite")  # removes every file, the lost one too
    code, out, err = lakecat("mirror", name, "--sync", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["rebuilt"] and any("rebuilt from version 2" in n for n in doc["notes"]), doc
    _mirror_reads_what_delta_reads(catalog, name, location)


def test_a_partition_change_stops_the_mirror_and_its_named_fix_works(catalog, spark, delta_rs_table, lakecat):
    name, location = delta_rs_table
    table = catalog.load_table(name)
    table.mirror(as_format="iceberg")
    code, _, err = lakecat("alter", name, "--partition-by", "region", "--rewrite")
    assert code == 0, err
    code, _, err = lakecat("mirror", name, "--sync")
    assert code == 3 and "partition columns changed" in err and f"lakecat mirror {name} --drop" in err, err
    assert lakecat("mirror", name, "--drop")[0] == 0  # the fix, as named
    code, _, err = lakecat("mirror", name, "--as", "iceberg")
    assert code == 0, err
    assert [f.name for f in _iceberg(catalog, name).spec().fields] == ["region"]
    _mirror_reads_what_delta_reads(catalog, name, location)
    assert all(v.equal for v in table.verify_mirrors())


# --- a mirror left behind stays readable; a mirror's failure never fails lakecat's own commit ----------------------
def test_files_a_mirror_left_behind_reads_survive_expiry_and_clean_orphans(catalog, delta_rs_table):
    from lakecat import maintenance

    name, location = delta_rs_table
    t = catalog.load_table(name)
    t.mirror(as_format="iceberg")
    # another writer replaces every file; the mirror, not synced, still reads the old ones (as after a refused version)
    deltalake.write_deltalake(location, _rows(5, start=700), mode="overwrite")
    before = _checksums_at(location, 1)
    maintenance.expire(t, older_than="0s", retain_last=1, force=True)  # no keep-in-step: the mirror stays behind
    assert _checksums_of_mirror(catalog, name) == before
    orphans = maintenance.clean_orphans(t, older_than="0s", dry_run=True, force=True).orphan_files
    read = {p.rsplit("/", 1)[-1] for p in _iceberg(catalog, name).inspect.files().column("file_path").to_pylist()}
    assert read and not read & {p.rsplit("/", 1)[-1] for p in orphans}
    assert t.sync_mirrors()[0].behind == 0 and all(v.equal for v in t.verify_mirrors())


def _checksums_at(location: str, version: int) -> dict[str, str]:
    from lakecat.formats.delta.mirror_commit import checksums

    return checksums(deltalake.DeltaTable(location, version=version).to_pyarrow_table())


def _checksums_of_mirror(catalog, name: str) -> dict[str, str]:
    from lakecat.formats.delta.mirror_commit import checksums

    return checksums(_iceberg(catalog, name).scan().to_arrow())


def _commit_schema(location: str, version: int, retype: dict[str, str], changes: dict | None = None) -> None:
    """Another writer's metadata-only commit: the columns in ``retype`` get a new Delta type (a widening), with the
    ``delta.typeChanges`` field metadata Delta's type widening records where ``changes`` gives it."""
    from pathlib import Path

    log = Path(location) / "_delta_log"
    meta = next(a["metaData"] for line in (log / f"{0:020d}.json").read_text().splitlines()
                if "metaData" in (a := json.loads(line)))  # fmt: skip
    schema = json.loads(meta["schemaString"])
    for f in schema["fields"]:
        f["type"] = retype.get(f["name"], f["type"])
        if f["name"] in (changes or {}):
            f["metadata"] = {**f.get("metadata", {}), "delta.typeChanges": changes[f["name"]]}
    meta["schemaString"] = json.dumps(schema)
    features = ["timestampNtz", "typeWidening"]
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features, "writerFeatures": features}
    (log / f"{version:020d}.json").write_text(
        json.dumps({"protocol": protocol}) + "\n" + json.dumps({"metaData": meta}) + "\n"
    )


def test_a_widening_iceberg_cannot_do_is_refused_and_never_fails_lakecats_commit(catalog, ns, tmp_path, lakecat,
                                                                                 monkeypatch, caplog):  # fmt: skip
    from lakecat.formats.delta.mirror_commit import MirrorTarget

    location = str(tmp_path / "w")
    deltalake.write_deltalake(location, pa.table({"id": pa.array([1, 2], pa.int64()),
                                                  "d": pa.array([date(2026, 1, 1), None])}))  # fmt: skip
    name = f"{ns}.w"
    catalog.register_table(name, location=location)
    assert lakecat("mirror", name, "--as", "iceberg")[0] == 0
    _commit_schema(location, 1, {"d": "timestamp_ntz"})  # Delta's type widening allows it; Iceberg does not
    code, _, err = lakecat("mirror", name, "--sync")
    assert code == 3 and "Delta version 1" in err and "timestamp" in err and "Traceback" not in err, err
    assert f"`lakecat mirror {name} --drop` ends it" in err and "mirror the table again" not in err, err
    # any failure of the mirror after lakecat's own commit: one warning, the mirror stays behind
    t = catalog.load_table(name)
    monkeypatch.setattr(MirrorTarget, "sync", lambda self, **_: (_ for _ in ()).throw(OSError("log unreadable")))
    t.committed()
    assert "stays behind: log unreadable" in caplog.text

    # the fix, as named; Delta's type widening records the change, and a new mirror of such a table is refused
    assert lakecat("mirror", name, "--drop")[0] == 0 and "mirrors" not in catalog.entry(name).properties
    _commit_schema(location, 2, {"d": "timestamp_ntz"}, {"d": [{"fromType": "date", "toType": "timestamp_ntz"}]})
    code, _, err = lakecat("mirror", name, "--as", "iceberg")
    assert code == 3 and "from date to timestamp_ntz" in err, err


def test_purge_deletes_failing_in_spark_is_one_line(catalog, delta_rs_table, lakecat, monkeypatch):
    from pyspark.errors import AnalysisException

    class Session:
        def sql(self, _text: str) -> None:
            raise AnalysisException("[DELTA_CONCURRENT_APPEND] REORG conflicted with a concurrent append\n\tat ...")

    monkeypatch.setattr(type(catalog), "session", lambda self: Session())
    code, _, err = lakecat("mirror", delta_rs_table[0], "--as", "iceberg", "--purge-deletes")
    assert code not in (0, 4) and "mirror --purge-deletes" in err and "Traceback" not in err, err


def test_maintenance_brings_the_mirror_along_and_a_dry_run_does_not(catalog, delta_rs_table):
    """maintain's commits (here an expiry, which needs no JVM on Delta) are followed by the mirror's, as Table's own
    are; a dry run commits nothing, to the table or to its mirror."""
    from lakecat.formats.delta.mirror_commit import checksums
    from lakecat.maintenance import load_plan, maintain_table

    name, location = delta_rs_table
    table = catalog.load_table(name)
    table.mirror(as_format="iceberg")
    deltalake.write_deltalake(location, _rows(2, start=500), mode="append")  # another writer: the mirror is behind
    table.expire(dry_run=True)
    table.compact(dry_run=True)
    assert max(_snapshots_by_version(_iceberg(catalog, name))) == 1
    time.sleep(1.1)  # every version but the newest is past the plan's window
    plan = load_plan({"defaults": {"expire.older-than": "1s", "expire.retain-last": 1, "force": True}})
    report = maintain_table(table, plan, decide=lambda _t, _p: (["expire"], {"verdict": "expire", "reason": ""}))
    assert [a.status for a in report.actions if a.action == "expire"] == ["done"]
    tbl = _iceberg(catalog, name)
    assert max(_snapshots_by_version(tbl)) == 2
    assert checksums(tbl.scan().to_arrow()) == checksums(deltalake.DeltaTable(location).to_pyarrow_table())
