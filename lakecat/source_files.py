"""What an upsert's local json / csv / parquet files hold, read once without a JVM: their columns, and the first
record Spark would refuse, named by file and line.

Spark reads these files as JSON Lines (one value per line; ``FAILFAST``), CSV with a header (``FAILFAST``: every
record has the header's number of fields) and Parquet (its footers). A malformed record found here is one line
naming the file and the line (exit 2) before any JVM starts; what Python cannot judge exactly as Spark does (a
compression codec it does not open, single-quoted JSON, which Spark allows) is left to Spark, which refuses it too.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .errors import InvalidArgumentError
from .files import local_path

if TYPE_CHECKING:
    import pyarrow as pa

#: Suffixes of codecs Spark decompresses that Python's standard library does not open: such files are left to Spark.
_OTHER_CODECS = (".deflate", ".lz4", ".snappy", ".zst", ".zstd", ".xz", ".br")


class _Unknown(Exception):
    """A file this module cannot judge exactly as Spark does: the check steps aside."""


def source_files(uri: str) -> list[Path] | None:
    """The data files of a local file or directory as Spark lists them (names starting with ``.`` or ``_`` are
    skipped), or None for a remote URI."""
    root = local_path(uri)
    if root is None:
        return None
    if root.is_file():
        return [root]
    return [p for p in sorted(root.rglob("*"))
            if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(root).parts)]  # fmt: skip


def source_schema(uri: str, fmt: str, *, what: str = "upsert --from") -> pa.Schema | None:
    """The columns of the local files at ``uri`` (json, csv or parquet) as Spark reads them, every record checked.

    Returns None when the files are remote or of a kind only Spark reads exactly.

    Raises:
        InvalidArgumentError: a record Spark would refuse; the message names the file and the line.
    """
    import pyarrow as pa

    files = source_files(uri)
    if files is None:
        return None
    types: dict[str, set[str]] = {}
    try:
        for path in files:
            if fmt == "parquet":
                _parquet_columns(path, types, what)
            elif fmt == "csv":
                _csv_columns(path, types, what)
            else:
                _json_columns(path, types, what)
    except _Unknown:
        return None
    return pa.schema([pa.field(name, _arrow_type(kinds)) for name, kinds in types.items()])


def _open(path: Path) -> IO[str]:
    suffix = path.suffix.lower()
    if suffix in _OTHER_CODECS:
        raise _Unknown(path)
    # utf-8-sig: a byte-order mark is not part of the first record; undecodable bytes are Spark's to judge
    if suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")
    if suffix == ".bz2":
        return bz2.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")
    return path.open(encoding="utf-8-sig", errors="replace", newline="")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with _open(path) as f:
        for number, line in enumerate(f, start=1):
            yield number, line.rstrip("\r\n")


def _json_columns(path: Path, types: dict[str, set[str]], what: str) -> None:
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as e:
            if "'" in line:  # Spark's JSON reader allows single quotes; Python's does not
                raise _Unknown(path) from None
            hint = " (one JSON object per line is expected)" if number == 1 and line.strip() in ("{", "[") else ""
            raise InvalidArgumentError(f"{what}: {path}:{number}: not valid JSON ({e}){hint}") from None
        rows = value if isinstance(value, list) else [value]
        if not rows or not all(isinstance(r, dict) for r in rows):
            raise InvalidArgumentError(f"{what}: {path}:{number}: a JSON {type(value).__name__} where a record (an "
                                       "object) is expected")  # fmt: skip
        for row in rows:
            for name, v in row.items():
                types.setdefault(name, set()).add(_json_kind(v))


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    return "nested"


def _csv_columns(path: Path, types: dict[str, set[str]], what: str) -> None:
    header: list[str] | None = None
    for number, line in _lines(path):
        if not line:
            continue
        fields = next(csv.reader([line], escapechar="\\"), [])
        if header is None:
            header = [name or f"_c{i}" for i, name in enumerate(fields)]  # Spark's name for an empty one
            for name in header:
                types.setdefault(name, set()).add("string")
            continue
        if len(fields) != len(header):
            raise InvalidArgumentError(f"{what}: {path}:{number}: {len(fields)} field(s) where the header has "
                                       f"{len(header)} ({', '.join(header)})")  # fmt: skip


def _parquet_columns(path: Path, types: dict[str, set[str]], what: str) -> None:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception as e:  # noqa: BLE001 - any unreadable footer is the same mistake of the caller's
        raise InvalidArgumentError(f"{what}: {path}: not a readable Parquet file ({str(e).splitlines()[0]})") from None
    for field in schema:
        types.setdefault(field.name, set()).add(str(field.type))


def _arrow_type(kinds: set[str]) -> pa.DataType:
    """One column's type as Spark infers it from the kinds of values seen (a mixture widens to a string)."""
    import pyarrow as pa

    seen = kinds - {"null"}
    if not seen:
        return pa.null()
    if seen <= {"integer"}:
        return pa.int64()
    if seen <= {"integer", "double"}:
        return pa.float64()
    if seen == {"boolean"}:
        return pa.bool_()
    if "nested" in seen:
        return pa.null()  # a struct or an array: a kind no predicate check compares
    if seen <= {"integer", "double", "boolean", "string"}:
        return pa.string()
    if len(seen) == 1:  # a Parquet file's own type
        try:
            return pa.type_for_alias(next(iter(seen)))
        except ValueError:
            return pa.null()
    return pa.null()
