"""What every command shares: the common options, the Output (rich or JSON), error handling."""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, NoReturn, Optional

import typer
from rich.console import Console
from rich.table import Table as RichTable

from lakecat.errors import EXIT_INTERNAL, InvalidArgumentError, LakecatError

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document on stdout.")]
CatalogOpt = Annotated[
    Optional[str],
    typer.Option("--catalog", "-c", help="Catalog name or path to a TOML config (default: $LAKECAT_CATALOG, else 'local')."),
]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks and engine details on errors.")]


def _default(o: Any) -> Any:
    if isinstance(o, datetime):
        from lakecat.units import iso

        return iso(o)
    if isinstance(o, date):
        return o.isoformat()
    if isinstance(o, Decimal):
        return str(o)
    if isinstance(o, (bytes, bytearray)):
        return o.decode("utf-8", "replace")
    if hasattr(o, "to_dict"):
        return o.to_dict()
    return str(o)


def dumps(data: Any) -> str:
    return json.dumps(data, default=_default, indent=2, sort_keys=False)


class Output:
    """Data to stdout (a rich rendering or one JSON document), humans and progress to stderr."""

    def __init__(self, json_mode: bool = False, verbose: bool = False) -> None:
        self.json = json_mode
        self.verbose = verbose
        no_color = bool(os.environ.get("NO_COLOR"))
        self.out = Console(no_color=no_color, soft_wrap=True, highlight=False)
        self.err = Console(stderr=True, no_color=no_color, highlight=False)

    def emit(self, result: Any, human: Callable[[Console, Any], None] | None = None) -> None:
        data = result.to_dict() if hasattr(result, "to_dict") else result
        if self.json:
            sys.stdout.write(dumps(data) + "\n")
            sys.stdout.flush()
        elif human is not None:
            human(self.out, result)
        else:
            self.out.print(dumps(data))

    def info(self, message: str) -> None:
        if not self.json:
            self.err.print(message)

    def status(self, message: str):  # type: ignore[no-untyped-def]
        """A spinner on stderr for work of unknown length (silent when stderr is not a terminal)."""
        return self.err.status(message, spinner="dots")

    def fail(self, exc: BaseException) -> NoReturn:
        if isinstance(exc, LakecatError):
            code, kind, message = exc.exit_code, exc.type_name, str(exc)
        else:
            code, kind = EXIT_INTERNAL, "InternalError"
            message = f"internal error ({type(exc).__name__}: {exc}); this is a bug — rerun with --verbose and report it"
        if self.verbose:
            self.err.print(traceback.format_exc(), markup=False, highlight=False)
        if self.json:
            sys.stdout.write(dumps({"error": {"type": kind, "message": message, "exit_code": code}}) + "\n")
            sys.stdout.flush()
        self.err.print(f"[bold red]error:[/] {message}", markup=True, highlight=False, soft_wrap=True)
        raise typer.Exit(code)


def run(out: Output, fn: Callable[[], Any], human: Callable[[Console, Any], None] | None = None) -> Any:
    """Run one API call, render its result, turn errors into a line and an exit code."""
    try:
        result = fn()
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        out.err.print("interrupted")
        raise typer.Exit(130) from None
    except Exception as e:  # noqa: BLE001 - everything becomes one line and an exit code
        out.fail(e)
    out.emit(result, human)
    return result


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


def confirm(out: Output, question: str, yes: bool) -> None:
    """Ask before a destructive step; refuse (exit 2) when nobody can answer."""
    if yes:
        return
    if not sys.stdin.isatty():
        out.fail(InvalidArgumentError(f"{question} — refusing without --yes (no terminal to ask on)"))
    if not typer.confirm(question, default=False, err=True):
        out.err.print("aborted, nothing changed")
        raise typer.Exit(1)


def table(*columns: str, title: str | None = None) -> RichTable:
    t = RichTable(title=title, show_lines=False, header_style="bold", expand=False)
    for c in columns:
        t.add_column(c, overflow="fold")
    return t
