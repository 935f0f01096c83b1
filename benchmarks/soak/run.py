"""The chaos soak: exactly once for every format under kill -9, a broker restart and maintenance running beside.

``python -m benchmarks.soak [--minutes N] [--kills K] [--seed S]`` from the checkout's root (the short form CI runs: ``--minutes 2 --kills 1 --no-cdc``).

What runs, all at once, against a private catalog (``LAKECAT_HOME`` in a temporary directory) and a real local
KRaft broker:

- a producer writes keyed JSON events (with a malformed one now and then) to a 3-partition topic, and Debezium
  change events — the JSON converter's ``{"schema", "payload"}`` envelope with the ``source`` and ``transaction``
  blocks, ``precise`` decimals, micro-timestamps, tombstones after deletes — for a key space to another;
- for every format, two ``lakecat ingest --trigger 'every 2s'`` processes: the events into ``soak.events_<fmt>``
  and the change events (``--cdc debezium --key id``) into ``soak.cdc_<fmt>``;
- the maintenance service, ``lakecat maintain 'soak.*' --auto --every 15s --plan …``, on the same tables: minor
  compactions of the partitions written since the last one, a major one each minute, expiry with short windows
  (forced), orphan cleanup; its commit conflicts with the streams are retried or left to its next pass, and counted;
- the chaos: ingest processes killed with SIGKILL (their JVM with them) at random moments, restarted by the harness;
  the broker stopped and restarted once; a concurrent ``lakecat upsert`` into each events table (rows with negative
  ids, which the topic never carries).

At the end the producers stop, each stream drains with ``--trigger available-now``, and every table is read by
the format's own independent library (pyiceberg; delta-rs) and compared with what the topic says it should hold:
the events tables hold every valid event exactly once (plus the upserted rows), the CDC tables hold the last state
of every key (deleted keys absent), the dead-letter tables hold every malformed record exactly once. What the service
did comes from the catalog's maintenance log. The Delta tables are mirrored as Iceberg tables (``lakecat mirror
--as iceberg``) before the streams start, and kept in step by every commit above: at the end each mirror is verified
at the versions it had reached (behind, never wrong), synced, verified again, and read by pyiceberg, which must see
exactly the rows delta-rs sees (``--no-mirror`` leaves them out). The figures are printed as one JSON document; exit code 0 when nothing
was lost or doubled, 1 otherwise.

A harness beside the package (like the benchmark suite): it reads tables with each format's own library, through the
hand-written baselines of ``benchmarks.baselines``.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import lakecat
from lakecat import kafka_local
from lakecat.formats import format_names
from lakecat.kafka_local import send
from lakecat.processes import free_port

from ..baselines import baseline

EVENTS_SCHEMA = "id BIGINT NOT NULL, k STRING, seq BIGINT, amount DECIMAL(10,2), ts TIMESTAMP"
CDC_SCHEMA = "id BIGINT NOT NULL, name STRING, amt DECIMAL(10,2), ts TIMESTAMP"
SERVER, DB_TABLE = "soakdb", "public.accounts"
PLAN = """\
[defaults]
compact.target-file-size = "8MB"
compact.min-input-files = 2
compact.major-every = "1m"
expire.older-than = "1m"
expire.retain-last = 2
orphans.older-than = "{orphans}"
force = true

