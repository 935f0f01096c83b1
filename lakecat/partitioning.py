"""Partition specs in Iceberg's transform words, for both formats.

Iceberg takes them as they are (hidden partitioning). Delta has no hidden partitioning, so time
transforms become generated partition columns whose expressions Delta knows how to derive
partition filters from (a filter on the source column still prunes). What Delta cannot express
(``bucket``) is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidArgumentError, UnsupportedOperationError
from .identifiers import quote, validate_part
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

    def iceberg_sql(self) -> str:
        col = quote(self.column)
        if self.transform == "identity":
            return col
        if self.param is not None:
            return f"{self.transform}({self.param}, {col})"
        return f"{self.transform}({col})"

    @property
    def delta_column(self) -> str:
        """Name of the generated partition column Delta gets for this field."""
        suffix = {"years": "year", "months": "month", "days": "day", "hours": "hour", "truncate": "trunc"}
        return self.column if self.transform == "identity" else f"{self.column}_{suffix[self.transform]}"


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
            raise InvalidArgumentError(f"invalid partition transform {item.strip()!r}: no column {field.column!r} in the schema")
        field = PartitionField(field.transform, col.name, field.param)
        if field.transform in ("years", "months", "days", "hours") and col.type not in _TIME_TYPES:
            raise InvalidArgumentError(f"invalid partition transform {item.strip()!r}: {col.name} is {col.type}, not a date or timestamp")
        if field.transform == "hours" and col.type == "DATE":
            raise InvalidArgumentError(f"invalid partition transform {item.strip()!r}: hours() needs a timestamp, {col.name} is a DATE")
        if field.transform == "truncate" and col.type not in ("STRING", "INT", "BIGINT", "SMALLINT", "TINYINT") and not col.type.startswith("DECIMAL"):
            raise InvalidArgumentError(f"invalid partition transform {item.strip()!r}: truncate needs a string, integer or decimal column")
        if field in fields:
            raise InvalidArgumentError(f"invalid partition spec: {field} appears twice")
        fields.append(field)
    return fields


def delta_generated_columns(fields: list[PartitionField], columns: list[Column]) -> tuple[list[str], list[str]]:
    """DDL for Delta's generated partition columns and the partition column list.

    Returns:
        (extra column DDL snippets, partition column names)

    Raises:
        UnsupportedOperationError: for ``bucket``, which Delta cannot express.
    """
    types = {c.name: c.type for c in columns}
    extra: list[str] = []
    names: list[str] = []
    for f in fields:
        src = quote(f.column)
        if f.transform == "identity":
            names.append(f.column)
            continue
        if f.transform == "bucket":
            raise UnsupportedOperationError(
                f"partition transform {f}: not supported for delta tables — Delta has no hash-bucket "
                "partitioning; partition by a coarser column or use --format iceberg"
            )
        if f.delta_column.lower() in (n.lower() for n in types):
            raise InvalidArgumentError(
                f"partition transform {f}: Delta needs a generated column {f.delta_column!r}, which clashes with an existing column"
            )
        ts = types[f.column] != "DATE"
        expr_type = {
            "years": ("INT", f"YEAR({src})"),
            "months": ("STRING", f"DATE_FORMAT({src}, 'yyyy-MM')"),
            "days": ("DATE", f"CAST({src} AS DATE)" if ts else src),
            "hours": ("STRING", f"DATE_FORMAT({src}, 'yyyy-MM-dd-HH')"),
        }
        if f.transform == "truncate":
            if types[f.column] == "STRING":
                gen_type, expr = "STRING", f"SUBSTRING({src}, 1, {f.param})"
            else:
                gen_type, expr = types[f.column], f"{src} - PMOD({src}, {f.param})"
        else:
            gen_type, expr = expr_type[f.transform]
        extra.append(f"{quote(f.delta_column)} {gen_type} GENERATED ALWAYS AS ({expr})")
        names.append(f.delta_column)
    return extra, names


_GEN_PATTERNS = [
    (re.compile(r"YEAR\(`?(\w+)`?\)\Z", re.I), "years"),
    (re.compile(r"DATE_FORMAT\(`?(\w+)`?, 'yyyy-MM'\)\Z", re.I), "months"),
    (re.compile(r"CAST\(`?(\w+)`? AS DATE\)\Z", re.I), "days"),
    (re.compile(r"DATE_FORMAT\(`?(\w+)`?, 'yyyy-MM-dd-HH'\)\Z", re.I), "hours"),
    (re.compile(r"SUBSTRING\(`?(\w+)`?, 1, (\d+)\)\Z", re.I), "truncate"),
    (re.compile(r"`?(\w+)`? - PMOD\(`?\w+`?, (\d+)\)\Z", re.I), "truncate"),
]


def describe_delta_partitioning(partition_columns: list[str], generation: dict[str, str]) -> list[str]:
    """Turn Delta partition columns (and their generation expressions) back into transform words."""
    out = []
    for name in partition_columns:
        expr = generation.get(name)
        word = name
        if expr:
            for pattern, transform in _GEN_PATTERNS:
                m = pattern.match(expr.strip())
                if m:
                    word = f"{transform}({m.group(2)}, {m.group(1)})" if transform == "truncate" else f"{transform}({m.group(1)})"
                    break
        out.append(word)
    return out


def iceberg_transform_word(transform: str, source: str) -> str:
    """pyiceberg's transform spelling (``day``, ``bucket[16]``) to lakecat's (``days(ts)``, ``bucket(16, id)``)."""
    t = transform.lower()
    simple = {"identity": source, "year": f"years({source})", "month": f"months({source})",
              "day": f"days({source})", "hour": f"hours({source})", "void": f"void({source})"}  # fmt: skip
    if t in simple:
        return simple[t]
    m = re.match(r"(bucket|truncate)\[(\d+)\]", t)
    if m:
        return f"{m.group(1)}({m.group(2)}, {source})"
    return f"{t}({source})"
