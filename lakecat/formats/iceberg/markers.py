"""lakecat's exactly-once markers in Iceberg snapshots: the stream (query) id and batch id of each commit."""

from __future__ import annotations

from typing import Any

MARKER_QUERY = "lakecat.query-id"
MARKER_BATCH = "lakecat.batch-id"
#: ``lakecat.marker.<app id>`` = the stream's last committed batch id, saved before expiry removes its snapshot
MARKER_PROPERTY_PREFIX = "lakecat.marker."


def stream_markers(meta: Any) -> dict[str, int]:
    """{app id: its newest committed batch id} along the current lineage (newest first; batch ids only grow)."""
    by_id = {s.snapshot_id: s for s in meta.snapshots}
    snapshot = by_id.get(meta.current_snapshot_id) if meta.current_snapshot_id is not None else None
    out: dict[str, int] = {}
    while snapshot is not None:
        props = snapshot.summary.additional_properties if snapshot.summary else {}
        app = props.get(MARKER_QUERY)
        if app is not None and app not in out:
            out[app] = int(props.get(MARKER_BATCH, -1))
        snapshot = by_id.get(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return out