[[tables]]
match = "soak.*_dlq"                # the dead-letter tables are checked, not maintained
maintain.enabled = false
"""


# --- Debezium's wire format (PostgreSQL connector, JSON converter with schemas, default settings) ----------------
def _unscaled_b64(value: Decimal, scale: int) -> str:
    unscaled = int((value * (Decimal(10) ** scale)).to_integral_value())
    length = max(1, (unscaled + (unscaled < 0)).bit_length() // 8 + 1)
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


_ROW_FIELDS = [
    {"type": "int64", "optional": False, "default": 0, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
    {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
     "parameters": {"scale": "2", "connect.decimal.precision": "10"}, "field": "amt"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "version": 1, "field": "ts"},
]  # fmt: skip
_VALUE = {"type": "struct", "fields": _ROW_FIELDS, "optional": True, "name": f"{SERVER}.{DB_TABLE}.Value"}
_SOURCE = {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source", "field": "source", "fields": [
    {"type": "string", "optional": False, "field": "version"}, {"type": "string", "optional": False, "field": "connector"},
    {"type": "string", "optional": False, "field": "name"}, {"type": "int64", "optional": False, "field": "ts_ms"},
    {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
     "parameters": {"allowed": "true,last,false,incremental"}, "default": "false", "field": "snapshot"},
    {"type": "string", "optional": False, "field": "db"}, {"type": "string", "optional": False, "field": "schema"},
    {"type": "string", "optional": False, "field": "table"}, {"type": "int64", "optional": True, "field": "txId"},
    {"type": "int64", "optional": True, "field": "lsn"}]}  # fmt: skip
_TRANSACTION = {"type": "struct", "optional": True, "name": "event.block", "version": 1, "field": "transaction", "fields": [
    {"type": "string", "optional": False, "field": "id"}, {"type": "int64", "optional": False, "field": "total_order"},
    {"type": "int64", "optional": False, "field": "data_collection_order"}]}  # fmt: skip
_ENVELOPE = {"type": "struct", "optional": False, "name": f"{SERVER}.{DB_TABLE}.Envelope", "version": 2, "fields": [
    {**_VALUE, "field": "before"}, {**_VALUE, "field": "after"}, _SOURCE,
    {"type": "string", "optional": False, "field": "op"}, {"type": "int64", "optional": True, "field": "ts_ms"},
    _TRANSACTION]}  # fmt: skip
_KEY_SCHEMA = {"type": "struct", "optional": False, "name": f"{SERVER}.{DB_TABLE}.Key",
               "fields": [{"type": "int64", "optional": False, "field": "id"}]}  # fmt: skip


def _wire_row(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "amt": _unscaled_b64(row["amt"], 2), "ts": row["ts_us"]}


def debezium_message(
    op: str, before: dict[str, Any] | None, after: dict[str, Any] | None, n: int
) -> tuple[bytes, bytes]:
    """(key, value) of one change event exactly as Debezium's PostgreSQL connector emits it."""
    row = after or before
    assert row is not None
    key = json.dumps({"schema": _KEY_SCHEMA, "payload": {"id": row["id"]}}).encode()
    ts_ms = 1_767_225_600_000 + n
    payload = {
        "before": _wire_row(before) if before else None, "after": _wire_row(after) if after else None,
        "source": {"version": "3.0.8.Final", "connector": "postgresql", "name": SERVER, "ts_ms": ts_ms, "snapshot": "false",
                   "db": "soak", "schema": "public", "table": "accounts", "txId": 1000 + n, "lsn": 10_000 + 8 * n},
        "op": op, "ts_ms": ts_ms + 3, "transaction": {"id": f"{1000 + n}:{10_000 + 8 * n}", "total_order": 1, "data_collection_order": 1},
    }  # fmt: skip
    return key, json.dumps({"schema": _ENVELOPE, "payload": payload}).encode()


# --- the parts -----------------------------------------------------------------------------------------------
@dataclass
class Stream:
    """One ``lakecat ingest`` process the harness keeps running (and kills)."""

    label: str
    fmt: str
    table: str
    args: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    killed: bool = False
    kills: int = 0
    restarts: int = 0
    failures: list[str] = field(default_factory=list)


