"""MkDocs hook: the command reference on every command page is generated from the Typer app at build time.

A page writes ``<!-- cli: compact -->`` (or ``<!-- cli: local kafka start -->``) where a command's reference goes;
the build replaces the marker with that command's help text, usage, arguments and options, rendered by Typer's
own Markdown generator (``typer.cli.get_docs_for_click``, what ``typer ... utils docs`` prints). So ``--help``
and the site cannot drift. The build warns (and ``mkdocs build --strict`` fails) when a marker names a command
the app does not have, or when a command of the app has no marker on any page.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

log = logging.getLogger("mkdocs.plugins.lakecat_cli")

MARKER = re.compile(r"^<!-- cli: ([a-z][a-z0-9 -]*?) -->[ \t]*$", re.MULTILINE)
_documented: set[tuple[str, ...]] = set()


def root_command() -> Any:
    """The Click (Typer's) group behind ``lakecat``."""
    from lakecat.commands.main import app
    from typer.main import get_command

    return get_command(app)


def leaf_commands(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every runnable command under a group with its words, e.g. ``("local", "kafka", "start")``."""
    for name, cmd in sorted(group.commands.items()):
        if hasattr(cmd, "commands"):
            yield from leaf_commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd


def reference(words: tuple[str, ...]) -> str:
    """The generated reference of one command (no heading: the page's own heading introduces it)."""
    import typer
    from typer.cli import get_docs_for_click

    group = root_command()
    ctx = typer.Context(group, info_name="lakecat")
    for word in words[:-1]:
        group = group.commands[word]
        ctx = typer.Context(group, parent=ctx, info_name=word)
    cmd = group.commands[words[-1]]
    ctx = typer.Context(cmd, parent=ctx, info_name=words[-1])
    text = get_docs_for_click(obj=cmd, ctx=ctx, name=words[-1], call_prefix=" ".join(("lakecat", *words[:-1])))
    body = text.split("\n", 1)[1].strip()  # drop Typer's "# `lakecat compact`" title
    body = re.sub(r"^(Example: )(lakecat .+)$", r"\1`\2`", body, flags=re.MULTILINE)
    return f'<div class="cli-reference" markdown>\n\n{body}\n\n</div>'


def _known() -> dict[tuple[str, ...], Any]:
    return dict(leaf_commands(root_command()))


def on_pre_build(config: Any) -> None:
    _documented.clear()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER.search(markdown) is None:
        return markdown
    known = _known()

    def replace(m: re.Match[str]) -> str:
        words = tuple(m.group(1).split())
        if words not in known:
            log.warning("%s: <!-- cli: %s --> names no command of the lakecat app", page.file.src_path, m.group(1))
            return m.group(0)
        _documented.add(words)
        return reference(words)

    return MARKER.sub(replace, markdown)


def on_post_build(config: Any) -> None:
    for words in sorted(set(_known()) - _documented):
        log.warning(
            "`lakecat %s` has no page: add '<!-- cli: %s -->' and an example to a page under docs/commands/",
            " ".join(words),
            " ".join(words),
        )
