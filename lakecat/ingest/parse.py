"""Parsing JSON records against the table's columns, classifying each in the same projection, and the batches' shape.

Spark's ``from_json`` in PERMISSIVE mode with a corrupt-record field flags a value of the wrong type (it would
otherwise come back as a silent null); a second tokenization (``json_object_keys``) spots fields the table lacks.
"""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Any

from ..identifiers import quote
from ..jvm import available, from_json, json_object_keys
from ..records import BAD, CHECKED, CORRUPT, DETAIL, ERROR, META, RAW, UNKNOWN, type_ddl

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField

UNKNOWN_SAMPLE = 16  # "sample": one record in 16 (Kafka: offset % 16 == 0; files: a hash of the value)


def json_path(name: str) -> str | None:
    """A JSON path to the top-level field ``name`` for ``get_json_object`` (None if Spark's path syntax cannot say it:
    its bracket form spells any name but an empty one or one with a quote or a bracket)."""
    return f"$['{name}']" if name and not any(c in name for c in "'[]") else None


def typed_parse(text: Any, fields: list[StructField], fast: bool) -> Any:
    """``from_json`` of ``text`` against ``fields`` in PERMISSIVE mode, with the corrupt-record field ``CORRUPT``;
    ``fast``: through lakecat's ``lakecat_from_json`` (``lakecat.jvm``: the same parse, without a reader per record)."""
    from pyspark.sql import types as T

    typed = T.StructType([T.StructField(f.name, f.dataType, True) for f in fields]
                         + [T.StructField(CORRUPT, T.StringType(), True)])  # fmt: skip
    return from_json(text, typed, CORRUPT, fast=fast)


