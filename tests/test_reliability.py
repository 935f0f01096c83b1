"""Nothing lost, nothing doubled: exactly once across maintenance, arguments checked before "nothing to do"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import read_rows

pytestmark = pytest.mark.spark


def _landing(tmp_path: Path, files: int, per_file: int) -> Path:
    landing = tmp_path / "landing"
    landing.mkdir()
    for f in range(files):
        rows = [{"id": f * per_file + i, "v": f"f{f}-{i}"} for i in range(per_file)]
        (landing / f"part-{f}.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return landing


def test_expiry_keeps_the_exactly_once_bookkeeping(catalog, ns, table_format, tmp_path):
    """A stream crashed after its table commit and before its checkpoint commit; a compaction and an expiry
    keeping one version run before the restart. The replayed batch must be recognised, not appended again."""
    import lakecat

    landing = _landing(tmp_path, files=3, per_file=20)
    name = f"{ns}.once"
    t = catalog.create_table(name, schema="id BIGINT NOT NULL, v STRING", format=table_format)
    source = lakecat.FileSource(str(landing), format="json")
    first = catalog.ingest(name, source, max_files_per_batch=1)
    assert first.batches == 3 and first.rows_written == 60
    # the crash: the checkpoint lost its record of the last batch (the table has the batch and its marker)
    checkpoint = Path(first.checkpoint.removeprefix("file://"))
    (checkpoint / "commits" / "2").unlink()
    for crc in (checkpoint / "commits").glob(".2.crc"):
        crc.unlink()

    t.compact(target_file_size="1MB")
    expired = t.expire(older_than="0s", retain_last=1, force=True)
    assert expired.expired_versions  # the snapshot/version that carried the marker is gone

    again = catalog.ingest(name, source, max_files_per_batch=1)
    assert again.rows_written == 0 and again.batches_skipped == 1, again.to_dict()
    ids = sorted(r["id"] for r in read_rows(catalog, name))  # the independent reader
    assert ids == list(range(60)), f"{len(ids)} rows, {len(ids) - len(set(ids))} duplicated"


def test_compact_checks_its_columns_before_finding_nothing_to_do(cli, catalog, ns, table_format):
    name = f"{ns}.empty"
    catalog.create_table(name, schema="id BIGINT, v STRING", format=table_format)
    for args in (("--strategy", "zorder", "--by", "no_such_column"), ("--strategy", "zorder", "--by", "id, nope")):
        for dry in ((), ("--dry-run",)):
            code, out, err = cli("compact", name, *args, *dry, "--json")
            assert code == 2, (args, dry, out, err)
            assert "no column" in json.loads(out)["error"]["message"]


@pytest.mark.delta
def test_delta_expire_deletes_the_change_data_of_expired_versions(catalog, spark, ns):
    t = catalog.create_table(f"{ns}.cdf", schema="id BIGINT, v STRING", format="delta")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"UPDATE {t.spark_name} SET v = 'B' WHERE id = 2")  # writes _change_data/ files
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 3")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (4, 'd')")
    change_dir = Path(t.location.removeprefix("file://")) / "_change_data"
    before = [p for p in change_dir.rglob("*.parquet")]
    assert before, "UPDATE and DELETE write change data files"
    res = t.expire(older_than="0s", retain_last=1, force=True)
    assert {str(p) for p in before} <= set(res.files)
    assert not list(change_dir.rglob("*.parquet"))
    assert sorted(r["id"] for r in read_rows(catalog, t)) == [1, 2, 4]
    shutil.rmtree(change_dir, ignore_errors=True)


def test_rollback_refuses_to_undo_ingested_batches_without_force(cli, catalog, ns, table_format, tmp_path):
    """A stream's checkpoint is past the batches it committed: rolling them back would lose them silently."""
    import lakecat

    landing = _landing(tmp_path, files=2, per_file=10)
    name = f"{ns}.rb"
    t = catalog.create_table(name, schema="id BIGINT NOT NULL, v STRING", format=table_format)
    before_ingest = t.history(limit=1).current_version  # None for an Iceberg table without snapshots
    catalog.ingest(name, lakecat.FileSource(str(landing), format="json"), max_files_per_batch=1)
    history = t.history()
    first_batch = [e.version for e in history if e.operation == "append"][-1]  # the oldest append: batch 0
    current = history.current_version

    code, out, err = cli("rollback", name, "--version", str(first_batch), "--yes", "--json")
    assert code == 2, (out, err)
    message = json.loads(out)["error"]["message"]
    assert "ingest stream" in message and "--force" in message
    assert t.history(limit=1).current_version == current and len(read_rows(catalog, name)) == 20  # nothing changed

    code, out, err = cli("rollback", name, "--version", str(first_batch), "--yes", "--force", "--json")
    assert code == 0, err
    assert len(read_rows(catalog, name)) == 10
    assert before_ingest != first_batch
