"""What decides what to delete fails closed: a version, a log entry, a manifest that cannot be read stops `expire` and
`clean-orphans` in one line (exit 1) with nothing deleted; Delta's log is never cut from under a reader."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from helpers import delta_arrow, pyiceberg_catalog, read_rows

pytestmark = pytest.mark.spark

AGED = 7200  # seconds: past a 1h window and the log's reader floor


def run_json(cli, *args):
    code, out, err = cli(*args, "--json")
    return code, json.loads(out or err or "{}"), err


def on_disk(location: str) -> dict[str, int]:
    root = Path(location.replace("file://", "").replace("file:", ""))
    return {str(p): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def age(paths) -> None:
    then = time.time() - AGED
    for p in paths:
        os.utime(p, (then, then))


def tagged_delta_table(catalog, spark, name):
    """The issue's table: a tag on version 1, a compaction (version 1's files leave the current version), a checkpoint
    after it, and an aged untracked file that clean-orphans would delete."""
    t = catalog.create_table(name, schema="id BIGINT NOT NULL, v STRING", format="delta")
    for i in range(3):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({i}, 'v{i}')")
    t.tag("keep", version=1)
    t.compact(target_file_size="1MB")
    t.rewrite_metadata()
    root = Path(t.location.replace("file://", "").replace("file:", ""))
    orphan = root / "part-00000-0badf11e-0000-0000-0000-000000000000.c000.snappy.parquet"
    orphan.write_bytes(b"x" * 100)
    age(p for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts)
    return t, root, orphan


@pytest.mark.parametrize("damage", ["directory", "truncated json"])
def test_delta_an_unreadable_tagged_version_stops_the_deletion(cli, catalog, spark, ns, damage):
    t, root, orphan = tagged_delta_table(catalog, spark, f"{ns}.tagged")
    commit = root / "_delta_log" / f"{1:020d}.json"
    saved = commit.read_bytes()
    if damage == "directory":  # a read that fails (tests run as root: chmod 000 would not stop it)
        commit.unlink()
        commit.mkdir()
    else:
        commit.write_bytes(saved[: len(saved) // 2])
    before = on_disk(t.location)

    for args in (("clean-orphans", t.name, "--older-than", "0s", "--force"),
                 ("expire", t.name, "--older-than", "0s", "--retain-last", "1", "--force")):  # fmt: skip
        code, doc, err = run_json(cli, *args)
        assert code == 1, (args, err)
        assert len(err.strip().splitlines()) == 1, err
        message = doc["error"]["message"]
        assert t.name in message and "version 1" in message and "nothing is deleted" in message, message
        assert on_disk(t.location) == before, args  # nothing deleted, the orphan included

    if commit.is_dir():
        commit.rmdir()
    commit.write_bytes(saved)
    code, doc, err = run_json(cli, "timetravel", t.name, "--tag", "keep")
    assert code == 0, err
    assert sorted(r["id"] for r in doc["rows"]) == [0]
    code, doc, err = run_json(cli, "clean-orphans", t.name, "--older-than", "1h", "--force")
    assert code == 0 and doc["deleted_files"] == 1 and not orphan.exists(), err
    assert sorted(r["id"] for r in delta_arrow(t.location, 1).to_pylist()) == [0]  # the tagged version stays whole


def test_delta_a_failing_read_of_the_log_stops_the_deletion(catalog, spark, ns, monkeypatch):
    """A failing object store, stood in for by the one function lakecat opens the log's files through."""
    from lakecat.errors import LakecatError
    from lakecat.formats.delta import log as delta_log

    t, root, orphan = tagged_delta_table(catalog, spark, f"{ns}.failing")
    before = on_disk(t.location)
    real = delta_log.fs_for

    class Failing:
        def __init__(self, fs):
            self.fs = fs

        def open_input_stream(self, path):
            if path.endswith(f"{2:020d}.json"):
                raise OSError("the object store did not answer")
            return self.fs.open_input_stream(path)

        def __getattr__(self, name):
            return getattr(self.fs, name)

    monkeypatch.setattr(delta_log, "fs_for", lambda uri: (Failing(real(uri)[0]), real(uri)[1]))
    with pytest.raises(LakecatError, match=r"version 2 could not be read, so nothing is deleted: the object store"):
        t.clean_orphans(older_than="0s", force=True)
    with pytest.raises(LakecatError, match=r"version 2 could not be read, so nothing is deleted"):
        t.expire(older_than="0s", retain_last=1, force=True)
    assert on_disk(t.location) == before and orphan.exists()


