"""lakecat ingest: Kafka and landed files into both formats, exactly once, with a dead-letter table.

Every count is checked with an independent reader (pyiceberg / delta-rs), never through lakecat or Spark.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers import committed_versions, new_topic, read_rows

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

SCHEMA = "id BIGINT NOT NULL, ts TIMESTAMP, name STRING, amt DECIMAL(10,2)"
BAD_KINDS = {
    "invalid_json": lambda i: f'{{"id": {i}, "name": '.encode(),
    "not_utf8": lambda i: b'{"id": ' + str(i).encode() + b', "name": "\xff\xfe"}',
    "type_mismatch": lambda i: json.dumps({"id": f"x{i}", "name": "wrong"}).encode(),
    "missing_required": lambda i: json.dumps({"name": f"no id {i}", "amt": 1.5}).encode(),
}


def good_event(i: int) -> bytes:
    return json.dumps({"id": i, "ts": f"2026-01-{1 + i % 28:02d}T{i % 24:02d}:00:00", "name": f"n{i}",
                       "amt": round(i / 100, 2)}).encode()  # fmt: skip


def events(n_good: int, n_bad_each: int) -> list[bytes]:
    """Good events with ids 0..n_good-1 and n_bad_each of every bad kind, mixed in."""
    out = [good_event(i) for i in range(n_good)]
    step = max(1, n_good // (n_bad_each * len(BAD_KINDS) + 1))
    pos = 0
    for j in range(n_bad_each):
        for make in BAD_KINDS.values():
            pos = (pos + step) % len(out)
            out.insert(pos, make(100_000 + j))
    return out


# --- bad input: clear errors before anything starts ------------------------------------------
def test_unknown_table_exits_1(cli, ns):
    code, out, err = cli("ingest", f"{ns}.missing", "--kafka", "127.0.0.1:1", "--topic", "x", "--json")
    assert code == 1
    assert json.loads(out)["error"]["type"] == "TableNotFoundError"
    assert "not found" in err and "Traceback" not in err


def test_usage_errors_exit_2(cli, ns):
    code, _, err = cli("ingest", f"{ns}.t", "--kafka", "127.0.0.1:1")
    assert code == 2 and "--topic" in err
    code, _, err = cli("ingest", f"{ns}.t", "--kafka", "127.0.0.1:1", "--topic", "x", "--files", "/tmp")
    assert code == 2
    code, _, err = cli("ingest", f"{ns}.t", "--files", "/nonexistent/dir")
    assert code == 2 and "not a directory" in err
    code, _, err = cli("ingest", f"{ns}.t", "--files", "/tmp", "--dead-letter-every", "0s")
    assert (
        code == 2 and "--dead-letter-every '0s': use a positive duration" in err and len(err.strip().splitlines()) == 1
    )


def test_event_time_must_be_a_timestamp_column(cli, catalog, ns, table_format, tmp_path):
    """--event-time names a timestamp column of the table: another type is exit 2 in one line, before any stream."""
    catalog.create_table(f"{ns}.evt", schema=SCHEMA, format=table_format)
    (tmp_path / "landing").mkdir()
    code, out, err = cli("ingest", f"{ns}.evt", "--files", tmp_path / "landing", "--dedupe-key", "id",
                         "--watermark", "1h", "--event-time", "name", "--json")  # fmt: skip
    assert code == 2 and "Traceback" not in err, err
    assert (
        json.loads(out)["error"]["message"] == f"--event-time: column name of table {ns}.evt is STRING, not a timestamp"
    )


def test_unreachable_broker_and_missing_topic(cli, catalog, ns, kafka_bootstrap):
    catalog.create_table(f"{ns}.t", schema=SCHEMA, format="delta")
    started = time.monotonic()
    code, out, err = cli("ingest", f"{ns}.t", "--kafka", "127.0.0.1:9", "--topic", "x", "--json")
    assert code == 1 and time.monotonic() - started < 20
    assert "cannot reach Kafka at 127.0.0.1:9" in json.loads(out)["error"]["message"]
    code, out, err = cli("ingest", f"{ns}.t", "--kafka", kafka_bootstrap, "--topic", "no_such_topic", "--json")
    assert code == 1 and "topic no_such_topic does not exist" in err
    code, out, err = cli("ingest", f"{ns}.t", "--kafka", kafka_bootstrap, "--topic-pattern", "zz_nothing_.*")
    assert code == 1 and "matches the pattern" in err
    assert not catalog.table_exists(f"{ns}.t_dlq")  # nothing was started, nothing created


# --- the "done when" scenario ------------------------------------------------------------------
def test_kafka_available_now_with_dead_letters(cli, catalog, ns, kafka_bootstrap, table_format, tmp_path, request):
    from lakecat.kafka_local import produce

    topic = new_topic(kafka_bootstrap)
    n_good, n_bad_each = 3000, 60
    produce(kafka_bootstrap, topic, events(n_good, n_bad_each))
    name = f"{ns}.orders"
    catalog.create_table(name, schema=SCHEMA, format=table_format, partition_by=["days(ts)"])
    metrics = tmp_path / "metrics.jsonl"

    code, out, err = cli("ingest", name, "--kafka", kafka_bootstrap, "--topic", topic, "--trigger", "available-now",
                         "--max-records-per-batch", "1200", "--metrics-file", str(metrics), "--json")  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["rows_written"] == n_good
    assert report["rows_dead_lettered"] == n_bad_each * len(BAD_KINDS)
    assert report["batches"] >= 3 and report["duration_s"] > 0 and report["dlq_table"] == f"{name}_dlq"
    # the dead letters are staged by each batch and committed together (at the end; a long run every minute)
    assert committed_versions(catalog, f"{name}_dlq") < report["batches"] or request.config.getoption("--spark-connect")

    rows = read_rows(catalog, name)
    assert len(rows) == n_good and {r["id"] for r in rows} == set(range(n_good))
    dead = read_rows(catalog, f"{name}_dlq")
    assert Counter(r["error"] for r in dead) == {kind: n_bad_each for kind in BAD_KINDS}
    assert all(r["kafka_topic"] == topic and r["kafka_offset"] is not None and r["kafka_partition"] in (0, 1, 2)
               and r["raw_value"] and r["ingest_time"] and r["kafka_timestamp"] for r in dead)  # fmt: skip
    assert len({(r["kafka_partition"], r["kafka_offset"]) for r in dead}) == len(dead)
    sent = [make(100_000 + j) for j in range(n_bad_each) for make in BAD_KINDS.values()]
    assert sorted(r["raw_value"] for r in dead) == sorted(sent)  # the bytes as produced, not UTF-8 ones only
    assert all(abs(r["kafka_timestamp"].timestamp() - time.time()) < 3600 for r in dead)
    # the detail is computed from the raw value in the dead-letter write (the stream's batches do not carry it)
    details = {
        "invalid_json": "value is not a JSON object",
        "not_utf8": "value is not valid UTF-8",
        "type_mismatch": "wrong type: id (expected BIGINT)",
        "missing_required": "missing required field: id",
    }
    assert all(r["error_detail"] == details[r["error"]] for r in dead), {(r["error"], r["error_detail"]) for r in dead}
    assert all(r["raw_text"] is None for r in dead if r["error"] == "not_utf8")
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert sum(line["rows_written"] for line in lines) == n_good and all("lag" in line for line in lines)
    assert sum((Counter(line["dead_lettered_by_reason"]) for line in lines), Counter()) == {
        k: n_bad_each for k in BAD_KINDS
    }
    # every record read once: a batch with dead letters is scanned twice (table, DLQ) and Spark counts both scans
    assert all(line["input_rows"] == line["rows_written"] + line["rows_dead_lettered"] for line in lines), lines
    assert sum(line["input_rows"] for line in lines) == n_good + n_bad_each * len(BAD_KINDS)

    versions = (committed_versions(catalog, name), committed_versions(catalog, f"{name}_dlq"))
    code, out, err = cli("ingest", name, "--kafka", kafka_bootstrap, "--topic", topic, "--json")
    assert code == 0, err
    again = json.loads(out)
    assert again["rows_written"] == 0 and again["rows_dead_lettered"] == 0
    assert (committed_versions(catalog, name), committed_versions(catalog, f"{name}_dlq")) == versions
    assert len(read_rows(catalog, name)) == n_good

    # A crash after the table commits but before Spark's checkpoint does: Spark replays the batch, lakecat skips it.
    commits = Path(report["checkpoint"].removeprefix("file://")) / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    for f in (commits / str(last), commits / f".{last}.crc"):  # as if the commit-log entry was never written
        f.unlink(missing_ok=True)
    code, out, err = cli("ingest", name, "--kafka", kafka_bootstrap, "--topic", topic, "--json")
    assert code == 0, err
    replay = json.loads(out)
    assert (replay["rows_written"], replay["rows_dead_lettered"], replay["batches_skipped"]) == (0, 0, 1)
    assert (committed_versions(catalog, name), committed_versions(catalog, f"{name}_dlq")) == versions
    assert len(read_rows(catalog, name)) == n_good and len(read_rows(catalog, f"{name}_dlq")) == len(dead)


def test_no_dlq_fails_and_writes_nothing(cli, catalog, ns, kafka_bootstrap):
    from lakecat.kafka_local import produce

    topic = new_topic(kafka_bootstrap, partitions=1)
    produce(kafka_bootstrap, topic, [good_event(1), b"{broken", good_event(2)])
    name = f"{ns}.strict"
    catalog.create_table(name, schema=SCHEMA, format="iceberg")
    code, out, err = cli("ingest", name, "--kafka", kafka_bootstrap, "--topic", topic, "--no-dlq", "--json")
    assert code == 1
    assert "--no-dlq" in json.loads(out)["error"]["message"] and "(invalid_json: value is not a JSON object)" in err
    assert read_rows(catalog, name) == [] and not catalog.table_exists(f"{name}_dlq")


# --- exactly once across kill -9 ---------------------------------------------------------------
def _lakecat(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "lakecat.commands.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, env=dict(os.environ), **kw)  # fmt: skip


@pytest.mark.slow
def test_kill_9_mid_stream_then_restart_is_exactly_once(catalog, ns, kafka_bootstrap, table_format, request):
    from lakecat.kafka_local import produce

    topic = new_topic(kafka_bootstrap)
    n = 3000
    produce(kafka_bootstrap, topic, [good_event(i) for i in range(n)] + [b"bad"] * 10)
    name = f"{ns}.crash"
    catalog.create_table(name, schema=SCHEMA, format=table_format)
    base = ("ingest", name, "--kafka", kafka_bootstrap, "--topic", topic)

    proc = _lakecat(*base, "--max-records-per-batch", "150", "--trigger", "available-now", "--json")
    deadline = time.monotonic() + 420  # a JVM start and first batches on a loaded 2-core runner
    try:
        while committed_versions(catalog, name) < (3 if table_format == "delta" else 2):  # a few batches committed
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no batch committed in time"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the ingest process and its JVM, mid-stream
        proc.wait()
    partial = read_rows(catalog, name)
    assert 0 < len(partial) and len({r["id"] for r in partial}) == len(partial)
    # Through Spark Connect the stream runs in the engine and outlives the killed process (the restart takes it over)
    assert len(partial) < n or request.config.getoption("--spark-connect")

    # Restart as a continuous stream; once everything is in, SIGTERM stops it cleanly after the batch in flight.
    proc = _lakecat(*base, "--max-records-per-batch", "1500", "--trigger", "every 1s", "--json")
    try:
        while len(read_rows(catalog, name)) < n:
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline + 120, "restart did not catch up"
            time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err[-2000:]
    report = json.loads(out)
    assert report["stopped_by"] == "signal"
    rows = read_rows(catalog, name)
    assert len(rows) == n and {r["id"] for r in rows} == set(range(n))
    dead = read_rows(catalog, f"{name}_dlq")
    assert len(dead) == 10 and len({(r["kafka_partition"], r["kafka_offset"]) for r in dead}) == 10


@pytest.mark.slow
def test_staged_dead_letters_survive_kill_9_and_land_once(catalog, ns, kafka_bootstrap, table_format, request,
                                                         tmp_path):  # fmt: skip
    """A batch's dead letters are staged beside the checkpoint and committed to the dead-letter table together; a run
    killed with letters staged leaves them there and the next run commits them first: each bad record lands once."""
    from lakecat.kafka_local import produce

    if request.config.getoption("--spark-connect"):
        pytest.skip("in a Spark Connect engine each batch commits its own dead letters: nothing is staged")
    topic = new_topic(kafka_bootstrap, partitions=1)
    n, every = 3000, 100
    records = []
    for i in range(n):
        records.append(good_event(i))
        if i % every == every - 1:  # a bad record in every batch, as a producer's bug makes them
            records.append(BAD_KINDS["invalid_json"](i))
    produce(kafka_bootstrap, topic, records)
    name = f"{ns}.staged"
    catalog.create_table(name, schema=SCHEMA, format=table_format)
    checkpoint = tmp_path / "ckpt"
    staged = checkpoint / "_lakecat_dead_letters"
    base = ("ingest", name, "--kafka", kafka_bootstrap, "--topic", topic, "--checkpoint", str(checkpoint), "--json")

    proc = _lakecat(*base, "--max-records-per-batch", "150", "--trigger", "available-now")
    deadline = time.monotonic() + 420
    try:
        while len(list(staged.glob("batch-*.parquet"))) < 2:
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no dead letters staged in time"
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    left = {p.name for p in staged.glob("batch-*.parquet")}
    assert left  # the killed run's staged letters are still there

    proc = _lakecat(*base, "--max-records-per-batch", "1500", "--trigger", "available-now")
    out, err = proc.communicate(timeout=420)
    assert proc.returncode == 0, err[-2000:]
    rows = read_rows(catalog, name)
    assert len(rows) == n and {r["id"] for r in rows} == set(range(n))
    dead = read_rows(catalog, f"{name}_dlq")
    assert len(dead) == n // every and len({r["kafka_offset"] for r in dead}) == n // every
    assert {r["error"] for r in dead} == {"invalid_json"} and all(r["raw_value"] for r in dead)
    assert not list(staged.glob("batch-*.parquet"))  # committed, then removed
    assert _committed_light(catalog, f"{name}_dlq", table_format)  # by pyiceberg / delta-rs: no Spark job for them


def _committed_light(catalog, name: str, table_format: str) -> bool:
    """Whether the table's newest commit was written by the format's light library, not Spark."""
    entry = catalog.entry(name)
    if table_format == "iceberg":
        from helpers import pyiceberg_catalog

        snap = pyiceberg_catalog(catalog).load_table((entry.ident.namespace, entry.ident.name)).current_snapshot()
        props = snap.summary.additional_properties
        return "spark.app.id" not in props and props.get("lakecat.query-id", "").endswith("-dlq")
    from deltalake import DeltaTable

    info = DeltaTable(entry.location).history(1)[0]
    return "delta-rs" in str(info.get("clientVersion") or info.get("engineInfo") or "")


# --- the Python twin, a continuous trigger in the background ----------------------------------
def test_python_api_background_handle(catalog, ns, kafka_bootstrap):
    import lakecat
    from lakecat.kafka_local import produce

    topic = new_topic(kafka_bootstrap, partitions=2)
    produce(kafka_bootstrap, topic, [good_event(i) for i in range(100)])
    name = f"{ns}.live"
    catalog.create_table(name, schema=SCHEMA, format="delta")
    handle = catalog.ingest(name, lakecat.KafkaSource(kafka_bootstrap, topic), trigger="every 1s", background=True)
    try:
        deadline = time.monotonic() + 90
        while handle.report().rows_written < 100:
            assert handle.is_active and time.monotonic() < deadline
            time.sleep(0.3)
        produce(kafka_bootstrap, topic, [good_event(i) for i in range(100, 150)] + [b"[1, 2]"])
        while handle.report().rows_written < 150 or handle.report().rows_dead_lettered < 1:
            assert handle.is_active and time.monotonic() < deadline
            time.sleep(0.3)
    finally:
        report = handle.stop()
    assert not handle.is_active
    assert report.rows_written == 150 and report.rows_dead_lettered == 1 and report.stopped_by == "stopped"
    assert isinstance(report, lakecat.results.Result) and report.to_dict()["rows_written"] == 150
    assert len(read_rows(catalog, name)) == 150


def test_dead_letter_every_sets_when_staged_dead_letters_are_committed(catalog, ns, kafka_bootstrap, table_format,
                                                                       request, tmp_path):  # fmt: skip
    """--dead-letter-every: a stream with a short delay commits its staged dead letters to the dead-letter table while
    it runs (the commit follows the first batch after the delay); one with a long delay runs batch after batch with
    them still staged, and commits them when it stops. The dead-letter tables are read by an independent reader."""
    import lakecat
    from lakecat.errors import InvalidArgumentError
    from lakecat.kafka_local import produce

    if request.config.getoption("--spark-connect"):
        pytest.skip("in a Spark Connect engine each batch commits its own dead letters: nothing is staged")
    for bad in ("0s", "-1", "soon", 0):
        with pytest.raises(InvalidArgumentError, match="dead_letter_every="):
            lakecat.IngestOptions(dead_letter_every=bad)
    with pytest.raises(InvalidArgumentError, match="dlq=False"):
        lakecat.IngestOptions(dlq=False, dead_letter_every="1s")

    def run(name: str, every: str) -> tuple[list[dict], list[dict], Path]:
        """Bad records, then a good record per second until the dead letters are in the table (short delay) or
        five batches ran past the bad ones with them staged (long delay): the dead-letter rows seen while the stream
        ran, those after it stopped, and the staging directory."""
        topic = new_topic(kafka_bootstrap, partitions=1)
        produce(kafka_bootstrap, topic, [good_event(0), BAD_KINDS["invalid_json"](1), BAD_KINDS["type_mismatch"](2)])
        catalog.create_table(name, schema=SCHEMA, format=table_format)
        checkpoint = tmp_path / name
        handle = catalog.ingest(name, lakecat.KafkaSource(kafka_bootstrap, topic), trigger="every 1s",
                                checkpoint=str(checkpoint), dead_letter_every=every, background=True)  # fmt: skip
        seen: list[dict] = []
        try:
            deadline = time.monotonic() + 300
            while handle.report().rows_dead_lettered < 2:
                assert handle.is_active and time.monotonic() < deadline, "the bad records were not read"
                time.sleep(0.3)
            staged_at = handle.report().batches
            i = 1
            while not seen and handle.report().batches < staged_at + 5:
                assert handle.is_active and time.monotonic() < deadline, "no batches after the bad records"
                produce(kafka_bootstrap, topic, [good_event(i)])  # commits happen at the end of a batch
                i += 1
                time.sleep(1)
                seen = read_rows(catalog, f"{name}_dlq")
            assert handle.is_active
        finally:
            handle.stop()
        return seen, read_rows(catalog, f"{name}_dlq"), checkpoint / "_lakecat_dead_letters"

    seen, after, staged = run(f"{ns}.soon", "1s")
    assert sorted(r["error"] for r in seen) == ["invalid_json", "type_mismatch"]  # in the table while it ran
    assert len(after) == 2 and not list(staged.glob("batch-*.parquet"))
    seen, after, staged = run(f"{ns}.late", "1h")
    assert seen == []  # five batches later, still staged
    assert sorted(r["error"] for r in after) == ["invalid_json", "type_mismatch"]  # committed when it stopped
    assert not list(staged.glob("batch-*.parquet"))


# --- schema evolution, unknown fields, metadata columns, dedupe --------------------------------
def test_unknown_fields_counted_then_merged(catalog, ns, kafka_bootstrap, table_format):
    import lakecat
    from lakecat.kafka_local import produce

    topic = new_topic(kafka_bootstrap, partitions=1)
    produce(kafka_bootstrap, topic, [json.dumps({"id": i, "name": "a", "color": "red", "size": i * 2}).encode()
                                     for i in range(20)])  # fmt: skip
    name = f"{ns}.evolve"
    catalog.create_table(name, schema="id BIGINT NOT NULL, name STRING", format=table_format)
    report = catalog.ingest(
        name,
        lakecat.KafkaSource(kafka_bootstrap, topic),
        checkpoint=str(catalog.config.warehouse_path / "ck" / ns / "a"),
    )
    # the default checks one record in 16 (offsets 0 and 16 here)
    assert report.rows_written == 20 and report.unknown_fields == 2 and report.unknown_fields_checked == 2
    assert report.unknown_field_names == ["color", "size"]
    assert set(read_rows(catalog, name)[0]) == {"id", "name"}
    # a consumer setting of the user's own replaces lakecat's default for Spark's reader (and stays away from the
    # admin client, which refused such names before)
    report = catalog.ingest(name, lakecat.KafkaSource(kafka_bootstrap, topic, options={"fetch.max.wait.ms": "200"}),
                            count_unknown_fields="all", dlq=False, checkpoint=str(catalog.config.warehouse_path / "ck" / ns / "c"))  # fmt: skip
    assert (
        report.unknown_fields == 20
        and report.unknown_fields_checked == 20
        and report.unknown_field_names == ["color", "size"]
    )
    assert len(read_rows(catalog, name)) == 40

    report = catalog.ingest(name, lakecat.KafkaSource(kafka_bootstrap, topic, with_metadata=True), merge_schema=True,
                            checkpoint=str(catalog.config.warehouse_path / "ck" / ns / "b"))  # fmt: skip
    assert report.rows_written == 20 and report.added_columns == ["color", "size"]
    rows = [r for r in read_rows(catalog, name) if r.get("color") is not None]
    assert len(rows) == 20 and {r["size"] for r in rows} == {i * 2 for i in range(20)}
    assert {r["_kafka_offset"] for r in rows} == set(range(20)) and all(r["_kafka_topic"] == topic for r in rows)
    cols = {c.name: c.type for c in catalog.load_table(name).describe().schema}
    assert cols["color"] == "STRING" and cols["size"] == "BIGINT" and cols["_kafka_partition"] == "INT"


def test_merge_schema_in_a_later_batch_writes_the_new_columns(catalog, ns, kafka_bootstrap, table_format):
    """A micro-batch reuses the previous one's write expressions until the columns change: a field that first appears
    in the third batch is added and written from that batch on, and the counters stay exact in every batch."""
    import lakecat
    from lakecat.kafka_local import produce

    topic = new_topic(kafka_bootstrap, partitions=1)
    events = [{"id": i, "name": f"n{i}"} for i in range(20)] + [
        {"id": i, "name": f"n{i}", "color": f"c{i}"} for i in range(20, 30)
    ]
    produce(kafka_bootstrap, topic, [json.dumps(e).encode() for e in events] + [b"{not json"])
    name = f"{ns}.later_cols"
    catalog.create_table(name, schema="id BIGINT NOT NULL, name STRING", format=table_format)
    report = catalog.ingest(name, lakecat.KafkaSource(kafka_bootstrap, topic), merge_schema=True, max_records_per_batch=10,
                            checkpoint=str(catalog.config.warehouse_path / "ck" / ns / "later"))  # fmt: skip
    assert report.batches >= 3 and report.rows_written == 30 and report.rows_dead_lettered == 1
    assert report.added_columns == ["color"]
    rows = {r["id"]: r for r in read_rows(catalog, name)}
    assert sorted(rows) == list(range(30))
    assert all(rows[i]["color"] is None for i in range(20)) and all(rows[i]["color"] == f"c{i}" for i in range(20, 30))
    assert len(read_rows(catalog, f"{name}_dlq")) == 1


def test_with_kafka_metadata_needs_columns(cli, catalog, ns, kafka_bootstrap):
    topic = new_topic(kafka_bootstrap, partitions=1)
    catalog.create_table(f"{ns}.m", schema="id BIGINT", format="iceberg")
    code, _, err = cli("ingest", f"{ns}.m", "--kafka", kafka_bootstrap, "--topic", topic, "--with-kafka-metadata")
    assert code == 2 and "_kafka_key" in err and "--merge-schema" in err


def test_restart_after_a_kill_while_spark_logged_the_first_batch(catalog, ns, kafka_bootstrap, table_format, tmp_path):
    """A kill -9 while Spark wrote offsets/0 leaves its hidden temporary file and no entry 0 (found by the chaos
    soak); Spark 4 then refuses batch 0 on every restart. The next run clears the leftover and starts."""
    import lakecat
    from lakecat.kafka_local import produce

    topic = new_topic(kafka_bootstrap)
    produce(kafka_bootstrap, topic, [good_event(i) for i in range(30)])
    name = f"{ns}.killed_first"
    catalog.create_table(name, schema=SCHEMA, format=table_format)
    ck = tmp_path / "ck"
    (ck / "offsets").mkdir(parents=True)
    (ck / "metadata").write_text('{"id":"eb6387e2-dfee-4699-ad5c-f1c99a06e39a"}')  # the exact state the soak left
    (ck / "offsets" / ".0.1480752f-b8d3-4db1-b4f0-34ab751fe41d.tmp").write_text('v1\n{"batchWatermarkMs":0}\n')
    (ck / "offsets" / "..0.1480752f-b8d3-4db1-b4f0-34ab751fe41d.tmp.crc").write_bytes(b"crc")
    report = catalog.ingest(name, lakecat.KafkaSource(kafka_bootstrap, topic), checkpoint=str(ck))
    assert report.rows_written == 30 and len(read_rows(catalog, name)) == 30
    assert not [p for p in (ck / "offsets").iterdir() if ".tmp" in p.name]


def test_dedupe_within_watermark(catalog, ns, kafka_bootstrap, table_format):
    import lakecat
    from lakecat.kafka_local import produce

    topic = new_topic(kafka_bootstrap, partitions=2)
    produce(kafka_bootstrap, topic, [good_event(i % 50) for i in range(200)] + [b"oops", b"oops"])
    name = f"{ns}.dedupe"
    catalog.create_table(name, schema=SCHEMA, format=table_format)
    report = catalog.ingest(name, lakecat.KafkaSource(kafka_bootstrap, topic), dedupe_key="id", watermark="1h")
    assert report.rows_written == 50 and report.rows_dead_lettered == 2  # identical bad records are both kept
    assert sorted(r["id"] for r in read_rows(catalog, name)) == list(range(50))
    # later batches, bad records among repeated keys: the dead-letter write replays the first such batch (after a
    # batch with bad records the next is cached) from the state before it, so the keys it had already seen stay
    # dropped and nothing is written twice; the events'
    # times span 28 days of January and the watermark is 60 days: none is late — and a bad record (stamped "now" by
    # Kafka) must not move the watermark past them (it did: 15 of the 70 keys were dropped as late)
    topic = new_topic(kafka_bootstrap, partitions=2)
    produce(kafka_bootstrap, topic, [good_event(i % 50) for i in range(100)] + [b"oops"] + [good_event(i % 70) for i in range(140)]
            + [b"oops", good_event(5), b"{"])  # fmt: skip
    name = f"{ns}.dedupe_batches"
    catalog.create_table(name, schema=SCHEMA, format=table_format)
    report = catalog.ingest(name, lakecat.KafkaSource(kafka_bootstrap, topic), dedupe_key="id", watermark="60d",
                            max_records_per_batch=40)  # fmt: skip
    assert report.batches >= 6 and (report.rows_written, report.rows_dead_lettered) == (70, 3)
    assert sorted(r["id"] for r in read_rows(catalog, name)) == list(range(70))
    dead = read_rows(catalog, f"{name}_dlq")  # the source's metadata and the raw value come through the dedupe intact
    assert sorted(r["raw_text"] for r in dead) == ["oops", "oops", "{"]
    assert {r["kafka_topic"] for r in dead} == {topic} and {r["source"] for r in dead} == {topic}
    assert len({(r["kafka_partition"], r["kafka_offset"]) for r in dead}) == 3 and all(
        r["kafka_timestamp"] for r in dead
    )
    assert {r["error"] for r in dead} == {"invalid_json"} and all(r["error_detail"] for r in dead)


def test_dedupe_keeps_kafka_metadata_and_wrong_types_exact(catalog, ns, kafka_bootstrap, table_format):
    """Through the dedupe, the table write reads only the columns it needs and the dead-letter write its own: the
    good rows' Kafka metadata columns (--with-kafka-metadata) come through, and a record of the wrong type is
    dead-lettered with its detail and provenance, next to a good record of the same key."""
    import lakecat
    from lakecat.kafka_local import produce

    topic = new_topic(kafka_bootstrap, partitions=1)
    wrong = json.dumps({"id": 3, "ts": "2026-01-02T00:00:00", "name": "x", "amt": "not a number"}).encode()
    produce(kafka_bootstrap, topic, [good_event(i % 10) for i in range(20)] + [wrong, good_event(3)], key=b"k")
    name = f"{ns}.dedupe_meta"
    catalog.create_table(name, schema=SCHEMA + ", _kafka_key STRING, _kafka_topic STRING, _kafka_partition INT, "
                         "_kafka_offset BIGINT, _kafka_timestamp TIMESTAMP", format=table_format)  # fmt: skip
    report = catalog.ingest(name, lakecat.KafkaSource(kafka_bootstrap, topic, with_metadata=True), dedupe_key="id",
                            watermark="60d", max_records_per_batch=8)  # fmt: skip
    assert (report.rows_written, report.rows_dead_lettered) == (10, 1)
    rows = read_rows(catalog, name)
    assert sorted(r["id"] for r in rows) == list(range(10))
    assert sorted(r["_kafka_offset"] for r in rows) == list(range(10))  # the first of each key
    assert {(r["_kafka_key"], r["_kafka_topic"], r["_kafka_partition"]) for r in rows} == {("k", topic, 0)}
    assert all(r["_kafka_timestamp"] for r in rows)
    (dead,) = read_rows(catalog, f"{name}_dlq")
    assert (dead["error"], dead["kafka_offset"], dead["kafka_topic"], dead["source"]) == (
        "type_mismatch",
        20,
        topic,
        topic,
    )
    assert dead["error_detail"] == "wrong type: amt (expected DECIMAL(10,2))" and dead["raw_text"] == wrong.decode()
    assert dead["kafka_key"] == b"k" and dead["kafka_timestamp"]


def test_dedupe_shuffles_a_bad_records_columns_packed(catalog, ns, table_format, tmp_path):
    """--dedupe-key's shuffle writes every column of every record: what only a bad record's dead letter reads (detail,
    raw value, provenance, set on every record) crosses it packed in the one struct, null for a good record; the
    batches get neither the salt nor the event time, which only the dedupe reads."""
    import lakecat
    from lakecat.ingest import start_ingest
    from lakecat.records import BAD, CHECKED, ERROR, EVENT_TIME, SALT, UNKNOWN

    landing = tmp_path / "landing"
    landing.mkdir()
    name = f"{ns}.dedupe_shape"
    catalog.create_table(name, schema=SCHEMA, format=table_format)
    handle = start_ingest(
        catalog, name, lakecat.FileSource(str(landing), format="json"), dedupe_key="id", watermark="1h"
    )
    try:
        plan = handle._pipeline.plan()  # built as start() built the running query's (a plan of its own, not started)
    finally:
        handle.stop()

    def find(node, kind):  # type: ignore[no-untyped-def]
        if node.nodeName() == kind:
            return node
        children = node.children()
        return next((f for f in (find(children.apply(i), kind) for i in range(children.size())) if f is not None), None)

    def names(attrs):  # type: ignore[no-untyped-def]
        return [attrs.apply(i).name() for i in range(attrs.size())]

    dedupe = find(plan._jdf.queryExecution().analyzed(), "DeduplicateWithinWatermark")
    table_columns = [f.name for f in catalog.load_table(name).spark_schema().fields]
    assert set(names(dedupe.child().output())) == {*table_columns, ERROR, CHECKED, UNKNOWN, BAD, SALT, EVENT_TIME}
    assert plan.columns == [*table_columns, ERROR, CHECKED, UNKNOWN, BAD]


def test_the_streaming_plan_counts_each_batch(catalog, ns, table_format, tmp_path, monkeypatch, caplog):
    """The batch's counters (rows, bad records, unknown fields) are taken by the streaming plan's own observation and
    read from the query's execution of the batch after the table write: exact, and without the recount fallback."""
    import logging

    import lakecat
    from lakecat.ingest import start_ingest
    from lakecat.ingest.batch import BatchWriter

    landing = tmp_path / "landing"
    landing.mkdir()
    good = [good_event(i) for i in range(40)]
    bad = [BAD_KINDS["type_mismatch"](i) for i in range(3)] + [BAD_KINDS["invalid_json"](i) for i in range(2)]
    (landing / "a.json").write_bytes(b"\n".join(good[:20] + bad[:3] + good[20:]) + b"\n")
    (landing / "b.json").write_bytes(b"\n".join(bad[3:]) + b"\n")
    name = f"{ns}.counted"
    catalog.create_table(name, schema=SCHEMA, format=table_format)
    counted: list[dict] = []
    real = BatchWriter._counted_by_stream

    def spy(self, df, batch_id):  # type: ignore[no-untyped-def]
        m = real(self, df, batch_id)
        counted.append(m)
        return m

    monkeypatch.setattr(BatchWriter, "_counted_by_stream", spy)
    caplog.set_level(logging.WARNING, logger="lakecat.ingest")
    handle = start_ingest(catalog, name, lakecat.FileSource(str(landing), format="json"), max_files_per_batch=1)
    assert handle._pipeline.stream_observation is not None
    handle.await_termination(300)
    report = handle.stop()
    assert (report.rows_written, report.rows_dead_lettered) == (40, 5) and report.batches == 2
    assert sorted((m["rows"], m["bad"]) for m in counted) == [(2, 2), (43, 3)]
    assert not [r for r in caplog.records if "counting it again" in r.getMessage()]
    assert sorted(r["id"] for r in read_rows(catalog, name)) == list(range(40))
    assert len(read_rows(catalog, f"{name}_dlq")) == 5


