"""Starting an ingest: every check before anything starts, then the stream; and running one until it ends."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cdc import check_key, check_key_names, ensure_key
from ..errors import InvalidArgumentError, columns_note
from ..identifiers import TableIdent
from ..metrics import IngestExporter
from ..records import input_fields, type_ddl
from ..results import IngestResult
from ..sources import Source
from ..units import iso
from .bounds import batch_bound, driver_heap
from .checkpoint import default_checkpoint
from .dead_letters import dead_letter_table
from .handle import IngestHandle
from .metrics import MetricsWriter
from .options import CDC_ALONE, IngestOptions, StreamSettings
from .pipeline import Pipeline
from .target import add_columns

if TYPE_CHECKING:
    from pyspark.sql.types import StructField

    from ..protocols import CatalogLike, TableLike

log = logging.getLogger(__name__)

#: Called with ``(handle, progress)`` for every finished batch (and with the latest progress between batches); with
#: ``metrics_port``, once more with ``(handle, None)`` and ``handle.metrics_linger`` set when ``/metrics`` waits for its
#: last scrape after the run.
ProgressCallback = Callable[[IngestHandle, dict[str, Any] | None], None]


def _check_source(options: IngestOptions, source: Source) -> None:
    """The options a source cannot serve: change events and schema evolution need JSON records."""
    if options.change_format is not None:
        if source.with_metadata:
            raise InvalidArgumentError(CDC_ALONE)
        if not source.parses_json:
            raise InvalidArgumentError("cdc= reads Debezium JSON events: from Kafka or json files")
    for name, value, limit in (("max_records_per_batch", options.max_records_per_batch, "records"),
                               ("max_files_per_batch", options.max_files_per_batch, "files"),
                               ("max_bytes_per_batch", options.max_bytes_per_batch, "bytes")):  # fmt: skip
        if value is not None and limit not in source.batch_limits:
            raise InvalidArgumentError(f"{name}= does not apply to {source.describe()}: its batches are bounded by "
                                       + (" or ".join(source.batch_limits) or "nothing"))  # fmt: skip
    if options.merge_schema and not source.parses_json:
        raise InvalidArgumentError(
            "merge_schema=True applies to JSON events (Kafka or json files), not to csv/parquet files"
        )


def _unknown_mode(options: IngestOptions, source: Source) -> str:
    if options.change_format is not None:
        return "off"
    if options.merge_schema:
        return "all"  # evolving needs every new name
    return options.unknown_mode if source.parses_json else "off"  # typed rows have no extra fields


def _dlq_name(dlq: str | bool | None, ident: TableIdent) -> str | None:
    if dlq is False or dlq is None:
        return None
    if dlq is True:
        return str(TableIdent(ident.namespace, f"{ident.name}_dlq"))
    name = str(TableIdent.parse(str(dlq)))
    if name == str(ident):
        raise InvalidArgumentError("the dead-letter table must not be the table itself")
    return name


def _checkpoint(catalog: CatalogLike, ident: TableIdent, source: Source, options: IngestOptions) -> str:
    """The checkpoint as a URI (a local path made absolute)."""
    ckpt = options.checkpoint or default_checkpoint(catalog.config, ident, source, options.branch)
    return ckpt if "://" in ckpt else Path(ckpt).expanduser().resolve().as_uri()


def _lacks_metadata(ident: TableIdent, missing: list[tuple[str, str]]) -> str:
    return (f"with_kafka_metadata=True: table {ident} lacks the column(s) {', '.join(n for n, _ in missing)}; add them ("
            + ", ".join(f"{n} {t}" for n, t in missing) + ") or pass merge_schema=True")  # fmt: skip


def _fields(table: TableLike, source: Source, options: IngestOptions) -> list[StructField]:
    """The columns events fill; with the source's metadata, its columns are added first when ``merge_schema``."""
    schema = table.spark_schema()
    fields = input_fields(schema, table.adapter.generated_columns(table))
    if not source.with_metadata:
        return fields
    names = {f.name for f in schema.fields}
    missing = [(n, t) for n, t in source.metadata_columns.items() if n not in names]
    if missing and not options.merge_schema:
        raise InvalidArgumentError(_lacks_metadata(table.entry.ident, missing))
    add_columns(table, missing)
    return [f for f in table.writable_fields() if f.name not in source.metadata_columns]


