"""Versions of a table: history, time travel, change reads and rollback — one interface over both formats.

A *version* is the Delta version, or the Iceberg snapshot id. ``history`` answers from metadata alone
(pyiceberg / delta-rs, no JVM); time travel, change reads and rollback run on Spark.

Timestamps are resolved here, in Python, from the same history that ``history`` shows: ``as_of=T``
reads the newest version committed at or before ``T`` (between two commits: the earlier one), on both
formats alike, and every result says which version it read.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .errors import InvalidArgumentError, LakecatError, UnsupportedOperationError, VersionNotFoundError
from .results import Result
from .units import from_millis, iso, parse_timestamp

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from .table import Table

CHANGE_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
DEFAULT_ROW_LIMIT = 100

# Markers of a read that failed because the version's files are gone (expired / vacuumed).
_MISSING_FILE_MARKERS = (
    "FileNotFoundException", "FAILED_READ_FILE", "DELTA_FILE_NOT_FOUND", "DELTA_CHANGE_DATA_FILE_NOT_FOUND",
    "NotFoundException: File", "Path does not exist", "Cannot find snapshot", "DELTA_VERSIONS_NOT_CONTIGUOUS",
    "DELTA_LOG_FILE_NOT_FOUND", "VersionNotFoundException", "DELTA_CANNOT_RECONSTRUCT_PATH_FROM_URI",
)  # fmt: skip
_CDF_MARKERS = ("DELTA_MISSING_CHANGE_DATA", "enableChangeDataFeed", "change data was not recorded")

# The format's operation word -> lakecat's normalised word.
_DELTA_OPERATIONS = {
    "WRITE": "append", "STREAMING UPDATE": "append", "CREATE TABLE": "create", "CREATE TABLE AS SELECT": "create",
    "CREATE OR REPLACE TABLE": "replace", "CREATE OR REPLACE TABLE AS SELECT": "replace", "REPLACE TABLE": "replace",
    "REPLACE TABLE AS SELECT": "replace", "CONVERT": "create", "CLONE": "create", "SHALLOW CLONE": "create",
    "DELETE": "delete", "TRUNCATE": "delete", "MERGE": "merge", "UPDATE": "update", "OPTIMIZE": "compact",
    "REORG": "compact", "RESTORE": "restore", "VACUUM START": "vacuum", "VACUUM END": "vacuum",
    "SET TBLPROPERTIES": "set_properties", "UNSET TBLPROPERTIES": "set_properties", "ADD COLUMNS": "alter_schema",
    "CHANGE COLUMN": "alter_schema", "CHANGE COLUMNS": "alter_schema", "RENAME COLUMN": "alter_schema",
    "DROP COLUMNS": "alter_schema", "REPLACE COLUMNS": "alter_schema", "ADD CONSTRAINT": "alter",
    "DROP CONSTRAINT": "alter", "UPGRADE PROTOCOL": "alter", "FSCK": "repair",
}  # fmt: skip
_ICEBERG_OPERATIONS = {"append": "append", "overwrite": "overwrite", "delete": "delete", "replace": "compact"}

# Metric names of Delta (Spark and delta-rs spellings) and Iceberg -> lakecat's summary keys; first match wins.
_SUMMARY_KEYS = {
    "rows_added": ("numOutputRows", "num_added_rows", "numTargetRowsInserted", "num_target_rows_inserted",
                   "added-records"),
    "rows_removed": ("numDeletedRows", "num_deleted_rows", "numTargetRowsDeleted", "num_target_rows_deleted",
                     "deleted-records", "added-position-deletes", "added-equality-deletes"),
    "rows_updated": ("numUpdatedRows", "num_updated_rows", "numTargetRowsUpdated", "num_target_rows_updated"),
    "files_added": ("numFiles", "numAddedFiles", "num_added_files", "numTargetFilesAdded", "numFilesAdded",
                    "numRestoredFiles", "added-data-files"),
    "files_removed": ("numRemovedFiles", "num_removed_files", "numTargetFilesRemoved", "numFilesRemoved",
                      "deleted-data-files"),
    "bytes_added": ("numOutputBytes", "numAddedBytes", "restoredFilesSize", "added-files-size"),
    "bytes_removed": ("numRemovedBytes", "removedFilesSize", "removed-files-size"),
    "delete_files_added": ("added-delete-files",),
    "total_rows": ("total-records",),
    "total_files": ("total-data-files",),
}  # fmt: skip


# --- results ------------------------------------------------------------------------------------
@dataclass
class HistoryEntry(Result):
    """One commit: ``version`` is the Delta version or the Iceberg snapshot id."""

    version: int
    timestamp: str | None
    operation: str
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass
class History(Result):
    """What ``history`` answers, newest first."""

    name: str
    format: str
    current_version: int | None
    entries: list[HistoryEntry]

    def to_dict(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [e.to_dict() for e in self.entries]

    def __iter__(self) -> Iterator[HistoryEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i: int) -> HistoryEntry:
        return self.entries[i]


@dataclass
class ReadResult(Result):
    """Rows (or a count) read from a table as of a version, or from its changes.

    ``to_dict()`` has ``count`` with ``count=True`` and ``rows`` otherwise, plus which versions were read.
    """

    name: str
    format: str
    count: int | None = None
    rows: list[dict[str, Any]] | None = None
    columns: list[str] | None = None
    limit: int | None = None
    truncated: bool | None = None
    version: int | None = None
    version_timestamp: str | None = None
    as_of: str | None = None
    since_version: int | None = None
    until_version: int | None = None
    until_timestamp: str | None = None

    def to_dict(self) -> dict[str, Any]:  # type: ignore[override]
        data: dict[str, Any] = {"name": self.name, "format": self.format}
        if self.since_version is not None:
            data.update(since_version=self.since_version, until_version=self.until_version,
                        until_timestamp=self.until_timestamp)  # fmt: skip
        else:
            data.update(version=self.version, version_timestamp=self.version_timestamp, as_of=self.as_of)
        if self.rows is None:
            data["count"] = self.count
        else:
            data.update(columns=self.columns, rows=self.rows, returned=len(self.rows), limit=self.limit,
                        truncated=self.truncated)  # fmt: skip
        return data


@dataclass
class RollbackResult(Result):
    """What ``rollback`` did: the table read ``from_version`` before and reads ``to_version``'s state now.

    ``current_version`` is the version the table is at afterwards: ``to_version`` on Iceberg (the snapshot
    pointer moved), a new RESTORE commit on Delta.
    """

    name: str
    format: str
    from_version: int | None
    to_version: int
    current_version: int | None
    to_timestamp: str | None
    changed: bool


# --- commits of either format, oldest first ---------------------------------------------------
@dataclass
class _Commit:
    version: int
    timestamp_ms: int
    operation: str
    summary: dict[str, Any]
    parent: int | None = None


def _to_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _unified_summary(metrics: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, names in _SUMMARY_KEYS.items():
        for n in names:
            if n in metrics and (value := _to_int(metrics[n])) is not None:
                out[key] = value
                break
    return out


class _Versions:
    """The per-format half: what the metadata says, and how Spark reads a version or a range."""

    def __init__(self, table: Table) -> None:
        self.table = table

    @property
    def name(self) -> str:
        return self.table.name

    def commits(self) -> list[_Commit]:  # oldest first
        raise NotImplementedError

    def current_version(self) -> int | None:
        raise NotImplementedError

    def pointer_moves(self) -> list[_Commit]:
        """Changes of the current version that are no commit of their own (Iceberg rollbacks)."""
        return []

    def timeline(self) -> list[tuple[int, int]]:
        """(timestamp_ms, version) of each time the table's current version changed, oldest first."""
        raise NotImplementedError

    def lineage(self, until: int) -> list[int]:
        """The versions ``until`` descends from, newest first, ``until`` included."""
        raise NotImplementedError

    def read_version(self, version: int) -> DataFrame:
        raise NotImplementedError

    def read_changes(self, since: int, until: int, commits: dict[int, _Commit]) -> DataFrame:
        raise NotImplementedError

    def rollback(self, target: int, current: int | None) -> int | None:
        raise NotImplementedError

    def check_readable(self, version: int) -> None:
        """Raise VersionNotFoundError when the version's files are known to be gone."""

    def missing(self, version: int) -> VersionNotFoundError:
        return VersionNotFoundError(
            f"version {version} of {self.name} does not exist (never committed, or expired); "
            f"`lakecat history {self.name}` lists the versions"
        )


