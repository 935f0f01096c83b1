"""The example notebook executes headless (nbclient) and shows what it promises."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "tour.ipynb"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook, executed once for the module (it tours both formats in one kernel), with a temporary directory
    of its own (``TMPDIR``) that must be empty afterwards: the tour leaves nothing behind."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    tmp_path = tmp_path_factory.mktemp("tour")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env_before = {k: os.environ.get(k) for k in ("TMPDIR", "LAKECAT_CATALOG")}
    os.environ["TMPDIR"] = str(scratch)  # the kernel inherits it: Python's temporary files go there
    os.environ.pop("LAKECAT_CATALOG", None)
    try:
        NotebookClient(
            nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        for k, v in env_before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    nb.metadata["scratch_left"] = sorted(p.name for p in scratch.iterdir())
    return nb


def _html(executed) -> list[str]:
    """The HTML each code cell displays (its result), in order; "" for a cell without one."""
    out = []
    for cell in executed.cells:
        if cell.cell_type != "code":
            continue
        html = [o["data"]["text/html"] for o in cell.outputs
                if o.output_type == "execute_result" and "text/html" in o.get("data", {})]  # fmt: skip
        out.append(html[0] if html else "")
    return out


def test_tour_notebook_executes_and_leaves_nothing_behind(executed):
    outputs = [o for cell in executed.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert executed.metadata["scratch_left"] == [], "the tour left temporary files behind"


def test_tour_notebook_shows_results_as_rows_and_columns(executed):
    """Each result is a small table whose header names its columns, never a dict in a cell."""
    shown = "\n".join(_html(executed))
    for header in (
        "<th[^>]*>table</th><th[^>]*>format</th><th[^>]*>location</th>",  # the catalog's tables
        "<th[^>]*>column</th><th[^>]*>type</th>",  # a table's schema
        "<th[^>]*>version</th><th[^>]*>timestamp</th><th[^>]*>operation</th>",  # history
        "<th[^>]*>_change_type</th>",  # a change range, its rows
        "<th[^>]*>verdict</th>",  # health
        "<th[^>]*>started \\(UTC\\)</th>",  # the maintenance log
        "<th[^>]*>namespace</th><th[^>]*>tables</th>",  # namespaces
    ):
        assert re.search(header, shown), header
    assert ">archive<" in shown and ">tour<" in shown  # the renamed table's new namespace, and the old one
    assert "{'" not in shown and "&#x27;: " not in shown  # no dict rendered into a cell


def test_tour_notebook_summary(executed, table_format):
    summary = json.loads(executed.cells[-1].outputs[-1]["text"])
    assert summary[table_format]["rows_written"] == 30 and summary[table_format]["dead_lettered"] == 2
    assert summary[table_format]["rows_now"] == 30 and summary[table_format]["files_after_compaction"] >= 1
    assert summary["delta"]["name_now"] == "archive.pages_delta"
