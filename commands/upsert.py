"""`lakecat upsert`: batch MERGE of a file set into a table (the batch twin of `ingest --cdc`)."""

from __future__ import annotations

from typing import Annotated

import typer

from lakecat.units import plural

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect
from ._output import Output, run
from ._render import human_duration, thousands


def upsert(
    name: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table to merge into.")],
    from_: Annotated[
        str, typer.Option("--from", help="A file or directory of json (one object per line), csv or parquet.")
    ],
    key: Annotated[str, typer.Option("--key", help="Column(s) that identify a row, comma-separated, e.g. id.")],
    file_format: Annotated[
        str | None, typer.Option("--file-format", help="json, csv or parquet (default: from the file names).")
    ] = None,
    delete_when: Annotated[
        str | None,
        typer.Option(
            "--delete-when", help="SQL predicate over the source's columns: matching rows delete their match."
        ),
    ] = None,
    branch: Annotated[
        str | None,
        typer.Option("--branch", help="Write to this branch (Iceberg; see `lakecat branch` / `lakecat publish`)."),
    ] = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """MERGE files into a table by key: matched rows that differ are updated, new keys inserted, --delete-when rows deleted.

    Example: lakecat upsert crm.accounts --from /landing/fixes/ --key id --delete-when "op = 'D'"
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        return connect(catalog).load_table(name).upsert(from_, key=key, file_format=file_format, delete_when=delete_when,
                                                        branch=branch)  # fmt: skip

    def human(console, r):  # type: ignore[no-untyped-def]
        done = "in one commit" if r.committed else "and no commit: nothing changed"
        console.print(
            f"{r.table} ({r.format}): {plural(r.rows_in, 'source row')} → {thousands(r.inserted)} inserted, "
            f"{thousands(r.updated)} updated, {thousands(r.unchanged)} unchanged, {thousands(r.deleted)} deleted "
            f"{done} (version {r.version}), {human_duration(r.duration_s)}",
            markup=False,
            highlight=False,
        )

    run(out, api, human)


def register(app: typer.Typer) -> None:
    app.command("upsert")(upsert)
