"""Change data capture: Debezium change events applied to a table of either format with MERGE.

The streaming side lives in :mod:`lakecat.ingest` (``ingest(..., cdc="debezium", key=[...])``); this
module holds what is specific to change events:

- :func:`parse_debezium` turns raw records (Kafka values, or JSON lines from files) into one row per
  event: the operation (upsert or delete), the row image, its source position, and an error for
  events that cannot be applied (those go to the dead-letter table);
- :func:`last_per_key` reduces a micro-batch to the last event per key in source order (Kafka
  offset, then ``ts_ms``), so that a delete followed by a re-create ends with the row present;
- :func:`merge` applies such a reduced batch with one MERGE, as one commit that carries the batch's
  idempotence marker (Delta: the ``txnAppId``/``txnVersion`` transaction of the same commit; Iceberg:
  the ``lakecat.query-id``/``lakecat.batch-id`` snapshot properties), so a batch replayed after a
  crash is recognised and not applied twice;
- :func:`upsert` is the batch twin: MERGE a DataFrame or a set of files into a table.

Debezium's JSON comes with or without the ``{"schema", "payload"}`` wrapper. ``op`` is ``c``
(create), ``r`` (snapshot read), ``u`` (update) or ``d`` (delete); a tombstone (null value after a
delete) deletes the key named by the Kafka message key. Timestamps may be ISO strings
(``ZonedTimestamp``) or epoch numbers (``Timestamp`` ms, ``MicroTimestamp`` µs, ``NanoTimestamp`` ns
— told apart by magnitude), dates ISO strings or days since the epoch (``Date``); decimals must be
numbers or strings (``decimal.handling.mode=string|double``; the default base64 ``precise`` encoding
is dead-lettered as a type mismatch).
"""

from __future__ import annotations

import functools
import operator
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .engine import first_line, spark_conf, spark_errors, with_retries
from .errors import InvalidArgumentError, columns_note, invalid
from .identifiers import parse_columns, quote
from .jvm import available, from_json
from .predicate import check_columns
from .records import CDC_KEY_PROPERTY, CORRUPT, DETAIL, ERROR, META, RAW
from .results import UpsertResult
from .source_files import source_schema
from .sources.files import FILE_FORMATS
from .versions import find_ref

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructField

    from .protocols import TableLike

CDC_FORMATS = ("debezium",)
OP = "_lakecat_op"  # "u" (upsert: insert or update) or "d" (delete) after parsing
CDC_TS = "_lakecat_cdc_ts"
POS = "_lakecat_pos"
KEY_PROPERTY = CDC_KEY_PROPERTY
UPSERT_OPS = ("c", "r", "u")


def check_cdc(cdc: str | None) -> str | None:
    if cdc is None:
        return None
    name = str(cdc).strip().lower()
    if name not in CDC_FORMATS:
        raise InvalidArgumentError(f"unknown CDC format {cdc!r}: use {', '.join(CDC_FORMATS)}")
    return name


def check_key_names(
    key: str | list[str] | tuple[str, ...] | None, names: list[str], table: str, *, what: str = "key"
) -> list[str]:
    """The key columns, checked by name against ``names`` (the table's input columns, from its metadata: no JVM)."""
    if not key:
        raise invalid(f"{what}= is required: the column(s) that identify a row, e.g. {what}='id'",
                      f"--{what.replace('_', '-')} is required: the column(s) that identify a row, e.g. "
                      f"--{what.replace('_', '-')} id")  # fmt: skip
    keys = parse_columns(key)
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise InvalidArgumentError(f"{what}=: table {table} has no column {', '.join(unknown)}{columns_note(names)}"
                                   ).with_cli_terms({f"{what}=": f"--{what.replace('_', '-')}"})  # fmt: skip
    return keys


def input_column_names(table: TableLike) -> list[str]:
    """The columns a writer fills, from the table's metadata (no JVM): all but those the format generates."""
    return [c.name for c in table.describe().schema if not c.generated]


def check_key(
    key: str | list[str] | tuple[str, ...] | None, fields: list[StructField], table: str, *, what: str = "key"
) -> list[str]:
    """The key columns, validated against the table's input columns."""
    keys = check_key_names(key, [f.name for f in fields], table, what=what)
    from pyspark.sql import types as T

    for f in fields:
        if f.name in keys and isinstance(f.dataType, (T.StructType, T.ArrayType, T.MapType)):
            raise InvalidArgumentError(
                f"{what}: column {f.name} is {f.dataType.simpleString()}; a key must be a plain value"
            )
    return keys


# --- parsing -----------------------------------------------------------------------------------
def _is_time(t: Any) -> bool:
    from pyspark.sql import types as T

    return isinstance(t, (T.TimestampType, T.TimestampNTZType, T.DateType))


def _decoded(t: Any) -> bool:
    """Columns whose wire value needs the envelope's schema block to be read right: times and decimals."""
    from pyspark.sql import types as T

    return _is_time(t) or isinstance(t, (T.DecimalType, T.StringType))


def _wire_type(t: Any) -> Any:
    """How a column is parsed off the wire: times and decimals as their JSON text (epoch numbers, ISO strings,
    base64 of an unscaled integer, ``{"scale", "value"}`` objects), decoded by their declared logical type."""
    from pyspark.sql import types as T

    return T.StringType() if _decoded(t) else t


