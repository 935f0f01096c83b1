"""The batch writer: one micro-batch's good rows to the table and its bad ones to the dead-letter table, each once."""

from __future__ import annotations

import functools
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..engine import spark_errors
from ..identifiers import quote
from ..jvm import available
from ..records import CHECKED, ERROR, UNKNOWN
from .dead_letters import letter_columns, letters, packed_fields, refuse_bad, write_dead_letters
from .parse import batch_columns
from .staged import JSON_OPTIONS, STAGE_MAX_ROWS, StagedDeadLetters, letters_from_json
from .state import BatchStats
from .target import Target

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructField

    from ..protocols import TableLike
    from ..sources import Source
    from .options import StreamSettings
    from .state import IngestState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Done:
    """What a replayed batch has already committed: to the table, to the dead-letter table."""

    table: bool
    dlq: bool


class BatchMode(Protocol):
    """How a batch reaches the table (plain append, append after schema evolution, MERGE of change events)."""

    def write(self, writer: BatchWriter, df: DataFrame, batch_id: int, stats: BatchStats, done: Done) -> list[str]:
        """Write the batch; the names of the fields the table lacks that its records carried."""
        ...


@dataclass
class BatchExprs:
    """A batch write's Spark expressions, reused from batch to batch (see ``BatchWriter.batch_exprs``)."""

    key: tuple[Any, ...]
    metrics: list[Any]
    good: Any
    columns: list[Any]
    inputs: set[str]  # the batch's columns that the metrics and the good rows read


