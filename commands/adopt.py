"""`lakecat register / convert`: bring your own tables (an existing table by location; a Parquet directory in place)."""

from __future__ import annotations

from typing import Annotated

import typer

from lakecat.units import human_size, plural

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect
from ._output import Output, run
from ._render import key, print_table, table


def register_(
    name: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table to register it as.")],
    location: Annotated[
        str,
        typer.Option(
            "--location", "-l", help="The table's directory (or an Iceberg metadata.json file): a path or URI."
        ),
    ],
    format: Annotated[str | None, typer.Option("--format", "-f", help="iceberg or delta (default: detected).")] = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Add an existing table to the catalog without touching its files (no JVM).

    A Delta table is a directory with _delta_log/; an Iceberg table is a metadata.json file, or a table directory
    whose newest metadata/*.metadata.json is taken (and named). `lakecat drop` later leaves the files alone unless
    --purge.

    Example: lakecat register sales.orders --location s3a://lake/orders
    """
    out = Output(json_, verbose)

    def human(console, r):  # type: ignore[no-untyped-def]
        for note in r.notes:
            console.print(note, markup=False, highlight=False)
        records = plural(r.records, "record") if r.records is not None else "records unknown"
        console.print(f"registered {r.format} table {r.name} at {r.location} (version {r.current_version}, "
                      f"{records} in {plural(r.files, 'file')})", markup=False, highlight=False)  # fmt: skip

    run(out, lambda: connect(catalog).register_table(name, location=location, format=format), human)


def convert(
    name: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table to create.")],
    from_: Annotated[
        str, typer.Option("--from", help="A directory of Parquet files (Hive-style k=v/ partitions allowed).")
    ],
    format: Annotated[str, typer.Option("--format", "-f", help="iceberg or delta.")],
    partition_by: Annotated[
        str | None,
        typer.Option(
            "--partition-by", "-p", help="The partition columns, comma-separated (must match the k=v/ layout)."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print files, partitions, rows and schema; change nothing.")
    ] = False,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Make a directory of Parquet files a table in place: no data is copied.

    Delta runs CONVERT TO DELTA; Iceberg creates the table at the directory and adds the files (add_files).
    The files must agree on one schema.

    Example: lakecat convert raw.events --from /landing/events --format iceberg --dry-run
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        cat = connect(catalog)
        with out.status(f"converting {from_} to {format}"):
            return cat.convert_table(name, source=from_, format=format, partition_by=partition_by, dry_run=dry_run)

    def human(console, r):  # type: ignore[no-untyped-def]
        head = "would convert" if r.dry_run else "converted"
        parts = (
            f", {plural(len(r.partitions), 'partition')} by {', '.join(r.partition_columns)}"
            if r.partition_columns
            else ""
        )
        console.print(f"{head} {r.location} to {r.format} table {r.name}: {plural(len(r.files), 'file')}{parts}, "
                      f"{plural(r.rows, 'row')} (from the file footers), {human_size(r.size_bytes)}",
                      markup=False, highlight=False)  # fmt: skip
        if r.dry_run:
            for f in r.files:
                console.print(f"  {f}", markup=False, highlight=False)
            t = table(key("column"), key("type"), title="inferred schema")
            for c in r.schema:
                t.add_row(c.name, c.type)
            print_table(console, t)
            console.print("dry run: nothing changed", markup=False)

    run(out, api, human)


def register(app: typer.Typer) -> None:
    app.command("register")(register_)
    app.command("convert")(convert)
