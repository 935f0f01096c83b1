"""An ingest's figures while it runs: one JSON line per batch (``--metrics-file``) and Prometheus ``/metrics``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .progress import progress_key, progress_since

if TYPE_CHECKING:
    from ..metrics import IngestExporter
    from ..sources import Source
    from .handle import IngestHandle
    from .state import BatchStats

LAG_EVERY_S = 2.0  # how often the source's backlog is asked for (a Kafka round trip)


def metrics_line(bid: int, p: dict[str, Any], s: BatchStats, lag: int | None) -> dict[str, Any]:
    """The ``--metrics-file`` line of batch ``bid``: Spark's progress ``p`` and lakecat's counters ``s``."""
    return {"batch_id": bid, "timestamp": p.get("timestamp"),
            "input_rows": p.get("numInputRows") if s.rows_read is None else s.rows_read,
            "rows_written": s.rows_written, "rows_dead_lettered": s.rows_dead_lettered,
            "dead_lettered_by_reason": dict(s.dead_letter_reasons or {}),
            "unknown_fields": s.unknown_fields, "unknown_fields_checked": s.unknown_checked, "skipped": s.skipped,
            "batch_duration_s": s.duration_s, "trigger_duration_ms": (p.get("durationMs") or {}).get("triggerExecution"),
            "rows_per_s": p.get("processedRowsPerSecond"), "lag": lag}  # fmt: skip


class MetricsWriter:
    """Reports each finished batch once: to ``--metrics-file``, to the Prometheus exporter, to the caller."""

    def __init__(
        self, handle: IngestHandle, path: Path | None, source: Source, exporter: IngestExporter | None = None
    ) -> None:
        self.handle = handle
        self.path = path
        self.source = source
        self.exporter = exporter
        self.seen: set[int] = set()
        self.mark: tuple[str, int] = ("", -1)  # progresses up to here are all written (or need not be)
        self.lag: int | None = None
        self.lag_by_partition: dict[tuple[str, int], int] | None = None
        self._lag_at = 0.0

    def poll(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The latest progress, and the progresses of batches finished since the last poll."""
        new: list[dict[str, Any]] = []
        finished = self.handle.batches()
        if self.exporter is not None:  # every finished batch, even when the query is gone
            self.exporter.observe(finished, self.lag_by_partition)
        try:
            recent = progress_since(self.handle.query, self.mark)
        except Exception:  # noqa: BLE001 - the query is gone; nothing more to report
            return None, new
        last = recent[-1] if recent else None
        if last and time.monotonic() - self._lag_at > LAG_EVERY_S:
            self._lag_at = time.monotonic()
            self.lag_by_partition = self.source.backlog_by_partition(last)
            by_partition = self.lag_by_partition
            self.lag = sum(by_partition.values()) if by_partition is not None else self.source.backlog(last)
        batches = self.handle.batches(collect=False)  # with those that finished while the progresses were read
        waiting = False  # a batch whose counters are not recorded yet: the mark stays before it, to be read again
        for p in recent:
            bid = p.get("batchId")
            fresh = bid is not None and bid not in self.seen and bool(p.get("numInputRows"))  # a batch to report once
            waiting = waiting or (fresh and bid not in batches)
            if not waiting:
                self.mark = max(self.mark, progress_key(p))
            if not fresh or bid not in batches:
                continue
            self.seen.add(bid)
            new.append(p)
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a") as fh:
                    fh.write(json.dumps(metrics_line(bid, p, batches[bid], self.lag)) + "\n")
        return last, new
