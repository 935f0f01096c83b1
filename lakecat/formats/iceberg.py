"""Apache Iceberg: Spark's JdbcCatalog for writes, pyiceberg for metadata reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config import pyiceberg_io_properties
from ..errors import LakecatError
from ..partitioning import iceberg_transform_word
from ..results import ColumnInfo, TableDescription
from ..schema import schema_ddl
from ..units import from_millis, iso
from .base import TableFormat, spark_errors, tblproperties

if TYPE_CHECKING:
    from ..catalog import Catalog
    from ..identifiers import TableIdent
    from ..metastore import TableEntry
    from ..partitioning import PartitionField
    from ..schema import Column

_PRIMITIVE_SQL = {
    "boolean": "BOOLEAN", "int": "INT", "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE",
    "date": "DATE", "time": "TIME", "timestamp": "TIMESTAMP_NTZ", "timestamptz": "TIMESTAMP",
    "timestamp_ns": "TIMESTAMP_NTZ", "timestamptz_ns": "TIMESTAMP", "string": "STRING",
    "uuid": "STRING", "binary": "BINARY",
}  # fmt: skip


def iceberg_type_sql(t: Any) -> str:
    """pyiceberg type -> the Spark SQL spelling lakecat shows for both formats."""
    from pyiceberg import types as it

    if isinstance(t, it.ListType):
        return f"ARRAY<{iceberg_type_sql(t.element_type)}>"
    if isinstance(t, it.MapType):
        return f"MAP<{iceberg_type_sql(t.key_type)}, {iceberg_type_sql(t.value_type)}>"
    if isinstance(t, it.StructType):
        return "STRUCT<" + ", ".join(f"{f.name}: {iceberg_type_sql(f.field_type)}" for f in t.fields) + ">"
    if isinstance(t, it.DecimalType):
        return f"DECIMAL({t.precision},{t.scale})"
    if isinstance(t, it.FixedType):
        return "BINARY"
    return _PRIMITIVE_SQL.get(str(t), str(t).upper())


class IcebergFormat(TableFormat):
    name = "iceberg"
    capabilities = {
        "hidden_partitioning": True,
        "bucket_partitioning": True,
        "time_travel": True,
        "changes": True,
        "rollback": True,
        "compact": True,
        "compact_zorder": True,
        "expire": True,
        "clean_orphans": True,
        "merge": True,
    }

    def spark_name(self, catalog: Catalog, entry: TableEntry) -> str:
        from ..identifiers import quote

        return f"{quote(catalog.name)}.{entry.ident.quoted}"

    def create(
        self,
        catalog: Catalog,
        ident: TableIdent,
        columns: list[Column],
        partitioning: list[PartitionField],
        properties: dict[str, str],
    ) -> TableEntry:
        from ..identifiers import quote

        spark = catalog.session()
        name = f"{quote(catalog.name)}.{ident.quoted}"
        props = {"format-version": "2", "write.parquet.compression-codec": "zstd", **properties}
        parts = f" PARTITIONED BY ({', '.join(f.iceberg_sql() for f in partitioning)})" if partitioning else ""
        with spark_errors("create", ident):
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {quote(catalog.name)}.{quote(ident.namespace)}")
            spark.sql(f"CREATE TABLE {name} ({schema_ddl(columns)}) USING iceberg{parts}{tblproperties(props)}")
        entry = catalog.metastore.get(ident)
        if entry is None:  # pragma: no cover - Spark said yes but the catalog row is missing
            raise LakecatError(f"create {ident}: Iceberg reported success but the table is not in the catalog")
        return entry

    def load(self, entry: TableEntry) -> Any:
        """The table's metadata as a read-only pyiceberg table (no catalog round trip, no JVM)."""
        from pyiceberg.table import StaticTable

        try:
            return StaticTable.from_metadata(entry.metadata_location, properties=pyiceberg_io_properties(entry.metadata_location))
        except FileNotFoundError as e:
            raise LakecatError(f"table {entry.ident}: its metadata file is missing ({entry.metadata_location})") from e

    def describe(self, catalog: Catalog, entry: TableEntry) -> TableDescription:
        tbl = self.load(entry)
        schema = tbl.schema()
        spec = tbl.spec()
        snapshot = tbl.current_snapshot()
        summary = snapshot.summary.additional_properties if snapshot and snapshot.summary else {}
        columns = [
            ColumnInfo(f.name, iceberg_type_sql(f.field_type), not f.required, f.doc or None) for f in schema.fields
        ]
        partitioning = [
            iceberg_transform_word(str(pf.transform), schema.find_column_name(pf.source_id) or "?")
            for pf in spec.fields
        ]
        return TableDescription(
            name=str(entry.ident),
            format=self.name,
            location=tbl.metadata.location,
            schema=columns,
            partitioning=partitioning,
            properties=dict(tbl.properties),
            current_version=snapshot.snapshot_id if snapshot else None,
            files=int(summary.get("total-data-files", 0)),
            size_bytes=int(summary.get("total-files-size", 0)),
            records=int(summary["total-records"]) if "total-records" in summary else (0 if snapshot is None else None),
            last_updated=iso(from_millis(tbl.metadata.last_updated_ms)),
            capabilities=dict(self.capabilities),
        )

    def drop(self, catalog: Catalog, entry: TableEntry) -> None:
        catalog.pyiceberg().drop_table((entry.ident.namespace, entry.ident.name))