def test_delta_deletion_vectors_and_change_data_survive_orphan_cleanup(cli, catalog, spark, ns):
    """Spark-written deletion vectors and change data files are files the log names (not untracked): aged past the
    window, they stay; an aged untracked file goes."""
    t = catalog.create_table(f"{ns}.dv", schema="id BIGINT NOT NULL, v STRING", format="delta",
                             properties={"delta.enableDeletionVectors": "true",
                                         "delta.enableChangeDataFeed": "true"})  # fmt: skip
    spark.sql(f"INSERT INTO {t.spark_name} SELECT id, 'v' FROM range(100)")
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id < 10")
    spark.sql(f"UPDATE {t.spark_name} SET v = 'w' WHERE id = 50")
    root = Path(t.location.replace("file://", "").replace("file:", ""))
    vectors = list(root.rglob("deletion_vector_*.bin"))
    assert vectors  # the DELETE wrote a deletion vector, not a rewrite
    orphan = root / "part-00000-0badf11e-0000-0000-0000-000000000001.c000.snappy.parquet"
    orphan.write_bytes(b"x" * 100)
    age(p for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts)
    rows = sorted((r["id"], r["v"]) for r in spark.table(t.spark_name).collect())
    kept = set(on_disk(t.location)) - {str(orphan)}

    code, doc, err = run_json(cli, "clean-orphans", t.name, "--older-than", "1h", "--force", "--dry-run")
    assert code == 0, err
    assert [Path(f).name for f in doc["orphan_files"]] == [orphan.name]  # the dry run lists exactly what goes
    code, doc, err = run_json(cli, "clean-orphans", t.name, "--older-than", "1h", "--force")
    assert code == 0 and doc["deleted_files"] == 1, err
    assert not orphan.exists() and set(on_disk(t.location)) >= kept
    assert sorted((r["id"], r["v"]) for r in spark.table(t.spark_name).collect()) == rows
    assert len(rows) == 90


def test_iceberg_an_unreadable_manifest_stops_the_deletion(cli, catalog, spark, ns):
    t = catalog.create_table(f"{ns}.manifests", schema="id BIGINT NOT NULL, v STRING", format="iceberg")
    for i in range(3):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({i}, 'v{i}')")
    t.compact(target_file_size="1MB")
    tbl = pyiceberg_catalog(catalog).load_table((t.entry.ident.namespace, t.entry.ident.name))
    first = tbl.metadata.snapshots[0]
    manifest = Path(first.manifests(tbl.io)[0].manifest_path.replace("file://", "").replace("file:", ""))
    root = Path(t.location.replace("file://", "").replace("file:", ""))
    orphan = root / "data" / "00000-0-0badf11e-0000-0000-0000-000000000000-00001.parquet"
    orphan.write_bytes(b"x" * 100)
    age(p for p in root.rglob("*") if p.is_file())
    saved = manifest.read_bytes()
    manifest.unlink()
    manifest.mkdir()  # a read that fails
    before = on_disk(t.location)
    rows = sorted(r["id"] for r in read_rows(catalog, t))

    for args in (("clean-orphans", t.name, "--older-than", "1h", "--force"),
                 ("expire", t.name, "--older-than", "0s", "--retain-last", "1", "--force")):  # fmt: skip
        code, doc, err = run_json(cli, *args)
        assert code == 1, (args, err)
        assert len(err.strip().splitlines()) == 1, err
        message = doc["error"]["message"]
        assert t.name in message and f"snapshot {first.snapshot_id}" in message, message
        assert "nothing is deleted" in message, message
        assert on_disk(t.location) == before, args
    manifest.rmdir()
    manifest.write_bytes(saved)
    code, doc, err = run_json(cli, "clean-orphans", t.name, "--older-than", "1h", "--force")
    assert code == 0 and not orphan.exists(), err
    assert sorted(r["id"] for r in read_rows(catalog, t)) == rows


