"""`lakecat history / timetravel / read / changes / rollback`: a table's versions, on both formats."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

import typer

from lakecat.errors import InvalidArgumentError
from lakecat.units import human_size, plural

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect
from ._output import Output, confirm, run
from ._render import cell, human_age, human_time, key, num, print_table, table, thousands

NameArg = Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")]
VersionOpt = Annotated[
    int | None, typer.Option("--version", help="A Delta version or an Iceberg snapshot id (see `lakecat history`).")
]
AsOfOpt = Annotated[
    str | None,
    typer.Option("--as-of", help="ISO 8601 timestamp (naive means UTC): the newest version committed at or before it."),
]
TagOpt = Annotated[str | None, typer.Option("--tag", help="The version a tag names (see `lakecat tags`).")]
LimitOpt = Annotated[int | None, typer.Option("--limit", "-n", help="At most N rows (0: all). Default 100.")]
CountOpt = Annotated[bool, typer.Option("--count", help="Print the number of rows instead of the rows.")]
WhereOpt = Annotated[str | None, typer.Option("--where", "-w", help="A Spark SQL predicate, e.g. \"region = 'eu'\".")]
EngineOpt = Annotated[
    str | None,
    typer.Option("--engine", help="light (no JVM: pyiceberg / delta-rs + DuckDB) or spark; default: light where it "
                 "gives exactly Spark's answer, else spark (--verbose says why)."),
]  # fmt: skip


def history(
    name: NameArg,
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="Only the newest N commits.")] = None,
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
        sizes = any("bytes_added" in e.summary or "bytes_removed" in e.summary for e in h)
        # Versions never break; on a narrow terminal "detail", "size ±" and "age" go first, then times wrap after the date.
        t = table(key(" "), key("version", justify="right"), "committed (UTC)", num("age"), "operation", num("rows ±"),
                  num("files ±"), *([num("size ±")] if sizes else []), "detail", title=f"{h.name} ({h.format})")  # fmt: skip
        marked = False
        for e in h:
            current = e.version == h.current_version and not marked
            marked = marked or current
            s = e.summary
            rows = _pair(s.get("rows_added"), s.get("rows_removed"))
            if s.get("rows_updated"):
                rows += f" ~{thousands(s['rows_updated'])}"
            size = _pair(s.get("bytes_added"), s.get("bytes_removed"), human_size)
            t.add_row("*" if current else "", str(e.version), human_time(e.timestamp), human_age(e.timestamp),
                      e.operation, rows, _pair(s.get("files_added"), s.get("files_removed")),
                      *([size] if sizes else []), _detail(s))  # fmt: skip
        print_table(console, t, optional=("detail", "size ±", "age"))
        shown = plural(len(h), "commit") if h.total in (None, len(h)) else f"{len(h):,} of {plural(h.total, 'commit')}"
        console.print(f"{shown}; * current version; --json for the full summary")

    run(out, lambda: connect(catalog).load_table(name).history(limit=limit), human)


def _detail(summary: dict[str, Any]) -> str:
    """The engine's own name for the commit, and what it says the commit was keyed or filtered by."""
    parts = [str(summary.get("engine_operation") or "")]
    if summary.get("merge_key"):
        parts.append(f"key {','.join(summary['merge_key'])}")
    if summary.get("predicate"):
        parts.append(f"where {summary['predicate']}")
    return "; ".join(p for p in parts if p)


def _pair(added: Any, removed: Any, unit: Any = thousands) -> str:
    if added is None and removed is None:
        return ""
    return f"+{unit(added or 0)} -{unit(removed or 0)}"


def _rows_or_count(limit: int | None, count: bool) -> None:
    if count and limit is not None:  # the library's limit has a default: only the command line knows it was given
        raise InvalidArgumentError("--limit applies to rows, not with --count")


