"""A table the stream writes to, with its exactly-once bookkeeping (kept by the table's format).

Each batch is written at most once per application id: Delta refuses a transaction version it has already committed
for the id (``txnAppId`` / ``txnVersion``), and an Iceberg batch whose id is already in the table's snapshot history
for the query (``lakecat.query-id`` / ``lakecat.batch-id``) is skipped.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import NotExactError

if TYPE_CHECKING:
    from collections.abc import Callable

    import pyarrow as pa
    from pyspark.sql import DataFrame

    from ..protocols import TableLike


@dataclass
class Target:
    """A table the stream writes to, and the highest batch id its application id has committed there."""

    table: TableLike
    app_id: str
    last_batch: int | None = None  # highest batch id known committed for app_id (None: not looked up yet)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def committed_batch(self) -> int:
        """The highest batch id this app id has committed to the table (-1: none), from table metadata."""
        with self._lock:  # the first lookup may run in the prefetch thread while the first batch asks
            if self.last_batch is None:
                self.last_batch = self.table.adapter.committed_batch(self.table, self.app_id)
            return self.last_batch

    def write(self, df: DataFrame, batch_id: int) -> bool:
        """Append ``df`` as batch ``batch_id`` unless that batch is already committed; True if written."""
        if batch_id <= self.committed_batch():
            return False
        self.table.adapter.append_batch(self.table, df, self.app_id, batch_id)
        self.last_batch = batch_id
        return True

    def write_light(self, data: Callable[[], pa.Table], batch_id: int) -> bool | None:
        """``write`` of the Arrow rows ``data()`` gives without a JVM (pyiceberg, delta-rs), the same marker on the
        commit; None when the table's light library does not write it as Spark would (the caller writes through
        Spark)."""
        if batch_id <= self.committed_batch():
            return False
        try:
            self.table.adapter.check_light_write(self.table, "append")
        except NotExactError:
            return None
        self.table.adapter.append_batch_light(self.table, data(), self.app_id, batch_id)
        self.last_batch = batch_id
        return True


def add_columns(table: TableLike, columns: list[tuple[str, str]]) -> None:
    if columns:
        table.adapter.add_columns(table, columns)
