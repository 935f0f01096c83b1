"""`lakecat catalogs`: the catalog configs lakecat can find."""

from __future__ import annotations

import os

import typer

from lakecat.catalog import list_catalogs
from lakecat.config import DEFAULT_CATALOG

from ._options import JsonOpt, VerboseOpt
from ._output import Output, run
from ._render import key, print_table, table


def catalogs(json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """List the catalog configs lakecat can find by name, the kind of catalog of each format, and which one is active."""
    out = Output(json_, verbose)

    def human(console, rows):  # type: ignore[no-untyped-def]
        t = table(key(""), key("name"), "kind", "config")
        for r in rows:
            kind = " · ".join(
                f"{fmt}: {k}" + (f" ({r.metastore})" if k == "metastore" else "") for fmt, k in r.kind.items()
            )
            t.add_row("*" if r.active else "", r.name, kind or "? (not usable as it stands)", r.source)
        print_table(console, t)
        console.print("* active (--catalog NAME|PATH, else $LAKECAT_CATALOG, else local)")
        if any(r.problem for r in rows):
            console.print("? an unset variable or a bad section: `lakecat catalogs --json` says which")

    run(out, lambda: _Rows(list_catalogs(os.environ.get("LAKECAT_CATALOG") or DEFAULT_CATALOG)), human)


class _Rows(list):  # type: ignore[type-arg]
    def to_dict(self) -> list:  # type: ignore[type-arg]
        return [r.to_dict() for r in self]


def register(app: typer.Typer) -> None:
    app.command("catalogs")(catalogs)
