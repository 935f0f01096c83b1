"""Partition specs in Iceberg's transform words and clustering keys, parsed and checked against the schema for every
format, and the layout a table is created with.

How a format expresses a spec (hidden partitioning, generated columns) is its adapter's business
(``lakecat.formats``); what it cannot express it refuses there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidArgumentError, columns_note
from .identifiers import validate_part
from .schema import Column

_TRANSFORM = re.compile(
    r"\s*(?:(?P<fn>years|months|days|hours|year|month|day|hour)\s*\(\s*(?P<col>\w+)\s*\)"
    r"|(?P<pfn>bucket|truncate)\s*\(\s*(?P<n>\d+)\s*,\s*(?P<pcol>\w+)\s*\)"
    r"|(?P<ident>\w+))\s*\Z",
    re.IGNORECASE,
)
_TIME_TYPES = {"TIMESTAMP", "TIMESTAMP_NTZ", "DATE"}


@dataclass(frozen=True)
class PartitionField:
    """One partition field: transform (identity/years/months/days/hours/bucket/truncate), column, width."""

    transform: str
    column: str
    param: int | None = None

    def __str__(self) -> str:
        if self.transform == "identity":
            return self.column
        if self.param is not None:
            return f"{self.transform}({self.param}, {self.column})"
        return f"{self.transform}({self.column})"


def _split_top_level(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def parse_partition_spec(spec: str | list[str] | tuple[str, ...] | None, columns: list[Column]) -> list[PartitionField]:
    """Parse ``"days(ts), region"`` (or a list of such items) against the table's columns."""
    if not spec:
        return []
    items = _split_top_level(spec) if isinstance(spec, str) else [p for s in spec for p in _split_top_level(s)]
    by_name = {c.name.lower(): c for c in columns}
    fields: list[PartitionField] = []
    for item in items:
        m = _TRANSFORM.match(item)
        if not m:
            raise InvalidArgumentError(
                f"invalid partition transform {item.strip()!r}: use col, years(col), months(col), days(col), "
                "hours(col), bucket(n, col) or truncate(w, col)"
            )
        if m.group("fn"):
            fn = m.group("fn").lower()
            field = PartitionField(fn if fn.endswith("s") else fn + "s", m.group("col"))
        elif m.group("pfn"):
            field = PartitionField(m.group("pfn").lower(), m.group("pcol"), int(m.group("n")))
            if field.param is not None and field.param < 1:
                raise InvalidArgumentError(f"invalid partition transform {item.strip()!r}: width must be positive")
        else:
            field = PartitionField("identity", m.group("ident"))
        validate_part(field.column, what="partition column")
        col = by_name.get(field.column.lower())
        if col is None:
            raise InvalidArgumentError(
                f"invalid partition transform {item.strip()!r}: no column {field.column!r} in the schema"
                + columns_note(c.name for c in columns)
            )
        field = PartitionField(field.transform, col.name, field.param)
        if field.transform in ("years", "months", "days", "hours") and col.type not in _TIME_TYPES:
            raise InvalidArgumentError(
                f"invalid partition transform {item.strip()!r}: {col.name} is {col.type}, not a date or timestamp"
            )
        if field.transform == "hours" and col.type == "DATE":
            raise InvalidArgumentError(
                f"invalid partition transform {item.strip()!r}: hours() needs a timestamp, {col.name} is a DATE"
            )
        if (
            field.transform == "truncate"
            and col.type not in ("STRING", "INT", "BIGINT", "SMALLINT", "TINYINT")
            and not col.type.startswith("DECIMAL")
        ):
            raise InvalidArgumentError(
                f"invalid partition transform {item.strip()!r}: truncate needs a string, integer or decimal column"
            )
        if field in fields:
            raise InvalidArgumentError(f"invalid partition spec: {field} appears twice")
        fields.append(field)
    return fields


def source_column(word: str) -> str:
    """The source column of a partition field in transform words: ``days(ts)`` -> ``ts``, ``bucket(16, id)`` -> ``id``."""
    inner = word.strip()
    if inner.endswith(")") and "(" in inner:
        inner = inner[inner.index("(") + 1 : -1]
    return inner.split(",")[-1].strip()


