"""A directory of landed files as an ingest source: new files only, each exactly once."""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError
from ..identifiers import quote
from ..records import CORRUPT, DETAIL, ERROR, RAW, type_ddl
from .base import Source, StreamOptions, digest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructField

FILE_FORMATS = ("json", "csv", "parquet")


def _any(conditions: Any) -> Any:
    return functools.reduce(operator.or_, conditions)


def _bounded(reader: Any, options: StreamOptions) -> Any:
    """The reader with the batch's bound: a file count, else a byte count (Spark takes one or the other; a batch
    holds at least one file whatever its size)."""
    if options.max_files_per_batch:
        return reader.option("maxFilesPerTrigger", str(options.max_files_per_batch))
    if options.max_bytes_per_batch:
        return reader.option("maxBytesPerTrigger", str(options.max_bytes_per_batch))
    return reader


def file_provenance() -> list[Any]:
    """The provenance columns of a file record: no Kafka coordinates, the file's path and modification time."""
    from pyspark.sql import functions as F

    return [
        F.lit(None).cast("binary").alias("_lakecat_key"),
        F.lit(None).cast("string").alias("_lakecat_topic"),
        F.lit(None).cast("int").alias("_lakecat_partition"),
        F.lit(None).cast("bigint").alias("_lakecat_offset"),
        F.col("_metadata.file_modification_time").alias("_lakecat_ts"),
        F.col("_metadata.file_path").alias("_lakecat_source"),
    ]


@dataclass(frozen=True)
class FileSource(Source):
    """Landed files in a directory: new files only, each exactly once (the checkpoint remembers them).

    Args:
        path: a directory (local path or URI); every file in it is read, new ones as they land.
        format: ``json`` (one JSON object per line, through the same parse and dead-letter path as Kafka),
            ``csv`` (with a header row, typed by the table's schema; malformed rows are dead-lettered) or
            ``parquet`` (typed by the table's schema; incompatible column types are refused up front).
        options: extra Spark reader options (e.g. ``{"sep": ";"}`` for csv).
    """

    path: str
    format: str = "json"
    options: dict[str, str] = field(default_factory=dict)

    kind = "files"
    batch_limits = ("files", "bytes")

    def validate(self) -> None:
        if self.format not in FILE_FORMATS:
            raise InvalidArgumentError(f"invalid file format {self.format!r}: use json, csv or parquet")
        if "://" not in self.path or self.path.startswith("file:"):
            local = Path(self.path.removeprefix("file://").removeprefix("file:")).expanduser()
            if not local.is_dir():
                raise InvalidArgumentError(f"file source {self.path}: not a directory")

    @property
    def uri(self) -> str:
        if "://" in self.path:
            return self.path
        return Path(self.path).expanduser().resolve().as_uri()

    def describe(self) -> str:
        return f"files {self.uri} ({self.format})"

    def fingerprint(self) -> str:
        return f"files-{digest(f'files:{self.format}:{self.uri}')}"

    @property
    def parses_json(self) -> bool:  # type: ignore[override]
        return self.format == "json"

    def open_raw(self, spark: SparkSession, options: StreamOptions) -> DataFrame:
        from pyspark.sql import functions as F

        df = _bounded(spark.readStream.format("text"), options).load(self.uri)
        return df.where(F.trim(F.col("value")) != "").select(
            F.col("value").cast("binary").alias("value"), *file_provenance()
        )

    def open_typed(self, spark: SparkSession, fields: list[StructField], options: StreamOptions) -> DataFrame:
        """csv / parquet through the reader, typed by the table's schema, into the same shape as parsed JSON."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        schema = T.StructType([T.StructField(f.name, f.dataType, True) for f in fields])
        reader = _bounded(spark.readStream.format(self.format), options)
        csv = self.format == "csv"
        if csv:
            schema = schema.add(T.StructField(CORRUPT, T.StringType(), True))
            reader = (
                reader.option("header", "true")
                .option("mode", "PERMISSIVE")
                .option("columnNameOfCorruptRecord", CORRUPT)
            )
        for k, v in self.options.items():
            reader = reader.option(k, v)
        df = reader.schema(schema).load(self.uri)
        required = [f.name for f in fields if not f.nullable]
        error = F.when(F.col(CORRUPT).isNotNull(), F.lit("malformed_csv")) if csv else F.lit(None).cast("string")
        if required:
            error = F.when(error.isNotNull(), error).when(
                _any(F.col(quote(n)).isNull() for n in required), F.lit("missing_required")
            )
        as_json = F.to_json(F.struct(*[F.col(quote(f.name)) for f in fields]))
        raw_text = F.coalesce(F.col(CORRUPT), as_json) if csv else as_json
        missing = (
            F.concat_ws(", ", *[F.when(F.col(quote(n)).isNull(), F.lit(n)) for n in required])
            if required
            else F.lit("")
        )
        out = df.select(
            *[F.col(quote(f.name)) for f in fields],
            error.alias(ERROR),
            *file_provenance(),
            raw_text.alias("_lakecat_text"),
        )
        detail = F.when(
            F.col(ERROR) == "malformed_csv", F.lit("row does not match the table's columns and types")
        ).when(F.col(ERROR) == "missing_required", F.concat(F.lit("missing required field: "), missing))
        return out.select(
            "*",
            F.when(F.col(ERROR).isNotNull(), detail).alias(DETAIL),
            F.when(F.col(ERROR).isNotNull(), F.col("_lakecat_text").cast("binary")).alias(RAW),
        ).drop("_lakecat_text")

    def check_types(self, spark: SparkSession, fields: list[StructField], table_name: str) -> None:
        """Parquet: refuse files whose column types the table cannot take, before anything is written."""
        if self.format != "parquet":
            return
        from pyspark.sql import types as T

        try:
            found = spark.read.format("parquet").load(self.uri).schema
        except Exception:  # noqa: BLE001 - an empty directory has no schema yet; files arriving later are read typed
            return
        widen = {(T.IntegerType, T.LongType), (T.ShortType, T.IntegerType), (T.ShortType, T.LongType),
                 (T.ByteType, T.ShortType), (T.ByteType, T.IntegerType), (T.ByteType, T.LongType),
                 (T.FloatType, T.DoubleType), (T.IntegerType, T.DoubleType)}  # fmt: skip
        by_name = {f.name: f.dataType for f in found.fields}
        for f in fields:
            got = by_name.get(f.name)
            if got is None or got == f.dataType or (type(got), type(f.dataType)) in widen:
                continue
            raise InvalidArgumentError(
                f"ingest into {table_name}: column {f.name} is {type_ddl(got)} in the parquet files under {self.uri} "
                f"but {type_ddl(f.dataType)} in the table; nothing was written"
            )