class Soak:
    def __init__(
        self, work: Path, minutes: float, kills: int, seed: int, formats: list[str], rate: int, *, cdc: bool = True,
        trigger_seconds: float = 5, maintain_every: str = "15s", broker_restart: bool = True, mirror: bool = True,
    ) -> None:  # fmt: skip
        self.work, self.seconds, self.kills_per_format, self.formats, self.rate = (
            work,
            minutes * 60,
            kills,
            formats,
            rate,
        )
        self.cdc = cdc
        # the Delta tables also read as Iceberg (lakecat mirror), kept in step beside the streams and the service
        kinds = ("events", "cdc") if cdc else ("events",)
        self.mirrored = [f"soak.{kind}_delta" for kind in kinds] if mirror and "delta" in formats else []
        self.trigger_seconds, self.maintain_every, self.broker_restart = trigger_seconds, maintain_every, broker_restart
        self.service: subprocess.Popen[str] | None = None
        self.rnd = random.Random(seed)
        self.seed = seed
        # one core per JVM: two cores carry the streams, maintain and upsert side by side
        self.env = {
            **os.environ,
            "LAKECAT_HOME": str(work / "home"),
            "PYSPARK_PYTHON": sys.executable,
            "NO_COLOR": "1",
            "LAKECAT_SPARK_MASTER": os.environ.get("LAKECAT_SOAK_SPARK_MASTER", "local[1]"),
        }
        self.env.pop("LAKECAT_CATALOG", None)
        self.stop_producing = threading.Event()
        self.stop_chaos = threading.Event()
        self.lock = threading.Lock()
        self.figures: dict[str, Any] = {"seed": seed, "formats": formats, "cdc": cdc, "minutes": minutes,
                                        "trigger_seconds": trigger_seconds, "maintain_every": maintain_every,
                                        "events": 0, "malformed": 0, "change_events": 0,
                                        "tombstones": 0, "kills": {f: 0 for f in formats}, "restarts_after_failure": 0,
                                        "broker_restarts": 0, "maintenance_runs": 0, "maintenance_failed": 0,
                                        "upserts": 0, "conflicts_retried": 0, "internal_errors": 0}  # fmt: skip
        self.notes: list[str] = []
        self.upserted: dict[str, set[int]] = {f: set() for f in formats}
        self.streams: list[Stream] = []
        self.broker: Any = None
        self.bootstrap = ""

    # --- processes ---
    def lakecat(self, *args: str, timeout: float = 900) -> tuple[int, str, str]:
        proc = subprocess.run([sys.executable, "-m", "lakecat.commands.main", *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)  # fmt: skip
        return proc.returncode, proc.stdout, proc.stderr

    def _count_retries(self, text: str) -> None:
        n = text.count("commit conflict, retry")
        try:
            doc = json.loads(text) if text.strip().startswith("{") else None
        except ValueError:
            doc = None
        n = max(n, _sum_key(doc, "retries")) if doc is not None else n
        with self.lock:
            self.figures["conflicts_retried"] += n

    def start_stream(self, s: Stream) -> None:
        log = open(s.log, "ab")  # noqa: SIM115 - the child owns it
        s.proc = subprocess.Popen([sys.executable, "-m", "lakecat.commands.main", *s.args, "--trigger",
                                   f"every {self.trigger_seconds:g}s", "--json",
                                   "--verbose"], env=self.env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)  # fmt: skip
        log.close()
        s.started, s.killed = time.monotonic(), False

    def kill(self, s: Stream) -> None:
        if s.proc is None or s.proc.poll() is not None:
            return
        s.killed = True
        os.killpg(s.proc.pid, signal.SIGKILL)  # the driver and its JVM
        s.proc.wait()
        s.kills += 1
        with self.lock:
            self.figures["kills"][s.fmt] += 1

    def supervise(self) -> None:
        """Restart every stream that died (killed by the chaos, or failed — e.g. while the broker was down)."""
        while not self.stop_chaos.is_set():
            for s in self.streams:
                if s.proc is not None and s.proc.poll() is not None:
                    if not s.killed and s.proc.returncode == 4:
                        with self.lock:
                            self.figures["internal_errors"] += 1
                    if not s.killed:
                        s.failures.append(_last_error(s.log))
                        with self.lock:
                            self.figures["restarts_after_failure"] += 1
                    s.restarts += 1
                    time.sleep(self.rnd.uniform(0.5, 3))
                    if not self.stop_chaos.is_set():
                        self.start_stream(s)
            time.sleep(0.5)

    def chaos(self) -> None:
        """kill -9 at random moments: ``kills`` per format over the first 85 % of the run; the broker once."""
        plan: list[tuple[float, str]] = []
        window = self.seconds * 0.85
        for fmt in self.formats:
            plan += [(self.rnd.uniform(0.05, 1.0) * window, fmt) for _ in range(self.kills_per_format)]
        if self.broker_restart:
            plan.append((self.seconds * 0.4, "broker"))
        t0 = time.monotonic()
        for at, what in sorted(plan):
            while time.monotonic() - t0 < at:
                if self.stop_chaos.wait(0.2):
                    return
            if what == "broker":
                self.restart_broker()
                continue
            # a random stream of that format whose JVM has been up a while: mid-batch, mid-commit or idle
            for _ in range(240):
                up = [s for s in self.streams if s.fmt == what and s.proc is not None and s.proc.poll() is None
                      and time.monotonic() - s.started > 15]  # fmt: skip
                if up:
                    self.kill(self.rnd.choice(up))
                    break
                if self.stop_chaos.wait(0.5):
                    return

    def restart_broker(self) -> None:
        self.broker.stop()
        time.sleep(self.rnd.uniform(3, 8))
        self.broker.start(timeout=120)
        with self.lock:
            self.figures["broker_restarts"] += 1

    def start_service(self, plan: Path) -> None:
        """The maintenance service on every soak table, one warm JVM for the whole run (restarted if it dies)."""
        log = open(self.work / "service.log", "ab")  # noqa: SIM115 - the child owns it
        self.service = subprocess.Popen([sys.executable, "-m", "lakecat.commands.main", "maintain", "soak.*", "--auto",
                                         "--every", self.maintain_every, "--plan", str(plan), "--json", "--verbose"],
                                        env=self.env, stdout=subprocess.PIPE, stderr=log, text=True,
                                        start_new_session=True)  # fmt: skip
        log.close()

    def watch_service(self, plan: Path) -> None:
        while not self.stop_chaos.wait(1):
            if self.service is not None and self.service.poll() is not None:
                code = self.service.returncode
                with self.lock:
                    self.figures["service_restarts"] = self.figures.get("service_restarts", 0) + 1
                    self.figures["internal_errors"] += code == 4
                    self.notes.append(f"maintenance service exit {code}: {_last_error(self.work / 'service.log')}")
                self.start_service(plan)

    def stop_service(self) -> None:
        """SIGTERM: the service finishes the step under way and exits 0 with its JSON summary."""
        proc = self.service
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            self.notes.append("maintenance service: no exit within 10 minutes of SIGTERM")
        if proc.returncode != 0:
            self.figures["internal_errors"] += proc.returncode == 4
            self.notes.append(f"maintenance service exit {proc.returncode}: {_error_of(out, '')}")
        try:
            summary = json.loads(out)
        except ValueError:
            summary = {}
        self.figures["service"] = {"exit": proc.returncode, "passes": summary.get("passes"),
                                   "runs": summary.get("runs"), "stopped_by": summary.get("stopped_by")}  # fmt: skip

    def maintenance_figures(self) -> dict[str, Any]:
        """What the service did, from the catalog's maintenance log: runs by action, tier and outcome, the commit
        conflicts with the streams it retried and the ones it left to its next pass."""
        from lakecat.maintenance_log import RunLog

        runs = RunLog(lakecat.connect().metastore).runs("soak.*")
        by: dict[str, int] = {}
        for r in runs:
            key = f"{r.action}{f' {r.tier}' if r.tier else ''} {r.outcome}"
            by[key] = by.get(key, 0) + 1
        conflicts = [r for r in runs if r.outcome == "skipped" and "conflict" in (r.error or "")]
        return {
            "maintenance_runs": len(runs),
            "maintenance_failed": sum(r.outcome == "failed" for r in runs),
            "maintenance": dict(sorted(by.items())),
            "maintenance_conflicts": {
                "retried": sum(r.retries for r in runs),
                "left_to_next_pass": len(conflicts),
                "compaction_retried": sum(r.retries for r in runs if r.action == "compact"),
                "compaction_left_to_next_pass": sum(r.action == "compact" for r in conflicts),
            },
            "maintenance_errors": sorted({f"{r.action}: {r.error}"[:300] for r in runs if r.outcome == "failed"})[:10],
        }

    def upserts(self, t_run: float) -> None:
        """A concurrent upsert into each events table at 30 % and at 70 % of the run."""
        for round_, at in enumerate((0.3, 0.7)):
            while time.monotonic() - t_run < self.seconds * at:
                if self.stop_chaos.wait(0.5):
                    return
            for fmt in self.formats:
                self.upsert(fmt, round_)

    def upsert(self, fmt: str, round_: int) -> None:
        """A concurrent MERGE into the events table: rows the topic never carries (negative ids)."""
        ids = list(range(-(round_ + 1) * 100, -round_ * 100))
        path = self.work / f"upsert-{fmt}-{round_}.json"
        path.write_text("".join(json.dumps({"id": i, "k": "u", "seq": i, "amount": "1.00", "ts": "2026-01-01T00:00:00"}) + "\n"
                                for i in ids))  # fmt: skip
        code, out, err = self.lakecat(
            "upsert", f"soak.events_{fmt}", "--from", str(path), "--key", "id", "--json", "--verbose"
        )
        with self.lock:
            if code == 0:
                self.upserted[fmt].update(ids)
                self.figures["upserts"] += 1
            else:
                self.figures["internal_errors"] += code == 4  # a bug; a lost commit race after retries is exit 1
                self.notes.append(f"upsert {fmt} exit {code}: {_error_of(out, err)}")
        self._count_retries(out)
        self._count_retries(err)

    def produce(self, events_topic: str, cdc_topic: str) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 20, "message.timeout.ms": 600_000, "logger": _quiet_logger()})  # fmt: skip
        errors: list[str] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(str(err))

        rnd, state, n, seq = random.Random(self.seed + 1), {}, 0, 0
        period = 1.0 / max(1, self.rate)
        next_at = time.monotonic()
        while not self.stop_producing.is_set():
            seq += 1
            if seq % 97 == 0:
                value: bytes = b'{"id": not json'
                self.figures["malformed"] += 1
            else:
                value = json.dumps({"id": seq, "k": f"k{seq % 4}", "seq": seq, "amount": (seq % 100_000) / 100,
                                    "ts": f"2026-01-01T00:{(seq // 60) % 60:02d}:{seq % 60:02d}"}).encode()  # fmt: skip
                self.figures["events"] += 1
            send(producer, events_topic, str(seq).encode(), value, delivered)
            if self.cdc and seq % 4 == 0:  # a change event for every four events
                n += 1
                i = rnd.randrange(500)
                us = 1_767_225_600_000_000 + n * 1000
                if i not in state:
                    state[i] = {"id": i, "name": f"n{i}-{n}", "amt": Decimal(rnd.randrange(100_000)) / 100, "ts_us": us}
                    msgs: list[tuple[bytes, bytes | None]] = [debezium_message("c", None, state[i], n)]
                elif rnd.random() < 0.75:
                    new = {"id": i, "name": f"n{i}-{n}", "amt": Decimal(rnd.randrange(100_000)) / 100, "ts_us": us}
                    msgs = [debezium_message("u", state[i], new, n)]
                    state[i] = new
                else:
                    key, delete = debezium_message("d", state.pop(i), None, n)
                    msgs = [(key, delete), (key, None)]  # the delete, then its tombstone
                    self.figures["tombstones"] += 1
                for msg_key, msg in msgs:
                    send(producer, cdc_topic, msg_key, msg, delivered)
                self.figures["change_events"] += 1
            producer.poll(0)
            next_at += period
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_at = time.monotonic()
        if producer.flush(600) != 0 or errors:
            self.notes.append(f"producer: {producer.flush(0)} undelivered, {len(errors)} errors: {errors[:3]}")

    # --- the run ---
    def run(self) -> dict[str, Any]:

        t_start = time.monotonic()
        (self.work / "home").mkdir(parents=True, exist_ok=True)
        self.broker = kafka_local.LocalKafka(data_dir=self.work / "kafka", port=free_port())
        self.bootstrap = self.broker.start(timeout=120)
        events_topic, cdc_topic = "soak-events", "soak-cdc"
        for topic in (events_topic, cdc_topic):
            kafka_local.create_topic(self.bootstrap, topic, 3)
        creates = "".join(
            f"cat.create_table('soak.events_{fmt}', schema={EVENTS_SCHEMA!r}, format={fmt!r}, partition_by='k')\n"
            f"cat.create_table('soak.cdc_{fmt}', schema={CDC_SCHEMA!r}, format={fmt!r})\n"
            for fmt in self.formats
        )
        made = subprocess.run(
            [sys.executable, "-c", f"import lakecat\ncat = lakecat.connect()\n{creates}"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )  # one JVM for every table
        if made.returncode != 0:
            raise SystemExit(f"soak: creating the tables failed: {_last_line(made.stderr)}")
        for name in self.mirrored:
            code, out, err = self.lakecat("mirror", name, "--as", "iceberg", "--json")
            if code != 0:
                raise SystemExit(f"soak: mirroring {name} failed: {_error_of(out, err)}")
        for fmt in self.formats:
            common = ["--kafka", self.bootstrap, "--max-records-per-batch", "2000"]
            self.streams.append(
                Stream(
                    f"events-{fmt}",
                    fmt,
                    f"soak.events_{fmt}",
                    ["ingest", f"soak.events_{fmt}", "--topic", events_topic, *common],
                    self.work / f"events-{fmt}.log",
                )
            )
            if not self.cdc:
                continue
            self.streams.append(Stream(f"cdc-{fmt}", fmt, f"soak.cdc_{fmt}",
                                       ["ingest", f"soak.cdc_{fmt}", "--topic", cdc_topic, "--cdc", "debezium", "--key", "id", *common],
                                       self.work / f"cdc-{fmt}.log"))  # fmt: skip
        plan = self.work / "plan.toml"
        plan.write_text(PLAN.format(orphans="10m"))
        t_run = time.monotonic()
        producer = threading.Thread(target=self.produce, args=(events_topic, cdc_topic), name="producer")
        producer.start()
        for s in self.streams:
            self.start_stream(s)
        self.start_service(plan)
        workers = [threading.Thread(target=fn, name=fn.__name__) for fn in (self.supervise, self.chaos)]
        workers.append(threading.Thread(target=self.watch_service, args=(plan,), name="watch_service"))
        for w in workers:
            w.start()
        upserts = threading.Thread(target=self.upserts, args=(t_run,), name="upserts")
        upserts.start()
        while time.monotonic() - t_run < self.seconds:
            time.sleep(1)
        self.stop_producing.set()
        producer.join()
        self.stop_chaos.set()
        for w in [*workers, upserts]:
            w.join()
        self.stop_service()  # while the streams still run: maintenance beside them to the end
        for s in self.streams:  # stop the continuous streams (SIGTERM: after the batch in flight)
            if s.proc is not None and s.proc.poll() is None:
                s.proc.send_signal(signal.SIGTERM)
        for s in self.streams:
            if s.proc is not None:
                try:
                    s.proc.wait(timeout=300)
                except subprocess.TimeoutExpired:
                    os.killpg(s.proc.pid, signal.SIGKILL)
                    s.proc.wait()
        self.figures["seconds_under_chaos"] = round(time.monotonic() - t_run, 1)
        for s in self.streams:  # drain what is left, exactly once across every kill
            code, out, err = self.lakecat(*s.args, "--trigger", "available-now", "--json", timeout=1800)
            if code != 0:
                self.figures["internal_errors"] += code == 4
                self.notes.append(f"drain {s.label} exit {code}: {_error_of(out, err)}")
        self.figures.update(self.check(events_topic, cdc_topic))
        if self.mirrored:
            self.figures["mirrors"] = {name: self.check_mirror(name) for name in self.mirrored}
            self.figures["ok"] = self.figures["ok"] and all(m["ok"] for m in self.figures["mirrors"].values())
        self.figures.update(self.maintenance_figures())
        self.figures["ok"] = self.figures["ok"] and self.figures["internal_errors"] == 0  # exit 4 is a bug, always
        if not self.broker_restart and self.figures["restarts_after_failure"]:
            # with the broker up, nothing but a kill may stop a stream: a failure is one the writers or the service
            # caused (a stream may fail while the broker is down, and is restarted)
            self.figures["ok"] = False
            self.notes.append(f"{self.figures['restarts_after_failure']} stream failure(s) with the broker up")
        self.figures["restarts"] = {s.label: s.restarts for s in self.streams}
        for s in self.streams:  # the streams' own retries of commit conflicts (with --verbose they log each)
            self.figures["conflicts_retried"] += s.log.read_text(errors="replace").count("commit conflict, retry")
        self.figures["failures"] = [f"{s.label}: {f}" for s in self.streams for f in s.failures][:20]
        self.figures["notes"] = self.notes[:20]
        self.figures["seconds"] = round(time.monotonic() - t_start, 1)
        self.broker.stop()
        return self.figures

    # --- the verdict ---
    def check(self, events_topic: str, cdc_topic: str) -> dict[str, Any]:
        valid, malformed, final = _topic_truth(self.bootstrap, events_topic, cdc_topic)
        out: dict[str, Any] = {"topic_events": len(valid), "topic_malformed": len(malformed), "topic_keys": len(final),
                               "tables": {}}  # fmt: skip
        ok = True
        for fmt in self.formats:
            ids = [int(r["id"]) for r in _read(self, f"soak.events_{fmt}", fmt)]
            want = valid | self.upserted[fmt]
            lost, doubled = len(want - set(ids)), len(ids) - len(set(ids))
            unexpected = len(set(ids) - want)
            dead = _read(self, f"soak.events_{fmt}_dlq", fmt)
            dead_at = [
                (int(r["kafka_partition"]), int(r["kafka_offset"]))
                for r in dead
                if r.get("kafka_topic") == events_topic
            ]
            dlq_lost, dlq_doubled = len(malformed - set(dead_at)), len(dead_at) - len(set(dead_at))
            cdc_rows = _read(self, f"soak.cdc_{fmt}", fmt) if self.cdc else []
            got = {int(r["id"]): (r["name"], Decimal(str(r["amt"])).quantize(Decimal("0.01"))) for r in cdc_rows}
            cdc_wrong = sum(1 for k, v in final.items() if got.get(k) != v) + sum(1 for k in got if k not in final)
            cdc_doubled = len(cdc_rows) - len(got)
            table_ok = not (lost or doubled or unexpected or dlq_lost or dlq_doubled or cdc_wrong or cdc_doubled)
            ok = ok and table_ok
            out["tables"][fmt] = {"events_rows": len(ids), "lost": lost, "duplicated": doubled, "unexpected": unexpected,
                                  "dead_letters": len(dead_at), "dead_letters_lost": dlq_lost, "dead_letters_duplicated": dlq_doubled,
                                  "cdc_rows": len(cdc_rows), "cdc_keys_wrong": cdc_wrong, "cdc_duplicated": cdc_doubled,
                                  "upserted_rows": len(self.upserted[fmt]), "ok": table_ok}  # fmt: skip
        out["ok"] = ok
        return out

    def check_mirror(self, name: str) -> dict[str, Any]:
        """A mirror kept in step through the run: equal to its Delta table at the versions it reached (a kill
        between the Delta commit and the Iceberg one leaves it behind, never wrong), then synced and equal again, and
        pyiceberg reads the same ids as delta-rs."""
        before, out_before, err_before = self.lakecat("mirror", name, "--verify", "--json")
        # equal (exit 0), different (exit 1 with the comparison), or not comparable: the Delta version the mirror
        # stopped at was expired since (its log truncated), which says nothing against the mirror
        equal_before = _verified(before, out_before)
        if equal_before is None:
            self.notes.append(f"mirror {name}: not comparable before the sync: {_error_of(out_before, err_before)}")
        synced, out, err = self.lakecat("mirror", name, "--sync", "--json")
        after, out_after, err_after = self.lakecat("mirror", name, "--verify", "--json")
        try:
            behind = _sum_key(json.loads(out), "commits") if synced == 0 else None
        except ValueError:
            behind = None
        delta_ids = sorted(int(r["id"]) for r in _read(self, name, "delta"))
        mirror_ids = sorted(int(r["id"]) for r in _read(self, name, "iceberg"))  # the Iceberg table of that name
        figures: dict[str, Any] = {"equal_before_sync": equal_before, "commits_behind": behind,
                                   "equal_after_sync": after == 0, "rows": len(mirror_ids),
                                   "rows_as_delta": mirror_ids == delta_ids}  # fmt: skip
        figures["ok"] = equal_before is not False and synced == 0 and after == 0 and mirror_ids == delta_ids
        if synced != 0 or after != 0:
            self.notes.append(f"mirror {name}: sync exit {synced}, verify exit {after}: "
                              f"{_error_of(out, err) if synced else _error_of(out_after, err_after)}")  # fmt: skip
        return figures


# --- helpers ---------------------------------------------------------------------------------------------------
def _quiet_logger() -> Any:
    log = logging.getLogger("benchmarks.soak.producer")
    log.setLevel(logging.CRITICAL)  # the broker's restart makes librdkafka complain; deliveries are checked instead
    return log


def _sum_key(doc: Any, key: str) -> int:
    if isinstance(doc, dict):
        return sum(int(v) if k == key and isinstance(v, int) else _sum_key(v, key) for k, v in doc.items())
    if isinstance(doc, list):
        return sum(_sum_key(v, key) for v in doc)
    return 0


def _error_of(out: str, err: str) -> str:
    """The one-line error of a ``--json`` command: its JSON error document, else the last line it printed."""
    try:
        return str(json.loads(out)["error"]["message"])[:300]
    except (ValueError, KeyError, TypeError):
        return _last_line(err or out)


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _last_error(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    for ln in reversed(lines):
        if "error" in ln.lower():
            return ln[:300]
    return lines[-1][:300] if lines else "exited without output"


def _topic_truth(
    bootstrap: str, events_topic: str, cdc_topic: str
) -> tuple[set[int], set[tuple[int, int]], dict[int, tuple[str, Decimal]]]:
    """What the topics say the tables must hold: valid event ids, malformed records' (partition, offset), and the
    last state of every CDC key (deleted keys absent) — read back with a plain consumer."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"soak-check-{os.getpid()}", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})  # fmt: skip
    valid: set[int] = set()
    malformed: set[tuple[int, int]] = set()
    final: dict[int, tuple[str, Decimal]] = {}
    try:
        for topic in (events_topic, cdc_topic):
            parts = consumer.list_topics(topic, timeout=30).topics[topic].partitions
            ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}
            consumer.assign([TopicPartition(topic, p, 0) for p in parts])
            done = {p for p, end in ends.items() if end == 0}
            deadline = time.monotonic() + 300
            while len(done) < len(ends) and time.monotonic() < deadline:
                for m in consumer.consume(1000, timeout=1):
                    if m.error() is not None:
                        continue
                    part, offset, value = int(m.partition() or 0), int(m.offset() or 0), m.value()
                    if offset + 1 >= ends[part]:
                        done.add(part)
                    if topic == events_topic:
                        try:
                            valid.add(int(json.loads(value or b"")["id"]))
                        except (ValueError, KeyError, TypeError):
                            malformed.add((part, offset))
                    elif value is not None:
                        payload = json.loads(value)["payload"]
                        if payload["op"] == "d":
                            final.pop(int(payload["before"]["id"]), None)
                        else:
                            a = payload["after"]
                            unscaled = int.from_bytes(base64.b64decode(a["amt"]), "big", signed=True)
                            final[int(a["id"])] = (a["name"], (Decimal(unscaled) / 100).quantize(Decimal("0.01")))
            consumer.unassign()
    finally:
        consumer.close()
    return valid, malformed, final


def _verified(code: int, out: str) -> bool | None:
    """``mirror --verify --json``'s verdict: True (equal), False (a comparison differed), None (it could not
    compare, e.g. the version to compare at is gone)."""
    if code == 0:
        return True
    try:
        doc = json.loads(out)
    except ValueError:
        return None
    results = doc if isinstance(doc, list) else [doc]
    if any(isinstance(r, dict) and r.get("equal") is False for r in results):
        return False
    return None


def _read(soak: Soak, name: str, fmt: str) -> list[dict[str, Any]]:
    """A table's rows read by the format's own library, not by lakecat (``benchmarks.baselines``)."""
    cat = lakecat.connect()  # LAKECAT_HOME is the run's (main() sets it before anything reads it)
    if not cat.table_exists(name):
        return []
    return baseline(fmt).read_rows(cat, cat.entry(name))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0, help="how long the chaos runs (default 20)")
    ap.add_argument(
        "--kills", type=int, default=None, help="kill -9s per format (default: one per 2 minutes, at least 2)"
    )
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--rate", type=int, default=50, help="events per second (default 50)")
    ap.add_argument("--formats", default=",".join(format_names(builtin_only=True)))
    ap.add_argument("--no-cdc", action="store_true", help="only the plain event streams (the short form CI runs)")
    ap.add_argument("--trigger-seconds", type=float, default=5, help="each stream commits this often (default 5)")
    ap.add_argument("--maintain-every", default="15s", help="the maintenance service's pass interval (default 15s)")
    ap.add_argument("--no-broker-restart", action="store_true",
                    help="keep the broker up (with --kills 0: only maintenance runs beside the streams)")  # fmt: skip
    ap.add_argument("--no-mirror", action="store_true", help="leave out the Delta tables' Iceberg mirrors")
    ap.add_argument(
        "--work", default=None, help="keep the run's catalog, broker and logs here (default: a temporary dir, removed)"
    )
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    kills = args.kills if args.kills is not None else max(2, int(args.minutes / 2))
    work = Path(args.work).resolve() if args.work else Path(tempfile.mkdtemp(prefix="lakecat-soak-"))
    os.environ["LAKECAT_HOME"] = str(work / "home")  # a private catalog: the run never touches the user's
    soak = Soak(
        work,
        args.minutes,
        kills,
        seed,
        [f.strip() for f in args.formats.split(",") if f.strip()],
        args.rate,
        cdc=not args.no_cdc,
        trigger_seconds=args.trigger_seconds,
        maintain_every=args.maintain_every,
        broker_restart=not args.no_broker_restart,
        mirror=not args.no_mirror,
    )
    try:
        figures = soak.run()
    finally:
        if soak.service is not None and soak.service.poll() is None:
            os.killpg(soak.service.pid, signal.SIGKILL)
        if soak.broker is not None:
            soak.broker.stop()
        for s in soak.streams:
            if s.proc is not None and s.proc.poll() is None:
                os.killpg(s.proc.pid, signal.SIGKILL)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(figures, indent=2, default=str))
    return 0 if figures.get("ok") else 1
