"""The maintenance service (maintain --auto --every): passes in process on both formats, the run log, /metrics,
health --html's runs, and a stop by SIGTERM; the tables checked with pyiceberg / delta-rs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import light_tables, read_rows, service_until_first_pass

SCHEMA = "id BIGINT NOT NULL, region STRING, v STRING"
COMMITS = 6  # 12 small files: health's default threshold for compaction
POLICY = {"lakecat.compact.target-file-size": "1MB"}  # every file here is small


def build(catalog, spark, name, fmt, *, commits=COMMITS):
    """Partitioned by region, 2 small files per commit."""
    t = catalog.create_table(name, schema=SCHEMA, format=fmt, partition_by="region", properties=POLICY)
    for i in range(commits):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({2 * i}, 'eu', 'a{i}'), ({2 * i + 1}, 'us', 'b{i}')")
    return t


def rows(catalog, t):
    return sorted((r["id"], r["region"], r["v"]) for r in read_rows(catalog, t))


def files(t):
    from lakecat.maintenance import data_files

    return data_files(t)


def passes(catalog, pattern, count, **kw):
    """Run the service in process for ``count`` passes (a stop set by the last one); returns (result, passes)."""
    from lakecat.service import serve

    stop, seen = threading.Event(), []
    scrape = kw.pop("scrape", None)

    def on_pass(p):
        seen.append(p)
        if scrape is not None:
            scrape(p)
        if len(seen) >= count:
            stop.set()

    return serve(catalog, pattern, every="1s", stop=stop, on_pass=on_pass, **kw), seen


def metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


@pytest.mark.spark
def test_service_compacts_the_urgent_table_logs_and_exports(cli, catalog, spark, ns, table_format, tmp_path):
    from lakecat.processes import free_port

    busy = build(catalog, spark, f"{ns}.busy", table_format)
    calm = build(catalog, spark, f"{ns}.calm", table_format, commits=1)
    before, calm_files = rows(catalog, busy), len(files(calm))
    port, scraped = free_port(), []

    result, seen = passes(catalog, f"{ns}.*", 2, metrics_port=port, scrape=lambda p: scraped.append(metrics(port)))
    first, second = seen
    assert (first.tables, first.queued, first.worked, first.deferred) == (2, 1, 1, 0), first
    assert first.runs["ok"] >= 1 and first.runs["failed"] == 0 and first.bytes_rewritten > 0
    assert second.queued == 0 and second.verdicts == {"healthy": 2}, second  # nothing left to do
    assert result.passes == 2 and result.runs["failed"] == 0
    # the data, read by pyiceberg / delta-rs: the same rows in one file per partition; the calm table untouched
    assert rows(catalog, busy) == before and len(files(busy)) == 2 and len(files(calm)) == calm_files
    assert 'lakecat_maintenance_runs_total{action="compact",outcome="ok"} 1.0' in scraped[0]
    assert 'lakecat_maintenance_tables{verdict="compact"} 1.0' in scraped[0]
    assert "lakecat_maintenance_queue_depth 0.0" in scraped[0]
    assert 'lakecat_maintenance_tables{verdict="healthy"} 2.0' in scraped[1]

    # the run log: one compaction of the whole table by the service
    code, out, err = cli("maintenance-log", f"{ns}.*", "--since", "1h", "--json")
    assert code == 0, err
    log = json.loads(out)
    compactions = [r for r in log if r["action"] == "compact"]
    assert len(compactions) == 1, log
    run = compactions[0]
    assert (run["table"], run["outcome"], run["tier"], run["source"]) == (busy.name, "ok", "major", "service")
    assert (run["files_before"], run["files_after"]) == (2 * COMMITS, 2)
    assert run["seconds"] > 0 and run["started"].endswith("Z") and run["error"] is None
    assert run["bytes_rewritten"] > 0 and run["bytes_before"] >= run["bytes_after"] > 0

    # new data in one partition: the next pass compacts only that partition (the minor tier)
    spark.sql(f"INSERT INTO {busy.spark_name} VALUES (100, 'eu', 'new')")
    passes(catalog, busy.name, 1)
    latest = json.loads(cli("maintenance-log", busy.name, "--json")[1])[0]
    assert (latest["action"], latest["outcome"], latest["tier"]) == ("compact", "ok", "minor"), latest
    assert (latest["files_before"], latest["files_after"]) == (3, 2)
    assert len(rows(catalog, busy)) == 2 * COMMITS + 1

    page = tmp_path / "health.html"
    code, _, err = cli("health", f"{ns}.*", "--html", str(page))
    assert code == 0, err
    html = page.read_text()
    assert "recent maintenance runs" in html and 'data-outcome="ok"' in html and "compact (minor)" in html


@pytest.mark.spark
def test_parallel_pass_works_tables_of_both_formats_at_once(cli, catalog, spark, ns):
    """--parallel 2: one pass works an Iceberg and a Delta table at the same time on the one session; both end up
    compacted with the same rows (pyiceberg / delta-rs), and the run log's two compactions overlap in time."""
    tables = [build(catalog, spark, f"{ns}.par_{fmt}", fmt) for fmt in ("iceberg", "delta")]
    before = {t.name: rows(catalog, t) for t in tables}
    result, (first,) = passes(catalog, f"{ns}.par_*", 1, parallel=2)
    assert (first.queued, first.worked, first.deferred) == (2, 2, 0), first
    assert first.runs["failed"] == 0 and result.runs["failed"] == 0
    for t in tables:
        assert rows(catalog, t) == before[t.name] and len(files(t)) == 2, t.name
    log = json.loads(cli("maintenance-log", f"{ns}.par_*", "--json")[1])
    spans = []
    for run in (r for r in log if r["action"] == "compact"):
        assert run["outcome"] == "ok" and run["source"] == "service", run
        start = datetime.fromisoformat(run["started"].replace("Z", "+00:00"))
        spans.append((start, start + timedelta(seconds=run["seconds"])))
    assert len(spans) == 2, log
    (a0, a1), (b0, b1) = spans
    assert a0 < b1 and b0 < a1, spans  # one began before the other ended


