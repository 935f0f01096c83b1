"""Iceberg maintenance: Iceberg's own Spark procedures, planned from pyiceberg metadata (no JVM for dry runs), and the
light engine: expiry and orphan cleanup done with pyiceberg and lakecat's own file accounting (no JVM).

Light expiry commits the removal of the snapshots Iceberg's ``expire_snapshots`` would remove (the same retention
rules: each branch's ``min-snapshots-to-keep`` / ``max-snapshot-age-ms``, tags, unreferenced snapshots within the
window) in one pyiceberg metadata commit, then deletes what only they reached: content files, manifests, manifest
lists, statistics files. Light orphan cleanup lists the table's location and deletes what no snapshot, metadata file
or statistics file reaches, older than the window, with ``DeleteOrphanFiles``' hidden-path and prefix rules.
"""

from __future__ import annotations

import contextlib
import logging
import time
import urllib.parse
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace
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
from ...errors import CommitConflictError, LakecatError, UnsupportedOperationError
from ...files import DataFile, fs_for, no_cyclic_gc, norm_path
from ...identifiers import quote
from ...results import ExpireResult, MetadataResult
from ...units import format_duration, iso
from .health import partition_paths
from .markers import MARKER_PROPERTY_PREFIX, all_stream_markers, unpublished

if TYPE_CHECKING:
    from ..base import TableHandle

log = logging.getLogger(__name__)
#: What the light engine does for each maintenance action of an Iceberg table (the others stay Spark's).
LIGHT_ACTIONS = ("expire", "clean-orphans", "rewrite-metadata")


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


def _retained_ids(meta: Any, cutoff_ms: int, keep: int, now_ms: int, raised: dict[str, int]) -> set[int]:
    """The snapshots Iceberg's ``expire_snapshots(older_than, retain_last)`` keeps (``RemoveSnapshots``' rules): every
    ref's snapshot; each branch's newest ancestors while fewer than its ``min-snapshots-to-keep`` (``raised`` for the
    run, else ``keep``) or newer than its ``max-snapshot-age-ms`` (else the cutoff); any snapshot on no branch's lineage
    and no tag that is newer than the cutoff."""
    by_id = {s.snapshot_id: s for s in meta.snapshots}
    refs = dict(meta.refs or {})
    if "main" not in refs and meta.current_snapshot_id is not None:  # an old table without refs: its main line
        refs["main"] = SimpleNamespace(snapshot_id=meta.current_snapshot_id, snapshot_ref_type="branch",
                                       max_snapshot_age_ms=None, min_snapshots_to_keep=None)  # fmt: skip
    kept: set[int] = set()
    referenced: set[int] = set()
    for name, ref in refs.items():
        kept.add(ref.snapshot_id)
        if str(ref.snapshot_ref_type) != "branch":
            referenced.add(ref.snapshot_id)
            continue
        older = now_ms - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else cutoff_ms
        least = raised[name] if name in raised else (ref.min_snapshots_to_keep or keep)
        kept.update(_newest(by_id, ref.snapshot_id, least, older))
        lineage: set[int] = set()
        sid = ref.snapshot_id
        while sid is not None and sid in by_id and sid not in lineage:  # the whole lineage is the branch's
            lineage.add(sid)
            sid = by_id[sid].parent_snapshot_id
        referenced |= lineage
    kept |= {s.snapshot_id for s in meta.snapshots if s.snapshot_id not in referenced and s.timestamp_ms >= cutoff_ms}
    return kept


def _newest(by_id: dict[int, Any], head: int, least: int, older: int) -> list[int]:
    """A branch's snapshots its retention keeps: from its head back, while fewer than ``least`` or newer than
    ``older`` (epoch ms); the first one past both stops the walk."""
    out: list[int] = []
    sid: int | None = head
    while sid is not None and sid in by_id and sid not in out:
        if len(out) < least or by_id[sid].timestamp_ms >= older:
            out.append(sid)
        else:
            break
        sid = by_id[sid].parent_snapshot_id
    return out


#: Schemes one file system answers to (Iceberg's ``DeleteOrphanFiles`` equal-schemes default).
_EQUAL_SCHEMES = {"s3a": "s3", "s3n": "s3"}


