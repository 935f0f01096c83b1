"""The shape records take inside lakecat's pipelines, shared by sources, ingest, CDC and upsert.

A source yields rows of ``value`` (BINARY) plus the provenance columns ``META``; parsing adds the
table's columns, ``ERROR``/``DETAIL`` for records that do not fit, and ``RAW`` (the value, for
dead letters). Nothing here knows a table format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .identifiers import quote

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructField, StructType

ERROR = "_lakecat_error"
DETAIL = "_lakecat_detail"
RAW = "_lakecat_raw"
UNKNOWN = "_lakecat_unknown"
CHECKED = "_lakecat_checked"  # the record was checked for unknown fields (count_unknown_fields="sample")
CORRUPT = "_lakecat_corrupt"
EVENT_TIME = "_lakecat_event_time"
SALT = "_lakecat_salt"
#: A bad record's detail, raw value and provenance in one struct column, null for a good record: what a streaming
#: ingest hands its batches, instead of one column each (every column of that row is copied twice per record).
BAD = "_lakecat_bad"
META = ("_lakecat_key", "_lakecat_topic", "_lakecat_partition", "_lakecat_offset", "_lakecat_ts", "_lakecat_source")
#: The table property that records a change-event key (``ingest --cdc``); ``changes`` pairs updates by it.
CDC_KEY_PROPERTY = "lakecat.cdc.key"
#: Column metadata key of a generated column's expression in Spark schemas.
GENERATED_KEY = "delta.generationExpression"


def input_fields(schema: StructType, generated: set[str] | None = None) -> list[StructField]:
    """The columns events fill: everything but generated columns (the format computes those)."""
    return [f for f in schema.fields if not f.metadata.get(GENERATED_KEY) and f.name not in (generated or ())]


def type_ddl(t: DataType) -> str:
    """A Spark type as SQL DDL (nested field names quoted)."""
    from pyspark.sql import types as T

    if isinstance(t, T.StructType):
        return "STRUCT<" + ", ".join(f"{quote(f.name)}: {type_ddl(f.dataType)}" for f in t.fields) + ">"
    if isinstance(t, T.ArrayType):
        return f"ARRAY<{type_ddl(t.elementType)}>"
    if isinstance(t, T.MapType):
        return f"MAP<{type_ddl(t.keyType)}, {type_ddl(t.valueType)}>"
    if isinstance(t, T.NullType):
        return "STRING"
    return t.simpleString().upper()  # type: ignore[no-any-return]


def spark_lookup(pairs: dict[int, int], key: Any, value_type: str) -> Any:
    """``pairs[key]`` as a Spark column (a literal map; null when the key is absent)."""
    from pyspark.sql import functions as F

    if not pairs:
        return F.lit(None).cast(value_type)
    return F.create_map(*[x for k, v in pairs.items() for x in (F.lit(k), F.lit(v))])[key].cast(value_type)
