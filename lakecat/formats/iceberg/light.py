"""Iceberg compaction without a JVM: pyiceberg reads a partition's small files, writes them anew as it writes any
file (field ids, partition values, column metrics) and commits one ``replace`` snapshot, as ``rewrite_data_files``
does (streaming readers skip it).

The commit is made against the snapshot the plan read: a concurrent commit makes pyiceberg refresh and check that
the replaced files are all still live and that no delete file was added against them, then rebase; if either check
fails, nothing is committed, the files written are deleted and lakecat plans again on the new snapshot
(``CommitConflictError``). What the light path does not do exactly goes to Spark (``light_compact_blockers``).
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from ...engine import first_line
from ...engine_choice import light_commit_point
from ...errors import CommitConflictError, NotExactError
from ...smallfiles import small_groups
from .health import partition_paths

if TYPE_CHECKING:
    from ..base import TableHandle


class _Entry:
    """A live data file as the small-file rule sees it, with pyiceberg's ``DataFile``."""

    __slots__ = ("file", "partition", "size")

    def __init__(self, file: Any, partition: str) -> None:
        self.file, self.partition, self.size = file, partition, int(file.file_size_in_bytes)


@cache
def _replace_producer() -> type:
    """pyiceberg's overwrite producer committing operation ``replace`` (defined on first use: pyiceberg loads late).

    It removes and adds exactly the files it is given; on a retry it checks only what a rewrite must (the removed
    files are still live, no new delete applies to them): a concurrent append does not conflict with a compaction.
    """
    from pyiceberg.table.snapshots import Operation, Summary
    from pyiceberg.table.update.snapshot import _OverwriteFiles
    from pyiceberg.table.update.validate import _validate_data_files_exist, _validate_no_new_deletes_for_data_files

    class ReplaceFiles(_OverwriteFiles):  # type: ignore[misc, valid-type]
        def _summary(self, snapshot_properties: Any = None) -> Any:
            # pyiceberg's running totals know append/overwrite/delete: computed as an overwrite, named a replace
            self._operation = Operation.OVERWRITE
            try:
                summary = super()._summary(snapshot_properties or {})
            finally:
                self._operation = Operation.REPLACE
            return Summary(operation=Operation.REPLACE, **summary.additional_properties)

        def _validate_concurrency(self) -> None:
            window = self._commit_window
            if window is None or window.is_empty() or window.head is None:
                return
            table = self._transaction._table
            _validate_data_files_exist(table, window.head, self._deleted_data_files, window.base)
            _validate_no_new_deletes_for_data_files(table, window.head, None, self._deleted_data_files, window.base)

    return ReplaceFiles


@cache
def _known_partition_key() -> type:
    """pyiceberg's ``PartitionKey`` holding the partition record of the files it rewrites, as their manifests have it
    (pyiceberg computes a key from the rows otherwise, which for a transform needs its optional native library)."""
    from pyiceberg.partitioning import PartitionKey

    @dataclass(frozen=True)
    class KnownPartition(PartitionKey):  # type: ignore[misc, valid-type]
        record: Any = None

        @property
        def partition(self) -> Any:  # type: ignore[override]
            return self.record

    return KnownPartition


