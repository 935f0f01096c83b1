"""Every command ships documented: help text, and an entry in the README (a new command can't ship without)."""

from __future__ import annotations

import re
from pathlib import Path

import typer
from lakecat.commands._common import leaf_commands
from lakecat.commands.main import app
from typer.main import get_command

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_every_command_has_help_and_a_readme_entry():
    root = get_command(app)
    commands = list(leaf_commands(root))
    assert len(commands) >= 6
    for path, _ in commands:
        for n in range(1, len(path)):  # the groups on the way: `lakecat local`, `lakecat local kafka`
            group = root
            for word in path[:n]:
                group = group.commands[word]
            assert group.help, f"group `lakecat {' '.join(path[:n])}` has no help text"
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
    for path, _ in leaf_commands(get_command(app)):
        code, out, _ = cli(*path, "--help")
        assert code == 0 and "Usage" in out, path


def test_exit_codes_are_documented():
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |"):
        assert code in README


CONCEPTS = ROOT / "docs" / "concepts.md"
# The concepts a newcomer needs, each a heading of docs/concepts.md (and in its table of contents).
CONCEPT_HEADINGS = (
    "Versions and snapshot ids",
    "Reading what changed: `--since` and `--until`",
    "Safety floors and `--force`",
    "Exit codes",
    "Catalog configs and how one is chosen",
    "Exactly-once ingest",
    "Dead-letter tables",
    "Delta generated partition columns",
)


def test_concepts_page_covers_every_concept():
    assert CONCEPTS.is_file(), "docs/concepts.md is missing"
    text = CONCEPTS.read_text()
    headings = re.findall(r"^## (.+)$", text, re.M)
    for heading in CONCEPT_HEADINGS:
        assert heading in headings, f"docs/concepts.md has no '## {heading}' section"
        anchor = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        assert f"](#{anchor})" in text, f"docs/concepts.md's contents do not link to '{heading}' (#{anchor})"
    exit_codes = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in range(5):
        assert re.search(rf"^\| {code} \| \S.* \| .*`", exit_codes, re.M), f"exit code {code} lacks a row with an example"
    for term in ("exclusive", "inclusive", "--since -1", "until_version", "7 days", "24 hours", "--force",
                 "LAKECAT_CATALOG", "${VAR:-default}", "txnAppId", "lakecat.batch-id", "_dlq", "GENERATED ALWAYS AS"):
        assert term in text, f"docs/concepts.md does not mention {term}"


assert isinstance(app, typer.Typer)
