"""Delta health facts from delta-rs and the log alone: add actions (sizes, rows, deletion vectors, column statistics of
the clustering keys), tombstones."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ...files import file_sizes, fs_for, norm_path
from ..base import FileFact, HealthFacts
from .clustering import physical_name
from .log import arrow, live_files, log_entries
from .versions import _commit

if TYPE_CHECKING:
    from ..base import TableHandle


def _log_scan(location: str, name: str) -> tuple[dict[str, int | None], int | None]:
    """Files the log's commits removed (path -> size if recorded), and when a commit last carried an ingest
    marker (a ``txn`` action: ``txnAppId``/``txnVersion``), in ms."""
    base = location.rstrip("/")
    removed: dict[str, int | None] = {}
    stream_ms: int | None = None
    filesystem, _ = fs_for(location)
    for e in sorted(log_entries(location, name), key=lambda e: e.version):
        if e.name != f"{e.version:020d}.json":
            continue
        with filesystem.open_input_stream(e.path) as fh:
            lines = fh.read().decode("utf-8").splitlines()
        txn, stamp = False, None
        for line in lines:
            if '"remove"' in line:
                action = json.loads(line).get("remove")
                if action:
                    path = action["path"]
                    removed[norm_path(path if "://" in path else f"{base}/{path}")] = action.get("size")
            elif line.startswith('{"txn"'):
                txn = True
            elif line.startswith('{"commitInfo"'):
                stamp = (json.loads(line).get("commitInfo") or {}).get("timestamp")
        if txn:
            stream_ms = int(stamp) if stamp is not None else e.mtime_ms
    return removed, stream_ms


def _deletion_vectors(dt: Any) -> dict[str, int]:
    """Normalized data file path -> rows its deletion vector hides (only when the table has the feature)."""
    protocol = dt.protocol()
    if "deletionVectors" not in (protocol.reader_features or []):
        return {}
    out: dict[str, int] = {}
    for row in arrow(dt.deletion_vectors()).to_pylist():
        out[norm_path(row["filepath"])] = sum(1 for keep in row["selection_vector"] if not keep)
    return out


def _bounds(dt: Any, columns: list[str], location: str) -> dict[str, tuple[tuple[Any, Any], ...] | None]:
    """Normalized data file path -> (min, max) of each key from the log's file statistics (None: no statistics)."""
    actions = arrow(dt.get_add_actions(flatten=True))
    names = set(actions.column_names)
    fields = list(dt.schema().fields)
    # under column mapping the statistics name the columns by their physical names
    keys = [c if f"min.{c}" in names else physical_name(c, fields) for c in columns]
    if not all(f"min.{k}" in names and f"max.{k}" in names for k in keys):
        return {}
    base = location.rstrip("/")
    cols = {c: actions.column(c).to_pylist() for c in ["path", *(f"{m}.{k}" for k in keys for m in ("min", "max"))]}
    out: dict[str, tuple[tuple[Any, Any], ...] | None] = {}
    for i, path in enumerate(cols["path"]):
        pairs = tuple((cols[f"min.{k}"][i], cols[f"max.{k}"][i]) for k in keys)
        full = norm_path(path if "://" in path else f"{base}/{path}")
        out[full] = None if any(lo is None or hi is None for lo, hi in pairs) else pairs
    return out


class DeltaHealth:
    """The health half of the Delta adapter (mixed into ``DeltaFormat``)."""

    def change_pointer(self, table: TableHandle) -> str | None:
        """The newest commit of the log, from a listing of ``_delta_log`` (names and times; no file is read): its
        version, and its file's time (a table dropped and created again at the location starts over at version 0)."""
        commits = [e for e in log_entries(table.location, table.name) if e.name == f"{e.version:020d}.json"]
        newest = max(commits, key=lambda e: e.version, default=None)
        return None if newest is None else f"{newest.version}@{newest.mtime_ms}"

    def health_facts(self, table: TableHandle) -> HealthFacts:
        dt = self.load(table)  # type: ignore[attr-defined]
        commits = sorted((c for c in (_commit(h) for h in dt.history()) if c is not None), key=lambda c: c.version)
        removed, stream_ms = _log_scan(table.location, table.name)
        facts = HealthFacts(files=[], commits=commits, current_version=dt.version(), delete_kind="deletion vectors",
                            stream_commit_ms=stream_ms)  # fmt: skip
        hidden_by_file = _deletion_vectors(dt)
        facts.clustering = list(self._layout(table, dt).clustering.columns)  # type: ignore[attr-defined]
        bounds = _bounds(dt, facts.clustering, table.location) if facts.clustering else {}
        live: set[str] = set()
        for path, size, part, records in live_files(dt, table.location):
            full = norm_path(path)
            live.add(full)
            hidden = hidden_by_file.get(full, 0)
            facts.files.append(FileFact(size, part, records, hidden, bounds.get(full)))
            if full in hidden_by_file:
                facts.delete_files += 1
                facts.deleted_rows += hidden
        gone = [p for p in removed if p not in live]
        sizes = file_sizes(gone)  # files expiry already deleted are not counted
        facts.old_version_files, facts.old_version_bytes = len(sizes), sum(sizes.values())
        return facts
