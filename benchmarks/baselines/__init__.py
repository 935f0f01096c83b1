"""Each format's work written by hand with its own API, as a user would without lakecat.

The yardstick of ``python -m benchmarks`` (every figure is a ratio against it) and the independent reader of
``python -m benchmarks.soak``. Registered here by format name, so that no adapter in ``lakecat/formats/`` knows the
harness exists; a format without an entry has no yardstick (``baseline`` says so).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .delta import DeltaBaseline
from .iceberg import IcebergBaseline


class Baseline(Protocol):
    """What the bench and the soak ask of a format's hand-written baseline."""

    #: ``python -c`` one-liners of the format's light library for the bench's light reads (``timetravel_count``,
    #: ``changes_count``, ``where_limit``); ``str.format`` fields: loc, version, since, until, start, where, catalog,
    #: uri, warehouse, ident.
    light_one_liners: dict[str, str]
    #: Table properties for a build of many small files (the compaction section's tables).
    many_files_properties: dict[str, str]

    def stream_to(self, writer: Any, catalog: Any, table: Any) -> Any:
        """Start ``writer`` (a ``DataStreamWriter``) into ``table`` with the format's own sink."""
        ...

    def read(self, spark: Any, table: Any) -> Any:
        """The table's current rows (a ``DataFrame``), read the plain way."""
        ...

    def append(self, data: Any, table: Any) -> None: ...

    def append_small_files(self, spark: Any, data: Any, table: Any, rows_per_file: int) -> None:
        """Append ``data`` in files of ``rows_per_file`` rows each (one commit)."""
        ...

    def compact(self, spark: Any, catalog: Any, table: Any, target_bytes: int) -> Callable[[], Any]:
        """The engine's own compaction of ``table``, as a user calls it: a callable that runs it once."""
        ...

    def row_count_poll(self, table: Any) -> Callable[[], int]:
        """A callable answering the newest snapshot's row count from metadata, without Spark."""
        ...

    def read_rows(self, catalog: Any, entry: Any) -> list[dict[str, Any]]:
        """Every row, read by the format's own light library (pyiceberg, delta-rs), not by lakecat."""
        ...


BASELINES: dict[str, Callable[[], Baseline]] = {"iceberg": IcebergBaseline, "delta": DeltaBaseline}


def baseline(fmt: str) -> Baseline:
    """The hand-written baseline of format ``fmt``."""
    try:
        return BASELINES[fmt]()
    except KeyError:
        raise LookupError(
            f"no hand-written baseline for {fmt} tables: the benchmarks have one for {', '.join(BASELINES)}"
        ) from None
