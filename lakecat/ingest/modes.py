"""The ingest modes, chosen once per stream: how records are parsed and how each batch reaches the table.

- ``Append``: plain events (JSON, or rows a csv/parquet source types itself), appended;
- ``MergeSchema``: JSON events whose new top-level fields become columns before each batch is appended;
- ``ChangeEvents``: Debezium change events, the last per key applied with one idempotent MERGE per batch.

``--dedupe-key`` is a stage of the streaming plan (``plan.Dedupe``) over the first two.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

from ..cdc import CDC_TS, OP, last_per_key, merge, parse_debezium
from ..records import ERROR
from .dead_letters import refuse_bad
from .evolve import evolve_changes, evolve_json
from .parse import parse_json

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .batch import BatchWriter, Done
    from .options import StreamSettings
    from .state import BatchStats


class Mode(ABC):
    #: Whether a bad record's dead-letter columns travel packed in one struct (``parse.pack_bad``); a mode whose
    #: batches read a bad record's columns every time keeps them apart.
    packs: ClassVar[bool]

    @abstractmethod
    def parse(self, writer: BatchWriter) -> DataFrame:
        """The stream's records, parsed against the table's columns and classified (``ERROR``)."""

    @abstractmethod
    def write(self, writer: BatchWriter, df: DataFrame, batch_id: int, stats: BatchStats, done: Done) -> list[str]:
        """Write one batch; the names of the fields the table lacks that its records carried."""


class Append(Mode):
    packs = True

    def parse(self, writer: BatchWriter) -> DataFrame:
        source, stream = writer.source, writer.settings.stream
        if not source.parses_json:
            return source.open_typed(writer.spark, writer.fields, stream)
        # no DETAIL in the stream: a batch computes it for its bad records alone (dead_letters.letter_columns)
        return parse_json(source.open_raw(writer.spark, stream), writer.fields, keep_value=False,
                          count_unknown=writer.settings.unknown_mode, detail=False)  # fmt: skip

    def write(self, writer: BatchWriter, df: DataFrame, batch_id: int, stats: BatchStats, done: Done) -> list[str]:
        # without a dead-letter table the batch is read twice: checked for bad records, then written; after a batch
        # with bad records the next is kept for its dead letters, unless the plan's observation collects them
        keep = writer.bad_before and not writer.letters_in_plan
        return writer.append(df, batch_id, stats, done, cache=writer.dlq is None or keep)


class MergeSchema(Mode):
    packs = False

    def parse(self, writer: BatchWriter) -> DataFrame:
        # each batch is parsed again after it adds columns (evolve_json): the raw value and the detail stay
        raw = writer.source.open_raw(writer.spark, writer.settings.stream)
        return parse_json(raw, writer.fields, keep_value=True, count_unknown=writer.settings.unknown_mode, detail=True)

    def write(self, writer: BatchWriter, df: DataFrame, batch_id: int, stats: BatchStats, done: Done) -> list[str]:
        return writer.append(df, batch_id, stats, done, cache=True, prepare=lambda batch: evolve_json(writer, batch))


class ChangeEvents(Mode):
    packs = False

    def __init__(self, keys: list[str], *, evolve: bool) -> None:
        self.keys = keys
        self.evolve = evolve  # merge schema: columns the events' after images carry are added

    def parse(self, writer: BatchWriter) -> DataFrame:
        raw = writer.source.open_raw(writer.spark, writer.settings.stream)
        return parse_debezium(raw, writer.fields, self.keys, allow_new=self.evolve)

    def write(self, writer: BatchWriter, df: DataFrame, batch_id: int, stats: BatchStats, done: Done) -> list[str]:
        """The batch's change events, reduced to the last per key, applied with one idempotent MERGE."""
        from pyspark.sql import functions as F

        parsed = base = df.persist()
        if self.evolve:
            base = evolve_changes(writer, parsed, self.keys)
        try:
            if writer.dlq is None:
                refuse_bad(writer.bad_rows(base))
            m = base.agg(F.count(F.lit(1)).alias("rows"), F.count(F.col(ERROR)).alias("bad")).first()
            assert m is not None  # an aggregate always has its one row
            rows, bad = int(m["rows"] or 0), int(m["bad"] or 0)
            if done.table:
                stats.skipped = bad == 0
            else:
                if rows - bad:
                    self._merge(writer, base, batch_id, stats)
                writer.target.last_batch = batch_id
                stats.rows_written, stats.rows_read = rows - bad, rows
            writer.write_dead_letters(base, batch_id, bad, stats, done)
        finally:
            base.unpersist()
            parsed.unpersist()
        return []

    def _merge(self, writer: BatchWriter, batch: DataFrame, batch_id: int, stats: BatchStats) -> None:
        from pyspark.sql import functions as F

        columns = [f.name for f in writer.fields]
        good = batch.where(F.col(ERROR).isNull()).select(*columns, OP, CDC_TS, "_lakecat_offset")
        # materialized: MERGE wants a deterministic source, the in-batch position is not
        changes = last_per_key(good, self.keys).select(*columns, OP).localCheckpoint(eager=True)
        started = time.monotonic()
        merge(writer.table, changes, self.keys, columns, app_id=writer.target.app_id, batch_id=batch_id)
        stats.commit_duration_s = round(time.monotonic() - started, 3)


def mode_for(settings: StreamSettings) -> Mode:
    options = settings.options
    if options.change_format is not None:
        return ChangeEvents(settings.cdc_key or [], evolve=options.merge_schema)
    return MergeSchema() if options.merge_schema else Append()
