"""One table, read as either format: a table's mirror as another format, kept in step after lakecat's commits.

The format of the table does the work (``TableFormat.mirror``, ``sync_mirror``, ``verify_mirror``); this module
only picks the adapters and keeps the catalog showing one table per name. The mirrors' catch-up after each commit
lakecat makes is the format's one post-commit step (``TableFormat.after_commit``): a failed catch-up leaves the mirror
behind (the next one catches up), never wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .formats import get_format

if TYPE_CHECKING:
    from .formats.base import CatalogContext, TableHandle
    from .metastore import TableEntry
    from .results import MirrorResult, MirrorVerifyResult


def mirrors(entry: TableEntry) -> list[str]:
    """The formats the table is also readable as."""
    return get_format(entry.format).mirrors(entry)


def one_per_name(entries: Iterable[TableEntry]) -> list[TableEntry]:
    """Catalog entries without the mirrors: a name that is a table and its mirror as another format is one table."""
    found = list(entries)
    mirrored = {(e.ident.namespace, e.ident.name, m) for e in found for m in mirrors(e)}
    return [e for e in found if (e.ident.namespace, e.ident.name, e.format) not in mirrored]


def mirror(table: TableHandle, *, as_format: str, purge_deletes: bool = False) -> MirrorResult:
    """Make ``table`` readable as ``as_format`` too, under its own name, and bring the mirror up to date."""
    return get_format(table.entry.format).mirror(table, get_format(as_format), purge_deletes=purge_deletes)


def sync(table: TableHandle, *, as_format: str | None = None, purge_deletes: bool = False) -> list[MirrorResult]:
    """Bring the table's mirrors (or one) up to its current version; ``purge_deletes`` first rewrites away (once) what
    the mirrors cannot express (Delta's deletion vectors)."""
    adapter = get_format(table.entry.format)
    targets = [as_format] if as_format is not None else mirrors(table.refresh())
    return [adapter.sync_mirror(table, get_format(t), purge_deletes=purge_deletes and i == 0)
            for i, t in enumerate(targets)]  # fmt: skip


def verify(table: TableHandle, *, as_format: str | None = None) -> list[MirrorVerifyResult]:
    """Compare the table with each mirror (or one) at the mirrored version."""
    adapter = get_format(table.entry.format)
    targets = [as_format] if as_format is not None else mirrors(table.refresh())
    return [adapter.verify_mirror(table, get_format(t)) for t in targets]


def drop(ctx: CatalogContext, entry: TableEntry, *, as_format: str | None = None) -> list[str]:
    """Remove the table's mirrors (or one) from the catalog; their data files are the table's and stay."""
    targets = [as_format] if as_format is not None else mirrors(entry)
    for t in targets:
        get_format(entry.format).drop_mirror(ctx, entry, get_format(t))
    return targets
