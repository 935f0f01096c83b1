"""Delta maintenance: OPTIMIZE, expiry computed from the log, VACUUM for orphans, checkpoints (delta-rs)."""

from __future__ import annotations

import contextlib
import logging
import math
import time
import urllib.parse
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ...engine import (
    command_row,
    default_parallelism,
    first_line,
    now,
    spark_conf,
    spark_errors,
    sql_string,
)
from ...errors import LakecatError
from ...files import DataFile, file_sizes, fs_for, is_local_dir, norm_path
from ...identifiers import quote
from ...results import ExpireResult, MetadataResult
from ...units import format_duration, iso, plural
from .log import add_actions, arrow, commit_actions, commit_times, last_checkpoint, live_files, log_actions, log_entries

if TYPE_CHECKING:
    from ..base import TableHandle

log = logging.getLogger(__name__)
SMALL_FILE_RATIO = 0.75  # OPTIMIZE's minFileSize: the same "small" as lakecat's planner


def spark_path(location: str) -> str:
    """``delta.`location``` with the path quoted for Spark SQL."""
    return "delta.`" + location.replace("`", "``") + "`"


def _plain(path: str) -> str:
    """A file's location as VACUUM and delta-rs's ``file_uris`` give it, spelled as ``norm_path`` spells the log's
    paths: the scheme goes but nothing is decoded (a partition directory's %-escapes, such as delta-rs's ``a%20b``,
    are part of the name on disk)."""
    return norm_path(urllib.parse.quote(path, safe="/:"))


def vacuum_hours(window: timedelta) -> int:
    """VACUUM's RETAIN in whole hours, rounded up (Delta rounds a fraction to the nearest hour: never shorter)."""
    return math.ceil(window.total_seconds() / 3600 - 1e-9)


def _partition_term(column: str, value: Any) -> str | None:
    """``column = value`` in Spark SQL for a typed partition value; None for a type it is not said for (a float)."""
    name = quote(column)
    if value is None:
        return f"{name} IS NULL"
    if isinstance(value, bool):
        return f"{name} = {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"{name} = {value}"
    if isinstance(value, Decimal):
        return f"{name} = {value}BD"
    if isinstance(value, str):
        return f"{name} = {sql_string(value)}"
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return f"{name} = TIMESTAMP_NTZ {sql_string(value.isoformat(sep=' '))}"
        # microseconds kept: a partition value with them would match nothing at sql_timestamp's milliseconds
        utc = value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
        return f"{name} = TIMESTAMP {sql_string(utc)}"
    if isinstance(value, date):
        return f"{name} = DATE {sql_string(value.isoformat())}"
    return None