def _uri_parts(path: str) -> tuple[str | None, str | None, str]:
    """(scheme, authority, decoded path) of a file's location, as ``DeleteOrphanFiles`` compares them: a location
    without a scheme or an authority matches any; ``file:/x``, ``file:///x`` and ``/x`` are the same file."""
    parsed = urllib.parse.urlparse(str(path))
    scheme = parsed.scheme.lower() or None
    scheme = _EQUAL_SCHEMES.get(scheme, scheme) if scheme else None
    if scheme == "file":
        scheme = None
    return scheme, parsed.netloc or None, urllib.parse.unquote(parsed.path if scheme or parsed.scheme else str(path))


def _hidden(name: str, partition_names: set[str]) -> bool:
    """A name ``DeleteOrphanFiles`` does not look into or at: ``_``/``.``-prefixed, except a partition directory of a
    partition field whose name starts with ``_``."""
    return name.startswith(("_", ".")) and not any(name.startswith(f"{p}=") for p in partition_names)


def _metadata_files(tbl: Any, name: str) -> set[str]:
    """The table's metadata files: the current one, its metadata log, and further back the logs of the oldest
    readable earlier file (Iceberg's ``ReachableFileUtil.metadataFileLocations`` with ``recursive``)."""
    from pyiceberg.serializers import FromInputFile

    out = {tbl.metadata_location}
    log = [e.metadata_file for e in tbl.metadata.metadata_log]
    out.update(log)
    while log:
        earlier = None
        for path in log:  # oldest first
            try:
                earlier = FromInputFile.table_metadata(tbl.io.new_input(path))
                break
            except FileNotFoundError:
                continue
            except Exception as e:  # noqa: BLE001 - an unreadable metadata file: delete nothing
                raise LakecatError(f"table {name}: the metadata file {path} could not be read, so nothing is deleted: "
                                   f"{first_line(str(e)) or type(e).__name__}") from e  # fmt: skip
        if earlier is None:
            break
        log = [e.metadata_file for e in earlier.metadata_log if e.metadata_file not in out]
        out.update(log)
    return out


def _valid_files(tbl: Any, name: str) -> set[str]:
    """Every file the table's metadata reaches: manifest lists, manifests and every file their entries name (deleted
    entries too) of every snapshot, metadata files, statistics files, the version hint."""
    meta = tbl.metadata
    out: set[str] = set()
    manifests: set[str] = set()
    for snap in meta.snapshots:
        try:
            if snap.manifest_list:
                out.add(snap.manifest_list)
            for m in snap.manifests(tbl.io):
                if m.manifest_path in manifests:
                    continue
                for entry in m.fetch_manifest_entry(tbl.io, discard_deleted=False):
                    out.add(entry.data_file.file_path)
                manifests.add(m.manifest_path)
        except Exception as e:  # noqa: BLE001 - a damaged or unreachable manifest: delete nothing
            raise LakecatError(f"table {name}: the manifests of snapshot {snap.snapshot_id} could not be read, so "
                               f"nothing is deleted: {first_line(str(e)) or type(e).__name__}") from e  # fmt: skip
    out |= manifests
    out |= _metadata_files(tbl, name)
    out |= {f.statistics_path for f in [*meta.statistics, *meta.partition_statistics]}
    out.add(f"{meta.location.rstrip('/')}/metadata/version-hint.text")
    return out


def _orphans_of(candidates: list[str], valid: set[str], name: str) -> list[str]:
    """The ``candidates`` (files found under the table) that no ``valid`` location names, compared as
    ``DeleteOrphanFiles`` does (``_uri_parts``). A candidate whose path is named only under another scheme or
    authority stops the cleanup in one line: whether it is an orphan is unknown (Iceberg's prefix-mismatch error)."""
    named: dict[str, list[tuple[str | None, str | None]]] = {}
    for path in valid:
        s, a, p = _uri_parts(path)
        named.setdefault(p, []).append((s, a))
    orphans = []
    for shown in candidates:
        s, a, p = _uri_parts(shown)
        seen = named.get(p)
        if seen is None:
            orphans.append(shown)
        elif not any((vs is None or s is None or vs == s) and (va is None or a is None or va == a) for vs, va in seen):
            raise LakecatError(
                f"table {name}: {shown} is named by the metadata under another scheme or authority "
                f"({seen[0][0] or ''}://{seen[0][1] or ''}), so whether it is an orphan is unknown and nothing is "
                "deleted (Iceberg's prefix-mismatch rule)"
            )
    return sorted(orphans)


