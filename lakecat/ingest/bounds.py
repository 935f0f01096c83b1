"""How much one micro-batch may read: the options' bound, else one sized from the driver's heap.

Without a bound Spark reads everything available in one micro-batch, so a backlog's size becomes one batch's memory,
and a batch that may hold more bad records than the driver can collect has its dead letters read by a second job.
Every ingest is therefore bounded: by ``max_records_per_batch`` (Kafka), ``max_files_per_batch`` or
``max_bytes_per_batch`` (landed files) when given, else by a default sized from the heap Spark's driver was given
(``spark.driver.memory``: lakecat's sizing of this machine, or what the user set)::

    records per batch = clamp(heap × BATCH_HEAP_SHARE / RECORD_HEAP_BYTES, MIN_BATCH_RECORDS, STAGE_MAX_ROWS)
    bytes per batch   = records per batch × EVENT_BYTES        (landed files: Spark's file source counts bytes)

What a batch holds in the driver's heap at once is its dead letters when every record is bad: each is collected by the
job that writes the good rows (its raw bytes, their text and base64 in the collected JSON, the detail, the Kafka
coordinates, and the JSON's copy on its way to Python), ``RECORD_HEAP_BYTES`` for an event of ``EVENT_BYTES``. The cap
``STAGE_MAX_ROWS`` is the most dead letters a batch stages in one file, so that every default-bounded batch collects
its dead letters in the one job (``BatchBound.collects_letters``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..sizing import SPARK_DRIVER_MEMORY, size_bytes, spark_size
from ..sources import StreamOptions
from .staged import STAGE_MAX_ROWS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..sources import Source

#: The share of the driver's heap one batch may hold; the rest is Spark's execution and storage memory, the table
#: writers' buffers and a dedupe's state.
BATCH_HEAP_SHARE = 1 / 16
#: The heap one record may take while its batch runs: a bad one's dead letter as collected (see the module's text).
RECORD_HEAP_BYTES = 1024
#: A JSON event's size in bytes, as events of a few fields are (lakecat's benchmark events are 80-100 bytes): turns a
#: record count into the byte bound of a landed-files batch.
EVENT_BYTES = 128
#: The fewest records a default batch holds (a heap below Spark's floor would give fewer).
MIN_BATCH_RECORDS = 1_000
#: The largest byte bound whose batches still collect their dead letters in the one job.
STAGE_MAX_BYTES = STAGE_MAX_ROWS * EVENT_BYTES
DEFAULT, OPTION = "default from driver memory", "option"


def default_batch_records(heap: int) -> int:
    """The records of a default micro-batch for a driver heap of ``heap`` bytes (the module's formula)."""
    return max(MIN_BATCH_RECORDS, min(int(heap * BATCH_HEAP_SHARE) // RECORD_HEAP_BYTES, STAGE_MAX_ROWS))


def default_batch_bytes(heap: int) -> int:
    """The bytes of a default landed-files micro-batch for a driver heap of ``heap`` bytes."""
    return default_batch_records(heap) * EVENT_BYTES


@dataclass(frozen=True)
class BatchBound:
    """The bound one stream's micro-batches run by, and where it came from (``OPTION`` or ``DEFAULT``)."""

    records: int | None = None  # Kafka: maxOffsetsPerTrigger
    files: int | None = None  # landed files: maxFilesPerTrigger
    bytes: int | None = None  # landed files: maxBytesPerTrigger (Spark takes one or the other)
    source: str = DEFAULT
    driver_memory_bytes: int | None = None  # the heap a default was sized from

    @property
    def stream(self) -> StreamOptions:
        return StreamOptions(self.records, self.files, self.bytes)

    @property
    def collects_letters(self) -> bool:
        """Whether no batch can hold more dead letters than the driver collects in the job that writes the good rows
        (a file count bounds no size: such batches have theirs read by a second job when they have any)."""
        return (self.records is not None and self.records <= STAGE_MAX_ROWS) or (
            self.bytes is not None and self.bytes <= STAGE_MAX_BYTES
        )

    def as_dict(self) -> dict[str, Any]:
        """For the ingest's result: the limits that apply, their source, and the heap a default came from."""
        out: dict[str, Any] = {k: v for k, v in (("records", self.records), ("files", self.files),
                                                 ("bytes", self.bytes)) if v is not None}  # fmt: skip
        out["source"] = self.source
        if self.source == DEFAULT and self.driver_memory_bytes is not None:
            out["driver_memory"] = spark_size(self.driver_memory_bytes)
        return out


def batch_bound(source: Source, heap: int, *, records: int | None = None, files: int | None = None,
                size: int | None = None) -> BatchBound:  # fmt: skip
    """The bound of ``source``'s batches: the options' ``records``, ``files`` or ``size`` (bytes) for the limits the
    source applies (``Source.batch_limits``), else the default for a driver heap of ``heap`` bytes."""
    limits = source.batch_limits
    if "records" in limits:
        if records:
            return BatchBound(records=int(records), source=OPTION)
        return BatchBound(records=default_batch_records(heap), driver_memory_bytes=heap)
    if "files" in limits and files:
        return BatchBound(files=int(files), source=OPTION)
    if "bytes" in limits:
        if size:
            return BatchBound(bytes=int(size), source=OPTION)
        return BatchBound(bytes=default_batch_bytes(heap), driver_memory_bytes=heap)
    return BatchBound(source=OPTION)  # a source that applies no limit


def driver_heap(spark: SparkSession) -> int:
    """The driver's heap in bytes, as its session was configured (``spark.driver.memory``; Spark's 1g when unset)."""
    try:
        given = spark.conf.get("spark.driver.memory", None) or SPARK_DRIVER_MEMORY
        return size_bytes(str(given), where="spark.driver.memory")
    except Exception:  # noqa: BLE001 - an unreadable setting sizes the batch as Spark's default heap would
        return size_bytes(SPARK_DRIVER_MEMORY, where="spark.driver.memory")
