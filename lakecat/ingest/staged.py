"""Dead letters staged beside the checkpoint, committed to the dead-letter table in one write every so often.

A commit to a second table on every micro-batch costs as much as the batch's own commit (a Delta or Iceberg commit of
a few hundred rows takes about as long as one of fifty thousand), so a topic with a bad record in every batch would
ingest at half the rate of the clean topic. Instead each batch's dead letters are written as one Parquet file under
``<checkpoint>/_lakecat_dead_letters/`` before the batch returns (so before Spark logs the batch as done), and the
staged files are appended to the dead-letter table together: at the end of the first batch after the oldest is
``every_s`` old (``IngestOptions.dead_letter_every``, a minute by default), when a batch has more bad records than
``STAGE_MAX_ROWS``, and when the run ends. The commit is pyiceberg's or delta-rs's append (no Spark job) up to
``LIGHT_MAX_BYTES`` of staged files. A run that is killed leaves them staged; the next run commits them before
its first batch.

Exactly once: the dead-letter table's bookkeeping (``Target``) holds the highest batch id committed; a write of the
staged files carries the highest staged batch id, so every batch at or below it is in the table. A batch is done
for the dead letters when it is committed or staged; a staged file at or below the committed id is only removed.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..config import pyarrow_filesystem
from .dead_letters import DEAD_LETTER_REASONS, DLQ_COLUMNS, DLQ_SCHEMA, LETTER_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .target import Target

log = logging.getLogger(__name__)

STAGE_MAX_ROWS = 100_000  # a batch with more bad records commits them itself (they are not collected in the driver)
#: Staged files up to this size (Parquet, on disk) are committed by pyiceberg / delta-rs from this process; more, or a
#: dead-letter table the light library does not write as Spark would, by a Spark job that streams them
LIGHT_MAX_BYTES = 64 * 1024 * 1024
PREFIX, SUFFIX = "batch-", ".parquet"


class StagedDeadLetters:
    """The staged dead letters of one stream (one checkpoint) and their commit to the dead-letter table."""

    def __init__(self, checkpoint: str, target: Target, spark: SparkSession, *, every_s: float) -> None:
        self.uri = f"{checkpoint.rstrip('/')}/_lakecat_dead_letters"
        self.fs, self.path = pyarrow_filesystem(self.uri)
        self.target = target
        self.spark = spark
        self.every_s = every_s  # the most a staged dead letter waits for its commit while the stream runs
        self.oldest: float | None = None  # when the oldest file staged by this run was staged (monotonic)
        self._known: set[int] | None = None  # the staged batch ids

    def _listing(self) -> tuple[dict[int, str], list[str]]:
        """The staged files by batch id, and the files a killed run was writing when it died (never moved to their
        batch's name)."""
        from pyarrow import fs as pafs

        staged, unfinished = {}, []
        for i in self.fs.get_file_info(pafs.FileSelector(self.path, allow_not_found=True)):
            name = i.base_name
            if i.type != pafs.FileType.File:
                continue
            digits = name[len(PREFIX) : -len(SUFFIX)] if name.startswith(PREFIX) and name.endswith(SUFFIX) else ""
            if digits.isdigit():
                staged[int(digits)] = i.path
            elif name.startswith(".") and name.endswith(".tmp"):
                unfinished.append(i.path)
        return staged, unfinished

    def has(self, batch_id: int) -> bool:
        if self._known is None:  # listed once: only this stream's writer stages or removes files here
            self._known = set(self._listing()[0])
        return batch_id in self._known

    def collect(self, rows: DataFrame) -> Any:
        """A batch's dead letters (``dead_letters.letters``) as an Arrow table in this process."""
        return rows.toArrow()

    def collect_beside(self, rows: DataFrame) -> Callable[[], Any]:
        """``collect`` in a thread of its own, started now: its job runs beside the batch's table write, reading the
        cached batch that write fills (Spark computes a cached partition once; the other job waits for it) while the
        write commits. Returns the call that waits for the result."""
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["data"] = self.collect(rows)
            except BaseException as e:  # noqa: BLE001 - raised in the batch's thread
                box["error"] = e

        thread = threading.Thread(target=run, name="lakecat-dead-letters", daemon=True)
        thread.start()

        def result() -> Any:
            thread.join()
            if "error" in box:
                raise box["error"]
            return box["data"]

        return result

    def stage(self, data: Any, batch_id: int) -> dict[str, int]:
        """Stage a batch's dead letters (``collect``'s Arrow table) with the time and the batch id; their count by
        reason."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        n = data.num_rows
        now = pa.scalar(datetime.now(UTC), pa.timestamp("us", tz="UTC"))
        data = data.append_column("ingest_time", pa.repeat(now, n)).append_column(
            "batch_id", pa.repeat(pa.scalar(batch_id, pa.int64()), n)
        )
        self.fs.create_dir(self.path, recursive=True)
        final = f"{self.path}/{PREFIX}{batch_id:020d}{SUFFIX}"
        tmp = f"{self.path}/.{uuid.uuid4().hex}.tmp"
        with self.fs.open_output_stream(tmp) as out:
            pq.write_table(data, out)
        self.fs.move(tmp, final)  # a replayed batch stages the same rows again over its file
        if self._known is not None:
            self._known.add(batch_id)
        if self.oldest is None:
            self.oldest = time.monotonic()
        counts = {str(v["values"]): int(v["counts"]) for v in pc.value_counts(data.column("error")).to_pylist()}
        reasons = {r: counts.get(r, 0) for r in DEAD_LETTER_REASONS}
        reasons["other"] = n - sum(reasons.values())
        return {r: n for r, n in reasons.items() if n}

    def due(self) -> bool:
        return self.oldest is not None and time.monotonic() - self.oldest >= self.every_s

    def _read(self, paths: list[str]) -> Any:
        """The staged files as one Arrow table of the dead-letter table's columns."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = letter_schema(DLQ_COLUMNS)
        parts = [pq.read_table(p, filesystem=self.fs).select(list(DLQ_COLUMNS)).cast(schema) for p in paths]
        return pa.concat_tables(parts)

    def commit(self) -> int:
        """Append every staged file not yet in the table in one write, then remove the staged files; the number of
        batches written."""
        staged, unfinished = self._listing()
        self.oldest, self._known = None, set()
        done = self.target.committed_batch() if staged else -1
        pending = sorted(b for b in staged if b > done)
        if pending:
            paths = [staged[b] for b in pending]
            small = sum(i.size or 0 for i in self.fs.get_file_info(paths)) <= LIGHT_MAX_BYTES
            if not small or self.target.write_light(lambda: self._read(paths), pending[-1]) is None:
                uris = [f"{self.uri}/{PREFIX}{b:020d}{SUFFIX}" for b in pending]
                self.target.write(self.spark.read.schema(DLQ_SCHEMA).parquet(*uris).select(*DLQ_COLUMNS), pending[-1])
            log.info("committed the staged dead letters of %d batch(es) to %s", len(pending), self.target.table.name)
        for p in [*staged.values(), *unfinished]:
            self.fs.delete_file(p)
        return len(pending)


#: ``to_json``'s options for ``letters_from_json``: times to the microsecond (its default stops at milliseconds)
JSON_OPTIONS = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"}


def letter_schema(names: tuple[str, ...] = LETTER_COLUMNS) -> Any:
    """The Arrow schema of ``names`` of DLQ_SCHEMA: by default a batch's dead letters as collected
    (``LETTER_COLUMNS``); ``DLQ_COLUMNS``, as staged with their time and batch id."""
    import pyarrow as pa

    types = {"BINARY": pa.binary(), "STRING": pa.string(), "INT": pa.int32(), "BIGINT": pa.int64(),
             "TIMESTAMP": pa.timestamp("us", tz="UTC")}  # fmt: skip
    columns = dict(c.split(" ") for c in DLQ_SCHEMA.split(", "))
    return pa.schema([pa.field(name, types[columns[name]]) for name in names])


def letters_from_json(text: str | None) -> Any:
    """The dead letters a batch's observation collected (``to_json`` of ``dead_letters.LETTER_COLUMNS`` structs, binary
    values in base64) as the Arrow table ``collect`` makes."""
    import pyarrow as pa

    rows = json.loads(text) if text else []
    schema = letter_schema()
    columns = []
    for field in schema:
        values = [r.get(field.name) for r in rows]
        if pa.types.is_binary(field.type):
            values = [None if v is None else base64.b64decode(v) for v in values]
        elif pa.types.is_timestamp(field.type):
            values = [None if v is None else datetime.fromisoformat(v) for v in values]
        columns.append(pa.array(values, field.type))
    return pa.Table.from_arrays(columns, schema=schema)