# --- landed files through the same pipeline ---------------------------------------------------
def test_json_files_exactly_once(catalog, ns, table_format, tmp_path):
    import lakecat

    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_bytes(b"\n".join(good_event(i) for i in range(100)) + b"\n{bad json\n")
    name = f"{ns}.files"
    catalog.create_table(name, schema=SCHEMA, format=table_format)
    src = lakecat.FileSource(str(landing), format="json")
    report = catalog.ingest(name, src)
    assert (report.rows_written, report.rows_dead_lettered) == (100, 1)
    (landing / "b.json").write_bytes(b"\n".join(good_event(i) for i in range(100, 150)) + b"\n")
    report = catalog.ingest(name, src)  # only the new file
    assert (report.rows_written, report.rows_dead_lettered) == (50, 0)
    assert sorted(r["id"] for r in read_rows(catalog, name)) == list(range(150))
    dead = read_rows(catalog, f"{name}_dlq")
    assert len(dead) == 1 and dead[0]["raw_text"] == "{bad json" and dead[0]["source"].endswith("a.json")


def _outside_table_with_dotted_names(table_format: str, tmp_path: Path) -> str:
    """A table another engine wrote, whose column names have dots in them (lakecat's own ``create`` takes plain names
    only): one row, by delta-rs or by pyiceberg in a catalog of its own. Its location, to register."""
    import datetime as dt

    import pyarrow as pa

    data = pa.table({"id": pa.array([1000], pa.int64()), "geo.region": ["r0"], "unit.price": [0.5],
                     "event.ts": pa.array([dt.datetime(2026, 1, 1)], pa.timestamp("us"))})  # fmt: skip
    if table_format == "delta":
        from deltalake import write_deltalake

        write_deltalake(str(tmp_path / "dotted_delta"), data)
        return str(tmp_path / "dotted_delta")
    from pyiceberg.catalog.sql import SqlCatalog

    other = SqlCatalog("elsewhere", uri=f"sqlite:///{tmp_path / 'elsewhere.db'}", warehouse=f"file://{tmp_path / 'wh'}")
    other.create_namespace("shop")
    tbl = other.create_table(("shop", "dotted"), schema=data.schema)
    tbl.append(data)
    return str(other.load_table(("shop", "dotted")).metadata_location)


