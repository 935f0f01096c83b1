"""End-to-end tests for lakecat.kafka_local against a real single-node KRaft broker."""

from __future__ import annotations

import os
import pathlib
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer

from lakecat.jar_sets import KAFKA_VERSION
from lakecat.kafka_local import LocalKafka, LocalKafkaError, create_topic, produce
from lakecat.processes import free_port, port_free

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalKafka, str]]:
    """One real broker for the module, on a free port, always stopped at the end."""
    kafka = LocalKafka(data_dir=tmp_path_factory.mktemp("kafka"), port=free_port())
    try:
        yield kafka, kafka.start(timeout=90)
    finally:
        kafka.stop()


def test_produce_and_consume_roundtrip(broker: tuple[LocalKafka, str]) -> None:
    """1000 messages produced to a 3-partition topic all come back, from every partition."""
    _, bootstrap = broker
    assert create_topic(bootstrap, "events", partitions=3) is True
    assert create_topic(bootstrap, "events", partitions=3) is False  # idempotent
    expected = {f"msg-{i}" for i in range(1000)}
    # keyed, so the partitions they land in are fixed: keyless messages stick to one partition for librdkafka's
    # sticky-partitioning window, and 1000 small ones can all be sent inside it
    assert produce(bootstrap, "events", [(f"key-{i}", f"msg-{i}") for i in range(1000)]) == 1000

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "test-roundtrip",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    seen: list[str] = []
    partitions: set[int] = set()
    try:
        consumer.subscribe(["events"])
        deadline = time.monotonic() + 30
        while len(seen) < 1000 and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=500, timeout=1.0):
                assert msg.error() is None, msg.error()
                seen.append(msg.value().decode())
                partitions.add(msg.partition())
    finally:
        consumer.close()
    assert len(seen) == 1000 and set(seen) == expected
    assert partitions == {0, 1, 2}


def test_status_and_idempotent_start(broker: tuple[LocalKafka, str]) -> None:
    """status() sees the broker; start() again reuses it instead of launching another."""
    kafka, bootstrap = broker
    status = kafka.status()
    assert status["running"] is True and status["bootstrap"] == bootstrap
    assert status["version"] == KAFKA_VERSION and status["data_dir"] == str(kafka.data_dir)
    pid = status["pid"]
    os.kill(pid, 0)

    again = LocalKafka(data_dir=kafka.data_dir, port=kafka.port)  # e.g. a second CLI invocation
    assert again.start() == bootstrap
    assert again.status()["pid"] == pid


def test_port_in_use_raises(tmp_path: pathlib.Path, broker: tuple[LocalKafka, str]) -> None:
    """A second data dir on the same port fails fast with an actionable message."""
    kafka, _ = broker
    other = LocalKafka(data_dir=tmp_path / "other", port=kafka.port)
    with pytest.raises(LocalKafkaError, match=rf"port {kafka.port} is already in use; pass another port="):
        other.start()
    assert other.status()["running"] is False


def _gone(pid: int) -> bool:
    """The process no longer runs: no such pid, or a zombie waiting for a parent other than us to reap it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_stop_frees_port(broker: tuple[LocalKafka, str]) -> None:
    """stop() ends the process, frees the port, clears the pid; a second stop() is a no-op."""
    kafka, _ = broker
    pid = kafka.status()["pid"]
    assert kafka.stop() is True
    assert kafka.status() == {
        "running": False,
        "pid": None,
        "bootstrap": None,
        "data_dir": str(kafka.data_dir),
        "version": KAFKA_VERSION,
    }
    assert _gone(pid)
    assert port_free(kafka.port)
    assert kafka.stop() is False


def test_missing_tools_raise_clear_error(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without java on PATH (and no cached jars) start() says what to install."""
    monkeypatch.setenv("LAKECAT_JARS_CACHE", str(tmp_path / "jars"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(LocalKafkaError, match="not found on PATH; install"):
        LocalKafka(data_dir=tmp_path / "k", port=free_port()).start()


def test_cli_local_kafka_start_status_stop(tmp_path):
    """`lakecat local kafka` drives the same broker: start, status, a busy port, stop."""
    import json

    from lakecat.commands.main import app
    from typer.testing import CliRunner

    runner = CliRunner()
    port = free_port()
    data = str(tmp_path / "k")

    def run(*args):
        r = runner.invoke(app, ["local", "kafka", *args, "--port", str(port), "--data-dir", data, "--json"])
        return r.exit_code, json.loads(r.stdout)

    code, doc = run("start")
    try:
        assert code == 0 and doc["running"] is True and doc["bootstrap"] == f"127.0.0.1:{port}"
        code, doc = run("status")
        assert code == 0 and doc["running"] is True
        other = runner.invoke(
            app, ["local", "kafka", "start", "--port", str(port), "--data-dir", str(tmp_path / "other"), "--json"]
        )
        assert other.exit_code == 1 and "already in use" in json.loads(other.stdout)["error"]["message"]
    finally:
        code, doc = run("stop")
    assert code == 0 and doc["stopped"] is True and doc["running"] is False
