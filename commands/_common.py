"""Helpers of the command modules, by job: ``_options`` (shared options), ``_output`` (JSON/human output and
errors), ``_render`` (tables and formatting), ``_progress`` (progress line). Re-exported here for convenience."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lakecat.units import exact_size

from ._options import CatalogOpt, JsonOpt, VerboseOpt, connect, connect_config, parse_properties
from ._output import UNLIMITED_WIDTH, Output, confirm, dumps, run
from ._progress import _ProgressLine, _spark_tasks
from ._render import cell, human_age, human_duration, human_time, key, num, print_table, table, thousands

__all__ = [
    "UNLIMITED_WIDTH",
    "CatalogOpt",
    "JsonOpt",
    "Output",
    "VerboseOpt",
    "_ProgressLine",
    "_spark_tasks",
    "cell",
    "confirm",
    "connect",
    "connect_config",
    "dumps",
    "exact_size",
    "human_age",
    "human_duration",
    "human_time",
    "key",
    "leaf_commands",
    "num",
    "parse_properties",
    "print_table",
    "run",
    "table",
    "thousands",
]


def leaf_commands(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every runnable command under a click group (``typer.main.get_command(app)``) with its words, sorted:
    ``(("local", "kafka", "start"), command)``."""
    for name, cmd in sorted(group.commands.items()):
        if hasattr(cmd, "commands"):  # a group (typer's own click or click itself)
            yield from leaf_commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd
