"""Plain writes and deletes — ``append``, ``overwrite`` (every row, or those a predicate selects) and ``delete`` — one
interface over every format.

Each operation asks the table's adapter once whether its light library (pyiceberg, delta-rs: no JVM) writes this
table exactly as Spark would (``TableFormat.check_light_write``: the table's features, its delete mode) and whether
the predicate is one the light path reads exactly (``lakecat.predicate.row_filter``); if not, Spark writes, and the
result says why. Data is checked against the table's columns before anything starts: columns match by name, types
cast only where no value can change (``int`` to ``bigint``), a NOT NULL column gets a value in every row; anything
else is a one-line ``InvalidArgumentError`` and nothing is written.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .engine import first_line
from .errors import InvalidArgumentError, NotExactError, columns_note
from .identifiers import quote
from .maintenance import predicate_text, validate_predicate
from .predicate import row_filter
from .results import DeleteResult, WriteResult
from .source_files import source_files
from .versions import check_engine, check_predicate_columns, count_matching, current, history

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from .protocols import TableLike

#: File formats ``append --from`` reads, by the suffix of their names.
FILE_FORMATS = {"parquet": "parquet", "csv": "csv", "json": "json", "jsonl": "json", "ndjson": "json"}
_SPARK = "asked for Spark (engine='spark')"


def _light_refused(what: str, table: TableLike, e: NotExactError) -> NotExactError:
    return NotExactError(f"{what} {table.name} without a JVM: {e}; use engine='spark'").with_cli_terms(  # type: ignore[return-value]
        {"engine='spark'": "--engine spark"}
    )


# --- the data ----------------------------------------------------------------------------------
def _is_spark(data: Any) -> bool:
    return type(data).__module__.startswith("pyspark")


def read_file(path: str | Path, schema: pa.Schema, *, file_format: str | None = None) -> pa.Table:
    """The rows of a local Parquet, CSV (with a header) or JSON lines file, or of a directory of them, as Arrow; CSV and
    JSON values are parsed as the table's column types."""
    import pyarrow as pa

    files = source_files(str(path))
    if files is None:
        raise InvalidArgumentError(f"{path}: only local files are read; copy the file here first")
    if not Path(str(path)).expanduser().exists():
        raise InvalidArgumentError(f"{path}: no such file or directory")
    if not files:
        raise InvalidArgumentError(f"{path}: no data files there")
    fmt = file_format.lower() if file_format else None
    if fmt is None:
        found = {FILE_FORMATS.get(p.suffix.lower().lstrip(".")) for p in files}
        if len(found) != 1 or None in found:
            raise InvalidArgumentError(f"{path}: cannot tell the file format from the names; say which: "
                                       "file_format=parquet, csv or json")  # fmt: skip
        fmt = found.pop()
    if fmt not in set(FILE_FORMATS.values()):
        raise InvalidArgumentError(f"invalid file_format={file_format!r}: use parquet, csv or json")
    types = {f.name: f.type for f in schema}
    loose = pa.schema([pa.field(f.name, f.type) for f in schema])  # NOT NULL is checked after, in one sentence
    tables = []
    for p in files:
        try:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                tables.append(pq.read_table(p))
            elif fmt == "csv":
                import pyarrow.csv as pcsv

                tables.append(pcsv.read_csv(p, convert_options=pcsv.ConvertOptions(column_types=types)))
            else:
                import pyarrow.json as pjson

                # JSON spells dates and times as text: read as strings, then parsed as the table's types
                texts = {f.name for f in schema if pa.types.is_date(f.type) or pa.types.is_timestamp(f.type)}
                explicit = pa.schema([pa.field(f.name, pa.string() if f.name in texts else f.type) for f in loose])
                opts = pjson.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer")
                read = pjson.read_json(p, parse_options=opts)
                for name in texts & set(read.column_names):
                    i = read.column_names.index(name)
                    read = read.set_column(i, name, read.column(name).cast(types[name]))
                tables.append(read)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
            raise InvalidArgumentError(f"{p}: not readable as {fmt}: {str(e).splitlines()[0]}") from None
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise InvalidArgumentError(f"{path}: the files disagree on their columns: {e}") from None