def test_column_names_with_dots_are_columns_not_paths(catalog, ns, table_format, tmp_path):
    """A registered table's column named ``geo.region`` is filled from the JSON key of that exact name, and a column
    named ``event.ts`` is the dedupe's event time as it is: never read as a struct field ``geo`` . ``region``."""
    import lakecat

    landing = tmp_path / "landing"
    landing.mkdir()
    rows = [{"id": i, "geo.region": f"r{i % 3}", "unit.price": i * 1.5, "event.ts": f"2026-01-01T00:00:{i % 60:02d}"}
            for i in range(20)]  # fmt: skip
    lines = [json.dumps(r).encode() for r in rows + rows[:5]]  # five events twice
    (landing / "a.json").write_bytes(b"\n".join([*lines, json.dumps({"id": "x", "geo.region": "r"}).encode()]) + b"\n")
    name = f"{ns}.dotted"
    catalog.register_table(name, location=_outside_table_with_dotted_names(table_format, tmp_path))
    report = catalog.ingest(name, lakecat.FileSource(str(landing), format="json"), dedupe_key="id",
                            watermark="1h")  # fmt: skip  # the event time: the first timestamp column, `event.ts`
    assert (report.rows_written, report.rows_dead_lettered) == (20, 1)
    got = sorted(read_rows(catalog, name), key=lambda r: r["id"])
    assert [(r["id"], r["geo.region"], r["unit.price"]) for r in got] == [
        *[(i, f"r{i % 3}", i * 1.5) for i in range(20)],
        (1000, "r0", 0.5),
    ]
    assert all(r["event.ts"] is not None for r in got)
    dead = read_rows(catalog, f"{name}_dlq")
    assert len(dead) == 1 and dead[0]["error"] == "type_mismatch"

    # typed files (Parquet) by the same names
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "parquet"
    parquet.mkdir()
    pq.write_table(pa.table({"id": pa.array([100, 101], pa.int64()), "geo.region": ["p", None], "unit.price": [1.0, 2.0]}),
                   parquet / "p.parquet")  # fmt: skip
    report = catalog.ingest(name, lakecat.FileSource(str(parquet), format="parquet"))
    assert (report.rows_written, report.rows_dead_lettered) == (2, 0)
    got = {r["id"]: (r["geo.region"], r["unit.price"]) for r in read_rows(catalog, name)}
    assert (got[100], got[101]) == (("p", 1.0), (None, 2.0))