def test_delta_expiry_never_cuts_the_log_from_under_a_reader(catalog, ns, tmp_path):
    """delta-rs reads the table in a loop while it is appended to and expired (window 0s, forced) over and over: no
    read fails, as the log expiry cuts is only what lies before a checkpoint at least an hour old. Once the log is
    that old, expiry cuts it."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    location = tmp_path / "read_while_expired"
    write_deltalake(str(location), pa.table({"id": pa.array([0], pa.int64())}))
    catalog.register_table(f"{ns}.reader", location=str(location))
    t = catalog.load_table(f"{ns}.reader")
    stop = threading.Event()
    failures: list[str] = []
    reads = [0]

    def read() -> None:
        while not stop.is_set():
            try:
                DeltaTable(str(location)).to_pyarrow_table()
                reads[0] += 1
            except Exception as e:  # noqa: BLE001 - collected: the test asserts there are none
                failures.append(f"{type(e).__name__}: {e}")

    def write() -> None:
        i = 1
        while not stop.is_set():
            write_deltalake(str(location), pa.table({"id": pa.array([i], pa.int64())}), mode="append")
            i += 1

    threads = [threading.Thread(target=read), threading.Thread(target=write)]
    for th in threads:
        th.start()
    try:
        for _ in range(30):
            res = t.expire(older_than="0s", retain_last=1, force=True)
            assert res.log_truncated_before is None  # every checkpoint is younger than the floor
    finally:
        stop.set()
        for th in threads:
            th.join()
    assert not failures, failures[:3]
    assert reads[0] > 0

    log_dir = location / "_delta_log"
    age(log_dir.iterdir())
    res = t.expire(older_than="0s", retain_last=1, force=True)
    current = DeltaTable(str(location)).version()
    assert res.log_truncated_before is not None and res.log_truncated_before <= current
    assert not (log_dir / f"{0:020d}.json").exists()
    assert len(DeltaTable(str(location)).to_pyarrow_table()) == current + 1
    shutil.rmtree(location)


@pytest.mark.parametrize("failure", [OSError("the object store did not answer"), RuntimeError("a bug in lakecat")])
def test_delta_a_checkpoint_that_fails_leaves_the_log_whole_and_a_bug_fails_the_expiry(cli, catalog, ns, tmp_path,
                                                                                       monkeypatch, failure):  # fmt: skip
    """The checkpoint before the log is truncated: a storage failure keeps every version (nothing of the log goes,
    the result says so), an error no storage raises fails the command rather than being reported as done."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    location = tmp_path / "checkpoint_fails"
    for i in range(3):
        write_deltalake(str(location), pa.table({"id": pa.array([i], pa.int64())}), mode="append")
    age((location / "_delta_log").iterdir())
    catalog.register_table(f"{ns}.checkpoint_fails", location=str(location))
    t = catalog.load_table(f"{ns}.checkpoint_fails")
    log_before = sorted(p.name for p in (location / "_delta_log").iterdir())

    def create_checkpoint(self):
        raise failure

    monkeypatch.setattr(DeltaTable, "create_checkpoint", create_checkpoint)
    if isinstance(failure, OSError):
        res = t.expire(older_than="0s", retain_last=1, force=True)
        assert res.expired_versions == [0, 1] and res.log_truncated_before is None
    else:
        code, out, err = cli("expire", t.name, "--older-than", "0s", "--retain-last", "1", "--force")
        assert code == 4 and "a bug in lakecat" in err and len(err.strip().splitlines()) == 1, (code, out, err)
    assert sorted(p.name for p in (location / "_delta_log").iterdir()) == log_before
    assert sorted(DeltaTable(str(location)).to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2]
