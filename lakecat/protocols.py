"""What an operation may use of a table and of its catalog.

The operations (versions, evolution, upsert, maintenance, health, adoption, ingest) take these protocols, not the
concrete ``Catalog`` and ``Table``: the façade imports the operations and the operations never import the façade, so
the package has no import circle. They extend the narrower ones the format adapters see (``CatalogContext`` and
``TableHandle`` in ``formats/base.py``); ``Catalog`` and ``Table`` satisfy both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .formats.base import CatalogContext, TableHandle

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField, StructType

    from .formats.base import TableFormat
    from .identifiers import TableIdent
    from .metastore import TableEntry
    from .results import DescribeResult


class CatalogLike(CatalogContext, Protocol):
    """A catalog as the operations use it: find, open and create tables."""

    def find_entry(self, ident: TableIdent) -> TableEntry | None: ...

    def entries(self, namespace: str | None = None, *, format: str | None = None) -> list[TableEntry]: ...

    def entry(self, name: str | TableIdent) -> TableEntry: ...

    def load_table(self, name: str | TableIdent) -> TableLike: ...

    def table_of(self, entry: TableEntry) -> TableLike: ...

    def create_table(
        self,
        name: str | TableIdent,
        *,
        schema: str,
        format: str,
        partition_by: str | list[str] | tuple[str, ...] | None = None,
        properties: dict[str, str] | None = None,
        if_not_exists: bool = False,
    ) -> TableLike: ...


class TableLike(TableHandle, Protocol):
    """A table as the operations use it: its entry, its format's adapter, its schema and its current rows."""

    @property
    def catalog(self) -> CatalogLike: ...

    @property
    def format(self) -> str: ...

    @property
    def adapter(self) -> TableFormat: ...

    @property
    def capabilities(self) -> dict[str, bool]: ...

    def on_branch(self, branch: str) -> TableLike: ...

    def describe(self) -> DescribeResult: ...

    def to_spark(self) -> DataFrame: ...

    def spark_schema(self) -> StructType: ...

    def writable_fields(self) -> list[StructField]: ...
