"""Merge schema: a batch's new top-level fields become new columns of the table, then the batch is parsed again."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from ..cdc import NEW_COLUMNS, VALUE, new_column_type, parse_debezium
from ..engine import is_connect
from ..errors import InvalidArgumentError
from ..identifiers import validate_part
from ..records import META, RAW, UNKNOWN, type_ddl
from .parse import parse_json
from .reports import remove_dir
from .target import add_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .batch import BatchWriter


def _quotable(name: str) -> bool:
    """Whether lakecat can quote ``name`` safely into every engine (else its records keep it as an unknown field)."""
    try:
        validate_part(name, what="column name")
    except InvalidArgumentError:
        return False
    return True


def _add(writer: BatchWriter, added: list[tuple[str, str]]) -> None:
    """Add the columns to the table and take the table's columns afresh."""
    add_columns(writer.table, added)
    if added:
        fields = writer.table.writable_fields()
        meta = writer.source.metadata_columns if writer.with_metadata else {}
        writer.fields = [f for f in fields if f.name not in meta]
        writer.state.add_columns([name for name, _ in added])


def _new_names(df: DataFrame, column: str, known: set[str]) -> set[str]:
    from pyspark.sql import functions as F

    return {n for row in df.select(F.explode(F.col(column))).distinct().collect() for n in row
            if n and n.lower() not in known}  # fmt: skip


def evolve_json(writer: BatchWriter, df: DataFrame) -> DataFrame:
    """Add the batch's new top-level JSON fields as columns (typed by Spark's inference), then parse it again."""
    from pyspark.sql import functions as F

    known = {f.name.lower() for f in writer.fields}
    new_names = _new_names(df, UNKNOWN, known) if UNKNOWN in df.columns else set()
    if new_names:
        texts = df.where(F.col(UNKNOWN).isNotNull()).select(F.col(RAW).cast("string").alias("v"))
        inferred = infer_json(writer.spark, texts, writer.scratch_dir)
        _add(writer, [(f.name, type_ddl(f.dataType)) for f in inferred.fields
                      if f.name in new_names and f.name != "_corrupt_record" and _quotable(f.name)])  # fmt: skip
    if [f.name for f in writer.fields] == [f.name for f in writer.stream_fields]:
        return df
    raw = df.select(F.col(RAW).alias("value"), *META)
    return parse_json(raw, writer.fields, keep_value=True, count_unknown="all").persist()


def evolve_changes(writer: BatchWriter, df: DataFrame, keys: list[str]) -> DataFrame:
    """Change events: add the columns the batch's ``after`` images carry and the table lacks (typed by the
    envelope's schema block, else by their values), then parse the batch again with them."""
    from pyspark.sql import functions as F

    new_names = _new_names(df, NEW_COLUMNS, {f.name.lower() for f in writer.fields})
    if new_names:
        samples = (df.where(F.size(F.col(NEW_COLUMNS)) > 0).select(F.col(VALUE).cast("string").alias("v"))
                   .limit(200).collect())  # fmt: skip
        types = _change_types([row["v"] for row in samples], new_names)
        _add(writer, [(name, types.get(name, "STRING")) for name in sorted(new_names) if _quotable(name)])
    if [f.name for f in writer.fields] == [f.name for f in writer.stream_fields]:
        return df
    raw = df.select(F.col(VALUE).alias("value"), *META)
    return parse_debezium(raw, writer.fields, keys, allow_new=True).persist()


def _change_types(texts: list[Any], names: set[str]) -> dict[str, str]:
    """The SQL types of the new columns ``names``, from the first events (as JSON texts) that say or show one."""
    types: dict[str, str] = {}
    for text in texts:
        try:
            event = json.loads(text)
        except (TypeError, ValueError):
            continue
        after = (event.get("payload") or event).get("after") or {}
        sections = ((event.get("schema") or {}).get("fields")) or []
        specs = next((s.get("fields") or [] for s in sections if s.get("field") == "after"), [])
        by_name = {f.get("field"): f for f in specs}
        for name in names - types.keys():
            ddl = new_column_type(by_name.get(name), after.get(name))
            if ddl is not None:
                types[name] = ddl
    return types


def infer_json(spark: SparkSession, texts: DataFrame, scratch_dir: str) -> Any:
    """Spark's JSON schema inference over the column ``v`` of JSON texts."""
    if not is_connect(spark):
        return spark.read.json(texts.rdd.map(lambda r: r.v)).schema  # noqa: PLW0108
    # no RDDs through Spark Connect: the texts go through a scratch directory of this run as JSON lines
    scratch = f"{scratch_dir}/_infer_{uuid.uuid4().hex[:8]}"
    try:
        texts.write.text(scratch)
        return spark.read.json(scratch).schema
    finally:
        remove_dir(scratch)
