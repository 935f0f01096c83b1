"""Iceberg health facts from pyiceberg metadata alone: manifests of the current snapshot (sizes, deletes, bounds of the
sort order's columns), every snapshot's reach."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..base import FileFact, HealthFacts
from .versions import _commits

if TYPE_CHECKING:
    from ..base import TableHandle

MARKER_QUERY = "lakecat.query-id"  # the exactly-once marker ingest puts on each snapshot it commits


def partition_paths(specs: dict[int, Any], schema: Any) -> Callable[[int, Any], str]:
    """``path(spec_id, partition)``: a data file's partition as Hive-style path text ("" when unpartitioned), for
    display and planning; each distinct partition is rendered once (a table has far fewer partitions than files)."""
    seen: dict[tuple[int, tuple[Any, ...]], str] = {}

    def path(spec_id: int, partition: Any) -> str:
        key = (spec_id, tuple(partition))
        if key not in seen:
            spec = specs.get(spec_id)
            try:
                seen[key] = str(spec.partition_to_path(partition, schema)) if spec is not None and spec.fields else ""
            except Exception:  # noqa: BLE001 - a display string only
                seen[key] = str(partition)
        return seen[key]

    return path


_DELETE_FILE_PATH_ID = 2147483546  # the reserved field id of a position delete's file_path column


def _referenced_file(f: Any) -> str | None:
    """The one data file a position delete file refers to (file-scoped deletes), None if it may refer to more."""
    ref = getattr(f, "referenced_data_file", None)
    if ref:
        return str(ref)
    lower, upper = (f.lower_bounds or {}).get(_DELETE_FILE_PATH_ID), (f.upper_bounds or {}).get(_DELETE_FILE_PATH_ID)
    if lower is None or lower != upper:
        return None  # bounds may be truncated or span several files
    try:
        return bytes(lower).decode("utf-8")
    except UnicodeDecodeError:
        return None


def key_fields(schema: Any, names: tuple[str, ...]) -> list[tuple[str, int, Any]]:
    """(name, field id, type) of each clustering key in the schema ([] when one is missing: no figure)."""
    out = []
    for name in names:
        try:
            field = schema.find_field(name)
        except ValueError:
            return []
        out.append((name, field.field_id, field.field_type))
    return out


def _file_bounds(f: Any, keys: list[tuple[str, int, Any]]) -> tuple[tuple[Any, Any], ...] | None:
    """(lower, upper) of each sort column from a data file's column statistics (None: a bound is missing)."""
    from pyiceberg.conversions import from_bytes

    lower, upper = f.lower_bounds or {}, f.upper_bounds or {}
    out = []
    for _, field_id, field_type in keys:
        if field_id not in lower or field_id not in upper:
            return None
        try:
            out.append((from_bytes(field_type, lower[field_id]), from_bytes(field_type, upper[field_id])))
        except Exception:  # noqa: BLE001 - a type without a comparable bound counts as no statistics
            return None
    return tuple(out)


class IcebergHealth:
    """The health half of the Iceberg adapter (mixed into ``IcebergFormat``)."""

    def change_pointer(self, table: TableHandle) -> str | None:
        """The table's metadata location as its catalog entry names it (every commit writes a new metadata file);
        a catalog whose listing does not name it (REST) hands the table out for it."""
        return table.entry.metadata_location or self.load(table).metadata_location  # type: ignore[attr-defined]

    def health_facts(self, table: TableHandle) -> HealthFacts:
        from pyiceberg.manifest import DataFileContent

        tbl = self.load(table)  # type: ignore[attr-defined]
        keys = key_fields(tbl.schema(), self.layout(table).clustering.columns)  # type: ignore[attr-defined]
        meta = tbl.metadata
        commits = _commits(meta)
        stream = [s.timestamp_ms for s in meta.snapshots
                  if s.summary is not None and MARKER_QUERY in s.summary.additional_properties]  # fmt: skip
        facts = HealthFacts(files=[], commits=commits, current_version=meta.current_snapshot_id,
                            delete_kind="deletion vectors" if meta.format_version >= 3 else "position/equality deletes",
                            stream_commit_ms=max(stream) if stream else None, clustering=[k[0] for k in keys])  # fmt: skip
        current = tbl.current_snapshot()
        if current is None:
            return facts
        partition_path = partition_paths(tbl.specs(), tbl.schema())
        live: set[str] = set()
        data_paths: set[str] = set()
        deletes: list[Any] = []
        current_manifests = current.manifests(tbl.io)
        for manifest in current_manifests:
            for entry in manifest.fetch_manifest_entry(tbl.io, discard_deleted=True):
                f = entry.data_file
                live.add(f.file_path)
                if f.content == DataFileContent.DATA:
                    data_paths.add(f.file_path)
                    part = partition_path(manifest.partition_spec_id, f.partition)
                    bounds = _file_bounds(f, keys) if keys else None
                    facts.files.append(FileFact(int(f.file_size_in_bytes), part, int(f.record_count), bounds=bounds))
                else:
                    deletes.append(f)
        for f in deletes:  # POSITION_DELETES / EQUALITY_DELETES: each record hides (at most) one row
            target = _referenced_file(f) if f.content == DataFileContent.POSITION_DELETES else None
            if target is not None and target not in data_paths:
                continue  # a file-scoped position delete whose data file was rewritten: it hides nothing
            facts.delete_files += 1
            # a deletion vector is one blob of a Puffin file other vectors share: its own length, not the file's
            facts.delete_bytes += int(getattr(f, "content_size_in_bytes", None) or f.file_size_in_bytes)
            facts.deleted_rows += int(f.record_count)
        # Manifests are immutable: a file only old snapshots reference sits in a manifest the current one lacks.
        seen = {m.manifest_path for m in current_manifests}
        only_old: dict[str, int] = {}
        for snap in meta.snapshots:
            if snap.snapshot_id == current.snapshot_id:
                continue
            for manifest in snap.manifests(tbl.io):
                if manifest.manifest_path in seen:
                    continue
                seen.add(manifest.manifest_path)
                for entry in manifest.fetch_manifest_entry(tbl.io, discard_deleted=True):
                    if entry.data_file.file_path not in live:
                        only_old[entry.data_file.file_path] = int(entry.data_file.file_size_in_bytes)
        facts.old_version_files, facts.old_version_bytes = len(only_old), sum(only_old.values())
        return facts
