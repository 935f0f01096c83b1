"""`lakecat append` and `lakecat delete`: plain writes and deletes, without a JVM where the table allows."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect
from ._output import Output, run
from ._render import human_duration, thousands

NameArg = Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")]
EngineOpt = Annotated[
    str | None,
    typer.Option("--engine", help="light (no JVM: pyiceberg / delta-rs) or spark; default: light where it writes the "
                 "table as Spark would, else spark (the output says why)."),
]  # fmt: skip


def _engine(r) -> str:  # type: ignore[no-untyped-def]
    return "no JVM" if r.engine == "light" else f"Spark: {r.engine_reason}" if r.engine_reason else "Spark"


def append(
    name: NameArg,
    from_: Annotated[
        str, typer.Option("--from", help="A file or directory of parquet, csv (with a header) or json lines files.")
    ],
    file_format: Annotated[
        str | None, typer.Option("--file-format", help="parquet, csv or json (default: from the file names).")
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the table's rows (with --where: the rows it selects).")
    ] = False,
    where: Annotated[
        str | None,
        typer.Option("--where", "-w", help="With --overwrite: replace only the rows this Spark SQL predicate selects."),
    ] = None,
    engine: EngineOpt = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Append the rows of a file to a table in one commit (or replace rows with --overwrite).

    Columns match by name; types cast only where no value changes; a NOT NULL column must have a value in every row.

    Example: lakecat append sales.orders --from /landing/orders.parquet
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        from lakecat.errors import InvalidArgumentError

        table = connect(catalog).load_table(name)
        if overwrite:
            return table.overwrite(from_, where=where, engine=engine, file_format=file_format)
        if where is not None:
            raise InvalidArgumentError("--where selects the rows --overwrite replaces: give --overwrite with it")
        return table.append(from_, engine=engine, file_format=file_format)

    def human(console, r):  # type: ignore[no-untyped-def]
        what = "appended to" if r.operation == "append" else "written over" if r.where is None else "replaced in"
        rows = "?" if r.rows is None else thousands(r.rows)
        where = f" where {r.where}" if r.where else ""
        console.print(f"{rows} row(s) {what} {r.table} ({r.format}){where}: version {r.version} "
                      f"({_engine(r)}), {human_duration(r.duration_s)}", markup=False, highlight=False)  # fmt: skip

    run(out, api, human)


def delete(
    name: NameArg,
    where: Annotated[
        str, typer.Option("--where", "-w", help="A Spark SQL predicate: the rows it holds TRUE for are deleted.")
    ],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count the rows it would delete; change nothing.")] = False,
    engine: EngineOpt = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Delete the rows a predicate selects, in one commit (none when no row matches).

    Example: lakecat delete sales.orders --where "customer_id = 42" --dry-run
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        return connect(catalog).load_table(name).delete(where=where, dry_run=dry_run, engine=engine)

    def human(console, r):  # type: ignore[no-untyped-def]
        rows = "?" if r.rows is None else thousands(r.rows)
        if r.dry_run:
            text = f"would delete {rows} row(s) of {r.table} ({r.format}) where {r.where}; nothing changed"
        elif not r.committed:
            text = f"no row of {r.table} ({r.format}) matches {r.where}: nothing deleted, no commit"
        else:
            text = f"deleted {rows} row(s) of {r.table} ({r.format}) where {r.where}: version {r.version}"
        console.print(f"{text} ({_engine(r)}), {human_duration(r.duration_s)}", markup=False, highlight=False)

    run(out, api, human)


def register(app: typer.Typer) -> None:
    app.command("append")(append)
    app.command("delete")(delete)
