"""`lakecat quickstart` runs to the end on the embedded default, and again (re-runnable); what it prints shows every
figure and command at any terminal width, and in a notebook."""

from __future__ import annotations

import html
import json

import pytest
from helpers import pyiceberg_catalog
from lakecat.commands._render import human_duration
from lakecat.commands.quickstart import render_quickstart
from rich.console import Console

from lakecat.processes import free_port
from lakecat.quickstart import TOPIC, _next_commands
from lakecat.results import QuickstartResult

WIDTHS = (60, 80, 120, 200)


def _flat(text: str) -> str:
    return " ".join(text.split())


def assert_shows_everything(r: QuickstartResult) -> None:
    """At every width, the rendering has each table's every figure beside its label (a table's row, or a block per
    table), every command whole on a line of its own and its comment; the notebook's HTML has them too."""
    figures = r.figures()
    assert figures and all(v for f in figures.values() for v in f.values())
    for width in WIDTHS:
        console = Console(width=width, record=True, color_system=None)
        render_quickstart(console, r)
        text = console.export_text()
        lines = [_flat(line) for line in text.splitlines()]
        where = f"at {width} columns:\n{text}"
        assert all(len(line) <= width for line in text.splitlines() if not line.lstrip().startswith("lakecat ")), where
        head = _flat(text).split(" click events")[0]
        assert head.startswith(f"lakecat quickstart — run {r.run}") and f", {human_duration(r.duration_s)} " in head
        events = f"{r.events_produced:,} click events (+{r.malformed_produced:,} malformed) produced to {r.topic} on"
        assert _flat(f"{events} {r.bootstrap}") in _flat(text), where
        for name, f in figures.items():
            row = [name, *f.values()]
            if row not in [line.split() for line in lines]:  # else one block per table: label, value
                at = lines.index(name)
                assert lines[at + 1 : at + 1 + len(f)] == [f"{label} {value}" for label, value in f.items()], where
        for step in r.next_commands:
            command, _, comment = step.partition("   # ")
            assert command in [line.strip() for line in text.splitlines()] or step in text, where
            assert _flat(comment) in _flat(text.replace("# ", "")), where
    page = r._repr_html_()
    for name, f in figures.items():
        assert html.escape(name) in page and all(f"<td style='text-align:right'>{v}</td>" in page for v in f.values())
    assert all(f"<code>{html.escape(c)}</code>" in page for c in r.next_commands)


def _tour_figures(fmt: str, first_version: int, versions: int) -> dict:
    return {"format": fmt, "rows_written": 3000, "rows_dead_lettered": 15, "dlq_table": f"quickstart.clicks_{fmt}_dlq",
            "versions": versions, "first_version": first_version, "rows_at_first_version": 1005,
            "changes_since_first_version": 1995, "compaction": {"would_rewrite": 36, "files_before": 48, "files_after": 12},
            "expire_dry_run": {"would_expire": 3, "older_than": "7d"}, "rows_now": 3000, "files_now": 12}  # fmt: skip


@pytest.mark.parametrize("run", [1, 2])
def test_quickstart_output_shows_every_figure_at_any_width(run):
    """A result shaped as the tour makes it (an Iceberg snapshot id of 19 digits, Delta's small versions): at 80
    columns rich once squeezed the figures' columns to nothing and the commands' comments into fragments."""
    r = QuickstartResult(run, "127.0.0.1:9092", TOPIC, 3000, 15, duration_s=95.2)
    r.tables["quickstart.clicks_iceberg"] = _tour_figures("iceberg", 4862117395512345678, 6)
    r.tables["quickstart.clicks_delta"] = _tour_figures("delta", 1, 7)
    r.next_commands = _next_commands(r, "quickstart.clicks_iceberg", "quickstart.clicks_delta")
    assert_shows_everything(r)


@pytest.mark.spark
@pytest.mark.kafka
@pytest.mark.slow
def test_quickstart_twice(cli, catalog):
    port = str(free_port())
    code, out, err = cli("quickstart", "--port", port, "--events", "400", "--json")
    assert code == 0, err
    first = json.loads(out)
    assert first["run"] == 1 and set(first["tables"]) == {"quickstart.clicks_iceberg", "quickstart.clicks_delta"}
    for name, s in first["tables"].items():
        assert s["rows_written"] == 400 and s["rows_dead_lettered"] == 15, name
        assert s["rows_now"] == 400
        assert s["versions"] >= 2 and 0 < s["rows_at_first_version"] < 400  # the first version with rows
        code, out, _ = cli("history", name, "--json")
        assert code == 0 and len(json.loads(out)) == s["versions"]  # the count `history` shows
        assert s["changes_since_first_version"] == 400 - s["rows_at_first_version"]
        assert s["compaction"]["files_after"] <= s["compaction"]["files_before"]
    assert any(c.startswith("lakecat timetravel") for c in first["next_commands"])
    assert_shows_everything(QuickstartResult(**first))  # the real tour's figures, as people see them

    code, out, err = cli("quickstart", "--port", port, "--events", "200", "--json")
    assert code == 0, err
    second = json.loads(out)
    assert second["run"] == 2
    for name, s in second["tables"].items():
        assert s["rows_written"] == 200, name  # only the new events: exactly once across runs
        assert s["rows_now"] == 600
    from deltalake import DeltaTable

    assert DeltaTable(catalog.entry("quickstart.clicks_delta").location).to_pyarrow_table().num_rows == 600
    assert pyiceberg_catalog(catalog).load_table(("quickstart", "clicks_iceberg")).scan().to_arrow().num_rows == 600