# Kafka Connect / Debezium logical types (the ``name`` of a field in the envelope's schema block).
_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_VARIABLE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
_EPOCH_DAYS = ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date")
_EPOCH_MILLIS = ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp")
_EPOCH_MICROS = ("io.debezium.time.MicroTimestamp",)
_EPOCH_NANOS = ("io.debezium.time.NanoTimestamp",)
_ZONED = ("io.debezium.time.ZonedTimestamp",)
_TIME_OF_DAY = {
    "io.debezium.time.Time": 1000,
    "org.apache.kafka.connect.data.Time": 1000,
    "io.debezium.time.MicroTime": 1,
    "io.debezium.time.NanoTime": -1000,
}  # to micros: *n, or /n when negative


def _decimal_from_bytes(b64: Column, scale: Column, t: Any) -> Column:
    """Kafka Connect's Decimal: base64 of the unscaled value's big-endian two's-complement bytes, scale aside."""
    from pyspark.sql import functions as F

    b = F.unbase64(b64)
    n = F.length(b)
    octets = F.transform(F.sequence(F.lit(1), F.greatest(n, F.lit(1))),
                         lambda i: F.conv(F.hex(F.substring(b, i, 1)), 16, 10).cast("int"))  # fmt: skip
    negative = octets[0] >= 128
    zero = F.lit(0).cast("decimal(38,0)")
    # two's complement: a negative value is -(~bytes + 1); accumulating the inverted bytes keeps the magnitude small
    magnitude = F.aggregate(octets, zero, lambda acc, x: F.try_add(F.try_multiply(acc, F.lit(256)),
                                                                  F.when(negative, F.lit(255) - x).otherwise(x)))  # fmt: skip
    digits = F.when(negative, F.try_add(magnitude, F.lit(1))).otherwise(magnitude).cast("string")
    padded = F.lpad(digits, F.greatest(F.length(digits), scale + 1), "0")
    length = F.length(padded)
    text = F.concat(F.when(negative, F.lit("-")).otherwise(F.lit("")), F.substring(padded, F.lit(1), length - scale),
                    F.when(scale > 0, F.concat(F.lit("."), F.substring(padded, length - scale + 1, scale))).otherwise(F.lit("")))  # fmt: skip
    return F.when((n > 0) & scale.isNotNull(), text.try_cast(t))


def _time_of_day(n: Column, to_micros: int) -> Column:
    """Micro-, milli- or nanoseconds since midnight as ``HH:mm:ss.SSSSSS``."""
    from pyspark.sql import functions as F

    micros = n * F.lit(to_micros) if to_micros > 0 else F.floor(n / F.lit(-to_micros))
    return F.date_format(F.timestamp_micros(micros), "HH:mm:ss.SSSSSS")


def _decode(text: Column, logical: Column, scale: Column, t: Any) -> Column:
    """A wire value (JSON text) as ``t``, by the logical type the schema block declares; without one, by shape."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    n = text.try_cast("bigint")
    if isinstance(t, T.DecimalType):
        variable = F.from_json(text, "scale INT, value STRING")
        return (F.when(logical == _DECIMAL, _decimal_from_bytes(text, scale, t))
                .when(logical == _VARIABLE_DECIMAL, _decimal_from_bytes(variable["value"], variable["scale"], t))
                .otherwise(text.try_cast(t)))  # decimal.handling.mode=string|double, or JSON without schemas  # fmt: skip
    if isinstance(t, T.DateType):
        return (F.when(logical.isin(*_EPOCH_DAYS), F.date_add(F.lit("1970-01-01").cast("date"), n.try_cast("int")))
                .when(logical.isin(*_EPOCH_MILLIS), F.timestamp_millis(n).cast("date"))
                .otherwise(_convert_time(text, t)))  # fmt: skip
    if _is_time(t):
        ts = (F.when(logical.isin(*_EPOCH_MILLIS), F.timestamp_millis(n))
              .when(logical.isin(*_EPOCH_MICROS), F.timestamp_micros(n))
              .when(logical.isin(*_EPOCH_NANOS), F.timestamp_micros(F.floor(n / 1000)))
              .when(logical.isin(*_EPOCH_DAYS), F.date_add(F.lit("1970-01-01").cast("date"), n.try_cast("int")).cast("timestamp"))
              .when(logical.isin(*_ZONED), text.try_cast("timestamp"))
              .otherwise(_convert_time(text, T.TimestampType())))  # fmt: skip
        return ts.cast("timestamp_ntz") if isinstance(t, T.TimestampNTZType) else ts
    if isinstance(t, T.StringType):  # a TIME column lands in a string column as HH:mm:ss.SSSSSS
        out = text
        for name, to_micros in _TIME_OF_DAY.items():
            out = F.when(logical == name, _time_of_day(n, to_micros)).otherwise(out)
        return out
    return text


def _convert_time(c: Column, t: Any) -> Column:
    """A Debezium temporal value (epoch number by magnitude, or ISO text) as ``t``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    digits = c.rlike(r"^-?[0-9]+$")
    n = c.try_cast("bigint")  # malformed values become null here and are dead-lettered as type mismatches
    if isinstance(t, T.DateType):
        return F.when(digits, F.date_add(F.lit("1970-01-01").cast("date"), n.try_cast("int"))).otherwise(
            c.try_cast("date")
        )
    a = F.abs(n)
    epoch = (F.when(a >= F.lit(10**17), F.timestamp_micros(F.floor(n / 1000)))
             .when(a >= F.lit(10**14), F.timestamp_micros(n))
             .when(a >= F.lit(10**11), F.timestamp_millis(n))
             .otherwise(F.timestamp_seconds(n)))  # fmt: skip
    ts = F.when(digits, epoch).otherwise(c.try_cast("timestamp"))
    return ts.cast("timestamp_ntz") if isinstance(t, T.TimestampNTZType) else ts


