"""Which files a filtered read opens: a ``--where`` predicate judged against one file's column statistics.

A file may hold matching rows unless its statistics (the lower and upper value of a column, its null count, its row
count) rule the predicate out; that is the data skipping the engines do when they plan a read. A predicate is parsed
with pyiceberg's expression parser (the SQL comparisons, ``IN``, ``IS NULL``, ``AND``/``OR``/``NOT`` a ``--where``
uses); whatever it cannot judge may match, so the count is never below what a read opens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ColumnStats:
    """One column of one file: lower and upper value, nulls, rows (None: not recorded)."""

    lower: Any
    upper: Any
    nulls: int | None
    rows: int | None


def stats_filter(where: str) -> Callable[[dict[str, ColumnStats]], bool] | None:
    """``may_match(stats)`` for the predicate (``stats``: lower-cased column name -> its statistics in one file);
    None when the predicate is not one the parser reads."""
    from pyiceberg.expressions.parser import parse
    from pyiceberg.expressions.visitors import rewrite_not

    try:
        expr = rewrite_not(parse(str(where)))
    except Exception:  # noqa: BLE001 - a predicate only Spark reads: the caller says it cannot count
        return None
    return lambda stats: _may_match(expr, stats)


def _may_match(expr: Any, stats: dict[str, ColumnStats]) -> bool:
    from pyiceberg import expressions as ex

    if isinstance(expr, ex.AlwaysTrue):
        return True
    if isinstance(expr, ex.AlwaysFalse):
        return False
    if isinstance(expr, ex.And):
        return _may_match(expr.left, stats) and _may_match(expr.right, stats)
    if isinstance(expr, ex.Or):
        return _may_match(expr.left, stats) or _may_match(expr.right, stats)
    term = getattr(expr, "term", None)
    col = stats.get(str(getattr(term, "name", "")).lower())
    if col is None:
        return True
    if isinstance(expr, ex.IsNull):
        return col.nulls is None or col.nulls > 0
    if isinstance(expr, ex.NotNull):
        return col.nulls is None or col.rows is None or col.nulls < col.rows
    if col.lower is None or col.upper is None:
        return True
    try:
        return _in_range(expr, col.lower, col.upper)
    except TypeError:  # a literal of another type than the statistics (a timestamp given as text): Spark decides
        return True


def _in_range(expr: Any, lo: Any, hi: Any) -> bool:
    from pyiceberg import expressions as ex

    if isinstance(expr, ex.In):
        return any(lo <= lit.value <= hi for lit in expr.literals)
    value = getattr(getattr(expr, "literal", None), "value", None)
    if value is None:
        return True
    checks: dict[type, Callable[[], bool]] = {
        ex.EqualTo: lambda: lo <= value <= hi,
        ex.NotEqualTo: lambda: not (lo == hi == value),
        ex.LessThan: lambda: lo < value,
        ex.LessThanOrEqual: lambda: lo <= value,
        ex.GreaterThan: lambda: hi > value,
        ex.GreaterThanOrEqual: lambda: hi >= value,
    }
    check = checks.get(type(expr))
    return True if check is None else bool(check())
