"""`lakecat ingest`: stream Kafka (or landed files) into a table of either format, exactly once."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Annotated, Any

import typer
from rich.console import Console

from lakecat import FileSource, IngestOptions, KafkaSource, Source
from lakecat.errors import InvalidArgumentError
from lakecat.results import IngestResult
from lakecat.units import plural

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect, parse_properties
from ._output import Output, run
from ._render import human_duration, thousands

NameArg = Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table to write to.")]
KafkaOpt = Annotated[str | None, typer.Option("--kafka", help="Kafka bootstrap servers, e.g. localhost:9092.")]
TopicOpt = Annotated[str | None, typer.Option("--topic", help="Topic to read (several: comma-separated).")]
TopicPatternOpt = Annotated[
    str | None, typer.Option("--topic-pattern", help="Read every topic whose name matches this Java regex.")
]
FilesOpt = Annotated[str | None, typer.Option("--files", help="Directory of landed files to read (new files only).")]
FileFormatOpt = Annotated[
    str | None,
    typer.Option("--file-format", help="With --files: json (one object per line, the default), csv or parquet."),
]
TriggerOpt = Annotated[
    str,
    typer.Option("--trigger", help="available-now (drain what exists, then exit) or 'every 10s' (run until stopped)."),
]
CheckpointOpt = Annotated[
    str | None,
    typer.Option(
        "--checkpoint", help="Checkpoint directory (default: <warehouse>/_lakecat/checkpoints/<table>/<source>)."
    ),
]
StartingOffsetsOpt = Annotated[
    str | None,
    typer.Option(
        "--starting-offsets", help="With --kafka: earliest (the default) or latest; used when the checkpoint is new."
    ),
]
DlqOpt = Annotated[
    str | None, typer.Option("--dlq", help="Dead-letter table (default <table>_dlq, created when missing).")
]
NoDlqOpt = Annotated[bool, typer.Option("--no-dlq", help="Fail on the first bad record instead of dead-lettering.")]
MergeSchemaOpt = Annotated[
    bool, typer.Option("--merge-schema", help="Add new fields of the events as new columns (else: ignored, counted).")
]
DedupeKeyOpt = Annotated[
    str | None, typer.Option("--dedupe-key", help="Drop events whose key columns were seen within --watermark.")
]
WatermarkOpt = Annotated[str | None, typer.Option("--watermark", help="How long to remember keys, e.g. 1h.")]
EventTimeOpt = Annotated[
    str | None,
    typer.Option(
        "--event-time",
        help="Event-time column for --watermark: a TIMESTAMP or TIMESTAMP_NTZ column, NTZ read as UTC (default: the first such column).",
    ),
]
MaxRecordsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-records-per-batch",
        help="Kafka: at most N records per micro-batch (default: sized from the driver's memory, at most 100000).",
    ),
]
MaxFilesOpt = Annotated[
    int | None,
    typer.Option("--max-files-per-batch", help="Files: at most N files per micro-batch (instead of a byte bound)."),
]
MaxBytesOpt = Annotated[
    str | None,
    typer.Option(
        "--max-bytes-per-batch",
        help="Files: about this many bytes per micro-batch, e.g. 64MB (default: sized from the driver's memory).",
    ),
]
KafkaMetadataOpt = Annotated[
    bool,
    typer.Option(
        "--with-kafka-metadata", help="Fill _kafka_key/_kafka_topic/_kafka_partition/_kafka_offset/_kafka_timestamp."
    ),
]
KafkaSettingOpt = Annotated[
    list[str] | None, typer.Option("--kafka-option", help="Extra Kafka client setting key=value (repeatable).")
]
MetricsFileOpt = Annotated[str | None, typer.Option("--metrics-file", help="Append one JSON line per batch here.")]
MetricsPortOpt = Annotated[
    int | None,
    typer.Option("--metrics-port", help="Serve Prometheus /metrics on this port for the life of the stream."),
]
MetricsLingerOpt = Annotated[
    str | None,
    typer.Option(
        "--metrics-linger",
        help="With --metrics-port: once the run has ended, keep serving /metrics until a scrape has read the final "
        "figures, at most this long (default 30s; 0: exit at once).",
    ),
]
DeadLetterEveryOpt = Annotated[
    str | None,
    typer.Option(
        "--dead-letter-every",
        help="How long at most dead letters stay staged before they are committed to the dead-letter table while the "
        "stream runs (default 60s; shorter: seen sooner, more small commits).",
    ),
]
CdcOpt = Annotated[
    str | None, typer.Option("--cdc", help="Events are change events: debezium (applied with MERGE by --key).")
]
KeyOpt = Annotated[str | None, typer.Option("--key", help="With --cdc: the column(s) identifying a row, e.g. id.")]
BranchOpt = Annotated[
    str | None,
    typer.Option(
        "--branch", help="Write to this branch (Iceberg write-audit-publish; see `lakecat branch` / `lakecat publish`)."
    ),
]
UnknownFieldsOpt = Annotated[
    str,
    typer.Option(
        "--unknown-fields", help="Check events for fields the table lacks: sample (1 record in 16), all, or off."
    ),
]


def ingest(
    name: NameArg,
    kafka: KafkaOpt = None,
    topic: TopicOpt = None,
    topic_pattern: TopicPatternOpt = None,
    files: FilesOpt = None,
    file_format: FileFormatOpt = None,
    trigger: TriggerOpt = "available-now",
    checkpoint: CheckpointOpt = None,
    starting_offsets: StartingOffsetsOpt = None,
    dlq: DlqOpt = None,
    no_dlq: NoDlqOpt = False,
    merge_schema: MergeSchemaOpt = False,
    dedupe_key: DedupeKeyOpt = None,
    watermark: WatermarkOpt = None,
    event_time: EventTimeOpt = None,
    max_records_per_batch: MaxRecordsOpt = None,
    max_files_per_batch: MaxFilesOpt = None,
    max_bytes_per_batch: MaxBytesOpt = None,
    with_kafka_metadata: KafkaMetadataOpt = False,
    kafka_option: KafkaSettingOpt = None,
    metrics_file: MetricsFileOpt = None,
    metrics_port: MetricsPortOpt = None,
    metrics_linger: MetricsLingerOpt = None,
    dead_letter_every: DeadLetterEveryOpt = None,
    cdc: CdcOpt = None,
    key: KeyOpt = None,
    branch: BranchOpt = None,
    unknown_fields: UnknownFieldsOpt = "sample",
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Stream Kafka (or landed files) into an Iceberg or Delta table, exactly once, with a dead-letter table.

    Example: lakecat ingest sales.orders --kafka localhost:9092 --topic orders --trigger available-now

    Change data capture: lakecat ingest crm.accounts --kafka localhost:9092 --topic db.public.accounts --cdc debezium --key id
    """
    out = Output(json_, verbose)
    stop = threading.Event()

    def api() -> IngestResult:
        if (kafka is None) == (files is None):
            raise InvalidArgumentError("give either --kafka BOOTSTRAP with --topic, or --files DIR")
        if no_dlq and dlq:
            raise InvalidArgumentError("--dlq and --no-dlq exclude each other")
        source = _source(kafka, topic, topic_pattern, files, file_format, starting_offsets, with_kafka_metadata,
                         kafka_option)  # fmt: skip
        options = IngestOptions(
            trigger=trigger, checkpoint=checkpoint, dlq=False if no_dlq else (dlq or True), merge_schema=merge_schema,
            dedupe_key=dedupe_key, watermark=watermark, event_time=event_time,
            max_records_per_batch=max_records_per_batch, max_files_per_batch=max_files_per_batch,
            max_bytes_per_batch=max_bytes_per_batch,
            metrics_file=metrics_file, metrics_port=metrics_port, metrics_linger=metrics_linger,
            count_unknown_fields=unknown_fields, cdc=cdc, key=key, branch=branch, dead_letter_every=dead_letter_every,
        )  # fmt: skip
        cat = connect(catalog)
        display = _Display(out)
        try:
            with _signals(stop):
                result: IngestResult = cat.ingest(name, source, options=options, on_progress=display.update,
                                                  stop_event=stop)  # fmt: skip
                return result
        finally:
            display.close()

    run(out, api, _human)


