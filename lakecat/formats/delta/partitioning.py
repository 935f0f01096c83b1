"""Delta has no hidden partitioning: Iceberg's time transforms become generated partition columns.

Delta derives partition filters from the generation expressions below, so a filter on the source
column still prunes. What Delta cannot express (``bucket``) is refused.
"""

from __future__ import annotations

import re

from ...errors import InvalidArgumentError, UnsupportedOperationError
from ...identifiers import quote
from ...partitioning import PartitionField
from ...schema import Column

_SUFFIX = {"years": "year", "months": "month", "days": "day", "hours": "hour", "truncate": "trunc"}


def generated_column(field: PartitionField) -> str:
    """Name of the generated partition column Delta gets for this field."""
    return field.column if field.transform == "identity" else f"{field.column}_{_SUFFIX[field.transform]}"


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
                "partitioning; partition by a coarser column or use format='iceberg'"
            )
        gen = generated_column(f)
        if gen.lower() in (n.lower() for n in types):
            raise InvalidArgumentError(
                f"partition transform {f}: Delta needs a generated column {gen!r}, which clashes with an existing column"
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
        extra.append(f"{quote(gen)} {gen_type} GENERATED ALWAYS AS ({expr})")
        names.append(gen)
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
                    word = (
                        f"{transform}({m.group(2)}, {m.group(1)})"
                        if transform == "truncate"
                        else f"{transform}({m.group(1)})"
                    )
                    break
        out.append(word)
    return out