#: the names of an event's ``after`` columns the table lacks (``parse_debezium(..., allow_new=True)``)
NEW_COLUMNS = "_lakecat_new_columns"
#: the event's raw value, kept for a second parse once new columns were added
VALUE = "_lakecat_value"

# Kafka Connect schema types (and Debezium's logical types) -> the Spark column a new field becomes
_CONNECT_TYPES = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INT", "int64": "BIGINT", "float32": "FLOAT",
                  "float64": "DOUBLE", "boolean": "BOOLEAN", "string": "STRING", "bytes": "BINARY"}  # fmt: skip
_LOGICAL_TYPES = {"io.debezium.time.Date": "DATE", "org.apache.kafka.connect.data.Date": "DATE",
                  "io.debezium.time.Timestamp": "TIMESTAMP", "io.debezium.time.MicroTimestamp": "TIMESTAMP",
                  "io.debezium.time.NanoTimestamp": "TIMESTAMP", "io.debezium.time.ZonedTimestamp": "TIMESTAMP",
                  "org.apache.kafka.connect.data.Timestamp": "TIMESTAMP", "io.debezium.time.Time": "STRING",
                  "io.debezium.time.MicroTime": "STRING", "io.debezium.time.NanoTime": "STRING",
                  "io.debezium.time.ZonedTime": "STRING", "io.debezium.data.VariableScaleDecimal": "DECIMAL(38,10)"}  # fmt: skip


def new_column_type(spec: dict[str, Any] | None, sample: Any) -> str | None:
    """The Spark type of a column an event carries and the table lacks: from the field's declaration in the
    envelope's schema block when there is one (its logical type first: a Decimal with its precision and scale, a
    MicroTimestamp as TIMESTAMP), else from a sample value (None: no value to tell from yet)."""
    if spec:
        name, params = spec.get("name"), spec.get("parameters") or {}
        if name == "org.apache.kafka.connect.data.Decimal":
            scale = int(params.get("scale", 0))
            precision = min(38, max(int(params.get("connect.decimal.precision", 38)), scale, 1))
            return f"DECIMAL({precision},{scale})"
        if name in _LOGICAL_TYPES:
            return _LOGICAL_TYPES[name]
        return _CONNECT_TYPES.get(str(spec.get("type")), "STRING")
    if sample is None:
        return None
    if isinstance(sample, bool):
        return "BOOLEAN"
    if isinstance(sample, int):
        return "BIGINT"
    if isinstance(sample, float):
        return "DOUBLE"
    return "STRING"


def _envelopes(fields: list[StructField], keys: list[str]) -> tuple[Any, Any]:
    """The Spark schemas of a Debezium value (``before``/``after``/``op``/``ts_ms``, with or without the
    ``{"schema", "payload"}`` wrapper) and of its Kafka key, in the types the wire carries."""
    from pyspark.sql import types as T

    image = T.StructType([T.StructField(f.name, _wire_type(f.dataType), True) for f in fields])
    change = [T.StructField("before", image, True), T.StructField("after", image, True),
              T.StructField("op", T.StringType(), True), T.StructField("ts_ms", T.LongType(), True)]  # fmt: skip
    # the schema block of {"schema", "payload"}: each field's logical type (name) and parameters (a Decimal's scale)
    field_schema = T.StructType([T.StructField("field", T.StringType()), T.StructField("name", T.StringType()),
                                 T.StructField("parameters", T.MapType(T.StringType(), T.StringType()))])  # fmt: skip
    section = T.StructType([T.StructField("field", T.StringType()), T.StructField("fields", T.ArrayType(field_schema))])
    schema_block = T.StructType([T.StructField("fields", T.ArrayType(section))])
    envelope = T.StructType([*change, T.StructField("payload", T.StructType(change), True),
                             T.StructField("schema", schema_block, True),
                             T.StructField(CORRUPT, T.StringType(), True)])  # fmt: skip
    by_name = {f.name: f for f in fields}
    key_image = T.StructType([T.StructField(k, _wire_type(by_name[k].dataType), True) for k in keys])
    key_envelope = T.StructType([*key_image.fields, T.StructField("payload", key_image, True),
                                 T.StructField("schema", T.StructType([T.StructField("fields", T.ArrayType(field_schema))]), True)])  # fmt: skip
    return envelope, key_envelope


