"""The source interface: what the ingest pipeline needs of any source, and nothing more.

A source opens one Structured Streaming read in one of two shapes — raw records (``value`` BINARY plus
the provenance columns ``lakecat.records.META``) that the pipeline parses as JSON, or rows already typed
by the table's columns (csv, parquet) — describes itself, names its default checkpoint, and reports its
backlog (records not yet read) from a query's progress. Like Spark's DataSource V2 or Kafka Connect's
``SourceTask``: one small interface, one class per source; the pipeline only holds the interface.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructField


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class StreamOptions:
    """How much one micro-batch may read (a source applies what it understands: ``Source.batch_limits``)."""

    max_records_per_batch: int | None = None
    max_files_per_batch: int | None = None
    max_bytes_per_batch: int | None = None


class Source(ABC):
    """Where an ingest reads from."""

    kind: ClassVar[str] = ""

    #: True: ``open_raw`` yields JSON records the pipeline parses (dead letters, unknown fields, CDC);
    #: False: ``open_typed`` yields rows already typed by the table's columns.
    parses_json: ClassVar[bool] = True
    #: The limits of ``StreamOptions`` the source applies to a micro-batch, in the order it prefers them
    #: (``records``, ``files``, ``bytes``); the ingest bounds every batch by the first it can.
    batch_limits: ClassVar[tuple[str, ...]] = ()
    #: Columns ``with_metadata`` adds to every row (name -> SQL type); empty when the source has none.
    metadata_columns: ClassVar[dict[str, str]] = {}

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (to a Spark Connect engine's Python worker) without its caches: a client is the process's own."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    @abstractmethod
    def validate(self) -> None:
        """Check the arguments (no network): raise ``InvalidArgumentError``."""

    def check_reachable(self) -> None:  # noqa: B027 - optional
        """Ask the outside world whether the source is there, before Spark starts (raise ``LakecatError``)."""

    @abstractmethod
    def describe(self) -> str:
        """One line for reports (``kafka host:9092 orders``)."""

    @abstractmethod
    def fingerprint(self) -> str:
        """A stable name for the default checkpoint of (table, source)."""

    @property
    def with_metadata(self) -> bool:
        return False

    def open_raw(self, spark: SparkSession, options: StreamOptions) -> DataFrame:
        """The stream as raw records: ``value`` (BINARY) plus ``lakecat.records.META``."""
        raise NotImplementedError(f"{self.kind} sources yield typed rows")

    def open_typed(self, spark: SparkSession, fields: list[StructField], options: StreamOptions) -> DataFrame:
        """The stream typed by ``fields``, in the parsed shape (the fields, ``ERROR``, ``META``, ``DETAIL``, ``RAW``)."""
        raise NotImplementedError(f"{self.kind} sources yield raw records")

    def metadata_values(self) -> list[Any]:
        """Spark columns filling ``metadata_columns`` from the provenance columns (same order)."""
        return []

    def check_types(self, spark: SparkSession, fields: list[StructField], table_name: str) -> None:  # noqa: B027 - optional
        """Refuse, before anything is written, input whose types the table cannot take."""

    def backlog(self, progress: dict[str, Any]) -> int | None:
        """Records at the source not yet read, given a query's last progress (None: unknown)."""
        return None

    def backlog_by_partition(self, progress: dict[str, Any]) -> dict[tuple[str, int], int] | None:
        """``backlog`` per (topic, partition) for a partitioned source (None: not partitioned, or unknown)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional
        """Release clients opened for ``backlog``."""
