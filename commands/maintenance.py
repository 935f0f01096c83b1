"""`lakecat compact / expire / clean-orphans / maintain / alter`: keeping tables healthy."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from lakecat.errors import InvalidArgumentError
from lakecat.units import exact_size, human_size, plural

from ._options import (
    CatalogOpt,
    JsonOpt,
    MetadataEngineOpt,
    VerboseOpt,
    connect,
    parse_pairs,
    parse_properties,
    parse_switch,
    say_engine,
)
from ._output import Output, run
from ._render import human_duration, human_time, key, num, print_table, table

DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Change nothing; report what would change.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Allow a window shorter than the format's safety floor.")]
EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        metavar="light|spark|auto",
        help="light (pyiceberg / delta-rs, no JVM; exit 3 where it cannot do the work exactly), spark, or auto "
        "(default: light for a bin-pack of a table the light libraries write, within lakecat.maintain.light-max-bytes).",
    ),
]


def compact(
    name: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")],
    strategy: Annotated[str, typer.Option("--strategy", help="binpack, sort (Iceberg only) or zorder.")] = "binpack",
    by: Annotated[str | None, typer.Option("--by", help='Sort / z-order columns, e.g. "user_id, ts".')] = None,
    target_file_size: Annotated[
        str | None,
        typer.Option("--target-file-size", help="e.g. 128MB (default: lakecat.compact.target-file-size, else 128MB)."),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            "--where", help="Only files that may hold rows matching this predicate (Delta: partition columns only)."
        ),
    ] = None,
    full: Annotated[
        bool,
        typer.Option("--full", help="A clustered table: recluster every file, not only the ones that need it."),
    ] = False,
    engine: EngineOpt = None,
    dry_run: DryRunOpt = False,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Rewrite small files into fewer, larger ones (Iceberg rewrite_data_files, Delta OPTIMIZE; a small bin-pack
    without a JVM: pyiceberg's replace commit, delta-rs's OPTIMIZE); a clustered table is clustered by its keys.

    Example: lakecat compact sales.orders --strategy zorder --by user_id --target-file-size 128MB
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        t = connect(catalog).load_table(name)
        with out.status(f"{'planning' if dry_run else 'compacting'} {name}"):
            return t.compact(
                strategy=strategy, by=by or (), target_file_size=target_file_size, where=where, dry_run=dry_run, full=full,
                engine=engine,
            )  # fmt: skip

    def human(console, r):  # type: ignore[no-untyped-def]
        how = (
            f"{r.strategy}" + (f" by {', '.join(r.by)}" if r.by else "") + f", target {exact_size(r.target_file_size)}"
        )
        took = "" if r.dry_run else f" in {human_duration(r.duration_s)}"
        if not r.partitions:
            why = ("no partition has two or more files under 75% of the target" if r.strategy in ("binpack", "cluster") and not r.full
                   else "no partition has more than one file")  # fmt: skip
            console.print(f"{r.table} ({r.format}, {how}): nothing to compact — {plural(r.files_before, 'file')}, "
                          f"{human_size(r.bytes_before)}; {why}{' matching --where' if r.where else ''}", markup=False)  # fmt: skip
            return
        due = sum(p.due for p in r.partitions)
        verb = "would rewrite" if r.dry_run else "rewrote"
        console.print(
            f"{r.table} ({r.format}, {how}): {verb} {plural(r.files_rewritten, 'file')} into {r.files_added:,}"
            + (" (estimated)" if r.dry_run else "")
            + f"; files {r.files_before:,} → {r.files_after:,}, size {human_size(r.bytes_before)} → {human_size(r.bytes_after)}"
            + (f", {plural(r.retries, 'retry', 'retries')}" if r.retries else "") + took,
            markup=False,
        )  # fmt: skip
        console.print(f"engine: {r.engine} — {r.engine_reason}", markup=False)
        console.print(f"due: {due} of {plural(len(r.partitions), 'partition')} (a partition is due with {r.due_rule}; "
                      "maintain compacts only those)", markup=False)  # fmt: skip
        if r.partitions:
            t = table(key("partition"), num("files"), num("size"), num("estimated output files"), key("due"),
                      title="partitions to rewrite" if r.dry_run else "partitions rewritten")  # fmt: skip
            for p in r.partitions:
                t.add_row(p.partition, f"{p.files:,}", human_size(p.bytes), f"{p.estimated_output_files:,}",
                          "yes" if p.due else "no")  # fmt: skip
            print_table(console, t)

    run(out, api, human)


def expire(
    name: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")],
    older_than: Annotated[
        str | None, typer.Option("--older-than", help="Expire versions older than this (default: policy, else 7d).")
    ] = None,
    retain_last: Annotated[
        int | None, typer.Option("--retain-last", help="Always keep the newest N versions (default: policy, else 1).")
    ] = None,
    dry_run: DryRunOpt = False,
    force: ForceOpt = False,
    engine: EngineOpt = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Expire old versions and delete the files only they reference (Iceberg: its snapshots removed by pyiceberg, or
    Spark's expire_snapshots; Delta: files found from the log, then the log truncated at a checkpoint — not VACUUM,
    whose window is whole hours).

    Example: lakecat expire sales.orders --older-than 14d --retain-last 10 --dry-run
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        t = connect(catalog).load_table(name)
        with out.status(f"{'planning expiry of' if dry_run else 'expiring'} {name}"):
            return t.expire(older_than=older_than, retain_last=retain_last, dry_run=dry_run, force=force, engine=engine)

    def human(console, r):  # type: ignore[no-untyped-def]
        verb = "would expire" if r.dry_run else "expired"
        console.print(
            f"{r.table} ({r.format}): {verb} {plural(len(r.expired_versions), 'version')}, "
            f"{'would delete' if r.dry_run else 'deleted'} {plural(r.deleted_files, 'file')} ({human_size(r.deleted_bytes)}); "
            f"{plural(len(r.retained_versions), 'version')} kept (those committed after {human_time(r.cutoff)} UTC — window "
            f"{r.older_than}{', forced' if r.forced else ''} — and always the newest {r.retain_last})"
            + ("" if r.dry_run else f"; took {human_duration(r.duration_s)}"),
            markup=False,
        )  # fmt: skip
        if r.expired_versions:
            shown = ", ".join(str(v) for v in r.expired_versions[:10])
            more = (
                f" and {len(r.expired_versions) - 10} more (--json lists all)" if len(r.expired_versions) > 10 else ""
            )
            console.print(f"  {'versions to expire' if r.dry_run else 'expired versions'}: {shown}{more}", markup=False)
        _print_engine(console, r)

    run(out, api, human)


def clean_orphans(
    name: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")],
    older_than: Annotated[
        str | None,
        typer.Option("--older-than", help="Only files older than this (default: policy, else Iceberg 3d / Delta 7d)."),
    ] = None,
    dry_run: DryRunOpt = False,
    force: ForceOpt = False,
    engine: EngineOpt = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Delete files in the table's directory that no version references and that are older than the window (found
    from the table's metadata without a JVM, or Iceberg's remove_orphan_files on Spark).

    Example: lakecat clean-orphans sales.orders --older-than 3d --dry-run
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        t = connect(catalog).load_table(name)
        with out.status(f"looking for orphan files of {name}"):
            return t.clean_orphans(older_than=older_than, dry_run=dry_run, force=force, engine=engine)

    def human(console, r):  # type: ignore[no-untyped-def]
        verb = "would delete" if r.dry_run else "deleted"
        console.print(f"{r.table} ({r.format}): {verb} {plural(r.deleted_files, 'orphan file')} ({human_size(r.deleted_bytes)}) "
                      f"older than {r.older_than}, i.e. last modified before {human_time(r.cutoff)} UTC"
                      + (", forced" if r.forced else "") + ("" if r.dry_run else f"; took {human_duration(r.duration_s)}"),
                      markup=False)  # fmt: skip
        for f in r.orphan_files[:50]:
            console.print(f"  {f}", markup=False)
        if len(r.orphan_files) > 50:
            console.print(f"  ... and {len(r.orphan_files) - 50} more (--json lists all)")
        _print_engine(console, r)

    run(out, api, human)


def maintain(
    pattern: Annotated[
        str | None,
        typer.Argument(metavar="PATTERN", help="Tables to maintain, fnmatch style, e.g. 'sales.*' (default: all)."),
    ] = None,
    plan: Annotated[
        Path | None,
        typer.Option(
            "--plan",
            metavar="FILE",
            help="A maintenance plan (TOML): [defaults] policy keys, then [[tables]] entries with match = 'sales.*' "
            "(e.g. expire.retain-last = 10); the docs' maintain page has an annotated example.",
        ),
    ] = None,
    auto: Annotated[
        bool,
        typer.Option(
            "--auto",
            help="Run per table only what its health calls for (see `lakecat health`); with --dry-run, show the decisions and why.",
        ),
    ] = False,
    prometheus: Annotated[
        Path | None,
        typer.Option(
            "--prometheus",
            help="Afterwards, write the tables' health gauges in Prometheus' text format (textfile collector).",
        ),
    ] = None,
    every: Annotated[
        str | None,
        typer.Option(
            "--every",
            metavar="DUR",
            help="With --auto: run as a service, a pass every DUR (e.g. 10m) until SIGTERM/SIGINT (exit 0); "
            "each pass works on the most urgent tables first.",
        ),
    ] = None,
    max_minutes: Annotated[
        float | None,
        typer.Option("--max-minutes", help="With --every: start no new table after N minutes of a pass."),
    ] = None,
    parallel: Annotated[
        int | None,
        typer.Option("--parallel", help="With --every: tables worked on at a time, on one Spark session (default 1)."),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option("--metrics-port", help="With --every: serve Prometheus /metrics on this port (metrics extra)."),
    ] = None,
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--allow-empty",
            help="Succeed when PATTERN matches no table (without it: exit 1, so a typo does not turn maintenance off).",
        ),
    ] = False,
    engine: EngineOpt = None,
    dry_run: DryRunOpt = False,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run every matching table's maintenance policy; exit 1 if any table failed (the others still run) or if
    PATTERN matches no table (unless --allow-empty).

    With --auto --every, run as a service until stopped: see the docs' maintenance service page.

    Example: lakecat maintain 'sales.*' --plan plan.toml --json · lakecat maintain --auto --every 10m --max-minutes 8
    """
    out = Output(json_, verbose)
    if every is not None or any(v is not None for v in (max_minutes, parallel, metrics_port)):
        _serve(out, catalog, pattern, plan=plan, auto=auto, every=every, max_minutes=max_minutes,
               parallel=parallel, metrics_port=metrics_port, dry_run=dry_run, prometheus=prometheus,
               allow_empty=allow_empty, engine=engine)  # fmt: skip
        return

    def api():  # type: ignore[no-untyped-def]
        cat = connect(catalog)
        with out.progress("maintain") as update:

            def progress(name: str, done: int, total: int) -> None:
                update(completed=done, total=total, description=f"maintain {name}" if name else "maintain")

            return cat.maintain(pattern, plan=plan, dry_run=dry_run, auto=auto, progress=progress,
                                allow_empty=allow_empty, prometheus=prometheus, engine=engine)  # fmt: skip

    def human(console, r):  # type: ignore[no-untyped-def]
        if not r.tables:
            console.print(f"no table matches {r.pattern or '*'}", markup=False)
            return
        t = table(key("table"), key("format"), key("status"), "actions", num("time"), "health" if r.auto else "error",
                  title="maintenance" + (" (auto)" if r.auto else "") + (" (dry run)" if r.dry_run else ""))  # fmt: skip
        for tm in r.tables:
            acts = [f"{a.action} {a.status}" + (f" ({a.result['engine']})" if (a.result or {}).get("engine") else "")
                    for a in tm.actions if a.status != "skipped"]  # fmt: skip
            style = {"failed": "red", "ok": "green", "planned": "yellow"}.get(tm.status, "")
            why = f"{tm.health['verdict']}: {tm.health['reason']}" if r.auto and tm.health else ""
            t.add_row(tm.name, tm.format, Text(tm.status, style=style), ", ".join(acts) or "nothing needed",
                      human_duration(tm.duration_s), tm.error or why)  # fmt: skip
        print_table(console, t)
        console.print(f"{plural(len(r.tables), 'table')}: {r.succeeded} maintained, {r.skipped} needed nothing, {r.failed} failed"
                      + (" (dry run)" if r.dry_run else "") + f", in {human_duration(r.duration_s)}")  # fmt: skip

    report = run(out, api, human)
    if report.failed:
        raise typer.Exit(1)


