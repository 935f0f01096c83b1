"""lakecat's markers in Iceberg snapshots: the stream (query) id and batch id of each commit, a merge's key."""

from __future__ import annotations

from typing import Any

MARKER_QUERY = "lakecat.query-id"
MARKER_BATCH = "lakecat.batch-id"
#: ``lakecat.marker.<app id>`` = the stream's last committed batch id, saved before expiry removes its snapshot
MARKER_PROPERTY_PREFIX = "lakecat.marker."
#: The key columns (comma-separated) of a MERGE lakecat committed (an upsert, a CDC batch): Iceberg calls that snapshot
#: an overwrite, so this says it was a merge, and by which key its deletes and inserts pair into updates
MERGE_KEY = "lakecat.merge-key"


def _head(meta: Any, branch: str | None) -> int | None:
    """The snapshot id at the head of ``branch`` (None: the main line)."""
    if branch is None:
        return meta.current_snapshot_id
    ref = (meta.refs or {}).get(branch)
    return ref.snapshot_id if ref is not None and str(getattr(ref, "snapshot_ref_type", "branch")) == "branch" else None


def stream_markers(meta: Any, branch: str | None = None) -> dict[str, int]:
    """{app id: its newest committed batch id} along the lineage of ``branch`` (default: the main line; newest
    first; batch ids only grow)."""
    by_id = {s.snapshot_id: s for s in meta.snapshots}
    head = _head(meta, branch)
    snapshot = by_id.get(head) if head is not None else None
    out: dict[str, int] = {}
    while snapshot is not None:
        props = snapshot.summary.additional_properties if snapshot.summary else {}
        app = props.get(MARKER_QUERY)
        if app is not None and app not in out:
            out[app] = int(props.get(MARKER_BATCH, -1))
        snapshot = by_id.get(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return out


def all_stream_markers(meta: Any) -> dict[str, int]:
    """{app id: its newest committed batch id} over the main line and every branch (a stream writes one of them)."""
    out = stream_markers(meta)
    for name, ref in (meta.refs or {}).items():
        if name != "main" and str(getattr(ref, "snapshot_ref_type", "")) == "branch":
            for app, batch in stream_markers(meta, name).items():
                out[app] = max(batch, out.get(app, -1))
    return out


def unpublished(meta: Any) -> dict[str, list[int]]:
    """{branch: its snapshots not on the main line, head first} for every branch other than main: the history a
    ``publish`` (fast-forward) still needs; expiring any of it cuts the branch off from main."""
    by_id = {s.snapshot_id: s for s in meta.snapshots}
    on_main: set[int] = set()
    sid = meta.current_snapshot_id
    while sid is not None and sid in by_id and sid not in on_main:
        on_main.add(sid)
        sid = by_id[sid].parent_snapshot_id
    out: dict[str, list[int]] = {}
    for name, ref in (meta.refs or {}).items():
        if name == "main" or str(getattr(ref, "snapshot_ref_type", "")) != "branch":
            continue
        lineage, sid = [], ref.snapshot_id
        while sid is not None and sid in by_id and sid not in on_main:
            lineage.append(sid)
            sid = by_id[sid].parent_snapshot_id
        if lineage:
            out[name] = lineage
    return out
