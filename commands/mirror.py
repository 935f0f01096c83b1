"""`lakecat mirror`: a table also readable as another format, under its own name (metadata only)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from lakecat.errors import InvalidArgumentError

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect
from ._output import Output, run

NameArg = Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")]


def _one(results: list[Any], what: str, name: str) -> Any:
    if not results:
        raise InvalidArgumentError(f"{name} has no mirror to {what}: `lakecat mirror {name} --as FORMAT` makes one")
    return results[0] if len(results) == 1 else results


def mirror(
    name: NameArg,
    as_format: Annotated[
        str | None, typer.Option("--as", metavar="FORMAT", help="The format to mirror the table as (iceberg).")
    ] = None,
    sync: Annotated[bool, typer.Option("--sync", help="Catch up on commits other writers made.")] = False,
    verify: Annotated[
        bool,
        typer.Option("--verify", help="Compare rows and a checksum of every column on both sides (exit 1: differ)."),
    ] = False,
    purge_deletes: Annotated[
        bool,
        typer.Option(
            "--purge-deletes",
            help="First rewrite away Delta's deletion vectors (REORG ... APPLY (PURGE), Spark); with --as or --sync.",
        ),
    ] = False,
    drop: Annotated[
        bool, typer.Option("--drop", help="Remove the mirror from the catalog (no data file is touched).")
    ] = False,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Make a Delta table readable as an Iceberg table too, under its own name: Iceberg metadata over the same Parquet
    files (no data copied), kept in step with every commit lakecat makes. Exit 3 names a version the mirror cannot
    express (deletion vectors, an unknown reader feature, a schema change Iceberg cannot make) and the fix.

    Example: lakecat mirror sales.orders --as iceberg · lakecat mirror sales.orders --verify --json
    """
    out = Output(json_, verbose)
    if sum((sync, verify, drop)) > 1:
        out.fail(InvalidArgumentError("choose one of --sync, --verify and --drop"))
    if purge_deletes and (verify or drop):
        out.fail(InvalidArgumentError("--purge-deletes goes with --as FORMAT or --sync (purge, then catch up)"))

    def call() -> Any:
        table = connect(catalog).load_table(name)
        if not (sync or verify or drop) and as_format is None:
            raise InvalidArgumentError("say which format to mirror the table as: --as iceberg (or --sync / --verify)")
        if verify:
            return _one(table.verify_mirrors(as_format=as_format), "verify", name)
        if sync:
            return _one(table.sync_mirrors(as_format=as_format, purge_deletes=purge_deletes), "sync", name)
        if drop:
            return {"name": name, "dropped": table.drop_mirrors(as_format=as_format)}
        return table.mirror(as_format=str(as_format), purge_deletes=purge_deletes)

    result = run(out, call, _human)
    checks = result if isinstance(result, list) else [result]
    if verify and not all(getattr(r, "equal", True) for r in checks):
        raise typer.Exit(1)


def _human(console: Any, r: Any) -> None:
    for one in r if isinstance(r, list) else [r]:
        if isinstance(one, dict):
            console.print(f"{one['name']}: mirrors dropped: {', '.join(one['dropped']) or 'none'}", markup=False)
        elif hasattr(one, "checks"):
            verdict = "equal" if one.equal else "DIFFERENT"
            console.print(f"{one.name} as {one.mirror_format} at version {one.source_version}: {one.rows} rows, "
                          f"{len(one.checks) - 1} column checksums, {verdict}", markup=False)  # fmt: skip
            for c in one.checks:
                if not c.equal:
                    console.print(f"  {c.column}: {c.source} (table) != {c.mirror} (mirror)", markup=False)
        else:
            how = "rebuilt" if one.rebuilt else f"{one.commits} commit" + ("s" if one.commits != 1 else "")
            console.print(f"{one.name} reads as {one.mirror_format} at version {one.source_version} "
                          f"(snapshot {one.mirror_version}; {how})", markup=False)  # fmt: skip
            for note in one.notes:
                console.print(f"  {note}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("mirror")(mirror)
