"""The maintenance service judges again only the tables that changed: it reads each table's commit pointer (Iceberg's
metadata location, Delta's newest log version) and computes health only where the pointer moved, the policy or the
maintenance runs changed, or a window came due. Tables are written by pyiceberg / delta-rs; health is the real one."""

from __future__ import annotations

import threading
import time
import urllib.request

import pytest
from helpers import light_tables

import lakecat.service as service_module
from lakecat.processes import free_port
from lakecat.service import Service, ServiceOptions, serve

#: No compaction is ever due on the small test tables (the pass then starts no Spark job).
NO_COMPACTION = '[defaults]\ncompact.min-input-files = 1000\norphans.older-than = "30d"\n'


@pytest.fixture
def judged(monkeypatch):
    """table -> the healths the service computed, in order (the real computation, counted)."""
    seen: dict[str, list] = {}
    real = service_module.table_health

    def counting(table, **kw):
        h = real(table, **kw)
        seen.setdefault(table.name, []).append(h)
        return h

    monkeypatch.setattr(service_module, "table_health", counting)
    return seen


def _commit(catalog, name: str) -> None:
    """One more append of 10 rows, by the format's own library (no lakecat code)."""
    import pyarrow as pa
    from deltalake import write_deltalake
    from helpers import pyiceberg_catalog

    entry = catalog.entry(name)
    data = pa.table({"id": pa.array(range(10), pa.int64()), "region": ["eu", "us"] * 5})
    if entry.format == "iceberg":
        pyiceberg_catalog(catalog).load_table((entry.ident.namespace, entry.ident.name)).append(data)
    else:
        write_deltalake(entry.location, data, mode="append", partition_by=["region"])


def _files(catalog, name: str) -> int:
    """The table's live data files, read by pyiceberg / delta-rs."""
    from deltalake import DeltaTable
    from helpers import pyiceberg_catalog

    entry = catalog.entry(name)
    if entry.format == "iceberg":
        return len(pyiceberg_catalog(catalog).load_table((entry.ident.namespace, entry.ident.name)).inspect.files())
    return len(DeltaTable(entry.location).file_uris())


def test_unchanged_tables_cost_no_health_and_a_commit_is_noticed_at_the_next_pass(catalog, ns, tmp_path, judged):
    iceberg, delta = light_tables(catalog, ns, 2)  # t000: Iceberg, t001: Delta, three appends each
    plan = tmp_path / "plan.toml"
    plan.write_text(NO_COMPACTION)
    port = free_port()
    from lakecat.metrics import ServiceExporter

    exporter = ServiceExporter(port, addr="127.0.0.1")
    try:
        service = Service(catalog, ServiceOptions(f"{ns}.*", plan=plan), metrics=exporter)
        first = service.run_pass(1)
        assert (first.tables, first.evaluated, first.unchanged, first.error) == (2, 2, 0, None)
        assert {n: len(hs) for n, hs in judged.items()} == {iceberg: 1, delta: 1}

        second = service.run_pass(2)  # nothing committed: no table is judged again
        assert (second.tables, second.evaluated, second.unchanged) == (2, 0, 2)
        assert {n: len(hs) for n, hs in judged.items()} == {iceberg: 1, delta: 1}
        assert second.verdicts == first.verdicts == {"healthy": 2}

        _commit(catalog, iceberg)
        _commit(catalog, delta)
        third = service.run_pass(3)  # the next pass sees both commits
        assert (third.evaluated, third.unchanged) == (2, 0)
        for name in (iceberg, delta):
            before, after = judged[name]
            assert after.data_files == _files(catalog, name) > before.data_files
            assert after.current_version != before.current_version

        _commit(catalog, delta)  # one table changes, the other is passed over
        fourth = service.run_pass(4)
        assert (fourth.evaluated, fourth.unchanged) == (1, 1) and len(judged[delta]) == 3 and len(judged[iceberg]) == 2

        from lakecat.policy_admin import set_policy

        # a policy the metastore keeps: judged again
        set_policy(catalog, f"{ns}.*", {"health.deleted-rows-percent": "20"})
        fifth = service.run_pass(5)
        assert (fifth.evaluated, fifth.unchanged) == (2, 0)
        assert {h.thresholds["deleted_rows_percent"] for h in (judged[iceberg][-1], judged[delta][-1])} == {20}

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        assert "lakecat_maintenance_tables_evaluated_total 7.0" in text
        assert "lakecat_maintenance_tables_unchanged_total 3.0" in text
    finally:
        exporter.close()


def test_the_service_loop_notices_a_commit_within_one_poll_interval(catalog, ns, tmp_path, judged):
    """In the running service (a pass every second), a commit made after a pass is judged at the very next one."""
    names = light_tables(catalog, ns, 2)
    plan = tmp_path / "plan.toml"
    plan.write_text(NO_COMPACTION)
    stop, seen = threading.Event(), []

    def on_pass(p):
        seen.append(p)
        if len(seen) == 2:  # committed between pass 2 and pass 3
            for name in names:
                _commit(catalog, name)
        if len(seen) == 3:
            stop.set()

    result = serve(catalog, f"{ns}.*", every="1s", plan=plan, stop=stop, on_pass=on_pass)
    assert [(p.evaluated, p.unchanged) for p in seen] == [(2, 0), (0, 2), (2, 0)]
    assert (result.evaluated, result.unchanged) == (4, 2)
    for name in names:  # judged at pass 1 and pass 3 only; the second time with the new commit's file
        before, after = judged[name]
        assert after.data_files == _files(catalog, name) > before.data_files


@pytest.mark.spark
def test_a_window_coming_due_is_judged_and_acted_on_without_a_commit(catalog, spark, ns, tmp_path, judged):
    """No commit, but the expiry window elapses: the table is judged again then, and the service expires it."""
    names = light_tables(catalog, ns, 2)
    window_s = 12  # the first two passes (well under a second) run inside it
    plan = tmp_path / "plan.toml"
    plan.write_text(NO_COMPACTION + f'expire.older-than = "{window_s}s"\nexpire.retain-last = 1\nforce = true\n')
    committed = time.time()
    service = Service(catalog, ServiceOptions(f"{ns}.*", plan=plan))
    first = service.run_pass(1)
    assert first.evaluated == 2 and first.verdicts == {"healthy": 2}
    due = {name: judged[name][-1].next_due for name in names}
    assert all(due.values())  # each table knows when its versions pass the window
    second = service.run_pass(2)
    assert (second.evaluated, second.unchanged, second.queued) == (0, 2, 0)

    time.sleep(max(0.0, committed + window_s + 1 - time.time()))  # the window elapses; nothing is committed
    third = service.run_pass(3)
    assert third.evaluated == 2 and third.verdicts == {"expire": 2}
    assert third.runs["ok"] == 2 and third.runs["failed"] == 0
    iceberg = catalog.entry(names[0])  # light_tables: t000 is Iceberg; pyiceberg sees one snapshot kept
    from helpers import pyiceberg_catalog

    assert len(pyiceberg_catalog(catalog).load_table((iceberg.ident.namespace, iceberg.ident.name)).snapshots()) == 1
    fourth = service.run_pass(4)  # the expiry committed (and was logged): judged again, nothing left to expire
    assert fourth.evaluated == 2 and "expire" not in fourth.verdicts