def _check_columns(table: TableLike, source: Source, options: IngestOptions) -> None:
    """--dedupe-key, --event-time and --key against the table's metadata, before a JVM starts (``_event_time`` and
    ``_change_key`` check the types on the Spark schema after)."""
    ident = table.entry.ident
    types = {c.name: c.type for c in table.describe().schema if not c.generated}
    columns = list(types)
    missing = [(n, t) for n, t in source.metadata_columns.items() if n not in columns] if source.with_metadata else []
    if missing and not options.merge_schema:
        raise InvalidArgumentError(_lacks_metadata(ident, missing))
    names = [n for n in columns if not (source.with_metadata and n in source.metadata_columns)]
    if options.dedupe_columns:
        unknown = [k for k in options.dedupe_columns if k not in names]
        if unknown:
            raise InvalidArgumentError(f"dedupe_key=: table {ident} has no column {', '.join(unknown)}"
                                       f"{columns_note(names)}")  # fmt: skip
        if options.event_time is not None and options.event_time not in names:
            raise InvalidArgumentError(f"event_time=: table {ident} has no column {options.event_time}"
                                       f"{columns_note(names)}")  # fmt: skip
        if options.event_time is not None and not types[options.event_time].upper().startswith("TIMESTAMP"):
            raise InvalidArgumentError(f"event_time=: column {options.event_time} of table {ident} is "
                                       f"{types[options.event_time]}, not a timestamp")  # fmt: skip
    if options.change_format is not None:
        check_key_names(options.key, names, str(ident))


def _event_time(fields: list[StructField], options: IngestOptions, ident: TableIdent) -> str | None:
    """The dedupe's event-time column, checked against the table ("_lakecat_ts" when the table has none)."""
    from pyspark.sql import types as T

    keys = options.dedupe_columns
    if not keys:
        return None
    unknown = [k for k in keys if k not in {f.name for f in fields}]
    if unknown:
        raise InvalidArgumentError(f"dedupe_key=: table {ident} has no column {', '.join(unknown)}"
                                   f"{columns_note(f.name for f in fields)}")  # fmt: skip
    ts = [f.name for f in fields if isinstance(f.dataType, (T.TimestampType, T.TimestampNTZType))]
    if options.event_time is None:
        return ts[0] if ts else "_lakecat_ts"
    if options.event_time not in ts:
        found = next((f for f in fields if f.name == options.event_time), None)
        if found is None:
            raise InvalidArgumentError(f"event_time=: table {ident} has no column {options.event_time}"
                                       f"{columns_note(f.name for f in fields)}")  # fmt: skip
        raise InvalidArgumentError(f"event_time=: column {options.event_time} of table {ident} is "
                                   f"{type_ddl(found.dataType)}, not a timestamp")  # fmt: skip
    return options.event_time


def _change_key(table: TableLike, fields: list[StructField], options: IngestOptions) -> list[str] | None:
    """With change events: the key, checked and recorded on the table."""
    if options.change_format is None:
        return None
    ident = table.entry.ident
    keys = check_key(options.key, fields, str(ident))
    for note in ensure_key(table, keys):
        log.warning("%s: %s", ident, note)
    return keys


