"""Changing a table's layout, for every format: its clustering keys (``alter --cluster-by``) and whether deletes,
updates and merges mark rows instead of rewriting files (``alter --deletion-vectors``).

Format-neutral: the keys are parsed against the table's columns (light path), the adapter is asked whether it can
(capabilities ``clustering`` and ``deletion_vectors``) before anything changes, then makes one commit per change.
Data files stay as they are: ``compact`` clusters them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .partitioning import Layout, parse_cluster_by
from .results import AlterResult
from .schema import Column

if TYPE_CHECKING:
    from .protocols import TableLike


def alter_layout(table: TableLike, *, cluster_by: str | list[str] | None = None, deletion_vectors: bool | None = None,
                 dry_run: bool = False) -> AlterResult:  # fmt: skip
    """Change the clustering keys (``"a, b"``, ``"zorder(a, b)"``, ``"none"``) and/or the delete mode. See ``Table.alter``."""
    adapter = table.adapter
    if cluster_by is not None:
        adapter.require("clustering", "alter(cluster_by)")
    if deletion_vectors is not None:
        adapter.require("deletion_vectors", "alter(deletion_vectors)")
    desc = table.describe()
    changes: list[str] = []
    clustering = None
    if cluster_by is not None:
        clustering = parse_cluster_by(cluster_by, [Column(c.name, c.type) for c in desc.schema])
        adapter.check_layout(Layout(clustering=clustering), [])
        changes.append(f"cluster by {clustering}" if clustering else "remove the clustering keys")
    if deletion_vectors is not None:
        changes.append("mark deleted rows (deletion vectors)" if deletion_vectors
                       else "rewrite files on delete, update and merge (copy-on-write)")  # fmt: skip
    if not dry_run:
        if clustering is not None:
            adapter.set_clustering(table, clustering)
            table.refresh()
        if deletion_vectors is not None:
            adapter.set_deletion_vectors(table, deletion_vectors)
            table.refresh()
        desc = table.describe()
    return AlterResult(table.name, table.format, changes, [], desc.schema, desc.partitioning, dict(desc.properties),
                       desc.column_mapping, dry_run, 0, 0, desc.current_version, clustering=desc.clustering,
                       deletion_vectors=desc.deletion_vectors)  # fmt: skip