def test_csv_and_parquet_files(cli, catalog, ns, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    csv_dir = tmp_path / "csv"
    csv_dir.mkdir()
    (csv_dir / "a.csv").write_text("id,name,amt\n1,a,1.5\n2,b,2.5\nnot_a_number,c,3\n,missing id,4\n")
    name = f"{ns}.csvt"
    catalog.create_table(name, schema="id BIGINT NOT NULL, name STRING, amt DOUBLE", format="delta")
    code, out, err = cli("ingest", name, "--files", str(csv_dir), "--file-format", "csv", "--json")
    assert code == 0, err
    assert (json.loads(out)["rows_written"], json.loads(out)["rows_dead_lettered"]) == (2, 2)
    assert Counter(r["error"] for r in read_rows(catalog, f"{name}_dlq")) == {"malformed_csv": 1, "missing_required": 1}

    pq_dir = tmp_path / "pq"
    pq_dir.mkdir()
    pq.write_table(
        pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["x", "y"], "amt": [1.0, 2.0]}), pq_dir / "a.parquet"
    )
    pname = f"{ns}.pqt"
    catalog.create_table(pname, schema="id BIGINT NOT NULL, name STRING, amt DOUBLE", format="iceberg")
    code, out, err = cli("ingest", pname, "--files", str(pq_dir), "--file-format", "parquet", "--json")
    assert code == 0 and json.loads(out)["rows_written"] == 2, err

    bad_dir = tmp_path / "pq_bad"
    bad_dir.mkdir()
    pq.write_table(pa.table({"id": ["one", "two"], "name": ["x", "y"]}), bad_dir / "a.parquet")
    code, out, err = cli("ingest", pname, "--files", str(bad_dir), "--file-format", "parquet", "--json")
    assert code == 2 and "column id is STRING in the parquet files under" in err and "but BIGINT in the table" in err
    assert len(read_rows(catalog, pname)) == 2


