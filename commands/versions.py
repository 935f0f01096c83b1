"""`lakecat history / timetravel / changes / rollback`: a table's versions, on both formats."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Optional

import typer

from ._common import CatalogOpt, JsonOpt, Output, VerboseOpt, confirm, connect, run, table

NameArg = Annotated[str, typer.Argument(help="namespace.table")]
VersionOpt = Annotated[
    Optional[int], typer.Option("--version", help="A Delta version or an Iceberg snapshot id (see `lakecat history`).")
]
AsOfOpt = Annotated[
    Optional[str],
    typer.Option("--as-of", help="ISO 8601 timestamp (naive means UTC): the newest version committed at or before it."),
]
LimitOpt = Annotated[Optional[int], typer.Option("--limit", "-n", help="At most N rows (0: all). Default 100.")]
CountOpt = Annotated[bool, typer.Option("--count", help="Print the number of rows instead of the rows.")]


def history(
    name: NameArg,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="Only the newest N commits.")] = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """The table's commits, newest first: version, time, operation, rows and files added/removed (no JVM).

    Example: lakecat history sales.orders --limit 10
    """
    out = Output(json_, verbose)

    def human(console, h):  # type: ignore[no-untyped-def]
        if not len(h):
            console.print(f"{h.name}: no commits yet")
            return
        t = table(
            "", "version", "timestamp (UTC)", "operation", "rows +/-", "files +/-", title=f"{h.name} ({h.format})"
        )
        for column in t.columns[:3]:
            column.no_wrap = True
        marked = False
        for e in h:
            current = e.version == h.current_version and not marked
            marked = marked or current
            s = e.summary
            rows = _pair(s.get("rows_added"), s.get("rows_removed"))
            if s.get("rows_updated"):
                rows += f" ~{s['rows_updated']}"
            t.add_row("*" if current else "", str(e.version), e.timestamp or "-",
                      e.operation, rows,
                      _pair(s.get("files_added"), s.get("files_removed")))  # fmt: skip
        console.print(t)
        console.print("* current version; --json for the full summary")

    run(out, lambda: connect(catalog).load_table(name).history(limit=limit), human)


def _pair(added: Any, removed: Any) -> str:
    if added is None and removed is None:
        return ""
    return f"+{added or 0} -{removed or 0}"


def timetravel(
    name: NameArg,
    version: VersionOpt = None,
    as_of: AsOfOpt = None,
    where: Annotated[
        Optional[str], typer.Option("--where", "-w", help="A Spark SQL predicate, e.g. \"region = 'eu'\".")
    ] = None,
    limit: LimitOpt = None,
    count: CountOpt = False,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Read the table as it was at a version or a point in time.

    Example: lakecat timetravel sales.orders --as-of 2026-01-31T12:00:00 --where "region = 'eu'" --count
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        view = connect(catalog).load_table(name).as_of(version=version, timestamp=as_of)
        with out.status(f"reading {name} at version {view.version}"):
            return view.read(where=where, limit=100 if limit is None else limit, count=count)

    run(out, api, _render_read)


def changes(
    name: NameArg,
    since: Annotated[
        int,
        typer.Option("--since", help="Changes committed AFTER this version (exclusive; -1: from the first commit)."),
    ],
    until: Annotated[
        Optional[int], typer.Option("--until", help="Up to and including this version (default: the current one).")
    ] = None,
    limit: LimitOpt = None,
    count: CountOpt = False,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Rows inserted, deleted and updated between two versions (_change_type, _commit_version, _commit_timestamp).

    Resume a script with --since <until_version of the previous run>.
    Example: lakecat changes sales.orders --since 3 --json
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        ch = connect(catalog).load_table(name).changes(since=since, until=until)
        with out.status(f"reading changes of {name} after version {since}"):
            return ch.read(limit=100 if limit is None else limit, count=count)

    run(out, api, _render_read)


def rollback(
    name: NameArg,
    version: VersionOpt = None,
    as_of: AsOfOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Make the table read as it did at a version or a point in time (Iceberg: rollback; Delta: RESTORE).

    Example: lakecat rollback sales.orders --version 3 --yes
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        from lakecat.versions import resolve_version

        t = connect(catalog).load_table(name)
        target = resolve_version(t, version=version, timestamp=as_of)  # light path: ask before Spark starts
        current = t.history(limit=1)
        confirm(out, f"roll back {t.format} table {t.name} from version {current.current_version} "
                     f"to version {target.version}?", yes)  # fmt: skip
        with out.status(f"rolling back {name} to version {target.version}"):
            return t.rollback(version=target.version)

    def human(console, r):  # type: ignore[no-untyped-def]
        if not r.changed:
            console.print(f"{r.name} is at version {r.to_version} already: nothing changed")
            return
        note = f" (new version {r.current_version})" if r.current_version != r.to_version else ""
        console.print(f"rolled back {r.format} table {r.name} from version {r.from_version} to version "
                      f"{r.to_version} of {r.to_timestamp}{note}")  # fmt: skip

    run(out, api, human)


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, datetime):
        from lakecat.units import iso

        return iso(value) or ""
    return str(value)


def _render_read(console, r) -> None:  # type: ignore[no-untyped-def]
    if r.since_version is not None:
        where = (
            f"{r.name}: changes after version {r.since_version} up to version {r.until_version} ({r.until_timestamp})"
        )
    else:
        as_of = f", as of {r.as_of}" if r.as_of else ""
        where = f"{r.name} at version {r.version} ({r.version_timestamp}{as_of})"
    if r.rows is None:
        console.print(f"{where}: {r.count} rows")
        return
    t = table(*r.columns, title=where)
    for row in r.rows:
        t.add_row(*[_cell(row.get(c)) for c in r.columns])
    console.print(t)
    more = f" (first {r.limit}; --limit 0 for all)" if r.truncated else ""
    console.print(f"{len(r.rows)} rows{more}")


def register(app: typer.Typer) -> None:
    app.command("history")(history)
    app.command("timetravel")(timetravel)
    app.command("changes")(changes)
    app.command("rollback")(rollback)
