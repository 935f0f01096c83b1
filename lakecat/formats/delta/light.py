"""Delta compaction without a JVM: delta-rs's ``optimize.compact`` commits an OPTIMIZE whose removes and adds carry
``dataChange=false``, as Delta's own OPTIMIZE does (streaming readers skip it), with the log's file statistics.

delta-rs plans from the version lakecat's plan read and commits against it: a concurrent append is kept (the commit
lands after it), a concurrent commit that removed a file the compaction rewrites makes the commit fail, nothing is
committed and lakecat plans again on the new version (``CommitConflictError``). delta-rs merges, per partition, the
files up to the target size into bins of about the target (lakecat's own plan counts the files under 75% of it).
What the light path does not do exactly goes to Spark (``light_compact_blockers``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...engine import first_line
from ...engine_choice import light_commit_point
from ...errors import CommitConflictError, NotExactError
from .log import add_actions, arrow

if TYPE_CHECKING:
    from ..base import TableHandle

#: The writer features delta-rs 1.x commits to (its protocol checker), less column mapping, which lakecat leaves to
#: Spark (physical column names in the rewritten files).
LIGHT_WRITER_FEATURES = frozenset({
    "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "deletionVectors",
    "timestampNtz", "v2Checkpoint", "variantType", "variantType-preview",
})  # fmt: skip
#: The features a legacy writer version (before table features) implies, by version.
_LEGACY_WRITER = {
    2: {"appendOnly", "invariants"},
    3: {"appendOnly", "invariants", "checkConstraints"},
    4: {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"},
    5: {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"},
    6: {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping",
        "identityColumns"},
}  # fmt: skip


class DeltaLightCompaction:
    """The light engine's compaction of a Delta table (mixed into ``DeltaFormat``)."""

    def light_blockers(self, table: TableHandle, action: str) -> list[str]:
        if action == "compact":
            return self.light_compact_blockers(table)
        return super().light_blockers(table, action)  # type: ignore[misc, no-any-return]

    def light_compact_blockers(self, table: TableHandle) -> list[str]:
        """Why delta-rs cannot compact this table exactly as Delta's OPTIMIZE would (empty: it can)."""
        return _blockers(self.load(table))  # type: ignore[attr-defined]

    def light_compact(self, table: TableHandle, target: int, partitions: set[str] | None) -> tuple[int, int]:
        """delta-rs's OPTIMIZE (bin-pack to ``target`` bytes) of the whole table, or of ``partitions`` (one commit
        each); (files removed, files added). ``NotExactError`` when the version it plans from has what only Spark
        rewrites exactly (deletion vectors committed since the engine was chosen, say)."""
        from deltalake.exceptions import CommitFailedError

        dt = self.load(table)  # type: ignore[attr-defined]  # the version the plan read: the commit is checked against it
        blocked = _blockers(dt)
        if blocked:
            raise NotExactError(f"compact of {table.name} cannot run without Spark: {blocked[0]}")
        filters = _partition_filters(dt, partitions) if partitions is not None else None
        if filters is None:  # the whole table, one commit
            filters = [None]
        light_commit_point(table.name, "compact")
        removed = added = 0
        for conjunction in filters:
            try:
                metrics = dt.optimize.compact(partition_filters=conjunction, target_size=target)
            except CommitFailedError as e:
                raise CommitConflictError(f"compact {table.name}: commit conflict: {first_line(str(e))}") from e
            removed += int(metrics.get("numFilesRemoved", 0))
            added += int(metrics.get("numFilesAdded", 0))
        return removed, added


def _blockers(dt: Any) -> list[str]:
    """Why delta-rs cannot compact the version of ``dt`` exactly as Delta's OPTIMIZE would."""
    protocol = dt.protocol()
    writer = int(protocol.min_writer_version)
    features = set(protocol.writer_features or ()) if writer >= 7 else _LEGACY_WRITER.get(writer, set())
    if dt.metadata().configuration.get("delta.columnMapping.mode", "none") == "none":
        features.discard("columnMapping")  # the feature without a mode: file columns keep their names
    out = []
    missing = sorted(features - LIGHT_WRITER_FEATURES)
    if missing:
        out.append(f"writer feature(s) {', '.join(missing)}: delta-rs does not write them")
    if "deletionVectors" in set(protocol.reader_features or ()) and arrow(dt.deletion_vectors()).num_rows:
        out.append("deletion vectors hide rows: only Spark purges them while it rewrites")
    return out


def _partition_filters(dt: Any, partitions: set[str]) -> list[Any] | None:
    """One conjunction of ``col = value`` per partition of ``partitions`` (``col=value/...`` text, as
    ``live_files`` spells a file's partition), from the live files' partition values; None when one of them has a
    null value (delta-rs's filters cannot name it: the caller compacts the whole table)."""
    out: dict[str, list[tuple[str, str, Any]]] = {}
    for r in add_actions(dt).to_pylist():
        values = {k[len("partition.") :]: v for k, v in r.items() if k.startswith("partition.")}
        key = "/".join(f"{k}={v}" for k, v in values.items())
        if key in partitions and key not in out:
            if any(v is None for v in values.values()):
                return None
            out[key] = [(k, "=", v) for k, v in values.items()]  # delta-rs encodes each value as its type
    return [out[k] for k in sorted(out)]
