"""Bring your own tables: ``register`` an existing table by location, ``convert`` a directory of Parquet files.

Format-neutral: which format a location holds is the adapters' answer (``TableFormat.owns_location``), and the
adapters record the table (``register``, ``convert``). This module checks the caller's input before anything is
written — the location exists and holds exactly one table, the name and the location are free, the Parquet files
agree on one schema — so a refused call leaves the catalog and the files as they were.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from .errors import InvalidArgumentError, TableAlreadyExistsError
from .files import fs_for, local_path
from .formats import all_formats, format_names, get_format
from .identifiers import TableIdent, parse_columns
from .metastore import normalize_location
from .results import ColumnInfo, ConvertResult, ParquetFileInfo, RegisterResult
from .schema import Column

if TYPE_CHECKING:
    from .formats.base import TableFormat
    from .protocols import CatalogLike


def absolute_location(location: str) -> str:
    """A user's path or URI as one spelling: local paths absolute, as ``file:///...``; object storage as given."""
    text = str(location).strip()
    if not text:
        raise InvalidArgumentError("location= is empty").with_cli_terms({"location=": "--location"})
    local = local_path(text)
    if local is not None:
        return normalize_location(str(local.expanduser().resolve()))
    return text.rstrip("/")


def _exists(location: str) -> bool:
    from pyarrow import fs

    try:
        filesystem, path = fs_for(location)
        return bool(filesystem.get_file_info(path).type != fs.FileType.NotFound)
    except (OSError, ValueError):
        return False


def _same_place(a: str, b: str) -> bool:
    return normalize_location(a).rstrip("/") == normalize_location(b).rstrip("/")


def _check_free(cat: CatalogLike, ident: TableIdent, location: str) -> None:
    """Refuse a taken name, or a location the catalog already knows under another name."""
    existing = cat.find_entry(ident)
    if existing is not None:
        raise TableAlreadyExistsError(f"table {ident} already exists ({existing.format}, at {existing.location})")
    for entry in cat.entries():
        if _same_place(entry.location, location):
            raise TableAlreadyExistsError(f"{location} is already registered as {entry.ident} ({entry.format})")


def detect_format(location: str) -> TableFormat:
    """The one format whose adapter recognises ``location`` (exit 2 when none does, or several do)."""
    owners = [a for a in all_formats() if a.owns_location(location)]
    if not owners:
        raise InvalidArgumentError(
            f"no table at {location}: none of the formats ({', '.join(format_names())}) recognises it "
            "(a directory of Parquet files? use `lakecat convert`)"
        )
    if len(owners) > 1:
        raise InvalidArgumentError(
            f"{location} holds tables of several formats ({', '.join(a.name for a in owners)}): say which with format="
        ).with_cli_terms({"with format=": "with --format"})
    return owners[0]


def register_table(
    cat: CatalogLike, name: str | TableIdent, *, location: str, format: str | None = None
) -> RegisterResult:
    """Record the existing table at ``location`` as ``name``; its files are not touched."""
    ident = name if isinstance(name, TableIdent) else TableIdent.parse(name)
    where = absolute_location(location)
    if not _exists(where):
        raise InvalidArgumentError(f"no such file or directory: {location}")
    adapter = get_format(format) if format is not None else detect_format(where)
    adapter.require("register", "register")
    found = adapter.find_table(where)
    _check_free(cat, ident, found.location)
    entry = adapter.register(cat, ident, found)
    described = cat.table_of(entry).describe()
    return RegisterResult(str(ident), adapter.name, entry.location, found.metadata_location, found.notes,
                          described.current_version, described.files, described.records)  # fmt: skip


# --- convert ----------------------------------------------------------------------------------------
_HIVE_DEFAULT = "__HIVE_DEFAULT_PARTITION__"
_INT = re.compile(r"-?\d{1,18}")


def _arrow_sql(t: Any) -> str:
    """A pyarrow type in the Spark SQL spelling lakecat uses for every format."""
    import pyarrow as pa

    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_int8(t):
        return "TINYINT"
    if pa.types.is_int16(t):
        return "SMALLINT"
    if pa.types.is_int32(t) or pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "INT"
    if pa.types.is_integer(t):
        return "BIGINT"
    if pa.types.is_float32(t):
        return "FLOAT"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "STRING"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "BINARY"
    if pa.types.is_date(t):
        return "DATE"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz else "TIMESTAMP_NTZ"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"ARRAY<{_arrow_sql(t.value_type)}>"
    if pa.types.is_map(t):
        return f"MAP<{_arrow_sql(t.key_type)}, {_arrow_sql(t.item_type)}>"
    if pa.types.is_struct(t):
        return "STRUCT<" + ", ".join(f"{f.name}: {_arrow_sql(f.type)}" for f in t) + ">"
    raise InvalidArgumentError(f"Parquet type {t} has no SQL type lakecat can convert")


@dataclass
class _Scan:
    files: list[ParquetFileInfo]
    partition_keys: list[str]
    columns: list[Column]
    partition_columns: list[Column]


