"""What every command shares: the common options, the Output (rich or JSON), error handling."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Column
from rich.table import Table as RichTable
from rich.text import Text

from lakecat.errors import EXIT_INTERNAL, InvalidArgumentError, LakecatError
from lakecat.units import human_size, parse_timestamp

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document on stdout.")]
CatalogOpt = Annotated[
    str | None,
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
        styles: dict[str, Any] = {"color_system": None} if os.environ.get("NO_COLOR") else {}
        self.out = Console(highlight=False, **styles)
        self.err = Console(stderr=True, highlight=False, **styles)
        for console in (self.out, self.err):
            if not console.is_terminal and not os.environ.get("COLUMNS"):
                console.width = UNLIMITED_WIDTH

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
            code, kind, message = exc.exit_code, exc.type_name, str(exc)
        else:
            code, kind = EXIT_INTERNAL, "InternalError"
            message = f"internal error ({type(exc).__name__}: {exc}); this is a bug — rerun with --verbose and report it"
        if self.verbose:
            self.err.print(traceback.format_exc(), markup=False, highlight=False)
        if self.json:
            sys.stdout.write(dumps({"error": {"type": kind, "message": message, "exit_code": code}}) + "\n")
            sys.stdout.flush()
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
        out.fail(e)
    out.emit(result, human)
    return result


def leaf_commands(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every runnable command under a click group (``typer.main.get_command(app)``) with its words, sorted:
    ``(("local", "kafka", "start"), command)``."""
    for name, cmd in sorted(group.commands.items()):
        if hasattr(cmd, "commands"):  # a group (typer's own click or click itself)
            yield from leaf_commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd


def connect(catalog: str | None):  # type: ignore[no-untyped-def]
    import lakecat

    return lakecat.connect(catalog)


def connect_config(catalog: str | None):  # type: ignore[no-untyped-def]
    """The catalog config alone (no metastore opened): for commands about the machine, not the tables."""
    from lakecat.config import resolve_config

    return resolve_config(catalog)


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


class _Table(RichTable):
    """A table whose string cells are text, never rich markup (a value may hold ``[...]``)."""

    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        super().add_row(*(Text(r) if isinstance(r, str) else r for r in renderables), **kwargs)


def table(*columns: str | Column, title: str | None = None) -> RichTable:
    """A rich table in lakecat's style: a bold header, a rule under it, no vertical lines (rows stay awk-able).

    A plain string is a text column that folds when the terminal is narrow; pass ``num(...)`` for counts and
    sizes (right-aligned) and ``key(...)`` for names, versions and short times (never broken).
    """
    cols = [c if isinstance(c, Column) else Column(c, overflow="fold", min_width=min(len(c), 12)) for c in columns]
    return _Table(*cols, title=title, title_justify="left", title_style="bold", header_style="bold",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)  # fmt: skip


def num(header: str) -> Column:
    """A column of counts or sizes: right-aligned; wraps only on a terminal too narrow for the table."""
    return Column(header, justify="right", overflow="fold", min_width=max(len(header), 1))


def key(header: str, *, justify: Literal["left", "right"] = "left") -> Column:
    """A column of identifiers, versions or times: never wrapped (shortened with … only when nothing else fits)."""
    return Column(header, justify=justify, no_wrap=True, min_width=max(len(header), 1))


def exact_size(n: int | None) -> str:
    """A size setting as it is spelled (``128MB``, ``1GiB``) when it is a whole number of such units, else ``human_size``."""
    if n:
        for unit, size in (("TB", 1000**4), ("TiB", 1024**4), ("GB", 1000**3), ("GiB", 1024**3), ("MB", 1000**2),
                           ("MiB", 1024**2), ("KB", 1000), ("KiB", 1024)):  # fmt: skip
            if n % size == 0:
                return f"{n // size}{unit}"
    return human_size(n)


def thousands(n: int | None) -> str:
    """A count for people: ``12,345``; ``-`` when unknown."""
    return "-" if n is None else f"{n:,}"