class _IcebergVersions(_Versions):
    _meta: Any = None

    def _metadata(self) -> Any:
        """The table's metadata, read once per operation (each commit writes a new metadata file)."""
        if self._meta is None:
            self._meta = self.table.adapter.load(self.table.refresh()).metadata  # type: ignore[attr-defined]
        return self._meta

    def commits(self) -> list[_Commit]:
        meta = self._metadata()
        current = meta.current_snapshot_id
        ancestors = set(self._ancestors(meta, current)) if current is not None else set()
        out = []
        sequence: dict[int, int] = {}
        for s in meta.snapshots:
            props = dict(s.summary.additional_properties) if s.summary else {}
            engine_op = s.summary.operation.value if s.summary else "unknown"
            op = _ICEBERG_OPERATIONS.get(engine_op, engine_op)
            summary = _unified_summary(props)
            if engine_op == "overwrite" and summary.get("rows_added", 0) < summary.get("rows_removed", 0):
                op = "delete"  # net removal: a copy-on-write delete (rewritten files carry the surviving rows)
            summary = {"engine_operation": engine_op, **summary}
            if "engine-name" in props:
                summary["engine"] = f"{props['engine-name']} {props.get('engine-version', '')}".strip()
            summary["parent_version"] = s.parent_snapshot_id
            summary["current_lineage"] = s.snapshot_id in ancestors
            out.append(_Commit(s.snapshot_id, s.timestamp_ms, op, summary, s.parent_snapshot_id))
            sequence[s.snapshot_id] = s.sequence_number or 0
        out.sort(key=lambda c: (c.timestamp_ms, sequence[c.version]))
        return out

    def pointer_moves(self) -> list[_Commit]:
        """Rollbacks: the snapshot log shows an existing snapshot made current again later on."""
        meta = self._metadata()
        by_id = {s.snapshot_id: s for s in meta.snapshots}
        ancestors = set(self._ancestors(meta, meta.current_snapshot_id))
        out = []
        for e in meta.snapshot_log:
            snap = by_id.get(e.snapshot_id)
            if snap is not None and e.timestamp_ms != snap.timestamp_ms:
                summary = {"engine_operation": "set_current_snapshot", "restored_version": e.snapshot_id,
                           "current_lineage": e.snapshot_id in ancestors}  # fmt: skip
                out.append(_Commit(e.snapshot_id, e.timestamp_ms, "restore", summary, None))
        return out

    @staticmethod
    def _ancestors(meta: Any, start: int | None) -> list[int]:
        by_id = {s.snapshot_id: s for s in meta.snapshots}
        out: list[int] = []
        while start is not None and start in by_id:
            out.append(start)
            start = by_id[start].parent_snapshot_id
        return out

    def current_version(self) -> int | None:
        return self._metadata().current_snapshot_id

    def timeline(self) -> list[tuple[int, int]]:
        meta = self._metadata()
        log = [(e.timestamp_ms, e.snapshot_id) for e in meta.snapshot_log]
        if not log and meta.current_snapshot_id is not None:  # a writer that keeps no snapshot log
            by_id = {s.snapshot_id: s for s in meta.snapshots}
            log = sorted((by_id[v].timestamp_ms, v) for v in self._ancestors(meta, meta.current_snapshot_id))
        return sorted(log)

    def lineage(self, until: int) -> list[int]:
        return self._ancestors(self._metadata(), until)

    def _refresh_spark(self) -> Any:
        spark = self.table.catalog.session()
        # Spark's Iceberg catalog caches table metadata: another engine (pyiceberg) may have committed since.
        spark.sql(f"REFRESH TABLE {self.table.spark_name}")
        return spark

    def read_version(self, version: int) -> DataFrame:
        spark = self._refresh_spark()
        return spark.sql(f"SELECT * FROM {self.table.spark_name} VERSION AS OF {int(version)}")

    def read_changes(self, since: int, until: int, commits: dict[int, _Commit]) -> DataFrame:
        from pyspark.sql import functions as F

        from .formats.base import sql_string
        from .identifiers import quote

        spark = self._refresh_spark()
        meta = self._metadata()
        if since != until and self._has_delete_files(meta, since, commits):
            return self._diff_changes(commits)
        schema = meta.schema()
        identifier_columns = [schema.find_column_name(i) for i in sorted(schema.identifier_field_ids)]
        if not identifier_columns:  # a CDC key recorded by `ingest --cdc` (nullable columns cannot be identifier fields)
            from .cdc import KEY_PROPERTY

            key = [c.strip() for c in str(meta.properties.get(KEY_PROPERTY, "")).split(",") if c.strip()]
            identifier_columns = [c for c in key if c in {f.name for f in schema.fields}]
        empty = since == until
        options = (
            [("end-snapshot-id", until)]
            if empty or since < 0
            else [("start-snapshot-id", since), ("end-snapshot-id", until)]
        )
        view = f"lakecat_changes_{uuid.uuid4().hex}"
        args = [
            f"table => {sql_string(self.table.entry.ident.quoted)}",
            "options => map(" + ", ".join(f"{sql_string(k)}, {sql_string(str(int(v)))}" for k, v in options) + ")",
            f"changelog_view => {sql_string(view)}",
        ]
        if identifier_columns:
            args.append("identifier_columns => array(" + ", ".join(sql_string(c) for c in identifier_columns) + ")")
            args.append("compute_updates => true")
        spark.sql(f"CALL {quote(self.table.catalog.name)}.system.create_changelog_view({', '.join(args)})").collect()
        try:
            df = spark.table(view)
        finally:
            spark.catalog.dropTempView(view)
        stamps = {c.version: c.timestamp_ms for c in commits.values()}
        change_type = F.lower(F.col("_change_type"))
        change_type = (
            F.when(change_type == "update_before", F.lit("update_preimage"))
            .when(change_type == "update_after", F.lit("update_postimage"))
            .otherwise(change_type)
        )
        data_columns = [c for c in df.columns if c not in ("_change_type", "_change_ordinal", "_commit_snapshot_id")]
        df = df.select(
            *[F.col(quote(c)) for c in data_columns],
            change_type.alias("_change_type"),
            F.col("_commit_snapshot_id").cast("bigint").alias("_commit_version"),
            F.timestamp_millis(_lookup(stamps, F.col("_commit_snapshot_id"), "bigint")).alias("_commit_timestamp"),
        )
        return df.where(F.lit(False)) if empty else df

    @staticmethod
    def _has_delete_files(meta: Any, since: int, commits: dict[int, _Commit]) -> bool:
        """Merge-on-read deletes in the range: Iceberg's changelog scan cannot read delete files (yet)."""
        by_id = {s.snapshot_id: s for s in meta.snapshots}
        for version in [since, *commits]:
            snap = by_id.get(version)
            props = snap.summary.additional_properties if snap is not None and snap.summary else {}
            if _to_int(props.get("total-delete-files")) or _to_int(props.get("added-delete-files")):
                return True
        return False

    def _diff_changes(self, commits: dict[int, _Commit]) -> DataFrame:
        """Changes as the difference of each commit and its parent: slower, but it sees merge-on-read deletes."""
        from functools import reduce

        from pyspark.sql import functions as F

        parts = []
        for c in commits.values():
            after = self.read_version(c.version)
            before = self.read_version(c.parent) if c.parent is not None else after.limit(0)
            for kind, df in (("delete", before.exceptAll(after)), ("insert", after.exceptAll(before))):
                parts.append(df.select(
                    "*", F.lit(kind).alias("_change_type"), F.lit(c.version).cast("bigint").alias("_commit_version"),
                    F.timestamp_millis(F.lit(c.timestamp_ms)).alias("_commit_timestamp"),
                ))  # fmt: skip
        return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)

    def rollback(self, target: int, current: int | None) -> int | None:
        from .formats.base import sql_string
        from .identifiers import quote

        spark = self._refresh_spark()
        ancestors = self.lineage(current) if current is not None else []
        procedure = "rollback_to_snapshot" if target in ancestors else "set_current_snapshot"
        spark.sql(
            f"CALL {quote(self.table.catalog.name)}.system.{procedure}("
            f"table => {sql_string(self.table.entry.ident.quoted)}, snapshot_id => {int(target)})"
        ).collect()
        self._meta = None
        return self.current_version()