def timetravel(
    name: NameArg,
    version: VersionOpt = None,
    as_of: AsOfOpt = None,
    tag: TagOpt = None,
    where: WhereOpt = None,
    limit: LimitOpt = None,
    count: CountOpt = False,
    engine: EngineOpt = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Read the table as it was at a version or a point in time.

    Example: lakecat timetravel sales.orders --as-of 2026-01-31T12:00:00 --where "region = 'eu'" --count
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        _rows_or_count(limit, count)
        view = connect(catalog).load_table(name).as_of(version=version, timestamp=as_of, tag=tag, engine=engine)
        with out.status(f"reading {name} at version {view.version}"):
            return _said(out, view.read(where=where, limit=100 if limit is None else limit, count=count))

    run(out, api, _render_read)


def read(
    name: NameArg,
    where: WhereOpt = None,
    columns: Annotated[str | None, typer.Option("--columns", help="Only these columns, in this order: a,b,c.")] = None,
    limit: LimitOpt = None,
    count: CountOpt = False,
    engine: EngineOpt = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Read the table as it is now (its current version; a table nothing was committed to yet: no rows).

    Example: lakecat read sales.orders --where "region = 'eu'" --columns id,amount --limit 20
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        _rows_or_count(limit, count)
        view = connect(catalog).load_table(name).current(engine=engine)
        with out.status(f"reading {name}"):
            return _said(out, view.read(where=where, columns=columns, limit=100 if limit is None else limit,
                                        count=count))  # fmt: skip

    run(out, api, _render_read)


def changes(
    name: NameArg,
    since: Annotated[
        int | None,
        typer.Option("--since", help="Changes committed AFTER this version (exclusive; -1: from the first commit)."),
    ] = None,
    until: Annotated[
        int | None, typer.Option("--until", help="Up to and including this version (default: the current one).")
    ] = None,
    since_tag: Annotated[
        str | None, typer.Option("--since-tag", help="Changes committed after the version this tag names.")
    ] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Up to and including the version this tag names.")] = None,
    limit: LimitOpt = None,
    count: CountOpt = False,
    engine: EngineOpt = None,
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
        _rows_or_count(limit, count)
        ch = connect(catalog).load_table(name).changes(since=since, until=until, since_tag=since_tag, until_tag=tag,
                                                       engine=engine)  # fmt: skip
        with out.status(f"reading changes of {name} after version {ch.since_version}"):
            return _said(out, ch.read(limit=100 if limit is None else limit, count=count))

    run(out, api, _render_read)


def rollback(
    name: NameArg,
    version: VersionOpt = None,
    as_of: AsOfOpt = None,
    tag: TagOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Also undo batches an ingest stream committed (refused otherwise).")
    ] = False,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Make the table read as it did at a version or a point in time (Iceberg: rollback; Delta: RESTORE).

    A rollback that would undo rows an ingest stream committed is refused (exit 2) unless --force: the stream's
    checkpoint is past them and would not write them again.

    Example: lakecat rollback sales.orders --version 3 --yes
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        t = connect(catalog).load_table(name)
        if not t.capabilities["rollback"]:  # before asking which version: the format cannot roll back at all
            return t.rollback(version=version, timestamp=as_of, tag=tag, force=force)
        target = t.resolve_version(version=version, timestamp=as_of, tag=tag)  # light path: ask before Spark starts
        current = t.history(limit=1)
        confirm(out, f"roll back {t.format} table {t.name} from version {current.current_version} "
                     f"to version {target.version}?", yes)  # fmt: skip
        with out.status(f"rolling back {name} to version {target.version}"):
            return t.rollback(version=target.version, force=force)

    def human(console, r):  # type: ignore[no-untyped-def]
        if not r.changed:
            console.print(f"{r.name} is at version {r.to_version} already: nothing changed")
            return
        note = f" (new version {r.current_version})" if r.current_version != r.to_version else ""
        console.print(f"rolled back {r.format} table {r.name} from version {r.from_version} to version "
                      f"{r.to_version} of {human_time(r.to_timestamp)} UTC{note}")  # fmt: skip

    run(out, api, human)


def _said(out: Output, result: Any) -> Any:
    """With --verbose, say which engine answered and, when Spark did, why the light path did not."""
    if out.verbose:
        why = f" ({result.engine_reason})" if result.engine == "spark" and result.engine_reason else ""
        out.info(f"answered by {result.engine}{why}")
    return result


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float, Decimal)) and not isinstance(value, bool))


def _render_read(console, r) -> None:  # type: ignore[no-untyped-def]
    if r.since_version is not None:
        where = (f"{r.name}: changes after version {r.since_version} up to version {r.until_version} "
                 f"(committed {human_time(r.until_timestamp)} UTC)")  # fmt: skip
    else:
        as_of = f", as of {human_time(r.as_of)}" if r.as_of else ""
        where = f"{r.name} at version {r.version} (committed {human_time(r.version_timestamp)} UTC{as_of})"
        if r.version is None:
            where = f"{r.name} (nothing committed yet)"
    if r.rows is None:
        console.print(f"{where}: {plural(r.count, 'row')}", markup=False)
        return
    if not r.columns:
        console.print(f"{where}: no columns", markup=False)
        return
    values = [[cell(row.get(c)) for c in r.columns] for row in r.rows]
    columns = []
    for i, c in enumerate(r.columns):  # numbers right-aligned; short values (ids, times) whole; long text folds
        if r.rows and all(_is_number(row.get(c)) for row in r.rows):
            columns.append(num(c))
        else:
            columns.append(key(c) if max([len(c), *(len(v[i]) for v in values)]) <= 32 else c)
    t = table(*columns, title=where)
    for row_values in values:
        t.add_row(*row_values)
    print_table(console, t)
    more = f" (first {r.limit}; --limit 0 for all)" if r.truncated else ""
    console.print(f"{plural(len(r.rows), 'row')}{more}; times in UTC")


def register(app: typer.Typer) -> None:
    app.command("history")(history)
    app.command("timetravel")(timetravel)
    app.command("read")(read)
    app.command("changes")(changes)
    app.command("rollback")(rollback)
