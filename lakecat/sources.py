"""Where an ingest reads from: a Kafka topic (or topic pattern), or a directory of landed files."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InvalidArgumentError, LakecatError

log = logging.getLogger("lakecat.kafka.client")  # librdkafka logs here, not to stderr

FILE_FORMATS = ("json", "csv", "parquet")
STARTING_OFFSETS = ("earliest", "latest")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class KafkaSource:
    """JSON events from Kafka.

    Args:
        bootstrap: ``host:port[,host:port...]``.
        topic: one topic, or several separated by commas.
        topic_pattern: a Java regex of topic names instead of ``topic`` (``subscribePattern``).
        starting_offsets: ``earliest`` or ``latest``; used only when the checkpoint is new.
        with_metadata: add ``_kafka_key``, ``_kafka_topic``, ``_kafka_partition``, ``_kafka_offset``
            and ``_kafka_timestamp`` to every row.
        options: extra ``kafka.*`` consumer settings (security, SASL), passed to Spark and the admin client.

    Example:
        >>> cat.ingest("sales.orders", KafkaSource("localhost:9092", "orders"))
    """

    bootstrap: str
    topic: str | None = None
    topic_pattern: str | None = None
    starting_offsets: str = "earliest"
    with_metadata: bool = False
    options: dict[str, str] = field(default_factory=dict)

    kind = "kafka"

    def validate(self) -> None:
        if not self.bootstrap or not str(self.bootstrap).strip():
            raise InvalidArgumentError("kafka source: bootstrap servers are empty")
        if bool(self.topic) == bool(self.topic_pattern):
            raise InvalidArgumentError("kafka source: give exactly one of topic or topic_pattern")
        if self.starting_offsets not in STARTING_OFFSETS:
            raise InvalidArgumentError(
                f"invalid starting offsets {self.starting_offsets!r}: use earliest or latest"
            )
        if self.topic_pattern:
            import re

            try:
                re.compile(self.topic_pattern)
            except re.error as e:
                raise InvalidArgumentError(f"invalid topic pattern {self.topic_pattern!r}: {e}") from None

    @property
    def topics(self) -> list[str]:
        return [t.strip() for t in (self.topic or "").split(",") if t.strip()]

    def describe(self) -> str:
        what = self.topic if self.topic else f"/{self.topic_pattern}/"
        return f"kafka {self.bootstrap} {what}"

    def fingerprint(self) -> str:
        """Names the default checkpoint: the topics, not the broker address (it may be spelled many ways)."""
        what = ",".join(sorted(self.topics)) if self.topic else f"pattern:{self.topic_pattern}"
        return f"kafka-{_digest('kafka:' + what)}"

    def admin_conf(self) -> dict[str, Any]:
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "logger": log}
        for k, v in self.options.items():
            conf[k[len("kafka."):] if k.startswith("kafka.") else k] = v
        return conf

    def check_reachable(self, timeout: float = 10.0) -> list[str]:
        """Ask the broker for its topics before Spark starts; returns the topics that will be read.

        Raises:
            LakecatError: the broker does not answer within ``timeout`` seconds, or a topic is missing.
        """
        import re

        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        try:
            meta = AdminClient(self.admin_conf()).list_topics(timeout=timeout)
        except KafkaException as e:
            raise LakecatError(
                f"cannot reach Kafka at {self.bootstrap} within {timeout:.0f}s ({e.args[0].str() if e.args else e})"
            ) from None
        existing = {name for name in meta.topics if not name.startswith("__")}
        if self.topic:
            missing = [t for t in self.topics if t not in existing]
            if missing:
                raise LakecatError(f"topic {', '.join(missing)} does not exist on {self.bootstrap}")
            return self.topics
        matching = sorted(t for t in existing if re.fullmatch(self.topic_pattern or "", t))
        if not matching:
            raise LakecatError(f"no topic on {self.bootstrap} matches the pattern {self.topic_pattern!r}")
        return matching


@dataclass(frozen=True)
class FileSource:
    """Landed files in a directory: new files only, each exactly once (the checkpoint remembers them).

    Args:
        path: a directory (local path or URI); every file in it is read, new ones as they land.
        format: ``json`` (one JSON object per line, through the same parse and dead-letter path as Kafka),
            ``csv`` (with a header row, typed by the table's schema; malformed rows are dead-lettered) or
            ``parquet`` (typed by the table's schema; incompatible column types are refused up front).
        options: extra Spark reader options (e.g. ``{"sep": ";"}`` for csv).
    """

    path: str
    format: str = "json"
    options: dict[str, str] = field(default_factory=dict)

    kind = "files"

    def validate(self) -> None:
        if self.format not in FILE_FORMATS:
            raise InvalidArgumentError(f"invalid file format {self.format!r}: use json, csv or parquet")
        if "://" not in self.path or self.path.startswith("file:"):
            local = Path(self.path.removeprefix("file://").removeprefix("file:")).expanduser()
            if not local.is_dir():
                raise InvalidArgumentError(f"file source {self.path}: not a directory")

    @property
    def uri(self) -> str:
        if "://" in self.path:
            return self.path
        return Path(self.path).expanduser().resolve().as_uri()

    def describe(self) -> str:
        return f"files {self.uri} ({self.format})"

    def fingerprint(self) -> str:
        return f"files-{_digest(f'files:{self.format}:{self.uri}')}"
