"""`lakecat quickstart` runs to the end on the embedded default, and again (re-runnable)."""

from __future__ import annotations

import json

import pytest
from helpers import pyiceberg_catalog

from lakecat.processes import free_port

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.slow]


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
