"""One stream: its mode, its streaming plan, its batch writer and where its batches run."""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from typing import TYPE_CHECKING

from ..engine import is_connect, spark_errors
from ..rss import PeakRss
from .batch import BatchWriter
from .checkpoint import clear_unfinished_first_batch
from .modes import mode_for
from .plan import stream_plan
from .remote import EngineSpec, LocalBatches, RemoteBatches
from .state import IngestState

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.types import StructField

    from ..protocols import CatalogLike, TableLike
    from ..results import IngestResult
    from ..sources import Source
    from .options import StreamSettings


class Pipeline:
    def __init__(self, catalog: CatalogLike, table: TableLike, source: Source, settings: StreamSettings,
                 report: IngestResult, dlq: TableLike | None, fields: list[StructField]) -> None:  # fmt: skip
        self.spark = catalog.session()
        self.table = table
        self.settings = settings
        self.state = IngestState(report)
        self.mode = mode_for(settings)
        self.remote = is_connect(self.spark)
        report_dir = f"{settings.checkpoint.rstrip('/')}/_lakecat_batches/{uuid.uuid4().hex}"
        ident = table.entry.ident
        # In process, the plan of packed batches counts each batch itself (stream_plan); the engine's worker cannot
        # reach the query's execution, and a batch read twice (no dead-letter table) is counted where it is cached.
        counted_by_plan = self.mode.packs and dlq is not None and not self.remote
        self.writer = BatchWriter(spark=self.spark, table=table, dlq=dlq, source=source, settings=settings,
                                  fields=fields, state=self.state, mode=self.mode, scratch_dir=report_dir,
                                  observation=f"lakecat_{uuid.uuid4().hex[:12]}" if counted_by_plan else None,
                                  query_name=f"lakecat_ingest_{ident.namespace}_{ident.name}_{uuid.uuid4().hex[:6]}")  # fmt: skip
        # this process and, in process, its Spark driver JVM: the ingest's memory (IngestResult.peak_rss_bytes)
        self.rss = PeakRss([os.getpid(), *([] if self.remote else _jvm_pid(self.spark))])
        self.batches: LocalBatches | RemoteBatches
        if self.remote:
            spec = EngineSpec(catalog.config, type(catalog), str(ident), table.branch_name,
                              str(dlq.entry.ident) if dlq is not None else None, source, settings, list(fields),
                              report_dir)  # fmt: skip
            self.batches = RemoteBatches(spec, self.state)
        else:
            self.writer.stage_dead_letters(settings.checkpoint)
            self.batches = LocalBatches(self.writer)

    @property
    def stream_observation(self) -> str | None:
        return self.writer.stream_observation

    def prefetch(self) -> None:
        """Look up the committed batch ids while Spark starts the query, not in the first micro-batch (the first
        Iceberg lookup imports pyiceberg). A failure here is left to the batch to raise."""

        def lookup() -> None:
            for target in (self.writer.target, self.writer.dlq):
                if target is not None:
                    with contextlib.suppress(Exception):
                        target.committed_batch()

        threading.Thread(target=lookup, name="lakecat-txn-prefetch", daemon=True).start()

    def plan(self) -> DataFrame:
        return stream_plan(self.writer, self.mode)

    def start(self) -> StreamingQuery:
        self.rss.start()
        clear_unfinished_first_batch(self.settings.checkpoint)
        self.writer.commit_dead_letters()  # what a killed run staged
        self.writer.forget_query()  # a restart runs a new execution under the same name
        writer = self.plan().writeStream.foreachBatch(self.batches.function())
        writer = writer.option("checkpointLocation", self.settings.checkpoint).queryName(self.writer.query_name)
        trigger = self.settings.options.trigger_spec
        writer = (
            writer.trigger(availableNow=True)
            if trigger.available_now
            else writer.trigger(processingTime=f"{trigger.interval_s} seconds")
        )
        with spark_errors("ingest into", self.table.entry.ident):
            return writer.start()

    def batch_active(self, query: StreamingQuery) -> bool:
        return self.batches.batch_active(query)

    def collect(self) -> None:
        self.batches.collect()

    def close(self) -> None:
        self.rss.stop()
        self.batches.close()


def _jvm_pid(spark: object) -> list[int]:
    """The pid of the session's JVM (none when it cannot be asked)."""
    try:
        return [int(spark._jvm.java.lang.ProcessHandle.current().pid())]  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - the memory figure then counts this process alone
        return []
