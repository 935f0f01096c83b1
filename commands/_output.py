"""Output: one JSON document on stdout, or human text on stderr; errors as one line and an exit code."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from datetime import date, datetime
from decimal import Decimal
from functools import cached_property
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from lakecat.errors import EXIT_INTERNAL, InvalidArgumentError, LakecatError
from lakecat.local import interrupt_requested
from lakecat.results import with_version_strings

from ._progress import _ignore, _ProgressLine

if TYPE_CHECKING:  # rich loads with the first console a command uses: one printing only JSON never does
    from rich.console import Console


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


UNLIMITED_WIDTH = 10_000  # stdout is a pipe or a file: no terminal to fit, keep every row on one line


def dumps(data: Any) -> str:
    return json.dumps(data, default=_default, indent=2, sort_keys=False)


class Output:
    """Data to stdout (a rich rendering or one JSON document), humans and progress to stderr.

    Colours and styles only on a terminal, and never with ``NO_COLOR`` set (https://no-color.org: no
    escape sequence at all, not even bold). On a terminal text and tables fit its width; elsewhere (a pipe,
    a file) nothing is wrapped: one line per message and per row, so ``grep`` and ``awk`` see them whole.
    """

    def __init__(self, json_mode: bool = False, verbose: bool = False) -> None:
        self.json = json_mode
        self.verbose = verbose

    @staticmethod
    def _console(stderr: bool) -> Console:
        from rich.console import Console

        styles: dict[str, Any] = {"color_system": None} if os.environ.get("NO_COLOR") else {}
        console = Console(stderr=stderr, highlight=False, **styles)
        if not console.is_terminal:  # a pipe or a file, whatever COLUMNS the shell exported
            console.width = UNLIMITED_WIDTH
            console.soft_wrap = True
        return console

    @cached_property
    def out(self) -> Console:
        return self._console(stderr=False)

    @cached_property
    def err(self) -> Console:
        return self._console(stderr=True)

    def emit(self, result: Any, human: Callable[[Console, Any], None] | None = None) -> None:
        data = with_version_strings(result.to_dict() if hasattr(result, "to_dict") else result)
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

    @contextlib.contextmanager
    def progress(self, description: str, *, total: int | None = None) -> Iterator[Callable[..., None]]:
        """A live progress line on stderr while the block runs; yields ``update(completed=, total=, description=)``.

        The bar counts the caller's own steps when it gives a ``total`` (e.g. tables), else the tasks of the
        Spark stages running right now (a pulse while Spark is idle or starting); then the elapsed time.
        Nothing is shown with ``--json`` or when stderr is not an interactive terminal.
        """
        if self.json or not self.err.is_interactive:
            yield _ignore
            return
        with _ProgressLine(self.err, description, total) as line:
            yield line.update

    def status(self, message: str) -> contextlib.AbstractContextManager[Callable[..., None]]:
        """Progress for work of unknown length: see ``progress``."""
        return self.progress(message)

    def fail(self, exc: BaseException) -> NoReturn:
        if isinstance(exc, LakecatError):
            code, kind, message = exc.exit_code, exc.type_name, exc.cli_message()
        else:
            code, kind = EXIT_INTERNAL, "InternalError"
            message = (
                f"internal error ({type(exc).__name__}: {exc}); this is a bug — rerun with --verbose and report it"
            )
        if self.verbose:
            self.err.print(traceback.format_exc(), markup=False, highlight=False)
        if self.json:
            sys.stdout.write(dumps({"error": {"type": kind, "message": message, "exit_code": code}}) + "\n")
            sys.stdout.flush()
        from rich.markup import escape

        self.err.print(f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False, soft_wrap=True)
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
        if interrupt_requested():  # the error of a Spark job that Ctrl-C cancelled
            out.err.print("interrupted")
            raise typer.Exit(130) from None
        out.fail(e)
    out.emit(result, human)
    if interrupt_requested():  # Ctrl-C came while the operation committed: it finished, and says what it did
        out.err.print("interrupted (after the operation finished)")
        raise typer.Exit(130)
    return result


def confirm(out: Output, question: str, yes: bool) -> None:
    """Ask before a destructive step; refuse (exit 2) when nobody can answer."""
    if yes:
        return
    if not sys.stdin.isatty():
        out.fail(InvalidArgumentError(f"{question} — refusing without --yes (no terminal to ask on)"))
    if not typer.confirm(question, default=False, err=True):
        out.err.print("aborted, nothing changed")
        raise typer.Exit(1)
