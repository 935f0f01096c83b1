"""`lakecat quickstart`: from nothing to Kafka events in an Iceberg and a Delta table, in one command."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect
from ._output import Output, run
from ._render import human_duration, key, num, print_table, table, thousands


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
        from lakecat.quickstart import run_quickstart

        return run_quickstart(connect(catalog), port=port, events=events, keep_broker=keep_broker, say=out.info)

    def human(console, r):  # type: ignore[no-untyped-def]
        again = " (tables existed: only the new events were ingested)" if r.run > 1 else ""
        console.print(f"[bold]lakecat quickstart[/] — run {r.run}{again}, {human_duration(r.duration_s)}")
        t = table(key("table"), key("format"), num("ingested"), num("dead-lettered"), num("versions"), num("rows @ first batch"),
                  num("changes since"), num("files before→after"), num("rows now"))  # fmt: skip
        for name, s in r.tables.items():
            t.add_row(name, s["format"], thousands(s["rows_written"]), thousands(s["rows_dead_lettered"]), str(s["versions"]),
                      thousands(s["rows_at_first_version"]), thousands(s["changes_since_first_version"]),
                      f"{s['compaction']['files_before']}→{s['compaction']['files_after']}", thousands(s["rows_now"]))  # fmt: skip
        print_table(console, t)
        console.print("next, try:")
        for c in r.next_commands:
            console.print(f"  {c}")

    run(out, api, human)


def register(app: typer.Typer) -> None:
    app.command("quickstart")(quickstart)