class _DeltaVersions(_Versions):
    def _dt(self) -> Any:
        return self.table.adapter.load(self.table.entry)  # type: ignore[attr-defined]

    def commits(self) -> list[_Commit]:
        out = []
        for h in self._dt().history():
            version = _to_int(h.get("version"))
            if version is None:
                continue
            engine_op = str(h.get("operation") or "UNKNOWN")
            params = h.get("operationParameters") or {}
            op = _DELTA_OPERATIONS.get(engine_op, engine_op.lower().replace(" ", "_"))
            mode = str(params.get("mode") or params.get("outputMode") or "")
            if engine_op in ("WRITE", "STREAMING UPDATE") and mode.lower() in ("overwrite", "complete"):
                op = "overwrite"
            summary: dict[str, Any] = {
                "engine_operation": engine_op,
                **_unified_summary(h.get("operationMetrics") or {}),
            }
            if h.get("engineInfo"):
                summary["engine"] = h["engineInfo"]
            if mode:
                summary["mode"] = mode
            if params.get("predicate"):
                summary["predicate"] = params["predicate"]
            if engine_op == "RESTORE" and _to_int(params.get("version")) is not None:
                summary["restored_version"] = _to_int(params.get("version"))
            out.append(_Commit(version, int(h.get("timestamp") or 0), op, summary, version - 1 if version else None))
        out.sort(key=lambda c: c.version)
        return out

    def current_version(self) -> int | None:
        return self._dt().version()

    def timeline(self) -> list[tuple[int, int]]:
        return [(c.timestamp_ms, c.version) for c in self.commits()]

    def lineage(self, until: int) -> list[int]:
        return list(range(until, -1, -1))

    def check_readable(self, version: int) -> None:
        """Vacuumed data files of an old version surface only when read (a count may come from stats alone)."""
        local = self.table.catalog.local_path(self.table.location)
        if local is None:  # object storage: listing every file costs more than finding out on read
            return
        dt = self.table.adapter.load(self.table.entry, version=version)  # type: ignore[call-arg]
        actions = dt.get_add_actions(flatten=False)
        paths = actions.column("path").to_pylist() if actions.num_rows else []
        gone = [p for p in paths if "://" not in p and not (local / _unquote(p)).exists()]  # log paths are URL-encoded
        if gone:
            raise VersionNotFoundError(
                f"version {version} of {self.name} can no longer be read: {len(gone)} of its data files were removed "
                f"(vacuum), e.g. {gone[0]}"
            )

    def read_version(self, version: int) -> DataFrame:
        spark = self.table.catalog.session()
        return spark.read.format("delta").option("versionAsOf", int(version)).load(self.table.location)

    def read_changes(self, since: int, until: int, commits: dict[int, _Commit]) -> DataFrame:
        from pyspark.sql import functions as F

        spark = self.table.catalog.session()
        empty = since == until
        start = until if empty else since + 1
        df = (
            spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", int(start))
            .option("endingVersion", int(until))
            .load(self.table.location)
        )
        # The commit's own timestamp (as `history` shows it), not the log file's modification time.
        stamps = {c.version: c.timestamp_ms for c in commits.values() if start <= c.version <= until}
        if stamps:
            df = df.withColumn(
                "_commit_timestamp",
                F.coalesce(
                    F.timestamp_millis(_lookup(stamps, F.col("_commit_version"), "bigint")), F.col("_commit_timestamp")
                ),
            )
        return df.where(F.lit(False)) if empty else df

    def rollback(self, target: int, current: int | None) -> int | None:
        from .formats.delta import spark_path

        spark = self.table.catalog.session()
        spark.sql(f"RESTORE TABLE {spark_path(self.table.location)} TO VERSION AS OF {int(target)}").collect()
        return self.current_version()


