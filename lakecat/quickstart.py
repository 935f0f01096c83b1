"""The newcomer path: Kafka events into an Iceberg and a Delta table, time-travelled and compacted.

Everything real: a local KRaft broker, Spark Structured Streaming, both table formats. Re-runnable: a
second run reuses the tables and checkpoints, produces a fresh batch of events and ingests only those.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from .catalog import Catalog
from .config import lakecat_home
from .formats import format_names, get_format
from .processes import free_port, port_free
from .results import QuickstartResult
from .sources import KafkaSource
from .units import plural

if TYPE_CHECKING:
    from .kafka_local import LocalKafka

TOPIC = "lakecat_quickstart_clicks"
NAMESPACE = "quickstart"
SCHEMA = (
    "event_id STRING NOT NULL, user_id BIGINT NOT NULL, ts TIMESTAMP NOT NULL, page STRING, "
    "action STRING, country STRING, duration_ms INT"
)
# hash buckets where the format has them, else a low-cardinality column
PARTITIONING = {True: ["days(ts)", "bucket(4, user_id)"], False: ["days(ts)", "country"]}
PAGES = ["/", "/search", "/product/42", "/product/7", "/cart", "/checkout", "/help", "/blog/lakehouse"]
ACTIONS = ["view", "view", "view", "click", "click", "add_to_cart", "purchase"]
COUNTRIES = ["DE", "FR", "US", "US", "BR", "IN", "JP", "NL"]


def clickstream(n: int, *, malformed: int, seed: int | None = None) -> list[bytes]:
    """``n`` realistic click events as JSON, with ``malformed`` broken ones mixed in."""
    rnd = random.Random(seed)
    now = datetime.now(UTC).replace(microsecond=0)
    events: list[bytes] = []
    for _ in range(n):
        ts = now - timedelta(seconds=rnd.randint(0, 3 * 86400))
        events.append(json.dumps({
            "event_id": uuid.UUID(int=rnd.getrandbits(128)).hex, "user_id": rnd.randint(1, 500),
            "ts": ts.isoformat().replace("+00:00", "Z"), "page": rnd.choice(PAGES), "action": rnd.choice(ACTIONS),
            "country": rnd.choice(COUNTRIES), "duration_ms": rnd.randint(5, 60_000),
        }).encode())  # fmt: skip
    broken = [b'{"event_id": "x", "user_id": ', b"\xff\xfe not utf-8", b'{"event_id": "y", "user_id": "alice", "ts": "2026-01-01T00:00:00Z"}',
              b'{"page": "/no-ids"}', b"not json at all"]  # fmt: skip
    for i in range(malformed):
        events.insert(rnd.randint(0, len(events)), broken[i % len(broken)])
    return events


def _broker(port: int | None) -> LocalKafka:
    """The local broker on ``port``, on 9092 by default, or on a free port when 9092 is someone else's."""
    from .kafka_local import LocalKafka  # loads confluent_kafka

    broker = LocalKafka(data_dir=lakecat_home() / "kafka", port=port or 9092)
    if not broker.status()["running"] and port is None and not port_free(9092):
        broker = LocalKafka(data_dir=lakecat_home() / "kafka", port=free_port())
    return broker


