"""Iceberg versions: snapshots as commits, the snapshot tree's lineage, reads at a snapshot, changelog, rollback."""

from __future__ import annotations

import gzip
import json
import uuid
from functools import reduce
from types import SimpleNamespace as View
from typing import TYPE_CHECKING, Any

from ...engine import is_connect, sql_string, to_int
from ...errors import NotExactError
from ...files import fs_for, norm_path
from ...identifiers import quote
from ...records import CDC_KEY_PROPERTY, spark_lookup
from ..base import Commit, VersionLog, unified_summary
from . import rest
from .markers import MARKER_QUERY, MERGE_KEY

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ..base import TableHandle

# Iceberg's snapshot operation -> lakecat's word for it (``lakecat.formats.base.OPERATIONS``).
_OPERATIONS = {"append": "append", "overwrite": "overwrite", "delete": "delete", "replace": "compact"}


def _merge_key(props: dict[str, str]) -> list[str]:
    return [c for c in str(props.get(MERGE_KEY, "")).split(",") if c]


def _operation(engine_op: str, props: dict[str, str], summary: dict[str, Any]) -> str:
    """What lakecat recorded it did (a merge is an overwrite to Iceberg), else what Iceberg's operation says."""
    if _merge_key(props):
        return "merge"
    if engine_op == "overwrite" and summary.get("rows_added", 0) < summary.get("rows_removed", 0):
        return "delete"  # net removal: a copy-on-write delete (rewritten files carry the surviving rows)
    return _OPERATIONS.get(engine_op, "other")


def _ancestors(meta: Any, start: int | None) -> list[int]:
    by_id = {s.snapshot_id: s for s in meta.snapshots}
    out: list[int] = []
    while start is not None and start in by_id:
        out.append(start)
        start = by_id[start].parent_snapshot_id
    return out


def _commits(meta: Any) -> list[Commit]:
    current = meta.current_snapshot_id
    ancestors = set(_ancestors(meta, current)) if current is not None else set()
    out = []
    sequence: dict[int, int] = {}
    for s in meta.snapshots:
        props = dict(s.summary.additional_properties) if s.summary else {}
        engine_op = s.summary.operation.value if s.summary else "unknown"
        summary = unified_summary(props)
        op = _operation(engine_op, props, summary)
        summary = {"engine_operation": engine_op, **summary}
        if _merge_key(props):
            summary["merge_key"] = _merge_key(props)
        if "engine-name" in props:
            summary["engine"] = f"{props['engine-name']} {props.get('engine-version', '')}".strip()
        summary["parent_version"] = s.parent_snapshot_id
        summary["current_lineage"] = s.snapshot_id in ancestors
        out.append(Commit(s.snapshot_id, s.timestamp_ms, op, summary, s.parent_snapshot_id))
        sequence[s.snapshot_id] = s.sequence_number or 0
    out.sort(key=lambda c: (c.timestamp_ms, sequence[c.version]))
    return out


class IcebergVersionLog(VersionLog):
    """One read of the table's metadata serves the whole operation."""

    _meta: Any = None

    def metadata(self) -> Any:
        if self._meta is None:
            self._meta = self.fmt.snapshot_metadata(self.table)  # type: ignore[attr-defined]
        return self._meta

    def commits(self) -> list[Commit]:
        if self._commits is None:
            self._commits = _commits(self.metadata())
        return self._commits

    def current_version(self) -> int | None:
        return self.metadata().current_snapshot_id  # type: ignore[no-any-return]

    def pointer_moves(self) -> list[Commit]:
        """Rollbacks: the snapshot log shows an existing snapshot made current again later on."""
        meta = self.metadata()
        by_id = {s.snapshot_id: s for s in meta.snapshots}
        ancestors = set(_ancestors(meta, meta.current_snapshot_id))
        out = []
        for e in meta.snapshot_log:
            snap = by_id.get(e.snapshot_id)
            if snap is not None and e.timestamp_ms != snap.timestamp_ms:
                summary = {"engine_operation": "set_current_snapshot", "restored_version": e.snapshot_id,
                           "current_lineage": e.snapshot_id in ancestors}  # fmt: skip
                out.append(Commit(e.snapshot_id, e.timestamp_ms, "restore", summary, None))
        return out

    def timeline(self) -> list[tuple[int, int]]:
        meta = self.metadata()
        log = [(e.timestamp_ms, e.snapshot_id) for e in meta.snapshot_log]
        if not log and meta.current_snapshot_id is not None:  # a writer that keeps no snapshot log
            by_id = {s.snapshot_id: s for s in meta.snapshots}
            log = sorted((by_id[v].timestamp_ms, v) for v in _ancestors(meta, meta.current_snapshot_id))
        return sorted(log)

    def lineage(self, until: int) -> list[int]:
        return _ancestors(self.metadata(), until)


