"""A running ingest: stop it, wait for it, read its report."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from .. import errors
from ..engine import spark_errors
from ..errors import LakecatError
from .progress import progress_dict

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery

    from ..results import IngestResult
    from .pipeline import Pipeline
    from .state import BatchStats

log = logging.getLogger(__name__)


class IngestHandle:
    """A running ingest (``background=True``): stop it, wait for it, read its report."""

    def __init__(self, pipeline: Pipeline, query: StreamingQuery) -> None:
        self._pipeline = pipeline
        self.query = query
        self._stopped_by: str | None = None
        self._restarts = 0
        self.lag: int | None = None  # Kafka: records on the broker not yet read (updated while run_ingest waits)
        # (port, at most seconds) once the run has ended and /metrics waits for a scrape of the final figures
        self.metrics_linger: tuple[int, float] | None = None

    @property
    def is_active(self) -> bool:
        if not self.query.isActive and self._stopped_by is None and self._restart_after_known_bug():
            return True
        return bool(self.query.isActive)

    def _restart_after_known_bug(self, text: str | None = None) -> bool:
        """Spark 4.1.1's Kafka source fails the first trigger after a restart that replays an uncommitted
        batch: its progress metrics hit a null (SPARK-55271) *after* the batch and its commit-log entry are
        written. The checkpoint is consistent, so starting the query again simply continues."""
        if text is None:
            exc = self.query.exception()
            text = str(exc) if exc is not None else ""
        if not ("IterableOps.map" in text and "Option.get()" in text) or self._restarts >= 3:
            return False
        self._restarts += 1
        log.info("restarting the ingest query after SPARK-55271 (restart %d)", self._restarts)
        self.query = self._pipeline.start()
        return True

    def stop(self, *, timeout: float = 600.0, reason: str = "stopped") -> IngestResult:
        """Stop after the batch in flight has committed (never in the middle of a write)."""
        self._stopped_by = reason
        deadline = time.monotonic() + timeout
        while self.query.isActive and self._pipeline.batch_active(self.query) and time.monotonic() < deadline:
            time.sleep(0.1)
        with contextlib.suppress(Exception):
            self.query.stop()
        report = self.report()
        self._pipeline.close()
        return report

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait until the query ends (available-now: drained); True if it has ended. Raises its error."""
        try:
            ended = self.query.awaitTermination(timeout) if timeout is not None else self.query.awaitTermination()  # type: ignore[arg-type]  # pyspark's stub says int; seconds as float work
        except Exception as e:  # noqa: BLE001 - translated below
            if self._restart_after_known_bug(str(e)):
                return False
            own = _own_error(str(e))
            if own is not None:
                raise own from None
            with spark_errors("ingest into", self._pipeline.table.entry.ident):
                raise
        return ended is None or bool(ended)

    def progress(self) -> dict[str, Any] | None:
        last = self.query.lastProgress
        return progress_dict(last) if last is not None else None

    def report(self) -> IngestResult:
        self._pipeline.collect()
        r = self._pipeline.state.snapshot()
        r.peak_rss_bytes = self._pipeline.rss.sample()
        if self._stopped_by:
            r.stopped_by = self._stopped_by
        elif self.query.isActive:
            r.stopped_by = "running"
        return r

    def batches(self, *, collect: bool = True) -> dict[int, BatchStats]:
        """The counters of the batches finished so far, by batch id (``collect``: with the reports of batches written
        in an engine read first)."""
        if collect:
            self._pipeline.collect()
        state = self._pipeline.state
        with state.lock:
            return dict(state.batches)

    def close(self) -> None:
        """Read what is left to read and remove the run's scratch files (the stream has ended)."""
        self._pipeline.close()


def _own_error(text: str) -> LakecatError | None:
    """A lakecat error raised inside foreachBatch reaches the caller wrapped by Spark: unwrap it."""
    for cls in ("InvalidArgumentError", "CommitConflictError", "TableNotFoundError", "LakecatError"):
        tag = f"lakecat.errors.{cls}: "
        if tag in text:
            return getattr(errors, cls)(text.split(tag, 1)[1].split("\n", 1)[0].strip())  # type: ignore[no-any-return]
    return None
