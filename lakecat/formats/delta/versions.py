"""Delta versions: the log's commits, reads at a version, the change data feed, RESTORE."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ...engine import to_int
from ...errors import InvalidArgumentError, NotExactError, VersionNotFoundError
from ...files import local_path
from ...pruning import ColumnStats, stats_filter
from ...records import spark_lookup
from ..base import Commit, VersionLog, unified_summary
from .log import arrow, commit_actions, log_entries, log_transactions
from .maintenance import spark_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ...config import CatalogConfig
    from ..base import TableHandle

# Delta's operation word -> lakecat's word for it (``lakecat.formats.base.OPERATIONS``).
_OPERATIONS = {
    "WRITE": "append", "STREAMING UPDATE": "append", "CREATE TABLE": "create", "CREATE TABLE AS SELECT": "create",
    "CREATE OR REPLACE TABLE": "replace", "CREATE OR REPLACE TABLE AS SELECT": "replace", "REPLACE TABLE": "replace",
    "REPLACE TABLE AS SELECT": "replace", "CONVERT": "create", "CLONE": "create", "SHALLOW CLONE": "create",
    "DELETE": "delete", "TRUNCATE": "delete", "MERGE": "merge", "UPDATE": "update", "OPTIMIZE": "compact",
    "REORG": "compact", "RESTORE": "restore", "VACUUM START": "vacuum", "VACUUM END": "vacuum",
    "SET TBLPROPERTIES": "set_properties", "UNSET TBLPROPERTIES": "set_properties", "ADD COLUMNS": "alter_schema",
    "CHANGE COLUMN": "alter_schema", "CHANGE COLUMNS": "alter_schema", "RENAME COLUMN": "alter_schema",
    "DROP COLUMNS": "alter_schema", "REPLACE COLUMNS": "alter_schema", "ADD CONSTRAINT": "alter",
    "DROP CONSTRAINT": "alter", "UPGRADE PROTOCOL": "alter", "ADD FEATURE": "alter", "DROP FEATURE": "alter",
    "CLUSTER BY": "alter", "UPDATE COLUMN METADATA": "alter_schema", "FSCK": "repair",
}  # fmt: skip


def _rows_without_deleted(dt: Any) -> Any:
    """The version's rows as a stream, through delta-rs's query engine, which applies deletion vectors (its Arrow dataset
    refuses a table with them); in the table's own Arrow types (the engine's string views and the like are cast)."""
    import pyarrow as pa
    from deltalake import QueryBuilder

    schema = pa.schema(dt.schema().to_arrow())
    select = ", ".join('"' + n.replace('"', '""') + '"' for n in schema.names)
    reader = pa.RecordBatchReader.from_stream(QueryBuilder().register("t", dt).execute(f"SELECT {select} FROM t"))
    return reader.cast(schema)


# Spark's expression ids (``id#757L``) in a predicate Delta on Spark records: the plan's internals, not the user's text.
_EXPRESSION_ID = re.compile(r"#\d+L?")


def _predicate(value: Any, engine_op: str) -> str | None:
    """A commit's predicate as text without Spark's expression ids (Delta on Spark records a JSON list of them).
    None for none, and for a MERGE's condition from Spark: without its expression ids its two sides read the same."""
    text = str(value or "")
    try:
        parts = json.loads(text)
    except ValueError:
        parts = None
    if isinstance(parts, list):
        text = " AND ".join(str(p) for p in parts)
    clean = _EXPRESSION_ID.sub("", text).strip()
    if not clean or (engine_op == "MERGE" and clean != text.strip()):
        return None
    return clean


#: A commit's own word for what it did, in its commit info, where Delta's operation does not say (delta-rs deletes by an
#: overwrite with a predicate and no new rows: a ``WRITE`` that lakecat marks ``delete``).
OPERATION_KEY = "lakecat.operation"


def _commit(h: dict[str, Any]) -> Commit | None:
    version = to_int(h.get("version"))
    if version is None:
        return None
    engine_op = str(h.get("operation") or "UNKNOWN")
    params = h.get("operationParameters") or {}
    op = _OPERATIONS.get(engine_op, "other")
    mode = str(params.get("mode") or params.get("outputMode") or "")
    if engine_op in ("WRITE", "STREAMING UPDATE") and mode.lower() in ("overwrite", "complete"):
        op = "overwrite"
    if h.get(OPERATION_KEY) == "delete":
        op = "delete"
    summary: dict[str, Any] = {"engine_operation": engine_op, **unified_summary(h.get("operationMetrics") or {})}
    if h.get("engineInfo"):
        summary["engine"] = h["engineInfo"]
    if mode:
        summary["mode"] = mode
    predicate = _predicate(params.get("predicate"), engine_op)
    if predicate:
        summary["predicate"] = predicate
    if engine_op == "RESTORE" and to_int(params.get("version")) is not None:
        summary["restored_version"] = to_int(params.get("version"))
    return Commit(version, int(h.get("timestamp") or 0), op, summary, version - 1 if version else None)


# Delta reader features delta-rs reads exactly as Delta on Spark does (anything else: the read goes to Spark).
_LIGHT_READER_FEATURES = frozenset({"timestampNtz", "deletionVectors"})