class _Event:
    """The parts of a parsed change event, as columns of the DataFrame ``_parse`` returns."""

    def __init__(self) -> None:
        from pyspark.sql import functions as F

        self.text = F.col("value").cast("string")
        self.e = F.col("_e")
        self.op, self.after, self.before, self.row_schema = (
            F.col(c) for c in ("_lakecat_op", "_lakecat_after", "_lakecat_before", "_lakecat_rs")
        )
        self.k = F.col("_k")
        self.tombstone = F.col("value").isNull() & F.col("_lakecat_key").isNotNull()

    def part(self, name: str) -> Column:
        """A field of the event, wrapped in ``payload`` or not."""
        from pyspark.sql import functions as F

        return F.when(self.e["payload"].isNotNull(), self.e["payload"][name]).otherwise(self.e[name])


def _parse(raw: DataFrame, fields: list[StructField], keys: list[str]) -> tuple[DataFrame, _Event]:
    """``raw`` with the value and key parsed, and the event's op, images and row schema as columns."""
    from pyspark.sql import functions as F

    envelope, key_envelope = _envelopes(fields, keys)
    ev = _Event()
    df = raw.select("*", from_json(ev.text, envelope, CORRUPT, fast=available(raw.sparkSession)).alias("_e"),
                    F.from_json(F.col("_lakecat_key").cast("string"), key_envelope).alias("_k"))  # fmt: skip
    # before and after share the row schema (the connector's <table>.Value); take it from the "after" section
    df = df.select("*", F.lower(ev.part("op")).alias("_lakecat_op"), ev.part("after").alias("_lakecat_after"),
                   ev.part("before").alias("_lakecat_before"),
                   F.filter(ev.e["schema"]["fields"], lambda s: s["field"] == F.lit("after"))[0]["fields"].alias("_lakecat_rs"))  # fmt: skip
    return df, ev


def _row_values(ev: _Event, fields: list[StructField], keys: list[str]) -> dict[str, Column]:
    """Each input column's value: decoded from the ``after`` image, keys from ``before`` or the Kafka key for a
    delete or a tombstone."""
    from pyspark.sql import functions as F

    kafka_key = {n: F.coalesce(ev.k["payload"][n], ev.k[n]) for n in keys}

    def declared(fields_schema: Column, name: str) -> tuple[Column, Column]:
        spec = F.filter(fields_schema, lambda s: s["field"] == F.lit(name))[0]
        return spec["name"], spec["parameters"]["scale"].try_cast("int")

    def typed(img: Column, f: StructField) -> Column:
        if not _decoded(f.dataType):
            return img[f.name]
        return _decode(img[f.name], *declared(ev.row_schema, f.name), f.dataType)

    def key_value(f: StructField) -> Column:
        from_after = typed(ev.after, f)
        from_before = typed(ev.before, f)
        from_kafka = (_decode(kafka_key[f.name], *declared(ev.k["schema"]["fields"], f.name), f.dataType)
                      if _decoded(f.dataType) else kafka_key[f.name])  # fmt: skip
        return (F.when(ev.tombstone, from_kafka).when(ev.op == "d", F.coalesce(from_before, from_kafka))
                .otherwise(from_after))  # fmt: skip

    return {f.name: (key_value(f) if f.name in keys else F.when(ev.op.isin(*UPSERT_OPS), typed(ev.after, f)))
            for f in fields}  # fmt: skip


def _event_error(ev: _Event, *, allow_new: bool, new_columns: Column, time_errors: Column, missing_key: Column,
                 missing: Column) -> Column:  # fmt: skip
    """The dead-letter reason of an event that cannot be applied (null: it can)."""
    from pyspark.sql import functions as F

    op, e = ev.op, ev.e
    return (
        F.when(ev.tombstone & (missing_key != ""), F.lit("invalid_cdc_event"))
        .when(ev.tombstone, F.lit(None))
        .when(F.col("value").isNull(), F.lit("null_value"))
        .when(~F.is_valid_utf8(ev.text), F.lit("not_utf8"))
        .when(e.isNull(), F.lit("invalid_json"))
        .when(
            e[CORRUPT].isNotNull(),
            F.when(F.json_object_keys(ev.text).isNotNull(), F.lit("type_mismatch")).otherwise(F.lit("invalid_json")),
        )
        .when(op.isNull() | ~op.isin(*UPSERT_OPS, "d"), F.lit("invalid_cdc_event"))
        .when(op.isin(*UPSERT_OPS) & ev.after.isNull(), F.lit("invalid_cdc_event"))
        .when(F.lit(not allow_new) & (F.size(new_columns) > 0), F.lit("schema_mismatch"))
        .when(time_errors != "", F.lit("type_mismatch"))
        .when(missing_key != "", F.lit("missing_key"))
        .when(op.isin(*UPSERT_OPS) & (missing != ""), F.lit("missing_required"))
    )


