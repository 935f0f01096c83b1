"""`lakecat catalogs`: the catalog configs lakecat can find."""

from __future__ import annotations

import os

import typer

from lakecat.config import DEFAULT_CATALOG, available_catalogs
from lakecat.results import CatalogInfo

from ._options import JsonOpt, VerboseOpt
from ._output import Output, run
from ._render import key, print_table, table


def catalogs(json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """List the catalog configs lakecat can find by name (and which one is active)."""
    out = Output(json_, verbose)

    def api() -> list[CatalogInfo]:
        active = os.environ.get("LAKECAT_CATALOG") or DEFAULT_CATALOG
        return [CatalogInfo(name, str(path), name == active or str(path) == active) for name, path in available_catalogs()]

    def human(console, rows):  # type: ignore[no-untyped-def]
        t = table(key(""), key("name"), "config")
        for r in rows:
            t.add_row("*" if r.active else "", r.name, r.source)
        print_table(console, t)
        console.print("* active (--catalog NAME|PATH, else $LAKECAT_CATALOG, else local)")

    run(out, lambda: _Rows(api()), human)


class _Rows(list):  # type: ignore[type-arg]
    def to_dict(self) -> list:  # type: ignore[type-arg]
        return [r.to_dict() for r in self]


def register(app: typer.Typer) -> None:
    app.command("catalogs")(catalogs)