def _print_engine(console, r) -> None:  # type: ignore[no-untyped-def]
    if r.engine:
        console.print(f"  engine: {r.engine} — {r.engine_reason}", markup=False)


def _serve(out: Output, catalog: str | None, pattern: str | None, *, plan: Path | None, auto: bool, every: str | None,
           max_minutes: float | None, parallel: int | None, metrics_port: int | None, dry_run: bool,
           prometheus: Path | None, allow_empty: bool, engine: str | None) -> None:  # fmt: skip
    """``maintain --auto --every``: the service, until SIGTERM or SIGINT (a second one abandons the step under way)."""
    stop = threading.Event()
    stopped_by: list[str] = []

    def api():  # type: ignore[no-untyped-def]
        import lakecat

        cat = connect(catalog)

        def on_signal(signum: int, _frame: object) -> None:
            name = signal.Signals(signum).name
            if stop.is_set():
                out.err.print(f"{name} again: abandoning the step under way", markup=False)
                lakecat.abandon_current_step()
                return
            stopped_by.append(name)
            stop.set()
            out.err.print(f"{name}: finishing the step under way, then stopping (again to abandon it)", markup=False)

        def on_start() -> None:  # the options are checked and the pattern matches: the service announces itself
            out.err.print(f"maintenance service on {cat.name}: {pattern or 'every table'}, a pass every {every}"
                          + (f", /metrics on port {metrics_port}" if metrics_port is not None else ""), markup=False)  # fmt: skip

        def on_pass(p):  # type: ignore[no-untyped-def]
            runs = ", ".join(f"{n} {k}" for k, n in p.runs.items())
            out.err.print(f"pass {p.number}: {plural(p.tables, 'table')} read ({p.evaluated} judged, {p.unchanged} "
                          f"unchanged since), {p.queued} queued, {p.worked} worked on "
                          f"({runs}), {p.deferred} left for the next pass, in {human_duration(p.seconds)}"
                          + (f"; pass failed: {p.error}" if p.error else ""), markup=False)  # fmt: skip

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            result = cat.maintain(pattern, auto=auto, every=every, max_minutes=max_minutes, parallel=parallel,
                                  plan=plan, metrics_port=metrics_port, dry_run=dry_run, prometheus=prometheus,
                                  stop=stop, on_pass=on_pass, on_start=on_start, allow_empty=allow_empty,
                                  engine=engine)  # fmt: skip
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        result.stopped_by = stopped_by[0] if stopped_by else None
        return result

    def human(console, r):  # type: ignore[no-untyped-def]
        runs = ", ".join(f"{n} {k}" for k, n in r.runs.items())
        console.print(f"stopped by {r.stopped_by or 'request'} after {plural(r.passes, 'pass', 'passes')} in "
                      f"{human_duration(r.seconds)}: runs {runs}, {human_size(r.bytes_rewritten)} rewritten", markup=False)  # fmt: skip

    run(out, api, human)