def test_human_output_and_metrics_lines(cli, catalog, ns, tmp_path):
    landing = tmp_path / "in"
    landing.mkdir()
    for k in range(3):
        (landing / f"{k}.json").write_bytes(b"\n".join(good_event(10 * k + i) for i in range(10)) + b"\n[]\n")
    name = f"{ns}.human"
    catalog.create_table(name, schema=SCHEMA, format="delta")
    metrics = tmp_path / "m.jsonl"
    code, out, err = cli(
        "ingest", name, "--files", str(landing), "--max-files-per-batch", "1", "--metrics-file", str(metrics)
    )
    assert code == 0, err
    assert f"30 rows written to {name} (delta), 3 dead-lettered to {name}_dlq, 3 batches" in out
    assert err.count(f"{name}: ") == 3  # one progress line per batch on stderr (not a terminal)
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [(m["rows_written"], m["rows_dead_lettered"]) for m in lines] == [(10, 1)] * 3


def test_progress_is_read_from_the_newest_end_only_past_the_mark(spark, tmp_path):
    """The ingest's poll converts only the progresses after the last one it has settled (and always the newest), the
    same dicts as PySpark's recentProgress gives; many batches between two polls are all there, in order."""
    from lakecat.ingest.progress import progress_dict, progress_key, progress_since

    src = tmp_path / "in"
    src.mkdir()
    for k in range(6):
        (src / f"{k}.json").write_text(json.dumps({"id": k}) + "\n")
    q = (spark.readStream.schema("id BIGINT").option("maxFilesPerTrigger", 1).json(str(src)).writeStream.format("noop")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())  # fmt: skip
    q.awaitTermination()
    every = [progress_dict(p) for p in q.recentProgress]
    assert [p["batchId"] for p in every] == list(range(6))
    assert progress_since(q, ("", -1)) == every
    assert progress_since(q, progress_key(every[2])) == every[3:]
    assert progress_since(q, progress_key(every[-1])) == every[-1:]  # nothing new: still the latest


