"""Where the batches run: in this process, or in a Spark Connect engine's Python worker.

Through Spark Connect the engine pickles the ``foreachBatch`` function and calls it in its own Python worker, one per
query, for every batch (so lakecat must be installed in the engine's Python; ``lakecat local engine`` uses this one).
The worker writes each batch exactly as this process would (the same idempotent commits) and leaves its counters in a
batch-report file that this process reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..results import IngestResult
from ..spark import adopt_session
from .batch import BatchWriter
from .modes import mode_for
from .reports import read_batch_reports, remove_dir, write_batch_report
from .state import IngestState

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField

    from ..config import CatalogConfig
    from ..protocols import CatalogLike
    from ..sources import Source
    from .options import StreamSettings


@dataclass
class EngineSpec:
    """What the engine's Python worker needs to write the stream's batches: plain, picklable settings."""

    config: CatalogConfig
    catalog_type: Callable[[CatalogConfig], CatalogLike]  # pickled by reference: the worker opens the same kind
    table: str
    branch: str | None
    dlq: str | None
    source: Source
    settings: StreamSettings
    fields: list[StructField]
    report_dir: str


class EngineBatch:
    """The ``foreachBatch`` function through Spark Connect: on the first batch it opens the catalog on the session it
    is handed; each batch's counters go to a file in ``report_dir``."""

    def __init__(self, spec: EngineSpec) -> None:
        self.spec = spec
        self._writer: BatchWriter | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.spec, self._writer = state["spec"], None

    def _open(self, spark: Any) -> BatchWriter:
        spec = self.spec
        adopt_session(spark, spec.config)
        catalog = spec.catalog_type(spec.config)
        table = catalog.load_table(spec.table)
        if spec.branch:
            table = table.on_branch(spec.branch)
        dlq = catalog.load_table(spec.dlq) if spec.dlq else None
        state = IngestState(IngestResult(table=spec.table, format=table.format, source=spec.source.describe()))
        return BatchWriter(spark=catalog.session(), table=table, dlq=dlq, source=spec.source, settings=spec.settings,
                           fields=spec.fields, state=state, mode=mode_for(spec.settings),
                           scratch_dir=spec.report_dir)  # fmt: skip

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        if self._writer is None:
            self._writer = self._open(df.sparkSession)
        writer = self._writer
        stats, names = writer.run(df, batch_id)
        write_batch_report(self.spec.report_dir, stats, names, list(writer.state.report.added_columns))


class LocalBatches:
    """Batches written in this process: ``foreachBatch`` calls back into it."""

    def __init__(self, writer: BatchWriter) -> None:
        self.writer = writer

    def function(self) -> Callable[[DataFrame, int], None]:
        return self._batch

    def _batch(self, df: DataFrame, batch_id: int) -> None:
        state = self.writer.state
        state.batch_active = True
        try:
            stats, names = self.writer.run(df, batch_id)
        finally:
            state.batch_active = False
        state.record(stats, names)

    def collect(self) -> None:
        """Nothing to collect: each batch records its counters as it ends."""

    def close(self) -> None:
        """Commit the dead letters the run staged (the stream has ended)."""
        self.writer.commit_dead_letters()

    def batch_active(self, query: Any) -> bool:  # noqa: ARG002 - the same question as RemoteBatches'
        return self.writer.state.batch_active


class RemoteBatches:
    """Batches written in a Spark Connect engine's worker, their counters read from its batch-report files."""

    def __init__(self, spec: EngineSpec, state: IngestState) -> None:
        self.spec = spec
        self.state = state

    def function(self) -> Callable[[DataFrame, int], None]:
        return EngineBatch(self.spec)

    def collect(self) -> None:
        """Count the batches the engine's worker has reported since the last call."""
        for stats, names, added in read_batch_reports(self.spec.report_dir, skip=set(self.state.batches)):
            self.state.record(stats, names)
            if added:
                self.state.add_columns(added)

    def close(self) -> None:
        """Read the last reports and remove this run's report directory."""
        self.collect()
        remove_dir(self.spec.report_dir)

    def batch_active(self, query: Any) -> bool:
        try:  # the batch runs in the engine: its trigger is what is in flight
            return bool(query.status.get("isTriggerActive"))
        except Exception:  # noqa: BLE001 - the query is gone
            return False
