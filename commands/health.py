"""`lakecat health`: each table's health from metadata alone (no JVM), a verdict, HTML and Prometheus exports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from lakecat.units import human_size, plural

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect
from ._output import Output, run
from ._render import human_duration, human_time, key, num, print_table, table

_STYLE = {"healthy": "green", "compact": "yellow", "expire": "yellow", "clean": "cyan", "failed": "red"}


def health(
    pattern: Annotated[
        str | None,
        typer.Argument(metavar="PATTERN", help="Tables to look at, fnmatch style, e.g. 'sales.*' (default: all)."),
    ] = None,
    fail_on: Annotated[
        str | None, typer.Option("--fail-on", help="Exit 1 if a table needs this: compact, expire or any (CI gates).")
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write one self-contained HTML page: histograms, versions, verdicts."),
    ] = None,
    prometheus: Annotated[
        Path | None,
        typer.Option(
            "--prometheus",
            help="Also write the health gauges in Prometheus' text format (node-exporter textfile collector).",
        ),
    ] = None,
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--allow-empty",
            help="With --fail-on: pass when PATTERN matches no table (without it, a gate that checks nothing exits 1).",
        ),
    ] = False,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Each table's files, deletes, versions and partition skew from metadata (no JVM), and a verdict:
    healthy, compact, expire or clean, with the reason.

    Example: lakecat health 'sales.*' --fail-on any --json
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        cat = connect(catalog)
        with out.progress("health") as update:

            def progress(name: str, done: int, total: int) -> None:
                update(completed=done, total=total, description=f"health {name}" if name else "health")

            # a gate that judges no table must not pass; a plain listing is a question, and "none" may be its answer
            return cat.health(pattern, progress=progress, allow_empty=allow_empty or fail_on is None, fail_on=fail_on,
                              html=html, prometheus=prometheus)  # fmt: skip

    def human(console, r):  # type: ignore[no-untyped-def]
        if not r.tables:
            console.print(f"no table matches {r.pattern or '*'}", markup=False)
            return
        t = table(key("table"), key("format"), key("verdict"), num("files"), num("small"), num("size"), num("versions"),
                  num("old versions hold"), "last compaction", "reason", title="table health")  # fmt: skip
        for h in r.tables:
            t.add_row(h.name, h.format, Text(h.verdict, style=_STYLE.get(h.verdict, "")), f"{h.data_files:,}",
                      f"{h.small_files:,}", human_size(h.data_bytes), f"{h.versions:,}", human_size(h.old_version_bytes),
                      human_time(h.last_compaction), h.reason)  # fmt: skip
        print_table(console, t)
        counts = ", ".join(f"{n} {v}" for v, n in sorted(r.verdicts.items()))
        console.print(f"{plural(len(r.tables), 'table')}: {counts}, in {human_duration(r.duration_s)}", markup=False)

    result = run(out, api, human)
    bad = result.failing(fail_on)
    if bad:
        out.info(f"--fail-on {fail_on}: {', '.join(h.name for h in bad)}")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("health")(health)