def _delete(paths: list[str]) -> list[str]:
    """Delete files; returns those that went (one already gone is not counted, one that cannot be deleted is logged
    and left for a later orphan cleanup, as Iceberg's own actions do)."""
    gone = []
    for path in paths:
        try:
            filesystem, p = fs_for(path)
            filesystem.delete_file(p)
            gone.append(path)
        except FileNotFoundError:
            continue
        except OSError as e:
            log.warning("could not delete %s (%s); a later clean-orphans removes it", path, first_line(str(e)))
            continue
        head, _, name = p.rpartition("/")
        with contextlib.suppress(OSError):
            filesystem.delete_file(f"{head}/.{name}.crc")  # Hadoop's checksum sidecar (Spark's local writes)
    return gone


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

            with spark_errors("compact(where)", table.entry.ident):
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

    # --- the light engine: which actions it runs, and what stops it ----------------------------------------
    def light_blockers(self, table: TableHandle, action: str) -> list[str]:
        checks = {
            "expire": self._light_expire_blockers,
            "clean-orphans": self._light_orphans_blockers,
            "rewrite-metadata": self._light_metadata_blockers,
        }
        if action not in checks:
            return super().light_blockers(table, action)  # type: ignore[misc, no-any-return]
        return checks[action](table)

    def _light_gc_blockers(self, table: TableHandle) -> list[str]:
        props = self.metadata_doc(table).get("properties") or {}  # type: ignore[attr-defined]
        if str(props.get("gc.enabled", "true")).lower() == "false":
            return ["gc.enabled is false on this table: Iceberg deletes no file of it (Spark says why)"]
        return []

    def _light_expire_blockers(self, table: TableHandle) -> list[str]:
        out = self._light_gc_blockers(table)
        if self.writes_through_spark(table):  # type: ignore[attr-defined]
            out.append("a format version 3 table: pyiceberg reads version 3 metadata but does not write it")
        meta = self.load(table).metadata  # type: ignore[attr-defined]
        if meta.partition_statistics:
            out.append("the table has partition statistics files, which pyiceberg's expiry leaves in the metadata")
        now_ms = int(now().timestamp() * 1000)
        by_id = {s.snapshot_id: s for s in meta.snapshots}
        aged = sorted(name for name, ref in (meta.refs or {}).items() if name != "main" and ref.max_ref_age_ms is not None
                      and ref.snapshot_id in by_id and now_ms - by_id[ref.snapshot_id].timestamp_ms > ref.max_ref_age_ms)  # fmt: skip
        if aged:
            out.append(
                f"ref {aged[0]} is older than its max-ref-age-ms: Iceberg's expiry removes it, pyiceberg's does not"
            )
        return out

    def _light_orphans_blockers(self, table: TableHandle) -> list[str]:
        return self._light_gc_blockers(table)

    def _light_metadata_blockers(self, table: TableHandle) -> list[str]:
        return ["pyiceberg has no manifest rewrite (rewrite_manifests): Spark merges an Iceberg table's manifests"]

    def light_work_bytes(self, table: TableHandle, action: str) -> int:
        """The metadata a light expiry or orphan cleanup reads: every snapshot's manifests, once each."""
        if action not in LIGHT_ACTIONS:
            return super().light_work_bytes(table, action)  # type: ignore[misc, no-any-return]
        tbl = self.load(table)  # type: ignore[attr-defined]
        sizes: dict[str, int] = {}
        for snap in tbl.metadata.snapshots:
            try:
                sizes.update((m.manifest_path, int(m.manifest_length)) for m in snap.manifests(tbl.io))
            except Exception:  # noqa: BLE001, S112 - an unreadable list: the step itself stops on it in one line
                continue
        return sum(sizes.values())

    # --- expiry -----------------------------------------------------------------------------------------
    def expire(self, table: TableHandle, window: timedelta, keep: int, dry_run: bool, force: bool, *,
               engine: str = "spark") -> ExpireResult:  # fmt: skip
        tbl = self.load(table)  # type: ignore[attr-defined]
        meta = tbl.metadata
        moment = now()
        cutoff = moment - window
        cutoff_ms = int(cutoff.timestamp() * 1000)
        pending = unpublished(meta)  # a branch's history not yet on main: publish (fast-forward) needs all of it
        # Iceberg's expiry keeps a branch's ``min-snapshots-to-keep`` (else ``retain_last``): for the run, it is
        # raised to the branch's unpublished history and the snapshot it forked from, so an expiry never cuts a
        # branch off from the main line it waits to be published to (fast-forward)
        raised = {name: len(lineage) + 1 for name, lineage in pending.items()
                  if (meta.refs[name].min_snapshots_to_keep or 0) < len(lineage) + 1}  # fmt: skip
        kept_ids = _retained_ids(meta, cutoff_ms, keep, int(moment.timestamp() * 1000), raised)
        by_time = sorted(meta.snapshots, key=lambda s: s.timestamp_ms)
        expired = [s for s in by_time if s.snapshot_id not in kept_ids]
        retained = [s for s in by_time if s.snapshot_id in kept_ids]
        gone_files = self._expired_files(table, tbl, expired, retained)
        result = ExpireResult(
            table=table.name, format=self.name, expired_versions=[s.snapshot_id for s in expired],  # type: ignore[attr-defined]
            retained_versions=[s.snapshot_id for s in retained], deleted_files=len(gone_files),
            deleted_bytes=sum(gone_files.values()), older_than=format_duration(window), retain_last=keep,
            cutoff=iso(cutoff), forced=force, dry_run=dry_run, files=sorted(gone_files),
        )  # fmt: skip
        if dry_run or not expired:
            return result
        self._save_stream_markers(table, meta, {s.snapshot_id for s in expired})
        if engine == "light":
            return self._expire_light(table, result, {s.snapshot_id for s in retained}, gone_files)
        # for the Spark run the raised retention is set on the branches, and restored afterwards
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

    def _expired_files(self, table: TableHandle, tbl: Any, expired: list[Any], retained: list[Any]) -> dict[str, int]:
        """What only ``expired`` snapshots reach (path -> size; a manifest list's size is not known: 0): content
        files, manifests, manifest lists and statistics files, the files Iceberg's expiry deletes."""
        if not expired:
            return {}
        with no_cyclic_gc():
            old_files, old_manifests = _reachable(tbl, expired, table.name)
            live_files, live_manifests = _reachable(tbl, retained, table.name)
        gone = {p: s for p, s in old_files.items() if p not in live_files}
        gone.update({p: s for p, s in old_manifests.items() if p not in live_manifests})
        for s in expired:
            if s.manifest_list:
                gone.setdefault(s.manifest_list, 0)
        expired_ids = {s.snapshot_id for s in expired}
        stats = tbl.metadata.statistics
        live_stats = {f.statistics_path for f in stats if f.snapshot_id not in expired_ids}
        gone.update({f.statistics_path: int(f.file_size_in_bytes) for f in stats
                     if f.snapshot_id in expired_ids and f.statistics_path not in live_stats})  # fmt: skip
        return gone

    def _expire_light(self, table: TableHandle, result: ExpireResult, retained: set[int],
                      gone: dict[str, int]) -> ExpireResult:  # fmt: skip
        """Remove ``result.expired_versions`` in one pyiceberg commit, then delete the files only they reached. A
        commit that meets a changed table (the planned snapshots gone or protected) is a conflict: the caller plans
        again. A snapshot another writer committed meanwhile keeps every file it reaches."""
        from pyiceberg.exceptions import CommitFailedException

        expiring = list(result.expired_versions)
        try:
            tbl = self.sql_catalog(table.catalog).load_table((table.entry.ident.namespace, table.entry.ident.name))  # type: ignore[attr-defined]
            tbl.maintenance.expire_snapshots().by_ids(expiring).commit()
        except (CommitFailedException, ValueError) as e:  # ValueError: a snapshot gone or now a ref's
            raise CommitConflictError(f"expire {table.name}: commit conflict: {first_line(str(e))}") from e
        after = tbl.metadata
        newer = [s for s in after.snapshots if s.snapshot_id not in retained]
        if newer:  # another writer's commit since the plan: what it reaches stays
            with no_cyclic_gc():
                files, manifests = _reachable(tbl, newer, table.name)
            gone = {p: n for p, n in gone.items() if p not in files and p not in manifests}
        gone = {p: n for p, n in gone.items() if p not in {f.statistics_path for f in after.statistics}}
        deleted = _delete(sorted(gone))
        remaining = {s.snapshot_id for s in after.snapshots}
        result.expired_versions = [sid for sid in expiring if sid not in remaining]
        result.retained_versions = [s.snapshot_id for s in sorted(after.snapshots, key=lambda s: s.timestamp_ms)]
        result.deleted_files, result.deleted_bytes = len(deleted), sum(gone[p] for p in deleted)
        result.files = deleted
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

    # --- orphan files -----------------------------------------------------------------------------------
    def find_orphans(self, table: TableHandle, cutoff: datetime, window: timedelta, *,
                     engine: str = "spark") -> list[str]:  # fmt: skip
        if engine == "light":
            return self._orphans_light(table, cutoff, dry_run=True)
        return self._orphans(table, cutoff, dry_run=True)

    def delete_orphans(self, table: TableHandle, cutoff: datetime, window: timedelta, *,
                       engine: str = "spark") -> None:  # fmt: skip
        if engine == "light":
            self._orphans_light(table, cutoff, dry_run=False)
            return
        self._orphans(table, cutoff, dry_run=False)

    def _orphans_light(self, table: TableHandle, cutoff: datetime, *, dry_run: bool) -> list[str]:
        """Files under the table's location that its metadata does not reach, last modified before ``cutoff``:
        Iceberg's ``DeleteOrphanFiles`` without Spark. The location is listed before the metadata is read, so a
        file a commit names by then is kept; a file whose path the metadata names under another scheme or
        authority stops the cleanup in one line (Iceberg's prefix-mismatch error), as does unreadable metadata."""
        from pyarrow import fs

        filesystem, root = fs_for(table.location)
        root = root.rstrip("/")
        scheme_text = urllib.parse.urlparse(table.location).scheme
        remote = scheme_text.lower() not in ("", "file")
        try:
            infos = filesystem.get_file_info(fs.FileSelector(root, recursive=True, allow_not_found=True))
        except OSError as e:
            raise LakecatError(f"table {table.name}: its location {table.location} could not be listed, so nothing "
                               f"is deleted: {first_line(str(e))}") from e  # fmt: skip
        tbl = self.load(table)  # type: ignore[attr-defined]
        partition_names = {f.name for spec in tbl.metadata.partition_specs for f in spec.fields}
        cutoff_s = cutoff.timestamp()
        candidates = []
        for info in infos:
            if info.type != fs.FileType.File or info.mtime is None or info.mtime.timestamp() >= cutoff_s:
                continue
            if any(_hidden(part, partition_names) for part in info.path[len(root) + 1 :].split("/")):
                continue
            candidates.append(f"{scheme_text}://{info.path}" if remote else info.path)
        if not candidates:
            return []
        with no_cyclic_gc():
            orphans = _orphans_of(candidates, _valid_files(tbl, table.name), table.name)
        if not dry_run:
            _delete(orphans)
        return orphans

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
                "reachable through Spark Connect; run it in process (LAKECAT_ENGINE=in-process) or use older_than='24h'"
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

    def rewrite_metadata(self, table: TableHandle, dry_run: bool, min_count: int, *,
                         engine: str = "spark") -> MetadataResult:  # fmt: skip
        """Merge manifests (``rewrite_manifests``, Spark: pyiceberg has no manifest rewrite) once the current snapshot
        has ``min_count`` or more."""
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