def _unquote(path: str) -> str:
    from urllib.parse import unquote

    return unquote(path)


def _lookup(pairs: dict[int, int], key: Any, value_type: str) -> Any:
    """``pairs[key]`` as a Spark column (a literal map; null when the key is absent)."""
    from pyspark.sql import functions as F

    if not pairs:
        return F.lit(None).cast(value_type)
    return F.create_map(*[x for k, v in pairs.items() for x in (F.lit(k), F.lit(v))])[key].cast(value_type)


def _versions(table: Table) -> _Versions:
    if table.format == "iceberg":
        return _IcebergVersions(table)
    if table.format == "delta":
        return _DeltaVersions(table)
    raise UnsupportedOperationError(f"versions: not supported for {table.format} tables")  # pragma: no cover


@contextlib.contextmanager
def _engine_errors(what: str, table: Table, version: int | None = None) -> Iterator[None]:
    """Spark errors -> lakecat errors; a read of files that are gone -> VersionNotFoundError."""
    from .formats.base import first_line, spark_errors

    with spark_errors(what, table.entry.ident):
        try:
            yield
        except LakecatError:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, typed, by spark_errors when not ours
            text = str(e)
            if any(m in text for m in _MISSING_FILE_MARKERS):
                which = f"version {version}" if version is not None else "a version in the range"
                raise VersionNotFoundError(
                    f"{what} {table.name}: {which} can no longer be read — its files were removed "
                    f"(snapshot expiry / vacuum): {first_line(text)}"
                ) from e
            if any(m in text for m in _CDF_MARKERS):
                raise LakecatError(
                    f"{what} {table.name}: the change data feed was not on for part of the range "
                    f"(delta.enableChangeDataFeed): {first_line(text)}"
                ) from e
            raise