def _source(kafka: str | None, topic: str | None, topic_pattern: str | None, files: str | None,
            file_format: str | None, starting_offsets: str | None, with_kafka_metadata: bool,
            kafka_option: list[str] | None) -> Source:  # fmt: skip
    """The source the flags describe: Kafka or landed files (each refuses the other's options)."""
    if kafka is not None:
        if not topic and not topic_pattern:
            raise InvalidArgumentError("--kafka needs --topic or --topic-pattern")
        if file_format is not None:
            raise InvalidArgumentError("--file-format applies to --files; Kafka records are JSON")
        return KafkaSource(kafka, topic or None, topic_pattern or None, starting_offsets=starting_offsets or "earliest",
                           with_metadata=with_kafka_metadata, options=parse_properties(kafka_option))  # fmt: skip
    if topic or topic_pattern or with_kafka_metadata or starting_offsets is not None or kafka_option:
        raise InvalidArgumentError("--topic, --topic-pattern, --starting-offsets, --kafka-option and "
                                   "--with-kafka-metadata need --kafka")  # fmt: skip
    return FileSource(files or "", format=file_format or "json")


def _human(console: Console, r: IngestResult) -> None:
    what = plural(r.rows_written, "change event") + " applied" if r.cdc else plural(r.rows_written, "row") + " written"
    console.print(
        f"{what} to {r.table}"
        + (f" branch {r.branch}" if r.branch else "")
        + f" ({r.format}), {thousands(r.rows_dead_lettered)} dead-lettered"
        + (f" to {r.dlq_table}" if r.dlq_table else "")
        + f", {plural(r.batches, 'batch', 'batches')} in {human_duration(r.duration_s)}"
        + (f" ({r.batches_skipped} already committed)" if r.batches_skipped else "")
    )
    if r.unknown_fields:
        checked = (
            f" of {thousands(r.unknown_fields_checked)} checked" if r.unknown_fields_checked < r.rows_written else ""
        )
        console.print(f"{plural(r.unknown_fields, 'record')}{checked} had fields the table lacks (ignored): "
                      f"{', '.join(r.unknown_field_names)}")  # fmt: skip
    if r.added_columns:
        console.print(f"columns added: {', '.join(r.added_columns)}")
    if r.stopped_by not in ("drained",):
        console.print(f"stopped: {r.stopped_by}")


