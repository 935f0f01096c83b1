"""`lakecat jars fetch|list`: lakecat's own jar cache (Spark, the local Kafka broker, the REST catalog server)."""

from __future__ import annotations

from typing import Annotated

import typer

from lakecat.units import plural

from ._common import CatalogOpt, JsonOpt, Output, VerboseOpt, connect_config, key, num, print_table, run, table

app = typer.Typer(help="The jars lakecat needs: fetch them into its cache (for offline use), list what is cached.",
                  no_args_is_help=True)  # fmt: skip

WithOpt = Annotated[
    str | None,
    typer.Option("--with", help="Also fetch these sets, comma-separated: kafka (local broker), rest (local REST catalog "
                 "server), s3 (object-storage jars), postgres (already in the Spark set)."),
]  # fmt: skip


@app.command("fetch")
def fetch(
    with_: WithOpt = None, catalog: CatalogOpt = None, json_: JsonOpt = False, verbose: VerboseOpt = False
) -> None:
    """Resolve every jar the catalog config needs (plus --with sets) into the cache; later starts need no network."""
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        from lakecat import local

        config = connect_config(catalog)
        with out.status(f"fetching jars from {local.jar_repository(config).url}"):
            return local.fetch_jars(config, (with_ or "").split(","))

    def human(console, result):  # type: ignore[no-untyped-def]
        t = table(key("set"), num("jars"), num("size"), "state", "description")
        for s in result.sets:
            t.add_row(s.name, str(len(s.jars)), f"{s.size / 2**20:.0f} MiB", f"fetched in {s.seconds}s" if s.fetched else "cached",
                      s.description)  # fmt: skip
        print_table(console, t)
        console.print(f"cache {result.cache} · repository {result.repository['url']}")

    run(out, api, human)


@app.command("list")
def list_(json_: JsonOpt = False, verbose: VerboseOpt = False) -> None:
    """Show what is cached: every jar's coordinate, file, size and SHA-1 check against the repository's."""
    out = Output(json_, verbose)

    def api():  # type: ignore[no-untyped-def]
        from lakecat import local

        listing = local.list_cache()
        if not listing.ok:
            bad = next(j for j in listing.jars if j.status != "ok")
            out.info(f"{bad.coordinate}: {bad.status} ({bad.file}); `lakecat jars fetch` fetches it again")
        return listing

    def human(console, listing):  # type: ignore[no-untyped-def]
        t = table(key("coordinate"), num("size"), key("sha1"), "file")
        for j in listing.jars:
            t.add_row(j.coordinate, f"{j.size:,}", "ok" if j.status == "ok" else j.status.upper(), j.file)
        print_table(console, t, optional=("file",))
        sets = ", ".join(f"{s.name} ({len(s.jars)})" for s in listing.sets) or "none"
        console.print(
            f"{plural(len(listing.jars), 'jar')}, {sum(j.size for j in listing.jars) / 2**20:.0f} MiB in {listing.cache}; sets: {sets}"
        )

    result = run(out, api, human)
    if not result.ok:
        raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="jars")
