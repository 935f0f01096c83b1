"""The streaming plan: the mode's parse, the dedupe stage, the batches' shape and the plan's own batch counters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..identifiers import quote
from ..records import CHECKED, ERROR, EVENT_TIME, RAW, SALT, UNKNOWN
from .parse import batch_columns, pack_bad

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .batch import BatchWriter
    from .modes import Mode
    from .options import StreamSettings


@dataclass(frozen=True)
class Dedupe:
    """``--dedupe-key``: drop a record whose key was seen within the watermark of its event time."""

    keys: list[str]
    event_time: str  # a column of the table, or "_lakecat_ts": the record's arrival
    watermark_s: int

    @classmethod
    def of(cls, settings: StreamSettings) -> Dedupe | None:
        keys = settings.options.dedupe_columns
        if not keys:
            return None
        return cls(keys, settings.event_time or "_lakecat_ts", settings.options.watermark_s or 0)

    def mark(self, df: DataFrame) -> DataFrame:
        """Add what the dedupe reads: a salt that keeps every bad record apart, and the event time."""
        from pyspark.sql import functions as F

        salt = F.when(F.col(ERROR).isNotNull(), F.concat_ws(":", F.col("_lakecat_source"), F.col("_lakecat_partition"),
                                                               F.col("_lakecat_offset"), F.xxhash64(F.col(RAW))))  # fmt: skip
        if self.event_time == "_lakecat_ts":  # no time column: the record's arrival (Kafka timestamp; files: now)
            event = F.coalesce(F.col("_lakecat_ts"), F.current_timestamp())
        else:
            # A dead-lettered record, or an event without a time, has none (null): it is never late and does not move
            # the watermark. A TIMESTAMP_NTZ column is read in the session's time zone (UTC): a watermark is defined
            # on TIMESTAMP only.
            event = F.when(F.col(ERROR).isNull(), F.col(quote(self.event_time)).cast("timestamp"))
        return df.select("*", salt.alias(SALT), event.alias(EVENT_TIME))

    def apply(self, df: DataFrame, *, packed: bool) -> DataFrame:
        df = df.withWatermark(EVENT_TIME, f"{self.watermark_s} seconds").dropDuplicatesWithinWatermark(
            [*self.keys, SALT]
        )
        return df.drop(SALT, EVENT_TIME) if packed else df  # packed batches keep only what they read


def stream_plan(writer: BatchWriter, mode: Mode) -> DataFrame:
    """The stream's DataFrame, as the batches receive it."""
    df = mode.parse(writer)
    dedupe = Dedupe.of(writer.settings)
    if dedupe is not None:
        df = dedupe.mark(df)
    if mode.packs:  # before the dedupe: its shuffle writes every column of every record
        df = pack_bad(
            df, batch_columns(writer.fields, writer.with_metadata) | ({SALT, EVENT_TIME} if dedupe else set())
        )
    if dedupe is not None:
        df = dedupe.apply(df, packed=mode.packs)
    if writer.stream_observation is not None:
        # the plan counts each batch as the table write reads it (BatchWriter._counted_by_stream): observed in the
        # batch instead, the observation would split the write into two stages with a copy of every row between them
        columns = set(df.columns)
        exprs = writer.batch_exprs(UNKNOWN in columns, CHECKED in columns)
        writer.letters_in_plan = writer.collects_letters
        letters = [writer.letter_metric(df)] if writer.letters_in_plan else []
        df = df.observe(writer.stream_observation, *exprs.metrics, *letters)
    return df
