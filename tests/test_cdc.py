"""CDC: Debezium change events MERGEd into both formats, exactly once; `lakecat upsert` (batch MERGE).

The expected table is the source state computed here, event by event; the table is read back with an
independent reader (pyiceberg / delta-rs), never through lakecat or Spark.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from helpers import committed_versions, new_topic, pyiceberg_catalog, read_rows

pytestmark = [pytest.mark.spark]

SCHEMA = "id BIGINT NOT NULL, name STRING, amt DECIMAL(10,2), ts TIMESTAMP, region STRING"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _row(i: int, version: int) -> dict:
    return {"id": i, "name": f"n{i}-v{version}", "amt": f"{(i * 7 + version) % 1000}.{version % 100:02d}",
            "ts": EPOCH + timedelta(hours=i, minutes=version), "region": ("eu", "us", "ap")[i % 3]}  # fmt: skip


def _wire(row: dict, as_micros: bool) -> dict:
    ts = row["ts"]
    return {**row, "ts": int(ts.timestamp() * 1_000_000) if as_micros else ts.strftime("%Y-%m-%dT%H:%M:%SZ")}


def _event(op: str, before: dict | None, after: dict | None, ts_ms: int, *, wrapped: bool, micros: bool) -> bytes:
    payload = {"before": _wire(before, micros) if before else None, "after": _wire(after, micros) if after else None,
               "op": op, "ts_ms": ts_ms, "source": {"connector": "postgresql", "table": "accounts"}}  # fmt: skip
    if wrapped:
        return json.dumps(
            {"schema": {"type": "struct", "name": "dbserver1.public.accounts.Envelope"}, "payload": payload}
        ).encode()
    return json.dumps(payload).encode()


def _key(i: int, wrapped: bool) -> bytes:
    return json.dumps({"schema": {"type": "struct"}, "payload": {"id": i}} if wrapped else {"id": i}).encode()


def change_stream(n_events: int, n_keys: int, seed: int = 7, *, tombstones: bool = True) -> tuple[list, dict]:
    """(key, value) messages of creates/updates/deletes with heavy key repetition, and the source's end state."""
    rnd = random.Random(seed)
    state: dict[int, dict] = {}
    versions: dict[int, int] = {}
    out: list = []
    for n in range(n_events):
        i = rnd.randrange(n_keys)
        # Debezium's converter config is fixed per connector: one key shape per row (so one partition per key)
        wrapped, micros = i % 2 == 0, n % 3 == 0
        versions[i] = versions.get(i, 0) + 1
        ts_ms = 1_767_225_600_000 + n
        if i not in state:
            after = _row(i, versions[i])
            out.append(
                (
                    _key(i, wrapped),
                    _event("r" if n < n_keys // 4 else "c", None, after, ts_ms, wrapped=wrapped, micros=micros),
                )
            )
            state[i] = after
        elif rnd.random() < 0.7:
            after = _row(i, versions[i])
            out.append((_key(i, wrapped), _event("u", state[i], after, ts_ms, wrapped=wrapped, micros=micros)))
            state[i] = after
        else:
            out.append((_key(i, wrapped), _event("d", state[i], None, ts_ms, wrapped=wrapped, micros=micros)))
            if tombstones:
                out.append((_key(i, wrapped), None))
            del state[i]
    return out, state


MALFORMED = [
    (b'{"id": 1}', b"{not json"),
    (b'{"id": 2}', json.dumps({"op": "x", "after": {"id": 2}}).encode()),  # unknown op
    (b'{"id": 3}', json.dumps({"op": "u", "before": {"id": 3}, "after": None}).encode()),  # update without after
    (b'{"id": 4}', json.dumps({"op": "c", "after": {"id": None, "name": "no key"}}).encode()),  # null key
    (b'{"id": 5}', json.dumps({"op": "c", "after": {"id": 5, "ts": "not a time"}}).encode()),  # bad timestamp
]


def _normal(row: dict) -> tuple:
    ts = row["ts"]
    if isinstance(ts, datetime) and ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return (row["id"], row["name"], Decimal(str(row["amt"])).quantize(Decimal("0.01")), ts, row["region"])


def assert_state(catalog, name: str, state: dict) -> None:
    got = sorted(_normal(r) for r in read_rows(catalog, name))
    want = sorted(_normal(r) for r in state.values())
    if got != want:  # name the keys that differ (a count alone says nothing about the cause)
        extra = [r for r in got if r not in want]
        missing = [r for r in want if r not in got]
        pytest.fail(f"{name}: {len(got)} rows, want {len(want)}; unexpected {extra[:10]}; missing {missing[:10]}")


def _create(catalog, name: str, fmt: str):
    return catalog.create_table(name, schema=SCHEMA, format=fmt, partition_by=["days(ts)"])


# --- streaming CDC from Kafka -----------------------------------------------------------------
@pytest.mark.kafka
def test_debezium_stream_ends_as_source_state(cli, catalog, ns, kafka_bootstrap, table_format, tmp_path):
    from lakecat.kafka_local import produce

    messages, state = change_stream(1500, 40)
    messages[300:300] = MALFORMED
    topic = new_topic(kafka_bootstrap)
    produce(kafka_bootstrap, topic, messages)
    name = f"{ns}.accounts"
    _create(catalog, name, table_format)
    metrics = tmp_path / "metrics.jsonl"
    args = ("ingest", name, "--kafka", kafka_bootstrap, "--topic", topic, "--cdc", "debezium", "--key", "id",
            "--max-records-per-batch", "200", "--json")  # fmt: skip
    code, out, err = cli(*args, "--metrics-file", str(metrics))
    assert code == 0, err
    report = json.loads(out)
    assert report["rows_dead_lettered"] == len(MALFORMED)
    by_reason: Counter = Counter()
    for line in metrics.read_text().splitlines():
        by_reason.update(json.loads(line)["dead_lettered_by_reason"])
    assert by_reason == {"invalid_json": 1, "invalid_cdc_event": 2, "missing_key": 1, "type_mismatch": 1}
    assert report["rows_written"] == len(messages) - len(MALFORMED)
    assert report["batches"] >= 5  # every batch repeats keys (40 keys, ~200 events each)
    assert_state(catalog, name, state)
    dead = read_rows(catalog, f"{name}_dlq")
    assert sorted(r["error"] for r in dead) == sorted(
        ["invalid_json", "invalid_cdc_event", "invalid_cdc_event", "missing_key", "type_mismatch"]
    )
    assert all(r["kafka_offset"] is not None for r in dead)

    versions = committed_versions(catalog, name)
    code, out, err = cli(*args)  # a re-run changes nothing
    assert code == 0, err
    assert json.loads(out)["rows_written"] == 0
    assert committed_versions(catalog, name) == versions
    assert_state(catalog, name, state)

    if table_format == "iceberg":  # the key became the table's identifier fields
        entry = catalog.entry(name)
        schema = pyiceberg_catalog(catalog).load_table((entry.ident.namespace, entry.ident.name)).schema()
        assert [schema.find_column_name(i) for i in schema.identifier_field_ids] == ["id"]


@pytest.mark.kafka
@pytest.mark.slow
def test_debezium_kill_9_then_restart_ends_equal(catalog, ns, kafka_bootstrap, table_format):
    from lakecat.kafka_local import produce

    messages, state = change_stream(3000, 50, seed=11)
    topic = new_topic(kafka_bootstrap)
    produce(kafka_bootstrap, topic, messages)
    name = f"{ns}.crashcdc"
    _create(catalog, name, table_format)
    base = [sys.executable, "-m", "lakecat.commands.main", "ingest", name, "--kafka", kafka_bootstrap, "--topic", topic,
            "--cdc", "debezium", "--key", "id"]  # fmt: skip

    def start(*extra: str) -> subprocess.Popen:
        return subprocess.Popen([*base, *extra, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, env=dict(os.environ))  # fmt: skip

    proc = start("--max-records-per-batch", "150")
    deadline = time.monotonic() + 480  # a JVM start and first batches on a loaded 2-core runner
    try:
        while committed_versions(catalog, name) < (4 if table_format == "delta" else 3):
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no batch committed in time"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # mid-stream: the driver and its JVM
        proc.wait()
    proc = start("--max-records-per-batch", "3000")  # restart with the same checkpoint, drain the rest in a batch
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    assert_topic_holds(kafka_bootstrap, topic, messages)  # the expected state is the topic's, not only the generator's
    assert_state(catalog, name, state)


def assert_topic_holds(bootstrap: str, topic: str, messages: list) -> None:
    """Every key's events are in the topic exactly once and in the order generated (read back with a plain consumer)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})  # fmt: skip
    try:
        parts = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        total = sum(
            hi - lo for lo, hi in (consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30) for p in parts)
        )
        assert total == len(messages), f"topic holds {total} messages, {len(messages)} were produced"
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        got: dict[bytes, list] = {}
        seen, deadline = 0, time.monotonic() + 60
        while seen < total and time.monotonic() < deadline:
            for m in consumer.consume(500, timeout=1):
                if m.error() is None:
                    got.setdefault(m.key(), []).append(m.value())
                    seen += 1
    finally:
        consumer.close()
    want: dict[bytes, list] = {}
    for k, v in messages:
        want.setdefault(k, []).append(v)
    assert seen == total, f"read {seen} of {total} messages back"
    assert got == want, [k for k in want if got.get(k) != want[k]][:5]


# --- CDC from files, and `changes` showing what the MERGE did ----------------------------------
def test_cdc_changes_show_update_pairs_and_deletes(cli, catalog, ns, table_format, tmp_path):
    landing = tmp_path / "cdc"
    landing.mkdir()
    name = f"{ns}.chg"
    _create(catalog, name, table_format)
    r1, r2, r3 = _row(1, 1), _row(2, 1), _row(3, 1)
    (landing / "a.json").write_bytes(b"\n".join(_event("c", None, r, 1000 + i, wrapped=True, micros=False)
                                                for i, r in enumerate((r1, r2, r3))) + b"\n")  # fmt: skip
    code, out, err = cli("ingest", name, "--files", str(landing), "--cdc", "debezium", "--key", "id", "--json")
    assert code == 0, err
    code, out, _ = cli("history", name, "--json")
    since = json.loads(out)[0]["version"]
    r1b = _row(1, 2)
    (landing / "b.json").write_bytes(b"\n".join([
        _event("u", r1, _row(1, 9), 2000, wrapped=False, micros=True),
        _event("u", _row(1, 9), r1b, 2001, wrapped=False, micros=True),  # two updates of one key in one batch
        _event("d", r2, None, 2002, wrapped=False, micros=True),
        _event("d", r3, None, 2003, wrapped=True, micros=False),
        _event("c", None, _row(3, 5), 2004, wrapped=True, micros=False),  # delete then re-create: present
    ]) + b"\n")  # fmt: skip
    code, out, err = cli("ingest", name, "--files", str(landing), "--cdc", "debezium", "--key", "id", "--json")
    assert code == 0, err
    assert json.loads(out)["rows_written"] == 5
    assert_state(catalog, name, {1: r1b, 3: _row(3, 5)})

    code, out, err = cli("changes", name, "--since", str(since), "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    kinds = sorted((r["id"], r["_change_type"], r["name"]) for r in rows)
    assert (1, "update_preimage", "n1-v1") in kinds and (1, "update_postimage", "n1-v2") in kinds
    assert (2, "delete", "n2-v1") in kinds
    assert not any(r["id"] == 1 and r["_change_type"] in ("insert", "delete") for r in rows)
    assert (3, "update_postimage", "n3-v5") in kinds or (3, "insert", "n3-v5") in kinds


def test_cdc_usage_errors(cli, catalog, ns, tmp_path):
    name = f"{ns}.cdcerr"
    _create(catalog, name, "delta")
    landing = tmp_path / "x"
    landing.mkdir()
    cases = [
        (("--cdc", "debezium"), "--key is required"),
        (("--cdc", "maxwell", "--key", "id"), "unknown CDC format"),
        (("--cdc", "debezium", "--key", "nope"), "has no column nope"),
        (("--key", "id"), "pass --cdc debezium"),
        (("--cdc", "debezium", "--key", "id", "--dedupe-key", "id", "--watermark", "1h"), "does not combine"),
        (("--unknown-fields", "most"), "use sample, all or off"),
    ]
    for extra, message in cases:
        code, out, err = cli("ingest", name, "--files", str(landing), *extra, "--json")
        assert code == 2, (extra, err)
        assert message in json.loads(out)["error"]["message"]


# --- lakecat upsert (batch MERGE) --------------------------------------------------------------
def test_upsert_files_insert_update_delete(cli, catalog, ns, table_format, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    name = f"{ns}.ups"
    _create(catalog, name, table_format)
    first = tmp_path / "first"
    first.mkdir()
    rows = {i: _row(i, 1) for i in range(10)}
    (first / "part-0.json").write_text("\n".join(json.dumps(_wire(r, False)) for r in rows.values()) + "\n")
    code, out, err = cli("upsert", name, "--from", str(first), "--key", "id", "--json")
    assert code == 0, err
    assert {k: json.loads(out)[k] for k in ("rows_in", "inserted", "updated", "deleted")} == {
        "rows_in": 10, "inserted": 10, "updated": 0, "deleted": 0}  # fmt: skip
    assert_state(catalog, name, rows)

    second = tmp_path / "second"
    second.mkdir()
    changes = [{**_row(i, 2), "deleted": i in (3, 4, 20)} for i in (0, 1, 3, 4, 10, 11, 20)]
    pq.write_table(pa.table({
        "id": pa.array([c["id"] for c in changes], pa.int64()),
        "name": [c["name"] for c in changes],
        "amt": pa.array([Decimal(c["amt"]) for c in changes], pa.decimal128(10, 2)),
        "ts": pa.array([c["ts"] for c in changes], pa.timestamp("us", tz="UTC")),
        "region": [c["region"] for c in changes],
        "deleted": [c["deleted"] for c in changes],
    }), second / "changes.parquet")  # fmt: skip
    code, out, err = cli("upsert", name, "--from", str(second), "--key", "id", "--delete-when", "deleted", "--json")
    assert code == 0, err
    assert {k: json.loads(out)[k] for k in ("rows_in", "inserted", "updated", "deleted")} == {
        "rows_in": 7, "inserted": 2, "updated": 2, "deleted": 2}  # fmt: skip
    for c in changes:
        if c["deleted"]:
            rows.pop(c["id"], None)
        else:
            rows[c["id"]] = {k: v for k, v in c.items() if k != "deleted"}
    assert_state(catalog, name, rows)

    versions = committed_versions(catalog, name)
    dup = tmp_path / "dup"
    dup.mkdir()
    (dup / "a.json").write_text(json.dumps(_wire(_row(1, 5), False)) + "\n" + json.dumps(_wire(_row(1, 6), False)) + "\n"
                                + json.dumps(_wire(_row(2, 5), False)) + "\n" + json.dumps(_wire(_row(2, 6), False)) + "\n"
                                + json.dumps(_wire(_row(3, 6), False)) + "\n")  # fmt: skip
    no_key = tmp_path / "no_key"
    no_key.mkdir()
    (no_key / "a.json").write_text(
        json.dumps(_wire(_row(4, 5), False)) + "\n" + json.dumps({**_wire(_row(5, 5), False), "id": None}) + "\n"
    )
    for extra, message in [(("--from", str(dup), "--key", "id"), "2 key(s) appear more than once"),
                           (("--from", str(no_key), "--key", "id"), "1 source row(s) have a null key"),
                           (("--from", str(second), "--key", "id", "--delete-when", "no_such_col = 1"), "invalid --delete-when"),
                           (("--from", str(second), "--key", "id; DROP TABLE x"), "invalid"),
                           (("--from", str(tmp_path / "missing"), "--key", "id"), "does not exist")]:  # fmt: skip
        code, out, err = cli("upsert", name, *extra, "--json")
        assert code == 2, (extra, err)
        assert message in json.loads(out)["error"]["message"]
    assert committed_versions(catalog, name) == versions  # nothing written by any of them
    assert_state(catalog, name, rows)


def test_upsert_python_dataframe(catalog, spark, ns, table_format):
    from pyspark.sql import functions as F

    name = f"{ns}.upsdf"
    t = _create(catalog, name, table_format)
    df = spark.range(5).select(F.col("id"), F.concat(F.lit("a"), F.col("id")).alias("name"))
    report = t.upsert(df, key=["id"])
    assert (report.inserted, report.updated) == (5, 0)
    report = t.upsert(spark.range(3, 8).select(F.col("id"), F.lit("b").alias("name")), key="id")
    assert (report.inserted, report.updated, report.rows_in) == (3, 2, 5)
    got = {r["id"]: r["name"] for r in read_rows(catalog, name)}
    assert got == {0: "a0", 1: "a1", 2: "a2", 3: "b", 4: "b", 5: "b", 6: "b", 7: "b"}


def test_upsert_updates_only_rows_that_differ_and_commits_nothing_when_none_do(
    cli, catalog, spark, ns, table_format, tmp_path
):
    """Null-safe comparison of the columns the source sets: the same upsert twice commits once; one changed row of
    three is one update (one pre/post pair in the change feed), the others are left as they are."""
    name = f"{ns}.upsnoop"
    t = _create(catalog, name, table_format)
    rows = [(1, "a", "eu"), (2, None, "us"), (3, "c", None)]
    df = spark.createDataFrame(rows, "id long, name string, region string")
    first = t.upsert(df, key="id")
    assert (first.inserted, first.updated, first.unchanged, first.committed) == (3, 0, 0, True)
    versions = committed_versions(catalog, name)

    code, out, err = cli("upsert", name, "--from", _json_lines(tmp_path, df), "--key", "id", "--json")
    assert code == 0, err
    again = json.loads(out)
    assert {k: again[k] for k in ("inserted", "updated", "unchanged", "deleted", "committed", "version")} == {
        "inserted": 0, "updated": 0, "unchanged": 3, "deleted": 0, "committed": False, "version": first.version}  # fmt: skip
    assert committed_versions(catalog, name) == versions  # no new version, by the format's own reader
    assert t.changes(since=first.version).count() == 0

    one = t.upsert(spark.createDataFrame([(1, "a", "eu"), (2, None, "ap"), (3, "c", None)], df.schema), key="id")
    assert (one.inserted, one.updated, one.unchanged, one.committed) == (0, 1, 2, True)
    assert committed_versions(catalog, name) == versions + 1
    got = sorted(
        (r["_change_type"], r["id"], r["region"]) for r in t.changes(since=first.version).to_arrow().to_pylist()
    )
    assert got == [("update_postimage", 2, "ap"), ("update_preimage", 2, "us")]
    if table_format == "delta":  # the change data feed Delta itself wrote: one pre/post pair
        import pyarrow as pa
        from deltalake import DeltaTable

        cdf = DeltaTable(catalog.entry(name).location).load_cdf(starting_version=one.version)
        feed = pa.RecordBatchReader.from_stream(cdf).read_all().to_pylist()
        assert sorted((r["_change_type"], r["id"]) for r in feed) == [("update_postimage", 2), ("update_preimage", 2)]
    assert {(r["id"], r["name"], r["region"]) for r in read_rows(catalog, name)} == {
        (1, "a", "eu"), (2, None, "ap"), (3, "c", None)}  # fmt: skip


def _json_lines(tmp_path, df) -> str:
    """``df`` written as JSON lines (nulls kept) to a fresh directory; its path."""
    import tempfile

    path = tempfile.mkdtemp(prefix="lakecat-ups-")
    lines = [json.dumps(r.asDict()) for r in df.collect()]
    with open(f"{path}/part-0.json", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def test_merge_commit_carries_the_batch_marker(catalog, spark, ns, table_format):
    """The idempotence marker is part of the MERGE's own commit (so a crash cannot separate them)."""
    from pyspark.sql import functions as F

    from lakecat.cdc import OP, merge

    name = f"{ns}.marker"
    t = _create(catalog, name, table_format)
    src = spark.range(3).select(F.col("id"), F.lit("x").alias("name"), F.lit("u").alias(OP))
    merge(t, src, ["id"], ["id", "name"], app_id="lakecat-test-app", batch_id=7)
    before = committed_versions(catalog, name)
    assert t.adapter.committed_batch(t, "lakecat-test-app") == 7
    if table_format == "delta":  # Delta itself refuses a transaction version it has already committed
        merge(t, src.withColumn("name", F.lit("y")), ["id"], ["id", "name"], app_id="lakecat-test-app", batch_id=7)
        assert committed_versions(catalog, name) == before
        assert {r["name"] for r in read_rows(catalog, name)} == {"x"}
