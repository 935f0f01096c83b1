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


# (command, arguments, what the one-line error names): each is wrong for the table below, and each has a path
# on which there would be nothing to do (one small file, nothing to expire, no orphans, no tags)
BAD_ARGUMENTS = [
    ("compact", ("--strategy", "zorder", "--by", "no_such_column"), "no column"),
    ("compact", ("--strategy", "zorder", "--by", "id, nope"), "no column"),
    ("compact", ("--strategy", "sort", "--by", "nope"), "no column"),
    ("compact", ("--where", "nope = 1"), "nope"),
    ("compact", ("--where", "id = 1; DROP TABLE x"), "--where"),
    ("compact", ("--target-file-size", "12 parsecs"), "size"),
    ("compact", ("--target-file-size", "0MB"), "size"),
    ("compact", ("--strategy", "shuffle"), "strategy"),
    ("expire", ("--older-than", "soon"), "duration"),
    ("expire", ("--retain-last", "0"), "retain"),
    ("expire", ("--retain-last", "-3"), "retain"),
    ("clean-orphans", ("--older-than", "-1d"), "duration"),
    ("timetravel", ("--version", "424242", "--count"), "424242"),
    ("timetravel", ("--as-of", "1999-01-01T00:00:00", "--count"), "1999"),
    ("timetravel", ("--version", "{v}", "--where", "nope > 1", "--count"), "nope"),
    ("timetravel", ("--version", "{v}", "--limit", "-1"), "limit"),
    ("timetravel", ("--tag", "no_such_tag", "--count"), "no_such_tag"),
    ("changes", ("--since", "424242", "--count"), "424242"),
    ("changes", ("--since", "{v}", "--until", "424242", "--count"), "424242"),
    ("rollback", ("--version", "424242", "--yes"), "424242"),
    ("rollback", ("--tag", "no_such_tag", "--yes"), "no_such_tag"),
    ("tag", ("t1", "--version", "424242"), "424242"),
    ("tag", ("t1", "--retain", "forever"), "duration"),
    ("untag", ("no_such_tag",), "no_such_tag"),
    ("alter", ("--drop-column", "nope", "--yes"), "nope"),
    ("alter", ("--rename-column", "nope=other", "--yes"), "nope"),
    ("alter", ("--rename-column", "id=v", "--yes"), "v"),
    ("alter", ("--widen", "v=INT"), "v"),
]


def test_every_argument_is_checked_before_finding_nothing_to_do(cli, catalog, spark, ns, table_format):
    """A typo in a CI script must fail, not pass as "nothing to do": every argument is checked against the table
    first — dry run or not — with one line and exit 1 (no such version/tag) or 2 (bad argument), or 3 where the
    format lacks the operation, and the table is untouched (same version, same files)."""
    name = f"{ns}.checked"
    t = catalog.create_table(name, schema="id BIGINT NOT NULL, v STRING", format=table_format)
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'a')")
    version = t.describe().current_version
    files = sorted(f.path for f in t.adapter.data_files(t))
    failures = []
    for command, args, names in BAD_ARGUMENTS:
        argv = [a.replace("{v}", str(version)) for a in args]
        dries = ((), ("--dry-run",)) if command in ("compact", "expire", "clean-orphans", "alter") else ((),)
        for dry in dries:
            code, out, err = cli(command, name, *argv, *dry, "--json")
            try:
                message = json.loads(out)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = None
            unsupported = code == 3 and message is not None and "not supported for" in message  # the format lacks it
            if message is None or "\n" in message or "Traceback" in err or not (
                    unsupported or (code in (1, 2) and names in message)):  # fmt: skip
                failures.append(f"{command} {' '.join(argv)} {' '.join(dry)}: exit {code}, {message or out[:200]!r}")
    assert not failures, "\n".join(failures)
    assert t.describe().current_version == version
    assert sorted(f.path for f in t.adapter.data_files(t)) == files


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
