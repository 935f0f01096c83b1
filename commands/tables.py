"""`lakecat create / list / describe / drop`: the catalog's tables."""

from __future__ import annotations

from typing import Annotated

import typer

from lakecat.results import CreateResult
from lakecat.units import human_size, plural

from ._options import CatalogOpt, JsonOpt, MetadataEngineOpt, VerboseOpt, connect, parse_properties, say_engine
from ._output import Output, confirm, run
from ._render import human_age, human_time, key, num, print_table, table


def create(
    name: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")],
    format: Annotated[str, typer.Option("--format", "-f", help="iceberg or delta.")],
    schema: Annotated[str, typer.Option("--schema", "-s", help='Columns, e.g. "id BIGINT NOT NULL, ts TIMESTAMP".')],
    partition_by: Annotated[
        str | None, typer.Option("--partition-by", "-p", help='Transforms, e.g. "days(ts), region", "bucket(16, id)".')
    ] = None,
    property: Annotated[
        list[str] | None, typer.Option("--property", help="Table property key=value (repeatable).")
    ] = None,
    if_not_exists: Annotated[
        bool, typer.Option("--if-not-exists", help="Succeed if the table exists already.")
    ] = False,
    cluster_by: Annotated[
        str | None,
        typer.Option(
            "--cluster-by",
            help='Clustering keys, e.g. "region, user_id" or "zorder(a, b)" (Iceberg). '
            "Delta: liquid clustering (up to 4 keys, no --partition-by); Iceberg: the table's sort order.",
        ),
    ] = None,
    format_version: Annotated[
        int | None,
        typer.Option(
            "--format-version",
            help="Iceberg's format version, 2 or 3 (default: the catalog config's [tables] format-version, else 2).",
        ),
    ] = None,
    deletion_vectors: Annotated[
        bool | None,
        typer.Option(
            "--deletion-vectors/--no-deletion-vectors",
            help="Deletes, updates and merges mark rows instead "
            "of rewriting files (default: the catalog config's [tables] deletion-vectors, else off).",
        ),
    ] = None,
    engine: MetadataEngineOpt = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Create a partitioned or clustered Iceberg or Delta table (no JVM where pyiceberg / delta-rs create it exactly).

    Example: lakecat create sales.orders --format delta --schema "id BIGINT, ts TIMESTAMP" --partition-by "days(ts)"
    """
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        cat = connect(catalog)
        props = parse_properties(property)
        with out.status(f"creating {name} ({format})"):
            t = cat.create_table(
                name,
                schema=schema,
                format=format,
                partition_by=partition_by,
                properties=props,
                if_not_exists=if_not_exists,
                cluster_by=cluster_by,
                format_version=format_version,
                deletion_vectors=deletion_vectors,
                engine=engine,
            )
        return say_engine(out, CreateResult.of(t.describe(), t.engine, t.engine_reason))

    run(out, api, _render_description)


def list_(
    namespace: Annotated[str | None, typer.Argument(metavar="NAMESPACE", help="Only this namespace.")] = None,
    format: Annotated[str | None, typer.Option("--format", "-f", help="Only iceberg or only delta tables.")] = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """List tables of both formats (no JVM: answers from the metastore)."""
    out = Output(json_, verbose)

    def human(console, result):  # type: ignore[no-untyped-def]
        if not len(result):
            console.print("no tables")
            return
        t = table(key("name"), key("format"), "location")
        for row in result:
            t.add_row(row.name, row.format + "".join(f" (+{m})" for m in row.mirrors), row.location)
        print_table(console, t)
        console.print(plural(len(result), "table"))

    run(out, lambda: connect(catalog).list_tables(namespace, format=format), human)


def namespaces(catalog: CatalogOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """List the namespaces that hold tables, with how many tables of each format (no JVM)."""
    out = Output(json_, verbose)

    def human(console, result):  # type: ignore[no-untyped-def]
        if not len(result):
            console.print("no namespaces")
            return
        t = table(key("namespace"), num("tables"), "formats")
        for n in result:
            t.add_row(n.name, f"{n.tables:,}", ", ".join(f"{f} {c}" for f, c in n.formats.items()))
        print_table(console, t)
        console.print(plural(len(result), "namespace"))

    run(out, lambda: connect(catalog).list_namespaces(), human)


def rename(
    old: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")],
    new: Annotated[
        str, typer.Argument(metavar="NEW_NAME", help="The new namespace.table (another namespace allowed).")
    ],
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Rename a table in the catalog (no JVM): its files stay where they are, its mirrors follow; a name that is taken
    (by a table of either format) is refused.

    Example: lakecat rename sales.orders sales.orders_2025
    """
    out = Output(json_, verbose)

    def human(console, r):  # type: ignore[no-untyped-def]
        mirrors = f"; its {', '.join(r.mirrors)} mirror follows" if r.mirrors else ""
        console.print(f"renamed {r.format} table {r.old_name} to {r.name} (files stay at {r.location}){mirrors}",
                      markup=False)  # fmt: skip

    run(out, lambda: connect(catalog).rename_table(old, new), human)


def describe(
    name: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")],
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Schema, partitioning, properties, current version, files, size and capabilities (no JVM)."""
    out = Output(json_, verbose)
    run(out, lambda: connect(catalog).load_table(name).describe(), _render_description)


def drop(
    name: Annotated[str, typer.Argument(metavar="TABLE", help="namespace.table")],
    purge: Annotated[bool, typer.Option("--purge", help="Also delete the table's data and metadata files.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    engine: Annotated[
        str | None, typer.Option("--engine", help="light (default: no JVM) or spark (Spark's catalog drops the entry).")
    ] = None,
    catalog: CatalogOpt = None,
    json_: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Drop a table from the catalog (with --purge, delete its files too); no JVM starts."""
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        cat = connect(catalog)
        entry = cat.entry(name)
        what = "drop and DELETE ALL FILES of" if purge else "drop"
        confirm(out, f"{what} {entry.format} table {entry.ident} at {entry.location}?", yes)
        return say_engine(out, cat.drop_table(name, purge=purge, engine=engine))

    def human(console, r):  # type: ignore[no-untyped-def]
        console.print(
            f"dropped {r.format} table {r.name}"
            + (" and deleted its files" if r.purged else f" (files kept at {r.location})")
        )

    run(out, api, human)


# What each column-mapping mode means for a reader of the data files (Iceberg is always "id").
_MAPPING_MEANS = {
    "id": "columns in data files are matched by field id: renames and drops rewrite nothing",
    "name": "columns in data files are matched by a physical name kept per column: renames and drops rewrite nothing",
    "none": "columns in data files are matched by their names: a rename or drop needs column mapping (alter --yes)",
}


def _render_description(console, d) -> None:  # type: ignore[no-untyped-def]
    console.print(f"[bold]{d.name}[/] ({d.format})")
    console.print(f"  location:     {d.location}", markup=False)
    if d.mirrors:
        console.print(f"  mirrors:      {', '.join(d.mirrors)} (readable as that format too, same name)", markup=False)
    console.print(f"  partitioning: {', '.join(d.partitioning) or '(none)'}", markup=False)
    if d.current_version is None:
        console.print("  version:      (none yet: nothing committed)")
    else:
        updated = f", updated {human_time(d.last_updated)} UTC ({human_age(d.last_updated)})" if d.last_updated else ""
        console.print(f"  version:      {d.current_version}{updated}", markup=False)
    records = plural(d.records, "record") if d.records is not None else "records unknown"
    console.print(f"  data:         {records} in {plural(d.files, 'file')}, {human_size(d.size_bytes)}")
    if d.column_mapping:
        console.print(
            f"  column mapping: {d.column_mapping} ({_MAPPING_MEANS.get(d.column_mapping, '')})", markup=False
        )
    _render_layout(console, d)
    if len(d.partition_specs) > 1:
        specs = "; ".join(
            f"{s.spec_id}: {', '.join(s.fields) or '(none)'}{' (current)' if s.current else ''}"
            for s in d.partition_specs
        )
        console.print(f"  specs:        {specs}", markup=False)
    for label, refs in (("tags", d.tags), ("branches", d.branches)):
        if refs:
            shown = ", ".join(f"{r.name} → {r.version}" + (f" (retain {r.retain})" if r.retain else "") for r in refs)
            console.print(f"  {label + ':':<14}{shown}", markup=False)
    t = table(key("column"), key("type"), key("nullable"), "note", title="schema")
    for c in d.schema:
        note = f"generated: {c.generated}" if c.generated else (c.comment or "")
        t.add_row(c.name, c.type, "yes" if c.nullable else "no", note)
    print_table(console, t)
    if d.properties:
        p = table(key("property"), "value", title="properties")
        for k, v in sorted(d.properties.items()):
            p.add_row(k, v)
        print_table(console, p)
    console.print("capabilities: " + ", ".join(k for k, v in d.capabilities.items() if v), markup=False)


_CLUSTERING_MEANS = {
    "liquid": "Delta liquid clustering: OPTIMIZE clusters new files by these keys",
    "sort": "the table's sort order: writes and compaction sort by these keys",
    "zorder": "z-order: compaction interleaves these keys",
}


def _render_layout(console, d) -> None:  # type: ignore[no-untyped-def]
    keys = ", ".join(d.clustering)
    clustering = f"{keys} ({_CLUSTERING_MEANS.get(d.clustering_method or '', '')})" if keys else "(none)"
    console.print(f"  clustering:   {clustering}", markup=False)
    if d.sort_order:
        console.print(f"  sort order:   {', '.join(d.sort_order)}", markup=False)
    if d.format_version is not None:  # Delta's: its protocol's minimum writer version
        console.print(f"  format version: {d.format_version}", markup=False)
    if d.delete_mode:
        console.print(f"  deletes:      {d.delete_mode}", markup=False)
    if d.table_features:
        console.print(f"  features:     {', '.join(d.table_features)}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("create")(create)
    app.command("list")(list_)
    app.command("namespaces")(namespaces)
    app.command("describe")(describe)
    app.command("rename")(rename)
    app.command("drop")(drop)