def _mismatched(text: Any, p: Any, fields: list[StructField]) -> Any:
    """The fields whose value is there as text but not as its type, as ``name (expected TYPE)`` joined by commas."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    paths = {f.name: path for f in fields if (path := json_path(f.name)) is not None}
    if len(paths) == len(fields):  # the field's value as text: get_json_object has generated code
        as_text_of = {name: F.get_json_object(text, path) for name, path in paths.items()}
    else:  # a field name a JSON path cannot spell
        ptext = F.from_json(text, T.StructType([T.StructField(f.name, T.StringType(), True) for f in fields]))
        as_text_of = {f.name: ptext[f.name] for f in fields}
    return F.concat_ws(", ", *[F.when(as_text_of[f.name].isNotNull() & p[f.name].isNull(),
                                      F.lit(f"{f.name} (expected {type_ddl(f.dataType)})")) for f in fields])  # fmt: skip


def json_detail(text: Any, p: Any, fields: list[StructField]) -> Any:
    """The dead letter's ``error_detail`` of a record classified ``ERROR``: ``text`` its value as a string, ``p`` its
    ``typed_parse``."""
    from pyspark.sql import functions as F

    required = [f.name for f in fields if not f.nullable]
    missing = F.concat_ws(", ", *[F.when(p[n].isNull(), F.lit(n)) for n in required]) if required else F.lit("")
    return (
        F.when(F.col(ERROR) == "not_utf8", F.lit("value is not valid UTF-8"))
        .when(F.col(ERROR) == "null_value", F.lit("value is null"))
        .when(F.col(ERROR) == "invalid_json", F.lit("value is not a JSON object"))
        .when(F.col(ERROR) == "type_mismatch", F.concat(F.lit("wrong type: "), _mismatched(text, p, fields)))
        .when(F.col(ERROR) == "missing_required", F.concat(F.lit("missing required field: "), missing))
    )


def json_detail_of_raw(fields: list[StructField], fast: bool = False, raw: Any = None) -> Any:
    """``json_detail`` computed afresh from a bad record's raw value (``raw``, by default the column ``RAW``), for a
    batch parsed without ``DETAIL``."""
    from pyspark.sql import functions as F

    text = (F.col(RAW) if raw is None else raw).cast("string")
    return json_detail(text, typed_parse(text, fields, fast), fields)


def _error(text: Any, p: Any, fields: list[StructField], is_object: Any) -> Any:
    """Why a record is bad (null for a good one)."""
    from pyspark.sql import functions as F

    error = (
        F.when(F.col("value").isNull(), F.lit("null_value"))
        .when(~F.is_valid_utf8(text), F.lit("not_utf8"))
        .when(p.isNull(), F.lit("invalid_json"))
        .when(p[CORRUPT].isNotNull(), F.when(is_object, F.lit("type_mismatch")).otherwise(F.lit("invalid_json")))
    )
    required = [f.name for f in fields if not f.nullable]
    if required:
        error = error.when(functools.reduce(operator.or_, (p[n].isNull() for n in required)), F.lit("missing_required"))
    return error


def parse_json(raw: DataFrame, fields: list[StructField], *, keep_value: bool, count_unknown: str,
               detail: bool = True) -> DataFrame:  # fmt: skip
    """Parse ``value`` against ``fields`` and classify every record in one projection.

    ``count_unknown="all"`` looks for fields the table lacks in every record (needed to evolve the schema),
    ``"sample"`` in one in ``UNKNOWN_SAMPLE`` (marked ``CHECKED``), ``"off"`` never. ``detail=False`` leaves out
    ``DETAIL``, what a dead letter says is wrong: no good record reads it, and the batch computes it from ``RAW`` for
    its bad records alone (``json_detail_of_raw``), which keeps the plan Spark compiles for every batch small.
    """
    from pyspark.sql import functions as F

    fast = available(raw.sparkSession)
    text = F.col("value").cast("string")
    df = raw.select("*", typed_parse(text, fields, fast).alias("_lakecat_p"))
    p = F.col("_lakecat_p")
    df = df.select("*", _error(text, p, fields, json_object_keys(text, fast=fast).isNotNull()).alias(ERROR))
    cols = [p[f.name].alias(f.name) for f in fields]
    extra = []
    if count_unknown in ("all", "sample"):
        known = F.array(*[F.lit(f.name) for f in fields])
        unknown = F.array_except(json_object_keys(text, fast=fast), known)  # null unless the record has unknown fields
        check = F.col(ERROR).isNull()
        if count_unknown == "sample":  # the cheap test first: `&` short-circuits, the other records skip tokenizing
            pick = F.coalesce(F.col("_lakecat_offset"), F.xxhash64(F.col("value")))
            df = df.select("*", ((F.pmod(pick, F.lit(UNKNOWN_SAMPLE)) == 0) & check).alias(CHECKED))
            check = F.col(CHECKED)
            extra.append(F.col(CHECKED))
        extra.append(F.when(check & (F.size(unknown) > 0), unknown).alias(UNKNOWN))
    if detail:
        extra.append(F.when(F.col(ERROR).isNotNull(), json_detail(text, p, fields)).alias(DETAIL))
    # the raw value travels only with bad records (or always when the schema may still grow)
    raw_value = F.col("value") if keep_value else F.when(F.col(ERROR).isNotNull(), F.col("value"))
    return df.select(*cols, ERROR, *META, *extra, raw_value.alias(RAW))


def batch_columns(fields: list[StructField], with_metadata: bool) -> set[str]:
    """What a batch's table write and counters read: the columns events fill, ``ERROR``, the unknown-field check and,
    with ``--with-kafka-metadata``, the provenance."""
    return {f.name for f in fields} | {ERROR, UNKNOWN, CHECKED} | (set(META) if with_metadata else set())


def pack_bad(df: DataFrame, keep: set[str]) -> DataFrame:
    """The batches' shape: the columns of ``keep`` (``batch_columns``), and one ``BAD`` struct (null for a good
    record) with what only the dead letters read: ``RAW``, ``DETAIL`` where the parse made it, and the provenance not
    kept. Spark copies every column of a streaming row twice on its way into a batch, so mostly-null columns are
    packed into one."""
    from pyspark.sql import functions as F

    packed = [c for c in (DETAIL, RAW, *META) if c in df.columns and c not in keep]
    return df.select(*[F.col(quote(c)) for c in df.columns if c in keep],
                     F.when(F.col(ERROR).isNotNull(), F.struct(*[F.col(c) for c in packed])).alias(BAD))  # fmt: skip