@pytest.mark.spark
def test_wrong_type_detail_names_the_fields_whatever_their_names(spark):
    """The dead letter's detail names each field of the wrong type: read with a JSON path where one can spell the
    name (plain, dotted or spaced names), and with a second parse where none can (a name with a bracket)."""
    from pyspark.sql import types as T

    from lakecat.ingest.parse import json_detail_of_raw, json_path, parse_json
    from lakecat.records import DETAIL, ERROR

    assert json_path("id") == "$['id']" and json_path("a.b c") == "$['a.b c']" and json_path("x[0]") is None
    for names in (["id", "a.b c"], ["id", "x[0]"]):
        fields = [T.StructField(names[0], T.LongType()), T.StructField(names[1], T.IntegerType())]
        values = [json.dumps({names[0]: 1, names[1]: 2}), json.dumps({names[0]: "one", names[1]: "two"}),
                  json.dumps({names[0]: 3, names[1]: None}), json.dumps({names[0]: 4, names[1]: {"n": 1}})]  # fmt: skip
        raw = spark.createDataFrame([(v.encode(), None, "t", 0, i, None, "t") for i, v in enumerate(values)],
                                    "value BINARY, _lakecat_key BINARY, _lakecat_topic STRING, _lakecat_partition INT, "
                                    "_lakecat_offset BIGINT, _lakecat_ts TIMESTAMP, _lakecat_source STRING")  # fmt: skip
        rows = parse_json(raw, fields, keep_value=False, count_unknown="sample").orderBy("_lakecat_offset").collect()
        assert [(r[ERROR], r[DETAIL]) for r in rows] == [
            (None, None),
            ("type_mismatch", f"wrong type: {names[0]} (expected BIGINT), {names[1]} (expected INT)"),
            (None, None),  # a JSON null is a null, not a wrong type
            ("type_mismatch", f"wrong type: {names[1]} (expected INT)"),
        ], names
        # parsed without the detail (a stream's batches), it is computed from the bad records' raw values alone
        lazy = parse_json(raw, fields, keep_value=False, count_unknown="sample", detail=False)
        assert DETAIL not in lazy.columns
        bad = lazy.where(lazy[ERROR].isNotNull()).select("_lakecat_offset", json_detail_of_raw(fields).alias(DETAIL))
        assert [r[DETAIL] for r in bad.orderBy("_lakecat_offset").collect()] == [rows[1][DETAIL], rows[3][DETAIL]]


