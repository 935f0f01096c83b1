"""Streaming ingest: Kafka (or landed files) into an Iceberg or Delta table, exactly once.

One pipeline for every source. Spark Structured Streaming reads the source; each record is parsed
against the table's schema and validated in the same projection; ``foreachBatch`` writes the good
rows to the table and the bad ones to a dead-letter table, each write idempotent per batch:

- Delta: the writer options ``txnAppId`` / ``txnVersion`` (the batch id) — Delta itself refuses a
  transaction version it has already committed for that application id;
- Iceberg: the snapshot properties ``lakecat.query-id`` / ``lakecat.batch-id``; a batch whose id is
  already in the table's snapshot history for this query is skipped.

The application / query id is derived from the checkpoint location, so a restart with the same
checkpoint (the default: one per table and source) resumes where the last committed batch ended and
rewrites nothing, whether the previous run finished, was stopped or was killed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .engine import is_connect, spark_errors
from .errors import InvalidArgumentError, LakecatError
from .identifiers import TableIdent, parse_columns, quote, validate_part
from .records import BAD, CHECKED, CORRUPT, DETAIL, ERROR, EVENT_TIME, META, RAW, SALT, UNKNOWN, input_fields, type_ddl
from .results import IngestResult
from .sources import Source, StreamOptions
from .units import iso, parse_duration

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.types import StructField

    from .catalog import Catalog
    from .config import CatalogConfig
    from .metrics import IngestExporter
    from .table import Table

log = logging.getLogger(__name__)

UNKNOWN_SAMPLE = 16  # "sample": one record in 16 (Kafka: offset % 16 == 0; files: a hash of the value)
UNKNOWN_MODES = ("sample", "all", "off")
# Why a record is dead-lettered (the pipeline's and the sources' ``_lakecat_error`` values); anything else is "other".
DEAD_LETTER_REASONS = (
    "invalid_json",
    "type_mismatch",
    "missing_required",
    "null_value",
    "not_utf8",
    "malformed_csv",
    "invalid_cdc_event",
    "missing_key",
    "schema_mismatch",
)  # the last three: --cdc debezium
#: The dead-letter table's schema (created with the table's format when missing).
DLQ_SCHEMA = (
    "raw_value BINARY, raw_text STRING, error STRING, error_detail STRING, source STRING, kafka_topic STRING, "
    "kafka_partition INT, kafka_offset BIGINT, kafka_key BINARY, kafka_timestamp TIMESTAMP, ingest_time TIMESTAMP, "
    "batch_id BIGINT"
)
DLQ_COLUMNS = ("raw_value", "raw_text", "error", "error_detail", "source", "kafka_topic", "kafka_partition", "kafka_offset",
               "kafka_key", "kafka_timestamp", "ingest_time", "batch_id")  # fmt: skip
IngestReport = IngestResult  # the name of earlier releases


@dataclass(frozen=True)
class Trigger:
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


# --- the table side ----------------------------------------------------------------------------
@dataclass
class _Target:
    """A table the stream writes to, with its idempotence bookkeeping (kept by the table's format)."""

    table: Table
    app_id: str
    last_batch: int | None = None  # highest batch id known committed for app_id (None: not looked up yet)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def committed_batch(self) -> int:
        """The highest batch id this app id has committed to the table (-1: none), from table metadata."""
        with self._lock:  # the first lookup may run in the prefetch thread while the first batch asks
            if self.last_batch is None:
                self.last_batch = self.table.adapter.committed_batch(self.table, self.app_id)
            return self.last_batch

    def write(self, df: DataFrame, batch_id: int) -> bool:
        """Append ``df`` as batch ``batch_id`` unless that batch is already committed; True if written."""
        if batch_id <= self.committed_batch():
            return False
        self.table.adapter.append_batch(self.table, df, self.app_id, batch_id)
        self.last_batch = batch_id
        return True


def _add_columns(table: Table, columns: list[tuple[str, str]]) -> None:
    if columns:
        table.adapter.add_columns(table, columns)


# --- parsing -----------------------------------------------------------------------------------
def _any(conditions: Any) -> Any:
    import functools
    import operator

    return functools.reduce(operator.or_, conditions)


def _json_path(name: str) -> str | None:
    """A JSON path to the top-level field ``name`` for ``get_json_object`` (None if Spark's path syntax cannot say it:
    its bracket form spells any name but an empty one or one with a quote or a bracket)."""
    return f"$['{name}']" if name and not any(c in name for c in "'[]") else None


def _typed_parse(text: Any, fields: list[StructField], fast: bool) -> Any:
    """``from_json`` of ``text`` against ``fields`` in PERMISSIVE mode, with the corrupt-record field ``CORRUPT``;
    ``fast``: through lakecat's ``lakecat_from_json`` (``lakecat.jvm``: the same parse, without a reader per record)."""
    from pyspark.sql import types as T

    from .jvm import from_json

    typed = T.StructType([T.StructField(f.name, f.dataType, True) for f in fields]
                         + [T.StructField(CORRUPT, T.StringType(), True)])  # fmt: skip
    return from_json(text, typed, CORRUPT, fast=fast)


def _json_detail(text: Any, p: Any, fields: list[StructField]) -> Any:
    """The dead letter's ``error_detail`` of a record classified ``ERROR``: ``text`` its value as a string, ``p`` its
    ``_typed_parse``. A type mismatch names the fields whose value is there as text but not as its type."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    required = [f.name for f in fields if not f.nullable]
    missing = F.concat_ws(", ", *[F.when(p[n].isNull(), F.lit(n)) for n in required]) if required else F.lit("")
    paths = {f.name: path for f in fields if (path := _json_path(f.name)) is not None}
    if len(paths) == len(fields):  # the field's value as text: get_json_object has generated code
        as_text_of = {name: F.get_json_object(text, path) for name, path in paths.items()}
    else:  # a field name a JSON path cannot spell
        ptext = F.from_json(text, T.StructType([T.StructField(f.name, T.StringType(), True) for f in fields]))
        as_text_of = {f.name: ptext[f.name] for f in fields}
    mismatched = F.concat_ws(
        ", ",
        *[
            F.when(
                as_text_of[f.name].isNotNull() & p[f.name].isNull(),
                F.lit(f"{f.name} (expected {type_ddl(f.dataType)})"),
            )
            for f in fields
        ],  # fmt: skip
    )
    return (
        F.when(F.col(ERROR) == "not_utf8", F.lit("value is not valid UTF-8"))
        .when(F.col(ERROR) == "null_value", F.lit("value is null"))
        .when(F.col(ERROR) == "invalid_json", F.lit("value is not a JSON object"))
        .when(F.col(ERROR) == "type_mismatch", F.concat(F.lit("wrong type: "), mismatched))
        .when(F.col(ERROR) == "missing_required", F.concat(F.lit("missing required field: "), missing))
    )


def json_detail_of_raw(fields: list[StructField], fast: bool = False) -> Any:
    """``_json_detail`` computed afresh from a bad record's raw value (``RAW``), for a batch parsed without ``DETAIL``."""
    from pyspark.sql import functions as F

    text = F.col(RAW).cast("string")
    return _json_detail(text, _typed_parse(text, fields, fast), fields)


def _parse_json(raw: DataFrame, fields: list[StructField], *, keep_value: bool, count_unknown: str,
                detail: bool = True) -> DataFrame:  # fmt: skip
    """Parse ``value`` against ``fields`` and classify every record in one projection.

    ``from_json`` in PERMISSIVE mode with a corrupt-record column flags a value of the wrong type
    (it would otherwise come back as a silent null). Spotting fields the table lacks needs a second tokenization
    of the record (``json_object_keys``; ``from_json`` skips them silently): ``count_unknown="all"``
    does it for every record (needed to evolve the schema), ``"sample"`` for one in ``UNKNOWN_SAMPLE``
    (marked ``CHECKED``), ``"off"`` never. ``detail=False`` leaves out ``DETAIL``, what a dead letter says is wrong
    (the offending fields, found by a second, per-field reading of the record): the batch computes it from ``RAW`` for
    its bad records alone (``json_detail_of_raw``). Its expressions were more than a third of the generated code
    Spark writes again for every micro-batch, and of the plan its optimizer walks, though no good record reads them.
    """
    from pyspark.sql import functions as F

    from .jvm import available, json_object_keys

    fast = available(raw.sparkSession)
    text = F.col("value").cast("string")
    df = raw.select("*", _typed_parse(text, fields, fast).alias("_lakecat_p"))
    p = F.col("_lakecat_p")
    required = [f.name for f in fields if not f.nullable]
    is_object = json_object_keys(text, fast=fast).isNotNull()
    error = (
        F.when(F.col("value").isNull(), F.lit("null_value"))
        .when(~F.is_valid_utf8(text), F.lit("not_utf8"))
        .when(p.isNull(), F.lit("invalid_json"))
        .when(p[CORRUPT].isNotNull(), F.when(is_object, F.lit("type_mismatch")).otherwise(F.lit("invalid_json")))
    )
    if required:
        error = error.when(_any(p[n].isNull() for n in required), F.lit("missing_required"))
    df = df.select("*", error.alias(ERROR))
    cols = [p[f.name].alias(f.name) for f in fields]
    extra = []
    if count_unknown in ("all", "sample"):
        known = F.array(*[F.lit(f.name) for f in fields])
        unknown = F.array_except(json_object_keys(text, fast=fast), known)  # null unless the record has unknown fields
        check = F.col(ERROR).isNull()
        if (
            count_unknown == "sample"
        ):  # cheap test first: `&` short-circuits, the other 15 records skip the tokenization
            pick = F.coalesce(F.col("_lakecat_offset"), F.xxhash64(F.col("value")))
            df = df.select("*", ((F.pmod(pick, F.lit(UNKNOWN_SAMPLE)) == 0) & check).alias(CHECKED))
            check = F.col(CHECKED)
            extra.append(F.col(CHECKED))
        extra.append(F.when(check & (F.size(unknown) > 0), unknown).alias(UNKNOWN))
    if detail:
        extra.append(F.when(F.col(ERROR).isNotNull(), _json_detail(text, p, fields)).alias(DETAIL))
    # the raw value travels only with bad records (or always when the schema may still grow)
    raw_value = F.col("value") if keep_value else F.when(F.col(ERROR).isNotNull(), F.col("value"))
    return df.select(*cols, ERROR, *META, *extra, raw_value.alias(RAW))


def _batch_columns(fields: list[StructField], with_metadata: bool) -> set[str]:
    """What a batch's table write and counters read: the columns events fill, ``ERROR``, the unknown-field check and,
    with ``--with-kafka-metadata``, the provenance."""
    return {f.name for f in fields} | {ERROR, UNKNOWN, CHECKED} | (set(META) if with_metadata else set())


def _pack_bad(df: DataFrame, keep: set[str]) -> DataFrame:
    """The batches' shape: the columns of ``keep`` (``_batch_columns``), and one ``BAD`` struct (null for a good
    record) with what only the dead letters read: ``RAW``, ``DETAIL`` where the parse made it, and the provenance not
    kept. Spark copies every
    column of the streaming plan's row twice on its way into a batch (the plan's output, then the batch's scan of it);
    eight mostly-null columns cost ~1 CPU s per 1M records at 50k per batch."""
    from pyspark.sql import functions as F

    packed = [c for c in (DETAIL, RAW, *META) if c in df.columns and c not in keep]
    return df.select(*[F.col(quote(c)) for c in df.columns if c in keep],
                     F.when(F.col(ERROR).isNotNull(), F.struct(*[F.col(c) for c in packed])).alias(BAD))  # fmt: skip


def _unpacked(df: DataFrame) -> DataFrame:
    """A batch with its ``BAD`` struct's fields as columns again (what the dead-letter paths read)."""
    from pyspark.sql import functions as F

    if BAD not in df.columns:
        return df
    names = [f.name for f in df.schema[BAD].dataType.fields]  # type: ignore[attr-defined]
    return df.select(*[F.col(quote(c)) for c in df.columns if c != BAD], *[F.col(BAD)[n].alias(n) for n in names])


# --- options and state -------------------------------------------------------------------------
@dataclass
class _Options:
    trigger: Trigger
    checkpoint: str
    dlq: str | None
    merge_schema: bool
    dedupe_key: list[str] | None
    watermark_s: int | None
    event_time: str | None
    max_records_per_batch: int | None
    max_files_per_batch: int | None
    metrics_file: Path | None
    count_unknown: str = "sample"  # "sample" (1 record in UNKNOWN_SAMPLE), "all" or "off"
    cdc: str | None = None  # "debezium": change events applied with MERGE by cdc_key
    cdc_key: list[str] | None = None

    @property
    def stream(self) -> StreamOptions:
        return StreamOptions(self.max_records_per_batch, self.max_files_per_batch)


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


class _State:
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
                self.unknown_names.update(unknown_names)
                r.unknown_field_names = sorted(self.unknown_names)[:100]

    def snapshot(self) -> IngestResult:
        with self.lock:
            r = IngestResult(**{k: getattr(self.report, k) for k in self.report.__dataclass_fields__})
            r.unknown_field_names = list(r.unknown_field_names)
            r.added_columns = list(r.added_columns)
        r.duration_s = round(time.monotonic() - self.started, 3)
        return r


# --- the pipeline ------------------------------------------------------------------------------
@dataclass
class _BatchExprs:
    """A batch write's Spark expressions, reused from batch to batch (see ``_Pipeline._batch_exprs``)."""

    key: tuple[Any, ...]
    metrics: list[Any]
    good: Any
    columns: list[Any]
    inputs: set[str]  # the batch's columns that the metrics and the good rows read


class _Pipeline:
    def __init__(self, catalog: Catalog, table: Table, source: Source, opts: _Options, report: IngestReport,
                 dlq: Table | None, with_metadata: bool, fields: list[StructField]) -> None:  # fmt: skip
        self.catalog = catalog
        self.spark = catalog.session()
        self.table = table
        self.source = source
        self.opts = opts
        self.state = _State(report)
        app = "lakecat-" + hashlib.sha256(opts.checkpoint.encode()).hexdigest()[:16]
        self.target = _Target(table, app)
        self.dlq = _Target(dlq, app + "-dlq") if dlq is not None else None
        self.with_metadata = with_metadata
        self.fields = fields  # the columns events fill, as of now (merge_schema may add more)
        self.stream_fields = list(fields)  # the columns the streaming plan parses
        self._exprs: _BatchExprs | None = None
        # Through Spark Connect the batches run in the engine's Python worker (_EngineBatch), which leaves each
        # batch's counters in a file of this run's own directory beside the checkpoint; collect() reads them.
        self.remote = is_connect(self.spark)
        self.report_dir = f"{opts.checkpoint.rstrip('/')}/_lakecat_batches/{uuid.uuid4().hex}"
        self.query_name = (
            f"lakecat_ingest_{table.entry.ident.namespace}_{table.entry.ident.name}_{uuid.uuid4().hex[:6]}"
        )
        # the observation's name, set by plan() when the streaming plan itself counts each batch (see there); else
        # each batch observes itself
        self.stream_observation: str | None = None
        self._jquery: Any = None  # the running query's StreamExecution (JVM), looked up by its first batch

    def prefetch(self) -> None:
        """Look up the committed batch ids while Spark starts the query, not in the first micro-batch
        (the first Iceberg lookup imports pyiceberg: 1-3 s). A failure here is left to the batch to raise."""

        def lookup() -> None:
            for target in (self.target, self.dlq):
                if target is not None:
                    with contextlib.suppress(Exception):
                        target.committed_batch()

        threading.Thread(target=lookup, name="lakecat-txn-prefetch", daemon=True).start()

    # the streaming plan
    def plan(self) -> DataFrame:
        from pyspark.sql import functions as F

        if not self.source.parses_json:
            df = self.source.open_typed(self.spark, self.fields, self.opts.stream)
        elif self.opts.cdc:
            from .cdc import parse_debezium

            df = parse_debezium(self.source.open_raw(self.spark, self.opts.stream), self.fields, self.opts.cdc_key or [],
                                allow_new=self.opts.merge_schema)  # fmt: skip
        else:
            raw = self.source.open_raw(self.spark, self.opts.stream)
            # --merge-schema parses each batch again after it adds columns (_evolve): its dead letters keep the detail
            df = _parse_json(raw, self.fields, keep_value=self.opts.merge_schema, count_unknown=self.opts.count_unknown,
                             detail=self.opts.merge_schema)  # fmt: skip
        keys = self.opts.dedupe_key or []
        if keys:
            salt = F.when(F.col(ERROR).isNotNull(), F.concat_ws(":", F.col("_lakecat_source"), F.col("_lakecat_partition"),
                                                                   F.col("_lakecat_offset"), F.xxhash64(F.col(RAW))))  # fmt: skip
            if (
                self.opts.event_time == "_lakecat_ts"
            ):  # no time column: the record's arrival (Kafka timestamp; files: now)
                event = F.coalesce(F.col("_lakecat_ts"), F.current_timestamp())
            else:
                # A dead-lettered record, or an event without a time, has none (null): it is never late and does not
                # move the watermark. (A bad record stamped with its Kafka time pushed the watermark to "now" and every
                # older event after it was dropped as late.)
                # A TIMESTAMP_NTZ column (an Iceberg `timestamp`, a Delta `timestamp_ntz`) is read in the session's
                # time zone (UTC): a watermark is defined on TIMESTAMP only.
                event = F.when(F.col(ERROR).isNull(), F.col(quote(self.opts.event_time)).cast("timestamp"))  # type: ignore[arg-type]
            df = df.select("*", salt.alias(SALT), event.alias(EVENT_TIME))
        # Packed before the dedupe too: its shuffle writes every column of every record, and the provenance is set on
        # every record (as wide as the event in the bench) though only a bad record's dead letter reads it. --cdc and
        # --merge-schema keep the columns: both read a bad record's columns in every batch.
        packed = not self.opts.cdc and not self.opts.merge_schema
        if packed:
            df = _pack_bad(
                df, _batch_columns(self.fields, self.with_metadata) | ({SALT, EVENT_TIME} if keys else set())
            )
        if keys:
            df = df.withWatermark(EVENT_TIME, f"{self.opts.watermark_s} seconds")
            df = df.dropDuplicatesWithinWatermark([*keys, SALT])
            if packed:  # what the dedupe alone reads
                df = df.drop(SALT, EVENT_TIME)
        if packed and self.dlq is not None and not self.remote:
            # The batch's counters, taken by the streaming plan itself, read back from the query's execution of this
            # batch after the table write (_counted_by_stream). Observed in each batch instead, the observation split
            # the table write into two generated stages with a copy of every row between them (~7% of the executors'
            # CPU in a JFR profile). Not through Spark Connect (the engine's Python worker cannot reach the query's
            # execution), nor where a batch is cached and read twice (--no-dlq, --merge-schema) or CDC.
            columns = set(df.columns)
            exprs = self._batch_exprs(UNKNOWN in columns, CHECKED in columns)
            self.stream_observation = self.stream_observation or f"lakecat_{uuid.uuid4().hex[:12]}"  # one per pipeline
            df = df.observe(self.stream_observation, *exprs.metrics)
        return df

    def start(self) -> StreamingQuery:
        clear_unfinished_first_batch(self.opts.checkpoint)
        self._jquery = None  # a restart runs a new execution under the same name
        func = _EngineBatch(self.engine_spec()) if self.remote else self._batch
        writer = self.plan().writeStream.foreachBatch(func).option("checkpointLocation", self.opts.checkpoint)
        writer = writer.queryName(self.query_name)
        writer = (
            writer.trigger(availableNow=True)
            if self.opts.trigger.available_now
            else writer.trigger(processingTime=f"{self.opts.trigger.interval_s} seconds")
        )
        with spark_errors("ingest into", self.table.entry.ident):
            return writer.start()

    def engine_spec(self) -> _EngineSpec:
        dlq = str(self.dlq.table.entry.ident) if self.dlq is not None else None
        return _EngineSpec(self.catalog.config, type(self.catalog), str(self.table.entry.ident), self.table.branch_name, dlq,
                           self.source, self.opts, self.with_metadata, list(self.fields),
                           self.report_dir)  # fmt: skip

    def collect(self) -> None:
        """Through Spark Connect: count the batches the engine's worker has reported since the last call."""
        if not self.remote:
            return
        for stats, names, added in read_batch_reports(self.report_dir, skip=set(self.state.batches)):
            self.state.record(stats, names)
            if added:
                with self.state.lock:
                    have = self.state.report.added_columns
                    have.extend(c for c in added if c not in have)

    def close(self) -> None:
        """Read the last reports and remove this run's report directory (through Spark Connect)."""
        if self.remote:
            self.collect()
            remove_dir(self.report_dir)

    # one micro-batch
    def _batch(self, df: DataFrame, batch_id: int) -> None:
        self.state.batch_active = True
        try:
            stats, names = self._timed_batch(df, batch_id)
        finally:
            self.state.batch_active = False
        self.state.record(stats, names)

    def _timed_batch(self, df: DataFrame, batch_id: int) -> tuple[BatchStats, list[str]]:
        """Write one batch (in process, or in a Spark Connect engine's worker) and time it."""
        started = time.monotonic()
        stats, names = self._write_batch(df, batch_id)
        stats.duration_s = round(time.monotonic() - started, 3)
        stats.finished_at = time.time()
        return stats, names

    def _write_batch(self, df: DataFrame, batch_id: int) -> tuple[BatchStats, list[str]]:
        from pyspark.sql import Observation

        stats = BatchStats(batch_id)
        done_table = batch_id <= self.target.committed_batch()
        done_dlq = self.dlq is None or batch_id <= self.dlq.committed_batch()
        if done_table and done_dlq:
            stats.skipped = True
            return stats, []
        names: list[str] = []
        if self.opts.cdc:
            return self._apply_changes(df, batch_id, stats, done_table, done_dlq), names
        # Cached only when the batch is read more than once before its table write (schema evolution, --no-dlq's
        # check). The dead-letter write reads it again only when the batch has bad records, and then re-runs its plan
        # — also with --dedupe-key: Spark replays a stateful batch from the state version before it (SPARK-47329), and
        # bad records are salted so the dedupe never drops one (the same records both times). Caching every batch
        # for that rare case made --dedupe-key ~1/3 slower than a plain dropDuplicatesWithinWatermark job.
        cached = bool(self.opts.merge_schema or self.dlq is None)
        base = df.persist() if cached else df
        df = base
        try:
            if self.opts.merge_schema:
                df = self._evolve(base)
            if self.dlq is None:
                self._refuse_bad(df)
            columns = df.columns
            has_unknown = UNKNOWN in columns
            sampled = CHECKED in columns  # else every good record was checked
            exprs = self._batch_exprs(has_unknown, sampled)
            obs = None
            if self.stream_observation is not None:  # the streaming plan counts the batch (plan())
                observed = df
            else:
                obs = Observation(f"lakecat_{batch_id}_{uuid.uuid4().hex[:8]}")
                # Spark does not prune columns below an observation: without this every row of the table write was
                # built with the dead letter's columns too (raw value, detail, provenance), which that job never reads.
                # A drop of the few unread columns, not a select of the read ones: a column named in a select costs
                # three py4j round trips, ~20 ms per batch of a 4-field table (py-spy)
                unread = [c for c in columns if c not in exprs.inputs]
                observed = (df.drop(*unread) if unread else df).observe(obs, *exprs.metrics)
            if not done_table:
                write_started = time.monotonic()
                self.target.write(observed.where(exprs.good).select(*exprs.columns), batch_id)
                stats.commit_duration_s = round(time.monotonic() - write_started, 3)
                m = obs.get if obs is not None else self._counted_by_stream(df, batch_id)
                rows, bad = int(m["rows"] or 0), int(m["bad"] or 0)
                stats.rows_written, stats.rows_read = rows - bad, rows
                if has_unknown:
                    stats.unknown_fields = int(m["unknown"] or 0)
                    stats.unknown_checked = int(m["checked"] or 0) if sampled else stats.rows_written
                    names = list(m["names"] or [])
            else:  # a replay after a crash between the two writes: the table has this batch already
                bad = self._bad_rows(df, batch_id).count()
                stats.skipped = bad == 0
            if self.dlq is not None and not done_dlq and bad:
                stats.dead_letter_reasons = self._write_dead_letters(df, batch_id, bad)
                stats.rows_dead_lettered = bad
        finally:
            if df is not base:
                df.unpersist()
            if cached:
                base.unpersist()
        return stats, names

    def _counted_by_stream(self, df: DataFrame, batch_id: int) -> dict[str, Any]:
        """The counters the streaming plan's observation took of this batch, read after the table write ran it.

        ``foreachBatch`` hands over the rows of the query's execution of this batch (its ``lastExecution``), whose
        observation holds what the write's job counted as it read them (``observedMetrics`` reads the accumulators at
        the time of the call: after the dead-letter write, which runs the batch again, they would count twice). When
        that cannot be read, or the execution is not this batch's, the batch is counted again by two jobs: slower,
        never wrong."""
        from pyspark.sql import functions as F

        name = self.stream_observation
        why = "not found"
        try:
            if self._jquery is None:
                active = self.spark._jsparkSession.streams().active()  # type: ignore[attr-defined]
                self._jquery = next(q for q in active if q.name() == self.query_name).streamingQuery()
            execution = self._jquery.lastExecution()
            if execution.currentBatchId() == batch_id:
                found = execution.observedMetrics().get(name)
                if found.isDefined():
                    return dict(json.loads(found.get().json()))
            else:
                why = f"the query's execution is of batch {execution.currentBatchId()}"
        except Exception as e:  # noqa: BLE001 - the fallback below counts the same
            why = repr(e)
        log.warning(
            "ingest: the stream's counters of batch %s could not be read (%s); counting it again", batch_id, why
        )
        rows, bad = df.count(), df.where(F.col(ERROR).isNotNull()).count()
        return {"rows": rows, "bad": bad, "unknown": None, "checked": None, "names": None}

    def _batch_exprs(self, has_unknown: bool, sampled: bool) -> _BatchExprs:
        """The counters and the good rows' filter and columns of a batch write, built once per set of columns: every
        PySpark function call is a few py4j round trips (~240 per batch, ~45 ms, when each batch built its own)."""
        from pyspark.sql import functions as F

        key = (tuple(f.name for f in self.fields), has_unknown, sampled)
        if self._exprs is None or self._exprs.key != key:
            metrics = [F.count(F.lit(1)).alias("rows"), F.count(F.col(ERROR)).alias("bad")]
            if has_unknown:
                metrics += [F.count(F.col(UNKNOWN)).alias("unknown"),
                            F.slice(F.array_distinct(F.flatten(F.collect_set(F.col(UNKNOWN)))), 1, 100).alias("names")]  # fmt: skip
            if sampled:
                metrics.append(F.count(F.when(F.col(CHECKED), 1)).alias("checked"))
            self._exprs = _BatchExprs(key, metrics, F.col(ERROR).isNull(), self._good_columns(),
                                      _batch_columns(self.fields, self.with_metadata))  # fmt: skip
        return self._exprs

    def _write_dead_letters(self, df: DataFrame, batch_id: int, bad: int) -> dict[str, int]:
        """Write the batch's bad records to the dead-letter table; their count by reason, taken in the same job
        (counting them in the table write would add a test per reason to every good record)."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        assert self.dlq is not None
        obs = Observation(f"lakecat_dlq_{batch_id}_{uuid.uuid4().hex[:8]}")
        rows = self._bad_rows(df, batch_id).observe(
            obs, *[F.count(F.when(F.col("error") == r, 1)).alias(r) for r in DEAD_LETTER_REASONS]
        )
        if not self.dlq.write(rows, batch_id):
            return {}
        m = obs.get
        reasons = {r: int(m[r] or 0) for r in DEAD_LETTER_REASONS}
        reasons["other"] = bad - sum(reasons.values())
        return {r: n for r, n in reasons.items() if n}

    def _apply_changes(
        self, df: DataFrame, batch_id: int, stats: BatchStats, done_table: bool, done_dlq: bool
    ) -> BatchStats:
        """CDC: the batch's change events, reduced to the last per key, applied with one idempotent MERGE."""
        from pyspark.sql import functions as F

        from .cdc import CDC_TS, OP, last_per_key, merge

        keys = self.opts.cdc_key or []
        parsed = base = df.persist()
        if self.opts.merge_schema:
            base = self._evolve_changes(parsed, keys)
        try:
            if self.dlq is None:
                self._refuse_bad(base)
            m = base.agg(F.count(F.lit(1)).alias("rows"), F.count(F.col(ERROR)).alias("bad")).first()
            assert m is not None  # an aggregate always has its one row
            rows, bad = int(m["rows"] or 0), int(m["bad"] or 0)
            columns = [f.name for f in self.fields]
            if not done_table:
                if rows - bad:
                    good = base.where(F.col(ERROR).isNull()).select(*columns, OP, CDC_TS, "_lakecat_offset")
                    # materialized: MERGE wants a deterministic source, the in-batch position is not
                    changes = last_per_key(good, keys).select(*columns, OP).localCheckpoint(eager=True)
                    merge_started = time.monotonic()
                    merge(self.table, changes, keys, columns, app_id=self.target.app_id, batch_id=batch_id)
                    stats.commit_duration_s = round(time.monotonic() - merge_started, 3)
                self.target.last_batch = batch_id
                stats.rows_written, stats.rows_read = rows - bad, rows
            else:
                stats.skipped = bad == 0
            if self.dlq is not None and not done_dlq and bad:
                stats.dead_letter_reasons = self._write_dead_letters(base, batch_id, bad)
                stats.rows_dead_lettered = bad
        finally:
            base.unpersist()
            parsed.unpersist()
        return stats

    def _evolve_changes(self, df: DataFrame, keys: list[str]) -> DataFrame:
        """CDC with merge_schema: add the columns the batch's ``after`` images carry and the table lacks (typed by
        the envelope's schema block, else by their values), then parse the batch again with them."""
        from pyspark.sql import functions as F

        from .cdc import NEW_COLUMNS, VALUE, new_column_type, parse_debezium

        known = {f.name.lower() for f in self.fields}
        new_names = {n for row in df.select(F.explode(F.col(NEW_COLUMNS))).distinct().collect() for n in row
                     if n and n.lower() not in known}  # fmt: skip
        if new_names:
            samples = (df.where(F.size(F.col(NEW_COLUMNS)) > 0).select(F.col(VALUE).cast("string").alias("v"))
                       .limit(200).collect())  # fmt: skip
            types: dict[str, str] = {}
            for row in samples:
                try:
                    event = json.loads(row["v"])
                except (TypeError, ValueError):
                    continue
                after = (event.get("payload") or event).get("after") or {}
                sections = ((event.get("schema") or {}).get("fields")) or []
                specs = next((s.get("fields") or [] for s in sections if s.get("field") == "after"), [])
                by_name = {f.get("field"): f for f in specs}
                for name in new_names - types.keys():
                    ddl = new_column_type(by_name.get(name), after.get(name))
                    if ddl is not None:
                        types[name] = ddl
            added: list[tuple[str, str]] = []
            for name in sorted(new_names):
                try:
                    validate_part(name, what="column name")
                except InvalidArgumentError:
                    continue  # a name lakecat cannot quote safely into every engine: its events stay dead letters
                added.append((name, types.get(name, "STRING")))
            _add_columns(self.table, added)
            if added:
                self.fields = list(self.table.writable_fields())
                with self.state.lock:
                    self.state.report.added_columns.extend(name for name, _ in added)
        if [f.name for f in self.fields] == [f.name for f in self.stream_fields]:
            return df
        raw = df.select(F.col(VALUE).alias("value"), *META)
        return parse_debezium(raw, self.fields, keys, allow_new=True).persist()

    def _infer_json(self, texts: DataFrame) -> Any:
        """Spark's JSON schema inference over the column ``v`` of JSON texts."""
        if not is_connect(self.spark):
            return self.spark.read.json(texts.rdd.map(lambda r: r.v)).schema  # noqa: PLW0108
        # no RDDs through Spark Connect: the texts go through a scratch directory of this run as JSON lines
        scratch = f"{self.report_dir}/_infer_{uuid.uuid4().hex[:8]}"
        try:
            texts.write.text(scratch)
            return self.spark.read.json(scratch).schema
        finally:
            remove_dir(scratch)

    def _refuse_bad(self, df: DataFrame) -> None:
        """--no-dlq: the first bad record fails the batch before anything is written."""
        first = self._bad_records(df).select(ERROR, DETAIL, "_lakecat_source", "_lakecat_partition",
                                             "_lakecat_offset").limit(1).collect()  # fmt: skip
        if first:
            r = first[0]
            where = f"{r[2]}" + (f" partition {r[3]} offset {r[4]}" if r[3] is not None else "")
            raise LakecatError(f"record at {where} rejected ({r[0]}: {r[1]}) and --no-dlq is set; "
                               "nothing of this batch was written")  # fmt: skip

    def _good_columns(self) -> list[Any]:
        """The table's columns of a good record (and the source's metadata columns with --with-kafka-metadata)."""
        from pyspark.sql import functions as F

        cols = [F.col(quote(f.name)) for f in self.fields]  # a column named `a.b` is that column, not a field b of a
        if self.with_metadata:
            cols += self.source.metadata_values()
        return cols

    def _bad_records(self, df: DataFrame) -> DataFrame:
        """A batch's bad records with their columns unpacked, ``DETAIL`` among them: computed from the raw value when
        the batch was parsed without it."""
        from pyspark.sql import functions as F

        bad = _unpacked(df).where(F.col(ERROR).isNotNull())
        if DETAIL in bad.columns:
            return bad
        from .jvm import available

        return bad.withColumn(DETAIL, json_detail_of_raw(self.fields, available(self.spark)))

    def _bad_rows(self, df: DataFrame, batch_id: int) -> DataFrame:
        from pyspark.sql import functions as F

        raw = F.col(RAW)
        return self._bad_records(df).select(
            raw.alias("raw_value"),
            F.when(F.is_valid_utf8(raw.cast("string")), raw.cast("string")).alias("raw_text"),
            F.col(ERROR).alias("error"),
            F.col(DETAIL).alias("error_detail"),
            F.col("_lakecat_source").alias("source"),
            F.col("_lakecat_topic").alias("kafka_topic"),
            F.col("_lakecat_partition").alias("kafka_partition"),
            F.col("_lakecat_offset").alias("kafka_offset"),
            F.col("_lakecat_key").alias("kafka_key"),
            F.when(F.col("_lakecat_topic").isNotNull(), F.col("_lakecat_ts")).alias("kafka_timestamp"),
            F.current_timestamp().alias("ingest_time"),
            F.lit(batch_id).cast("bigint").alias("batch_id"),
        )

    def _evolve(self, df: DataFrame) -> DataFrame:
        """merge_schema: add the batch's new top-level fields as columns, then parse the batch again."""
        from pyspark.sql import functions as F

        if UNKNOWN in df.columns:
            new_names = {n for row in df.select(F.explode(F.col(UNKNOWN))).distinct().collect() for n in row if n}
        else:
            new_names = set()
        known = {f.name.lower() for f in self.fields}
        new_names = {n for n in new_names if n.lower() not in known}
        added: list[tuple[str, str]] = []
        if new_names:
            texts = df.where(F.col(UNKNOWN).isNotNull()).select(F.col(RAW).cast("string").alias("v"))
            inferred = self._infer_json(texts)
            for f in inferred.fields:
                if f.name in new_names and f.name != "_corrupt_record":
                    try:
                        validate_part(f.name, what="column name")
                    except InvalidArgumentError:
                        continue  # a name lakecat cannot quote safely into every engine stays an unknown field
                    added.append((f.name, type_ddl(f.dataType)))
            _add_columns(self.table, added)
            if added:
                fields = self.table.writable_fields()
                self.fields = [f for f in fields if not (self.with_metadata and f.name in self.source.metadata_columns)]
                with self.state.lock:
                    self.state.report.added_columns.extend(name for name, _ in added)
        if [f.name for f in self.fields] == [f.name for f in self.stream_fields]:
            return df
        raw = df.select(F.col(RAW).alias("value"), *META)
        reparsed = _parse_json(raw, self.fields, keep_value=True, count_unknown="all")
        return reparsed.persist()


# --- through Spark Connect: the batches run in the engine ----------------------------------------
@dataclass
class _EngineSpec:
    """What the engine's Python worker needs to write the stream's batches: plain, picklable settings."""

    config: CatalogConfig
    catalog_type: type[Catalog]  # pickled by reference: the worker opens the same kind of catalog
    table: str
    branch: str | None
    dlq: str | None
    source: Source
    opts: _Options
    with_metadata: bool
    fields: list[StructField]
    report_dir: str


class _EngineBatch:
    """The ``foreachBatch`` function through Spark Connect.

    The engine pickles it and calls it in its own Python worker, one per query, for every batch of the query
    (so lakecat must be installed in the engine's Python; ``lakecat local engine`` uses this one). On the first
    batch it opens the catalog on the session it is handed; each batch is written exactly as in process (the same
    idempotent commits), and its counters are left in a file in ``report_dir`` for the ``lakecat`` process.
    """

    def __init__(self, spec: _EngineSpec) -> None:
        self.spec = spec
        self._pipeline: _Pipeline | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.spec, self._pipeline = state["spec"], None

    def _open(self, spark: Any) -> _Pipeline:
        from .spark import adopt_session

        spec = self.spec
        adopt_session(spark, spec.config)
        catalog = spec.catalog_type(spec.config)
        table = catalog.load_table(spec.table)
        if spec.branch:
            table = table.on_branch(spec.branch)
        dlq = catalog.load_table(spec.dlq) if spec.dlq else None
        report = IngestResult(table=spec.table, format=table.format, source=spec.source.describe())
        pipeline = _Pipeline(catalog, table, spec.source, spec.opts, report, dlq, spec.with_metadata, spec.fields)
        pipeline.report_dir = spec.report_dir
        return pipeline

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        if self._pipeline is None:
            self._pipeline = self._open(df.sparkSession)
        pipeline = self._pipeline
        stats, names = pipeline._timed_batch(df, batch_id)
        doc = {"stats": dataclasses.asdict(stats), "unknown_names": names,
               "added_columns": list(pipeline.state.report.added_columns)}  # fmt: skip
        write_batch_report(self.spec.report_dir, batch_id, doc)


def write_batch_report(directory: str, batch_id: int, doc: dict[str, Any]) -> None:
    """``<directory>/<batch id>.json``, written whole or not at all (a temporary name, then a rename)."""
    from .config import pyarrow_filesystem

    fs, path = pyarrow_filesystem(directory)
    fs.create_dir(path, recursive=True)
    tmp = f"{path}/.{batch_id}.{uuid.uuid4().hex[:8]}.tmp"
    with fs.open_output_stream(tmp) as out:
        out.write(json.dumps(doc).encode())
    fs.move(tmp, f"{path}/{batch_id}.json")


def read_batch_reports(directory: str, skip: set[int]) -> list[tuple[BatchStats, list[str], list[str]]]:
    """The batch reports in ``directory`` whose batch id is not in ``skip``, in batch order."""
    from pyarrow import fs as pafs

    from .config import pyarrow_filesystem

    fs, path = pyarrow_filesystem(directory)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except OSError:
        return []
    out: list[tuple[BatchStats, list[str], list[str]]] = []
    for info in infos:
        name = info.base_name
        if not (name.endswith(".json") and name[:-5].isdigit()) or int(name[:-5]) in skip:
            continue
        with fs.open_input_stream(info.path) as fh:
            doc = json.loads(fh.read())
        out.append(
            (BatchStats(**doc["stats"]), list(doc.get("unknown_names") or []), list(doc.get("added_columns") or []))
        )
    return sorted(out, key=lambda item: item[0].batch_id)


def clear_unfinished_first_batch(checkpoint: str) -> list[str]:
    """Remove what a process killed while Spark wrote a checkpoint's first offset-log entry left behind.

    Spark writes each log entry under a hidden temporary name, then renames it. A ``kill -9`` between the two leaves
    ``offsets/.0.<uuid>.tmp`` (and its ``.crc``) and no entry ``0``; Spark 4 then refuses batch 0 on every restart
    (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY, "offsets should be empty on batch 0"). With no entry in the log, the
    stream has committed nothing anywhere, so only such hidden temporary files are removed, and only then.
    """
    from pyarrow import fs as pafs

    from .config import pyarrow_filesystem

    try:
        fs, path = pyarrow_filesystem(checkpoint)
        infos = fs.get_file_info(pafs.FileSelector(f"{path.rstrip('/')}/offsets", allow_not_found=True))
    except (OSError, ValueError):
        return []
    if any(i.base_name.isdigit() for i in infos):
        return []
    removed = []
    for info in infos:
        if info.type == pafs.FileType.File and info.base_name.startswith(".") and ".tmp" in info.base_name:
            fs.delete_file(info.path)
            removed.append(info.path)
    if removed:
        log.warning("checkpoint %s: removed %d temporary file(s) of a first batch that was never logged",
                    checkpoint, len(removed))  # fmt: skip
    return removed


def remove_dir(directory: str) -> None:
    from .config import pyarrow_filesystem

    with contextlib.suppress(OSError):
        fs, path = pyarrow_filesystem(directory)
        fs.delete_dir(path)


# --- running -----------------------------------------------------------------------------------
class IngestHandle:
    """A running ingest (``background=True``): stop it, wait for it, read its report."""

    def __init__(self, pipeline: _Pipeline, query: StreamingQuery) -> None:
        self._pipeline = pipeline
        self.query = query
        self._stopped_by: str | None = None
        self._error: BaseException | None = None
        self._restarts = 0
        self.lag: int | None = None  # Kafka: records on the broker not yet read (updated while run_ingest waits)

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
        while self.query.isActive and self._batch_active() and time.monotonic() < deadline:
            time.sleep(0.1)
        with contextlib.suppress(Exception):
            self.query.stop()
        report = self.report()
        self._pipeline.close()
        return report

    def _batch_active(self) -> bool:
        if not self._pipeline.remote:
            return self._pipeline.state.batch_active
        try:  # the batch runs in the engine: its trigger is what is in flight
            return bool(self.query.status.get("isTriggerActive"))
        except Exception:  # noqa: BLE001 - the query is gone
            return False

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
        return _progress(last) if last is not None else None

    def report(self) -> IngestResult:
        self._pipeline.collect()
        r = self._pipeline.state.snapshot()
        if self._stopped_by:
            r.stopped_by = self._stopped_by
        elif self.query.isActive:
            r.stopped_by = "running"
        return r


def _own_error(text: str) -> LakecatError | None:
    """A lakecat error raised inside foreachBatch reaches the caller wrapped by Spark: unwrap it."""
    from . import errors

    for cls in ("InvalidArgumentError", "CommitConflictError", "TableNotFoundError", "LakecatError"):
        tag = f"lakecat.errors.{cls}: "
        if tag in text:
            return getattr(errors, cls)(text.split(tag, 1)[1].split("\n", 1)[0].strip())  # type: ignore[no-any-return]
    return None


def default_checkpoint(catalog: Catalog, ident: TableIdent, source: Source, branch: str | None = None) -> str:
    """``<warehouse>/_lakecat/checkpoints/<ns>.<table>/<source fingerprint>`` (``…/<ns>.<table>@<branch>/…`` for a
    stream into a branch: another stream, with its own offsets)."""
    target = f"{ident}@{branch}" if branch else str(ident)
    return f"{catalog.config.warehouse_uri.rstrip('/')}/_lakecat/checkpoints/{target}/{source.fingerprint()}"


def start_ingest(
    catalog: Catalog,
    table: str | TableIdent,
    source: Source,
    *,
    trigger: str = "available-now",
    checkpoint: str | None = None,
    dlq: str | bool | None = True,
    merge_schema: bool = False,
    dedupe_key: str | list[str] | None = None,
    watermark: str | None = None,
    event_time: str | None = None,
    max_records_per_batch: int | None = None,
    max_files_per_batch: int | None = None,
    metrics_file: str | Path | None = None,
    count_unknown_fields: bool | str = "sample",
    cdc: str | None = None,
    key: str | list[str] | None = None,
    branch: str | None = None,
) -> IngestHandle:
    """Validate everything, then start the stream; returns at once with a handle (see ``Catalog.ingest``)."""
    if not isinstance(source, Source):
        raise InvalidArgumentError("source must be a lakecat source, e.g. lakecat.KafkaSource or lakecat.FileSource")
    source.validate()
    tbl = catalog.load_table(table)  # TableNotFoundError before anything starts
    if branch is not None:
        from .evolution import validate_ref_name

        tbl = tbl.on_branch(
            validate_ref_name(branch, "branch")
        )  # exit 3 where the format has no branches; VersionNotFoundError for an unknown one
    ident = tbl.entry.ident
    trig = Trigger.parse(trigger)
    keys = parse_columns(dedupe_key) if dedupe_key else None
    if keys and not watermark:
        raise InvalidArgumentError("--dedupe-key needs --watermark (how long to remember keys, e.g. 1h)")
    if watermark and not keys:
        raise InvalidArgumentError("--watermark only applies with --dedupe-key")
    watermark_s = int(parse_duration(watermark).total_seconds()) if watermark else None
    for n, what in ((max_records_per_batch, "max records per batch"), (max_files_per_batch, "max files per batch")):
        if n is not None and int(n) < 1:
            raise InvalidArgumentError(f"{what} must be at least 1")
    with_metadata = bool(source.with_metadata)
    from .cdc import check_cdc

    cdc = check_cdc(cdc)
    if cdc:
        if keys or with_metadata:
            raise InvalidArgumentError("--cdc applies change events by --key; it does not combine with "
                                       "--dedupe-key or --with-kafka-metadata")  # fmt: skip
        if not source.parses_json:
            raise InvalidArgumentError("--cdc reads Debezium JSON events: from Kafka or json files")
    elif key:
        raise InvalidArgumentError("--key applies to change events: pass --cdc debezium (or use --dedupe-key)")
    unknown_mode: str = (
        {True: "all", False: "off"}[count_unknown_fields]
        if isinstance(count_unknown_fields, bool)
        else count_unknown_fields
    )
    if unknown_mode not in UNKNOWN_MODES:
        raise InvalidArgumentError(f"unknown-fields check {count_unknown_fields!r}: use sample, all or off")
    if merge_schema or not source.parses_json:
        unknown_mode = (
            "all" if merge_schema else "off"
        )  # evolving needs every new name; typed rows have no extra fields
    if merge_schema and not source.parses_json:
        raise InvalidArgumentError(
            "--merge-schema applies to JSON events (Kafka or json files), not to csv/parquet files"
        )
    if dlq is False or dlq is None:
        dlq_name = None
    elif dlq is True:
        dlq_name = str(TableIdent(ident.namespace, f"{ident.name}_dlq"))
    else:
        dlq_name = str(TableIdent.parse(str(dlq)))
        if dlq_name == str(ident):
            raise InvalidArgumentError("the dead-letter table must not be the table itself")
    source.check_reachable()
    ckpt = checkpoint or default_checkpoint(catalog, ident, source, branch)
    if "://" not in ckpt:
        ckpt = Path(ckpt).expanduser().resolve().as_uri()
    metrics = Path(metrics_file).expanduser() if metrics_file else None
    opts = _Options(trig, ckpt, dlq_name, merge_schema, keys, watermark_s, event_time, max_records_per_batch,
                    max_files_per_batch, metrics, unknown_mode)  # fmt: skip
    tbl.adapter.require("merge" if cdc else "ingest", "ingest --cdc" if cdc else "ingest")
    spark = catalog.session()
    cdc_notes: list[str] = []
    schema = tbl.spark_schema()
    fields = input_fields(schema, tbl.adapter.generated_columns(tbl))
    names = {f.name for f in schema.fields}
    if with_metadata:
        missing = [(n, t) for n, t in source.metadata_columns.items() if n not in names]
        if missing and not merge_schema:
            raise InvalidArgumentError(
                f"--with-kafka-metadata: table {ident} lacks the column(s) {', '.join(n for n, _ in missing)}; "
                "add them (" + ", ".join(f"{n} {t}" for n, t in missing) + ") or pass --merge-schema"
            )
        _add_columns(tbl, missing)
        fields = [f for f in tbl.writable_fields() if f.name not in source.metadata_columns]
    if keys:
        unknown = [k for k in keys if k not in {f.name for f in fields}]
        if unknown:
            raise InvalidArgumentError(f"--dedupe-key: table {ident} has no column {', '.join(unknown)}")
        from pyspark.sql import types as T

        ts = [f.name for f in fields if isinstance(f.dataType, (T.TimestampType, T.TimestampNTZType))]
        if event_time is None:
            opts.event_time = ts[0] if ts else "_lakecat_ts"
        elif event_time not in ts:
            found = next((f for f in fields if f.name == event_time), None)
            if found is None:
                raise InvalidArgumentError(f"--event-time: table {ident} has no column {event_time}")
            raise InvalidArgumentError(f"--event-time: column {event_time} of table {ident} is "
                                       f"{type_ddl(found.dataType)}, not a timestamp")  # fmt: skip
    if cdc:
        from .cdc import check_key, ensure_key

        opts.cdc, opts.cdc_key = cdc, check_key(key, fields, str(ident))
        opts.count_unknown = "off"
        cdc_notes = ensure_key(tbl, opts.cdc_key)
        for note in cdc_notes:
            log.warning("%s: %s", ident, note)
    source.check_types(spark, fields, str(ident))
    dlq_table = None
    if dlq_name is not None:
        dlq_table = catalog.create_table(dlq_name, schema=DLQ_SCHEMA, format=tbl.format, if_not_exists=True)
        have = {f.name for f in dlq_table.spark_schema().fields}
        if not set(DLQ_COLUMNS) <= have:
            raise InvalidArgumentError(
                f"dead-letter table {dlq_name} lacks the columns {', '.join(sorted(set(DLQ_COLUMNS) - have))}"
            )
        if dlq_table.format != tbl.format:
            log.info("dead-letter table %s is %s, the table is %s", dlq_name, dlq_table.format, tbl.format)
    report = IngestResult(table=str(ident), format=tbl.format, source=source.describe(), dlq_table=dlq_name,
                          checkpoint=ckpt, trigger=str(trig), started_at=iso(datetime.now(UTC)),
                          cdc=opts.cdc, key=opts.cdc_key, branch=branch)  # fmt: skip
    pipeline = _Pipeline(catalog, tbl, source, opts, report, dlq_table, with_metadata, fields)
    pipeline.prefetch()
    query = pipeline.start()
    return IngestHandle(pipeline, query)


def run_ingest(
    catalog: Catalog,
    table: str | TableIdent,
    source: Source,
    *,
    on_progress: Callable[[IngestHandle, dict[str, Any] | None], None] | None = None,
    stop_event: threading.Event | None = None,
    poll_s: float = 0.5,
    **kwargs: Any,
) -> IngestResult:
    """Start an ingest and wait for it: until drained (available-now) or until ``stop_event`` is set.

    With ``metrics_port``, Prometheus ``/metrics`` is served on that port for the life of the stream.
    """
    port = kwargs.pop("metrics_port", None)
    exporter = None
    if port is not None:
        from .metrics import IngestExporter

        target = catalog.load_table(table)  # TableNotFoundError before the port is bound
        exporter = IngestExporter(target.name, target.format, int(port))
    try:
        handle = start_ingest(catalog, table, source, **kwargs)
    except BaseException:
        if exporter is not None:
            exporter.close()
        raise
    metrics = _MetricsWriter(handle, kwargs.get("metrics_file"), source, exporter)
    try:
        while True:
            ended = handle.await_termination(poll_s)
            progress, new = metrics.poll()
            handle.lag = metrics.lag
            if on_progress is not None:
                pending: list[dict[str, Any] | None] = [*new] or [progress]
                for p in pending:  # every finished batch once, else the latest for a live refresh
                    on_progress(handle, p)
            if ended:
                break
            if stop_event is not None and stop_event.is_set():
                handle.stop(reason="signal")
                break
    except KeyboardInterrupt:
        handle.stop(reason="interrupted")
    finally:
        _, new = metrics.poll()
        if on_progress is not None:
            for p in new:
                on_progress(handle, p)
        source.close()
        if exporter is not None:
            exporter.close()
    report = handle.report()
    handle._pipeline.close()
    report.lag = metrics.lag
    return report


def _progress_key(p: dict[str, Any]) -> tuple[str, int]:
    """A progress's place in its query's order: its trigger's start time, then its batch id (an idle trigger reports
    the id of the batch still to come)."""
    bid = p.get("batchId")
    return str(p.get("timestamp") or ""), int(bid) if bid is not None else -1


def _progress_since(query: Any, mark: tuple[str, int]) -> list[dict[str, Any]]:
    """The query's retained progresses after ``mark`` (``_progress_key``), oldest first, and always the latest one.

    Classic PySpark's ``recentProgress`` converts every retained progress (up to 100) with py4j calls and a JSON parse
    each: 20-50 ms with 46 of them, every poll, on the cores the batches run on. Here the retained array is walked from
    its newest end and only the progresses past ``mark`` are converted. Through Spark Connect it is one call anyway."""
    jsq = getattr(query, "_jsq", None)
    if jsq is None:
        return [_progress(p) for p in query.recentProgress]
    from pyspark.sql.streaming.listener import StreamingQueryProgress

    arr = jsq.recentProgress()
    out: list[dict[str, Any]] = []
    for i in range(len(arr) - 1, -1, -1):
        jp = arr[i]
        old = (str(jp.timestamp()), int(jp.batchId())) <= mark
        if old and out:
            break
        out.append(_progress(StreamingQueryProgress.fromJson(json.loads(jp.json()))))
        if old:
            break
    return out[::-1]


def _progress(p: Any) -> dict[str, Any]:
    """A streaming progress as a plain dict with its row count and rates. Through Spark Connect the server's progress
    JSON carries them per source only: they are summed here, as Spark sums them for the query."""
    d = dict(p)
    sources = d.get("sources") or []
    for key in ("numInputRows", "inputRowsPerSecond", "processedRowsPerSecond"):
        if d.get(key) is None and sources:
            d[key] = sum(s.get(key) or 0 for s in sources)
    return d


class _MetricsWriter:
    """One JSON line per batch (``--metrics-file``) from Spark's progress and lakecat's batch counters."""

    def __init__(
        self, handle: IngestHandle, path: str | Path | None, source: Source, exporter: IngestExporter | None = None
    ) -> None:
        self.handle = handle
        self.path = Path(path).expanduser() if path else None
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
        self.handle._pipeline.collect()
        if self.exporter is not None:  # every finished batch, even when the query is gone
            state = self.handle._pipeline.state
            with state.lock:
                finished = dict(state.batches)
            self.exporter.observe(finished, self.lag_by_partition)
        try:
            recent = _progress_since(self.handle.query, self.mark)
        except Exception:  # noqa: BLE001 - the query is gone; nothing more to report
            return None, new
        last = recent[-1] if recent else None
        if last and time.monotonic() - self._lag_at > 2:
            self._lag_at = time.monotonic()
            self.lag_by_partition = self.source.backlog_by_partition(last)
            self.lag = (
                sum(self.lag_by_partition.values()) if self.lag_by_partition is not None else self.source.backlog(last)
            )
        batches = self.handle._pipeline.state.batches
        waiting = False  # a batch whose counters are not recorded yet: the mark stays before it, to be read again
        for p in recent:
            bid = p.get("batchId")
            fresh = bid is not None and bid not in self.seen and bool(p.get("numInputRows"))  # a batch to report once
            waiting = waiting or (fresh and bid not in batches)
            if not waiting:
                self.mark = max(self.mark, _progress_key(p))
            if not fresh or bid not in batches:
                continue
            self.seen.add(bid)
            new.append(p)
            if self.path is not None:
                s = batches[bid]
                line = {"batch_id": bid, "timestamp": p.get("timestamp"), "input_rows": p.get("numInputRows") if s.rows_read is None else s.rows_read,
                        "rows_written": s.rows_written, "rows_dead_lettered": s.rows_dead_lettered,
                        "dead_lettered_by_reason": dict(s.dead_letter_reasons or {}),
                        "unknown_fields": s.unknown_fields, "unknown_fields_checked": s.unknown_checked, "skipped": s.skipped, "batch_duration_s": s.duration_s,
                        "trigger_duration_ms": (p.get("durationMs") or {}).get("triggerExecution"),
                        "rows_per_s": p.get("processedRowsPerSecond"), "lag": self.lag}  # fmt: skip
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a") as fh:
                    fh.write(json.dumps(line) + "\n")
        return last, new
