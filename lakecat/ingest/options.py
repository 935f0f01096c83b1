"""The ingest options: one frozen, keyword-only object shared by the CLI, the Python API and the pipeline."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..cdc import check_cdc
from ..errors import InvalidArgumentError, invalid
from ..evolution import validate_ref_name
from ..identifiers import TableIdent, parse_columns
from ..sources import StreamOptions
from ..units import parse_duration, parse_size
from .bounds import BatchBound

UNKNOWN_MODES = ("sample", "all", "off")
#: How long a finished ingest keeps ``/metrics`` up at most, waiting for a scrape: two of Prometheus's usual 15s
#: scrape intervals.
DEFAULT_METRICS_LINGER = "30s"
#: How long at most a staged dead letter waits for its commit while a stream runs (``dead_letter_every``).
DEFAULT_DEAD_LETTER_EVERY = "60s"


@dataclass(frozen=True)
class Trigger:
    """When the stream runs a micro-batch: drain what exists and stop, or every ``interval_s`` seconds."""

    available_now: bool
    interval_s: int = 0

    @classmethod
    def parse(cls, text: str) -> Trigger:
        """``available-now`` (drain what exists, then stop) or ``every <duration>`` (``every 10s``)."""
        raw = str(text).strip().lower()
        if raw in ("available-now", "availablenow", "available_now"):
            return cls(True)
        if raw.startswith("every "):
            try:
                secs = int(parse_duration(raw[len("every ") :]).total_seconds())
            except InvalidArgumentError:
                secs = 0
            if secs > 0:
                return cls(False, secs)
        raise InvalidArgumentError(f"invalid trigger {text!r}: use available-now or e.g. 'every 10s'")

    def __str__(self) -> str:
        return "available-now" if self.available_now else f"every {self.interval_s}s"


@dataclass(frozen=True, kw_only=True)
class IngestOptions:
    """How an ingest runs; every check that needs neither the table nor the source happens here, at construction.

    Attributes:
        trigger: ``available-now`` (drain and return) or ``every <duration>`` (runs until stopped).
        checkpoint: the stream's checkpoint (default: one per table and source under the warehouse).
        dlq: the dead-letter table (a name, True for ``<table>_dlq``, False or None to fail on bad records).
        merge_schema: add new top-level JSON fields as columns.
        dedupe_key: drop records whose key was seen within ``watermark`` (by ``event_time``).
        watermark: how long to remember keys, e.g. ``1h`` (only with ``dedupe_key``).
        event_time: the TIMESTAMP or TIMESTAMP_NTZ column the watermark follows (default: the first such column).
        max_records_per_batch: Kafka records per micro-batch (default: sized from the driver's heap, see
            ``lakecat.ingest.bounds``).
        max_files_per_batch: landed files per micro-batch (instead of the default byte bound).
        max_bytes_per_batch: landed files' bytes per micro-batch, a count or a size such as ``64MB`` (default: sized
            from the driver's heap); a batch holds at least one file.
        metrics_file: append one JSON line per batch.
        metrics_port: serve Prometheus ``/metrics`` on this port while the ingest runs (not in the background).
        metrics_linger: with ``metrics_port``, how long at most to keep serving once the run has ended, until a scrape
            has read the final figures: a duration (``30s``, the default) or seconds; 0 returns at once.
        count_unknown_fields: check records for fields the table lacks: ``sample`` (1 in 16), ``all``, ``off``
            (True and False mean ``all`` and ``off``).
        cdc: ``"debezium"`` with ``key`` applies Debezium change events with MERGE (upserts and deletes, the last
            event per key per batch, exactly once).
        key: with ``cdc``, the column(s) identifying a row.
        branch: write to this branch of the table (Iceberg's write-audit-publish); the dead letters go to the
            dead-letter table's main line.
        dead_letter_every: how long at most a batch's dead letters stay staged beside the checkpoint before they
            are committed to the dead-letter table, while the stream runs: a duration (``60s``, the default) or
            seconds. Shorter: dead letters show sooner, at the price of more small commits (and files) in the
            dead-letter table; longer: fewer commits, dead letters seen later. Every run commits what it staged when it
            ends; a Spark Connect engine's batches commit their own at once.

    Example:
        >>> cat.ingest("sales.orders", source, options=IngestOptions(trigger="every 10s", dedupe_key="id",
        ...                                                           watermark="1h"), background=True)
    """

    trigger: str = "available-now"
    checkpoint: str | None = None
    dlq: str | bool | None = True
    merge_schema: bool = False
    dedupe_key: str | list[str] | None = None
    watermark: str | None = None
    event_time: str | None = None
    max_records_per_batch: int | None = None
    max_files_per_batch: int | None = None
    max_bytes_per_batch: int | str | None = None
    metrics_file: str | Path | None = None
    metrics_port: int | None = None
    metrics_linger: str | float | timedelta | None = None
    count_unknown_fields: bool | str = "sample"
    cdc: str | None = None
    key: str | list[str] | None = None
    branch: str | None = None
    dead_letter_every: str | float | timedelta | None = None

    def __post_init__(self) -> None:
        Trigger.parse(self.trigger)
        if self.dedupe_key and not self.watermark:
            raise InvalidArgumentError("dedupe_key= needs watermark= (how long to remember keys, e.g. '1h')")
        if self.watermark and not self.dedupe_key:
            raise InvalidArgumentError("watermark= only applies with dedupe_key=")
        if self.event_time and not self.dedupe_key:
            raise InvalidArgumentError("event_time= applies with dedupe_key= and watermark= (the column the "
                                       "watermark follows)")  # fmt: skip
        self.dedupe_columns  # noqa: B018 - validates the names
        self.watermark_s  # noqa: B018 - validates the duration
        for n, what in ((self.max_records_per_batch, "max records per batch"),
                        (self.max_files_per_batch, "max files per batch")):  # fmt: skip
            if n is not None and int(n) < 1:
                raise InvalidArgumentError(f"{what} must be at least 1")
        if self.max_bytes_per_batch is not None:
            if self.max_files_per_batch is not None:
                raise InvalidArgumentError("give one of max_files_per_batch= and max_bytes_per_batch=")
            self.max_bytes  # noqa: B018 - validates the size
        if self.change_format is not None:
            if self.dedupe_key:
                raise InvalidArgumentError(CDC_ALONE)
        elif self.key:
            raise invalid(
                "key= applies to change events: pass cdc='debezium' (or use dedupe_key=)",
                "--key applies to change events: pass --cdc debezium (or use --dedupe-key)",
            )
        if self.metrics_linger is not None and self.metrics_port is None:
            raise InvalidArgumentError("metrics_linger= applies with metrics_port=")
        self.metrics_linger_s  # noqa: B018 - validates the duration
        if self.dead_letter_every is not None and self.dlq in (False, None):
            raise invalid(
                "dead_letter_every= applies with a dead-letter table, not with dlq=False",
                "--dead-letter-every applies with a dead-letter table, not with --no-dlq",
            )
        self.dead_letter_every_s  # noqa: B018 - validates the duration
        if self.unknown_mode not in UNKNOWN_MODES:
            raise InvalidArgumentError(f"unknown-fields check {self.count_unknown_fields!r}: use sample, all or off")
        if isinstance(self.dlq, str):
            TableIdent.parse(self.dlq)
        if self.branch is not None:
            validate_ref_name(self.branch, "branch")

    @classmethod
    def of(cls, options: IngestOptions | None = None, **kwargs: Any) -> IngestOptions:
        """``options`` (or the defaults) with ``kwargs`` set on top; an unknown keyword is an InvalidArgumentError."""
        unknown = sorted(set(kwargs) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise InvalidArgumentError(f"ingest has no option {', '.join(map(repr, unknown))}")
        if options is None:
            return cls(**kwargs)
        return dataclasses.replace(options, **kwargs) if kwargs else options

    @property
    def trigger_spec(self) -> Trigger:
        return Trigger.parse(self.trigger)

    @property
    def dedupe_columns(self) -> list[str] | None:
        return parse_columns(self.dedupe_key) if self.dedupe_key else None

    @property
    def watermark_s(self) -> int | None:
        return int(parse_duration(self.watermark).total_seconds()) if self.watermark else None

    @property
    def change_format(self) -> str | None:
        """The change-event format (``debezium``), None for plain events."""
        return check_cdc(self.cdc)

    @property
    def unknown_mode(self) -> str:
        """``count_unknown_fields`` as one of ``UNKNOWN_MODES``."""
        flag = self.count_unknown_fields
        return ("all" if flag else "off") if isinstance(flag, bool) else flag

    @property
    def max_bytes(self) -> int | None:
        """``max_bytes_per_batch`` in bytes."""
        return None if self.max_bytes_per_batch is None else parse_size(self.max_bytes_per_batch)

    @property
    def metrics_linger_s(self) -> float:
        """``metrics_linger`` in seconds (``DEFAULT_METRICS_LINGER`` when unset)."""
        value = DEFAULT_METRICS_LINGER if self.metrics_linger is None else self.metrics_linger
        if isinstance(value, bool):
            raise InvalidArgumentError(f"metrics_linger={value!r}: use a duration such as '30s', or 0")
        if isinstance(value, (int, float)):
            seconds = float(value)
        else:
            seconds = 0.0 if str(value).strip() == "0" else parse_duration(value).total_seconds()
        if seconds < 0:
            raise InvalidArgumentError(f"metrics_linger={value!r}: must not be negative")
        return seconds

    @property
    def dead_letter_every_s(self) -> float:
        """``dead_letter_every`` in seconds (``DEFAULT_DEAD_LETTER_EVERY`` when unset)."""
        value = DEFAULT_DEAD_LETTER_EVERY if self.dead_letter_every is None else self.dead_letter_every
        seconds: float | None = None
        if isinstance(value, timedelta):
            seconds = value.total_seconds()
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = float(value)
        elif isinstance(value, str):
            with contextlib.suppress(InvalidArgumentError):
                seconds = parse_duration(value.strip()).total_seconds()
        if seconds is None or not seconds > 0:
            raise InvalidArgumentError(f"dead_letter_every={value!r}: use a positive duration such as '30s'")
        return seconds

    @property
    def metrics_path(self) -> Path | None:
        return Path(self.metrics_file).expanduser() if self.metrics_file else None


@dataclass(frozen=True, kw_only=True)
class StreamSettings:
    """The options resolved against one table and source: what the batches run by, in process or in an engine."""

    options: IngestOptions
    checkpoint: str  # a URI
    unknown_mode: str  # one of UNKNOWN_MODES
    event_time: str | None = None  # the dedupe's event-time column ("_lakecat_ts": the record's arrival)
    cdc_key: list[str] | None = None
    with_metadata: bool = False
    bound: BatchBound = BatchBound()  # what each micro-batch may read (``bounds.batch_bound``)

    @property
    def stream(self) -> StreamOptions:
        return self.bound.stream

    @property
    def app_id(self) -> str:
        """The stream's id in the tables' exactly-once bookkeeping: one per checkpoint, so a restart resumes it."""
        return "lakecat-" + hashlib.sha256(self.checkpoint.encode()).hexdigest()[:16]


CDC_ALONE = ("cdc= applies change events by their key; it does not combine with dedupe_key= or "
             "with_kafka_metadata=True")  # fmt: skip
