"""A table of either format, and everything lakecat does with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .formats import get_format

if TYPE_CHECKING:
    from .catalog import Catalog
    from .formats.base import TableFormat
    from .metastore import TableEntry
    from .results import TableDescription


class Table:
    """A handle on one table; cheap to create, reads metadata only when asked."""

    def __init__(self, catalog: Catalog, entry: TableEntry) -> None:
        self.catalog = catalog
        self.entry = entry

    def __repr__(self) -> str:
        return f"Table({self.name!r}, format={self.format!r})"

    @property
    def name(self) -> str:
        return str(self.entry.ident)

    @property
    def format(self) -> str:
        return self.entry.format

    @property
    def location(self) -> str:
        return self.entry.location

    @property
    def adapter(self) -> TableFormat:
        return get_format(self.entry.format)

    @property
    def spark_name(self) -> str:
        """The quoted name Spark SQL knows this table by."""
        return self.adapter.spark_name(self.catalog, self.entry)

    def refresh(self) -> TableEntry:
        """Re-read the catalog entry (an Iceberg table's metadata pointer moves with every commit)."""
        self.entry = self.catalog.entry(self.entry.ident)
        return self.entry

    def describe(self) -> TableDescription:
        """Schema, partitioning, properties, version, files and size — from metadata, no JVM."""
        return self.adapter.describe(self.catalog, self.refresh())

    def to_spark(self):  # type: ignore[no-untyped-def]
        """The table's current contents as a Spark DataFrame."""
        return self.catalog.session().table(self.spark_name) if self.format == "iceberg" else (
            self.catalog.session().read.format("delta").load(self.location)
        )