class DeltaMaintenance:
    """The maintenance half of the Delta adapter (mixed into ``DeltaFormat``)."""

    def data_files(self, table: TableHandle) -> list[DataFile]:
        return [DataFile(path, size, part) for path, size, part, _ in live_files(self.load(table), table.location)]  # type: ignore[attr-defined]

    def file_totals(self, table: TableHandle) -> tuple[int, int] | None:
        import pyarrow.compute as pc

        sizes = arrow(self.load(table).get_add_actions(flatten=True)).column("size_bytes")  # type: ignore[attr-defined]
        return len(sizes), int(pc.sum(sizes).as_py() or 0)

    def compaction_predicate_columns(self, table: TableHandle) -> list[str] | None:
        # Delta's OPTIMIZE takes predicates on partition columns only
        return list(self.load(table).metadata().partition_columns)  # type: ignore[attr-defined]

    def files_matching(self, table: TableHandle, predicate: str) -> set[str]:
        with spark_errors("compact --where", table.entry.ident):
            return {norm_path(p) for p in self.read_current(table).where(predicate).inputFiles()}  # type: ignore[attr-defined]

    def partitions_written_since(self, table: TableHandle, since: datetime) -> dict[str, str | None]:
        # the live files that commits after ``since`` added with a change of data (OPTIMIZE's own adds change none)
        dt = self.load(table)  # type: ignore[attr-defined]
        entries = log_entries(table.location, table.name)
        since_ms = int(since.timestamp() * 1000)
        recent = [v for v, t in commit_times(entries).items() if t > since_ms and v <= dt.version()]
        if not recent:
            return {}
        base = table.location.rstrip("/")
        added = {norm_path(a["path"] if "://" in a["path"] else f"{base}/{a['path']}")
                 for _, a in commit_actions(table.location, entries, min(recent), max(recent), ("add",))
                 if a.get("dataChange", True) is not False}  # fmt: skip
        out: dict[str, str | None] = {}
        for r in add_actions(dt).to_pylist():
            path = str(r["path"])
            if norm_path(path if "://" in path else f"{base}/{path}") not in added:
                continue
            values = {k[len("partition.") :]: v for k, v in r.items() if k.startswith("partition.")}
            key = "/".join(f"{k}={v}" for k, v in values.items())  # as ``live_files`` spells a file's partition
            if key not in out:
                terms = [_partition_term(k, v) for k, v in values.items()]
                out[key] = None if not terms or None in terms else " AND ".join(t for t in terms if t)
        return out

    def compact(self, table: TableHandle, strategy: str, by: list[str], target: int, where: str | None,
                apply_deletes: bool = False, *, full: bool = False) -> tuple[int, int]:  # fmt: skip
        # OPTIMIZE rewrites files whose deletion vectors hide more than maxDeletedRowsRatio (5%) of their rows anyway;
        # on a clustered table it clusters (incrementally; FULL reclusters every file) and takes no ZORDER
        spark = table.catalog.session()
        conf = {
            "spark.databricks.delta.optimize.maxFileSize": str(target),
            "spark.databricks.delta.optimize.minFileSize": str(int(target * SMALL_FILE_RATIO)),
        }
        # SQL rather than delta-spark's DeltaTable builder: the same statement runs in process and through Spark Connect
        sql = f"OPTIMIZE {spark_path(table.location)}"
        if where is not None:
            sql += f" WHERE {where}"  # one validated expression (maintenance.validate_predicate); Delta refuses non-partition columns
        if strategy == "zorder":
            sql += f" ZORDER BY ({', '.join(quote(c) for c in by)})"
        elif strategy == "cluster" and full:
            sql += " FULL"
        if apply_deletes:  # deletion vectors purged: every file carrying one is rewritten without the rows it hides
            sql = f"REORG TABLE {spark_path(table.location)}{f' WHERE {where}' if where else ''} APPLY (PURGE)"
        with spark_errors("compact", table.entry.ident), spark_conf(spark, conf):
            row = command_row(spark, sql)
        metrics = row["metrics"] if row else None
        return (int(metrics["numFilesRemoved"]), int(metrics["numFilesAdded"])) if metrics else (0, 0)

    def expire(self, table: TableHandle, window: timedelta, keep: int, dry_run: bool, force: bool) -> ExpireResult:
        """Delete the data files only expired versions read, then truncate the log before the oldest kept.

        The files are computed from the log rather than left to VACUUM: VACUUM's RETAIN rounds to whole
        hours (so a window derived from ``retain_last`` cannot be expressed exactly) and VACUUM FULL would
        also delete untracked files a concurrent writer has not committed yet.
        """
        dt = self.load(table)  # type: ignore[attr-defined]
        current = dt.version()
        entries = log_entries(table.location, table.name)
        times = commit_times(entries)
        cutoff = now() - window
        cutoff_ms = int(cutoff.timestamp() * 1000)
        available = sorted(v for v in times if v <= current)
        recent = [v for v in available if times[v] >= cutoff_ms]
        oldest_kept = min([current - keep + 1, *(recent[:1] or [current])])
        oldest_kept = max(oldest_kept, available[0] if available else 0)
        # a tagged version keeps its data files and the log it is read from (lakecat's tags, in the metastore)
        tagged = sorted(v for v in self.protected_versions(table) if v in available and v < oldest_kept)  # type: ignore[attr-defined]
        expired = [v for v in available if v < oldest_kept and v not in tagged]
        retained = [v for v in available if v >= oldest_kept or v in tagged]
        doomed: dict[str, int] = {}
        if expired:
            needed = {_plain(u) for u in self.load(table, version=oldest_kept).file_uris()}  # type: ignore[attr-defined]
            for v in tagged:
                needed |= {_plain(u) for u in self.load(table, version=v).file_uris()}  # type: ignore[attr-defined]
            later_adds, _ = log_actions(table.location, entries, oldest_kept + 1, current)
            needed |= later_adds
            earliest = {_plain(u) for u in self.load(table, version=available[0]).file_uris()}  # type: ignore[attr-defined]
            adds, removes = log_actions(table.location, entries, available[0] + 1, oldest_kept)
            # the change data files of expired commits: only a change read of those versions would open them
            change_files: set[str] = set()
            for v in expired:
                (written,) = log_actions(table.location, entries, v, v, kinds=("cdc",))
                change_files |= written
            needed |= self.mirrored_files(table)  # type: ignore[attr-defined]
            doomed = file_sizes(sorted((earliest | adds | removes | change_files) - needed))
        result = ExpireResult(
            table=table.name, format=self.name, expired_versions=expired, retained_versions=retained,  # type: ignore[attr-defined]
            deleted_files=len(doomed), deleted_bytes=sum(doomed.values()), older_than=format_duration(window),
            retain_last=keep, cutoff=iso(cutoff), forced=force, dry_run=dry_run, files=sorted(doomed),
        )  # fmt: skip
        if dry_run or not expired:
            return result
        gone = []
        for path in doomed:
            try:
                fs_, p = fs_for(path)
                fs_.delete_file(p)
                gone.append(path)
            except FileNotFoundError:
                continue
            head, _, name = p.rpartition("/")
            with contextlib.suppress(OSError):
                fs_.delete_file(f"{head}/.{name}.crc")  # Hadoop's checksum sidecar
        result.deleted_files, result.deleted_bytes = len(gone), sum(doomed[g] for g in gone)
        result.log_truncated_before = self._truncate_log(table, min([oldest_kept, *tagged]))
        return result

    def _truncate_log(self, table: TableHandle, oldest_kept: int) -> int | None:
        """Make versions before ``oldest_kept`` unreadable: a checkpoint at it, then the older log files go.

        This is what Delta's own log cleanup does at checkpoint time once ``delta.logRetentionDuration``
        (30 days by default, cut off at day boundaries) has passed; lakecat does it for the window asked.
        """
        entries = log_entries(table.location, table.name)
        has_checkpoint = any(e.version == oldest_kept and ".checkpoint" in e.name for e in entries)
        try:
            if not has_checkpoint:
                self.load(table, version=oldest_kept).create_checkpoint()  # type: ignore[attr-defined]
            last = last_checkpoint(table.location)
            if last is not None and last < oldest_kept:
                self.load(table, version=oldest_kept).create_checkpoint()  # type: ignore[attr-defined]
        except Exception as e:  # noqa: BLE001 - keep every version rather than risk an unreadable log
            log.warning("table %s: no checkpoint at version %d (%s); the log is left whole", table.name, oldest_kept, e)
            return None
        filesystem, _ = fs_for(table.location)
        for entry in entries:
            if entry.version < oldest_kept:
                with contextlib.suppress(FileNotFoundError):
                    filesystem.delete_file(entry.path)
        return oldest_kept

    def _vacuum(self, table: TableHandle, hours: int, *, dry_run: bool) -> list[str]:
        """Run Delta VACUUM (FULL) with its safety check off for this call only (the caller checked the floor)."""
        spark = table.catalog.session()
        sql = f"VACUUM {spark_path(table.location)} RETAIN {max(int(hours), 0)} HOURS{' DRY RUN' if dry_run else ''}"
        conf = {
            "spark.databricks.delta.retentionDurationCheck.enabled": "false",
            "spark.databricks.delta.vacuum.logging.enabled": "false",  # no VACUUM START/END commits in the history
            # VACUUM lists the table with this many tasks per pass (Spark's default: 10,000 — minutes for a tiny table)
            "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(max(8, default_parallelism(spark) * 4)),
        }
        with spark_errors("vacuum", table.entry.ident), spark_conf(spark, conf):
            rows = spark.sql(sql).collect()
        if not dry_run:
            return []
        return [
            r["path"] for r in rows if not is_local_dir(r["path"])
        ]  # empty directories (e.g. _change_data/) are not files

    def _tagged_files(self, table: TableHandle) -> set[str]:
        out: set[str] = set()
        for v in self.protected_versions(table):  # type: ignore[attr-defined]
            try:
                out |= {_plain(u) for u in self.load(table, version=v).file_uris()}  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001,S112 - a tagged version already gone from the log protects nothing
                continue
        return out

    def find_orphans(self, table: TableHandle, cutoff: datetime, window: timedelta) -> list[str]:
        found = self._vacuum(table, vacuum_hours(window), dry_run=True)
        # kept: the files of tagged versions, and those an Iceberg mirror left behind still reads
        kept = self._tagged_files(table) | self.mirrored_files(table)  # type: ignore[attr-defined]
        return [f for f in found if norm_path(f) not in kept and _plain(f) not in kept]

    def delete_orphans(self, table: TableHandle, cutoff: datetime, window: timedelta) -> None:
        if not self.protected_versions(table) and not self.mirrors(table.entry):  # type: ignore[attr-defined]
            self._vacuum(table, vacuum_hours(window), dry_run=False)
            return
        # VACUUM would delete the files of tagged versions and a mirror's: delete what it found, minus those, ourselves
        for path in self.find_orphans(table, cutoff, window):
            fs_, p = fs_for(_plain(path))
            with contextlib.suppress(FileNotFoundError):
                fs_.delete_file(p)

    def rewrite_metadata(self, table: TableHandle, dry_run: bool, min_count: int) -> MetadataResult:
        """Write a checkpoint (and clean up expired log files) once ``min_count`` commits have none."""
        started = time.monotonic()
        dt = self.load(table)  # type: ignore[attr-defined]
        version = dt.version()
        last = last_checkpoint(table.location)
        since = version - (last if last is not None else -1)
        needed = since >= max(1, min_count)
        res = MetadataResult(table.name, self.name, "checkpoint", needed, since, since,  # type: ignore[attr-defined]
                             f"{plural(since, 'commit')} since the last checkpoint (version {last})", dry_run)  # fmt: skip
        if dry_run or not needed:
            return res
        try:
            dt.create_checkpoint()
            dt.cleanup_metadata()  # drops log files older than delta.logRetentionDuration (default 30 days)
        except Exception as e:  # noqa: BLE001 - delta-rs errors become one line
            raise LakecatError(f"checkpoint {table.name} failed: {first_line(str(e))}") from e
        res.after = 0
        res.detail = f"checkpoint written at version {version}; expired log files cleaned up"
        res.duration_s = round(time.monotonic() - started, 3)
        return res