def _rate(rows_per_s: float) -> str:
    """``, 1,234 rows/s``, or nothing when Spark's figure would round to 0 (an empty batch, or one too quick to time)."""
    return f", {rows_per_s:,.0f} rows/s" if rows_per_s >= 0.5 else ""


class _signals:
    """SIGINT / SIGTERM ask the stream to stop after the batch in flight; a second one exits at once (128 + signal)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.saved: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:  # noqa: ARG002
        if self.stop.is_set():  # safe: a restart replays the batch in flight exactly once
            os._exit(128 + signum)
        self.stop.set()

    def __enter__(self) -> _signals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self.saved.items():
            signal.signal(sig, old)


class _Display:
    """Progress on stderr: a live line on a terminal, one plain line per batch otherwise (never in --json)."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self.live: Any = None
        self.last_batch: int | None = None
        self.enabled = not out.json
        self.started = time.monotonic()

    def update(self, handle: Any, progress: dict[str, Any] | None) -> None:
        if not self.enabled:
            return
        linger = getattr(handle, "metrics_linger", None)
        if linger is not None:  # the run has ended; the result follows once /metrics has been scraped
            self.close()
            port, seconds = linger
            self.out.err.print(f"serving final metrics on :{port} until scraped (at most {seconds:g}s)",
                               markup=False, highlight=False)  # fmt: skip
            return
        r = handle.report()
        lag = handle.lag if hasattr(handle, "lag") else None
        rate = (progress or {}).get("processedRowsPerSecond") or 0.0
        batch_ms = ((progress or {}).get("durationMs") or {}).get("triggerExecution")
        text = (
            f"{r.table}: {plural(r.rows_written, 'row')}, {thousands(r.rows_dead_lettered)} dead-lettered, "
            f"{plural(r.batches, 'batch', 'batches')}" + _rate(rate) + (f", batch {batch_ms / 1000:.1f}s" if batch_ms else "")
            + (f", lag {lag}" if lag is not None else "")
        )  # fmt: skip
        if self.out.err.is_terminal:
            if self.live is None:
                from rich.live import Live

                self.live = Live(text, console=self.out.err, refresh_per_second=4, transient=True)
                self.live.start()
            self.live.update(text)
        elif progress and progress.get("batchId") != self.last_batch and progress.get("numInputRows"):
            self.last_batch = progress.get("batchId")
            self.out.err.print(text, markup=False, highlight=False)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
