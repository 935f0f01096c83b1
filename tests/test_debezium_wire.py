"""Debezium change events exactly as the PostgreSQL connector emits them with its DEFAULT settings.

JsonConverter with schemas enabled: every message is ``{"schema": ..., "payload": ...}``; the payload carries
the ``source`` and ``transaction`` blocks; ``decimal.handling.mode=precise`` sends a NUMERIC(p,s) as base64 of the
unscaled big-endian two's-complement integer (``org.apache.kafka.connect.data.Decimal``, scale in the schema
block) and a NUMERIC without a scale as ``io.debezium.data.VariableScaleDecimal`` ``{"scale", "value"}``;
``time.precision.mode=adaptive`` sends DATE as days (``io.debezium.time.Date``), TIMESTAMP(6) as microseconds
(``io.debezium.time.MicroTimestamp``), TIMESTAMPTZ as ISO text (``io.debezium.time.ZonedTimestamp``) and TIME(6)
as microseconds of the day (``io.debezium.time.MicroTime``). ``REPLICA IDENTITY DEFAULT``: updates come with
``before: null`` and deletes with only the key set in ``before``; a delete is followed by a tombstone (the key,
a null value). Nothing here is decoded by lakecat's own helpers: the encoding is written out independently.
"""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

import pytest
from helpers import new_topic, read_rows

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

TABLE_SCHEMA = ("id BIGINT NOT NULL, name STRING, amt DECIMAL(10,2), price DECIMAL(20,4), day DATE, "
                "ts TIMESTAMP, zts TIMESTAMP, at STRING")  # fmt: skip
SERVER, DB_TABLE = "dbserver1", "public.orders"


def _unscaled_b64(value: Decimal, scale: int) -> str:
    unscaled = int((value * (Decimal(10) ** scale)).to_integral_value())
    length = max(1, (unscaled + (unscaled < 0)).bit_length() // 8 + 1)
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def _row_fields() -> list[dict]:
    return [
        {"type": "int64", "optional": False, "default": 0, "field": "id"},
        {"type": "string", "optional": True, "field": "name"},
        {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
         "parameters": {"scale": "2", "connect.decimal.precision": "10"}, "field": "amt"},
        {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "scale"},
                                      {"type": "bytes", "optional": False, "field": "value"}],
         "optional": True, "name": "io.debezium.data.VariableScaleDecimal", "version": 1,
         "doc": "Variable scaled decimal", "field": "price"},
        {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "version": 1, "field": "day"},
        {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "version": 1, "field": "ts"},
        {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "version": 1, "field": "zts"},
        {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTime", "version": 1, "field": "at"},
    ]  # fmt: skip


def _envelope_schema() -> dict:
    value = {
        "type": "struct",
        "fields": _row_fields(),
        "optional": True,
        "name": f"{SERVER}.{DB_TABLE}.Value",
        "field": None,
    }
    source = {"type": "struct", "fields": [
        {"type": "string", "optional": False, "field": "version"}, {"type": "string", "optional": False, "field": "connector"},
        {"type": "string", "optional": False, "field": "name"}, {"type": "int64", "optional": False, "field": "ts_ms"},
        {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
         "parameters": {"allowed": "true,last,false,incremental"}, "default": "false", "field": "snapshot"},
        {"type": "string", "optional": False, "field": "db"}, {"type": "string", "optional": False, "field": "schema"},
        {"type": "string", "optional": False, "field": "table"}, {"type": "int64", "optional": True, "field": "txId"},
        {"type": "int64", "optional": True, "field": "lsn"}], "optional": False,
        "name": "io.debezium.connector.postgresql.Source", "field": "source"}  # fmt: skip
    transaction = {"type": "struct", "fields": [
        {"type": "string", "optional": False, "field": "id"}, {"type": "int64", "optional": False, "field": "total_order"},
        {"type": "int64", "optional": False, "field": "data_collection_order"}], "optional": True,
        "name": "event.block", "version": 1, "field": "transaction"}  # fmt: skip
    return {"type": "struct", "fields": [{**value, "field": "before"}, {**value, "field": "after"}, source, transaction,
                                         {"type": "string", "optional": False, "field": "op"},
                                         {"type": "int64", "optional": True, "field": "ts_ms"},
                                         {"type": "int64", "optional": True, "field": "ts_us"},
                                         {"type": "int64", "optional": True, "field": "ts_ns"}],
            "optional": False, "name": f"{SERVER}.{DB_TABLE}.Envelope", "version": 2}  # fmt: skip


