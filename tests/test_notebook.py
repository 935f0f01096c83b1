"""The example notebook executes headless (nbclient) and shows what it promises."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "tour.ipynb"


def test_tour_notebook_executes(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_before = os.environ.get("LAKECAT_HOME")
    os.environ["LAKECAT_HOME"] = str(tmp_path / "home")  # the kernel inherits it: a private catalog
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        os.environ["LAKECAT_HOME"] = env_before or ""
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if o.output_type == "execute_result" and "text/html" in o.get("data", {})]
    assert html, "results render as HTML tables in Jupyter"
    summary = json.loads(nb.cells[-1].outputs[-1]["text"])
    for fmt in ("iceberg", "delta"):
        assert summary[fmt]["rows_written"] == 30 and summary[fmt]["dead_lettered"] == 2
        assert summary[fmt]["rows_now"] == 30 and summary[fmt]["files_after_compaction"] >= 1
