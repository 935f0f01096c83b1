"""A Kafka topic (or topic pattern) as an ingest source: JSON events, lag from the broker's watermarks."""

from __future__ import annotations

import ast
import json
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError, LakecatError
from ..extras import require
from .base import Source, StreamOptions, digest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("lakecat.kafka.client")  # librdkafka logs here, not to stderr

STARTING_OFFSETS = ("earliest", "latest")
#: The Kafka consumer settings lakecat gives Spark's reader unless ``options`` names them. ``fetch.max.wait.ms``:
#: a consumer sends its next fetch as soon as it has records, so a task that reads up to the log end leaves a fetch
#: the broker holds for this long (Kafka's default 500 ms) when no newer record exists, and the next micro-batch's
#: task on that consumer waits for it before it can fetch: ~0.5 s per such partition read (a whole drain of 20,000
#: events took ~3.0 s with the default, 2.2-2.6 s with 10 ms). Spark's tasks only ask for offsets that exist, so a
#: shorter wait costs nothing when records are there.
CONSUMER_DEFAULTS = {"fetch.max.wait.ms": "10"}

#: Columns ``with_metadata`` fills (the table must have them, or ``merge_schema`` adds them).
KAFKA_METADATA_COLUMNS = {
    "_kafka_key": "STRING",
    "_kafka_topic": "STRING",
    "_kafka_partition": "INT",
    "_kafka_offset": "BIGINT",
    "_kafka_timestamp": "TIMESTAMP",
}


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    """A progress's Kafka offsets: JSON text, a dict, or (PySpark 4's ``SourceProgress``, which applies ``str`` to the
    parsed JSON) a Python literal of that dict."""
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = ast.literal_eval(value)
    if not isinstance(parsed, dict):
        raise ValueError(f"not a Kafka offsets map: {value!r}")
    return parsed


@dataclass(frozen=True)
class KafkaSource(Source):
    """JSON events from Kafka.

    Args:
        bootstrap: ``host:port[,host:port...]``.
        topic: one topic, or several separated by commas.
        topic_pattern: a Java regex of topic names instead of ``topic`` (``subscribePattern``).
        starting_offsets: ``earliest`` or ``latest``; used only when the checkpoint is new.
        with_metadata: add ``_kafka_key``, ``_kafka_topic``, ``_kafka_partition``, ``_kafka_offset``
            and ``_kafka_timestamp`` to every row.
        options: extra ``kafka.*`` consumer settings (security, SASL), passed to Spark and the admin client;
            they override lakecat's reader defaults (``CONSUMER_DEFAULTS``: ``fetch.max.wait.ms`` = 10, for Spark only).

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
    batch_limits = ("records",)
    metadata_columns = KAFKA_METADATA_COLUMNS

    def validate(self) -> None:
        if not self.bootstrap or not str(self.bootstrap).strip():
            raise InvalidArgumentError("kafka source: bootstrap servers are empty")
        if bool(self.topic) == bool(self.topic_pattern):
            raise InvalidArgumentError("kafka source: give exactly one of topic or topic_pattern")
        if self.starting_offsets not in STARTING_OFFSETS:
            raise InvalidArgumentError(f"invalid starting offsets {self.starting_offsets!r}: use earliest or latest")
        if self.topic_pattern:
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
        return f"kafka-{digest('kafka:' + what)}"

    def consumer_options(self) -> dict[str, str]:
        """The ``kafka.*`` options of Spark's reader: ``options`` over lakecat's ``CONSUMER_DEFAULTS``."""
        merged = {**CONSUMER_DEFAULTS, **{k.removeprefix("kafka."): str(v) for k, v in self.options.items()}}
        return {f"kafka.{k}": v for k, v in merged.items()}

    def admin_conf(self) -> dict[str, Any]:
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "logger": log}
        for k, v in self.options.items():
            name = k.removeprefix("kafka.")  # Spark's prefix; the client takes the bare setting name
            if (
                name not in CONSUMER_DEFAULTS
            ):  # the Java consumer's own settings; librdkafka's admin client refuses them
                conf[name] = v
        return conf

    def check_reachable(self, timeout: float = 10.0) -> list[str]:  # type: ignore[override]
        """Ask the broker for its topics before Spark starts; returns the topics that will be read.

        Raises:
            LakecatError: the broker does not answer within ``timeout`` seconds, or a topic is missing.
            MissingDependencyError: confluent-kafka is not installed.
        """
        require("confluent_kafka", extra=None, feature="reading Kafka")
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

    def open_raw(self, spark: SparkSession, options: StreamOptions) -> DataFrame:
        from pyspark.sql import functions as F

        # failOnDataLoss stays on (Spark's default): offsets lost to retention stop the stream instead of vanishing
        reader = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("startingOffsets", self.starting_offsets)
        )
        reader = (
            reader.option("subscribe", self.topic)
            if self.topic
            else reader.option("subscribePattern", self.topic_pattern)
        )
        for k, v in self.consumer_options().items():
            reader = reader.option(k, v)
        if options.max_records_per_batch:
            reader = reader.option("maxOffsetsPerTrigger", str(options.max_records_per_batch))
        return reader.load().select(
            F.col("value"),
            F.col("key").alias("_lakecat_key"),
            F.col("topic").alias("_lakecat_topic"),
            F.col("partition").alias("_lakecat_partition"),
            F.col("offset").alias("_lakecat_offset"),
            F.col("timestamp").alias("_lakecat_ts"),
            F.col("topic").alias("_lakecat_source"),
        )

    def metadata_values(self) -> list[Any]:
        from pyspark.sql import functions as F

        return [
            F.col("_lakecat_key").cast("string").alias("_kafka_key"),
            F.col("_lakecat_topic").alias("_kafka_topic"),
            F.col("_lakecat_partition").alias("_kafka_partition"),
            F.col("_lakecat_offset").alias("_kafka_offset"),
            F.col("_lakecat_ts").alias("_kafka_timestamp"),
        ]

    def backlog(self, progress: dict[str, Any]) -> int | None:
        """End offsets on the broker minus the offsets the query has reached."""
        parts = self.backlog_by_partition(progress)
        return sum(parts.values()) if parts is not None else None

    def backlog_by_partition(self, progress: dict[str, Any]) -> dict[tuple[str, int], int] | None:
        """(topic, partition) -> end offset on the broker minus the offset the query has reached."""
        try:
            end = _offsets(progress["sources"][0]["endOffset"])
        except (KeyError, IndexError, TypeError, ValueError, SyntaxError):
            return None
        try:
            from confluent_kafka import Consumer, TopicPartition

            consumer = self.__dict__.get("_consumer")
            if consumer is None:
                consumer = Consumer({**self.admin_conf(), "group.id": "lakecat-lag", "enable.auto.commit": False})
                object.__setattr__(self, "_consumer", consumer)  # frozen dataclass: a cache, not a field
            lag: dict[tuple[str, int], int] = {}
            for topic, parts in end.items():
                for part, offset in parts.items():
                    _, high = consumer.get_watermark_offsets(TopicPartition(topic, int(part)), timeout=2)
                    lag[(topic, int(part))] = max(0, int(high) - int(offset))
            return lag
        except Exception:  # noqa: BLE001 - lag is best effort; the stream goes on
            return None

    def close(self) -> None:
        consumer = self.__dict__.pop("_consumer", None)
        if consumer is not None:
            try:
                consumer.close()
            except Exception:  # noqa: BLE001 - closing a lag client is best effort
                pass
