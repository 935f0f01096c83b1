"""The ``lakecat`` command: every command module registers itself here."""

from __future__ import annotations

import logging
import sys

import click
import typer

from . import catalogs, ingest, local, maintenance, quickstart, tables, tags, upsert, versions
from ._output import dumps

app = typer.Typer(
    name="lakecat",
    help="One catalog and maintenance toolkit over Apache Iceberg and Delta Lake.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
for module in (quickstart, catalogs, tables, versions, tags, ingest, upsert, maintenance, local):
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


def main() -> None:
    """Console-script entry point: usage errors get exit 2 (and a JSON error with --json)."""
    configure_logging("--verbose" in sys.argv or "-v" in sys.argv)
    try:
        code = app(standalone_mode=False)
    except _EXIT as e:
        sys.exit(e.exit_code)
    except _ABORT:
        sys.stderr.write("aborted\n")
        sys.exit(1)
    except _USAGE as e:
        if "--json" in sys.argv:
            sys.stdout.write(dumps({"error": {"type": "UsageError", "message": e.format_message(), "exit_code": 2}}) + "\n")
        e.show()
        sys.exit(e.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