def _describe_field(schema: Any, other: Any) -> str:
    """The first difference between two Arrow schemas, in words."""
    names, other_names = schema.names, other.names
    for n in names:
        if n not in other_names:
            return f"column {n} is only in the first"
    for n in other_names:
        if n not in names:
            return f"column {n} is only in the second"
    for n in names:
        a, b = schema.field(n), other.field(n)
        if a.type != b.type:
            return f"column {n} is {_arrow_sql_or_text(a.type)} in the first and {_arrow_sql_or_text(b.type)} in the second"
    return "the columns are in a different order"


def _arrow_sql_or_text(t: Any) -> str:
    try:
        return _arrow_sql(t)
    except InvalidArgumentError:
        return str(t)


def scan_parquet(directory: str, partition_by: list[str] | None = None) -> _Scan:
    """The Parquet files under ``directory``: their Hive-style partitions, rows (footers) and one shared schema."""
    import pyarrow.parquet as pq
    from pyarrow import fs

    filesystem, base = fs_for(directory)
    info = filesystem.get_file_info(base)
    if info.type == fs.FileType.NotFound:
        raise InvalidArgumentError(f"no such directory: {directory}")
    if info.type != fs.FileType.Directory:
        raise InvalidArgumentError(f"{directory} is not a directory")
    for adapter in all_formats():
        if adapter.owns_location(directory):
            raise InvalidArgumentError(f"{directory} is a {adapter.name} table already: use `lakecat register`")
    selector = fs.FileSelector(base, recursive=True)
    files: list[ParquetFileInfo] = []
    keys: list[str] | None = None
    first: tuple[str, Any] | None = None
    base_path = base.rstrip("/")
    for item in sorted(filesystem.get_file_info(selector), key=lambda i: i.path):
        if item.type != fs.FileType.File:
            continue
        rel = item.path[len(base_path) :].lstrip("/")
        parts = rel.split("/")
        if any(p.startswith(("_", ".")) for p in parts):  # _SUCCESS, .crc files, _temporary/: not data
            continue
        if not parts[-1].endswith(".parquet"):
            continue
        partition: dict[str, str | None] = {}
        for d in parts[:-1]:
            k, eq, v = d.partition("=")
            if not eq or not k:
                raise InvalidArgumentError(f"{rel}: directory {d!r} is not a Hive-style partition (key=value)")
            partition[k] = None if v == _HIVE_DEFAULT else unquote(v)
        if keys is None:
            keys = list(partition)
        elif list(partition) != keys:
            raise InvalidArgumentError(f"{rel} is partitioned by {', '.join(partition) or 'nothing'}, "
                                       f"{files[0].path} by {', '.join(keys) or 'nothing'}: one layout per table")  # fmt: skip
        with filesystem.open_input_file(item.path) as f:
            meta = pq.ParquetFile(f).metadata
            schema = meta.schema.to_arrow_schema().remove_metadata()
        if first is None:
            first = (rel, schema)
        elif not schema.equals(first[1]):
            raise InvalidArgumentError(f"the files disagree on the schema: {first[0]} and {rel} "
                                       f"({_describe_field(first[1], schema)}); nothing was created")  # fmt: skip
        files.append(ParquetFileInfo(rel, int(item.size or 0), int(meta.num_rows),
                                     {k: v for k, v in partition.items()}))  # fmt: skip
    if first is None or keys is None:
        raise InvalidArgumentError(f"no Parquet files under {directory}")
    if partition_by is not None and partition_by != keys:
        raise InvalidArgumentError(f"partition_by={','.join(partition_by) or '(none)'} does not match the directory "
                                   f"layout, which is partitioned by {', '.join(keys) or 'nothing'}")  # fmt: skip
    clash = [k for k in keys if k in first[1].names]
    if clash:
        raise InvalidArgumentError(f"partition column {clash[0]} is also a column inside the files")
    columns = [Column(f.name, _arrow_sql(f.type), True) for f in first[1]]
    part_cols = []
    for k in keys:
        values = [f.partition[k] for f in files if f.partition[k] is not None]
        part_cols.append(Column(k, "BIGINT" if values and all(_INT.fullmatch(str(v)) for v in values) else "STRING"))
    return _Scan(files, keys, columns, part_cols)


def convert_directory(cat: CatalogLike, name: str | TableIdent, *, source: str, format: str,
                      partition_by: str | list[str] | None = None, dry_run: bool = False) -> ConvertResult:  # fmt: skip
    """Make the Parquet files under ``source`` a table of ``format`` in place (no data copied)."""
    ident = name if isinstance(name, TableIdent) else TableIdent.parse(name)
    adapter = get_format(format)
    adapter.require("convert", "convert")
    where = absolute_location(source)
    parts = parse_columns(partition_by) if partition_by else None
    scan = scan_parquet(where, parts)
    _check_free(cat, ident, where)
    schema = [ColumnInfo(c.name, c.type, c.nullable) for c in [*scan.columns, *scan.partition_columns]]
    partitions = sorted({"/".join(f"{k}={v}" for k, v in f.partition.items()) for f in scan.files} - {""})
    result = ConvertResult(str(ident), adapter.name, where, [f.path for f in scan.files], partitions,
                           scan.partition_keys, sum(f.rows for f in scan.files), sum(f.size for f in scan.files),
                           schema, dry_run)  # fmt: skip
    if dry_run:
        return result
    dirs = {f.path.rsplit("/", 1)[0]: f.partition for f in scan.files if f.partition}
    adapter.convert(cat, ident, where, scan.columns, scan.partition_columns, dirs)
    return result