@pytest.mark.spark
def test_batches_carry_a_bad_records_columns_packed_in_one_struct(spark):
    """A streaming ingest hands its batches the columns a good record fills, the error and the unknown-field check,
    and one struct, null for a good record, with what only the dead letters read (detail, raw value, provenance);
    read back, a bad record's dead letter is exactly that of the parse. With Kafka metadata in the table, the provenance
    stays as columns."""
    from pyspark.sql import types as T

    from lakecat.ingest.dead_letters import letter_columns, letters, packed_fields
    from lakecat.ingest.parse import batch_columns, pack_bad, parse_json
    from lakecat.records import BAD, CHECKED, DETAIL, ERROR, META, RAW, UNKNOWN

    fields = [T.StructField("id", T.LongType()), T.StructField("a.b c", T.StringType())]
    values = [json.dumps({"id": 1, "a.b c": "x"}), json.dumps({"id": "one"}), "not json", json.dumps({"id": 3})]
    raw = spark.createDataFrame([(v.encode(), b"k", "t", 0, i, None, "t") for i, v in enumerate(values)],
                                "value BINARY, _lakecat_key BINARY, _lakecat_topic STRING, _lakecat_partition INT, "
                                "_lakecat_offset BIGINT, _lakecat_ts TIMESTAMP, _lakecat_source STRING")  # fmt: skip
    parsed = parse_json(raw, fields, keep_value=False, count_unknown="sample")
    packed = pack_bad(parsed, batch_columns(fields, with_metadata=False))
    assert packed.columns == ["id", "a.b c", ERROR, CHECKED, UNKNOWN, BAD]
    rows = packed.orderBy(packed[BAD]["_lakecat_offset"].asc_nulls_first()).collect()
    assert [r[BAD] is None for r in rows] == [True, True, False, False]  # the good ones first (offsets 0 and 3)

    def dead_letters(df):  # the dead-letter projection, read from the struct or from the columns
        columns = letter_columns(df.columns, packed_fields(df), fields, fast=False)
        return {r["kafka_offset"]: r.asDict() for r in letters(df, columns).collect()}

    before, after = dead_letters(parsed), dead_letters(packed)
    assert before == after and sorted(before) == [1, 2]
    assert all(v["raw_value"] and v["error_detail"] and v["source"] == "t" for v in after.values())
    assert packed_fields(parsed) == []  # a batch without the struct (CDC, schema evolution) is read as it is
    with_meta = pack_bad(parsed, batch_columns(fields, with_metadata=True))
    assert [c for c in with_meta.columns if c in META] == list(META)
    assert [f.name for f in with_meta.schema[BAD].dataType.fields] == [DETAIL, RAW]


# records for the parse comparison: every JSON shape and type edge the table's types meet, plus byte-level damage
_PARSE_EDGES = [
    b'{"id":1,"ts":"2024-01-01T00:00:00","name":"a","amount":"1.25","d":"2024-02-03","tags":["x"],"ok":true,"x":1.5}',
    b'{"id":"x"}',
    b"not json",
    b"",
    b"{}",
    b"[1,2]",
    b'[{"id":1}]',
    b"null",
    b'{"id":1}{"id":2}',
    b'{"id":6',
    b'\xef\xbb\xbf{"id":3}',
    b"\x00\x00\x00{",
    b"\xfe\xff\x00{\x00}",
    b'\xff\xfe{\x00"\x00',
    b'{"name":"caf\xc3\xa9"}',
    b'{"name":"bad\xff\xfe"}',
    b'{"id":12345678901234567890}',
    b'{"x":NaN}',
    b'{"id":1, "ts": 1700000000}',
    b'  {"id":5}  ',
    b'\t{"id":8}',
    b'{"ok":"true"}',
    b'{"d":"2024-13-01"}',
    b'{"tags":"x"}',
    b'{"ID":7}',
    b'{"name":"\\ud83d\\ude00"}',
    '{"name":"\u00e9\u4e2d\U0001f600"}'.encode(),
    b'{"id":1,"id":2}',
    b'{"amount":1.255}',
    b'{"amount":123456789012}',
    b'{"x":1e400}',
    b'{"name":null}',
    b'{"a":{"b":[1,{"c":3}]},"id":9}',
    b'{"id":1,"name":"x\\u0000y"}',
    b'{"name":"tab\there"}',
    b'{"ts":"2024-01-01 00:00:00+02:00"}',
    b"{'id':1}",
    b'{"id":1,}',
    b"1",
    b'"s"',
    b"true",
    b'{"id":-0}',
    b'{"x":-1.5e-3}',
]


