"""Iceberg maintenance: Iceberg's own Spark procedures, planned from pyiceberg metadata (no JVM for dry runs)."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ...engine import (
    command_row,
    first_line,
    is_connect,
    now,
    spark_errors,
    sql_string,
    sql_timestamp,
    with_retries,
)
from ...errors import LakecatError, UnsupportedOperationError
from ...files import DataFile, no_cyclic_gc, norm_path
from ...identifiers import quote
from ...results import ExpireResult, MetadataResult
from ...units import format_duration, iso
from .health import partition_paths
from .markers import MARKER_PROPERTY_PREFIX, all_stream_markers, unpublished

if TYPE_CHECKING:
    from ..base import TableHandle


#: Above this many bytes of data a compaction commits file group by file group (Iceberg's partial progress).
PARTIAL_PROGRESS_BYTES = 1024**3


def _ident_arg(table: TableHandle) -> str:
    return sql_string(f"{table.entry.ident.namespace}.{table.entry.ident.name}")


def _procedure(table: TableHandle, name: str) -> str:
    return f"{quote(table.catalog.name)}.system.{name}"


def _reachable(tbl: Any, snapshots: list[Any], name: str) -> tuple[dict[str, int], dict[str, int]]:
    """Live content files and manifests (path -> size) referenced by ``snapshots``. A manifest list or manifest
    that cannot be read stops the caller in one line (it decides what to delete: not knowing, it deletes nothing)."""
    files: dict[str, int] = {}
    manifests: dict[str, int] = {}
    for snap in snapshots:
        try:
            for m in snap.manifests(tbl.io):
                if m.manifest_path in manifests:
                    continue
                for entry in m.fetch_manifest_entry(tbl.io, discard_deleted=True):
                    files[entry.data_file.file_path] = int(entry.data_file.file_size_in_bytes)
                manifests[m.manifest_path] = int(m.manifest_length)
        except Exception as e:  # noqa: BLE001 - a damaged or unreachable manifest: delete nothing
            raise LakecatError(f"table {name}: the manifests of snapshot {snap.snapshot_id} could not be read, so "
                               f"nothing is deleted: {first_line(str(e)) or type(e).__name__}") from e  # fmt: skip
    return files, manifests


def partition_predicate(spec: Any, schema: Any, partition: Any) -> str | None:
    """A Spark SQL predicate on the source columns that holds for every row of one partition (an identity value,
    a day's or an hour's range, ...); None when no field can be said so (a bucket): the rewrite is then not narrowed.
    A field that cannot be said only widens the predicate, never narrows it."""
    from pyiceberg import transforms as tr
    from pyiceberg import types as ty

    units: dict[type, str] = {tr.YearTransform: "year", tr.MonthTransform: "month", tr.DayTransform: "day",
                              tr.HourTransform: "hour"}  # fmt: skip
    terms = []
    for i, field in enumerate(spec.fields):
        name = schema.find_column_name(field.source_id)
        if name is None:
            continue
        column = ".".join(quote(p) for p in name.split("."))
        value, kind, transform = partition[i], schema.find_type(field.source_id), field.transform
        unit = units.get(type(transform))
        if value is None:
            terms.append(f"{column} IS NULL")  # every transform keeps a null a null
        elif isinstance(transform, tr.IdentityTransform):
            if (literal := _literal(kind, value)) is not None:
                terms.append(f"{column} = {literal}")
        elif unit is not None and isinstance(kind, (ty.DateType, ty.TimestampType, ty.TimestamptzType)):
            start, end = _time_range(unit, value)
            terms.append(f"{column} >= {_literal(kind, start)} AND {column} < {_literal(kind, end)}")
        elif isinstance(transform, tr.TruncateTransform) and isinstance(value, int):
            terms.append(f"{column} >= {int(value)} AND {column} < {int(value) + int(transform.width)}")
    return " AND ".join(terms) or None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _time_range(unit: str, value: Any) -> tuple[datetime, datetime]:
    """[start, end) of a year / month / day / hour partition value (counted from 1970)."""
    if isinstance(value, date):  # some readers hand a day's value over as a date
        value = ((value.date() if isinstance(value, datetime) else value) - _EPOCH.date()).days
    n = int(value)
    if unit == "hour":
        start = _EPOCH + timedelta(hours=n)
        return start, start + timedelta(hours=1)
    if unit == "day":
        start = _EPOCH + timedelta(days=n)
        return start, start + timedelta(days=1)
    months = n * 12 if unit == "year" else n
    step = 12 if unit == "year" else 1
    start = _EPOCH.replace(year=1970 + months // 12, month=months % 12 + 1)
    after = months + step
    return start, _EPOCH.replace(year=1970 + after // 12, month=after % 12 + 1)


def _literal(kind: Any, value: Any) -> str | None:
    """A Spark SQL literal of an Iceberg-typed value (a partition value or a range bound); None for the types a
    partition predicate leaves out."""
    from pyiceberg import types as ty

    if isinstance(kind, ty.StringType):
        return sql_string(str(value))
    if isinstance(kind, (ty.IntegerType, ty.LongType)):
        return str(int(value))
    if isinstance(kind, ty.BooleanType):
        return "true" if value else "false"
    if isinstance(kind, ty.DecimalType):
        return f"{Decimal(value)}BD"
    if isinstance(kind, ty.DateType):
        day = value.date() if isinstance(value, datetime) else value
        day = _EPOCH.date() + timedelta(days=int(day)) if isinstance(day, int) else day
        return "DATE " + sql_string(day.isoformat())
    if isinstance(kind, (ty.TimestampType, ty.TimestamptzType)):
        moment = _EPOCH + timedelta(microseconds=int(value)) if isinstance(value, int) else value
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC).replace(tzinfo=None)
        text = sql_string(moment.isoformat(sep=" "))
        return ("TIMESTAMP_NTZ " if isinstance(kind, ty.TimestampType) else "TIMESTAMP ") + text  # the session is UTC
    return None


class _KeepFile:
    """A java.util.function.Consumer that deletes nothing: Iceberg's action runs as a dry run."""

    def accept(self, path: str) -> None:  # noqa: ARG002 - called from the JVM
        return None

    class Java:
        implements = ["java.util.function.Consumer"]