#: delta-spark's refusal of a version committed before the table's ``delta.deletedFileRetentionDuration``, whether or
#: not its files are there. lakecat's expiry decides which versions are readable (it keeps what it retains and what
#: tags name), so its sessions turn the refusal off.
TIME_TRAVEL_LIMIT_CONF = "spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration"


class DeltaVersionLog(VersionLog):
    """Delta's versions form one line: 0, 1, 2, ... up to the current one."""

    _current: int | None = None
    _known = False

    def current_version(self) -> int | None:
        if not self._known:
            self._current, self._known = self.fmt.current_version(self.table), True
        return self._current

    def lineage(self, until: int) -> list[int]:
        return list(range(until, -1, -1))

    def exists(self, version: int) -> bool:
        return super().exists(version) and version <= (self.current_version() or 0)

    def not_an_ancestor(self, since: int, until: int) -> Exception:
        return InvalidArgumentError(f"since={since} is after until={until}")

    def check_readable(self, version: int) -> None:
        """Vacuumed data files of an old version surface only when read (a count may come from stats alone)."""
        local = local_path(self.table.location)
        if local is None:  # object storage: listing every file costs more than finding out on read
            return

        dt = self.fmt.load(self.table, version=version)  # type: ignore[attr-defined]
        actions = dt.get_add_actions(flatten=False)
        paths = actions.column("path").to_pylist() if actions.num_rows else []
        gone = [p for p in paths if "://" not in p and not (local / unquote(p)).exists()]  # log paths are URL-encoded
        if gone:
            raise VersionNotFoundError(
                f"version {version} of {self.name} is no longer readable: its data files were removed by expiry "
                f"(lakecat expire / VACUUM) — {len(gone)} of {len(paths)}, e.g. {gone[0]}"
            )

    def missing(self, version: int) -> VersionNotFoundError:
        kept = [c.version for c in self.commits()]
        if kept and 0 <= version < min(kept):
            return VersionNotFoundError(
                f"version {version} of {self.name} is no longer readable: its log entries were removed by expiry "
                f"(lakecat expire / Delta's log cleanup); `lakecat history {self.name}` lists the versions left"
            )
        return super().missing(version)