def to_arrow(data: Any, schema: pa.Schema, *, file_format: str | None = None) -> pa.Table:
    """``data`` (a ``pyarrow.Table`` / ``RecordBatch`` / ``RecordBatchReader``, a pandas DataFrame, or a path) as Arrow."""
    import pyarrow as pa

    if isinstance(data, (str, Path)):
        return read_file(data, schema, file_format=file_format)
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise InvalidArgumentError(f"cannot write a {type(data).__name__}: give a pyarrow Table, a pandas or Spark DataFrame "
                               "or a path of parquet / csv / json lines files")  # fmt: skip


_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}


def _widens(src: pa.DataType, dst: pa.DataType) -> bool:
    """Whether every value of ``src`` has one value of ``dst`` (a safe cast still refuses a value that would change)."""
    import pyarrow as pa

    t = pa.types
    if t.is_null(src):
        return True
    if t.is_integer(src) and t.is_integer(dst):
        signed = t.is_signed_integer(src)
        return src.bit_width <= dst.bit_width if signed else src.bit_width < dst.bit_width
    if t.is_integer(src) and t.is_floating(dst):
        return src.bit_width <= (32 if dst.bit_width == 64 else 16)
    if t.is_floating(src) and t.is_floating(dst):
        return src.bit_width <= dst.bit_width
    if t.is_integer(src) and t.is_decimal(dst):
        return dst.precision - dst.scale >= _INT_DIGITS[src.bit_width]
    if t.is_decimal(src) and t.is_decimal(dst):
        return dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale
    texts = (t.is_string, t.is_large_string, t.is_string_view)
    if any(f(src) for f in texts) and any(f(dst) for f in texts):
        return True
    binaries = (t.is_binary, t.is_large_binary, t.is_binary_view)
    if any(f(src) for f in binaries) and any(f(dst) for f in binaries):
        return True
    if t.is_date(src) and t.is_date(dst):
        return True
    if t.is_timestamp(src) and t.is_timestamp(dst):
        # naive values mean UTC (lakecat's rule); a zoned instant never becomes a wall-clock time without a zone
        return (
            src.tz is None
            and dst.tz in (None, "UTC", "+00:00", "Etc/UTC")
            or (src.tz is not None and dst.tz is not None)
        )
    if t.is_time(src) and t.is_time(dst):
        return True
    return (t.is_list(src) or t.is_large_list(src)) and (t.is_list(dst) or t.is_large_list(dst)) or (
        t.is_struct(src) and t.is_struct(dst)) or (t.is_map(src) and t.is_map(dst))  # fmt: skip


def conform(data: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    """``data`` as the table's columns (``schema``, in its order): matched by name (case-insensitively), cast where no
    value can change, missing nullable columns null. Refuses (``InvalidArgumentError``, nothing written) a column the
    table lacks, a type that does not cast safely, and a null (or a missing column) where the table says NOT NULL."""
    import pyarrow as pa

    by_lower = {f.name.lower(): f for f in schema}
    given: dict[str, str] = {}
    unknown = []
    for name in data.column_names:
        f = by_lower.get(name.lower())
        if f is None:
            unknown.append(name)
        elif f.name in given:
            raise InvalidArgumentError(f"{what}: the data has column {f.name} twice ({given[f.name]}, {name})")
        else:
            given[f.name] = name
    if unknown:
        raise InvalidArgumentError(f"{what}: the data has column(s) {', '.join(unknown)} the table lacks"
                                   f"{columns_note(schema.names)}; nothing was written")  # fmt: skip
    arrays = []
    for f in schema:
        if f.name not in given:
            if not f.nullable:
                raise InvalidArgumentError(f"{what}: the data lacks the NOT NULL column {f.name}; nothing was written")
            arrays.append(pa.nulls(data.num_rows, f.type))
            continue
        col = data.column(given[f.name])
        if not col.type.equals(f.type):
            if not _widens(col.type, f.type):
                raise InvalidArgumentError(f"{what}: column {f.name} is {f.type} in the table and {col.type} in the "
                                           "data, which does not cast without changing values; nothing was written")  # fmt: skip
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise InvalidArgumentError(f"{what}: column {f.name} ({col.type} to {f.type}): "
                                           f"{str(e).splitlines()[0]}; nothing was written") from None  # fmt: skip
        if not f.nullable and col.null_count:
            raise InvalidArgumentError(f"{what}: column {f.name} is NOT NULL, and {col.null_count} row(s) of the data "
                                       "have no value there; nothing was written")  # fmt: skip
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=schema)


