"""Delta maintenance: OPTIMIZE, expiry and orphan cleanup computed from the log, checkpoints (delta-rs)."""

from __future__ import annotations

import contextlib
import json
import logging
import time
import urllib.parse
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ...engine import (
    command_row,
    first_line,
    now,
    spark_conf,
    spark_errors,
    sql_string,
)
from ...errors import LakecatError
from ...files import DataFile, file_sizes, fs_for, norm_path
from ...identifiers import quote
from ...results import ExpireResult, MetadataResult
from ...units import format_duration, iso, plural
from .log import (
    LogEntry,
    add_actions,
    arrow,
    commit_actions,
    commit_times,
    deletion_vector_file,
    last_checkpoint,
    live_files,
    log_actions,
    log_entries,
    log_start,
)

if TYPE_CHECKING:
    from ..base import TableHandle

log = logging.getLogger(__name__)
SMALL_FILE_RATIO = 0.75  # OPTIMIZE's minFileSize: the same "small" as lakecat's planner
#: expire removes a log file only before a checkpoint at least this old, and only when the file is this old too: a
#: reader starts from the newest checkpoint it listed, so one that listed the log within it never loses a file it reads
LOG_READER_FLOOR = timedelta(hours=1)
#: The steps lakecat does on its own for a Delta table (delta-rs and its own log accounting): no Spark step exists for
#: them, so they run light whatever engine is asked for, and say so.
LIGHT_ONLY = {
    "expire": "Delta's expiry is lakecat's own log accounting with delta-rs (VACUUM's window is whole hours)",
    "clean-orphans": "Delta's orphan cleanup is lakecat's own log accounting with delta-rs (VACUUM would also delete "
    "files of commits still in flight)",
    "rewrite-metadata": "Delta's checkpoint and log cleanup are delta-rs's",
}


def spark_path(location: str) -> str:
    """``delta.`location``` with the path quoted for Spark SQL."""
    return "delta.`" + location.replace("`", "``") + "`"


def _plain(path: str) -> str:
    """A file's location as VACUUM and delta-rs's ``file_uris`` give it, spelled as ``norm_path`` spells the log's
    paths: the scheme goes but nothing is decoded (a partition directory's %-escapes, such as delta-rs's ``a%20b``,
    are part of the name on disk)."""
    return norm_path(urllib.parse.quote(path, safe="/:"))


def _hidden(name: str, partition_columns: list[str]) -> bool:
    """A name VACUUM leaves alone (Delta's ``isHiddenDirectory``): ``_``/``.``-prefixed (the log, checksum sidecars,
    lakecat's mirror metadata) but not ``_delta_index``, ``_change_data`` or a partition directory ``col=...``;
    ``metadata`` (UniForm's Iceberg metadata)."""
    if name == "metadata":
        return True
    return (
        name.startswith((".", "_"))
        and not name.startswith(("_delta_index", "_change_data"))
        and not any(name.startswith(f"{c}=") for c in partition_columns)
    )


def _unreadable(table: TableHandle, what: str, error: BaseException) -> LakecatError:
    """The one line that stops a deletion: what could not be read, of which table, and why."""
    return LakecatError(f"table {table.name}: {what} could not be read, so nothing is deleted: "
                        f"{first_line(str(error)) or type(error).__name__}")  # fmt: skip


def _log_key(base: str, path: str) -> str:
    """A log's path (%-escaped, relative to the table or absolute) spelled as ``_plain`` spells a file on disk."""
    return norm_path(path if _absolute(path) else f"{base}/{path}")


def _absolute(path: str) -> bool:
    return path.startswith("/") or urllib.parse.urlparse(path).scheme != ""


