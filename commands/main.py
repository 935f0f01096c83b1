"""The ``lakecat`` command: every command module registers itself here."""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from lakecat import versions_info

from ._output import dumps
from ._render import version_lines

# The command modules, in the order of `lakecat -h`, and the top-level commands each registers. A command line
# imports and builds only its own module: Typer inspects every registered function's signature when it builds the
# command tree (slow for all of them together), and the modules import what their commands need (tests/test_cli_json.py
# checks this table against what the modules register).
COMMANDS: dict[str, tuple[str, ...]] = {
    "quickstart": ("quickstart",),
    "catalogs": ("catalogs",),
    "tables": ("create", "list", "namespaces", "describe", "rename", "drop"),
    "adopt": ("register", "convert"),
    "versions": ("history", "timetravel", "read", "changes", "rollback"),
    "tags": ("tag", "tags", "untag", "branch", "publish"),
    "ingest": ("ingest",),
    "upsert": ("upsert",),
    "writes": ("append", "delete"),
    "mirror": ("mirror",),
    "maintenance": ("compact", "expire", "clean-orphans", "maintain", "maintenance-log", "policy", "alter"),
    "health": ("health",),
    "local": ("local",),
    "jars": ("jars",),
    "doctor": ("doctor",),
}
_MODULE_OF = {name: module for module, names in COMMANDS.items() for name in names}


def _module(name: str) -> Any:
    return importlib.import_module(f"{__package__}.{name}")


class _Command(TyperCommand):
    """A command whose usage line names its arguments as the docs do: ``lakecat describe [OPTIONS] TABLE``
    (Typer's own writes ``{name}``), optional ones in brackets."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = param.metavar or (param.name or "").upper()
                pieces.append(name if param.required else f"[{name}]")
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


def _use_command_class(app: typer.Typer) -> None:
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = _Command
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _use_command_class(group.typer_instance)


_VERSION_FLAGS = ("--version", "-V")


def _version(ctx: typer.Context, value: bool) -> None:
    # eager, so it runs before --json is read whatever their order: the root's --json callback prints
    if value:
        ctx.meta["lakecat.version"] = True


def _root_json(ctx: typer.Context, value: bool) -> None:
    if ctx.meta.get("lakecat.version"):
        info = versions_info().to_dict()
        if value:
            print(dumps(info))
        else:
            print("\n".join(version_lines(info)))
        raise typer.Exit(0)
    if value:
        raise typer.BadParameter("put it after the command (lakecat COMMAND --json), or use it with --version")


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            callback=_version,
            is_eager=True,
            help="Print lakecat's version and the Spark, Iceberg, Delta, Java and Python versions it runs on, and exit.",
        ),
    ] = False,
    json_: Annotated[
        bool, typer.Option("--json", callback=_root_json, help="With --version: the versions as one JSON document.")
    ] = False,
) -> None:
    """One catalog and maintenance toolkit over Apache Iceberg and Delta Lake."""


def _app(modules: tuple[Any, ...]) -> typer.Typer:
    root = typer.Typer(
        name="lakecat",
        help="One catalog and maintenance toolkit over Apache Iceberg and Delta Lake.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    root.callback()(_root)  # the root's own options; also keeps a one-module app a group of its commands
    for module in modules:
        module.register(root)
        _use_command_class(root)
    return root


def _names(root: typer.Typer) -> list[str]:
    return [c.name for c in root.registered_commands if c.name] + [g.name for g in root.registered_groups if g.name]


def full_app() -> typer.Typer:
    """The whole command tree (every module imported and registered)."""
    return _app(tuple(_module(m) for m in COMMANDS))


def __getattr__(name: str) -> Any:  # `from lakecat.commands.main import app`: built on first use
    if name == "app":
        return full_app()
    raise AttributeError(name)


def _app_for(argv: list[str]) -> typer.Typer:
    if argv and set(argv) <= {*_VERSION_FLAGS, "--json"} and set(argv) & set(_VERSION_FLAGS):
        return _app(())
    module = _MODULE_OF.get(argv[0]) if argv else None
    if module is None:  # no command, an option first (-h), or a typo: the whole tree (its help, its "no such command")
        return full_app()
    return _app((_module(module),))


if hasattr(typer, "TyperException"):  # typer >= 0.26 vendors click (typer._click): its exceptions are not click's
    _EXIT: tuple[type[BaseException], ...] = (typer.Exit,)
    _ABORT: tuple[type[BaseException], ...] = (typer.Abort,)
    _USAGE: tuple[type[BaseException], ...] = (typer.TyperException,)
else:  # pragma: no cover - older typer: click's own
    import click

    _EXIT, _ABORT, _USAGE = (click.exceptions.Exit,), (click.exceptions.Abort,), (click.ClickException,)


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
    if argv and argv[0] in _MODULE_OF:  # a command (not help): at a terminal, its Spark path uses the warm engine
        from lakecat import local

        local.terminal_command()
        local.install_interrupt_handler()  # Ctrl-C cancels the Spark jobs and ends the command as "interrupted" (exit 130)
    try:
        code = _app_for(argv)(args=argv, prog_name="lakecat", standalone_mode=False)
    except KeyboardInterrupt:  # Ctrl-C outside a command's own handling (say, while the command loads)
        sys.stderr.write("interrupted\n")
        return 130
    except _EXIT as e:
        return int(getattr(e, "exit_code", 0))
    except _ABORT:
        sys.stderr.write("aborted\n")
        return 1
    except _USAGE as e:
        format_message = getattr(e, "format_message", None)  # click's and typer's usage errors both have it
        message = " ".join((format_message() if callable(format_message) else str(e)).split())
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