def _check_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return int(str(value).strip())
        except ValueError:
            raise InvalidArgumentError(f"invalid {what} {value!r}: expected an integer version") from None
    return value


def _check_limit(limit: int | None) -> int | None:
    if limit is None:
        return None
    limit = _check_int(limit, "limit")
    if limit < 0:
        raise InvalidArgumentError(f"invalid limit {limit}: must be 0 (no limit) or more")
    return limit or None


# --- history (light path) ----------------------------------------------------------------------
def history(table: Table, *, limit: int | None = None) -> History:
    """The table's commits, newest first, from metadata alone (no JVM)."""
    limit = _check_limit(limit)
    v = _versions(table)
    commits = sorted(v.commits() + v.pointer_moves(), key=lambda c: c.timestamp_ms)  # stable: commits stay in order
    entries = [
        HistoryEntry(c.version, iso(from_millis(c.timestamp_ms)), c.operation, c.summary) for c in reversed(commits)
    ]
    return History(table.name, table.format, v.current_version(), entries[:limit] if limit else entries)


@dataclass
class _Resolved:
    version: int
    timestamp_ms: int | None
    as_of: str | None


def resolve_version(table: Table, *, version: int | None = None, timestamp: str | datetime | None = None) -> _Resolved:
    """Which version ``version=`` or ``timestamp=`` means (exactly one of them); light path, no JVM.

    A timestamp between two commits resolves to the earlier one; before the first commit is an error.
    """
    if (version is None) == (timestamp is None):
        raise InvalidArgumentError("give exactly one of a version (--version) or a timestamp (--as-of)")
    v = _versions(table)
    commits = {c.version: c for c in v.commits()}
    if version is not None:
        version = _check_int(version, "version")
        if version not in commits or (table.format == "delta" and version > (v.current_version() or 0)):
            raise v.missing(version)
        v.check_readable(version)
        return _Resolved(version, commits[version].timestamp_ms, None)
    when = parse_timestamp(timestamp)  # type: ignore[arg-type]
    when_ms = int(when.timestamp() * 1000)
    candidates = [(ts, ver) for ts, ver in v.timeline() if ts <= when_ms]
    if not candidates:
        first = v.timeline()
        hint = f"its first commit is at {iso(from_millis(first[0][0]))}" if first else "it has no commits yet"
        raise VersionNotFoundError(f"{table.name} has no version as of {iso(when)}: {hint}")
    found = max(candidates)[1]
    if found not in commits:
        raise VersionNotFoundError(f"{table.name} as of {iso(when)} was version {found}, which has been expired")
    v.check_readable(found)
    return _Resolved(found, commits[found].timestamp_ms, iso(when))


