"""Every ingest's micro-batches are bounded: by the options, else by a default sized from the driver's heap.

A backlog larger than the bound drains in several batches with ``available-now``, exactly once (counted by pyiceberg
and delta-rs), and a bounded batch's dead letters are collected by the job that writes its good rows.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest
from helpers import new_topic, read_rows

SCHEMA = "id BIGINT NOT NULL, ts TIMESTAMP, name STRING, amt DECIMAL(10,2)"


def good_event(i: int) -> bytes:
    return json.dumps({"id": i, "ts": f"2026-01-{1 + i % 28:02d}T{i % 24:02d}:00:00", "name": f"n{i}",
                       "amt": round(i / 100, 2)}).encode()  # fmt: skip


def with_bad(n_good: int, every: int, start: int = 0) -> tuple[list[bytes], list[bytes]]:
    """``n_good`` good events from ``start`` with a malformed one after every ``every``-th; (all, the malformed)."""
    out, bad = [], []
    for i in range(start, start + n_good):
        out.append(good_event(i))
        if (i + 1) % every == 0:
            bad.append(f'{{"id": {i}, "name": '.encode())
            out.append(bad[-1])
    return out, bad


# --- the default, as a pure function of the heap (no JVM) --------------------------------------
def test_default_bound_is_sized_from_the_driver_heap(tmp_path):
    import lakecat
    from lakecat.errors import InvalidArgumentError
    from lakecat.ingest import IngestOptions
    from lakecat.ingest import bounds as b
    from lakecat.ingest.staged import STAGE_MAX_ROWS
    from lakecat.sizing import GiB, MiB, heap_for

    # the documented formula: clamp(heap × share / bytes a record, floor, the most dead letters staged at once)
    for heap in (8 * MiB, 512 * MiB, 1 * GiB, 1536 * MiB, 2 * GiB, 11 * GiB, 31 * GiB):
        expected = max(b.MIN_BATCH_RECORDS, min(int(heap * b.BATCH_HEAP_SHARE) // b.RECORD_HEAP_BYTES, STAGE_MAX_ROWS))
        assert b.default_batch_records(heap) == expected
        assert b.default_batch_bytes(heap) == expected * b.EVENT_BYTES
    assert b.default_batch_records(8 * MiB) == b.MIN_BATCH_RECORDS  # far below Spark's floor of a heap
    assert b.default_batch_records(512 * MiB) == 32_768 < b.default_batch_records(1 * GiB) == 65_536
    assert b.default_batch_records(2 * GiB) == b.default_batch_records(31 * GiB) == STAGE_MAX_ROWS
    # the heaps lakecat sizes for machines of 2, 3 and 24 GiB
    assert [b.default_batch_records(heap_for(m * GiB)) for m in (2, 3, 24)] == [32_768, 65_536, STAGE_MAX_ROWS]

    kafka, files = lakecat.KafkaSource("127.0.0.1:1", "t"), lakecat.FileSource(str(tmp_path))
    heap = 1 * GiB

    def bound(source, options):  # type: ignore[no-untyped-def]
        return b.batch_bound(source, heap, records=options.max_records_per_batch, files=options.max_files_per_batch,
                           size=options.max_bytes)  # fmt: skip

    default = bound(kafka, IngestOptions())
    assert (default.records, default.bytes, default.files, default.source) == (65_536, None, None, b.DEFAULT)
    assert default.as_dict() == {"records": 65_536, "source": b.DEFAULT, "driver_memory": "1g"}
    assert default.collects_letters and default.stream.max_records_per_batch == 65_536
    given = bound(kafka, IngestOptions(max_records_per_batch=500_000))
    assert given.as_dict() == {"records": 500_000, "source": b.OPTION} and not given.collects_letters
    assert bound(files, IngestOptions()).as_dict() == {"bytes": 65_536 * b.EVENT_BYTES, "source": b.DEFAULT,
                                                       "driver_memory": "1g"}  # fmt: skip
    by_count = bound(files, IngestOptions(max_files_per_batch=3))
    assert by_count.as_dict() == {"files": 3, "source": b.OPTION} and not by_count.collects_letters
    by_size = bound(files, IngestOptions(max_bytes_per_batch="64KB"))
    assert by_size.as_dict() == {"bytes": 64_000, "source": b.OPTION} and by_size.collects_letters
    assert by_size.stream.max_bytes_per_batch == 64_000 and by_size.stream.max_files_per_batch is None
    with pytest.raises(InvalidArgumentError, match="one of max_files_per_batch= and max_bytes_per_batch="):
        IngestOptions(max_files_per_batch=1, max_bytes_per_batch=1000)
    with pytest.raises(InvalidArgumentError, match="invalid size"):
        IngestOptions(max_bytes_per_batch="lots")


def test_cli_refuses_two_file_bounds(cli, ns, tmp_path):
    code, out, err = cli("ingest", f"{ns}.t", "--files", tmp_path, "--max-files-per-batch", "2",
                         "--max-bytes-per-batch", "1MB", "--json")  # fmt: skip
    assert code == 2 and "Traceback" not in err
    assert "one of --max-files-per-batch and --max-bytes-per-batch" in json.loads(out)["error"]["message"]


# --- real streams --------------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.kafka
def test_a_backlog_drains_in_bounded_batches_exactly_once(catalog, ns, kafka_bootstrap, table_format, request):
    """Kafka, bounded by the option below the backlog: several batches, every record once, the dead letters (1%)
    collected by the job that writes each batch's good rows; then a run with the default bound, sized from the heap
    the session was given."""
    import lakecat
    from lakecat.ingest.bounds import DEFAULT, OPTION, default_batch_records, driver_heap
    from lakecat.kafka_local import produce
    from lakecat.rss import rss_bytes

    connect = request.config.getoption("--spark-connect")
    topic = new_topic(kafka_bootstrap)
    sent, bad = with_bad(500, 100)
    produce(kafka_bootstrap, topic, sent)
    name = f"{ns}.bounded"
    catalog.create_table(name, schema=SCHEMA, format=table_format)
    src = lakecat.KafkaSource(kafka_bootstrap, topic)
    report = catalog.ingest(name, src, trigger="available-now", max_records_per_batch=200)
    assert (report.rows_written, report.rows_dead_lettered) == (500, len(bad)) == (500, 5)
    assert report.batches >= 3 and report.batches_skipped == 0  # 505 records, at most 200 a batch
    assert report.batch_bound == {"records": 200, "source": OPTION}
    assert report.dead_letter_path == ("two jobs" if connect else "one job")
    assert report.peak_rss_bytes is not None and (connect or report.peak_rss_bytes > rss_bytes(os.getpid()))
    ids = [r["id"] for r in read_rows(catalog, name)]
    assert len(ids) == 500 and set(ids) == set(range(500))
    dead = read_rows(catalog, f"{name}_dlq")
    assert sorted(r["raw_value"] for r in dead) == sorted(bad) and Counter(r["error"] for r in dead) == {
        "invalid_json": 5
    }
    assert len({(r["kafka_partition"], r["kafka_offset"]) for r in dead}) == len(dead)

    more, more_bad = with_bad(300, 100, start=500)
    produce(kafka_bootstrap, topic, more)
    again = catalog.ingest(name, src, trigger="available-now")  # the same checkpoint: only the new records
    heap = driver_heap(catalog.session())
    assert again.batch_bound == {"records": default_batch_records(heap), "source": DEFAULT,
                                 "driver_memory": catalog.session().conf.get("spark.driver.memory")}  # fmt: skip
    assert (again.rows_written, again.rows_dead_lettered, again.batches) == (300, 3, 1)
    ids = [r["id"] for r in read_rows(catalog, name)]
    assert len(ids) == 800 and set(ids) == set(range(800))
    assert sorted(r["raw_value"] for r in read_rows(catalog, f"{name}_dlq")) == sorted(bad + more_bad)


@pytest.mark.spark
def test_landed_files_drain_in_bounded_batches_exactly_once(cli, catalog, ns, table_format, tmp_path, request):
    """Landed JSON files, bounded by bytes: several batches, every record once, dead letters in the one job; a file
    count bounds them instead when given; the default is a byte bound sized from the heap."""
    from lakecat.ingest.bounds import DEFAULT, OPTION, default_batch_bytes, driver_heap

    connect = request.config.getoption("--spark-connect")
    landing = tmp_path / "landing"
    landing.mkdir()
    bad_all = []
    for f in range(4):
        lines, bad = with_bad(50, 25, start=f * 50)
        bad_all += bad
        (landing / f"part-{f}.json").write_bytes(b"\n".join(lines) + b"\n")
    size = max(p.stat().st_size for p in landing.iterdir())
    name = f"{ns}.landed"
    catalog.create_table(name, schema=SCHEMA, format=table_format)
    code, out, err = cli("ingest", name, "--files", landing, "--max-bytes-per-batch", str(size), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert (report["rows_written"], report["rows_dead_lettered"]) == (200, len(bad_all)) == (200, 8)
    assert 2 <= report["batches"] <= 4 and report["batch_bound"] == {"bytes": size, "source": OPTION}
    assert report["dead_letter_path"] == ("two jobs" if connect else "one job") and report["peak_rss_bytes"] > 0
    ids = [r["id"] for r in read_rows(catalog, name)]
    assert len(ids) == 200 and set(ids) == set(range(200))
    assert sorted(r["raw_value"] for r in read_rows(catalog, f"{name}_dlq")) == sorted(bad_all)

    (landing / "part-4.json").write_bytes(b"\n".join(good_event(i) for i in range(200, 260)) + b"\n")
    code, out, err = cli("ingest", name, "--files", landing, "--json")  # the default bound; only the new file
    assert code == 0, err
    again = json.loads(out)
    heap = driver_heap(catalog.session())
    assert again["batch_bound"] == {"bytes": default_batch_bytes(heap), "source": DEFAULT,
                                    "driver_memory": catalog.session().conf.get("spark.driver.memory")}  # fmt: skip
    assert (again["rows_written"], again["rows_dead_lettered"], again["batches"]) == (60, 0, 1)
    assert again["dead_letter_path"] is None
    (landing / "part-5.json").write_bytes(b"\n".join(good_event(i) for i in range(260, 270)) + b"\n")
    (landing / "part-6.json").write_bytes(b"\n".join(good_event(i) for i in range(270, 280)) + b"\n")
    code, out, err = cli("ingest", name, "--files", landing, "--max-files-per-batch", "1", "--json")
    assert code == 0, err
    counted = json.loads(out)
    assert counted["batch_bound"] == {"files": 1, "source": OPTION} and counted["batches"] == 2
    ids = [r["id"] for r in read_rows(catalog, name)]
    assert len(ids) == 280 and set(ids) == set(range(280))
