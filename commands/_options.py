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


MetadataEngineOpt = Annotated[
    str | None,
    typer.Option("--engine", help="light (no JVM: pyiceberg / delta-rs) or spark; default: light where it does exactly "
                 "what Spark does, else spark (the result's engine says which ran, --verbose why)."),
]  # fmt: skip


def say_engine(out, result):  # type: ignore[no-untyped-def]
    """With --verbose, say which engine ran and, when Spark did, why the light one did not."""
    if out.verbose and getattr(result, "engine", None):
        why = f" ({result.engine_reason})" if result.engine == "spark" and result.engine_reason else ""
        out.info(f"done by {result.engine}{why}")
    return result


def connect(catalog: str | None):  # type: ignore[no-untyped-def]
    import lakecat

    return lakecat.connect(catalog)


def parse_pairs(items: list[str] | None, option: str, form: str) -> dict[str, str]:
    """Repeated ``key=value`` options as a dict (the library's spelling); anything else is exit 2 naming ``form``."""
    pairs: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise InvalidArgumentError(f"invalid {option} {item!r}: use {form}")
        k, v = item.split("=", 1)
        pairs[k.strip()] = v.strip()
    return pairs


def parse_properties(items: list[str] | None) -> dict[str, str]:
    return parse_pairs(items, "--property", "key=value")


def parse_switch(value: str | None, option: str) -> bool | None:
    """``on``/``off`` (``true``/``false``, ``yes``/``no``) as a bool; None stays None."""
    if value is None:
        return None
    word = value.strip().lower()
    if word in ("on", "true", "yes"):
        return True
    if word in ("off", "false", "no"):
        return False
    raise InvalidArgumentError(f"invalid {option} {value!r}: use on or off")


def connect_config(catalog: str | None):  # type: ignore[no-untyped-def]
    """The catalog config alone (no metastore opened): for commands about the machine, not the tables."""
    import lakecat

    return lakecat.resolve_config(catalog)
