"""Human rendering: rich tables, sizes, times and ages."""

from __future__ import annotations

import json
import textwrap
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from lakecat.units import parse_timestamp

from ._output import UNLIMITED_WIDTH, _default

if TYPE_CHECKING:  # rich loads on the first human rendering: a process that prints JSON never pays for it
    from rich.console import Console
    from rich.table import Column
    from rich.table import Table as RichTable


@cache
def _table_class() -> type[RichTable]:
    from rich.table import Table
    from rich.text import Text

    class _Table(Table):
        """A table whose string cells are text, never rich markup (a value may hold ``[...]``)."""

        def add_row(self, *renderables: Any, **kwargs: Any) -> None:
            super().add_row(*(Text(r) if isinstance(r, str) else r for r in renderables), **kwargs)

    return _Table


def table(*columns: str | Column, title: str | None = None) -> RichTable:
    """A rich table in lakecat's style: a bold header, a rule under it, no vertical lines (rows stay awk-able).

    A plain string is a text column that folds when the terminal is narrow; pass ``num(...)`` for counts and
    sizes (right-aligned) and ``key(...)`` for names, versions and short times (never broken).
    """
    from rich import box
    from rich.table import Column

    cols = [c if isinstance(c, Column) else Column(c, overflow="fold", min_width=min(len(c), 12)) for c in columns]
    return _table_class()(*cols, title=title, title_justify="left", title_style="bold", header_style="bold",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)  # fmt: skip


def num(header: str) -> Column:
    """A column of counts or sizes: right-aligned; wraps only on a terminal too narrow for the table."""
    from rich.table import Column

    return Column(header, justify="right", overflow="fold", min_width=max(len(header), 1))


def key(header: str, *, justify: Literal["left", "right"] = "left") -> Column:
    """A column of identifiers, versions or times: never wrapped (shortened with … only when nothing else fits)."""
    from rich.table import Column

    return Column(header, justify=justify, no_wrap=True, min_width=max(len(header), 1))


def version_lines(versions: dict[str, Any]) -> list[str]:
    """``lakecat X`` and then what it runs on, one ``name  version`` line each (``lakecat --version``, ``doctor``)."""
    rest = {k: v for k, v in versions.items() if k not in ("lakecat", "java_home")}
    width = max(map(len, rest), default=0)
    lines = [f"lakecat {versions['lakecat']}"]
    for name, value in rest.items():
        if name == "java" and value is not None and versions.get("java_home"):
            value = f"{value} ({versions['java_home']})"
        lines.append(f"  {name:<{width}}  {value if value is not None else _MISSING.get(name, 'not installed')}")
    return lines


_MISSING = {"java": "not found"}


def thousands(n: int | None) -> str:
    """A count for people: ``12,345``; ``-`` when unknown."""
    return "-" if n is None else f"{n:,}"


def human_time(value: str | datetime | None) -> str:
    """A timestamp for people: ``2026-01-31 12:00:03`` in UTC (milliseconds only when there are some)."""
    if value is None or value == "":
        return "-"
    try:
        dt = parse_timestamp(value)
    except ValueError:
        return str(value)
    text = dt.strftime("%Y-%m-%d %H:%M:%S")
    return text + (f".{dt.microsecond // 1000:03d}" if dt.microsecond // 1000 else "")


def human_duration(seconds: float | None) -> str:
    """``0.4s``, ``12.3s``, ``2m 05s``, ``1h 02m``, ``3d 04h`` (lakecat's duration letters)."""
    if seconds is None:
        return "-"
    s = max(float(seconds), 0.0)
    if s < 60:
        return f"{s:.1f}s"
    whole = int(round(s))
    for unit, size, sub, sub_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if whole >= size:
            return f"{whole // size}{unit} {whole % size // sub_size:02d}{sub}"
    return f"{whole}s"  # pragma: no cover


def human_age(value: str | datetime | None, now: datetime | None = None) -> str:
    """How long ago a timestamp was, roughly: ``just now``, ``45s ago``, ``3m ago``, ``2h ago``, ``5d ago``."""
    if value is None or value == "":
        return "-"
    try:
        ago = ((now or datetime.now(UTC)) - parse_timestamp(value)).total_seconds()
    except ValueError:
        return "-"
    if ago < -60:  # a clock a little ahead of the writer's is "just now"
        return "in the future"
    if ago < 1:
        return "just now"
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if ago >= size:
            return f"{int(ago // size)}{unit} ago"
    return "just now"  # pragma: no cover


def unwrapped_width(console: Console, renderable: Any) -> int:
    """The columns ``renderable`` takes when nothing in it is wrapped or shortened."""
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update_width(UNLIMITED_WIDTH), renderable).maximum


def print_commands(console: Console, commands: list[str], *, indent: int = 2) -> None:
    """Shell commands to try, each on a line of its own that is never broken (a terminal may wrap it, a copy
    takes it whole); a trailing ``# comment`` goes under its command, wrapped, when the line would not fit."""
    for line in commands:
        command, sep, comment = line.partition("  # ")
        command, comment = command.rstrip(), comment.strip()
        whole = f"{' ' * indent}{command}   # {comment}" if sep else f"{' ' * indent}{command}"
        if not sep or len(whole) <= console.width:
            console.print(whole, markup=False, highlight=False, soft_wrap=True)
            continue
        console.print(f"{' ' * indent}{command}", markup=False, highlight=False, soft_wrap=True)
        under = " " * (indent + 2) + "# "  # every line of it a comment: a pasted block runs only the command
        wrapped = textwrap.fill(comment, console.width, initial_indent=under, subsequent_indent=under)
        console.print(wrapped, style="dim", markup=False, highlight=False, soft_wrap=True)


def print_table(console: Console, t: RichTable, *, optional: tuple[str, ...] = ()) -> None:
    """Print a table to fit a terminal: drop the ``optional`` columns (by header, in order) while it is too wide.

    A table that still does not fit is wrapped / shortened by rich, and a note says ``--json`` has every value whole.
    """

    def natural_width() -> int:
        return unwrapped_width(console, t)

    if t.title:  # rich would wrap a title to its table's width: print it above, wrapped only to a terminal's width
        console.print(t.title, style=t.title_style, markup=False)
        t.title = None
    if console.is_terminal:
        for header in optional:
            if natural_width() <= console.width:
                break
            t.columns[:] = [c for c in t.columns if c.header != header]
            for i, c in enumerate(t.columns):
                c._index = i  # rich pads the first and last column by their index
    console.print(t)
    if console.is_terminal and natural_width() > console.width:
        console.print("[dim](narrow terminal: long values are wrapped or shortened; --json has them whole)[/]")


def cell(value: Any) -> str:
    """One value of a data row for people: ``null``, times as ``human_time``, structs and arrays as JSON."""
    if value is None:
        return "null"
    if isinstance(value, datetime):
        return human_time(value)
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=_default)
    return _default(value) if isinstance(value, (date, Decimal, bytes, bytearray)) else str(value)