def snapshot_view(doc: dict[str, Any]) -> Any:
    """The snapshot half of a parsed metadata file, shaped as pyiceberg's ``TableMetadata`` shows it (``snapshots``,
    ``current_snapshot_id``, ``snapshot_log``): what the version log, the lineage and rollback read."""

    def summary(d: dict[str, Any] | None) -> Any:
        if not d:
            return None
        props = {str(k): str(v) for k, v in d.items() if k != "operation"}
        return View(operation=View(value=str(d.get("operation", "unknown"))), additional_properties=props)

    def opt_int(v: Any) -> int | None:
        return None if v is None else int(v)

    snapshots = [View(snapshot_id=int(x["snapshot-id"]), parent_snapshot_id=opt_int(x.get("parent-snapshot-id")),
                      timestamp_ms=int(x["timestamp-ms"]), sequence_number=opt_int(x.get("sequence-number")),
                      summary=summary(x.get("summary"))) for x in doc.get("snapshots") or []]  # fmt: skip
    current = opt_int(doc.get("current-snapshot-id"))
    log = [
        View(snapshot_id=int(e["snapshot-id"]), timestamp_ms=int(e["timestamp-ms"]))
        for e in doc.get("snapshot-log") or []
    ]
    refs = {str(name): View(snapshot_id=int(r["snapshot-id"]), snapshot_ref_type=str(r.get("type", "branch")),
                            max_ref_age_ms=opt_int(r.get("max-ref-age-ms"))) for name, r in (doc.get("refs") or {}).items()}  # fmt: skip
    return View(snapshots=snapshots, current_snapshot_id=None if current is None or current < 0 else current, snapshot_log=log,
                refs=refs)  # fmt: skip


def _metadata_json(location: str) -> dict[str, Any]:
    """An Iceberg table metadata file, parsed (gzip-compressed ones too: ``*.gz.metadata.json``)."""

    if "://" not in location or location.startswith("file:"):  # a local file: no pyarrow import
        with open(norm_path(location) if location.startswith("file:") else location, "rb") as fh:
            data = fh.read()
    else:
        filesystem, path = fs_for(location)
        with filesystem.open_input_stream(path) as fh:
            data = fh.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)  # type: ignore[no-any-return]