class BatchWriter:
    """Writes the micro-batches of one stream, in process or in a Spark Connect engine's Python worker."""

    def __init__(self, *, spark: SparkSession, table: TableLike, dlq: TableLike | None, source: Source,
                 settings: StreamSettings, fields: list[StructField], state: IngestState, mode: BatchMode,
                 scratch_dir: str, observation: str | None = None, query_name: str = "") -> None:  # fmt: skip
        self.spark = spark
        self.table = table
        self.source = source
        self.settings = settings
        self.target = Target(table, settings.app_id)
        self.dlq = Target(dlq, settings.app_id + "-dlq") if dlq is not None else None
        self.fields = fields  # the columns events fill, as of now (merge schema may add more)
        self.stream_fields = list(fields)  # the columns the streaming plan parses
        self.state = state
        self.mode = mode
        self.scratch_dir = scratch_dir  # this run's own directory beside the checkpoint
        # the name of the streaming plan's observation when the plan itself counts each batch; None: each batch
        # observes itself
        self.stream_observation = observation
        self.query_name = query_name
        # the last batch had bad records: bad records come in runs (a producer's bug, a schema change), so the next
        # batch is cached and its dead letters are taken from that one read instead of reading the batch again
        self.bad_before = False
        self._exprs: BatchExprs | None = None
        self._jquery: Any = None  # the running query's StreamExecution (JVM), looked up by its first batch
        # the dead letters staged beside the checkpoint and committed every so often (in process; an engine's worker
        # commits each batch's own)
        self.staged: StagedDeadLetters | None = None
        self._letters: tuple[tuple[Any, ...], list[Any]] | None = None  # letter_columns by batch shape
        self.letters_in_plan = False  # the stream's observation collects each batch's dead letters (letter_metric)

    def stage_dead_letters(self, checkpoint: str) -> None:
        if self.dlq is not None:
            self.staged = StagedDeadLetters(
                checkpoint, self.dlq, self.spark, every_s=self.settings.options.dead_letter_every_s
            )

    def commit_dead_letters(self) -> None:
        """Commit the staged dead letters to the dead-letter table (at the start and the end of a run)."""
        if self.staged is not None:
            with spark_errors("commit the staged dead letters of", self.table.entry.ident):
                self.staged.commit()

    def forget_query(self) -> None:
        """The query restarted: its execution is looked up again by the next batch."""
        self._jquery = None

    @property
    def with_metadata(self) -> bool:
        return self.settings.with_metadata

    def run(self, df: DataFrame, batch_id: int) -> tuple[BatchStats, list[str]]:
        """Write one batch (unless both its writes are committed already) and time it."""
        started = time.monotonic()
        stats = BatchStats(batch_id)
        done = Done(
            batch_id <= self.target.committed_batch(),
            self.dlq is None
            or batch_id <= self.dlq.committed_batch()
            or (self.staged is not None and self.staged.has(batch_id)),
        )
        names: list[str] = []
        if done.table and done.dlq:
            stats.skipped = True
        else:
            names = self.mode.write(self, df, batch_id, stats, done)
            if not done.table:  # the one post-commit step of the table's format (its mirrors follow), batch by batch
                self.table.adapter.after_commit(self.table)
        if self.staged is not None and self.staged.due():
            self.staged.commit()
        stats.duration_s = round(time.monotonic() - started, 3)
        stats.finished_at = time.time()
        return stats, names

    def append(self, df: DataFrame, batch_id: int, stats: BatchStats, done: Done, *, cache: bool,
               prepare: Callable[[DataFrame], DataFrame] | None = None) -> list[str]:  # fmt: skip
        """Append the batch's good rows and dead-letter its bad ones; ``prepare`` runs on the batch first.

        The batch is cached when it is read more than once before its table write (``prepare``, the check for bad
        records without a dead-letter table), or when the last batch had bad records (``bad_before``): then its
        dead letters are split off the one read the table write made. Otherwise the dead-letter write reads it again
        only when the batch has bad records, and then re-runs its plan: a stateful batch replays from the state
        version before it, and bad records are salted so the dedupe never drops one, so both runs see the same
        records.
        """
        base = df.persist() if cache else df
        df = base
        names: list[str] = []
        try:
            if prepare is not None:
                df = prepare(base)
            if self.dlq is None:
                refuse_bad(self.bad_rows(df))
            collected, in_write = None, False
            if done.table:  # a replay after a crash between the two writes: the table has this batch already
                bad = self.bad_rows(df).count()
                stats.skipped = bad == 0
            else:
                if cache and prepare is None and not done.dlq and self.collects_letters:  # likely bad: collect beside
                    collected = self.staged.collect_beside(self.bad_rows(df))  # type: ignore[union-attr]
                bad, names, letters_json = self._write_good(df, batch_id, stats)
                if letters_json is not None:  # the plan's observation collected them as the table write read them
                    collected, in_write = functools.partial(letters_from_json, letters_json), True
            self.write_dead_letters(df, batch_id, bad, stats, done, collected, in_write=in_write)
            self.bad_before = bad > 0
        finally:
            if df is not base:
                df.unpersist()
            if cache:
                base.unpersist()
        return names

    def _write_good(self, df: DataFrame, batch_id: int, stats: BatchStats) -> tuple[int, list[str], str | None]:
        """Append the batch's good rows to the table and count the batch in the same job; its bad-record count, the
        unknown field names and the dead letters the plan's observation collected (``letter_metric``)."""
        from pyspark.sql import Observation

        columns = df.columns
        has_unknown = UNKNOWN in columns
        sampled = CHECKED in columns  # else every good record was checked
        exprs = self.batch_exprs(has_unknown, sampled)
        obs = None
        if self.stream_observation is not None:  # the streaming plan counts the batch
            observed = df
        else:
            obs = Observation(f"lakecat_{batch_id}_{uuid.uuid4().hex[:8]}")
            # Spark does not prune columns below an observation: the unread ones are dropped so the table write does
            # not build the dead letter's columns for every row. A drop of the few, not a select of the many: each
            # column named costs py4j round trips on every batch.
            unread = [c for c in columns if c not in exprs.inputs]
            observed = (df.drop(*unread) if unread else df).observe(obs, *exprs.metrics)
        write_started = time.monotonic()
        self.target.write(observed.where(exprs.good).select(*exprs.columns), batch_id)
        stats.commit_duration_s = round(time.monotonic() - write_started, 3)
        m = obs.get if obs is not None else self._counted_by_stream(df, batch_id)
        rows, bad = int(m["rows"] or 0), int(m["bad"] or 0)
        stats.rows_written, stats.rows_read = rows - bad, rows
        letters_json = m.get("letters")
        if not has_unknown:
            return bad, [], letters_json
        stats.unknown_fields = int(m["unknown"] or 0)
        stats.unknown_checked = int(m["checked"] or 0) if sampled else stats.rows_written
        return bad, list(m["names"] or []), letters_json

    @property
    def collects_letters(self) -> bool:
        """Whether the dead letters may be collected in this process before their count is known: staged, and every
        batch is bounded to what the driver may collect (``BatchBound.collects_letters``; every default bound is)."""
        return self.staged is not None and self.settings.bound.collects_letters

    def letter_metric(self, df: DataFrame) -> Any:
        """An observation's metric ``letters``: the batch's dead letters collected as JSON by the job that reads it
        (``staged.letters_from_json`` reads them), so the table write's one read gives them with no second job."""
        from pyspark.sql import functions as F

        bad = F.when(F.col(ERROR).isNotNull(), F.struct(*self.letter_columns(df)))
        return F.to_json(F.collect_list(bad), JSON_OPTIONS).alias("letters")

    def write_dead_letters(self, df: DataFrame, batch_id: int, bad: int, stats: BatchStats, done: Done,
                           collected: Callable[[], Any] | None = None, *, in_write: bool = False) -> None:  # fmt: skip
        """Stage the batch's ``bad`` records, or with too many to stage (or no staging), write them to the
        dead-letter table now; ``collected``: the call that returns them, collected while the table write ran
        (``in_write``: by the table write's own job, the plan's observation)."""
        data = collected() if collected is not None else None
        if self.dlq is None or done.dlq or not bad:
            return
        if self.staged is not None and bad <= STAGE_MAX_ROWS:
            stats.letters_in_write = in_write and data is not None
            reasons = self.staged.stage(data if data is not None else self.staged.collect(self.bad_rows(df)), batch_id)
        else:
            stats.letters_in_write = False
            if self.staged is not None:  # the staged ones first, in batch order
                self.staged.commit()
            reasons = write_dead_letters(self.dlq, df, batch_id, bad, self.letter_columns(df))
        stats.dead_letter_reasons = reasons
        stats.rows_dead_lettered = bad

    def bad_rows(self, df: DataFrame) -> DataFrame:
        return letters(df, self.letter_columns(df))

    def letter_columns(self, df: DataFrame) -> list[Any]:
        """``dead_letters.letter_columns`` for this batch's shape, built once for each shape and the columns events
        fill (merge schema adds some)."""
        columns = df.columns
        packed = packed_fields(df)
        key = (tuple(columns), tuple(packed), tuple(f.simpleString() for f in self.fields))
        if self._letters is None or self._letters[0] != key:
            self._letters = (key, letter_columns(columns, packed, self.fields, available(self.spark)))
        return self._letters[1]

    def _counted_by_stream(self, df: DataFrame, batch_id: int) -> dict[str, Any]:
        """The counters the streaming plan's observation took of this batch, read after the table write ran it.

        ``foreachBatch`` hands over the rows of the query's execution of this batch (its ``lastExecution``), whose
        observation holds what the write's job counted as it read them (``observedMetrics`` reads the accumulators at
        the time of the call: after the dead-letter write, which runs the batch again, they would count twice). When
        that cannot be read, or the execution is not this batch's, the batch is counted again by two jobs: slower,
        never wrong."""
        from pyspark.sql import functions as F

        why = "not found"
        try:
            if self._jquery is None:
                active = self.spark._jsparkSession.streams().active()  # type: ignore[attr-defined]
                self._jquery = next(q for q in active if q.name() == self.query_name).streamingQuery()
            execution = self._jquery.lastExecution()
            if execution.currentBatchId() == batch_id:
                found = execution.observedMetrics().get(self.stream_observation)
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

    def batch_exprs(self, has_unknown: bool, sampled: bool) -> BatchExprs:
        """The counters and the good rows' filter and columns of a batch write, built once per set of columns: every
        PySpark function call is a few py4j round trips."""
        from pyspark.sql import functions as F

        key = (tuple(f.name for f in self.fields), has_unknown, sampled)
        if self._exprs is None or self._exprs.key != key:
            metrics = [F.count(F.lit(1)).alias("rows"), F.count(F.col(ERROR)).alias("bad")]
            if has_unknown:
                metrics += [F.count(F.col(UNKNOWN)).alias("unknown"),
                            F.slice(F.array_distinct(F.flatten(F.collect_set(F.col(UNKNOWN)))), 1, 100).alias("names")]  # fmt: skip
            if sampled:
                metrics.append(F.count(F.when(F.col(CHECKED), 1)).alias("checked"))
            self._exprs = BatchExprs(key, metrics, F.col(ERROR).isNull(), self.good_columns(),
                                     batch_columns(self.fields, self.with_metadata))  # fmt: skip
        return self._exprs

    def good_columns(self) -> list[Any]:
        """The table's columns of a good record (and the source's metadata columns with --with-kafka-metadata)."""
        from pyspark.sql import functions as F

        cols = [F.col(quote(f.name)) for f in self.fields]  # a column named `a.b` is that column, not a field b of a
        if self.with_metadata:
            cols += self.source.metadata_values()
        return cols
