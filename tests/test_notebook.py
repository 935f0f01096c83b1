"""The example notebook executes headless (nbclient) and shows what it promises."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "tour.ipynb"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook, executed once for the module (it tours both formats in one kernel)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_before = os.environ.get("LAKECAT_HOME")
    tmp_path = tmp_path_factory.mktemp("tour")
    os.environ["LAKECAT_HOME"] = str(tmp_path / "home")  # the kernel inherits it: a private catalog
    try:
        NotebookClient(
            nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        os.environ["LAKECAT_HOME"] = env_before or ""
    return nb


def test_tour_notebook_executes(executed):
    outputs = [o for cell in executed.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [
        o["data"]["text/html"]
        for o in outputs
        if o.output_type == "execute_result" and "text/html" in o.get("data", {})
    ]
    assert html, "results render as HTML tables in Jupyter"


def test_tour_notebook_summary(executed, table_format):
    summary = json.loads(executed.cells[-1].outputs[-1]["text"])
    assert summary[table_format]["rows_written"] == 30 and summary[table_format]["dead_lettered"] == 2
    assert summary[table_format]["rows_now"] == 30 and summary[table_format]["files_after_compaction"] >= 1