class IcebergVersions:
    """The versions half of the Iceberg adapter (mixed into ``IcebergFormat``)."""

    def versions(self, table: TableHandle) -> IcebergVersionLog:
        return IcebergVersionLog(self, table)  # type: ignore[arg-type]

    def commits(self, table: TableHandle) -> list[Commit]:
        return _commits(self.snapshot_metadata(table))

    def metadata_file_doc(self, table: TableHandle) -> dict[str, Any] | None:
        """The table's current metadata file, parsed, where lakecat's catalog names it (no pyiceberg import); None for a
        table of an external catalog (REST) or a file that is missing or unreadable (``load()`` then says so)."""
        if rest.is_external(table.catalog.config):
            return None
        entry = table.refresh()
        try:
            return _metadata_json(entry.metadata_location) if entry.metadata_location else None
        except (OSError, ValueError):
            return None

    def snapshot_metadata(self, table: TableHandle) -> Any:
        """The table's snapshots, current snapshot, snapshot log and refs: from the metadata file alone where lakecat's
        catalog names it (no pyiceberg import, the larger part of a short command such as ``rollback``); pyiceberg's otherwise."""
        doc = self.metadata_file_doc(table)
        if doc is not None:
            return snapshot_view(doc)
        return self.load(table).metadata  # type: ignore[attr-defined]

    def current_version(self, table: TableHandle) -> int | None:
        """The current snapshot id (from the metadata file alone where lakecat's catalog names it)."""
        return self.snapshot_metadata(table).current_snapshot_id  # type: ignore[no-any-return]

    def merge_key_conf(self, keys: list[str]) -> dict[str, str]:
        return {f"spark.sql.iceberg.snapshot-property.{MERGE_KEY}": ",".join(keys)}

    def read_version(self, table: TableHandle, version: int) -> DataFrame:
        spark = self.refreshed_session(table)  # type: ignore[attr-defined]
        return spark.sql(f"SELECT * FROM {table.spark_name} VERSION AS OF {int(version)}")  # type: ignore[no-any-return]

    def read_changes(self, table: TableHandle, since: int, until: int, commits: dict[int, Commit]) -> DataFrame:
        from pyspark.sql import functions as F

        spark = self.refreshed_session(table)  # type: ignore[attr-defined]
        meta = self.load(table).metadata  # type: ignore[attr-defined]
        if since != until and _has_delete_files(meta, since, commits):
            return _pair_updates(self._diff_changes(table, commits), commits)
        schema = meta.schema()
        identifier_columns = [schema.find_column_name(i) for i in sorted(schema.identifier_field_ids)]
        if (
            not identifier_columns
        ):  # a CDC key recorded by `ingest --cdc` (nullable columns cannot be identifier fields)
            key = [c.strip() for c in str(meta.properties.get(CDC_KEY_PROPERTY, "")).split(",") if c.strip()]
            identifier_columns = [c for c in key if c in {f.name for f in schema.fields}]
        empty = since == until
        options = (
            [("end-snapshot-id", until)]
            if empty or since < 0
            else [("start-snapshot-id", since), ("end-snapshot-id", until)]
        )
        view = f"lakecat_changes_{uuid.uuid4().hex}"
        args = [
            f"table => {sql_string(table.entry.ident.quoted)}",
            "options => map(" + ", ".join(f"{sql_string(k)}, {sql_string(str(int(v)))}" for k, v in options) + ")",
            f"changelog_view => {sql_string(view)}",
        ]
        if identifier_columns:
            args.append("identifier_columns => array(" + ", ".join(sql_string(c) for c in identifier_columns) + ")")
            args.append("compute_updates => true")
        spark.sql(f"CALL {quote(table.catalog.name)}.system.create_changelog_view({', '.join(args)})").collect()
        df = spark.table(view)
        if not is_connect(spark):
            # in process the frame holds the analyzed plan; a Spark Connect frame names the view until it runs,
            # so there the view lives as long as the client's session
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
            F.timestamp_millis(spark_lookup(stamps, F.col("_commit_snapshot_id"), "bigint")).alias("_commit_timestamp"),
        )
        return df.where(F.lit(False)) if empty else _pair_updates(df, commits)

    def _diff_changes(self, table: TableHandle, commits: dict[int, Commit]) -> DataFrame:
        """Changes as the difference of each commit and its parent: slower, but it sees merge-on-read deletes."""
        from pyspark.sql import functions as F

        parts = []
        for c in commits.values():
            after = self.read_version(table, c.version)
            before = self.read_version(table, c.parent) if c.parent is not None else after.limit(0)
            for kind, df in (("delete", before.exceptAll(after)), ("insert", after.exceptAll(before))):
                parts.append(df.select(
                    "*", F.lit(kind).alias("_change_type"), F.lit(c.version).cast("bigint").alias("_commit_version"),
                    F.timestamp_millis(F.lit(c.timestamp_ms)).alias("_commit_timestamp"),
                ))  # fmt: skip
        return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)

    # --- the light path (pyiceberg, no JVM) ----------------------------------------------------
    def scan_version_light(self, table: TableHandle, version: int) -> Any:
        tbl = self.load(table)  # type: ignore[attr-defined]
        snap = tbl.metadata.snapshot_by_id(int(version))
        if snap is None:
            raise NotExactError(f"snapshot {version} is not in the metadata")
        if _equality_deletes(snap):  # pyiceberg applies position deletes and deletion vectors, not equality deletes
            raise NotExactError(f"snapshot {version} has equality deletes, which lakecat reads through Spark")
        scan = tbl.scan(snapshot_id=int(version))
        return _stream(tbl, scan.projection(), scan.plan_files())

    def scan_empty_light(self, table: TableHandle) -> Any:
        tbl = self.load(table)  # type: ignore[attr-defined]
        return _stream(tbl, tbl.schema(), [])

    def planned_files(self, table: TableHandle, version: int, where: str | None) -> tuple[int, int] | None:
        # Iceberg's own planning (partition values, then the manifests' column bounds), as Spark's scan plans it
        tbl = self.load(table)  # type: ignore[attr-defined]
        snap = tbl.metadata.snapshot_by_id(int(version))
        if snap is None:
            return None
        total = _summary_int(snap, "total-data-files") or len(tbl.scan(snapshot_id=int(version)).plan_files())
        if where is None or not str(where).strip():
            return total, total
        try:
            planned = tbl.scan(snapshot_id=int(version), row_filter=str(where), case_sensitive=False).plan_files()
        except Exception:  # noqa: BLE001 - a predicate pyiceberg does not read: no count
            return None
        return len(planned), total

    def changes_light(self, table: TableHandle, since: int, until: int, commits: dict[int, Commit]) -> Any:
        """Append-only ranges: the rows of the data files each snapshot added (what Spark's changelog reads too)."""
        from pyiceberg.manifest import ManifestEntryStatus
        from pyiceberg.table import FileScanTask

        tbl = self.load(table)  # type: ignore[attr-defined]
        meta = tbl.metadata
        extra = [("_change_type", "insert"), ("_commit_version", None)]
        if since == until:
            return _stream(tbl, meta.schema(), [], extra)
        if _has_delete_files(meta, since, commits):
            raise NotExactError("the range has merge-on-read delete files, which lakecat reads through Spark")
        parts: list[tuple[int, Any]] = []
        for version in commits:  # oldest first
            snap = meta.snapshot_by_id(version)
            op = snap.summary.operation.value if snap is not None and snap.summary else "unknown"
            if op == "replace":  # compaction: no change (Spark's changelog skips it too)
                continue
            if op != "append":
                raise NotExactError(f"snapshot {version} is an {op}; only append-only ranges are read without Spark")
            for manifest in snap.manifests(tbl.io):  # type: ignore[union-attr]
                if manifest.added_snapshot_id != version:
                    continue
                for entry in manifest.fetch_manifest_entry(tbl.io, discard_deleted=True):
                    if entry.status == ManifestEntryStatus.ADDED and entry.snapshot_id == version:
                        parts.append((version, FileScanTask(entry.data_file)))
        return _stream(tbl, meta.schema(), parts, extra)

    def streams_undone_by(self, table: TableHandle, target: int, current: int | None) -> list[str]:
        meta = self.snapshot_metadata(table)
        kept = set(_ancestors(meta, target))
        by_id = {s.snapshot_id: s for s in meta.snapshots}
        apps = {by_id[sid].summary.additional_properties.get(MARKER_QUERY) for sid in _ancestors(meta, current)
                if sid not in kept and by_id[sid].summary is not None}  # fmt: skip
        return sorted(a for a in apps if a)

    def rollback(self, table: TableHandle, target: int, current: int | None) -> int | None:
        """pyiceberg moves the main branch (no JVM), as Iceberg's procedures do; a format version 3 table, which
        pyiceberg does not write, through the procedure."""
        meta = self.snapshot_metadata(table)
        ancestors = _ancestors(meta, current) if current is not None else []
        procedure = "rollback_to_snapshot" if target in ancestors else "set_current_snapshot"
        if not self.writes_through_spark(table):  # type: ignore[attr-defined]

            def move(tbl: Any) -> None:  # pyiceberg's ManageSnapshots names its two moves as the procedures do
                getattr(tbl.manage_snapshots(), procedure)(int(target)).commit()

            self._commit(table, "rollback", move)  # type: ignore[attr-defined]
            return self.current_version(table)
        spark = self.refreshed_session(table)  # type: ignore[attr-defined]
        spark.sql(
            f"CALL {quote(table.catalog.name)}.system.{procedure}("
            f"table => {sql_string(table.entry.ident.quoted)}, snapshot_id => {int(target)})"
        ).collect()
        return self.current_version(table)


