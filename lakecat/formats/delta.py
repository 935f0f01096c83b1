"""Delta Lake: Spark (delta-spark) for writes, delta-rs (``deltalake``) for metadata reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import LakecatError, TableAlreadyExistsError
from ..partitioning import delta_generated_columns, describe_delta_partitioning
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
    "boolean": "BOOLEAN", "byte": "TINYINT", "short": "SMALLINT", "integer": "INT", "long": "BIGINT",
    "float": "FLOAT", "double": "DOUBLE", "date": "DATE", "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ", "string": "STRING", "binary": "BINARY",
}  # fmt: skip
GENERATION_KEY = "delta.generationExpression"


def delta_type_sql(t: Any) -> str:
    """deltalake schema type -> the Spark SQL spelling lakecat shows for both formats."""
    kind = getattr(t, "type", None)
    if kind == "array":
        return f"ARRAY<{delta_type_sql(t.element_type)}>"
    if kind == "map":
        return f"MAP<{delta_type_sql(t.key_type)}, {delta_type_sql(t.value_type)}>"
    if kind == "struct":
        return "STRUCT<" + ", ".join(f"{f.name}: {delta_type_sql(f.type)}" for f in t.fields) + ">"
    text = str(kind)
    if text.startswith("decimal"):
        return text.replace(" ", "").upper()
    return _PRIMITIVE_SQL.get(text, text.upper())


def spark_path(location: str) -> str:
    """``delta.`location``` with the path quoted for Spark SQL."""
    return "delta.`" + location.replace("`", "``") + "`"


class DeltaFormat(TableFormat):
    name = "delta"
    capabilities = {
        "hidden_partitioning": False,
        "bucket_partitioning": False,
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
        return spark_path(entry.location)

    def table_location(self, catalog: Catalog, ident: TableIdent) -> str:
        return f"{catalog.config.warehouse_uri.rstrip('/')}/{ident.namespace}/{ident.name}"

    def create(
        self,
        catalog: Catalog,
        ident: TableIdent,
        columns: list[Column],
        partitioning: list[PartitionField],
        properties: dict[str, str],
    ) -> TableEntry:
        extra, part_cols = delta_generated_columns(partitioning, columns)  # refuses bucket before Spark starts
        location = self.table_location(catalog, ident)
        local = catalog.local_path(location)
        if local is not None and local.exists() and any(local.iterdir()):
            raise TableAlreadyExistsError(
                f"create {ident}: its location {location} is not empty (data of a dropped table?); "
                "remove it or drop the old table with --purge"
            )
        from ..identifiers import quote

        props = {
            "delta.enableChangeDataFeed": "true",
            "delta.checkpoint.writeStatsAsStruct": "true",
            **properties,
        }
        cols = ", ".join([schema_ddl(columns), *extra])
        parts = f" PARTITIONED BY ({', '.join(quote(c) for c in part_cols)})" if part_cols else ""
        spark = catalog.session()
        with spark_errors("create", ident):
            spark.sql(f"CREATE TABLE {spark_path(location)} ({cols}) USING delta{parts}{tblproperties(props)}")
        return catalog.metastore.register_delta(
            ident, location, {"partitioning": [str(f) for f in partitioning]}
        )

    def load(self, entry: TableEntry, version: int | None = None) -> Any:
        """The table as a delta-rs ``DeltaTable`` (no JVM)."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError as DeltaRsNotFound

        try:
            return DeltaTable(entry.location, version=version)
        except DeltaRsNotFound as e:
            raise LakecatError(f"table {entry.ident}: no Delta table at {entry.location}") from e

    def describe(self, catalog: Catalog, entry: TableEntry) -> TableDescription:
        dt = self.load(entry)
        meta = dt.metadata()
        fields = dt.schema().fields
        generation = {f.name: f.metadata.get(GENERATION_KEY) for f in fields if f.metadata.get(GENERATION_KEY)}
        columns = [
            ColumnInfo(f.name, delta_type_sql(f.type), f.nullable, f.metadata.get("comment"), generation.get(f.name))
            for f in fields
        ]
        actions = dt.get_add_actions(flatten=True)
        sizes = actions.column("size_bytes").to_pylist() if actions.num_rows else []
        records = None
        if actions.num_rows and "num_records" in actions.schema.names:
            counts = actions.column("num_records").to_pylist()
            records = None if any(c is None for c in counts) else int(sum(counts))
        elif not actions.num_rows:
            records = 0
        history = dt.history(1)
        last = history[0].get("timestamp") if history else None
        return TableDescription(
            name=str(entry.ident),
            format=self.name,
            location=entry.location,
            schema=columns,
            partitioning=describe_delta_partitioning(list(meta.partition_columns), generation),
            properties=dict(meta.configuration),
            current_version=dt.version(),
            files=int(actions.num_rows),
            size_bytes=int(sum(sizes)),
            records=records,
            last_updated=iso(from_millis(last)) if last else None,
            capabilities=dict(self.capabilities),
        )

    def drop(self, catalog: Catalog, entry: TableEntry) -> None:
        catalog.metastore.unregister_delta(entry.ident)