def _conform_spark(table: TableLike, df: DataFrame, what: str) -> DataFrame:
    """A Spark DataFrame as the table's columns, by name (Spark's casts: ANSI, so a value that does not fit fails)."""
    from pyspark.sql import functions as F

    fields = table.writable_fields()
    by_lower = {f.name.lower(): f for f in fields}
    given = {by_lower[c.lower()].name: c for c in df.columns if c.lower() in by_lower}
    unknown = [c for c in df.columns if c.lower() not in by_lower]
    if unknown:
        raise InvalidArgumentError(f"{what}: the data has column(s) {', '.join(unknown)} the table lacks"
                                   f"{columns_note(f.name for f in fields)}; nothing was written")  # fmt: skip
    missing = [f.name for f in fields if f.name not in given and not f.nullable]
    if missing:
        raise InvalidArgumentError(f"{what}: the data lacks the NOT NULL column(s) {', '.join(missing)}; nothing was "
                                   "written")  # fmt: skip
    return df.select(*[(F.col(quote(given[f.name])) if f.name in given else F.lit(None)).cast(f.dataType).alias(f.name)
                       for f in fields])  # fmt: skip


def _check_rows_match(data: pa.Table, where: str, what: str) -> None:
    """Every row of an overwrite's data matches its ``where`` (as Delta's replaceWhere asks), counted by DuckDB;
    ``NotExactError`` leaves the check to Spark."""
    outside = data.num_rows - count_matching(data, where)
    if outside:
        raise InvalidArgumentError(f"{what}: {outside} row(s) of the data do not match where {where!r}: an overwrite "
                                   "replaces the rows it selects with rows it selects; nothing was written")  # fmt: skip


def _check_rows_match_spark(df: DataFrame, where: str, what: str) -> None:
    from pyspark.sql import functions as F

    outside = df.where(~F.coalesce(F.expr(where), F.lit(False))).limit(1).count()
    if outside:
        raise InvalidArgumentError(f"{what}: rows of the data do not match where {where!r}: an overwrite replaces the "
                                   "rows it selects with rows it selects; nothing was written")  # fmt: skip


def _spark_predicate(table: TableLike, where: str) -> str:
    """``where`` checked on Spark: one expression, resolved against the table's columns."""
    pred = validate_predicate(table.catalog.session(), where)
    assert pred is not None  # a text was given
    try:
        table.to_spark().where(pred).schema  # noqa: B018 - analysis only, nothing runs
    except Exception as e:  # noqa: BLE001 - an unknown column or a type error in the user's predicate
        raise InvalidArgumentError(f"invalid where predicate {where!r}: {first_line(str(e))}") from None
    return pred


def _last_summary(table: TableLike, key: str) -> int | None:
    entries = history(table, limit=1).entries
    value = entries[0].summary.get(key) if entries else None
    return int(value) if isinstance(value, int) else None


