"""`lakecat catalogs`: the catalog configs lakecat can find."""

from __future__ import annotations

import typer

from ._options import JsonOpt, VerboseOpt
from ._output import Output, run
from ._render import key, print_table, table


def catalogs(json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """List your catalogs (the embedded default, $LAKECAT_CATALOG, configs in ~/.lakecat/catalogs or
    $LAKECAT_CONF_DIR): the kind of catalog of each format and which one is active; then the example configs
    shipped with lakecat (--json: "example": true)."""
    out = Output(json_, verbose)

    def human(console, rows):  # type: ignore[no-untyped-def]
        t = table(key(""), key("name"), "kind", "config")
        for r in rows:
            if r.example and not r.active:
                continue
            kind = " · ".join(
                f"{fmt}: {k}" + (f" ({r.metastore})" if k == "metastore" else "") for fmt, k in r.kind.items()
            )
            t.add_row("*" if r.active else "", r.name, kind or "? (not usable as it stands)", r.source)
        print_table(console, t)
        console.print("* active (--catalog NAME|PATH, else $LAKECAT_CATALOG, else local)")
        if any(r.problem for r in rows if not r.example or r.active):
            console.print("? an unset variable or a bad section: `lakecat catalogs --json` says which")
        examples = [r.name for r in rows if r.example and not r.active]
        if examples:
            console.print(
                f"examples shipped with lakecat, to copy into {local.lakecat_home() / 'catalogs'} and edit: "
                + ", ".join(examples),
                markup=False,
            )

    import lakecat
    from lakecat import local

    run(out, lakecat.list_catalogs, human)


def register(app: typer.Typer) -> None:
    app.command("catalogs")(catalogs)