@pytest.mark.spark
def test_lakecat_from_json_parses_every_record_as_spark_from_json(spark):
    """lakecat's parse (``lakecat_from_json``: Jackson over each record's bytes) gives what Spark's ``from_json`` in
    PERMISSIVE mode gives, field by field and corrupt-record text, and ``lakecat_json_object_keys`` what
    ``json_object_keys`` gives, for every valid UTF-8 record: JSON edge cases,
    byte order marks, records Jackson would read as UTF-16/32, and a few thousand damaged copies. A record that is
    not valid UTF-8 may parse differently, and is a dead letter (``not_utf8``) either way."""
    import math
    import random

    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from lakecat import jvm
    from lakecat.ingest.parse import parse_json
    from lakecat.records import ERROR, UNKNOWN

    assert jvm.available(spark), jvm.problem()
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("ts", T.TimestampType()),
                           T.StructField("name", T.StringType()), T.StructField("amount", T.DecimalType(10, 2)),
                           T.StructField("d", T.DateType()), T.StructField("tags", T.ArrayType(T.StringType())),
                           T.StructField("ok", T.BooleanType()), T.StructField("x", T.DoubleType()),
                           T.StructField("_c", T.StringType())])  # fmt: skip
    rnd = random.Random(19)
    # damage: never in a number meant for the DECIMAL (Spark's own parse of 1e<huge> spends minutes on BigDecimal)
    seeds = [v for v in _PARSE_EDGES if b"amount" not in v and b"1e400" not in v]
    values = list(_PARSE_EDGES)
    for _ in range(3000):
        b = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randint(1, 3)):
            if b:
                b[rnd.randrange(len(b))] = rnd.choice([rnd.randrange(256), ord(rnd.choice('{}[]":,\\ 0e-'))])
        values.append(bytes(b))
    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)] + [(len(values), None)], "i INT, value BINARY")
    text = F.col("value").cast("string")
    rows = df.select("i", jvm.from_json(text, schema, "_c", fast=False).alias("spark"),
                     jvm.from_json(text, schema, "_c", fast=True).alias("ours"),
                     jvm.json_object_keys(text, fast=False).alias("spark_keys"),
                     jvm.json_object_keys(text, fast=True).alias("our_keys"),
                     F.is_valid_utf8(text).alias("utf8")).orderBy("i").collect()  # fmt: skip

    def same(a, b) -> bool:  # NaN is NaN
        nan = lambda v: "NaN" if isinstance(v, float) and math.isnan(v) else v  # noqa: E731
        return (a is None and b is None) or (
            a is not None and b is not None and [nan(v) for v in a] == [nan(v) for v in b]
        )

    differing = [
        (values[r.i] if r.i < len(values) else None, r.spark, r.ours)
        for r in rows
        if r.utf8 is not False and not same(r.spark, r.ours)
    ]
    assert not differing, differing[:5]
    keys_differing = [(values[r.i] if r.i < len(values) else None, r.spark_keys, r.our_keys) for r in rows
                      if r.utf8 is not False and r.spark_keys != r.our_keys]  # fmt: skip
    assert not keys_differing, keys_differing[:5]
    assert sum(1 for r in rows if r.spark_keys) > 300 and sum(1 for r in rows if r.spark_keys is None) > 1000
    assert (
        sum(1 for r in rows if r.spark is not None and r.spark._c is not None) > 1000
    )  # the damage made corrupt records
    assert sum(1 for r in rows if r.utf8 is False) > 50  # and invalid UTF-8

    # and ingest's classification is the same whichever parse it runs
    fields = [f for f in schema.fields if f.name != "_c"]
    raw = df.select(F.col("value"), F.lit(None).cast("binary").alias("_lakecat_key"), F.lit("t").alias("_lakecat_topic"),
                    F.lit(0).alias("_lakecat_partition"), F.col("i").cast("bigint").alias("_lakecat_offset"),
                    F.lit(None).cast("timestamp").alias("_lakecat_ts"), F.lit("t").alias("_lakecat_source"))  # fmt: skip
    ours = parse_json(raw, fields, keep_value=False, count_unknown="all")
    jvm._available[spark] = False
    try:
        theirs = parse_json(raw, fields, keep_value=False, count_unknown="all")
    finally:
        jvm._available[spark] = True
    plan = {name: d._jdf.queryExecution().analyzed().toJSON() for name, d in (("ours", ours), ("theirs", theirs))}
    assert (
        "JsonEvaluator" in plan["ours"] and "JsonToStructs" not in plan["ours"] and "JsonObjectKeys" not in plan["ours"]
    )
    assert (
        "JsonEvaluator" not in plan["theirs"]
        and "JsonToStructs" in plan["theirs"]
        and "JsonObjectKeys" in plan["theirs"]
    )
    names = [f.name for f in fields] + [ERROR, UNKNOWN]
    a = ours.select("_lakecat_offset", *names).orderBy("_lakecat_offset").collect()
    b = theirs.select("_lakecat_offset", *names).orderBy("_lakecat_offset").collect()
    assert [r[ERROR] for r in a] == [r[ERROR] for r in b]
    good = [(x, y) for x, y in zip(a, b, strict=True) if x[ERROR] is None]
    assert len(good) > 100 and all(same(x, y) for x, y in good)


def test_the_extension_is_optional(tmp_path, monkeypatch):
    """The extension's jar ships in the package; with ``LAKECAT_NO_EXTENSION=1``, or in a source tree never installed
    (no jar), there is no extension and a reason for it, never an error; ingest then parses with Spark's own
    ``from_json``. No Java compiler is looked for."""
    from lakecat import jvm

    assert jvm.extension_jar() == jvm.EXTENSION_JAR and jvm.EXTENSION_JAR.is_file() and jvm.problem() is None
    monkeypatch.setenv(jvm.DISABLE_ENV, "1")
    assert jvm.extension_jar() is None and jvm.DISABLE_ENV in (jvm.problem() or "")
    monkeypatch.delenv(jvm.DISABLE_ENV)
    monkeypatch.setattr(jvm, "EXTENSION_JAR", tmp_path / "lakecat-spark.jar")
    monkeypatch.setenv("PATH", str(tmp_path))  # no java, no javac: nothing is compiled, nothing is run
    assert jvm.extension_jar() is None and "pip install -e ." in (jvm.problem() or "")