def _error_detail(ev: _Event, *, unknown_columns: Column, time_errors: Column, missing_key: Column,
                  missing: Column) -> Column:  # fmt: skip
    """The dead letter's detail: what exactly is wrong with the event, in a sentence."""
    from pyspark.sql import functions as F

    op = ev.op
    return (
        F.when(F.col(ERROR) == "null_value", F.lit("value is null and the record has no key"))
        .when(F.col(ERROR) == "not_utf8", F.lit("value is not valid UTF-8"))
        .when(F.col(ERROR) == "invalid_json", F.lit("value is not a JSON object"))
        .when(F.col(ERROR) == "type_mismatch",
              F.concat(F.lit("wrong type: "), F.when(time_errors != "", time_errors).otherwise(F.lit("a field of before/after"))))
        .when(ev.tombstone, F.concat(F.lit("tombstone whose key lacks: "), missing_key))
        .when(op.isNull(), F.lit("no op field: not a Debezium change event"))
        .when(~op.isin(*UPSERT_OPS, "d"), F.concat(F.lit("op "), op, F.lit(" is not applied (only c, r, u, d)")))
        .when(F.col(ERROR) == "invalid_cdc_event", F.concat(F.lit("op "), op, F.lit(" without an after image")))
        .when(F.col(ERROR) == "schema_mismatch", F.concat(F.lit("the table lacks the column(s) "), unknown_columns,
                                                          F.lit(" (ingest --merge-schema adds them)")))
        .when(F.col(ERROR) == "missing_key", F.concat(F.lit("key column is null: "), missing_key))
        .when(F.col(ERROR) == "missing_required", F.concat(F.lit("missing required field: "), missing))
    )  # fmt: skip


def parse_debezium(raw: DataFrame, fields: list[StructField], keys: list[str], *, allow_new: bool = False) -> DataFrame:
    """One row per change event: ``OP``, the row image (the table's input columns), its position, and errors.

    ``raw`` has ``value`` (BINARY) and the ``_lakecat_*`` provenance columns of :mod:`lakecat.ingest`.
    Columns out: the input columns, ``OP``, ``CDC_TS``, and ERROR / DETAIL / RAW / META like a
    plain parse, so the dead-letter path is shared. An upsert whose ``after`` has a column the table lacks (by the
    schema block when the envelope has one, else by the JSON object's keys) is a ``schema_mismatch`` — unless
    ``allow_new``: then ``NEW_COLUMNS`` names them and ``VALUE`` keeps the event for a second parse.
    """
    from pyspark.sql import functions as F

    df, ev = _parse(raw, fields, keys)
    op, after = ev.op, ev.after
    # Computed once, as columns: the checks, the error, its detail and the output refer to them by name. (Written
    # inline, every reference would repeat a value's whole decoding, a plan too large to analyze quickly.)
    staged = {f.name: f"_lakecat_v{i}" for i, f in enumerate(fields)}
    values = _row_values(ev, fields, keys)
    df = df.select("*", *[values[n].alias(c) for n, c in staged.items()])
    values = {n: F.col(c) for n, c in staged.items()}
    decoded = [f for f in fields if _decoded(f.dataType)]
    time_errors = F.concat_ws(", ", *[F.when(after[f.name].isNotNull() & values[f.name].isNull(),
                                             F.lit(f"{f.name} (expected {f.dataType.simpleString()})"))
                                      for f in decoded]) if decoded else F.lit("")  # fmt: skip
    known = [f.name.lower() for f in fields]
    after_text = F.coalesce(F.get_json_object(ev.text, "$.payload.after"), F.get_json_object(ev.text, "$.after"))
    after_names = F.when(ev.row_schema.isNotNull(), F.transform(ev.row_schema, lambda s: s["field"])).otherwise(
        F.json_object_keys(after_text)
    )
    new_columns = F.when(op.isin(*UPSERT_OPS) & after.isNotNull(),
                         F.filter(after_names, lambda n: ~F.lower(n).isin(*known)))  # fmt: skip
    missing_key = F.concat_ws(", ", *[F.when(values[n].isNull(), F.lit(n)) for n in keys])
    required = [f.name for f in fields if not f.nullable and f.name not in keys]
    missing = F.concat_ws(", ", *[F.when(values[n].isNull(), F.lit(n)) for n in required]) if required else F.lit("")
    checks = {"time_errors": time_errors, "missing_key": missing_key, "missing": missing}
    df = df.select("*", _event_error(ev, allow_new=allow_new, new_columns=new_columns, **checks).alias(ERROR))
    detail = _error_detail(ev, unknown_columns=F.array_join(new_columns, ", "), **checks)
    return df.select(
        *[values[f.name].alias(f.name) for f in fields],
        F.when(ev.tombstone | (op == "d"), F.lit("d")).otherwise(F.lit("u")).alias(OP),
        ev.part("ts_ms").alias(CDC_TS),
        ERROR,
        *META,
        F.when(F.col(ERROR).isNotNull(), detail).alias(DETAIL),
        F.when(F.col(ERROR).isNotNull(), F.col("value")).alias(RAW),
        *([new_columns.alias(NEW_COLUMNS), F.col("value").alias(VALUE)] if allow_new else []),
    )