def test_sigterm_stops_the_service_with_exit_0(lakecat_home, ns):
    """Nothing matches (--allow-empty: the service waits for tables): no JVM starts, so a stop by SIGTERM costs a
    second or two."""
    env = {**os.environ, "LAKECAT_HOME": str(lakecat_home)}
    code, out, err = service_until_first_pass([sys.executable, "-m", "lakecat.commands.main", "maintain", f"{ns}.*",
                                               "--auto", "--every", "1s", "--allow-empty", "--json"], env)  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["stopped_by"] == "SIGTERM" and doc["passes"] >= 1 and doc["runs"] == {"ok": 0, "failed": 0, "skipped": 0}


@pytest.mark.spark
def test_kill_9_of_the_service_leaves_nothing_half_done(cli, catalog, spark, lakecat_home, ns):
    """The service killed with SIGKILL (its JVM with it) while it compacts an Iceberg and a Delta table that
    pyiceberg and delta-rs wrote: whatever moment the kill lands, each table reads the same rows (pyiceberg /
    delta-rs) and every file its current version lists exists; what the killed rewrite wrote and did not commit is an
    orphan, which clean-orphans removes once it is past the window (the files are aged: Delta counts the window in
    whole hours), so afterwards every new file is one the table uses."""
    from lakecat.files import local_path, norm_path

    names = light_tables(catalog, ns, 2, commits=30)
    tables = {n: catalog.load_table(n) for n in names}

    def on_disk(t):
        root = local_path(t.location)
        return {
            norm_path(str(p))
            for p in root.rglob("*.parquet")
            if "_delta_log" not in p.parts and "metadata" not in p.parts
        }

    def current(t):
        return {norm_path(str(local_path(f.path))) for f in files(t)}

    before = {n: (sorted(r["id"] for r in read_rows(catalog, n)), on_disk(t)) for n, t in tables.items()}
    env = {**os.environ, "LAKECAT_HOME": str(lakecat_home)}
    proc = subprocess.Popen([sys.executable, "-m", "lakecat.commands.main", "maintain", f"{ns}.*", "--auto", "--every",
                             "1s", "--json"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if any(on_disk(t) - before[n][1] for n, t in tables.items()):  # a rewrite is writing
                break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    for n, t in tables.items():
        assert sorted(r["id"] for r in read_rows(catalog, n)) == before[n][0], n
        assert all(Path(f).exists() for f in current(t)), n  # the version the table is at is whole
    aged = time.time() - 7200  # past the orphan window (Delta's VACUUM counts it in whole hours)
    for n, t in tables.items():
        for path in on_disk(t) - before[n][1]:
            os.utime(path, (aged, aged))
        code, _, err = cli("clean-orphans", n, "--older-than", "1h", "--force", "--json")
        assert code == 0, err
        new = on_disk(t) - before[n][1]
        assert new <= current(t), (n, sorted(new - current(t))[:3])  # a new file left is one the table uses
        assert sorted(r["id"] for r in read_rows(catalog, n)) == before[n][0], n


@pytest.mark.spark
def test_delta_orphans_past_the_window_are_removed(cli, catalog, spark, ns, tmp_path):
    """An untracked file (what a killed rewrite leaves) two hours old in a Delta table delta-rs wrote:
    clean-orphans --older-than 1h removes it."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    location = tmp_path / "orphans"
    for _ in range(2):
        write_deltalake(str(location), pa.table({"id": pa.array([1], pa.int64()), "region": ["eu"]}), mode="append",
                        partition_by=["region"])  # fmt: skip
    catalog.register_table(f"{ns}.orphans", location=str(location))
    orphan = location / "region=eu" / "part-00000-0badf11e-0000-0000-0000-000000000000.c000.snappy.parquet"
    pq.write_table(pa.table({"id": pa.array([2], pa.int64())}), str(orphan))
    aged = time.time() - 7200
    os.utime(orphan, (aged, aged))
    code, _, err = cli("clean-orphans", f"{ns}.orphans", "--older-than", "1h", "--force", "--json")
    assert code == 0, err
    assert not orphan.exists()


def test_queue_order_tiers_and_budget():
    """How a pass chooses, from health figures alone (no table, no JVM)."""
    from lakecat.results import TableHealth, VersionPoint
    from lakecat.service import PassResult, QueueItem, Service, ServiceOptions, plan_item, urgency, without_futile

    def health(name, **kw):
        return TableHealth(name, "any", kw.pop("verdict", "healthy"), "", **kw)

    mib, hour_ms, now_ms = 2**20, 3_600_000, 1_800_000_000_000
    big = health("a.big", verdict="compact", needs=["compact"], data_files=400, compactable_small_files=300,
                 data_bytes=50_000 * mib)  # fmt: skip
    small = health("a.small", verdict="compact", needs=["compact", "expire"], data_files=20, compactable_small_files=15,
                   data_bytes=mib)  # fmt: skip
    tidy = health("a.tidy", data_files=4, data_bytes=400 * mib)
    assert urgency(big) > urgency(small) > urgency(tidy) == 0
    assert plan_item(tidy, {}, None, now_ms) is None
    item = plan_item(small, {}, None, now_ms)
    assert (item.actions, item.tier, item.since) == (["compact", "expire"], "major", None)

    # small files below health's threshold: a major compaction once per major-every, else minor after new data
    timeline = [VersionPoint(1, "2027-01-15T08:00:00Z", "compact"), VersionPoint(2, "2027-01-15T08:20:00Z", "append")]
    recent = health("a.recent", data_files=6, compactable_small_files=3, max_partition_small_files=3,
                    last_compaction="2027-01-15T08:00:00Z", timeline=timeline)  # fmt: skip
    last_major = now_ms - hour_ms
    item = plan_item(recent, {}, last_major, now_ms)
    assert (item.actions, item.tier, item.since) == (["compact"], "minor", "2027-01-15T08:00:00.000Z")
    item = plan_item(recent, {"lakecat.compact.major-every": "30m"}, last_major, now_ms)
    assert (item.tier, item.since) == ("major", None)
    assert plan_item(recent, {"lakecat.compact.min-input-files": "5"}, last_major, now_ms) is None
    # the compaction counts its input per partition: six small files in three partitions of two do not reach three
    spread = health("a.spread", data_files=6, compactable_small_files=6, max_partition_small_files=2, timeline=timeline)
    assert plan_item(spread, {"lakecat.compact.min-input-files": "3"}, last_major, now_ms) is None
    assert plan_item(spread, {}, last_major, now_ms).tier == "minor"
    # a write committed while that compaction ran (it began 08:00, committed 08:30): the next minor pass covers it
    during = health("a.during", data_files=6, compactable_small_files=3, max_partition_small_files=3,
                    last_compaction="2027-01-15T08:30:00Z", timeline=timeline)  # fmt: skip
    began_ms = int(datetime(2027, 1, 15, 8, 0, tzinfo=UTC).timestamp() * 1000)
    assert plan_item(during, {}, last_major, now_ms) is None
    item = plan_item(during, {}, last_major, now_ms, last_compact_started_ms=began_ms)
    assert (item.tier, item.since) == ("minor", "2027-01-15T08:00:00.000Z")
    # a purge that rewrote nothing (the engine keeps a file it judges done) is not asked again before new data
    purge = health("a.purge", verdict="purge", needs=["purge", "expire"], data_files=2, timeline=timeline)
    data_ms = int(datetime(2027, 1, 15, 8, 20, tzinfo=UTC).timestamp() * 1000)
    assert without_futile(plan_item(purge, {}, None, now_ms), purge, data_ms + 1).actions == ["expire"]
    assert without_futile(plan_item(purge, {}, None, now_ms), purge, data_ms - 1).actions == ["purge", "expire"]
    assert without_futile(plan_item(purge, {}, None, now_ms), purge, None).actions == ["purge", "expire"]
    recent.timeline = timeline[:1]  # no data since the last compaction: nothing to do until major-every
    assert plan_item(recent, {}, last_major, now_ms) is None

    # a spent budget (or a stop) starts nothing: every queued table waits for the next pass
    service = Service(None, ServiceOptions(every=timedelta(minutes=1)))  # type: ignore[arg-type]
    p = PassResult(1, "", queued=2)
    service._work([QueueItem("a.big", 2.0, ["compact"], "compact", ""), QueueItem("a.small", 1.0, ["expire"], "", "")],
                  p, deadline=time.monotonic() - 1)  # fmt: skip
    assert (p.worked, p.deferred) == (0, 2)


def test_an_unreadable_table_does_not_stop_the_pass(catalog, ns, tmp_path):
    """A table whose log is gone (deleted behind the catalog's back) is counted failed; the others are still judged.
    No JVM: delta-rs writes the tables."""
    import shutil

    import deltalake
    import pyarrow as pa

    from lakecat.service import PassResult, Service, ServiceOptions

    for name in ("good", "gone"):
        location = str(tmp_path / name)
        for i in range(3):  # three small files in one partition: due for compaction
            deltalake.write_deltalake(location, pa.table({"id": pa.array([i], pa.int64())}), mode="append")
        catalog.register_table(f"{ns}.{name}", location=location)
    log_dir = tmp_path / "gone" / "_delta_log"
    shutil.move(log_dir, tmp_path / "log-aside")
    try:
        service = Service(catalog, ServiceOptions(every=timedelta(minutes=1), pattern=f"{ns}.*"))
        p = PassResult(1, "")
        queue = service._queue(p)
    finally:  # the session's catalog is shared: leave no broken table behind for later tests
        shutil.move(tmp_path / "log-aside", log_dir)
    assert p.tables >= 1 and p.verdicts.get("failed") == 1
    assert [i.table for i in queue] == [f"{ns}.good"]