def _dv_key(base: str, dv: str) -> str:
    """A deletion vector's file (``deletion_vector_file``: relative and unescaped, or absolute) as ``_log_key``."""
    return _log_key(base, dv if _absolute(dv) else urllib.parse.quote(dv))


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

    def light_blockers(self, table: TableHandle, action: str) -> list[str]:
        if action not in LIGHT_ONLY:
            return super().light_blockers(table, action)  # type: ignore[misc, no-any-return]
        return []

    def sole_engine(self, table: TableHandle, action: str) -> tuple[str, str] | None:
        if action not in LIGHT_ONLY:
            return super().sole_engine(table, action)  # type: ignore[misc, no-any-return]
        return "light", LIGHT_ONLY[action]

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
        with spark_errors("compact(where)", table.entry.ident):
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

    def expire(self, table: TableHandle, window: timedelta, keep: int, dry_run: bool, force: bool, *,
               engine: str = "light") -> ExpireResult:  # fmt: skip
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
            needed = self._version_files(table, oldest_kept, entries)
            for v in tagged:
                needed |= self._version_files(table, v, entries)
            later_adds, _ = self._log_actions(table, entries, oldest_kept + 1, current)
            needed |= later_adds
            earliest = self._version_files(table, available[0], entries)
            adds, removes = self._log_actions(table, entries, available[0] + 1, oldest_kept)
            # the change data files of expired commits: only a change read of those versions would open them
            change_files: set[str] = set()
            for v in expired:
                (written,) = self._log_actions(table, entries, v, v, kinds=("cdc",))
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
        """Make versions before ``oldest_kept`` unreadable as far as readers allow: a checkpoint at it (for this run
        or a later one), then the log files before the newest checkpoint at or before it that is older than
        ``LOG_READER_FLOOR`` go (those files older than the floor too). Returns where the log now starts, None when
        nothing went.

        This is what Delta's own log cleanup does at checkpoint time once ``delta.logRetentionDuration`` has passed
        (a checkpoint older than it, the files before it); lakecat does it for the window asked, and keeps what a
        reader that listed the log within the floor may still be reading.
        """
        from deltalake.exceptions import DeltaError

        entries = log_entries(table.location, table.name)
        has_checkpoint = any(e.version == oldest_kept and ".checkpoint" in e.name for e in entries)
        try:
            if not has_checkpoint:
                self.load(table, version=oldest_kept).create_checkpoint()  # type: ignore[attr-defined]
            last = last_checkpoint(table.location)
            if last is not None and last < oldest_kept:
                self.load(table, version=oldest_kept).create_checkpoint()  # type: ignore[attr-defined]
        except (DeltaError, OSError, LakecatError) as e:  # keep every version rather than risk an unreadable log
            log.warning("table %s: no checkpoint at version %d (%s); the log is left whole", table.name, oldest_kept, e)
            return None
        floor_ms = int((now() - LOG_READER_FLOOR).timestamp() * 1000)
        ready = [e.version for e in entries if ".checkpoint" in e.name and e.version <= oldest_kept
                 and e.mtime_ms <= floor_ms]  # fmt: skip
        if not ready:
            return None
        start = max(ready)
        filesystem, _ = fs_for(table.location)
        gone = False
        for entry in entries:
            if entry.version < start and entry.mtime_ms <= floor_ms:
                with contextlib.suppress(FileNotFoundError):
                    filesystem.delete_file(entry.path)
                    gone = True
        return start if gone else None

    def _version_files(self, table: TableHandle, version: int, entries: list[LogEntry]) -> set[str]:
        """The files ``version`` reads. Empty for a version gone from the log (before where it starts); any other
        failure to read it stops the caller before it deletes anything."""
        start = log_start(entries)
        if start is not None and version < start:
            return set()
        try:
            return {_plain(u) for u in self.load(table, version=version).file_uris()}  # type: ignore[attr-defined]
        except Exception as e:  # noqa: BLE001 - not knowing what a version reads, delete nothing
            raise _unreadable(table, f"version {version}", e) from e

    def _log_actions(self, table: TableHandle, entries: list[LogEntry], first: int, last: int,
                     kinds: tuple[str, ...] = ("add", "remove")) -> tuple[set[str], ...]:  # fmt: skip
        """``log_actions``, a commit that cannot be read stopping the caller in one line."""
        found: list[set[str]] = [set() for _ in kinds]
        for e in entries:
            if first <= e.version <= last and e.name == f"{e.version:020d}.json":
                try:
                    sets = log_actions(table.location, [e], e.version, e.version, kinds)
                except Exception as err:  # noqa: BLE001 - a damaged or unreachable commit: delete nothing
                    raise _unreadable(table, f"the log entry of version {e.version}", err) from err
                for acc, got in zip(found, sets, strict=True):
                    acc |= got
        return tuple(found)

    def _referenced(self, table: TableHandle) -> set[str]:
        """Every file a version still in the log reads or wrote (data, change data, deletion vectors), those of
        tagged versions and those the mirrors read: what orphan cleanup keeps whatever its age."""
        entries = log_entries(table.location, table.name)
        base = table.location.rstrip("/")
        out: set[str] = set()
        start = log_start(entries)
        if start is not None:  # the files of the oldest readable version, then what every commit since names
            out |= self._version_files(table, start, entries)
            out |= self._checkpoint_files(table, [e for e in entries if e.version == start and ".checkpoint" in e.name])
        for e in sorted(entries, key=lambda e: e.version):
            if e.name != f"{e.version:020d}.json":
                continue
            try:
                for _, action in commit_actions(table.location, [e], e.version, e.version, ("add", "remove", "cdc")):
                    out.add(_log_key(base, str(action["path"])))
                    if (dv := deletion_vector_file(action.get("deletionVector"))) is not None:
                        out.add(_dv_key(base, dv))
            except Exception as err:  # noqa: BLE001 - a damaged or unreachable commit: delete nothing
                raise _unreadable(table, f"the log entry of version {e.version}", err) from err
        for v in self.protected_versions(table):  # type: ignore[attr-defined]
            out |= self._version_files(table, v, entries)
        return out | self.mirrored_files(table)  # type: ignore[attr-defined]

    def _checkpoint_files(self, table: TableHandle, parts: list[LogEntry]) -> set[str]:
        """The data and deletion vector files a checkpoint's ``add`` actions (and its sidecars') name."""
        import pyarrow.parquet as pq

        base = table.location.rstrip("/")
        filesystem, _ = fs_for(table.location)
        out: set[str] = set()
        todo = [p.path for p in parts]
        try:
            while todo:
                path = todo.pop()
                with filesystem.open_input_file(path) as fh:
                    if path.endswith(".json"):
                        rows = [json.loads(line) for line in fh.read().decode("utf-8").splitlines() if line.strip()]
                    else:
                        pf = pq.ParquetFile(fh)
                        names = set(pf.schema_arrow.names)
                        rows = pf.read(columns=[c for c in ("add", "sidecar") if c in names]).to_pylist()
                for row in rows:
                    if (side := row.get("sidecar")) and side.get("path"):
                        todo.append(f"{path.rpartition('/')[0]}/_sidecars/{urllib.parse.unquote(side['path'])}")
                    if add := row.get("add"):
                        out.add(_log_key(base, str(add["path"])))
                        if (dv := deletion_vector_file(add.get("deletionVector"))) is not None:
                            out.add(_dv_key(base, dv))
        except Exception as err:  # noqa: BLE001 - an unreadable checkpoint: delete nothing
            raise _unreadable(table, f"the checkpoint of version {parts[0].version}", err) from err
        return out

    def find_orphans(self, table: TableHandle, cutoff: datetime, window: timedelta, *,
                     engine: str = "light") -> list[str]:  # fmt: skip
        """Files under the table that no version in the log, no tagged version and no mirror reads, older than the
        cutoff; what VACUUM leaves alone (``_hidden``) is not looked at. Listed before the log is read, so a file a
        commit names by then is kept."""
        from pyarrow import fs

        filesystem, root = fs_for(table.location)
        root = root.rstrip("/")
        infos = filesystem.get_file_info(fs.FileSelector(root, recursive=True))
        columns = list(self.load(table).metadata().partition_columns)  # type: ignore[attr-defined]
        cutoff_s = cutoff.timestamp()
        scheme = table.location.split("://", 1)[0] if "://" in table.location and not table.location.startswith(
            "file:") else None  # fmt: skip
        candidates: list[tuple[str, str]] = []
        for info in infos:
            if info.type != fs.FileType.File or info.mtime is None or info.mtime.timestamp() >= cutoff_s:
                continue
            rel = info.path[len(root) + 1 :]
            if any(_hidden(part, columns) for part in rel.split("/")):
                continue
            shown = f"{scheme}://{info.path}" if scheme else info.path
            candidates.append((shown, _plain(f"{table.location.rstrip('/')}/{rel}")))
        if not candidates:
            return []
        kept = self._referenced(table)
        return sorted(shown for shown, key in candidates if key not in kept)

    def delete_orphans(self, table: TableHandle, cutoff: datetime, window: timedelta, *,
                       engine: str = "light") -> None:  # fmt: skip
        for path in self.find_orphans(table, cutoff, window):
            fs_, p = fs_for(path)
            with contextlib.suppress(FileNotFoundError):
                fs_.delete_file(p)
            head, _, name = p.rpartition("/")
            with contextlib.suppress(OSError):
                fs_.delete_file(f"{head}/.{name}.crc")  # Hadoop's checksum sidecar

    def rewrite_metadata(self, table: TableHandle, dry_run: bool, min_count: int, *,
                         engine: str = "light") -> MetadataResult:  # fmt: skip
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