def _key(i: int) -> bytes:
    schema = {"type": "struct", "fields": [{"type": "int64", "optional": False, "default": 0, "field": "id"}],
              "optional": False, "name": f"{SERVER}.{DB_TABLE}.Key"}  # fmt: skip
    return json.dumps({"schema": schema, "payload": {"id": i}}).encode()


def _wire_row(r: dict) -> dict:
    midnight = datetime.combine(date(2000, 1, 1), time())
    return {
        "id": r["id"], "name": r["name"], "amt": _unscaled_b64(r["amt"], 2),
        "price": {"scale": -r["price"].as_tuple().exponent, "value": _unscaled_b64(r["price"], -r["price"].as_tuple().exponent)},
        "day": (r["day"] - date(1970, 1, 1)).days,
        "ts": int((r["ts"].replace(tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(microseconds=1)),
        "zts": r["zts"].isoformat().replace("+00:00", "Z"),
        "at": int((datetime.combine(date(2000, 1, 1), r["at"]) - midnight) / timedelta(microseconds=1)),
    }  # fmt: skip


def _message(op: str, before: dict | None, after: dict | None, n: int) -> bytes:
    ts_ms = 1_767_225_600_000 + n
    payload = {
        "before": before, "after": after,
        "source": {"version": "2.7.3.Final", "connector": "postgresql", "name": SERVER, "ts_ms": ts_ms,
                   "snapshot": "true" if op == "r" else "false", "db": "shop", "schema": "public", "table": "orders",
                   "txId": 1000 + n, "lsn": 24023128 + n},
        "transaction": None if op == "r" else {"id": f"{1000 + n}:{24023128 + n}", "total_order": 1, "data_collection_order": 1},
        "op": op, "ts_ms": ts_ms + 3, "ts_us": (ts_ms + 3) * 1000, "ts_ns": (ts_ms + 3) * 1_000_000,
    }  # fmt: skip
    return json.dumps({"schema": _envelope_schema(), "payload": payload}).encode()


def _row(i: int, v: int, rnd: random.Random) -> dict:
    return {
        "id": i, "name": f"o{i}-v{v}",
        "amt": Decimal(rnd.randint(-99_999_999, 99_999_999)) / 100,  # negative amounts: two's complement on the wire
        "price": Decimal(rnd.randint(-10**15, 10**15)) / 10**4,
        "day": date(2026, 1, 1) + timedelta(days=rnd.randint(-400, 400)),
        "ts": datetime(2026, 1, 1) + timedelta(microseconds=rnd.randint(0, 10**13)),
        "zts": datetime(2026, 1, 1, tzinfo=UTC) + timedelta(milliseconds=rnd.randint(0, 10**10)),
        "at": time(rnd.randint(0, 23), rnd.randint(0, 59), rnd.randint(0, 59), rnd.randint(0, 999_999)),
    }  # fmt: skip


def debezium_stream(n_events: int, n_keys: int, seed: int = 11) -> tuple[list, dict]:
    rnd = random.Random(seed)
    state: dict[int, dict] = {}
    out: list = []
    for i in range(n_keys // 2):  # the initial snapshot: op "r"
        state[i] = _row(i, 0, rnd)
        out.append((_key(i), _message("r", None, _wire_row(state[i]), len(out))))
    for n in range(n_events):
        i = rnd.randrange(n_keys)
        if i not in state:
            state[i] = _row(i, n, rnd)
            out.append((_key(i), _message("c", None, _wire_row(state[i]), len(out))))
        elif rnd.random() < 0.75:  # REPLICA IDENTITY DEFAULT: no before image on updates
            state[i] = _row(i, n, rnd)
            out.append((_key(i), _message("u", None, _wire_row(state[i]), len(out))))
        else:  # a delete's before image holds only the key; then the tombstone
            key_only = {f["field"]: None for f in _row_fields()} | {"id": i}
            out.append((_key(i), _message("d", key_only, None, len(out))))
            out.append((_key(i), None))
            del state[i]
    return out, state


def _normal(r: dict) -> tuple:
    zts = r["zts"]
    zts = zts.replace(tzinfo=UTC) if zts.tzinfo is None else zts.astimezone(UTC)
    ts = r["ts"].replace(tzinfo=None) if isinstance(r["ts"], datetime) else r["ts"]
    at = r["at"] if isinstance(r["at"], str) else r["at"].strftime("%H:%M:%S.%f")
    return (r["id"], r["name"], Decimal(r["amt"]).quantize(Decimal("0.01")), Decimal(r["price"]).quantize(Decimal("0.0001")),
            r["day"], ts, zts, at)  # fmt: skip


def test_default_debezium_output_is_decoded_not_dead_lettered(cli, catalog, ns, kafka_bootstrap, table_format):
    from lakecat.kafka_local import produce

    messages, state = debezium_stream(400, 30)
    topic = new_topic(kafka_bootstrap)
    produce(kafka_bootstrap, topic, messages)
    name = f"{ns}.orders"
    catalog.create_table(name, schema=TABLE_SCHEMA, format=table_format)
    code, out, err = cli("ingest", name, "--kafka", kafka_bootstrap, "--topic", topic, "--cdc", "debezium", "--key", "id",
                         "--max-records-per-batch", "150", "--json")  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    dead = read_rows(catalog, f"{name}_dlq") if catalog.table_exists(f"{name}_dlq") else []
    assert report["rows_dead_lettered"] == 0, [(d["error"], d["error_detail"]) for d in dead[:5]]
    got = sorted(_normal(r) for r in read_rows(catalog, name))  # the independent reader
    want = sorted(_normal(r) for r in state.values())
    assert len(got) == len(want)
    assert got == want


def test_after_with_columns_the_table_lacks(cli, catalog, ns, kafka_bootstrap, table_format):
    """A source table gained columns (`price`, `day`) the lakehouse table lacks: without --merge-schema every
    upsert is a `schema_mismatch` dead letter naming them (nothing half-applied); with it the columns are added —
    typed by the envelope's schema block (VariableScaleDecimal, io.debezium.time.Date) — and then applied."""
    from lakecat.kafka_local import produce

    messages, state = debezium_stream(60, 10, seed=5)
    topic = new_topic(kafka_bootstrap)
    produce(kafka_bootstrap, topic, messages)
    upserts = sum(1 for _, v in messages if v is not None and json.loads(v)["payload"]["op"] != "d")
    narrow = "id BIGINT NOT NULL, name STRING, amt DECIMAL(10,2), ts TIMESTAMP, zts TIMESTAMP, at STRING"
    strict, evolving = f"{ns}.strict", f"{ns}.evolving"
    for name in (strict, evolving):
        catalog.create_table(name, schema=narrow, format=table_format)
    base = ("--kafka", kafka_bootstrap, "--topic", topic, "--cdc", "debezium", "--key", "id", "--json")

    code, out, err = cli("ingest", strict, *base)
    assert code == 0, err
    assert json.loads(out)["rows_dead_lettered"] == upserts
    dead = read_rows(catalog, f"{strict}_dlq")
    assert {d["error"] for d in dead} == {"schema_mismatch"}
    assert all("price, day" in d["error_detail"] and "--merge-schema" in d["error_detail"] for d in dead)
    assert read_rows(catalog, strict) == []  # the deletes found nothing; no upsert was applied without its columns

    code, out, err = cli("ingest", evolving, *base, "--merge-schema")
    assert code == 0, err
    report = json.loads(out)
    assert report["rows_dead_lettered"] == 0 and sorted(report["added_columns"]) == ["day", "price"], report
    rows = read_rows(catalog, evolving)  # the independent reader
    assert sorted(_normal(r) for r in rows) == sorted(_normal(r) for r in state.values())
    assert {k: type(v).__name__ for k, v in rows[0].items() if k in ("day", "price")} == {
        "day": "date",
        "price": "Decimal",
    }
