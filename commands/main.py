"""The ``lakecat`` command: every command module registers itself here."""

from __future__ import annotations

import logging
import sys

import click
import typer

from . import (
    adopt,
    catalogs,
    doctor,
    health,
    ingest,
    jars,
    local,
    maintenance,
    quickstart,
    tables,
    tags,
    upsert,
    versions,
)
from ._output import dumps

app = typer.Typer(
    name="lakecat",
    help="One catalog and maintenance toolkit over Apache Iceberg and Delta Lake.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
for module in (quickstart, catalogs, tables, adopt, versions, tags, ingest, upsert, maintenance, health, local, jars, doctor):
    module.register(app)


# typer >= 0.2x vendors click (typer._click): its exceptions are not click's. Catch both spellings.
_EXIT = tuple({click.exceptions.Exit, getattr(typer, "Exit", click.exceptions.Exit)})
_ABORT = tuple({click.exceptions.Abort, getattr(typer, "Abort", click.exceptions.Abort)})
_USAGE = tuple({click.ClickException, getattr(typer, "TyperException", click.ClickException)})


def configure_logging(verbose: bool) -> None:
    """Logging, set once for the process: lakecat reports an engine error as one line, so the engine's own
    loggers (which repeat it with a stack) stay quiet unless ``--verbose``; lakecat's own at WARNING."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if not verbose:
        for logger in ("py4j", "DataFrameQueryContextLogger", "SQLQueryContextLogger", "pyspark"):
            logging.getLogger(logger).setLevel(logging.CRITICAL)


def run_cli(argv: list[str]) -> int:
    """Run one command line; returns its exit code. Usage errors are exit 2 with one line on stderr (and a JSON
    error document with --json): the command's usage is one ``-h`` away, and a CI log wants the reason only."""
    configure_logging("--verbose" in argv or "-v" in argv)
    try:
        code = app(args=argv, prog_name="lakecat", standalone_mode=False)
    except _EXIT as e:
        return int(e.exit_code)
    except _ABORT:
        sys.stderr.write("aborted\n")
        return 1
    except _USAGE as e:
        message = " ".join(e.format_message().split())
        if "--json" in argv:
            sys.stdout.write(dumps({"error": {"type": "UsageError", "message": message, "exit_code": 2}}) + "\n")
        ctx = getattr(e, "ctx", None)
        where = f"'{ctx.command_path} -h'" if ctx is not None else "'lakecat -h'"
        sys.stderr.write(f"error: {message} (usage: {where})\n")
        return int(getattr(e, "exit_code", 2))
    return code if isinstance(code, int) else 0


def main() -> None:
    """Console-script entry point."""
    sys.exit(run_cli(sys.argv[1:]))


if __name__ == "__main__":
    main()