class DeltaVersions:
    """The versions half of the Delta adapter (mixed into ``DeltaFormat``)."""

    def versions(self, table: TableHandle) -> DeltaVersionLog:
        return DeltaVersionLog(self, table)  # type: ignore[arg-type]

    def commits(self, table: TableHandle) -> list[Commit]:
        out = [c for c in (_commit(h) for h in self.load(table).history()) if c is not None]  # type: ignore[attr-defined]
        out.sort(key=lambda c: c.version)
        return out

    def current_version(self, table: TableHandle) -> int | None:
        return self.load(table).version()  # type: ignore[attr-defined, no-any-return]

    def spark_catalog_conf(self, config: CatalogConfig) -> dict[str, str]:
        # Set in every session lakecat uses (at start, and on a Spark Connect server it did not start); the user's own
        # [spark.conf] value wins
        return {TIME_TRAVEL_LIMIT_CONF: config.spark_conf.get(TIME_TRAVEL_LIMIT_CONF, "false")}

    def read_version(self, table: TableHandle, version: int) -> DataFrame:
        spark = table.catalog.session()
        return spark.read.format("delta").option("versionAsOf", int(version)).load(table.location)

    def read_changes(self, table: TableHandle, since: int, until: int, commits: dict[int, Commit]) -> DataFrame:
        from pyspark.sql import functions as F

        spark = table.catalog.session()
        empty = since == until
        start = until if empty else since + 1
        df = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", int(start))
              .option("endingVersion", int(until)).load(table.location))  # fmt: skip
        # The commit's own timestamp (as `history` shows it), not the log file's modification time.
        stamps = {c.version: c.timestamp_ms for c in commits.values() if start <= c.version <= until}
        if stamps:
            df = df.withColumn("_commit_timestamp", F.coalesce(
                F.timestamp_millis(spark_lookup(stamps, F.col("_commit_version"), "bigint")), F.col("_commit_timestamp")))  # fmt: skip
        return df.where(F.lit(False)) if empty else df

    # --- the light path (delta-rs, no JVM) ------------------------------------------------------
    def _light_table(self, table: TableHandle, version: int) -> Any:
        """delta-rs's table at ``version``, when delta-rs reads it exactly as Delta on Spark does."""
        dt = self.load(table, version=version)  # type: ignore[attr-defined]
        protocol = dt.protocol()
        unknown = sorted(set(protocol.reader_features or ()) - _LIGHT_READER_FEATURES)
        if unknown:
            raise NotExactError(f"version {version} uses Delta reader feature(s) {', '.join(unknown)}, which lakecat "
                                "reads through Spark")  # fmt: skip
        if protocol.min_reader_version > 1 and not protocol.reader_features:
            raise NotExactError(f"version {version} needs Delta reader version {protocol.min_reader_version} "
                                "(column mapping), which lakecat reads through Spark")  # fmt: skip
        if dt.metadata().configuration.get("delta.columnMapping.mode", "none") != "none":
            raise NotExactError("the table uses column mapping, which lakecat reads through Spark")
        return dt

    def scan_version_light(self, table: TableHandle, version: int) -> Any:
        dt = self._light_table(table, version)
        try:
            if "deletionVectors" in (dt.protocol().reader_features or ()):
                return _rows_without_deleted(dt)
            return dt.to_pyarrow_dataset()
        except Exception as e:  # noqa: BLE001 - whatever delta-rs refuses, Spark reads
            raise NotExactError(f"delta-rs does not read version {version}: {e}") from e

    def planned_files(self, table: TableHandle, version: int, where: str | None) -> tuple[int, int] | None:
        dt = self.load(table, version=version)  # type: ignore[attr-defined]
        actions = arrow(dt.get_add_actions(flatten=True))
        total = actions.num_rows
        if where is None or not str(where).strip():
            return total, total
        may_match = stats_filter(where)
        if may_match is None:
            return None
        names = actions.column_names
        columns = {n: actions.column(n).to_pylist() for n in names if n.startswith(("min.", "max.", "null_count.",
                                                                                    "partition."))}  # fmt: skip
        records = actions.column("num_records").to_pylist() if "num_records" in names else [None] * total
        keys = {n.split(".", 1)[1] for n in columns}
        scanned = 0
        for i in range(total):
            stats: dict[str, ColumnStats] = {}
            for k in keys:
                if f"partition.{k}" in columns:  # a partition value is its file's only value of the column
                    v = columns[f"partition.{k}"][i]
                    stats[k.lower()] = ColumnStats(v, v, records[i] if v is None else 0, records[i])
                else:
                    stats[k.lower()] = ColumnStats(columns.get(f"min.{k}", [None] * total)[i],
                                                   columns.get(f"max.{k}", [None] * total)[i],
                                                   columns.get(f"null_count.{k}", [None] * total)[i], records[i])  # fmt: skip
            scanned += may_match(stats)
        return scanned, total

    def changes_light(self, table: TableHandle, since: int, until: int, commits: dict[int, Commit]) -> Any:
        import pyarrow as pa

        dt = self._light_table(table, until)
        start = max(since + 1, 0)
        first = self._light_table(table, start) if start < until else dt
        for at in (first, dt):
            if at.metadata().configuration.get("delta.enableChangeDataFeed", "false").lower() != "true":
                raise NotExactError("the change data feed is not on for the whole range (Spark says where)")
        if start < until:
            for _, meta in commit_actions(table.location, log_entries(table.location, table.name), start, until,
                                          ("metaData",)):  # fmt: skip
                if str((meta.get("configuration") or {}).get("delta.enableChangeDataFeed", "false")).lower() != "true":
                    raise NotExactError("the change data feed was switched off within the range (Spark says where)")
        # Delta on Spark reads a range's changes in the table's current schema (a column added later: null before)
        current = self._light_table(table, self.current_version(table) or until)  # type: ignore[attr-defined]
        data = pa.schema(current.schema().to_arrow())
        schema = pa.schema([*data, pa.field("_change_type", pa.string()), pa.field("_commit_version", pa.int64())])
        if since >= until:
            return pa.RecordBatchReader.from_batches(schema, iter(()))
        try:
            reader = pa.RecordBatchReader.from_stream(dt.load_cdf(starting_version=start, ending_version=until))
        except Exception as e:  # noqa: BLE001 - whatever delta-rs refuses, Spark reads
            raise NotExactError(f"delta-rs does not read the change data feed of versions {start}..{until}: {e}") from e

        # delta-rs's own types (string_view, uint64 versions) become the table's through the reader's cast, in C++:
        # per-column casts in Python, and loading pyarrow.compute for them, would cost more than a small range's read
        have = {f.name: f for f in reader.schema}
        mid = pa.schema([have.get(f.name, f) for f in schema])

        def batches() -> Any:
            for b in reader:
                yield pa.RecordBatch.from_arrays(
                    [b.column(f.name) if f.name in have else pa.nulls(b.num_rows, f.type) for f in mid], schema=mid
                )

        return pa.RecordBatchReader.from_batches(mid, batches()).cast(schema)

    def streams_undone_by(self, table: TableHandle, target: int, current: int | None) -> list[str]:
        if current is None or current <= target:
            return []
        return log_transactions(table.location, log_entries(table.location, table.name), target + 1, current)

    def rollback(self, table: TableHandle, target: int, current: int | None) -> int | None:
        """delta-rs commits the RESTORE (no JVM) where it writes the table as Spark does (``check_light_write``: not
        with deletion vectors, clustering, column mapping...); Spark's ``RESTORE`` otherwise."""
        try:
            self.check_light_write(table, "restore")  # type: ignore[attr-defined]
        except NotExactError:
            pass
        else:
            self._light(table, "rollback", lambda: self.load(table).restore(int(target)))  # type: ignore[attr-defined]
            return self.current_version(table)
        spark = table.catalog.session()
        spark.sql(f"RESTORE TABLE {spark_path(table.location)} TO VERSION AS OF {int(target)}").collect()
        return self.current_version(table)
