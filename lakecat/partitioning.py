"""Partition specs in Iceberg's transform words, parsed and checked against the schema for every format.

How a format expresses a spec (hidden partitioning, generated columns) is its adapter's business
(``lakecat.formats``); what it cannot express it refuses there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidArgumentError
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