def _pair_updates(df: DataFrame, commits: dict[int, Commit]) -> DataFrame:
    """In a merge lakecat committed, a delete and an insert of the same key are one row's update: its pre- and
    post-image, as Delta's change data feed shows the same upsert. Each merge pairs by its own key (from its snapshot);
    a key with more than one delete or insert in the snapshot stays as it is."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_key: dict[tuple[str, ...], list[int]] = {}
    for c in commits.values():
        key = tuple(c.summary.get("merge_key") or ())
        if key and set(key) <= set(df.columns):
            by_key.setdefault(key, []).append(c.version)
    for key, versions in by_key.items():
        kind = F.col("_change_type")
        same = Window.partitionBy(F.col("_commit_version"), *[F.col(quote(k)) for k in key])
        paired = (F.col("_commit_version").isin(versions) & (F.count(F.when(kind == "delete", 1)).over(same) == 1)
                  & (F.count(F.when(kind == "insert", 1)).over(same) == 1))  # fmt: skip
        df = df.withColumn("_change_type", F.when(paired & (kind == "delete"), F.lit("update_preimage"))
                           .when(paired & (kind == "insert"), F.lit("update_postimage")).otherwise(kind))  # fmt: skip
    return df


def _has_delete_files(meta: Any, since: int, commits: dict[int, Commit]) -> bool:
    """Merge-on-read deletes in the range: Iceberg's changelog scan cannot read delete files (yet)."""
    by_id = {s.snapshot_id: s for s in meta.snapshots}
    for version in [since, *commits]:
        snap = by_id.get(version)
        props = snap.summary.additional_properties if snap is not None and snap.summary else {}
        if to_int(props.get("total-delete-files")) or to_int(props.get("added-delete-files")):
            return True
    return False