def maintenance_log(
    pattern: Annotated[
        str | None, typer.Argument(metavar="PATTERN", help="Tables, fnmatch style, e.g. 'sales.*' (default: all).")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", metavar="DUR", help="Only runs started within DUR, e.g. 1d.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most N runs, newest first.")] = 200,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """What maintenance ran, newest first: `maintain` and the maintenance service keep every action in the
    catalog's metastore (outcome ok, failed or skipped; files and bytes before and after; error). No JVM.

    Example: lakecat maintenance-log 'sales.*' --since 1d --json
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        return connect(catalog).maintenance_log(pattern, since=since, limit=limit)

    def human(console, r):  # type: ignore[no-untyped-def]
        if not r.runs:
            console.print(f"no maintenance runs{f' of {pattern}' if pattern else ''}{f' in the last {since}' if since else ''}",
                          markup=False)  # fmt: skip
            return
        t = table("started (UTC)", key("table"), key("action"), key("outcome"), num("time"), num("files"),
                  num("bytes"), "detail", title="maintenance log")  # fmt: skip
        for run_ in r.runs:
            files = (f"{run_.files_before:,} → {run_.files_after:,}" if run_.files_before is not None
                     and run_.files_after is not None else "")  # fmt: skip
            size = (f"{human_size(run_.bytes_before)} → {human_size(run_.bytes_after)}" if run_.bytes_before is not None
                    and run_.bytes_after is not None else human_size(run_.bytes_deleted) + " deleted"
                    if run_.bytes_deleted else "")  # fmt: skip
            detail = run_.error or (f"{run_.snapshots_removed} versions removed" if run_.snapshots_removed else "")
            style = {"failed": "red", "ok": "green", "skipped": "yellow"}.get(run_.outcome, "")
            notes = [n for n in (run_.tier, run_.engine) if n]
            action = run_.action + (f" ({', '.join(notes)})" if notes else "")
            t.add_row(human_time(run_.started), run_.table, action, Text(run_.outcome, style=style),
                      human_duration(run_.seconds), files, size, detail)  # fmt: skip
        print_table(console, t)

    run(out, api, human)


policy_app = typer.Typer(
    help="Maintenance policies for a table, a namespace (ns.*) or the whole catalog (*), inherited catalog → "
    "namespace → table; maintain and the maintenance service honour them.",
    no_args_is_help=True,
)


@policy_app.command("set")
def policy_set(
    pattern: Annotated[
        str, typer.Argument(metavar="PATTERN", help="A table (sales.orders), a namespace (sales.*) or the catalog (*).")
    ],  # fmt: skip
    values: Annotated[
        list[str] | None,
        typer.Argument(metavar="KEY=VALUE...", help="Policy keys, with or without 'lakecat.' (expire.retain-last=10)."),
    ] = None,
    unset: Annotated[list[str] | None, typer.Option("--unset", help="Remove a key at this scope (repeatable).")] = None,
    engine: MetadataEngineOpt = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Set policy keys for a table (its properties), a namespace or the catalog (the metastore). A namespace's or
    the catalog's policy needs no JVM; a table's is a property change of its format.

    Example: lakecat policy set 'sales.*' compact.target-file-size=256MB expire.retain-last=10
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        props = parse_pairs(values, "policy", "KEY=VALUE")
        return say_engine(out, connect(catalog).set_policy(pattern, props, unset=list(unset or []), engine=engine))

    def human(console, r):  # type: ignore[no-untyped-def]
        t = table(
            key("key"), "value", title=f"policy of {'the catalog' if r.scope == 'catalog' else f'{r.scope} {r.target}'}"
        )
        for k, v in sorted(r.policy.items()):
            t.add_row(k, v)
        print_table(console, t)

    run(out, api, human)


@policy_app.command("show")
def policy_show(
    name: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")],
    plan: Annotated[
        Path | None, typer.Option("--plan", metavar="FILE", help="Also apply this maintenance plan.")
    ] = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """A table's effective maintenance policy and where each key comes from (default, catalog, namespace, table
    property, plan). No JVM.

    Example: lakecat policy show sales.orders --json
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        return connect(catalog).policy(name, plan=plan)

    def human(console, r):  # type: ignore[no-untyped-def]
        t = table(key("key"), "value", "from", title=f"{r.table} ({r.format}) policy"
                  + ("" if r.enabled else " — maintenance disabled"))  # fmt: skip
        for k, v in r.policy.items():
            t.add_row(k, v["value"], v["source"])
        print_table(console, t)

    run(out, api, human)


PropertyOpt = Annotated[
    list[str] | None,
    typer.Option("--property", help="Set key=value (repeatable), e.g. lakecat.expire.retain-last=10."),
]
UnsetOpt = Annotated[list[str] | None, typer.Option("--unset", help="Remove a property (repeatable).")]
AddColumnOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--add-column",
        help="Add a column: \"c TYPE\", optionally followed by NOT NULL, COMMENT '...', AFTER x or FIRST (repeatable).",
    ),
]
RenameColumnOpt = Annotated[
    list[str] | None,
    typer.Option("--rename-column", help="Rename old=new (repeatable; Delta: needs column mapping, see --yes)."),
]
DropColumnOpt = Annotated[
    list[str] | None,
    typer.Option("--drop-column", help="Drop a column (repeatable; Delta: needs column mapping, see --yes)."),
]
WidenOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--widen",
        help="Widen c=TYPE: INT->BIGINT, FLOAT->DOUBLE, DECIMAL precision up (repeatable; Delta: type widening, see "
        "--yes, or --rewrite).",
    ),
]
SetCommentOpt = Annotated[
    list[str] | None, typer.Option("--set-comment", help="Set a column comment, c=text (repeatable).")
]
PartitionByOpt = Annotated[
    str | None,
    typer.Option(
        "--partition-by", help='New partitioning, e.g. "days(ts), region" (Iceberg: in place; Delta: --rewrite).'
    ),
]
RewriteOpt = Annotated[
    bool,
    typer.Option(
        "--rewrite",
        help="Delta: rewrite every file into the new partitioning or with the wider types, in one commit (every "
        "reader keeps reading the table).",
    ),
]
YesOpt = Annotated[
    bool,
    typer.Option(
        "--yes",
        "-y",
        help="Allow what the format must enable first (Delta column mapping, type widening: protocol upgrades).",
    ),
]


def _print_properties(console, r) -> None:  # type: ignore[no-untyped-def]
    t = table(
        key("property"), "value", title=f"{r.table} ({r.format}) properties" + (" (dry run)" if r.dry_run else "")
    )
    for k, v in sorted(r.properties.items()):
        t.add_row(k, v)
    print_table(console, t)


def _print_alter(console, r) -> None:  # type: ignore[no-untyped-def]
    if not hasattr(r, "changes"):
        _print_properties(console, r)
        return
    for note in r.upgrades:
        console.print(f"{'would enable' if r.dry_run else 'enabled'}: {note}", markup=False)
    for change in r.changes:
        console.print(f"{'would ' if r.dry_run else ''}{change}", markup=False)
    if r.rewrite_files:
        console.print(
            f"{'would rewrite' if r.dry_run else 'rewrote'} {plural(r.rewrite_files, 'file')} ({human_size(r.rewrite_bytes)})",
            markup=False,
        )
    t = table(key("column"), "type", "nullable", "comment", title=f"{r.table} ({r.format}) schema")
    for c in r.schema:
        t.add_row(c.name, c.type, "yes" if c.nullable else "no", c.comment or "")
    print_table(console, t)
    console.print(
        f"partitioning: {', '.join(r.partitioning) or '(none)'}; column mapping: {r.column_mapping or '-'}",
        markup=False,
    )
    if r.clustering or r.deletion_vectors is not None:
        console.print(f"clustering: {', '.join(r.clustering) or '(none)'}; deletes mark rows: "
                      f"{'yes' if r.deletion_vectors else 'no'}", markup=False)  # fmt: skip


def alter(
    name: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")],
    property: PropertyOpt = None,
    unset: UnsetOpt = None,
    add_column: AddColumnOpt = None,
    rename_column: RenameColumnOpt = None,
    drop_column: DropColumnOpt = None,
    widen: WidenOpt = None,
    set_comment: SetCommentOpt = None,
    partition_by: PartitionByOpt = None,
    rewrite: RewriteOpt = False,
    cluster_by: Annotated[
        str | None,
        typer.Option(
            "--cluster-by",
            help='New clustering keys, e.g. "region, user_id", "zorder(a, b)" (Iceberg) or '
            "none; files are clustered by the next compact.",
        ),
    ] = None,
    deletion_vectors: Annotated[
        str | None,
        typer.Option(
            "--deletion-vectors",
            metavar="on|off",
            help="Deletes, updates and merges from now on mark rows (on) or rewrite files (off).",
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="For --property/--unset: light (no JVM: pyiceberg / delta-rs) or spark; default: "
            "light where it commits exactly what Spark does, else spark.",
        ),
    ] = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Change a table: its properties (maintenance policies), its schema (one commit per change) or its partitioning.

    Example: lakecat alter sales.orders --add-column "discount DECIMAL(5,2) AFTER amount" --rename-column cust=customer_id --yes
    """
    out = Output(json_, verbose)
    evolving = any([add_column, rename_column, drop_column, widen, set_comment, partition_by is not None,
                    cluster_by is not None, deletion_vectors is not None])  # fmt: skip

    def api():  # type: ignore[no-untyped-def]
        props = parse_properties(property)
        renames = parse_pairs(rename_column, "--rename-column", "old=new")
        widens = parse_pairs(widen, "--widen", "column=value")
        comments = parse_pairs(set_comment, "--set-comment", "column=value")
        switch = parse_switch(deletion_vectors, "--deletion-vectors")
        if evolving and (props or unset):
            raise InvalidArgumentError("give --property/--unset or schema/partition changes, not both in one alter")
        if evolving and engine is not None:
            raise InvalidArgumentError("--engine applies to --property/--unset; schema and partition changes choose "
                                       "their engine themselves")  # fmt: skip
        t = connect(catalog).load_table(name)
        if not evolving:
            if rewrite or yes:
                raise InvalidArgumentError(f"{'--rewrite' if rewrite else '--yes'} applies to schema and partition "
                                           "changes, not to --property/--unset")  # fmt: skip
            return say_engine(out, t.set_properties(props, unset=list(unset or []), engine=engine, dry_run=dry_run))
        with out.status(f"altering {name}"):
            return t.alter(add_columns=add_column or (), rename_columns=renames, drop_columns=drop_column or (),
                           widen=widens, comments=comments, partition_by=partition_by, rewrite=rewrite,
                           cluster_by=cluster_by, deletion_vectors=switch, dry_run=dry_run, confirm=yes)  # fmt: skip

    run(out, api, _print_alter)


def register(app: typer.Typer) -> None:
    app.command("compact")(compact)
    app.command("expire")(expire)
    app.command("clean-orphans")(clean_orphans)
    app.command("maintain")(maintain)
    app.command("maintenance-log")(maintenance_log)
    app.add_typer(policy_app, name="policy")
    app.command("alter")(alter)