class IcebergMaintenance:
    """The maintenance half of the Iceberg adapter (mixed into ``IcebergFormat``)."""

    def data_files(self, table: TableHandle) -> list[DataFile]:
        # the data manifests' live entries, read directly: the same files as a scan's plan_files(), without its
        # per-file evaluators and delete-file index, which cost more than the read itself on a table of many files
        from pyiceberg.manifest import ManifestContent

        tbl = self.load(table)  # type: ignore[attr-defined]
        snap = tbl.current_snapshot()
        if snap is None:
            return []
        partition_path = partition_paths(tbl.specs(), tbl.schema())
        out = []
        for m in snap.manifests(tbl.io):
            if m.content != ManifestContent.DATA:
                continue
            for entry in m.fetch_manifest_entry(tbl.io, discard_deleted=True):
                f = entry.data_file
                out.append(DataFile(f.file_path, int(f.file_size_in_bytes), partition_path(f.spec_id, f.partition)))
        return out

    def _totals(self, table: TableHandle) -> dict[str, str] | None:
        """The current snapshot summary's running totals (``total-data-files``, ...): one metadata file, no manifests;
        None without a snapshot."""
        snap = self.load(table).current_snapshot()  # type: ignore[attr-defined]
        if snap is None:
            return None
        return dict(snap.summary.additional_properties) if snap.summary is not None else {}

    def file_totals(self, table: TableHandle) -> tuple[int, int] | None:
        summary = self._totals(table)
        if summary is None:
            return 0, 0
        try:
            if int(summary["total-delete-files"]) != 0:
                return None  # total-files-size counts delete files too
            return int(summary["total-data-files"]), int(summary["total-files-size"])
        except (KeyError, ValueError):
            return None

    def files_matching(self, table: TableHandle, predicate: str) -> set[str]:
        # Iceberg's own planning (partition and column-stats pruning), the same rewrite_data_files uses;
        # Spark's inputFiles() knows nothing of DataSource V2 scans.
        tbl = self.load(table)  # type: ignore[attr-defined]
        try:
            return {norm_path(task.file.file_path) for task in tbl.scan(row_filter=predicate).plan_files()}
        except Exception:  # noqa: BLE001 - pyiceberg cannot parse every Spark predicate: ask Spark
            from pyspark.sql import functions as F

            with spark_errors("compact --where", table.entry.ident):
                rows = (self.read_current(table).where(predicate)  # type: ignore[attr-defined]
                        .select(F.input_file_name().alias("f")).distinct().collect())  # fmt: skip
            return {norm_path(r["f"]) for r in rows}

    def partitions_written_since(self, table: TableHandle, since: datetime) -> dict[str, str | None]:
        # the live files (data and deletes) the current lineage's snapshots after ``since`` added, compactions' own
        # snapshots aside; a file added by such a snapshot sits in a manifest written by it or by a later one
        from pyiceberg.table.snapshots import Operation

        tbl = self.load(table)  # type: ignore[attr-defined]
        snap = tbl.current_snapshot()
        by_id = {s.snapshot_id: s for s in tbl.metadata.snapshots}
        since_ms = int(since.timestamp() * 1000)
        recent: set[int] = set()
        written: set[int] = set()
        sid = snap.snapshot_id if snap is not None else None
        while sid is not None and sid in by_id and by_id[sid].timestamp_ms > since_ms:
            recent.add(sid)
            summary = by_id[sid].summary
            if summary is None or summary.operation != Operation.REPLACE:
                written.add(sid)
            sid = by_id[sid].parent_snapshot_id
        if not written:
            return {}
        schema, specs = tbl.schema(), tbl.specs()
        partition_path = partition_paths(specs, schema)
        out: dict[str, str | None] = {}
        with no_cyclic_gc():
            for m in snap.manifests(tbl.io):
                if m.added_snapshot_id not in recent:
                    continue
                for entry in m.fetch_manifest_entry(tbl.io, discard_deleted=True):
                    f = entry.data_file
                    if entry.snapshot_id in written and (key := partition_path(f.spec_id, f.partition)) not in out:
                        out[key] = partition_predicate(specs[f.spec_id], schema, f.partition)
        return out

    def compact(self, table: TableHandle, strategy: str, by: list[str], target: int, where: str | None,
                apply_deletes: bool = False, *, full: bool = False) -> tuple[int, int]:  # fmt: skip
        spark = table.catalog.session()
        totals = self._totals(table) or {}
        options = {
            "target-file-size-bytes": str(target),
            "min-input-files": "2",
            "use-starting-sequence-number": "true",  # concurrent appends and deletes stay valid
            "partial-progress.enabled": "false",  # one commit: readers and writers see the table before or after
        }
        if int(totals.get("total-files-size", PARTIAL_PROGRESS_BYTES)) >= PARTIAL_PROGRESS_BYTES:
            # a big table commits group by group: less to redo after a conflict (a commit per group costs time: not
            # for a small table)
            options.update({"partial-progress.enabled": "true", "partial-progress.max-commits": "10"})
        if apply_deletes or int(totals.get("total-delete-files", 1)) > 0:
            # delete files whose rows were rewritten away stop hiding nothing (a Spark job over the table's entries:
            # only when the table has delete files at all)
            options["remove-dangling-deletes"] = "true"
        if apply_deletes:  # any data file with a delete file is rewritten, deletes applied
            options["delete-file-threshold"] = "1"
        args = [f"table => {_ident_arg(table)}"]
        if strategy == "binpack":
            args.append("strategy => 'binpack'")
        elif strategy == "cluster":  # the table's keys: only files outside the size range unless full
            args.append("strategy => 'sort'")
            if self.load(table).sort_order().is_unsorted:  # type: ignore[attr-defined]  # z-order keys: no sort order
                args.append(f"sort_order => {sql_string('zorder(' + ', '.join(by) + ')')}")
            if full:
                options["rewrite-all"] = "true"
        else:
            order = f"zorder({', '.join(by)})" if strategy == "zorder" else ", ".join(f"{c} ASC NULLS LAST" for c in by)
            args += ["strategy => 'sort'", f"sort_order => {sql_string(order)}"]
            options["rewrite-all"] = "true"
        args.append(
            "options => map(" + ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in options.items()) + ")"
        )
        if where is not None:
            args.append(f"where => {sql_string(where)}")
        with spark_errors("compact", table.entry.ident):
            row = command_row(spark, f"CALL {_procedure(table, 'rewrite_data_files')}({', '.join(args)})")
        return (int(row["rewritten_data_files_count"]), int(row["added_data_files_count"])) if row else (0, 0)

    def expire(self, table: TableHandle, window: timedelta, keep: int, dry_run: bool, force: bool) -> ExpireResult:
        tbl = self.load(table)  # type: ignore[attr-defined]
        meta = tbl.metadata
        cutoff = now() - window
        cutoff_ms = int(cutoff.timestamp() * 1000)
        current = tbl.current_snapshot()
        by_id = {s.snapshot_id: s for s in meta.snapshots}
        ancestors: list[int] = []
        sid = current.snapshot_id if current else None
        while sid is not None and sid in by_id and len(ancestors) < keep:
            ancestors.append(sid)
            sid = by_id[sid].parent_snapshot_id
        refs = {ref.snapshot_id for ref in (meta.refs or {}).values()}
        pending = unpublished(meta)  # a branch's history not yet on main: publish (fast-forward) needs all of it
        kept_ids = set(ancestors) | refs | {s.snapshot_id for s in meta.snapshots if s.timestamp_ms >= cutoff_ms}
        kept_ids |= {sid for lineage in pending.values() for sid in lineage}
        expired = [s for s in sorted(meta.snapshots, key=lambda s: s.timestamp_ms) if s.snapshot_id not in kept_ids]
        retained = [s for s in sorted(meta.snapshots, key=lambda s: s.timestamp_ms) if s.snapshot_id in kept_ids]
        gone_files: dict[str, int] = {}
        if expired:
            with no_cyclic_gc():
                old_files, old_manifests = _reachable(tbl, expired, table.name)
                live_files, live_manifests = _reachable(tbl, retained, table.name)
            gone_files = {p: s for p, s in old_files.items() if p not in live_files}
            gone_files.update({p: s for p, s in old_manifests.items() if p not in live_manifests})
            for s in expired:
                if s.manifest_list:
                    gone_files.setdefault(s.manifest_list, 0)
        result = ExpireResult(
            table=table.name, format=self.name, expired_versions=[s.snapshot_id for s in expired],  # type: ignore[attr-defined]
            retained_versions=[s.snapshot_id for s in retained], deleted_files=len(gone_files),
            deleted_bytes=sum(gone_files.values()), older_than=format_duration(window), retain_last=keep,
            cutoff=iso(cutoff), forced=force, dry_run=dry_run, files=sorted(gone_files),
        )  # fmt: skip
        if dry_run or not expired:
            return result
        self._save_stream_markers(table, meta, {s.snapshot_id for s in expired})
        # Iceberg's expiry keeps a branch's ``min-snapshots-to-keep`` (else ``retain_last``): for the run, raise it
        # to the branch's unpublished history and the snapshot it forked from, so an expiry never cuts a branch off
        # from the main line it waits to be published to (fast-forward); restored afterwards.
        raised = {name: len(lineage) + 1 for name, lineage in pending.items()
                  if (meta.refs[name].min_snapshots_to_keep or 0) < len(lineage) + 1}  # fmt: skip
        if raised:
            self._branch_retention(table, dict(raised))
        spark = table.catalog.session()
        args = [
            f"table => {_ident_arg(table)}",
            f"older_than => {sql_timestamp(cutoff)}",
            f"retain_last => {int(keep)}",
        ]
        try:
            with spark_errors("expire", table.entry.ident):
                row = command_row(spark, f"CALL {_procedure(table, 'expire_snapshots')}({', '.join(args)})")
        finally:
            if raised:
                self._branch_retention(table, {name: meta.refs[name].min_snapshots_to_keep for name in raised})
        if row is not None:
            result.deleted_files = sum(int(v or 0) for v in row.asDict().values())
        after = self.load(table).metadata  # type: ignore[attr-defined]
        remaining = {s.snapshot_id for s in after.snapshots}
        result.expired_versions = [s.snapshot_id for s in expired if s.snapshot_id not in remaining]
        result.retained_versions = [s.snapshot_id for s in sorted(after.snapshots, key=lambda s: s.timestamp_ms)]
        return result

    def _save_stream_markers(self, table: TableHandle, meta: Any, expiring: set[int]) -> None:
        """Exactly once across expiry: a stream finds the batch it committed last by walking the current lineage
        to its newest snapshot; expiry may cut that walk short (a crashed stream's last batch, then a compaction,
        then ``--retain-last 1``) and a restart would append the batch again. So before expiring, every stream
        marker on the lineage is saved in the table's properties, where ``committed_batch`` finds it."""
        markers = all_stream_markers(meta)
        if not markers or not expiring:
            return
        props = {f"{MARKER_PROPERTY_PREFIX}{app}": str(batch) for app, batch in markers.items()
                 if meta.properties.get(f"{MARKER_PROPERTY_PREFIX}{app}") != str(batch)}  # fmt: skip
        if props:
            self.set_properties(table, props, [])  # type: ignore[attr-defined]

    def _branch_retention(self, table: TableHandle, keep: dict[str, int | None]) -> None:
        """Set ``min-snapshots-to-keep`` of branches (None: the table's default), leaving the rest of each ref."""

        def fn(tbl: Any) -> None:
            manage = tbl.manage_snapshots()
            for name, n in keep.items():
                ref = tbl.metadata.refs[name]
                manage = manage.create_branch(ref.snapshot_id, name, max_ref_age_ms=ref.max_ref_age_ms,
                                              max_snapshot_age_ms=ref.max_snapshot_age_ms, min_snapshots_to_keep=n)  # fmt: skip
            manage.commit()

        self._commit(table, "expire (branch retention)", fn)  # type: ignore[attr-defined]

    def find_orphans(self, table: TableHandle, cutoff: datetime, window: timedelta) -> list[str]:
        return self._orphans(table, cutoff, dry_run=True)

    def delete_orphans(self, table: TableHandle, cutoff: datetime, window: timedelta) -> None:
        self._orphans(table, cutoff, dry_run=False)

    def _orphans(self, table: TableHandle, cutoff: datetime, *, dry_run: bool) -> list[str]:
        # every snapshot's manifests are read here first: a file only an unreadable snapshot names would look like an
        # orphan, so not being able to read one stops the cleanup in one line rather than trusting the engine's job
        tbl = self.load(table)  # type: ignore[attr-defined]
        with no_cyclic_gc():
            _reachable(tbl, list(tbl.metadata.snapshots), table.name)
        spark = table.catalog.session()
        if now() - cutoff >= timedelta(hours=24):
            args = [f"table => {_ident_arg(table)}", f"older_than => {sql_timestamp(cutoff)}",
                    f"dry_run => {'true' if dry_run else 'false'}"]  # fmt: skip
            with spark_errors("clean-orphans", table.entry.ident):
                rows = spark.sql(f"CALL {_procedure(table, 'remove_orphan_files')}({', '.join(args)})").collect()
            return [r["orphan_file_location"] for r in rows]
        # The procedure refuses windows under 24 h outright; the caller passed force, so use the action API.
        if is_connect(spark):
            raise UnsupportedOperationError(
                "clean-orphans with a window under 24 h: Iceberg's procedure refuses it and its action API is not "
                "reachable through Spark Connect; run it in process (LAKECAT_ENGINE=in-process) or use --older-than 24h"
            )
        jvm: Any = spark._jvm
        jspark = spark._jsparkSession
        with spark_errors("clean-orphans", table.entry.ident):
            jtable = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
                jspark, f"{quote(table.catalog.name)}.{table.entry.ident.quoted}"
            )
            action = jvm.org.apache.iceberg.spark.actions.SparkActions.get(jspark).deleteOrphanFiles(jtable)
            action = action.olderThan(int(cutoff.timestamp() * 1000))
            if dry_run:
                from pyspark.java_gateway import ensure_callback_server_started

                ensure_callback_server_started(spark.sparkContext._gateway)
                action = action.deleteWith(_KeepFile())
            result = action.execute()
            return [str(p) for p in result.orphanFileLocations()]

    def rewrite_metadata(self, table: TableHandle, dry_run: bool, min_count: int) -> MetadataResult:
        """Merge manifests (``rewrite_manifests``) once the current snapshot has ``min_count`` or more."""
        started = time.monotonic()
        tbl = self.load(table)  # type: ignore[attr-defined]
        snap = tbl.current_snapshot()
        before = len(snap.manifests(tbl.io)) if snap else 0
        needed = before >= max(2, min_count)
        res = MetadataResult(table.name, self.name, "rewrite_manifests", needed, before, before,  # type: ignore[attr-defined]
                             f"{before} manifests in the current snapshot", dry_run)  # fmt: skip
        if dry_run or not needed:
            return res

        def run() -> None:
            spark = table.catalog.session()
            with spark_errors("rewrite manifests", table.entry.ident):
                spark.sql(f"CALL {_procedure(table, 'rewrite_manifests')}(table => {_ident_arg(table)})").collect()

        _, res.retries = with_retries(run, what=f"rewrite manifests {table.name}")
        tbl = self.load(table)  # type: ignore[attr-defined]
        snap = tbl.current_snapshot()
        res.after = len(snap.manifests(tbl.io)) if snap else 0
        res.detail = f"manifests {before} -> {res.after}"
        res.duration_s = round(time.monotonic() - started, 3)
        return res
