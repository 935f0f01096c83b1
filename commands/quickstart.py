"""`lakecat quickstart`: from nothing to Kafka events in an Iceberg and a Delta table, in one command."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect
from ._output import Output, run
from ._render import human_duration, key, num, print_commands, print_table, table, unwrapped_width

if TYPE_CHECKING:
    from rich.console import Console

    from lakecat.results import QuickstartResult


def quickstart(
    port: Annotated[
        int | None, typer.Option("--port", help="Broker port (default 9092, or a free one if taken).")
    ] = None,
    events: Annotated[int, typer.Option("--events", min=1, help="How many click events to produce.")] = 3000,
    keep_broker: Annotated[
        bool, typer.Option("--keep-broker", help="Leave the local broker running afterwards.")
    ] = False,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Tour lakecat end to end: local Kafka -> Iceberg + Delta tables, time travel, changes, compaction.

    Starts a local broker, produces click events (a few malformed), ingests them into a partitioned
    Iceberg and a partitioned Delta table, reads history, time-travels, reads changes, compacts and
    dry-runs expiry, then says what to try next. Re-runnable: a second run ingests only new events.
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        from lakecat import local

        return local.run_quickstart(connect(catalog), port=port, events=events, keep_broker=keep_broker, say=out.info)

    run(out, api, render_quickstart)


def render_quickstart(console: Console, r: QuickstartResult) -> None:
    """The tour's result for people: a table of each table's figures where it fits the width, else one block per
    table (label, value), then the commands to try next; nothing cut or left blank at any width."""
    again = " (tables existed: only the new events were ingested)" if r.run > 1 else ""
    console.print(f"[bold]lakecat quickstart[/] — run {r.run}{again}, {human_duration(r.duration_s)}")
    console.print(f"{r.events_produced:,} click events (+{r.malformed_produced:,} malformed) produced to {r.topic} "
                  f"on {r.bootstrap}", markup=False)  # fmt: skip
    figures = r.figures()
    labels = list(next(iter(figures.values()), {}))
    t = table(key("table"), *(key(label) if label == "format" else num(label) for label in labels))
    for name, f in figures.items():
        t.add_row(name, *f.values())
    if unwrapped_width(console, t) <= console.width:
        print_table(console, t)
    else:  # too narrow for every column whole: rich would squeeze the counts' columns to nothing
        width = max(map(len, labels), default=0)
        for name, f in figures.items():
            console.print(name, style="bold", markup=False, soft_wrap=True)
            for label, value in f.items():
                console.print(f"  {label:<{width}}  {value}", markup=False, soft_wrap=True)
    console.print("next, try:")
    print_commands(console, r.next_commands)


def register(app: typer.Typer) -> None:
    app.command("quickstart")(quickstart)