# --- time travel --------------------------------------------------------------------------------
@dataclass
class TableAsOf(Result):
    """A read-only view of a table pinned to one version.

    Example:
        >>> v = cat.table("sales.orders").as_of(timestamp="2026-01-31T12:00:00")
        >>> v.version, v.count(), v.to_pandas()
    """

    name: str
    format: str
    version: int
    version_timestamp: str | None
    as_of: str | None
    table: Table = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:  # type: ignore[override]
        return {"name": self.name, "format": self.format, "version": self.version,
                "version_timestamp": self.version_timestamp, "as_of": self.as_of}  # fmt: skip

    def to_spark(self, *, where: str | None = None) -> DataFrame:
        """The rows of this version as a Spark DataFrame (optionally filtered by a SQL predicate)."""
        with _engine_errors("timetravel", self.table, self.version):
            df = _versions(self.table).read_version(self.version)
        return _where(df, where)

    def count(self, *, where: str | None = None) -> int:
        df = self.to_spark(where=where)
        with _engine_errors("timetravel", self.table, self.version):
            return int(df.count())

    def to_arrow(self, *, where: str | None = None, limit: int | None = None) -> pa.Table:
        df = self.to_spark(where=where)
        limit = _check_limit(limit)
        with _engine_errors("timetravel", self.table, self.version):
            return (df.limit(limit) if limit else df).toArrow()

    def to_pandas(self, *, where: str | None = None, limit: int | None = None) -> pd.DataFrame:
        return self.to_arrow(where=where, limit=limit).to_pandas()

    def read(
        self, *, where: str | None = None, limit: int | None = DEFAULT_ROW_LIMIT, count: bool = False
    ) -> ReadResult:
        """Rows (at most ``limit``; 0 or None: all) or, with ``count=True``, the number of rows."""
        base = dict(name=self.name, format=self.format, version=self.version,
                    version_timestamp=self.version_timestamp, as_of=self.as_of)  # fmt: skip
        if count:
            return ReadResult(count=self.count(where=where), **base)  # type: ignore[arg-type]
        limit = _check_limit(limit)
        df = self.to_spark(where=where)
        with _engine_errors("timetravel", self.table, self.version):
            rows, truncated = _collect(df, limit)
        return ReadResult(count=len(rows), rows=rows, columns=df.columns, limit=limit, truncated=truncated, **base)  # type: ignore[arg-type]