def start_ingest(catalog: CatalogLike, table: str | TableIdent, source: Source, options: IngestOptions | None = None,
                 **kwargs: Any) -> IngestHandle:  # fmt: skip
    """Validate everything, then start the stream; returns at once with a handle (see ``Catalog.ingest``).

    ``kwargs`` are ``IngestOptions`` fields, set on top of ``options``.
    """
    opts = IngestOptions.of(options, **kwargs)
    if not isinstance(source, Source):
        raise InvalidArgumentError("source must be a lakecat source, e.g. lakecat.KafkaSource or lakecat.FileSource")
    source.validate()
    tbl = catalog.load_table(table)  # TableNotFoundError before anything starts
    if opts.branch is not None:
        tbl = tbl.on_branch(opts.branch)  # exit 3 where the format has no branches; VersionNotFoundError if unknown
    ident = tbl.entry.ident
    _check_source(opts, source)
    dlq_name = _dlq_name(opts.dlq, ident)
    source.check_reachable()
    checkpoint = _checkpoint(catalog, ident, source, opts)
    cdc = opts.change_format
    tbl.adapter.require("merge" if cdc else "ingest", "ingest(cdc)" if cdc else "ingest")
    _check_columns(tbl, source, opts)
    spark = catalog.session()
    fields = _fields(tbl, source, opts)
    settings = StreamSettings(options=opts, checkpoint=checkpoint, unknown_mode=_unknown_mode(opts, source),
                              event_time=_event_time(fields, opts, ident), cdc_key=_change_key(tbl, fields, opts),
                              with_metadata=bool(source.with_metadata),
                              bound=batch_bound(source, driver_heap(spark), records=opts.max_records_per_batch,
                                                files=opts.max_files_per_batch, size=opts.max_bytes))  # fmt: skip
    source.check_types(spark, fields, str(ident))
    dlq = dead_letter_table(catalog, dlq_name, tbl) if dlq_name is not None else None
    report = IngestResult(table=str(ident), format=tbl.format, source=source.describe(), dlq_table=dlq_name,
                          checkpoint=checkpoint, trigger=str(opts.trigger_spec), started_at=iso(datetime.now(UTC)),
                          cdc=cdc, key=settings.cdc_key, branch=opts.branch,
                          batch_bound=settings.bound.as_dict())  # fmt: skip
    pipeline = Pipeline(catalog, tbl, source, settings, report, dlq, fields)
    pipeline.prefetch()
    return IngestHandle(pipeline, pipeline.start())


def run_ingest(catalog: CatalogLike, table: str | TableIdent, source: Source, options: IngestOptions | None = None, *,
               on_progress: ProgressCallback | None = None, stop_event: threading.Event | None = None,
               poll_s: float = 0.5, **kwargs: Any) -> IngestResult:  # fmt: skip
    """Start an ingest and wait for it: until drained (available-now) or until ``stop_event`` is set.

    With ``metrics_port``, Prometheus ``/metrics`` is served on that port for the life of the stream, and once it has
    ended until a scrape has read the final figures (at most ``metrics_linger``).
    """
    opts = IngestOptions.of(options, **kwargs)
    exporter = None
    if opts.metrics_port is not None:
        target = catalog.load_table(table)  # TableNotFoundError before the port is bound
        exporter = IngestExporter(target.name, target.format, int(opts.metrics_port))
    try:
        handle = start_ingest(catalog, table, source, opts)
        metrics = MetricsWriter(handle, opts.metrics_path, source, exporter)
        try:
            _wait(handle, metrics, on_progress, stop_event, poll_s)
        except KeyboardInterrupt:
            handle.stop(reason="interrupted")
        finally:
            _, new = metrics.poll()
            if on_progress is not None:
                for p in new:
                    on_progress(handle, p)
            source.close()
        report = handle.report()
        handle.close()
        report.lag = metrics.lag
        if exporter is not None:
            exporter.finish(handle.batches(collect=False), metrics.lag_by_partition)
            if report.stopped_by != "interrupted":
                _linger(exporter, opts.metrics_linger_s, handle, on_progress, stop_event)
    finally:
        if exporter is not None:
            exporter.close()
    return report


def _linger(exporter: IngestExporter, seconds: float, handle: IngestHandle, on_progress: ProgressCallback | None,
            stop_event: threading.Event | None) -> None:  # fmt: skip
    """Keep ``/metrics`` up until a scrape has read the final figures, at most ``seconds``; a stop ends it at once."""
    if seconds <= 0 or (stop_event is not None and stop_event.is_set()):
        return
    handle.metrics_linger = (exporter.port, seconds)
    if on_progress is not None:
        on_progress(handle, None)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C while lingering: return the report at once
        exporter.linger(seconds, stop_event)


def _wait(handle: IngestHandle, metrics: MetricsWriter, on_progress: ProgressCallback | None,
          stop_event: threading.Event | None, poll_s: float) -> None:  # fmt: skip
    """Poll the stream until it ends or ``stop_event`` is set, reporting every finished batch once."""
    while True:
        ended = handle.await_termination(poll_s)
        progress, new = metrics.poll()
        handle.lag = metrics.lag
        if on_progress is not None:
            pending: list[dict[str, Any] | None] = [*new] or [progress]
            for p in pending:  # every finished batch once, else the latest for a live refresh
                on_progress(handle, p)
        if ended:
            return
        if stop_event is not None and stop_event.is_set():
            handle.stop(reason="signal")
            return
