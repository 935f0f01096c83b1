"""Iceberg health facts from pyiceberg metadata alone: manifests of the current snapshot, every snapshot's reach."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import FileFact, HealthFacts
from .versions import _commits

if TYPE_CHECKING:
    from ..base import TableHandle

MARKER_QUERY = "lakecat.query-id"  # the exactly-once marker ingest puts on each snapshot it commits


def _partition(specs: dict[int, Any], schema: Any, spec_id: int, partition: Any) -> str:
    spec = specs.get(spec_id)
    if spec is None or not spec.fields:
        return ""
    try:
        return str(spec.partition_to_path(partition, schema))
    except Exception:  # noqa: BLE001 - a display string only
        return str(partition)


class IcebergHealth:
    """The health half of the Iceberg adapter (mixed into ``IcebergFormat``)."""

    def health_facts(self, table: TableHandle) -> HealthFacts:
        from pyiceberg.manifest import DataFileContent

        tbl = self.load(table)  # type: ignore[attr-defined]
        meta = tbl.metadata
        commits = _commits(meta)
        stream = [s.timestamp_ms for s in meta.snapshots
                  if s.summary is not None and MARKER_QUERY in s.summary.additional_properties]  # fmt: skip
        facts = HealthFacts(files=[], commits=commits, current_version=meta.current_snapshot_id,
                            delete_kind="position/equality deletes", stream_commit_ms=max(stream) if stream else None)  # fmt: skip
        current = tbl.current_snapshot()
        if current is None:
            return facts
        schema, specs = tbl.schema(), tbl.specs()
        live: set[str] = set()
        current_manifests = current.manifests(tbl.io)
        for manifest in current_manifests:
            for entry in manifest.fetch_manifest_entry(tbl.io, discard_deleted=True):
                f = entry.data_file
                live.add(f.file_path)
                if f.content == DataFileContent.DATA:
                    part = _partition(specs, schema, manifest.partition_spec_id, f.partition)
                    facts.files.append(FileFact(int(f.file_size_in_bytes), part, int(f.record_count)))
                else:  # POSITION_DELETES / EQUALITY_DELETES: each record hides (at most) one row
                    facts.delete_files += 1
                    facts.delete_bytes += int(f.file_size_in_bytes)
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