# --- append / overwrite ------------------------------------------------------------------------
def write(table: TableLike, data: Any, *, mode: str, where: str | None = None, engine: str | None = None,
          file_format: str | None = None) -> WriteResult:  # fmt: skip
    """Append ``data`` to ``table`` (``mode="append"``), or replace every row or the rows ``where`` selects with it
    (``mode="overwrite"``); one commit. See ``Table.append`` / ``Table.overwrite``."""
    started = time.monotonic()
    wanted = check_engine(engine)
    adapter = table.adapter
    adapter.require("write", mode)
    what = f"{mode} {table.name}"
    text = predicate_text(where) if where is not None else None
    table.refresh()
    before = adapter.current_version(table)
    schema = adapter.write_schema(table)
    spark_df = data if _is_spark(data) else None
    arrow = None if spark_df is not None else conform(to_arrow(data, schema, file_format=file_format), schema, what)
    checked = False
    if text is not None:
        check_predicate_columns(table, text, before)
        if arrow is not None:
            try:
                _check_rows_match(arrow, text, what)
                checked = True
            except NotExactError:
                pass  # the predicate is one only Spark reads: Spark checks the rows
    reason, filt = None, None
    if wanted == "spark":
        reason = _SPARK
    elif spark_df is not None:
        if wanted == "light":
            raise _light_refused(mode, table, NotExactError("the data is a Spark DataFrame"))
        reason = "the data is a Spark DataFrame"
    else:
        try:
            adapter.check_light_write(table, "overwrite_where" if text is not None else mode)
            if text is not None:
                filt = row_filter(text, schema)
                if not checked:
                    raise NotExactError("the predicate is one only Spark checks the data against")
        except NotExactError as e:
            if wanted == "light":
                raise _light_refused(mode, table, e) from None
            reason = str(e)
    if reason is None:
        assert arrow is not None
        adapter.write_light(table, arrow, mode, filt)
        rows: int | None = arrow.num_rows
    else:
        spark = table.catalog.session()
        df = _conform_spark(table, spark_df, what) if spark_df is not None else spark.createDataFrame(arrow)
        pred = _spark_predicate(table, text) if text is not None else None
        if pred is not None and not checked:
            _check_rows_match_spark(df, pred, what)
        adapter.write_spark(table, df, mode, pred)
        rows = arrow.num_rows if arrow is not None else None
    table.refresh()
    after = adapter.current_version(table)
    committed = after is not None and after != before
    if rows is None and committed:
        rows = _last_summary(table, "rows_added")
    return WriteResult(table=table.name, format=table.format, operation=mode, engine="light" if reason is None else
                       "spark", engine_reason=reason, rows=rows, where=text, version=after if committed else None,
                       committed=committed, duration_s=round(time.monotonic() - started, 3))  # fmt: skip


# --- delete ------------------------------------------------------------------------------------
def delete(table: TableLike, *, where: str, dry_run: bool = False, engine: str | None = None) -> DeleteResult:
    """Delete the rows the Spark SQL predicate ``where`` holds TRUE for, in one commit (none when no row matches); with
    ``dry_run``, count them. See ``Table.delete``."""
    started = time.monotonic()
    wanted = check_engine(engine)
    adapter = table.adapter
    adapter.require("delete", "delete")
    if where is None:
        raise InvalidArgumentError("delete needs where: a predicate over the table's columns (where=\"1 = 1\" deletes "
                                   "every row)").with_cli_terms({'where="1 = 1"': '--where "1 = 1"', "where": "--where"})  # fmt: skip
    text = predicate_text(where)
    table.refresh()
    before = adapter.current_version(table)
    check_predicate_columns(table, text, before)

    def done(**fields: Any) -> DeleteResult:
        return DeleteResult(table=table.name, format=table.format, where=text, dry_run=dry_run,
                            duration_s=round(time.monotonic() - started, 3), **fields)  # fmt: skip

    if dry_run:
        counted = current(table, engine=wanted).read(where=text, count=True)
        return done(engine=counted.engine or "light", engine_reason=counted.engine_reason, rows=counted.count)
    reason, filt, matching = None, None, None
    if wanted == "spark":
        reason = _SPARK
    else:
        try:
            adapter.check_light_write(table, "delete")
            filt = row_filter(text, adapter.write_schema(table))
            matching = current(table, engine="light").count(where=text)
        except NotExactError as e:
            if wanted == "light":
                raise _light_refused("delete", table, e) from None
            reason = str(e)
    if reason is None:
        assert filt is not None
        rows: int | None = matching
        if matching:  # a delete that matches no row commits nothing
            adapter.delete_light(table, filt)
    else:
        rows = adapter.delete_spark(table, _spark_predicate(table, text))
    table.refresh()
    after = adapter.current_version(table)
    committed = after is not None and after != before
    if rows is None:
        rows = _last_summary(table, "rows_removed") if committed else 0
    return done(engine="light" if reason is None else "spark", engine_reason=reason, rows=rows,
                version=after if committed else None, committed=committed)  # fmt: skip
