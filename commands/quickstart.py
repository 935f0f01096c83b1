"""`lakecat quickstart`: from nothing to Kafka events in an Iceberg and a Delta table, in one command."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ._common import CatalogOpt, JsonOpt, Output, VerboseOpt, connect, run, table


def quickstart(
    port: Annotated[Optional[int], typer.Option("--port", help="Broker port (default 9092, or a free one if taken).")] = None,
    events: Annotated[int, typer.Option("--events", min=1, help="How many click events to produce.")] = 3000,
    keep_broker: Annotated[bool, typer.Option("--keep-broker", help="Leave the local broker running afterwards.")] = False,
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
        console.print(f"[bold]lakecat quickstart[/] — run {r.run}{' (tables existed: only the new events were ingested)' if r.run > 1 else ''}, {r.duration_s} s")
        t = table("table", "format", "ingested", "dead-lettered", "versions", "rows @ first", "changes since", "files before→after", "rows now")
        for name, s in r.tables.items():
            t.add_row(name, s["format"], str(s["rows_written"]), str(s["rows_dead_lettered"]), str(s["versions"]),
                      str(s["rows_at_first_version"]), str(s["changes_since_first_version"]),
                      f"{s['compaction']['files_before']}→{s['compaction']['files_after']}", str(s["rows_now"]))  # fmt: skip
        console.print(t)
        console.print("next, try:")
        for c in r.next_commands:
            console.print(f"  {c}")

    run(out, api, human)


def register(app: typer.Typer) -> None:
    app.command("quickstart")(quickstart)
