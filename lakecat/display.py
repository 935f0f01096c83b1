"""How results look in a notebook: small HTML tables (``_repr_html_``), rows and columns, every value escaped.

One helper for every result, table and catalog, so that Jupyter shows a list as rows and columns (never a dict in a
cell) and a long one as its first rows and "… N more". Plain HTML with inline styles: no JavaScript, no library.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

#: Rows a table shows before "… N more".
MAX_ROWS = 20
_CELL = "padding:2px 8px;text-align:left;vertical-align:top"
_NUM = "padding:2px 8px;text-align:right;vertical-align:top"


def text(value: Any, *, limit: int = 120) -> str:
    """One cell's text: lists joined by commas, mappings as ``k=v``, None as empty, long text cut at ``limit``."""
    if value is None:
        out = ""
    elif isinstance(value, bool):
        out = "yes" if value else "no"
    elif isinstance(value, (datetime, date)):
        out = value.isoformat()
    elif isinstance(value, int):
        out = f"{value:,}" if abs(value) < 10**15 else str(value)  # a snapshot id reads whole, without separators
    elif isinstance(value, float):
        out = f"{value:,.3g}" if abs(value) < 1e-3 else f"{value:,.2f}".rstrip("0").rstrip(".")
    elif isinstance(value, Mapping):
        out = ", ".join(f"{k}={text(v, limit=limit)}" for k, v in value.items())
    elif isinstance(value, (list, tuple, set, frozenset)):
        out = ", ".join(text(v, limit=limit) for v in value)
    else:
        out = str(value)
    return out if len(out) <= limit else out[: limit - 1] + "…"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None,
          max_rows: int = MAX_ROWS, empty: str = "(none)") -> str:  # fmt: skip
    """An HTML table of ``rows`` under ``columns`` (numbers right-aligned), the first ``max_rows`` and "… N more"."""
    rows = list(rows)
    shown = rows[:max_rows]
    head = "".join(f"<th style='{_CELL}'>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td style='{_NUM if _is_number(v) else _CELL}'>{html.escape(text(v))}</td>" for v in row)
        + "</tr>"
        for row in shown
    )
    if not rows:
        body = f"<tr><td colspan='{max(len(columns), 1)}' style='{_CELL}'>{html.escape(empty)}</td></tr>"
    more = f"<p style='margin:2px 0'>… {len(rows) - len(shown):,} more</p>" if len(rows) > len(shown) else ""
    caption = f"<p style='margin:4px 0'><b>{html.escape(title)}</b></p>" if title else ""
    return f"{caption}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def records(items: Sequence[Mapping[str, Any]], *, columns: Sequence[str] | None = None, title: str | None = None,
            max_rows: int = MAX_ROWS) -> str:  # fmt: skip
    """A list of records (dicts) as rows and columns: ``columns``, or every key the records have, in order."""
    if columns is None:
        seen: dict[str, None] = {}
        for item in items:
            seen.update(dict.fromkeys(item))
        columns = list(seen)
    return table(columns, ([item.get(c) for c in columns] for item in items), title=title, max_rows=max_rows)


def fields(data: Mapping[str, Any], *, title: str | None = None) -> str:
    """A record as a two-column table (name, value); fields that are lists of records follow as tables of their own."""
    scalars = {k: v for k, v in data.items() if not _is_records(v)}
    out = table(["field", "value"], scalars.items(), title=title) if scalars else ""
    for k, v in data.items():
        if _is_records(v):
            out += records(v, title=k)
    return out


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def of(data: Any, *, title: str | None = None) -> str:
    """Any ``to_dict()`` document: a list of records as rows and columns, a record as fields, else one value."""
    if isinstance(data, list) and all(isinstance(v, Mapping) for v in data):
        return records(data, title=title)
    if isinstance(data, Mapping):
        return fields(data, title=title)
    return table(["value"], [[data]], title=title)