_ZORDER = re.compile(r"\s*zorder\s*\((?P<cols>[^()]*)\)\s*\Z", re.IGNORECASE)


@dataclass(frozen=True)
class Clustering:
    """A table's clustering keys: ``columns`` in order; ``zorder``: interleaved (z-order) rather than a linear sort."""

    columns: tuple[str, ...] = ()
    zorder: bool = False

    def __bool__(self) -> bool:
        return bool(self.columns)

    def __str__(self) -> str:
        keys = ", ".join(self.columns)
        return f"zorder({keys})" if self.zorder else keys or "none"


def parse_cluster_by(text: str | list[str] | tuple[str, ...], columns: list[Column]) -> Clustering:
    """Parse ``cluster_by`` (``--cluster-by``): ``"a, b"`` (a linear order), ``"zorder(a, b)"`` or ``"none"`` against the columns."""
    joined = text if isinstance(text, str) else ", ".join(text)
    if joined.strip().lower() == "none":
        return Clustering()
    m = _ZORDER.match(joined)
    items = [i.strip() for i in (m.group("cols") if m else joined).split(",")]
    if not any(items) or not all(items):
        raise InvalidArgumentError(f'invalid cluster_by={joined!r}: give column names ("a, b"), zorder(a, b) or none')
    by_name = {c.name.lower(): c for c in columns}
    keys: list[str] = []
    for item in items:
        if "(" in item or ")" in item:
            raise InvalidArgumentError(f"invalid cluster_by={joined!r}: clustering keys are plain columns; "
                                       "zorder(a, b) is the only function allowed, around all of them")  # fmt: skip
        col = by_name.get(validate_part(item, what="clustering column").lower())
        if col is None:
            raise InvalidArgumentError(f"invalid cluster_by={joined!r}: no column {item!r} in the schema"
                                       f"{columns_note(c.name for c in columns)}")  # fmt: skip
        if col.name in keys:
            raise InvalidArgumentError(f"invalid cluster_by={joined!r}: {col.name} appears twice")
        keys.append(col.name)
    if m and len(keys) < 2:
        raise InvalidArgumentError(f"invalid cluster_by={joined!r}: z-order interleaves two or more columns; "
                                   f"give {keys[0]} alone for a sort by one column")  # fmt: skip
    return Clustering(tuple(keys), zorder=bool(m))


@dataclass(frozen=True)
class Layout:
    """How a new table lays out its rows and records deletes, as ``create`` was asked (None: the catalog config's
    ``[tables]`` default, else the format's own)."""

    clustering: Clustering = field(default_factory=Clustering)
    format_version: int | None = None
    deletion_vectors: bool | None = None


@dataclass(frozen=True)
class LayoutInfo:
    """A table's layout as ``describe`` shows it (from metadata, no JVM)."""

    clustering: Clustering = field(default_factory=Clustering)
    #: How the keys cluster: ``liquid`` (Delta), ``sort`` (an Iceberg sort order), ``zorder`` (Iceberg); None: no keys.
    clustering_method: str | None = None
    #: The sort order in the format's own words (``a ASC NULLS FIRST``); empty where the format has none.
    sort_order: tuple[str, ...] = ()
    format_version: int | None = None
    #: Whether deletes, updates and merges mark rows (deletion vectors, position deletes) instead of rewriting files.
    deletion_vectors: bool = False
    #: ``copy-on-write``, ``deletion vectors`` or ``position deletes``.
    delete_mode: str = "copy-on-write"
    table_features: tuple[str, ...] = ()

    def describe_fields(self) -> dict[str, Any]:
        """The keys ``describe`` shows (``DescribeResult``'s layout fields)."""
        return {"clustering": list(self.clustering.columns), "sort_order": list(self.sort_order),
                "clustering_method": self.clustering_method if self.clustering else None,
                "format_version": self.format_version, "deletion_vectors": self.deletion_vectors,
                "delete_mode": self.delete_mode, "table_features": list(self.table_features)}  # fmt: skip
