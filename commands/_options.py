"""Options every command shares (--json, --catalog, --verbose) and their parsing."""

from __future__ import annotations

from typing import Annotated

import typer

from lakecat.errors import InvalidArgumentError

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document on stdout.")]


CatalogOpt = Annotated[
    str | None,
    typer.Option(
        "--catalog", "-c", help="Catalog name or path to a TOML config (default: $LAKECAT_CATALOG, else 'local')."
    ),
]


VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks and engine details on errors.")]


def connect(catalog: str | None):  # type: ignore[no-untyped-def]
    import lakecat

    return lakecat.connect(catalog)


def parse_properties(items: list[str] | None) -> dict[str, str]:
    props: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise InvalidArgumentError(f"invalid --property {item!r}: use key=value")
        k, v = item.split("=", 1)
        props[k.strip()] = v.strip()
    return props


def connect_config(catalog: str | None):  # type: ignore[no-untyped-def]
    """The catalog config alone (no metastore opened): for commands about the machine, not the tables."""
    from lakecat.config import resolve_config

    return resolve_config(catalog)
