"""`lakecat doctor`: one line per check (✔ or ✘ with the fix); exit 0 when all pass, 1 otherwise."""

from __future__ import annotations

import typer
from rich.markup import escape

from lakecat.units import plural

from ._common import CatalogOpt, JsonOpt, Output, VerboseOpt, connect_config, run


def doctor(catalog: CatalogOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """Check this machine for lakecat: Python, Java, the jar cache, metastore, warehouse, Kafka, services, disk."""
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        from lakecat.doctor import run_doctor

        return run_doctor(connect_config(catalog))

    def human(console, report):  # type: ignore[no-untyped-def]
        for c in report.checks:
            mark = "[green]✔[/]" if c.ok else "[bold red]✘[/]"
            console.print(f"{mark} {escape(c.name)}: {escape(c.detail)}" + (f" — fix: {escape(c.fix)}" if c.fix else ""), markup=True,
                          highlight=False, soft_wrap=True)  # fmt: skip
        console.print(
            "all checks passed" if report.ok else f"{plural(sum(not c.ok for c in report.checks), 'check')} failed"
        )

    report = run(out, api, human)
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
