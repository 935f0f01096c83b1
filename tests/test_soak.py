"""The chaos soak's short form: the plain event streams of both formats for two minutes (the on-demand form adds the
Debezium CDC streams and runs for 20 minutes: `python -m benchmarks.soak --minutes 20`, see docs/reliability.md).

Real everything: a KRaft broker, `lakecat ingest` processes for both formats (plain and Debezium CDC) killed with
SIGKILL and restarted, the broker restarted, `maintain` looping with forced short windows, a concurrent `upsert`,
the Delta table mirrored as Iceberg; the harness itself compares every table, read by pyiceberg and delta-rs, with what the topics say.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.slow]


def test_short_chaos_soak_loses_and_doubles_nothing(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "benchmarks.soak", "--minutes", "2", "--kills", "1", "--seed", "7", "--no-cdc",
                           "--work", str(tmp_path / "soak")], capture_output=True, text=True, timeout=2400,
                          env=dict(os.environ), check=False, cwd=Path(__file__).resolve().parent.parent)  # fmt: skip
    assert proc.stdout.strip(), proc.stderr[-3000:]
    figures = json.loads(proc.stdout)
    summary = json.dumps({k: v for k, v in figures.items() if k != "tables"}, default=str)
    for fmt, table in figures["tables"].items():
        assert table["ok"], f"{fmt}: {table}; {summary}"
        assert table["lost"] == table["duplicated"] == table["unexpected"] == 0
        assert table["dead_letters_lost"] == table["dead_letters_duplicated"] == 0
        assert table["cdc_keys_wrong"] == table["cdc_duplicated"] == 0
        assert table["events_rows"] == figures["topic_events"] + table["upserted_rows"] > 0
        assert table["dead_letters"] == figures["topic_malformed"] > 0
        assert figures["kills"][fmt] >= 1, summary
    assert figures["broker_restarts"] == 1 and figures["maintenance_runs"] >= 1, summary
    # the Delta table's Iceberg mirror, kept in step through the kills: never wrong, equal to the table after a sync
    mirror = figures["mirrors"]["soak.events_delta"]
    assert mirror["ok"] and mirror["equal_before_sync"] is not False and mirror["rows_as_delta"], summary
    assert proc.returncode == 0, summary
