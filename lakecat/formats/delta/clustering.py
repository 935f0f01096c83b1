"""Delta liquid clustering: the keys a table clusters by, read from its log's ``delta.clustering`` domain metadata
(no JVM; delta-rs does not expose domain metadata)."""

from __future__ import annotations

import json
from typing import Any

from ...files import fs_for
from .log import commit_actions, last_checkpoint, log_entries

CLUSTERING_DOMAIN = "delta.clustering"
#: Where a column-mapped table's schema keeps a column's name in the data files (and in the clustering domain).
PHYSICAL_NAME = "delta.columnMapping.physicalName"
#: Delta clusters by at most this many columns (the keys need column statistics, which it keeps for a few columns).
MAX_CLUSTERING_KEYS = 4


Path = tuple[str, ...]


def _keys(domain: dict[str, Any]) -> tuple[Path, ...] | None:
    """The clustering columns (each a path of physical names) of one ``domainMetadata`` action (None: not the
    clustering domain)."""
    if domain.get("domain") != CLUSTERING_DOMAIN:
        return None
    if domain.get("removed"):
        return ()
    config = json.loads(domain.get("configuration") or "{}")
    return tuple(tuple(path) for path in config.get("clusteringColumns") or [])


def _physical(field: Any) -> str:
    return str(field.metadata.get(PHYSICAL_NAME) or field.name)


def _walk(path: Path, fields: list[Any], *, logical: bool) -> str:
    """A column path in logical names (``logical``) or physical ones, given in the other kind; as given when the
    schema does not have it (any more)."""
    out = []
    for part in path:
        found = next((f for f in fields if (_physical(f) if logical else f.name) == part), None)
        if found is None:
            return ".".join(path)
        out.append(found.name if logical else _physical(found))
        fields = list(getattr(found.type, "fields", None) or [])
    return ".".join(out)


def physical_name(column: str, fields: list[Any]) -> str:
    """The name the data files' statistics give a (dotted) logical column of the schema ``fields``."""
    return _walk(tuple(column.split(".")), fields, logical=False)


def clustering_columns(location: str, name: str, features: set[str], fields: list[Any]) -> tuple[str, ...]:
    """The columns the Delta table at ``location`` clusters by, by their logical names in the schema ``fields`` (the
    log records physical names, which differ under column mapping). ``features``: the protocol's writer features (a
    table without ``clustering`` has no keys, and nothing is read)."""
    if "clustering" not in features:
        return ()
    return tuple(_walk(path, fields, logical=True) for path in _clustering_paths(location, name))


def _clustering_paths(location: str, name: str) -> tuple[Path, ...]:
    """Newest domain metadata first: the commits after the last checkpoint, then the checkpoint, then older commits
    still in the log."""
    entries = sorted(log_entries(location, name), key=lambda e: e.version)  # in commit order: the last one wins
    checkpoint = last_checkpoint(location)
    newest = max((e.version for e in entries), default=-1)
    found: tuple[Path, ...] | None = None
    first = (checkpoint + 1) if checkpoint is not None else 0
    found = _newest(location, entries, first, newest)
    if found is not None:
        return found
    if checkpoint is not None:
        found = _checkpoint_keys(location, checkpoint)
        if found is not None:
            return found
        found = _newest(location, entries, 0, checkpoint)
    return found or ()


def _newest(location: str, entries: list[Any], first: int, last: int) -> tuple[Path, ...] | None:
    found = None
    for _, action in commit_actions(location, entries, first, last, ("domainMetadata",)):
        keys = _keys(action)
        found = keys if keys is not None else found
    return found


def _checkpoint_keys(location: str, version: int) -> tuple[Path, ...] | None:
    """The clustering columns a classic (single-file) checkpoint records, None when it records none."""
    import pyarrow.parquet as pq

    filesystem, path = fs_for(f"{location.rstrip('/')}/_delta_log/{version:020d}.checkpoint.parquet")
    try:
        with filesystem.open_input_file(path) as fh:
            rows = pq.read_table(fh, columns=["domainMetadata"]).column(0).to_pylist()
    except (OSError, KeyError, ValueError):
        return None
    for row in rows:
        if row and (keys := _keys(row)) is not None:
            return keys
    return None
