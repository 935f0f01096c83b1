"""`lakecat tag / tags / untag / branch / publish`: named versions of a table."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect
from ._output import Output, run
from ._render import human_time, key, print_table, table

NameArg = Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")]
TagArg = Annotated[str, typer.Argument(metavar="TAG", help="The tag's name (letters, digits, '_', '.', '-').")]


def tag(
    name: NameArg,
    tag_name: TagArg,
    version: Annotated[
        int | None, typer.Option("--version", help="The version to tag (default: the current one).")
    ] = None,
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="Tag the newest version committed at or before this time.")
    ] = None,
    retain: Annotated[
        str | None, typer.Option("--retain", help="Keep the tag this long (e.g. 90d; default: for ever).")
    ] = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Name a version of the table (Iceberg: a native tag; Delta: kept by lakecat, and expiry keeps its files).

    Example: lakecat tag sales.orders eom-2026-01 --version 3 --retain 365d
    """
    out = Output(json_, verbose)

    def human(console, r):  # type: ignore[no-untyped-def]
        console.print(f"tagged version {r.version} of {r.table} ({r.format}) as {r.name}"
                      + (f", kept for {r.retain}" if r.retain else ""), markup=False)  # fmt: skip

    run(
        out,
        lambda: connect(catalog).load_table(name).tag(tag_name, version=version, timestamp=as_of, retain=retain),
        human,
    )


def tags(
    name: NameArg,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """The table's tags and branches, with the versions they name (no JVM).

    Example: lakecat tags sales.orders --json
    """
    out = Output(json_, verbose)

    def human(console, r):  # type: ignore[no-untyped-def]
        refs = [*r.tags, *r.branches]
        if not refs:
            console.print(f"{r.table}: no tags", markup=False)
            return
        t = table(
            key("name"),
            "kind",
            key("version", justify="right"),
            "retain",
            "expires (UTC)",
            title=f"{r.table} ({r.format})",
        )
        for ref in refs:
            t.add_row(
                ref.name, ref.kind, str(ref.version), ref.retain or "-", human_time(ref.expires) if ref.expires else "-"
            )
        print_table(console, t)

    run(out, lambda: connect(catalog).load_table(name).tags(), human)


def untag(
    name: NameArg,
    tag_name: TagArg,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Remove a tag (the version itself stays until expiry removes it).

    Example: lakecat untag sales.orders eom-2026-01
    """
    out = Output(json_, verbose)

    def human(console, r):  # type: ignore[no-untyped-def]
        console.print(f"removed tag {r.name} (version {r.version}) of {r.table}", markup=False)

    run(out, lambda: connect(catalog).load_table(name).untag(tag_name), human)


def branch(
    name: NameArg,
    branch_name: Annotated[str, typer.Argument(metavar="BRANCH", help="The branch's name.")],
    version: Annotated[
        int | None, typer.Option("--version", help="Branch from this version (default: the current one).")
    ] = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Create a branch for write-audit-publish (Iceberg; Delta has no branches: exit 3).

    Example: lakecat branch sales.orders audit
    """
    out = Output(json_, verbose)

    def human(console, r):  # type: ignore[no-untyped-def]
        console.print(f"created branch {r.name} of {r.table} at version {r.version}", markup=False)

    run(out, lambda: connect(catalog).load_table(name).branch(branch_name, version=version), human)


def publish(
    name: NameArg,
    branch_name: Annotated[str, typer.Argument(metavar="BRANCH", help="The branch to publish.")],
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Fast-forward the table's main line to a branch (Iceberg fast_forward; Delta: exit 3).

    Example: lakecat publish sales.orders audit
    """
    out = Output(json_, verbose)

    def human(console, r):  # type: ignore[no-untyped-def]
        console.print(
            f"published branch {r.name} of {r.table}: the table is at version {r.current_version}", markup=False
        )

    run(out, lambda: connect(catalog).load_table(name).publish(branch_name), human)


def register(app: typer.Typer) -> None:
    app.command("tag")(tag)
    app.command("tags")(tags)
    app.command("untag")(untag)
    app.command("branch")(branch)
    app.command("publish")(publish)
