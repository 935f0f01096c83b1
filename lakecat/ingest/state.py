"""A batch's counters and the run's totals, shared between the batches' thread and the caller."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..results import IngestResult

#: ``IngestResult.dead_letter_path``: every batch's dead letters were collected by the job that wrote its good rows,
#: or some batch's were read by a second job
ONE_JOB, TWO_JOBS = "one job", "two jobs"


@dataclass
class BatchStats:
    batch_id: int
    rows_written: int = 0
    rows_dead_lettered: int = 0
    rows_read: int | None = None  # the batch's records, counted once (Spark's numInputRows counts every scan of it)
    unknown_fields: int = 0
    unknown_checked: int = 0
    skipped: bool = False
    duration_s: float = 0.0
    finished_at: float = 0.0
    commit_duration_s: float | None = None  # the write and commit to the table
    dead_letter_reasons: dict[str, int] = field(default_factory=dict)
    # the batch wrote dead letters: True when the job that wrote its good rows collected them, False when a second
    # job read the batch again for them
    letters_in_write: bool | None = None


class IngestState:
    """Counters shared between the foreachBatch thread and the caller."""

    def __init__(self, report: IngestResult) -> None:
        self.lock = threading.Lock()
        self.report = report
        self.batches: dict[int, BatchStats] = {}
        self.unknown_names: set[str] = set()
        self.started = time.monotonic()
        self.batch_active = False

    def record(self, stats: BatchStats, unknown_names: list[str]) -> None:
        with self.lock:
            self.batches[stats.batch_id] = stats
            r = self.report
            if stats.skipped:
                r.batches_skipped += 1
            else:
                r.batches += 1
                r.rows_written += stats.rows_written
                r.rows_dead_lettered += stats.rows_dead_lettered
                r.unknown_fields += stats.unknown_fields
                r.unknown_fields_checked += stats.unknown_checked
                if stats.letters_in_write is not None:
                    one = stats.letters_in_write and r.dead_letter_path in (None, ONE_JOB)
                    r.dead_letter_path = ONE_JOB if one else TWO_JOBS
                self.unknown_names.update(unknown_names)
                r.unknown_field_names = sorted(self.unknown_names)[:100]

    def add_columns(self, names: list[str]) -> None:
        """Columns the stream added to the table (merge schema), each reported once."""
        with self.lock:
            have = self.report.added_columns
            have.extend(c for c in names if c not in have)

    def snapshot(self) -> IngestResult:
        with self.lock:
            r = IngestResult(**{k: getattr(self.report, k) for k in self.report.__dataclass_fields__})
            r.unknown_field_names = list(r.unknown_field_names)
            r.added_columns = list(r.added_columns)
        r.duration_s = round(time.monotonic() - self.started, 3)
        return r