def _tour_table(catalog: Catalog, fmt: str, name: str, *, run: int, bootstrap: str, records: int,
                say: Callable[[str], None]) -> dict[str, Any]:  # fmt: skip
    """Steps 3 to 6 on one format's table: create, ingest, time travel and changes, compaction and expiry."""
    partitioning = PARTITIONING[get_format(fmt).supports("bucket_partitioning")]
    say(f"3/7 {'using' if run > 1 else 'creating'} the {fmt} table {name} partitioned by {', '.join(partitioning)}")
    table = catalog.create_table(name, schema=SCHEMA, format=fmt, partition_by=partitioning, if_not_exists=True)
    say(f"4/7 ingesting Kafka -> {name} (available-now, exactly once, bad records to {name}_dlq)")
    ingest = catalog.ingest(name, KafkaSource(bootstrap, TOPIC), trigger="available-now",
                            max_records_per_batch=max(1, records // 3))  # fmt: skip
    entries = list(table.history())
    # the first version with rows: a Delta table's version 0 is its (empty) CREATE TABLE
    first = next((e.version for e in reversed(entries) if e.summary.get("rows_added")), entries[-1].version)
    say(
        f"5/7 {name}: {plural(len(entries), 'version')}; time travel to the first with rows and reading what changed since"
    )
    first_count = table.as_of(version=first).count()
    change_count = table.changes(since=first).count()
    say(f"6/7 {name}: compaction (dry run first), then expiry (dry run)")
    plan = table.compact(dry_run=True)
    compacted = table.compact()
    expire = table.expire(retain_last=2, dry_run=True)
    d = table.describe()
    versions = len(table.history())  # as `lakecat history` counts them now, the compaction's commit included
    return {
        "format": fmt,
        "rows_written": ingest.rows_written,
        "rows_dead_lettered": ingest.rows_dead_lettered,
        "dlq_table": ingest.dlq_table,
        "versions": versions,
        "first_version": first,
        "rows_at_first_version": first_count,
        "changes_since_first_version": change_count,
        "compaction": {
            "would_rewrite": plan.files_rewritten,
            "files_before": compacted.files_before,
            "files_after": compacted.files_after,
        },
        "expire_dry_run": {"would_expire": len(expire.expired_versions), "older_than": expire.older_than},
        "rows_now": d.records,
        "files_now": d.files,
    }


def _next_commands(report: QuickstartResult, first_name: str, second_name: str) -> list[str]:
    return [
        "lakecat list quickstart",
        f"lakecat describe {first_name}",
        f"lakecat history {first_name}",
        f"lakecat timetravel {first_name} --version {report.tables[first_name]['first_version']} --count",
        f"lakecat timetravel {first_name} --version {report.tables[first_name]['first_version']} --count --engine spark"
        "   # through Spark: at a terminal, on the warm local engine",
        "lakecat local engine status   # the warm engine a terminal's first Spark-path command started; stops when idle",
        f"lakecat changes {second_name} --since {report.tables[second_name]['first_version']} --limit 5",
        f"lakecat compact {second_name} --dry-run",
        f"lakecat expire {first_name} --retain-last 2 --dry-run",
        "lakecat quickstart   # again: a second run ingests only the new events",
    ]


def run_quickstart(
    catalog: Catalog,
    *,
    port: int | None = None,
    events: int = 3000,
    malformed: int = 15,
    keep_broker: bool = False,
    say: Callable[[str], None] = lambda _: None,
) -> QuickstartResult:
    """Run the whole tour on ``catalog`` (see ``lakecat quickstart``)."""
    from .kafka_local import create_topic, produce  # loads confluent_kafka

    started = time.monotonic()
    broker = _broker(port)
    was_running = bool(broker.status()["running"])
    say(
        "1/7 starting the local Kafka broker"
        + (" (already running)" if was_running else " (first start resolves its jars)")
    )
    bootstrap = broker.start(timeout=120)
    try:
        create_topic(bootstrap, TOPIC, partitions=3)
        names = {fmt: f"{NAMESPACE}.clicks_{fmt}" for fmt in format_names(builtin_only=True)}
        run = 2 if all(catalog.table_exists(n) for n in names.values()) else 1
        payload = clickstream(events, malformed=malformed)
        say(f"2/7 producing {events} click events (+{malformed} malformed) to topic {TOPIC} on {bootstrap}")
        produce(bootstrap, TOPIC, payload)
        report = QuickstartResult(run, bootstrap, TOPIC, events, malformed)
        for fmt, name in names.items():
            report.tables[name] = _tour_table(catalog, fmt, name, run=run, bootstrap=bootstrap,
                                              records=events + malformed, say=say)  # fmt: skip
        report.next_commands = _next_commands(report, *list(names.values())[:2])
    finally:
        if not was_running and not keep_broker:
            say("7/7 stopping the broker")
            broker.stop()
    report.duration_s = round(time.monotonic() - started, 1)
    return report