def last_per_key(df: DataFrame, keys: list[str]) -> DataFrame:
    """The last event per key in source order: Kafka offset, then ``ts_ms``, then position in the batch."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = df.withColumn(POS, F.monotonically_increasing_id())  # a batch (not a stream): row order within a file
    order = [F.col("_lakecat_offset").desc_nulls_last(), F.col(CDC_TS).desc_nulls_last(), F.col(POS).desc()]
    w = Window.partitionBy(*[F.col(k) for k in keys]).orderBy(*order)
    return df.withColumn("_lakecat_rn", F.row_number().over(w)).where(F.col("_lakecat_rn") == 1).drop("_lakecat_rn")


# --- applying ----------------------------------------------------------------------------------
def _merge_sql(target: str, view: str, keys: list[str], columns: list[str], *, with_deletes: bool,
               changed: str | None = None) -> str:  # fmt: skip
    on = " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in keys)
    sets = ", ".join(f"t.{quote(c)} = s.{quote(c)}" for c in columns if c not in keys) or \
        ", ".join(f"t.{quote(c)} = s.{quote(c)}" for c in columns)  # fmt: skip
    cols = ", ".join(quote(c) for c in columns)
    vals = ", ".join(f"s.{quote(c)}" for c in columns)
    op = quote(OP)
    update = f"WHEN MATCHED{f' AND ({changed})' if changed else ''} THEN UPDATE SET {sets}"
    parts = [f"MERGE INTO {target} t USING {quote(view)} s ON {on}"]
    if with_deletes:
        parts.append(f"WHEN MATCHED AND s.{op} = 'd' THEN DELETE")
        if changed != "false":
            parts.append(update)
        parts.append(f"WHEN NOT MATCHED AND s.{op} <> 'd' THEN INSERT ({cols}) VALUES ({vals})")
    else:
        if changed != "false":
            parts.append(update)
        parts.append(f"WHEN NOT MATCHED THEN INSERT ({cols}) VALUES ({vals})")
    return " ".join(parts)


def _comparable(t: Any) -> bool:
    """Whether Spark can compare values of type ``t`` for equality (maps cannot be compared, at any depth)."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(t, MapType):
        return False
    if isinstance(t, ArrayType):
        return _comparable(t.elementType)
    if isinstance(t, StructType):
        return all(_comparable(f.dataType) for f in t.fields)
    return True


def changed_sql(fields: list[StructField], keys: list[str], columns: list[str], *, left: str = "t",
                right: str = "s") -> str:  # fmt: skip
    """A SQL condition true when a matched target row (``left``) differs from its source row (``right``) in a column
    the source sets: null-safe (``<=>``), so an update that would write the same values is skipped. ``"true"`` when
    a column cannot be compared (a map), ``"false"`` when the source sets only the key."""
    by_name = {f.name: f for f in fields}
    compared = [c for c in columns if c not in keys]
    if not compared:
        return "false"
    if not all(_comparable(by_name[c].dataType) for c in compared if c in by_name):
        return "true"
    return " OR ".join(f"NOT ({left}.{quote(c)} <=> {right}.{quote(c)})" for c in compared)


def merge(table: TableLike, source: DataFrame, keys: list[str], columns: list[str], *, app_id: str | None = None,
          batch_id: int | None = None, with_deletes: bool = True, changed: str | None = None) -> None:  # fmt: skip
    """One MERGE of ``source`` (at most one row per key; ``OP`` = ``u``/``d``) into ``table``, as one commit.

    With ``app_id``/``batch_id`` the commit carries the idempotence marker of :mod:`lakecat.ingest`, in the
    format's own terms (``TableFormat.merge_marker_conf``: Delta's transaction, Iceberg's snapshot
    properties). The commit records the key where the format's own commit would not say it was a merge
    (``TableFormat.merge_key_conf``). The settings go into ``source``'s own session (a stream's batch runs in a
    session of its own). With ``changed`` (:func:`changed_sql`) a matched row is updated only when it holds.
    """
    spark = source.sparkSession
    view = f"lakecat_cdc_{uuid.uuid4().hex[:12]}"
    confs = table.adapter.merge_marker_conf(app_id, batch_id) if app_id is not None and batch_id is not None else {}
    confs |= table.adapter.merge_key_conf(keys)
    source.createOrReplaceTempView(view)

    def run() -> None:
        with spark_conf(spark, confs), spark_errors("merge into", table.entry.ident):
            sql = _merge_sql(table.spark_name, view, keys, columns, with_deletes=with_deletes, changed=changed)
            spark.sql(sql).collect()

    try:
        # A MERGE that lost a commit race wrote nothing: plan it again on top of the concurrent commit (an ingest's
        # append, a compaction). Safe with the stream's marker too: the format checks it in the retried commit.
        with_retries(run, what=f"merge into {table.name}")
    finally:
        spark.catalog.dropTempView(view)


def ensure_key(table: TableLike, keys: list[str]) -> list[str]:
    """Record the key on the table: the ``lakecat.cdc.key`` property (every format) and whatever the format
    itself keeps (Iceberg: identifier fields, when the columns are NOT NULL) — ``changes`` pairs updates by
    it. Returns notes for the user."""
    notes = table.adapter.record_key(table, keys)
    value = ",".join(keys)
    if table.adapter.properties(table).get(KEY_PROPERTY) != value:
        table.adapter.set_properties(table, {KEY_PROPERTY: value}, [])
    return notes


# --- batch upserts -----------------------------------------------------------------------------


