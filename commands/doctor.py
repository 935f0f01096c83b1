"""`lakecat doctor`: one line per check (✔ or ✘ with the fix); exit 0 when all pass, 1 otherwise."""

from __future__ import annotations

import typer
from rich.markup import escape

from lakecat.units import plural

from ._common import CatalogOpt, JsonOpt, Output, VerboseOpt, connect_config, run
from ._render import version_lines


def doctor(catalog: CatalogOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """Check this machine for lakecat: Python, Java, the jar cache, metastore, warehouse, Kafka, services, disk.

    Shows first the versions lakecat runs on (those of `lakecat --version`; --json: "versions").
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        from lakecat import local

        return local.run_doctor(connect_config(catalog))

    def human(console, report):  # type: ignore[no-untyped-def]
        if report.versions is not None:
            for line in version_lines(report.versions):
                console.print(line, markup=False, highlight=False, soft_wrap=True)
        for c in report.checks:
            mark = "[green]✔[/]" if c.ok else "[bold red]✘[/]"
            console.print(f"{mark} {escape(c.name)}: {escape(c.detail)}" + (f" — fix: {escape(c.fix)}" if c.fix else ""), markup=True,
                          highlight=False, soft_wrap=True)  # fmt: skip
        if report.spark is not None:
            for line in _sizing_lines(report.spark):
                console.print(escape(line), markup=True, highlight=False, soft_wrap=True)
        console.print(
            "all checks passed" if report.ok else f"{plural(sum(not c.ok for c in report.checks), 'check')} failed"
        )

    report = run(out, api, human)
    if not report.ok:
        raise typer.Exit(1)


def _sizing_lines(spark: dict) -> list[str]:  # type: ignore[type-arg]
    """The Spark driver lakecat would start, each value with where it came from (the JSON's ``sources``)."""
    src = spark["sources"]
    cores = f"{plural(spark['cores'], 'core')}" if spark["cores"] is not None else "the cluster's cores"
    return [
        f"spark: master {spark['master']} ({src['master']}), {cores} ({src['cores']}), driver memory "
        f"{spark['driver_memory']} ({src['driver_memory']}), {plural(spark['shuffle_partitions'], 'shuffle partition')} "
        f"({src['shuffle_partitions']})",
        f"spark java options ({src['java_options']}): {' '.join(spark['java_options'])}",
    ]


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