class IcebergLightCompaction:
    """The light engine's compaction of an Iceberg table (mixed into ``IcebergFormat``)."""

    def light_blockers(self, table: TableHandle, action: str) -> list[str]:
        if action == "compact":
            return self.light_compact_blockers(table)
        return super().light_blockers(table, action)  # type: ignore[misc, no-any-return]

    def light_compact_blockers(self, table: TableHandle) -> list[str]:
        """Why pyiceberg cannot compact this table exactly as ``rewrite_data_files`` would (empty: it can)."""
        return _blockers(self.load(table))  # type: ignore[attr-defined]

    def light_compact(self, table: TableHandle, target: int, partitions: set[str] | None) -> tuple[int, int]:
        """Merge the small files of each partition (only ``partitions`` when given) into files of about ``target``
        bytes, in one ``replace`` commit; (files removed, files added). ``NotExactError`` when the snapshot it plans
        from has what only Spark rewrites exactly (a delete file committed since the engine was chosen, say)."""
        from pyiceberg.exceptions import CommitFailedException, ValidationException
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import ArrowScan, bin_pack_arrow_table, pyarrow_to_schema, write_file
        from pyiceberg.manifest import ManifestContent
        from pyiceberg.table import FileScanTask, WriteTask
        from pyiceberg.table.snapshots import Operation

        ident = (table.entry.ident.namespace, table.entry.ident.name)
        tbl = self.sql_catalog(table.catalog).load_table(ident)  # type: ignore[attr-defined]
        blocked = _blockers(tbl)  # the snapshot the plan reads and the commit is checked against
        if blocked:
            raise NotExactError(f"compact of {table.name} cannot run without Spark: {blocked[0]}")
        snap = tbl.current_snapshot()
        if snap is None:
            return 0, 0
        path = partition_paths(tbl.specs(), tbl.schema())
        live = [
            _Entry(e.data_file, path(e.data_file.spec_id, e.data_file.partition))
            for m in snap.manifests(tbl.io)
            if m.content == ManifestContent.DATA
            for e in m.fetch_manifest_entry(tbl.io, discard_deleted=True)
        ]
        spec_id = (
            tbl.metadata.default_spec_id
        )  # files of an older spec stay (light_compact_blockers sends them to Spark)
        chosen = (f for f in live if f.file.spec_id == spec_id and (partitions is None or f.partition in partitions))
        groups = small_groups(chosen, target)
        if not groups:
            return 0, 0
        meta = tbl.metadata
        schema = tbl.schema()
        write_uuid, counter = uuid.uuid4(), itertools.count(0)
        removed: list[Any] = []
        added: list[Any] = []
        try:
            spec = meta.spec()
            for _, group in sorted(groups.items()):
                rows = ArrowScan(meta, tbl.io, schema, AlwaysTrue()).to_table([FileScanTask(f.file) for f in group])
                # the group's one partition, as its files' manifest entries record it (the current spec's)
                key = (
                    None
                    if spec.is_unpartitioned()
                    else _known_partition_key()([], spec, schema, group[0].file.partition)
                )
                file_schema = pyarrow_to_schema(rows.schema, name_mapping=schema.name_mapping,
                                                format_version=meta.format_version)  # fmt: skip
                tasks = (WriteTask(write_uuid=write_uuid, task_id=next(counter), record_batches=batches,
                                   partition_key=key, schema=file_schema)
                         for batches in bin_pack_arrow_table(rows, target))  # fmt: skip
                added.extend(write_file(tbl.io, meta, tasks))
                removed.extend(f.file for f in group)
            light_commit_point(table.name, "compact")
            tx = tbl.transaction()
            producer = _replace_producer()(operation=Operation.REPLACE, transaction=tx, io=tbl.io)
            for f in removed:
                producer.delete_data_file(f)
            for f in added:
                producer.append_data_file(f)
            producer.commit()
            tx.commit_transaction()
        except (CommitFailedException, ValidationException) as e:  # nothing committed: the new files go
            _delete(tbl.io, added)
            raise CommitConflictError(f"compact {table.name}: commit conflict: {first_line(str(e))}") from e
        except BaseException:  # noqa: BLE001 - any failure: its files go unless the commit landed, then re-raised
            if not _committed(tbl, added):
                _delete(tbl.io, added)
            raise
        return len(removed), len(added)


def _blockers(tbl: Any) -> list[str]:
    """Why pyiceberg cannot compact the pyiceberg table ``tbl`` (its current snapshot) exactly as Spark would."""
    meta = tbl.metadata
    out = []
    if int(meta.format_version) >= 3:
        out.append("format version 3 (row lineage and deletion vectors): pyiceberg does not write it")
    fmt = str(meta.properties.get("write.format.default", "parquet")).lower()
    if fmt != "parquet":
        out.append(f"its data files are written as {fmt}: the light engine writes Parquet only")
    snap = tbl.current_snapshot()
    if snap is None:
        return out
    from pyiceberg.manifest import ManifestContent

    live = [m for m in snap.manifests(tbl.io)  # a manifest without its counts may hold live files
            if m.added_files_count is None or m.existing_files_count is None
            or m.added_files_count + m.existing_files_count > 0]  # fmt: skip
    if any(m.content == ManifestContent.DATA and m.partition_spec_id != meta.default_spec_id for m in live):
        out.append("files of an older partition spec: Spark rewrites them into the current one")
    if any(m.content == ManifestContent.DELETES for m in live):
        out.append("delete files hide rows: only Spark applies deletes while it rewrites")
    return out


def _committed(tbl: Any, added: list[Any]) -> bool:
    """Whether the table's current snapshot references any of ``added`` (a commit whose answer was lost)."""
    if not added:
        return False
    try:
        tbl.refresh()
        snap = tbl.current_snapshot()
        return snap is not None and any(
            e.data_file.file_path == added[0].file_path
            for m in snap.manifests(tbl.io)
            for e in m.fetch_manifest_entry(tbl.io, discard_deleted=True)
        )
    except Exception:  # noqa: BLE001 - unknown: keep the files (an orphan is safer than a missing data file)
        return True


def _delete(io: Any, files: list[Any]) -> None:
    for f in files:
        try:
            io.delete(f.file_path)
        except Exception:  # noqa: BLE001 - best effort: a file left behind is an orphan cleanup removes
            pass
