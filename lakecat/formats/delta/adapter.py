"""The Delta adapter: catalog entries (lakecat's registry), create/describe/drop, reads and idempotent writes.

Metadata answers come from delta-rs (no JVM); writes, reads at a version and maintenance run on Spark
with delta-spark. Versions live in ``versions.py``, maintenance in ``maintenance.py``, the log reader in
``log.py``, generated partition columns in ``partitioning.py``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...config import delta_storage_options
from ...engine import SPARK_RESERVED_PROPERTIES, first_line, spark_errors, sql_string, tblproperties, with_retries
from ...errors import CommitConflictError, InvalidArgumentError, LakecatError, NotExactError, TableAlreadyExistsError
from ...extras import installed_version
from ...files import exists
from ...identifiers import quote
from ...metastore import Registry, TableEntry
from ...partitioning import Clustering, LayoutInfo
from ...records import GENERATED_KEY
from ...results import ColumnInfo, DescribeResult
from ...schema import Column, schema_ddl, split_type_arguments
from ...units import from_millis, iso
from ..base import FoundTable, TableFormat
from .clustering import MAX_CLUSTERING_KEYS, clustering_columns
from .evolution import COLUMN_MAPPING, DeltaEvolution
from .health import DeltaHealth
from .light import DeltaLightCompaction
from .maintenance import DeltaMaintenance, spark_path
from .mirror_commit import DeltaMirror
from .partitioning import delta_generated_columns, describe_delta_partitioning
from .tags import TagStore
from .versions import DeltaVersions
from .writes import DeltaWrites

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import pyarrow as pa
    from pyspark.sql import DataFrame

    from ...config import CatalogConfig
    from ...identifiers import TableIdent
    from ...metastore import Metastore
    from ...partitioning import Layout, PartitionField
    from ..base import CatalogContext, TableHandle

REGISTRY_TABLE = "lakecat_delta_tables"
LOG_DIR = "_delta_log"
CDF_PROPERTY = "delta.enableChangeDataFeed"
DV_PROPERTY = "delta.enableDeletionVectors"
_coordinate: str | None = None

log = logging.getLogger(__name__)


def delta_coordinate() -> str:
    """Delta's Maven coordinate as delta-spark's own helper computes it (one source for the pin: the Python
    package's version). Not ``configure_spark_with_delta_pip`` itself: it sets ``spark.jars.packages``, i.e. an
    Ivy run at every start; lakecat resolves the jar once into its own cache (lakecat.jars)."""
    global _coordinate
    if _coordinate is None:
        from delta import configure_spark_with_delta_pip
        from pyspark.sql import SparkSession

        builder = configure_spark_with_delta_pip(SparkSession.Builder())  # a bare builder: no JVM, no options
        _coordinate = builder._options["spark.jars.packages"].split(",")[0]
    return _coordinate


_PRIMITIVE_SQL = {
    "boolean": "BOOLEAN", "byte": "TINYINT", "short": "SMALLINT", "integer": "INT", "long": "BIGINT",
    "float": "FLOAT", "double": "DOUBLE", "date": "DATE", "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ", "string": "STRING", "binary": "BINARY",
}  # fmt: skip


def delta_type_sql(t: Any) -> str:
    """deltalake schema type -> the Spark SQL spelling lakecat shows for every format."""
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


def _light_property(key: str, value: str, *, create: bool, writer: int = 0) -> bool:
    """Whether delta-rs sets ``key`` to ``value`` exactly as Spark does: any key of the user's or lakecat's; of Delta's
    own ``delta.*`` settings (which Spark checks, and some of which change the protocol) only those lakecat creates
    tables with, and the change data feed where the protocol already has it."""
    if key.lower() in SPARK_RESERVED_PROPERTIES:
        return False
    if not key.startswith("delta."):
        return True
    if key == CDF_PROPERTY:
        return value in ("true", "false") and (create or writer >= 4 or value == "false")
    return create and key == "delta.checkpoint.writeStatsAsStruct" and value == "true"


_DELTA_TYPES = {
    "BOOLEAN": "boolean", "TINYINT": "byte", "SMALLINT": "short", "INT": "integer", "BIGINT": "long",
    "FLOAT": "float", "DOUBLE": "double", "STRING": "string", "BINARY": "binary", "DATE": "date",
    "TIMESTAMP": "timestamp", "TIMESTAMP_NTZ": "timestamp_ntz",
}  # fmt: skip


def delta_type(sql: str) -> Any:
    """lakecat's normalised SQL type as a delta-rs type, nullable inside as Spark makes it (``containsNull``,
    ``valueContainsNull``, struct fields)."""
    from deltalake.schema import ArrayType, Field, MapType, PrimitiveType, StructType

    text = sql.strip()
    upper = text.upper()
    if upper in _DELTA_TYPES:
        return PrimitiveType(_DELTA_TYPES[upper])
    if upper.startswith("DECIMAL("):
        return PrimitiveType(upper.replace(" ", "").lower())
    inner = text[text.index("<") + 1 : text.rindex(">")]
    if upper.startswith("ARRAY<"):
        return ArrayType(delta_type(inner), contains_null=True)
    if upper.startswith("MAP<"):
        key, value = split_type_arguments(inner)
        return MapType(delta_type(key), delta_type(value), value_contains_null=True)
    fields = []
    for part in split_type_arguments(inner):
        name, _, ftype = part.partition(":")
        fields.append(Field(name.strip().strip("`"), delta_type(ftype), nullable=True))
    return StructType(fields)


def delta_schema(columns: list[Column]) -> Any:
    """A new table's columns as a delta-rs schema: Spark's types, NOT NULL, comments in the field metadata."""
    from deltalake import Field, Schema

    return Schema([Field(c.name, delta_type(c.type), nullable=c.nullable,
                         metadata={"comment": c.comment} if c.comment else {}) for c in columns])  # fmt: skip


class DeltaFormat(
    DeltaVersions,
    DeltaMaintenance,
    DeltaLightCompaction,
    DeltaHealth,
    DeltaEvolution,
    DeltaMirror,
    DeltaWrites,
    TableFormat,
):
    name = "delta"
    partition_transforms = frozenset({"identity", "years", "months", "days", "hours", "truncate"})
    hidden_partitioning = False
    compact_strategies = ("binpack", "zorder")  # OPTIMIZE has no linear sort
    safety_floor_reason = ("Delta's retentionDurationCheck: files younger than that may still be read by running queries "
                           "or belong to a commit in flight")  # fmt: skip
    metadata_upkeep_threshold = 5  # commits without a checkpoint
    gap_reasons = {
        "branches": "Delta has no branches (one line of versions); use a tag, or a copy of the table, to stage writes",
    }  # fmt: skip
    files_gone_errors = (
        "DELTA_FILE_NOT_FOUND", "DELTA_FILE_NOT_FOUND_DETAILED", "DELTA_CHANGE_DATA_FILE_NOT_FOUND",
        "DELTA_VERSIONS_NOT_CONTIGUOUS", "DELTA_LOG_FILE_NOT_FOUND", "DELTA_VERSION_NOT_FOUND",
        "org.apache.spark.sql.delta.VersionNotFoundException", "DELTA_CANNOT_RECONSTRUCT_PATH_FROM_URI",
    )  # fmt: skip
    no_change_data_errors = ("DELTA_MISSING_CHANGE_DATA",)
    change_data_property = CDF_PROPERTY

    # --- catalog entries --------------------------------------------------------------------
    def _registry(self, metastore: Metastore) -> Registry:
        return Registry(metastore, REGISTRY_TABLE, self.name)

    def metastore_status(self, config: CatalogConfig, tables: set[str], columns: Callable[[str], set[str]]) -> str:
        return "Delta tables registered there by lakecat" if REGISTRY_TABLE in tables else "no Delta tables yet"

    def prepare_metastore(self, metastore: Metastore) -> None:
        self._registry(metastore).t  # noqa: B018 - declared and created
        TagStore(metastore).t  # noqa: B018

    def list_entries(self, ctx: CatalogContext, namespace: str | None = None) -> list[TableEntry]:
        return self._registry(ctx.metastore).list(namespace)

    def get_entry(self, ctx: CatalogContext, ident: TableIdent) -> TableEntry | None:
        return self._registry(ctx.metastore).get(ident)

    def spark_name(self, ctx: CatalogContext, entry: TableEntry) -> str:
        return spark_path(entry.location)

    spark_extension = "io.delta.sql.DeltaSparkSessionExtension"

    def spark_packages(self, config: CatalogConfig) -> list[str]:
        return [delta_coordinate()]

    def runtime_versions(self) -> dict[str, str | None]:
        # delta-spark's own helper (delta_coordinate) takes the jar's version from this distribution; calling it
        # would import pyspark
        return {self.name: installed_version("delta-spark"), "deltalake": installed_version("deltalake")}

    def spark_session_conf(self, config: CatalogConfig) -> dict[str, str]:
        # spark_catalog is Delta's: Delta tables are reachable by name there (Catalog.spark), Iceberg has its own
        return {"spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
                "spark.databricks.delta.snapshotPartitions": "2"}  # fmt: skip

    def spark_catalog_sql(self, ctx: CatalogContext, entry: TableEntry) -> list[str]:
        """Statements that make the table reachable by name in Spark's session catalog."""
        return [f"CREATE NAMESPACE IF NOT EXISTS spark_catalog.{quote(entry.ident.namespace)}",
                f"CREATE TABLE IF NOT EXISTS spark_catalog.{entry.ident.quoted} USING delta LOCATION {sql_string(entry.location)}"]  # fmt: skip

    # --- existing tables (register, convert) ---------------------------------------------------
    def owns_location(self, location: str) -> bool:
        return not location.endswith(".json") and exists(f"{location.rstrip('/')}/{LOG_DIR}")

    def find_table(self, location: str) -> FoundTable:
        from deltalake import DeltaTable

        if not self.owns_location(location):
            raise InvalidArgumentError(f"{location} has no {LOG_DIR} directory: not a Delta table "
                                       "(a directory of Parquet files? use `lakecat convert`)")  # fmt: skip
        try:
            DeltaTable(location, storage_options=delta_storage_options(location)).version()
        except Exception as e:  # noqa: BLE001 - delta-rs raises several kinds for a log it cannot read
            raise InvalidArgumentError(f"{location}: its Delta log cannot be read ({first_line(str(e))})") from e
        return FoundTable(location.rstrip("/"))

    def register(self, ctx: CatalogContext, ident: TableIdent, found: FoundTable) -> TableEntry:
        return self._registry(ctx.metastore).register(ident, found.location, {"registered": True})

    def convert(self, ctx: CatalogContext, ident: TableIdent, directory: str, columns: list[Column],
                partition_columns: list[Column], partitions: dict[str, dict[str, str | None]]) -> TableEntry:  # fmt: skip
        source = "parquet.`" + directory.replace("`", "``") + "`"
        parts = f" PARTITIONED BY ({schema_ddl(partition_columns)})" if partition_columns else ""
        spark = ctx.session()
        with spark_errors("convert", ident):
            spark.sql(f"CONVERT TO DELTA {source}{parts}")
            # as on the tables lakecat creates: `changes` reads from here on
            spark.sql(f"ALTER TABLE {spark_path(directory)} SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
        return self._registry(ctx.metastore).register(
            ident, directory, {"partitioning": [c.name for c in partition_columns], "converted": True}
        )

    def check_changes(self, table: TableHandle, since: int, until: int) -> None:
        if str(self.properties(table).get(CDF_PROPERTY, "false")).lower() != "true":
            python = f"set_properties({{{CDF_PROPERTY!r}: 'true'}})"
            cli = f"`lakecat alter {table.name} --property {CDF_PROPERTY}=true`"
            error = self.unsupported(f"changes of {table.name}", f"its change data feed is off; turn it on with "
                                     f"{python} (changes are recorded from the next commit on)")  # fmt: skip
            raise error.with_cli_terms({python: cli})

    # --- create / describe / drop -------------------------------------------------------------
    def check_partitioning(self, fields: list[PartitionField], columns: list[Column]) -> None:
        delta_generated_columns(fields, columns)  # refuses bucket (and name clashes) before Spark starts

    def check_layout(self, layout: Layout, partitioning: list[PartitionField]) -> None:
        if layout.format_version is not None:
            raise self.unsupported("a format version", "it is Iceberg's: a Delta table's protocol follows the "
                                   "features it uses (deletion vectors, clustering); drop format_version=")  # fmt: skip
        if layout.clustering and partitioning:
            raise InvalidArgumentError("cluster_by= with partition_by=: Delta's liquid clustering replaces "
                                       "partitioning, a table has one or the other; drop partition_by= (the keys can "
                                       "change later with alter(cluster_by))")  # fmt: skip
        self._check_clustering(layout.clustering)

    def _check_clustering(self, clustering: Clustering) -> None:
        if clustering.zorder:
            raise self.unsupported(f"clustering by {clustering}", "Delta's liquid clustering picks its own "
                                   f"multi-column order; give the keys alone (\"{', '.join(clustering.columns)}\")")  # fmt: skip
        if len(clustering.columns) > MAX_CLUSTERING_KEYS:
            raise InvalidArgumentError(f"cluster_by={str(clustering)!r}: Delta clusters by at most {MAX_CLUSTERING_KEYS} "
                                       "columns; keep the ones queries filter on most")  # fmt: skip

    def _prepare_create(self, ctx: CatalogContext, ident: TableIdent, columns: list[Column], extra: list[str],
                        partitioning: list[PartitionField]) -> tuple[str, dict[str, Any], TableEntry | None]:  # fmt: skip
        """The new table's location and catalog metadata; the entry of the empty table an interrupted create left
        there (adopted), else None. A location holding anything else is refused."""
        location = self.default_location(ctx, ident)
        registry, meta = self._registry(ctx.metastore), {"partitioning": [str(f) for f in partitioning]}
        local = self.local_dir(location)
        if local is not None and local.exists() and any(local.iterdir()):
            if self._interrupted_create(local, location, [c.name for c in columns], len(extra)):
                log.info("create %s: adopting the empty table an interrupted create left at %s", ident, location)
                return location, meta, registry.register(ident, location, meta)
            raise TableAlreadyExistsError(
                f"create {ident}: its location {location} is not empty (data of a dropped table?); "
                "remove it or drop the old table with purge=True"
            )
        return location, meta, None

    @staticmethod
    def _create_properties(ctx: CatalogContext, properties: dict[str, str], layout: Layout | None) -> dict[str, str]:
        """The properties a new table gets: the change data feed on, checkpoint stats as structs, deletion vectors."""
        props = {CDF_PROPERTY: "true", "delta.checkpoint.writeStatsAsStruct": "true", **properties}
        dv = (
            layout.deletion_vectors
            if layout and layout.deletion_vectors is not None
            else ctx.config.default_deletion_vectors
        )
        if dv:
            props[DV_PROPERTY] = "true"
        return props

    def create_light(self, ctx: CatalogContext, ident: TableIdent, columns: list[Column],
                     partitioning: list[PartitionField], properties: dict[str, str], *,
                     layout: Layout | None = None) -> TableEntry:  # fmt: skip
        """delta-rs's create of version 0: the schema with Spark's types, nullability and comments, the partition
        columns and properties. delta-rs states the protocol in legacy versions (the change data feed: writer version
        4, which Spark reads and writes as it does its own table features); what delta-rs would write differently
        from Spark — generated columns, liquid clustering, deletion vectors, Spark's ``delta.*`` settings — is Spark's."""
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError

        extra, part_cols = delta_generated_columns(partitioning, columns)
        props = self._create_properties(ctx, properties, layout)
        if extra:
            generated = ", ".join(str(f) for f in partitioning if f.transform != "identity")
            raise NotExactError(f"partitioning by {generated} needs Delta generated columns, whose expressions Spark "
                                "writes and checks")  # fmt: skip
        if layout and layout.clustering:
            raise NotExactError("delta-rs does not create tables with liquid clustering")
        if props.get(DV_PROPERTY, "").lower() == "true":
            raise NotExactError(
                "delta-rs enables deletion vectors with table features Spark does not add (variantType)"
            )
        if spark_keys := sorted(k for k in props if not _light_property(k, props[k], create=True)):
            raise NotExactError(f"Spark checks and applies {', '.join(spark_keys)}")
        location, meta, adopted = self._prepare_create(ctx, ident, columns, extra, partitioning)
        if adopted is not None:
            return adopted
        try:
            DeltaTable.create(location, delta_schema(columns), mode="error", partition_by=part_cols or None,
                              configuration=props, raise_if_key_not_exists=False,
                              storage_options=delta_storage_options(location))  # fmt: skip
        except DeltaError as e:
            if "exists" in str(e).lower():
                raise TableAlreadyExistsError(f"create {ident}: a Delta table exists at {location} already") from e
            raise LakecatError(f"create {ident}: {first_line(str(e))}") from e
        return self._registry(ctx.metastore).register(ident, location, meta)

    def create(self, ctx: CatalogContext, ident: TableIdent, columns: list[Column], partitioning: list[PartitionField],
               properties: dict[str, str], *, layout: Layout | None = None) -> TableEntry:  # fmt: skip
        extra, part_cols = delta_generated_columns(partitioning, columns)
        location, meta, adopted = self._prepare_create(ctx, ident, columns, extra, partitioning)
        if adopted is not None:
            return adopted
        registry = self._registry(ctx.metastore)
        props = self._create_properties(ctx, properties, layout)
        cols = ", ".join([schema_ddl(columns), *extra])
        parts = f" PARTITIONED BY ({', '.join(quote(c) for c in part_cols)})" if part_cols else ""
        if layout and layout.clustering:
            parts = f" CLUSTER BY ({', '.join(quote(c) for c in layout.clustering.columns)})"
        spark = ctx.session()
        with spark_errors("create", ident):
            spark.sql(f"CREATE TABLE {spark_path(location)} ({cols}) USING delta{parts}{tblproperties(props)}")
        return registry.register(ident, location, meta)

    @staticmethod
    def _interrupted_create(local: Path, location: str, names: list[str], generated: int) -> bool:
        """Whether ``local`` holds only what a create of these columns, stopped between its CREATE TABLE and its
        catalog row, leaves: a Delta log at version 0 with no data files and exactly these columns (plus the
        generated partition columns). Adopting it loses nothing; anything else at the location is refused."""
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError
        from deltalake.exceptions import TableNotFoundError as DeltaRsNotFound

        if [p.name for p in local.iterdir()] != [LOG_DIR]:
            return False
        try:
            dt = DeltaTable(location, storage_options=delta_storage_options(location))
        except (DeltaRsNotFound, DeltaError, OSError):
            return False
        fields = [f.name for f in dt.schema().fields]
        return (dt.version() == 0 and dt.get_add_actions().num_rows == 0 and fields[: len(names)] == names
                and len(fields) == len(names) + generated)  # fmt: skip

    def load(self, table: TableHandle, version: int | None = None) -> Any:
        """The table as a delta-rs ``DeltaTable`` (no JVM)."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError as DeltaRsNotFound

        try:
            location = table.entry.location
            return DeltaTable(location, version=version, storage_options=delta_storage_options(location))
        except DeltaRsNotFound as e:
            raise LakecatError(f"table {table.entry.ident}: no Delta table at {table.entry.location}") from e

    def describe(self, table: TableHandle) -> DescribeResult:
        dt = self.load(table)
        meta = dt.metadata()
        fields = dt.schema().fields
        generation = {f.name: f.metadata.get(GENERATED_KEY) for f in fields if f.metadata.get(GENERATED_KEY)}
        columns = [ColumnInfo(f.name, delta_type_sql(f.type), f.nullable, f.metadata.get("comment"), generation.get(f.name))
                   for f in fields]  # fmt: skip
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
        return DescribeResult(
            name=table.name, format=self.name, location=table.entry.location, schema=columns,
            partitioning=describe_delta_partitioning(list(meta.partition_columns), generation),
            properties=dict(meta.configuration), current_version=dt.version(), files=int(actions.num_rows),
            size_bytes=int(sum(sizes)), records=records, last_updated=iso(from_millis(last)) if last else None,
            capabilities=self.capabilities, tags=self.refs(table),
            column_mapping=str(meta.configuration.get(COLUMN_MAPPING, "none")),
            **self._layout(table, dt).describe_fields(),
        )  # fmt: skip

    def layout(self, table: TableHandle) -> LayoutInfo:
        return self._layout(table, self.load(table))

    def _layout(self, table: TableHandle, dt: Any) -> LayoutInfo:
        protocol = dt.protocol()
        writer = set(protocol.writer_features or ())
        dv = str(dt.metadata().configuration.get(DV_PROPERTY, "false")).lower() == "true"
        keys = clustering_columns(table.entry.location, table.name, writer, list(dt.schema().fields))
        return LayoutInfo(
            clustering=Clustering(keys), clustering_method="liquid", format_version=int(protocol.min_writer_version),
            deletion_vectors=dv, delete_mode="deletion vectors" if dv else "copy-on-write",
            table_features=tuple(sorted(writer | set(protocol.reader_features or ()))),
        )  # fmt: skip

    def set_clustering(self, table: TableHandle, clustering: Clustering) -> None:
        self._check_clustering(clustering)
        if clustering and list(self.load(table).metadata().partition_columns):
            raise InvalidArgumentError(f"alter(cluster_by) on {table.name}: the table is partitioned, and Delta's "
                                       "liquid clustering replaces partitioning; create a clustered table "
                                       "(create with cluster_by=) and copy the rows")  # fmt: skip
        keys = ", ".join(quote(c) for c in clustering.columns)
        self._alter(table, "alter(cluster_by)",
                    f"ALTER TABLE {spark_path(table.location)} CLUSTER BY {f'({keys})' if keys else 'NONE'}")  # fmt: skip

    def set_deletion_vectors(self, table: TableHandle, on: bool) -> None:
        # Off keeps the vectors already written (readers still apply them) and the protocol feature; new deletes rewrite.
        self.set_properties(table, {DV_PROPERTY: "true" if on else "false"}, [])

    def properties(self, table: TableHandle) -> dict[str, str]:
        return dict(self.load(table).metadata().configuration)

    def drop(self, ctx: CatalogContext, entry: TableEntry) -> None:
        self._registry(ctx.metastore).unregister(entry.ident)
        TagStore(ctx.metastore).remove(entry.ident)

    def rename(self, ctx: CatalogContext, entry: TableEntry, new: TableIdent) -> TableEntry:
        registry = self._registry(ctx.metastore)
        registry.rename(entry.ident, new)
        try:
            self.rename_mirrors(ctx, entry, new)
        except BaseException:  # a mirror that could not follow: the table keeps its old name, nothing half-renamed
            registry.rename(new, entry.ident)
            raise
        TagStore(ctx.metastore).rename(entry.ident, new)
        renamed = registry.get(new)
        assert renamed is not None
        return renamed

    def drop_spark(self, ctx: CatalogContext, entry: TableEntry) -> None:
        with spark_errors("drop", entry.ident):  # the name a session gave the table (``Catalog.spark``); files stay
            ctx.session().sql(f"DROP TABLE IF EXISTS spark_catalog.{entry.ident.quoted}")
        self.drop(ctx, entry)

    # --- reads ------------------------------------------------------------------------------
    def read_current(self, table: TableHandle) -> DataFrame:
        return table.catalog.session().read.format("delta").load(table.location)

    def generated_columns(self, table: TableHandle) -> set[str]:
        """Spark's read schema does not say which columns are generated; the Delta log does."""
        return {f.name for f in self.load(table).schema().fields if f.metadata.get(GENERATED_KEY)}

    # --- writes -----------------------------------------------------------------------------
    def committed_batch(self, table: TableHandle, app_id: str) -> int:
        version = self.load(table).transaction_version(app_id)
        return -1 if version is None else int(version)

    def append_batch(self, table: TableHandle, df: DataFrame, app_id: str, batch_id: int) -> None:
        # Delta itself refuses a transaction version it has already committed for that application id, so a retry
        # (the log truncated under the write by a concurrent expiry) never appends the batch twice.
        def write() -> None:
            with spark_errors("ingest into", table.entry.ident):
                (df.write.format("delta").mode("append").option("txnAppId", app_id)
                 .option("txnVersion", str(batch_id)).save(table.location))  # fmt: skip

        with_retries(write, what=f"ingest into {table.name}")

    def append_batch_light(self, table: TableHandle, data: pa.Table, app_id: str, batch_id: int) -> None:
        from deltalake import CommitProperties, Transaction, write_deltalake

        # the SetTransaction Spark's txnAppId / txnVersion write
        marker = CommitProperties(app_transactions=[Transaction(app_id=app_id, version=batch_id)])
        self._light(table, "ingest into", lambda: write_deltalake(table.location, data, mode="append", commit_properties=marker,
                                                                  storage_options=delta_storage_options(table.location)))  # fmt: skip

    def merge_marker_conf(self, app_id: str, batch_id: int) -> dict[str, str]:
        # SetTransaction in the MERGE's own commit
        return {"spark.databricks.delta.write.txnAppId": app_id,
                "spark.databricks.delta.write.txnVersion": str(batch_id),
                "spark.databricks.delta.write.txnVersion.autoReset.enabled": "true"}  # fmt: skip

    def add_columns(self, table: TableHandle, columns: list[tuple[str, str]]) -> None:
        cols = ", ".join(f"{quote(name)} {ddl}" for name, ddl in columns)
        with spark_errors("add columns to", table.entry.ident):
            table.catalog.session().sql(f"ALTER TABLE {spark_path(table.location)} ADD COLUMNS ({cols})")

    def set_properties_light(self, table: TableHandle, properties: dict[str, str], removed: list[str]) -> None:
        """delta-rs's SET TBLPROPERTIES commit, where it writes the table's metadata alone: on a protocol of legacy
        versions (delta-rs restates a protocol of table features in its own terms), for keys that change no protocol."""
        from deltalake import PostCommitHookProperties
        from deltalake.exceptions import CommitFailedError

        if removed:
            raise NotExactError("delta-rs cannot unset a table property")
        protocol = self.load(table).protocol()
        if protocol.min_writer_version >= 7 or protocol.min_reader_version >= 3:
            raise NotExactError(f"delta-rs rewrites the table features of a writer version {protocol.min_writer_version} "
                                "protocol when it commits properties")  # fmt: skip
        if spark_keys := sorted(k for k in properties if not _light_property(k, properties[k], create=False,
                                                                           writer=protocol.min_writer_version)):  # fmt: skip
            raise NotExactError(f"Spark checks and applies {', '.join(spark_keys)}")

        def commit() -> None:
            try:
                self.load(table).alter.set_table_properties(
                    properties, raise_if_not_exists=False,
                    post_commithook_properties=PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False),
                )  # fmt: skip
            except CommitFailedError as e:
                raise CommitConflictError(f"alter {table.name}: commit conflict: {first_line(str(e))}") from e

        with_retries(commit, what=f"alter {table.name}")

    def set_properties_spark(self, table: TableHandle, properties: dict[str, str], removed: list[str]) -> None:
        spark = table.catalog.session()
        name = spark_path(table.location)

        def commit() -> None:
            with spark_errors("alter", table.entry.ident):
                if properties:
                    items = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in sorted(properties.items()))
                    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({items})")
                if removed:
                    spark.sql(
                        f"ALTER TABLE {name} UNSET TBLPROPERTIES IF EXISTS ({', '.join(sql_string(k) for k in removed)})"
                    )

        with_retries(commit, what=f"alter {table.name}")