def _source_files(path: str, file_format: str | None) -> tuple[str, str]:
    """The URI and format (json, csv or parquet) of an upsert's files, checked without a JVM."""
    local = (
        None
        if "://" in path and not path.startswith("file:")
        else Path(path.removeprefix("file://").removeprefix("file:")).expanduser()
    )
    if local is not None and not local.exists():
        raise InvalidArgumentError(f"upsert: {path} does not exist")
    fmt = file_format
    if fmt is None:
        names = (
            [local]
            if local is not None and local.is_file()
            else (sorted(local.rglob("*")) if local is not None else [])
        )
        exts = {p.suffix.lower().lstrip(".") for p in names if p.is_file() and not p.name.startswith((".", "_"))}
        exts = {"json" if e in ("jsonl", "ndjson") else e for e in exts}
        found = exts & set(FILE_FORMATS)
        if len(found) != 1:
            raise InvalidArgumentError(
                f"upsert: cannot tell the file format of {path}; say which: file_format=json, csv or parquet"
            )
        fmt = found.pop()
    if fmt not in FILE_FORMATS:
        raise InvalidArgumentError(f"invalid file format {fmt!r}: use json, csv or parquet")
    return (str(local.resolve().as_uri()) if local is not None else path), fmt


#: A table's column types as the predicate check compares them (a kind each; others are left to Spark)
_ARROW_OF = {"BIGINT": "int64", "INT": "int64", "INTEGER": "int64", "SMALLINT": "int64", "TINYINT": "int64",
             "LONG": "int64", "FLOAT": "float64", "DOUBLE": "float64", "DECIMAL": "float64", "STRING": "string",
             "BOOLEAN": "bool", "DATE": "date32"}  # fmt: skip


def _check_source(table: TableLike, uri: str, fmt: str, *, keys: list[str], delete_when: str | None) -> None:
    """What local source files tell before a JVM starts: a malformed record (file and line), a key column the files
    lack, a ``delete_when`` predicate naming a column they lack (it is evaluated over the source's columns)."""
    import pyarrow as pa

    shape = source_schema(uri, fmt)
    if shape is None:  # remote files, or ones only Spark reads exactly: Spark checks them
        return
    have = ", ".join(shape.names) or "none"
    missing = [k for k in keys if k not in shape.names]
    if missing:
        raise InvalidArgumentError(f"upsert: the source has no key column {', '.join(missing)} (its columns: {have})")
    if delete_when:
        declared = {c.name: c.type.upper() for c in table.describe().schema}

        def kind(field: pa.Field) -> pa.DataType:
            sql = declared.get(field.name)
            if sql is None:
                return field.type
            alias = _ARROW_OF.get(sql.split("(")[0].strip())
            if alias is None:
                return pa.timestamp("us") if sql.startswith("TIMESTAMP") else pa.null()
            return pa.type_for_alias(alias)

        check_columns(delete_when, pa.schema([pa.field(f.name, kind(f)) for f in shape]), what="delete_when")


def _read_path(spark: SparkSession, uri: str, fmt: str, fields: list[StructField]) -> tuple[DataFrame, str]:
    from pyspark.sql import functions as F

    # every column of the files stays (a --delete-when predicate may use one the table lacks); the
    # table's columns are cast to its types (ANSI casts: a value that does not fit fails the upsert)
    with spark_errors("read", None):
        reader = spark.read.format(fmt)
        if fmt == "csv":
            # FAILFAST: a record with more or fewer fields than the header fails the upsert (PERMISSIVE would cut
            # it or fill it with nulls, and write them over the matched rows)
            reader = reader.option("header", "true").option("mode", "FAILFAST")
        elif fmt == "json":
            reader = reader.option("mode", "FAILFAST")
        df = reader.load(uri)
    types = {f.name: f.dataType for f in fields}
    df = df.select(*[F.col(quote(c)).cast(types[c]).alias(c) if c in types else F.col(quote(c)) for c in df.columns])
    return df, f"files {uri} ({fmt})"


