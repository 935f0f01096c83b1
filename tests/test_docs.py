"""Every command ships documented: help text, and an entry in the README (a new command can't ship without)."""

from __future__ import annotations

import re
from pathlib import Path

import typer
from typer.main import get_command

from lakecat.commands.main import app

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def _leaf_commands(group, prefix=()):  # type: ignore[no-untyped-def]
    for name, cmd in sorted(group.commands.items()):
        path = (*prefix, name)
        if hasattr(cmd, "commands"):
            assert cmd.help, f"group `lakecat {' '.join(path)}` has no help text"
            yield from _leaf_commands(cmd, path)
        else:
            yield path, cmd


def test_every_command_has_help_and_a_readme_entry():
    root = get_command(app)
    commands = list(_leaf_commands(root))
    assert len(commands) >= 6
    for path, cmd in commands:
        words = " ".join(path)
        assert (cmd.help or "").strip(), f"`lakecat {words}` has no help text"
        if len(path) > 1:  # a group's verbs are documented together: `lakecat local kafka start|stop|status`
            pattern = rf"### `lakecat {re.escape(' '.join(path[:-1]))} [^`]*\b{re.escape(path[-1])}\b"
        else:
            pattern = rf"### `lakecat {re.escape(words)}(\s|`)"
        assert re.search(pattern, README), f"README has no '### `lakecat {words} ...`' entry"
        option_names = [o for p in cmd.params for o in getattr(p, "opts", []) if o.startswith("--")]
        for common in ("--json",):
            assert common in option_names, f"`lakecat {words}` lacks {common}"


def test_help_runs_for_every_command(cli):
    for path, _ in _leaf_commands(get_command(app)):
        code, out, _ = cli(*path, "--help")
        assert code == 0 and "Usage" in out, path


def test_exit_codes_are_documented():
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |"):
        assert code in README


assert isinstance(app, typer.Typer)