def as_of(table: Table, *, version: int | None = None, timestamp: str | datetime | None = None) -> TableAsOf:
    """The table pinned to ``version`` or to the newest version at or before ``timestamp``."""
    r = resolve_version(table, version=version, timestamp=timestamp)
    return TableAsOf(table.name, table.format, r.version, iso(from_millis(r.timestamp_ms)) if r.timestamp_ms else None,
                     r.as_of, table)  # fmt: skip


def _where(df: DataFrame, where: str | None) -> DataFrame:
    if where is None or not str(where).strip():
        return df
    from .formats.base import first_line

    try:
        return df.where(str(where))  # user text stays a predicate: Spark parses it as one expression
    except Exception as e:  # noqa: BLE001 - any failure to analyse the predicate is the caller's mistake
        raise InvalidArgumentError(f"invalid --where predicate {where!r}: {first_line(str(e))}") from None


def _collect(df: DataFrame, limit: int | None) -> tuple[list[dict[str, Any]], bool]:
    rows = (df.limit(limit + 1) if limit else df).toArrow().to_pylist()
    truncated = bool(limit) and len(rows) > (limit or 0)
    return (rows[:limit] if limit else rows), truncated


# --- changes ------------------------------------------------------------------------------------
@dataclass
class TableChanges(Result):
    """The rows that changed after ``since_version`` up to and including ``until_version``.

    Every row carries ``_change_type`` (``insert``, ``delete``, ``update_preimage``, ``update_postimage``),
    ``_commit_version`` and ``_commit_timestamp``, on both formats. Resume with ``since=until_version``.
    """

    name: str
    format: str
    since_version: int
    until_version: int
    until_timestamp: str | None
    table: Table = field(repr=False, compare=False)
    _commits: dict[int, _Commit] = field(repr=False, compare=False, default_factory=dict)

    def to_dict(self) -> dict[str, Any]:  # type: ignore[override]
        return {"name": self.name, "format": self.format, "since_version": self.since_version,
                "until_version": self.until_version, "until_timestamp": self.until_timestamp}  # fmt: skip

    def to_spark(self) -> DataFrame:
        """The change rows as a Spark DataFrame (unordered)."""
        with _engine_errors("changes", self.table):
            return _versions(self.table).read_changes(self.since_version, self.until_version, self._commits)

    def count(self) -> int:
        df = self.to_spark()
        with _engine_errors("changes", self.table):
            return int(df.count())

    def _ordered(self) -> DataFrame:
        from pyspark.sql import functions as F

        df = self.to_spark()
        order = {v: i for i, v in enumerate(self._commits)}  # commits are kept oldest first
        kind = (F.when(F.col("_change_type") == "delete", 0).when(F.col("_change_type") == "update_preimage", 1)
                .when(F.col("_change_type") == "update_postimage", 2).otherwise(3))  # fmt: skip
        return df.orderBy(_lookup(order, F.col("_commit_version"), "int"), F.col("_commit_version"), kind)

    def to_arrow(self, *, limit: int | None = None) -> pa.Table:
        """The change rows in commit order (deletes and pre-images before inserts and post-images)."""
        limit = _check_limit(limit)
        df = self._ordered()
        with _engine_errors("changes", self.table):
            return (df.limit(limit) if limit else df).toArrow()

    def to_pandas(self, *, limit: int | None = None) -> pd.DataFrame:
        return self.to_arrow(limit=limit).to_pandas()

    def read(self, *, limit: int | None = DEFAULT_ROW_LIMIT, count: bool = False) -> ReadResult:
        base = dict(name=self.name, format=self.format, since_version=self.since_version,
                    until_version=self.until_version, until_timestamp=self.until_timestamp)  # fmt: skip
        if count:
            return ReadResult(count=self.count(), **base)  # type: ignore[arg-type]
        limit = _check_limit(limit)
        df = self._ordered()
        with _engine_errors("changes", self.table):
            rows, truncated = _collect(df, limit)
        return ReadResult(count=len(rows), rows=rows, columns=df.columns, limit=limit, truncated=truncated, **base)  # type: ignore[arg-type]


def changes(table: Table, *, since: int, until: int | None = None) -> TableChanges:
    """Changes committed after ``since`` (exclusive) up to ``until`` (inclusive; default: the current version).

    ``since=-1`` reads from the table's first commit. On Iceberg, versions are snapshot ids and ``since``
    must be an ancestor of ``until`` (changes are read along one line of history).
    """
    since = _check_int(since, "--since version")
    v = _versions(table)
    commits = {c.version: c for c in v.commits()}
    current = v.current_version()
    if until is None:
        if current is None:
            raise VersionNotFoundError(f"{table.name} has no versions yet: nothing has been committed")
        until = current
    until = _check_int(until, "--until version")
    if until not in commits or (table.format == "delta" and until > (current or 0)):
        raise v.missing(until)
    lineage = v.lineage(until)
    if since != -1:
        if since not in commits and since not in lineage:
            raise v.missing(since)
        if since not in lineage:
            if table.format == "delta":
                raise InvalidArgumentError(f"--since {since} is after --until {until}")
            raise VersionNotFoundError(
                f"version {since} of {table.name} is not an ancestor of version {until} (rolled back, or on "
                "another branch): changes are read along one line of history"
            )
        span = lineage[: lineage.index(since)]
    else:
        span = lineage
    missing = [x for x in span if x not in commits]
    if missing:
        raise VersionNotFoundError(f"changes {table.name}: version {missing[0]} in the range has been expired")
    in_range = {x: commits[x] for x in reversed(span)}  # oldest first
    return TableChanges(table.name, table.format, since, until, iso(from_millis(commits[until].timestamp_ms)),
                        table, in_range)  # fmt: skip


# --- rollback -----------------------------------------------------------------------------------
def rollback(table: Table, *, version: int | None = None, timestamp: str | datetime | None = None) -> RollbackResult:
    """Make the table read as it did at ``version`` (or as of ``timestamp``).

    Iceberg moves the current-snapshot pointer (``rollback_to_snapshot``, or ``set_current_snapshot``
    when the target is not an ancestor); Delta commits a ``RESTORE``.
    """
    target = resolve_version(table, version=version, timestamp=timestamp)
    v = _versions(table)
    current = v.current_version()
    stamp = iso(from_millis(target.timestamp_ms)) if target.timestamp_ms else None
    if current == target.version:
        return RollbackResult(table.name, table.format, current, target.version, current, stamp, False)
    with _engine_errors("rollback", table, target.version):
        after = v.rollback(target.version, current)
    table.refresh()
    return RollbackResult(table.name, table.format, current, target.version, after, stamp, True)
