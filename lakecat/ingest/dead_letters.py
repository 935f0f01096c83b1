"""Dead letters: a batch's bad records, with why each is bad and where it came from, in their own table."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError, LakecatError
from ..jvm import available
from ..records import DETAIL, ERROR, RAW
from .parse import json_detail_of_raw, unpacked

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
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


def bad_records(df: DataFrame, fields: list[StructField], spark: SparkSession) -> DataFrame:
    """A batch's bad records with their columns unpacked, ``DETAIL`` among them: computed from the raw value when
    the batch was parsed without it."""
    from pyspark.sql import functions as F

    bad = unpacked(df).where(F.col(ERROR).isNotNull())
    if DETAIL in bad.columns:
        return bad
    return bad.withColumn(DETAIL, json_detail_of_raw(fields, available(spark)))


def refuse_bad(df: DataFrame, fields: list[StructField], spark: SparkSession) -> None:
    """Without a dead-letter table the first bad record fails the batch before anything is written."""
    first = bad_records(df, fields, spark).select(ERROR, DETAIL, "_lakecat_source", "_lakecat_partition",
                                                  "_lakecat_offset").limit(1).collect()  # fmt: skip
    if first:
        r = first[0]
        where = f"{r[2]}" + (f" partition {r[3]} offset {r[4]}" if r[3] is not None else "")
        raise LakecatError(f"record at {where} rejected ({r[0]}: {r[1]}) and --no-dlq is set; "
                           "nothing of this batch was written")  # fmt: skip


def dead_letter_rows(df: DataFrame, batch_id: int, fields: list[StructField], spark: SparkSession) -> DataFrame:
    """A batch's bad records as rows of the dead-letter table."""
    from pyspark.sql import functions as F

    raw = F.col(RAW)
    return bad_records(df, fields, spark).select(
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


def write_dead_letters(dlq: Target, df: DataFrame, batch_id: int, bad: int, fields: list[StructField],
                       spark: SparkSession) -> dict[str, int]:  # fmt: skip
    """Write the batch's bad records to the dead-letter table; their count by reason, taken in the same job
    (counting them in the table write would add a test per reason to every good record)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    obs = Observation(f"lakecat_dlq_{batch_id}_{uuid.uuid4().hex[:8]}")
    rows = dead_letter_rows(df, batch_id, fields, spark).observe(
        obs, *[F.count(F.when(F.col("error") == r, 1)).alias(r) for r in DEAD_LETTER_REASONS]
    )
    if not dlq.write(rows, batch_id):
        return {}
    m: dict[str, Any] = obs.get
    reasons = {r: int(m[r] or 0) for r in DEAD_LETTER_REASONS}
    reasons["other"] = bad - sum(reasons.values())
    return {r: n for r, n in reasons.items() if n}