def upsert(table: TableLike, data: Any, *, key: str | list[str] | tuple[str, ...], file_format: str | None = None,
           delete_when: str | None = None) -> UpsertResult:  # fmt: skip
    """MERGE ``data`` (a Spark DataFrame, or a path of json/csv/parquet files) into ``table`` by ``key``.

    Matched rows are updated where a column the source sets differs (null-safe), new keys inserted; with
    ``delete_when`` (a SQL predicate over the source's columns, e.g. ``"op = 'D'"``), matched rows for which it
    holds are deleted instead. The source must have at most one row per key (else nothing is written). One
    commit, or none when nothing would change.
    """
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql import functions as F

    started = time.monotonic()
    ident = table.entry.ident
    table.adapter.require("merge", "upsert")
    # what the table's metadata and the file system can check, before a JVM starts
    check_key_names(key, input_column_names(table), str(ident))
    files = _source_files(str(data), file_format) if isinstance(data, (str, Path)) else None
    if files is not None:
        _check_source(table, *files, keys=parse_columns(key), delete_when=delete_when)
    spark = table.catalog.session()
    fields = table.writable_fields()
    keys = check_key(key, fields, str(ident))
    if isinstance(data, SparkDataFrame):
        src, what = data, "dataframe"
    elif files is not None:
        src, what = _read_path(spark, *files, fields)
    else:
        raise InvalidArgumentError("upsert: data must be a Spark DataFrame or a path to json/csv/parquet files")
    have = set(src.columns)
    missing_keys = [k for k in keys if k not in have]
    if missing_keys:
        raise InvalidArgumentError(f"upsert: the source has no key column {', '.join(missing_keys)}")
    required = [f.name for f in fields if not f.nullable and f.name not in have]
    if required:
        raise InvalidArgumentError(f"upsert: the source lacks the required column(s) {', '.join(required)}")
    columns = [f.name for f in fields if f.name in have]
    op = F.lit("u")
    if delete_when:
        with spark_errors("upsert: delete_when=", None):
            try:
                pred = F.expr(delete_when)  # an expression, parsed by Spark: never spliced into a statement
                src.select(pred.alias("_p")).schema  # noqa: B018 - resolves the predicate against the source
            except Exception as e:  # noqa: BLE001 - re-raised as a usage error
                raise InvalidArgumentError(f"invalid delete_when={delete_when!r}: {first_line(str(e))}") from None
        op = F.when(F.coalesce(pred, F.lit(False)), F.lit("d")).otherwise(F.lit("u"))
    by_name = {f.name: f for f in fields}
    src = src.select(*[F.col(quote(c)).cast(by_name[c].dataType).alias(c) for c in columns], op.alias(OP)).persist()
    try:
        # one job checks the source and counts what the MERGE will do (each matches at most one distinct key)
        with spark_errors("upsert into", ident):
            existing = table.to_spark().select(*[F.col(quote(k)) for k in keys]).distinct()
            flagged = src.join(existing.withColumn("_lakecat_m", F.lit(True)), keys, "left")
            counts = flagged.agg(
                F.count(F.lit(1)).alias("n"),
                F.count(F.when(_any_null(keys), 1)).alias("null_keys"),
                F.count_distinct(F.struct(*[F.col(quote(k)) for k in keys])).alias("distinct_keys"),
                F.count(F.when(F.col("_lakecat_m").isNull() & (F.col(OP) == "u"), 1)).alias("ins"),
                F.count(F.when(F.col("_lakecat_m").isNotNull() & (F.col(OP) == "u"), 1)).alias("upd"),
                F.count(F.when(F.col("_lakecat_m").isNotNull() & (F.col(OP) == "d"), 1)).alias("del"),
            ).first()
        assert counts is not None  # an aggregate always has its one row
        n, null_keys = int(counts["n"]), int(counts["null_keys"])
        if null_keys:
            raise InvalidArgumentError(
                f"upsert: {null_keys} source row(s) have a null key ({', '.join(keys)}); nothing was written"
            )
        if int(counts["distinct_keys"]) != n:
            dup_keys = _duplicate_keys(src, keys)
            raise InvalidArgumentError(
                f"upsert: {dup_keys} key(s) appear more than once in the source; nothing was written"
            )
        matched, changed = int(counts["upd"]), changed_sql(fields, keys, columns)
        updated = matched if changed == "true" else _changed_count(table, src, keys, columns) if matched else 0
        inserted, deleted = int(counts["ins"]), int(counts["del"]) if delete_when else 0
        # a MERGE that would change nothing is not run: Delta would still commit an empty version
        committed = inserted + updated + deleted > 0
        if committed:
            merge(table, src, keys, columns, with_deletes=bool(delete_when), changed=changed)
        report = UpsertResult(table=str(ident), format=table.format, source=what, rows_in=n, inserted=inserted,
                              updated=updated, deleted=deleted, unchanged=matched - updated,
                              committed=committed)  # fmt: skip
    finally:
        src.unpersist()
    on = table.branch_name
    report.version = find_ref(table, on, "branch").version if on else table.adapter.current_version(table)
    report.duration_s = round(time.monotonic() - started, 3)
    return report


def _changed_count(table: TableLike, src: DataFrame, keys: list[str], columns: list[str]) -> int:
    """How many of ``src``'s upserts (``OP`` = ``u``) match a target row that differs in a column they set."""
    from pyspark.sql import functions as F

    compared = [c for c in columns if c not in keys]
    if not compared:
        return 0
    theirs = {c: f"_lakecat_t{i}" for i, c in enumerate([*keys, *compared])}
    target = table.to_spark().select(*[F.col(quote(c)).alias(a) for c, a in theirs.items()])
    same_key = functools.reduce(operator.and_, [F.col(quote(k)) == F.col(theirs[k]) for k in keys])
    differs = functools.reduce(operator.or_, [~F.col(quote(c)).eqNullSafe(F.col(theirs[c])) for c in compared])
    return int(src.where(F.col(OP) == "u").join(target, same_key & differs, "left_semi").count())


def _any_null(keys: list[str]) -> Column:
    from pyspark.sql import functions as F

    return functools.reduce(operator.or_, [F.col(k).isNull() for k in keys])


def _duplicate_keys(src: DataFrame, keys: list[str]) -> int:
    from pyspark.sql import functions as F

    return int(src.groupBy(*[F.col(k) for k in keys]).count().where(F.col("count") > 1).count())
