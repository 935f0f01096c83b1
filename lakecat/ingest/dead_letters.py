"""Dead letters: a batch's bad records, with why each is bad and where it came from, in their own table."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError, LakecatError
from ..identifiers import quote
from ..records import BAD, DETAIL, ERROR, RAW
from .parse import json_detail_of_raw

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField

    from ..protocols import CatalogLike, TableLike
    from .target import Target

log = logging.getLogger(__name__)

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


def dead_letter_table(catalog: CatalogLike, name: str, table: TableLike) -> TableLike:
    """The dead-letter table ``name``, created in the table's format when missing; refused if it lacks a column."""
    dlq = catalog.create_table(name, schema=DLQ_SCHEMA, format=table.format, if_not_exists=True)
    have = {f.name for f in dlq.spark_schema().fields}
    if not set(DLQ_COLUMNS) <= have:
        raise InvalidArgumentError(
            f"dead-letter table {name} lacks the columns {', '.join(sorted(set(DLQ_COLUMNS) - have))}"
        )
    if dlq.format != table.format:
        log.info("dead-letter table %s is %s, the table is %s", name, dlq.format, table.format)
    return dlq


def refuse_bad(bad: DataFrame) -> None:
    """Without a dead-letter table the first of a batch's bad records (``letters``) fails the batch before anything is
    written."""
    first = bad.select("error", "error_detail", "source", "kafka_partition", "kafka_offset").limit(1).collect()
    if first:
        r = first[0]
        where = f"{r[2]}" + (f" partition {r[3]} offset {r[4]}" if r[3] is not None else "")
        raise LakecatError(f"record at {where} rejected ({r[0]}: {r[1]}) and dlq=False is set; "
                           "nothing of this batch was written").with_cli_terms({"dlq=False is set": "--no-dlq is set"})  # fmt: skip


#: The dead letter's columns a batch's records give; ``ingest_time`` and ``batch_id`` are added where they are written.
LETTER_COLUMNS = DLQ_COLUMNS[:-2]


def packed_fields(df: DataFrame) -> list[str]:
    """The fields of a batch's ``BAD`` struct (the columns only bad records fill), none when it has none."""
    return list(df.schema[BAD].dataType.fieldNames()) if BAD in df.columns else []  # type: ignore[attr-defined]


def letter_columns(columns: list[str], packed: list[str], fields: list[StructField], fast: bool) -> list[Any]:
    """The projection of a batch's bad records (``columns``; ``packed``: the fields of its ``BAD`` struct) onto
    ``LETTER_COLUMNS``. Built once per batch shape and reused: each column built costs py4j round trips."""
    from pyspark.sql import functions as F

    def col(name: str) -> Any:
        return F.col(BAD)[name] if name in packed else F.col(quote(name))

    raw = col(RAW)
    has_detail = DETAIL in columns or DETAIL in packed
    detail = col(DETAIL) if has_detail else json_detail_of_raw(fields, fast, raw=raw)
    text = raw.cast("string")
    return [
        raw.alias("raw_value"),
        F.when(F.is_valid_utf8(text), text).alias("raw_text"),
        F.col(ERROR).alias("error"),
        detail.alias("error_detail"),
        col("_lakecat_source").alias("source"),
        col("_lakecat_topic").alias("kafka_topic"),
        col("_lakecat_partition").alias("kafka_partition"),
        col("_lakecat_offset").alias("kafka_offset"),
        col("_lakecat_key").alias("kafka_key"),
        F.when(col("_lakecat_topic").isNotNull(), col("_lakecat_ts")).alias("kafka_timestamp"),
    ]


def letters(df: DataFrame, columns: list[Any]) -> DataFrame:
    """A batch's bad records as ``LETTER_COLUMNS`` (``columns`` from ``letter_columns``): one filter, one projection.
    The time and the batch id are left out so the plan is the same from batch to batch (Spark compiles it once)."""
    from pyspark.sql import functions as F

    return df.where(F.col(ERROR).isNotNull()).select(*columns)


def dead_letter_rows(df: DataFrame, batch_id: int, columns: list[Any]) -> DataFrame:
    """A batch's bad records as rows of the dead-letter table."""
    from pyspark.sql import functions as F

    return letters(df, columns).select(
        *LETTER_COLUMNS, F.current_timestamp().alias("ingest_time"), F.lit(batch_id).cast("bigint").alias("batch_id")
    )


def write_dead_letters(dlq: Target, df: DataFrame, batch_id: int, bad: int, columns: list[Any]) -> dict[str, int]:
    """Write the batch's bad records to the dead-letter table; their count by reason, taken in the same job
    (counting them in the table write would add a test per reason to every good record)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    obs = Observation(f"lakecat_dlq_{batch_id}_{uuid.uuid4().hex[:8]}")
    rows = dead_letter_rows(df, batch_id, columns).observe(
        obs, *[F.count(F.when(F.col("error") == r, 1)).alias(r) for r in DEAD_LETTER_REASONS]
    )
    if not dlq.write(rows, batch_id):
        return {}
    m: dict[str, Any] = obs.get
    reasons = {r: int(m[r] or 0) for r in DEAD_LETTER_REASONS}
    reasons["other"] = bad - sum(reasons.values())
    return {r: n for r, n in reasons.items() if n}
