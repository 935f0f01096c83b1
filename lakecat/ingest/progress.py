"""A streaming query's progresses as plain dicts, read from the newest end."""

from __future__ import annotations

import json
from typing import Any


def progress_dict(p: Any) -> dict[str, Any]:
    """A streaming progress as a plain dict with its row count and rates. Through Spark Connect the server's progress
    JSON carries them per source only: they are summed here, as Spark sums them for the query."""
    d = dict(p)
    sources = d.get("sources") or []
    for key in ("numInputRows", "inputRowsPerSecond", "processedRowsPerSecond"):
        if d.get(key) is None and sources:
            d[key] = sum(s.get(key) or 0 for s in sources)
    return d


def progress_key(p: dict[str, Any]) -> tuple[str, int]:
    """A progress's place in its query's order: its trigger's start time, then its batch id (an idle trigger reports
    the id of the batch still to come)."""
    bid = p.get("batchId")
    return str(p.get("timestamp") or ""), int(bid) if bid is not None else -1


def progress_since(query: Any, mark: tuple[str, int]) -> list[dict[str, Any]]:
    """The query's retained progresses after ``mark`` (``progress_key``), oldest first, and always the latest one.

    Classic PySpark's ``recentProgress`` converts every retained progress (up to 100) with py4j calls and a JSON parse
    each, on every poll; here the retained array is walked from its newest end and only the progresses past ``mark``
    are converted. Through Spark Connect it is one call anyway."""
    jsq = getattr(query, "_jsq", None)
    if jsq is None:
        return [progress_dict(p) for p in query.recentProgress]
    from pyspark.sql.streaming.listener import StreamingQueryProgress

    arr = jsq.recentProgress()
    out: list[dict[str, Any]] = []
    for i in range(len(arr) - 1, -1, -1):
        jp = arr[i]
        old = (str(jp.timestamp()), int(jp.batchId())) <= mark
        if old and out:
            break
        out.append(progress_dict(StreamingQueryProgress.fromJson(json.loads(jp.json()))))
        if old:
            break
    return out[::-1]
