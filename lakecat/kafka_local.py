"""Run a real single-node Apache Kafka broker (KRaft, broker+controller) locally.

The broker jars are resolved once by lakecat's own resolver (``lakecat.jars``, jar set ``kafka``: the
configured repository, lakecat's jar cache, no Maven) and the broker starts from the exact files.
The broker runs detached from the calling process; its pid and ports are recorded in
``<data_dir>/kafka-state.json`` so that a later process can find, reuse or stop it.

Topic auto-creation is disabled (``auto.create.topics.enable=false``) so that a typo
in a topic name fails loudly instead of silently creating a one-partition topic; use
:func:`create_topic` first.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import os
import pathlib
import shutil
import subprocess
import uuid
from collections.abc import Iterable
from typing import Any

from .errors import EnvironmentProblemError
from .extras import require
from .jar_sets import KAFKA_VERSION, kafka_set
from .jars import JarResolutionError, jar_paths
from .processes import free_port, listening, log_tail, pid_alive, port_free, read_state, start_server, terminate

# Every user of this module needs the Kafka client: a missing one is one line naming it, not an import trace.
require("confluent_kafka", extra=None, feature="the local Kafka broker")
from confluent_kafka import KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

_LOG = logging.getLogger(__name__)
# the producer's own log: transient retries ("Coordinator load in progress: retrying") are not worth a line;
# a delivery that fails for good raises LocalKafkaError
_PRODUCER_LOG = logging.getLogger(__name__ + ".producer")
_PRODUCER_LOG.setLevel(logging.ERROR)

_STATE_FILE = "kafka-state.json"
# INFO to broker.log only (stdout/stderr of the JVM go there too, both in append mode).
_LOG4J_XML = """<?xml version="1.0" encoding="UTF-8"?><Configuration status="WARN">
<Appenders><File name="file" fileName="{path}" append="true"><PatternLayout pattern="[%d] %p %m (%c)%n"/></File>
</Appenders><Loggers><Logger name="kafka.request.logger" level="WARN"/><Logger name="state.change.logger" level="WARN"/>
<Root level="INFO"><AppenderRef ref="file"/></Root></Loggers></Configuration>
"""


class LocalKafkaError(EnvironmentProblemError, RuntimeError):
    """Raised when the local Kafka broker cannot be resolved, started or used."""


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise LocalKafkaError(
            f"'{tool}' not found on PATH; install a JDK (17+), e.g. apt-get install openjdk-17-jre-headless"
        )
    return path


def resolve_kafka_jars() -> list[pathlib.Path]:
    """The broker's jar files (Kafka, its runtime dependencies, a log4j binding), resolved once into the jar cache.

    Returns:
        The jar files, for the Java classpath.

    Raises:
        LocalKafkaError: If the jars are not cached and cannot be fetched (offline, or the repository unreachable).
    """
    try:
        return jar_paths(kafka_set())
    except JarResolutionError as e:
        raise LocalKafkaError(str(e)) from e


def _cluster_id() -> str:
    while True:  # Kafka itself avoids ids starting with '-' (they look like CLI flags)
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def _admin(bootstrap: str) -> AdminClient:
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _LOG}  # librdkafka logs -> logging
    return AdminClient(conf)


def _ready(port: int) -> bool:
    """Whether a broker on ``port`` accepts connections and answers a metadata request."""
    if not listening(port):
        return False
    try:
        return bool(_admin(f"127.0.0.1:{port}").list_topics(timeout=2).brokers)
    except KafkaException:
        return False


class LocalKafka:
    """A single-node KRaft Kafka broker whose data and state live in ``data_dir``.

    Args:
        data_dir: Directory for the server config, log segments, state and ``broker.log``.
        port: PLAINTEXT listener port on 127.0.0.1.
        controller_port: KRaft controller listener port; by default the previously used
            one for this ``data_dir``, else a free ephemeral port.
    """

    def __init__(self, *, data_dir: pathlib.Path, port: int = 9092, controller_port: int | None = None) -> None:
        self.data_dir = pathlib.Path(data_dir).expanduser().resolve()
        self.port = port
        self.controller_port = controller_port
        self.log_file = self.data_dir / "broker.log"

    def _read_state(self) -> dict[str, Any] | None:
        return read_state(self.data_dir / _STATE_FILE)

    def _running_state(self) -> dict[str, Any] | None:
        state = self._read_state()
        if state and isinstance(state.get("pid"), int) and pid_alive(state["pid"], "kafka.Kafka"):
            return state
        return None

    def _write_config(self, controller_port: int) -> pathlib.Path:
        rf1 = ("offsets.topic", "transaction.state.log", "share.coordinator.state.topic")
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            # Static quorum (no --standalone format): the controller port may change between runs.
            "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir / "kraft-logs"),
            "num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            **{f"{t}.replication.factor": "1" for t in rf1},
            **{f"{t}.min.isr": "1" for t in rf1[1:]},
        }
        path = self.data_dir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.data_dir / "log4j2.xml").write_text(_LOG4J_XML.format(path=html.escape(str(self.log_file))))
        return path

    def _java(self, java: str, jars: list[pathlib.Path]) -> list[str]:
        return [
            java,
            "-Xms128m",
            "-Xmx512m",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.xml'}",
            "-cp",
            os.pathsep.join(map(str, jars)),
        ]

    def start(self, *, timeout: float = 60.0) -> str:
        """Start the broker unless the one recorded in ``data_dir`` is already running.

        Args:
            timeout: Seconds to wait for the broker to answer metadata requests.

        Returns:
            The bootstrap address, e.g. ``"127.0.0.1:9092"`` (if a broker recorded in
            ``data_dir`` is already running, its address, whatever ``port`` says).

        Raises:
            LocalKafkaError: If a port is taken, Java or the broker's jars are missing, or the broker
                does not come up in time (the message includes the end of ``broker.log``).
        """
        state = self._running_state()
        if state:
            return f"127.0.0.1:{state['port']}"
        old = self._read_state() or {}
        cport = self.controller_port or old.get("controller_port") or free_port()
        for p, param in ((self.port, "port"), (cport, "controller_port")):
            if not port_free(p):
                raise LocalKafkaError(f"port {p} is already in use; pass another {param}=").with_cli_terms(
                    {f"another {param}=": f"--{param.replace('_', '-')}"}
                )
        java_bin = _require("java")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        java = self._java(java_bin, resolve_kafka_jars())
        config = self._write_config(cport)
        if not (self.data_dir / "kraft-logs" / "meta.properties").exists():
            cmd = [*java, "kafka.tools.StorageTool", "format", "-t", _cluster_id(), "-c", str(config)]
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
            if res.returncode != 0:
                raise LocalKafkaError(f"kafka storage format failed: {(res.stdout + res.stderr).strip()[-2000:]}")
        bootstrap = f"127.0.0.1:{self.port}"
        pid = start_server(
            [*java, "kafka.Kafka", str(config)], what="kafka", log_file=self.log_file, cwd=self.data_dir,
            ready=lambda: _ready(self.port), record=lambda pid: self._record(pid, cport), stop=self.stop,
            error=LocalKafkaError, timeout=timeout, poll=0.5, not_ready="did not become ready",
            tail=lambda: log_tail(self.log_file, lines=30),
        )  # fmt: skip
        _LOG.info("started kafka %s (pid %d) on %s", KAFKA_VERSION, pid, bootstrap)
        return bootstrap

    def _record(self, pid: int, controller_port: int) -> None:
        state = {"pid": pid, "port": self.port, "controller_port": controller_port, "version": KAFKA_VERSION}
        (self.data_dir / _STATE_FILE).write_text(json.dumps(state))

    def stop(self, *, timeout: float = 30.0) -> bool:
        """Stop the broker: SIGTERM, then SIGKILL after ``timeout`` seconds.

        Returns:
            Whether a broker was running.
        """
        state = self._running_state()
        old = self._read_state()
        if old is not None:  # drop the pid but keep the ports for the next start
            (self.data_dir / _STATE_FILE).write_text(json.dumps({**old, "pid": None}))
        if state is None:
            return False
        pid = state["pid"]
        if terminate(pid, "kafka.Kafka", timeout=timeout, what="kafka"):
            _LOG.info("stopped kafka (pid %d)", pid)
            return True
        raise LocalKafkaError(f"could not stop kafka pid {pid}; kill it manually")

    def status(self) -> dict[str, Any]:
        """Describe the broker recorded in ``data_dir``.

        Returns:
            ``{"running", "pid", "bootstrap", "data_dir", "version"}``.
        """
        state = self._running_state()
        return {
            "running": state is not None,
            "pid": state["pid"] if state else None,
            "bootstrap": f"127.0.0.1:{state['port']}" if state else None,
            "data_dir": str(self.data_dir),
            "version": KAFKA_VERSION,
        }


def create_topic(bootstrap: str, name: str, partitions: int = 3, *, timeout: float = 30.0) -> bool:
    """Create a topic (replication factor 1) unless it already exists.

    Returns:
        True if created, False if it already existed.

    Raises:
        LocalKafkaError: If creation fails for another reason.
    """
    admin = _admin(bootstrap)  # must outlive the future
    future = admin.create_topics([NewTopic(name, partitions, 1)], request_timeout=timeout)[name]
    try:
        future.result(timeout=timeout)
    except KafkaException as exc:
        if exc.args and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise LocalKafkaError(f"could not create topic {name!r}: {exc}") from exc
    return True


def send(producer: Producer, topic: str, key: Any, value: Any, on_delivery: Any) -> None:
    """Hand one message to ``producer``, waiting for room in its queue when it is full."""
    while True:
        try:
            producer.produce(topic, value=value, key=key, on_delivery=on_delivery)
            return
        except BufferError:
            producer.poll(0.1)


def produce(
    bootstrap: str,
    topic: str,
    values: Iterable[bytes | str | tuple[Any, Any]],
    key: bytes | str | None = None,
    *,
    timeout: float = 30.0,
) -> int:
    """Produce values to a topic, in order and exactly once per partition (idempotent producer), and wait
    until all are acknowledged.

    Args:
        bootstrap: Broker address.
        topic: Existing topic name.
        values: Message payloads; a ``(key, value)`` tuple gives that message its own key (a value of
            ``None`` is a tombstone).
        key: Optional key applied to every message that has none of its own.
        timeout: Seconds to wait for outstanding deliveries.

    Returns:
        The number of messages delivered.

    Raises:
        LocalKafkaError: If any delivery fails or times out.
    """
    errors: list[str] = []
    delivered = 0

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        nonlocal delivered
        if err is None:
            delivered += 1
        else:
            errors.append(str(err))

    # idempotent: a retried request (a broker slow to answer under load) can neither duplicate nor reorder
    # messages within a partition — CDC streams depend on the order of events per key
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "enable.idempotence": True,
                            "logger": _PRODUCER_LOG}  # fmt: skip
    producer = Producer(conf)
    sent = 0
    for item in values:
        msg_key, value = item if isinstance(item, tuple) else (key, item)
        send(producer, topic, msg_key, value, on_delivery)
        sent += 1
        producer.poll(0)
    remaining = producer.flush(timeout)
    if errors or remaining:
        raise LocalKafkaError(
            f"produced {delivered}/{sent} messages to {topic!r}: "
            f"{errors[0] if errors else f'{remaining} still in flight after {timeout:.0f}s'}"
        )
    return delivered
