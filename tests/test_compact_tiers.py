"""Tiered compaction on both formats: the minor tier (``since``) rewrites only the small files of the partitions
written after a time, in one commit; the major tier the whole table, in one commit; conflicts with a writer are
retried a bounded number of times. Checked with pyiceberg / delta-rs."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime

import pytest
from helpers import committed_versions, read_rows

from lakecat import maintenance
from lakecat.errors import CommitConflictError

SCHEMA = "id BIGINT NOT NULL, ts TIMESTAMP, v STRING"
DAYS = ("2026-01-01", "2026-01-02", "2026-01-03")


def per_partition(t) -> Counter:
    return Counter(f.partition for f in maintenance.data_files(t))


def insert(spark, t, first: int, days=DAYS) -> None:
    """One commit: a row (so a small file) in each of ``days``."""
    rows = ", ".join(f"({first + i}, TIMESTAMP'{d} 10:00:00', 'r')" for i, d in enumerate(days))
    spark.sql(f"INSERT INTO {t.spark_name} (id, ts, v) VALUES {rows}")


@pytest.mark.spark
def test_minor_then_major_compaction_one_commit_each(catalog, spark, ns, table_format):
    t = catalog.create_table(f"{ns}.days", schema=SCHEMA, format=table_format, partition_by="days(ts)")
    for i in range(3):
        insert(spark, t, 10 * i)
    time.sleep(0.05)
    since = datetime.now(UTC)
    time.sleep(0.05)
    for i in range(3, 5):
        insert(spark, t, 10 * i, days=DAYS[:1])  # after `since`, only the first day is written
    before, rows = per_partition(t), len(read_rows(catalog, t))
    assert sorted(before.values()) == [3, 3, 5]
    (written,) = [p for p, n in before.items() if n == 5]

    planned = t.compact(since=since, dry_run=True)
    assert [p.partition for p in planned.partitions] == [written] and planned.since is not None
    versions = committed_versions(catalog, t.name)
    minor = t.compact(since=since)
    after = per_partition(t)
    assert minor.files_rewritten == 5 and after[written] == 1
    assert {p: n for p, n in after.items() if p != written} == {p: n for p, n in before.items() if p != written}
    assert committed_versions(catalog, t.name) == versions + 1  # one commit
    assert len(read_rows(catalog, t)) == rows

    # nothing written since: no engine job, no commit
    quiet = t.compact(since=datetime.now(UTC).replace(tzinfo=None))  # naive means UTC
    assert quiet.files_rewritten == 0 and quiet.engine_s == 0
    assert committed_versions(catalog, t.name) == versions + 1

    major = t.compact()
    assert major.files_rewritten == 6 and sorted(per_partition(t).values()) == [1, 1, 1]
    assert committed_versions(catalog, t.name) == versions + 2  # one commit for the whole table
    assert sorted(r["id"] for r in read_rows(catalog, t)) == sorted(
        [10 * i + j for i in range(3) for j in range(3)] + [30, 40]
    )


@pytest.mark.spark
def test_minor_compaction_gives_up_on_conflicts_after_few_retries(catalog, spark, ns, monkeypatch):
    t = catalog.create_table(f"{ns}.busy", schema=SCHEMA, format="delta", partition_by="days(ts)")
    since = datetime.now(UTC)
    for i in range(3):
        insert(spark, t, 10 * i)
    calls = []

    def conflicting(*args, **kwargs):
        calls.append(1)
        raise CommitConflictError("compact: commit conflict with a concurrent writer: test")

    monkeypatch.setattr(type(t.adapter), "compact", conflicting)  # either engine's commit conflicts
    monkeypatch.setattr(type(t.adapter), "light_compact", conflicting)
    monkeypatch.setattr("lakecat.engine.time.sleep", lambda s: None)
    with pytest.raises(CommitConflictError, match="gave up after 2 retries"):
        t.compact(since=since)  # the service leaves it to its next pass
    assert len(calls) == maintenance.MINOR_COMPACT_ATTEMPTS
    calls.clear()
    with pytest.raises(CommitConflictError):
        t.compact()
    assert len(calls) > maintenance.MINOR_COMPACT_ATTEMPTS  # the major tier, run by hand, tries longer


def test_partition_predicates_select_exactly_one_partition():
    """The Spark SQL predicate the minor tier narrows an Iceberg rewrite to, for each transform."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import (
        BucketTransform,
        DayTransform,
        HourTransform,
        IdentityTransform,
        MonthTransform,
        TruncateTransform,
        YearTransform,
    )
    from pyiceberg.typedef import Record
    from pyiceberg.types import DateType, LongType, NestedField, StringType, TimestampType, TimestamptzType

    from lakecat.formats.iceberg.maintenance import partition_predicate

    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "ts", TimestamptzType()),
        NestedField(3, "d", DateType()),
        NestedField(4, "k", StringType()),
        NestedField(5, "local", TimestampType()),
    )

    def pred(transform, source, value):
        spec = PartitionSpec(PartitionField(source, 1000, transform, "p"))
        return partition_predicate(spec, schema, Record(value))

    day = (datetime(2026, 1, 2, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).days
    assert pred(DayTransform(), 2, day) == (
        "`ts` >= TIMESTAMP '2026-01-02 00:00:00' AND `ts` < TIMESTAMP '2026-01-03 00:00:00'"
    )
    assert pred(HourTransform(), 5, day * 24 + 5) == (
        "`local` >= TIMESTAMP_NTZ '2026-01-02 05:00:00' AND `local` < TIMESTAMP_NTZ '2026-01-02 06:00:00'"
    )
    assert pred(MonthTransform(), 3, (2026 - 1970) * 12 + 11) == "`d` >= DATE '2026-12-01' AND `d` < DATE '2027-01-01'"
    assert pred(YearTransform(), 2, 56) == (
        "`ts` >= TIMESTAMP '2026-01-01 00:00:00' AND `ts` < TIMESTAMP '2027-01-01 00:00:00'"
    )
    assert pred(IdentityTransform(), 4, "it's") == "`k` = 'it\\'s'"
    assert pred(IdentityTransform(), 3, day) == "`d` = DATE '2026-01-02'"
    assert pred(IdentityTransform(), 1, None) == "`id` IS NULL"
    assert pred(TruncateTransform(10), 1, 20) == "`id` >= 20 AND `id` < 30"
    assert pred(BucketTransform(8), 1, 3) is None  # not said: the rewrite is not narrowed


def test_delta_partition_terms_keep_every_digit():
    """The Delta minor tier's partition terms: a timestamp partition value keeps its microseconds (one cut to
    milliseconds matches no row), strings are escaped, nulls are IS NULL."""
    from datetime import date
    from decimal import Decimal

    from lakecat.formats.delta.maintenance import _partition_term

    stamp = datetime(2024, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)
    assert _partition_term("ts", stamp) == "`ts` = TIMESTAMP '2024-01-01 00:00:00.123456'"
    assert (
        _partition_term("ts", datetime(2024, 1, 1, 5, 0, 0, 7)) == "`ts` = TIMESTAMP_NTZ '2024-01-01 05:00:00.000007'"
    )
    assert _partition_term("k", "it's") == "`k` = 'it\\'s'"
    assert _partition_term("d", date(2024, 1, 2)) == "`d` = DATE '2024-01-02'"
    assert _partition_term("n", None) == "`n` IS NULL"
    assert _partition_term("a", Decimal("1.50")) == "`a` = 1.50BD"