def _summary_int(snap: Any, key: str) -> int:
    props = snap.summary.additional_properties if snap.summary else {}
    return to_int(props.get(key)) or 0


def _equality_deletes(snap: Any) -> bool:
    return _summary_int(snap, "total-equality-deletes") > 0


def _stream(tbl: Any, schema: Any, tasks: Any, extra: list[tuple[str, Any]] | None = None) -> Any:
    """A RecordBatchReader over the scan tasks, one file at a time (pyiceberg's own reader reads every file at once).

    ``tasks`` are FileScanTasks, or with ``extra`` (change columns) (version, task) pairs: each row then carries
    ``_change_type`` and ``_commit_version``.
    """
    import pyarrow as pa
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow

    data = schema_to_pyarrow(schema, include_field_ids=False)
    target = (
        pa.schema([*data, pa.field("_change_type", pa.string()), pa.field("_commit_version", pa.int64())])
        if extra
        else data
    )
    scan = ArrowScan(tbl.metadata, tbl.io, schema, AlwaysTrue())

    def batches() -> Any:
        for item in tasks:
            version, task = item if extra else (None, item)
            for b in scan.to_record_batches([task]):
                b = b.cast(data)
                if extra:
                    n = b.num_rows
                    b = pa.RecordBatch.from_arrays(
                        [*b.columns, pa.array([extra[0][1]] * n, pa.string()), pa.array([version] * n, pa.int64())],
                        schema=target,
                    )
                yield b

    return pa.RecordBatchReader.from_batches(target, batches())