def human_time(value: str | datetime | None) -> str:
    """A timestamp for people: ``2026-01-31 12:00:03`` in UTC (milliseconds only when there are some)."""
    if value is None or value == "":
        return "-"
    try:
        dt = parse_timestamp(value)
    except ValueError:
        return str(value)
    text = dt.strftime("%Y-%m-%d %H:%M:%S")
    return text + (f".{dt.microsecond // 1000:03d}" if dt.microsecond // 1000 else "")


def human_duration(seconds: float | None) -> str:
    """``0.4s``, ``12.3s``, ``2m 05s``, ``1h 02m``, ``3d 04h`` (lakecat's duration letters)."""
    if seconds is None:
        return "-"
    s = max(float(seconds), 0.0)
    if s < 60:
        return f"{s:.1f}s"
    whole = int(round(s))
    for unit, size, sub, sub_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if whole >= size:
            return f"{whole // size}{unit} {whole % size // sub_size:02d}{sub}"
    return f"{whole}s"  # pragma: no cover


def human_age(value: str | datetime | None, now: datetime | None = None) -> str:
    """How long ago a timestamp was, roughly: ``just now``, ``45s ago``, ``3m ago``, ``2h ago``, ``5d ago``."""
    if value is None or value == "":
        return "-"
    try:
        ago = ((now or datetime.now(UTC)) - parse_timestamp(value)).total_seconds()
    except ValueError:
        return "-"
    if ago < -60:  # a clock a little ahead of the writer's is "just now"
        return "in the future"
    if ago < 1:
        return "just now"
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if ago >= size:
            return f"{int(ago // size)}{unit} ago"
    return "just now"  # pragma: no cover


def print_table(console: Console, t: RichTable, *, optional: tuple[str, ...] = ()) -> None:
    """Print a table to fit a terminal: drop the ``optional`` columns (by header, in order) while it is too wide.

    A table that still does not fit is wrapped / shortened by rich, and a note says ``--json`` has every value whole.
    """
    def natural_width() -> int:
        return Measurement.get(console, console.options.update_width(UNLIMITED_WIDTH), t).maximum

    if console.is_terminal:
        for header in optional:
            if natural_width() <= console.width:
                break
            t.columns[:] = [c for c in t.columns if c.header != header]
            for i, c in enumerate(t.columns):
                c._index = i  # rich pads the first and last column by their index
    console.print(t)
    if console.is_terminal and natural_width() > console.width:
        console.print("[dim](narrow terminal: long values are wrapped or shortened; --json has them whole)[/]")


def cell(value: Any) -> str:
    """One value of a data row for people: ``null``, times as ``human_time``, structs and arrays as JSON."""
    if value is None:
        return "null"
    if isinstance(value, datetime):
        return human_time(value)
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=_default)
    return _default(value) if isinstance(value, (date, Decimal, bytes, bytearray)) else str(value)


class _ProgressLine:
    """The line ``Output.progress`` shows: spinner, what runs, a bar (own steps or Spark tasks), elapsed time."""

    def __init__(self, console: Console, description: str, total: int | None) -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=30),
                            TextColumn("{task.fields[counts]}"), TimeElapsedColumn(), console=console,
                            transient=True, refresh_per_second=4)  # fmt: skip
        self.task = self.bar.add_task(description, total=total, counts="")
        self.total, self.completed = total, 0
        self.spark: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="lakecat-progress", daemon=True)

    def __enter__(self) -> _ProgressLine:
        self.bar.start()
        self._poller.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._poller.join(timeout=2)
        self.bar.stop()

    def update(self, completed: int | None = None, total: int | None = None, description: str | None = None) -> None:
        self.total = self.total if total is None else total
        self.completed = self.completed if completed is None else completed
        self._show(description)

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            self.spark = _spark_tasks()
            self._show()

    def _show(self, description: str | None = None) -> None:
        spark = f"Spark tasks {self.spark[0]}/{self.spark[1]}" if self.spark else ""
        if self.total is not None:
            counts = " · ".join(c for c in (f"{self.completed}/{self.total}", spark) if c)
            self.bar.update(self.task, completed=self.completed, total=self.total, counts=counts, description=description)
        else:
            done, total = self.spark or (0, None)
            self.bar.update(self.task, completed=done, total=total, counts=spark, description=description)


def _ignore(*args: Any, **kwargs: Any) -> None:
    """The progress updater when no progress is shown."""


def _spark_tasks() -> tuple[int, int] | None:
    """(done, total) tasks of the Spark stages running now; None when Spark is idle or was never started."""
    spark_module = sys.modules.get("lakecat.spark")  # never import (and so start) the Spark path for a progress bar
    session = spark_module.active_session() if spark_module is not None else None
    if session is None:
        return None
    try:
        tracker = session.sparkContext.statusTracker()
        stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
    except Exception:  # noqa: BLE001 - a progress bar must never fail the command (e.g. the session stopping)
        return None
    done = sum(s.numCompletedTasks for s in stages if s is not None)
    total = sum(s.numTasks for s in stages if s is not None)
    return (done, total) if total else None
