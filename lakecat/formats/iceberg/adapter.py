"""The Iceberg adapter: catalog entries, create/describe/drop, reads and idempotent writes.

Metadata answers come from pyiceberg (no JVM); writes, reads at a version and maintenance run on
Spark with Iceberg's runtime. Versions live in ``versions.py``, maintenance in ``maintenance.py``.
"""

from __future__ import annotations

import getpass
import json
import logging
import re
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from ...config import pyiceberg_io_properties
from ...engine import SPARK_RESERVED_PROPERTIES, first_line, spark_errors, sql_string, tblproperties, with_retries
from ...errors import CommitConflictError, InvalidArgumentError, LakecatError, NotExactError, TableAlreadyExistsError
from ...extras import installed_version
from ...files import exists, fs_for
from ...identifiers import TableIdent, quote
from ...metastore import TableEntry, catalog_filter, key_of, normalize_location, table_key_columns
from ...partitioning import Clustering, LayoutInfo
from ...results import ColumnInfo, DescribeResult, PartitionSpecInfo
from ...schema import Column, schema_ddl
from ...units import from_millis, iso
from ..base import FoundTable, LocalServerFactory, TableFormat
from . import rest
from . import spark as spark_setup
from .evolution import (
    ZORDER_PROPERTY,
    IcebergEvolution,
    _transform,
    iceberg_schema,
    iceberg_transform_word,
    spec_field_name,
    zorder_keys,
)
from .health import IcebergHealth
from .light import IcebergLightCompaction
from .maintenance import IcebergMaintenance
from .markers import MARKER_BATCH, MARKER_PROPERTY_PREFIX, MARKER_QUERY, stream_markers
from .rest_server import LocalRestCatalog
from .versions import IcebergVersions, snapshot_view
from .writes import IcebergWrites

if TYPE_CHECKING:
    from collections.abc import Callable

    import pyarrow as pa
    from pyspark.sql import DataFrame

    from ...config import CatalogConfig
    from ...metastore import Metastore
    from ...partitioning import Layout, PartitionField
    from ..base import CatalogContext, TableHandle


#: Iceberg's JdbcCatalog tables in the metastore (Spark's JdbcCatalog and pyiceberg's SqlCatalog share them)
JDBC_TABLES = "iceberg_tables"
JDBC_NAMESPACE_PROPERTIES = "iceberg_namespace_properties"

_PRIMITIVE_SQL = {
    "boolean": "BOOLEAN", "int": "INT", "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE",
    "date": "DATE", "time": "TIME", "timestamp": "TIMESTAMP_NTZ", "timestamptz": "TIMESTAMP",
    "timestamp_ns": "TIMESTAMP_NTZ", "timestamptz_ns": "TIMESTAMP", "string": "STRING",
    "uuid": "STRING", "binary": "BINARY",
}  # fmt: skip


def iceberg_type_sql(t: str | dict[str, Any]) -> str:
    """An Iceberg type in the metadata file's JSON form (``"long"``, ``"decimal(10, 2)"``, ``{"type": "list", ...}``)
    -> the Spark SQL spelling lakecat shows for every format."""
    if isinstance(t, dict):
        kind = str(t.get("type", "")).lower()
        if kind == "list":
            return f"ARRAY<{iceberg_type_sql(t['element'])}>"
        if kind == "map":
            return f"MAP<{iceberg_type_sql(t['key'])}, {iceberg_type_sql(t['value'])}>"
        if kind == "struct":
            return (
                "STRUCT<"
                + ", ".join(f"{f['name']}: {iceberg_type_sql(f['type'])}" for f in t.get("fields") or [])
                + ">"
            )
        return kind.upper()
    text = t.strip().lower()
    decimal = re.fullmatch(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)", text)
    if decimal:
        return f"DECIMAL({decimal.group(1)},{decimal.group(2)})"
    if text.startswith("fixed["):
        return "BINARY"
    return _PRIMITIVE_SQL.get(text, text.upper())


def _column_names(fields: list[dict[str, Any]], prefix: str = "") -> dict[int, str]:
    """Field id -> the column's full name (``info.region``, ``tags.element``), as pyiceberg's ``find_column_name``."""
    out: dict[int, str] = {}

    def walk(t: Any, name: str) -> None:
        if not isinstance(t, dict):
            return
        kind = t.get("type")
        if kind == "struct":
            out.update(_column_names(t.get("fields") or [], f"{name}."))
        elif kind == "list":
            out[int(t["element-id"])] = f"{name}.element"
            walk(t.get("element"), f"{name}.element")
        elif kind == "map":
            out[int(t["key-id"])], out[int(t["value-id"])] = f"{name}.key", f"{name}.value"
            walk(t.get("key"), f"{name}.key")
            walk(t.get("value"), f"{name}.value")

    for f in fields:
        name = f"{prefix}{f['name']}"
        out[int(f["id"])] = name
        walk(f.get("type"), name)
    return out


def _current(doc: dict[str, Any], many: str, current_id: str, id_key: str, single: str) -> tuple[Any, list[Any]]:
    """The current schema or partition spec of a metadata document, and all of them (format v1 files may carry only
    the single ``schema`` / ``partition-spec``)."""
    items = list(doc.get(many) or [])
    if not items and single in doc:
        one = doc[single]
        items = [one if isinstance(one, dict) else {id_key: 0, "fields": one}]
    wanted = doc.get(current_id, items[0].get(id_key, 0) if items else 0)
    current = next((x for x in items if x.get(id_key, 0) == wanted), items[-1] if items else {"fields": []})
    return current, items


def partition_sql(field: PartitionField) -> str:
    """A partition field in Spark's Iceberg DDL (``days(`ts`)``, ``bucket(16, `id`)``)."""
    col = quote(field.column)
    if field.transform == "identity":
        return col
    if field.param is not None:
        return f"{field.transform}({field.param}, {col})"
    return f"{field.transform}({col})"


#: The write modes that make deletes, updates and merges mark rows (merge-on-read) instead of rewriting files.
ROW_DELETE_MODES = ("write.delete.mode", "write.update.mode", "write.merge.mode")


def _delete_mode(version: int, props: dict[str, str]) -> str:
    modes = [props.get(k, "copy-on-write") for k in ROW_DELETE_MODES]
    if all(m == "merge-on-read" for m in modes):
        return "deletion vectors" if version >= 3 else "position deletes"
    if all(m == "copy-on-write" for m in modes):
        return "copy-on-write"
    return "mixed (" + ", ".join(f"{k.split('.')[1]}: {m}" for k, m in zip(ROW_DELETE_MODES, modes, strict=True)) + ")"


def _sort_order(doc: dict[str, Any], names: dict[int, str]) -> list[tuple[str, str]]:
    """(source column, the field in Iceberg's words) of each field of the table's default sort order."""
    wanted = doc.get("default-sort-order-id", 0)
    order: dict[str, Any] = next(
        (o for o in doc.get("sort-orders") or [] if o.get("order-id") == wanted), {"fields": []}
    )
    out: list[tuple[str, str]] = []
    for f in order.get("fields") or []:
        source = names.get(int(f.get("source-id", -1)), "?")
        nulls = "NULLS FIRST" if f.get("null-order") == "nulls-first" else "NULLS LAST"
        out.append((source, f"{iceberg_transform_word(str(f.get('transform', 'identity')), source)} "
                            f"{str(f.get('direction', 'asc')).upper()} {nulls}"))  # fmt: skip
    return out


METADATA_SUFFIX = ".metadata.json"
# 00042-<uuid>.metadata.json (catalogs), v42.metadata.json (Hadoop tables), optionally compressed (.gz.metadata.json)
_METADATA_VERSION = re.compile(r"^(?:v(\d+)|(\d+)-[^.]*)(?:\.[a-z0-9]+)?\.metadata\.json$")


def _children(directory: str) -> list[str]:
    """Names of the files directly in ``directory`` (empty when it does not exist)."""
    from pyarrow import fs

    filesystem, path = fs_for(directory)
    try:
        infos = filesystem.get_file_info(fs.FileSelector(path, allow_not_found=True))
    except (OSError, ValueError):
        return []
    return [i.base_name for i in infos if i.type == fs.FileType.File]


def newest_metadata(location: str) -> tuple[str, list[str]]:
    """The current metadata file of the table directory ``location`` and a note saying how it was chosen.

    Hadoop tables name it in ``metadata/version-hint.text``; otherwise the highest version number wins, and two
    files with that number (two writers, or a copied directory) are ambiguous: exit 2 with the candidates.
    """
    meta_dir = f"{location.rstrip('/')}/metadata"
    names = _children(meta_dir)
    candidates = sorted(n for n in names if n.endswith(METADATA_SUFFIX))
    if not candidates:
        raise InvalidArgumentError(f"{location} has no metadata/*{METADATA_SUFFIX}: not an Iceberg table directory")
    if "version-hint.text" in names:
        filesystem, hint_path = fs_for(f"{meta_dir}/version-hint.text")
        with filesystem.open_input_stream(hint_path) as f:
            hint = f.read().decode().strip()
        hinted = f"v{hint}{METADATA_SUFFIX}"
        if hinted in candidates:
            return f"{meta_dir}/{hinted}", [f"took metadata/{hinted} (named by metadata/version-hint.text)"]
    versions: dict[int, list[str]] = {}
    for n in candidates:
        m = _METADATA_VERSION.match(n)
        versions.setdefault(int(m.group(1) or m.group(2)) if m else -1, []).append(n)
    top = max(versions)
    if len(versions[top]) > 1:
        raise InvalidArgumentError(
            f"{location} is ambiguous: {len(versions[top])} metadata files share the newest version "
            f"({', '.join('metadata/' + n for n in versions[top])}); register one of them by its path"
        )
    chosen = versions[top][0]
    others = len(candidates) - 1
    return f"{meta_dir}/{chosen}", [f"took metadata/{chosen}, the newest of {len(candidates)} metadata files"
                                    if others else f"took metadata/{chosen}"]  # fmt: skip


def _location(metadata_location: str | None) -> str:
    if not metadata_location:
        return ""
    return normalize_location(metadata_location.rsplit("/metadata/", 1)[0])


class IcebergFormat(
    IcebergVersions,
    IcebergMaintenance,
    IcebergLightCompaction,
    IcebergHealth,
    IcebergEvolution,
    IcebergWrites,
    TableFormat,
):
    name = "iceberg"
    partition_transforms = frozenset({"identity", "years", "months", "days", "hours", "bucket", "truncate"})
    hidden_partitioning = True
    partition_evolution_in_place = True
    compact_strategies = ("binpack", "sort", "zorder")
    safety_floor = timedelta(hours=24)
    safety_floor_reason = ("Iceberg's orphan-file rule: files younger than that may belong to a commit still in flight, "
                           "and readers may still be planning against those snapshots")  # fmt: skip
    default_orphan_window = timedelta(days=3)
    metadata_upkeep_threshold = 5  # manifests in the current snapshot
    # Iceberg's Spark runtime says a snapshot id it does not have with a plain IllegalArgumentException (no condition,
    # no class of its own): only the message tells it from any other bad argument.
    files_gone_messages = ("Cannot find snapshot",)

    _sql_catalogs: ClassVar[dict[tuple[Any, ...], Any]] = {}
    # pyiceberg tables read from metadata files, by file (immutable; parsed once per process, not once per question)
    _static: ClassVar[dict[str, Any]] = {}

    def local_servers(self) -> dict[str, LocalServerFactory]:
        return {"rest": LocalRestCatalog}

    # --- catalog entries --------------------------------------------------------------------
    def check_config(self, config: CatalogConfig) -> None:
        rest.check(config)

    def catalog_kind(self, config: CatalogConfig) -> str:
        return rest.kind(config) if rest.is_external(config) else super().catalog_kind(config)

    def metastore_status(self, config: CatalogConfig, tables: set[str], columns: Callable[[str], set[str]]) -> str:
        if rest.is_external(config):
            return f"Iceberg tables in the {rest.kind(config)} catalog"
        if JDBC_TABLES not in tables:
            return "no Iceberg tables yet"
        # Iceberg's JDBC catalog schema V1 adds an iceberg_type column (views); V0 (no column) holds tables only
        views = "tables and views" if "iceberg_type" in columns(JDBC_TABLES) else "tables"
        return f"Iceberg {views} kept in Iceberg's own JDBC catalog tables there (Spark and pyiceberg read the same)"

    def prepare_metastore(self, metastore: Metastore) -> None:
        if rest.is_external(metastore.config):  # the tables live in their own catalog (REST, Hive, Glue)
            return
        # Iceberg's JdbcCatalog schema (v0), created here only when neither engine has created it yet, so that
        # Spark's JdbcCatalog and pyiceberg's SqlCatalog share it.
        import sqlalchemy as sa

        metastore.table(
            JDBC_TABLES,
            *table_key_columns(),
            sa.Column("metadata_location", sa.String(1000)),
            sa.Column("previous_metadata_location", sa.String(1000)),
        )
        metastore.table(
            JDBC_NAMESPACE_PROPERTIES,
            sa.Column("catalog_name", sa.String(255), primary_key=True),
            sa.Column("namespace", sa.String(255), primary_key=True),
            sa.Column("property_key", sa.String(255), primary_key=True),
            sa.Column("property_value", sa.String(1000)),
        )

    def _entry(self, row: dict[str, Any]) -> TableEntry:
        return TableEntry(TableIdent(row["table_namespace"], row["table_name"]), self.name,
                          _location(row["metadata_location"]), metadata_location=row["metadata_location"])  # fmt: skip

    def list_entries(self, ctx: CatalogContext, namespace: str | None = None) -> list[TableEntry]:
        if rest.is_external(ctx.config):
            return rest.list_entries(self.name, ctx.config, namespace)
        return [self._entry(row) for row in ctx.metastore.find(JDBC_TABLES, catalog_filter(ctx.metastore, namespace))]

    def get_entry(self, ctx: CatalogContext, ident: TableIdent) -> TableEntry | None:
        if rest.is_external(ctx.config):
            return rest.get_entry(self.name, ctx.config, ident)
        rows = ctx.metastore.find(JDBC_TABLES, key_of(ctx.metastore, ident))
        return self._entry(rows[0]) if rows else None

    def sql_catalog(self, ctx: CatalogContext) -> Any:
        """pyiceberg's catalog of the config's Iceberg tables: SqlCatalog over the same metastore, same catalog name
        as Spark's, or the REST (Hive, Glue) catalog the config names."""
        if rest.is_external(ctx.config):
            return rest.catalog(ctx.config)
        props = ctx.config.pyiceberg_properties()  # the catalog's own object store
        key = (ctx.name, ctx.config.metastore.sqlalchemy_url, tuple(sorted(props.items())))
        if key not in self._sql_catalogs:
            ctx.metastore.ready()  # lakecat's schema of the catalog tables, not pyiceberg's, when they are new
            logging.getLogger("pyiceberg.catalog.sql").setLevel(logging.ERROR)
            from pyiceberg.catalog.sql import SqlCatalog

            self._sql_catalogs[key] = SqlCatalog(ctx.name, uri=ctx.config.metastore.sqlalchemy_url,
                                                 warehouse=ctx.config.warehouse_uri, **props)  # fmt: skip
        return self._sql_catalogs[key]

    def library_catalog(self, ctx: CatalogContext) -> Any:
        return self.sql_catalog(ctx)

    def spark_name(self, ctx: CatalogContext, entry: TableEntry) -> str:
        return f"{quote(ctx.name)}.{entry.ident.quoted}"

    spark_extension = spark_setup.EXTENSION

    def spark_packages(self, config: CatalogConfig) -> list[str]:
        return [spark_setup.RUNTIME, *([spark_setup.AWS_BUNDLE] if config.object_storage else [])]

    def spark_catalog_conf(self, config: CatalogConfig) -> dict[str, str]:
        return spark_setup.catalog_conf(config)

    def runtime_versions(self) -> dict[str, str | None]:
        return {self.name: spark_setup.RUNTIME.rsplit(":", 1)[1], "pyiceberg": installed_version("pyiceberg")}

    # --- existing tables (register, convert) ---------------------------------------------------
    def owns_location(self, location: str) -> bool:
        if location.endswith(METADATA_SUFFIX):
            return exists(location)
        return any(n.endswith(METADATA_SUFFIX) for n in _children(f"{location.rstrip('/')}/metadata"))

    def find_table(self, location: str) -> FoundTable:
        from pyiceberg.table import StaticTable

        if location.endswith(METADATA_SUFFIX):
            metadata, notes = location, list[str]()
        else:
            metadata, notes = newest_metadata(location)
        try:
            tbl = StaticTable.from_metadata(metadata, properties=pyiceberg_io_properties(metadata))
        except FileNotFoundError as e:
            raise InvalidArgumentError(f"no such file: {metadata}") from e
        except Exception as e:  # noqa: BLE001 - a file that is not JSON, or not Iceberg's metadata
            raise InvalidArgumentError(f"{metadata} is not a readable Iceberg metadata file: "
                                       f"{first_line(str(e)) or type(e).__name__}") from e  # fmt: skip
        return FoundTable(normalize_location(tbl.metadata.location), metadata, notes)

    def register(self, ctx: CatalogContext, ident: TableIdent, found: FoundTable) -> TableEntry:
        from pyiceberg.exceptions import TableAlreadyExistsError as PyIcebergExists

        catalog = self.sql_catalog(ctx)
        catalog.create_namespace_if_not_exists(ident.namespace)
        try:
            catalog.register_table((ident.namespace, ident.name), found.metadata_location)
        except PyIcebergExists as e:
            raise TableAlreadyExistsError(f"table {ident} already exists") from e
        entry = self.get_entry(ctx, ident)
        if entry is None:  # pragma: no cover - pyiceberg said yes but the catalog row is missing
            raise LakecatError(f"register {ident}: pyiceberg reported success but the table is not in the catalog")
        return entry

    def convert(self, ctx: CatalogContext, ident: TableIdent, directory: str, columns: list[Column],
                partition_columns: list[Column], partitions: dict[str, dict[str, str | None]]) -> TableEntry:  # fmt: skip
        spark = ctx.session()
        name = f"{quote(ctx.name)}.{ident.quoted}"
        props = {"format-version": "2", "write.parquet.compression-codec": "zstd"}
        parts = f" PARTITIONED BY ({', '.join(quote(c.name) for c in partition_columns)})" if partition_columns else ""
        # add_files from a path would list the whole directory, where the new table's metadata/ now sits beside the
        # k=v/ partitions (Spark's partition discovery then fails): instead a transient external Parquet table in the
        # session catalog names each partition's own directory, and add_files reads the files from there.
        staging = f"spark_catalog.default.{quote('lakecat_convert_' + uuid.uuid4().hex[:12])}"
        with spark_errors("convert", ident):
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {quote(ctx.name)}.{quote(ident.namespace)}")
            spark.sql(f"CREATE TABLE {staging} ({schema_ddl([*columns, *partition_columns])}) USING parquet{parts} "
                      f"LOCATION {sql_string(directory)}")  # fmt: skip
            try:
                for sub, values in sorted(partitions.items()):
                    spec = ", ".join(
                        f"{quote(k)} = {'NULL' if v is None else sql_string(v)}" for k, v in values.items()
                    )
                    spark.sql(
                        f"ALTER TABLE {staging} ADD PARTITION ({spec}) LOCATION {sql_string(directory.rstrip('/') + '/' + sub)}"
                    )
                spark.sql(f"CREATE TABLE {name} ({schema_ddl([*columns, *partition_columns])}) USING iceberg{parts} "
                          f"LOCATION {sql_string(directory)}{tblproperties(props)}")  # fmt: skip
                try:
                    spark.sql(f"CALL {quote(ctx.name)}.system.add_files(table => {sql_string(ident.quoted)}, "
                              f"source_table => {sql_string(staging)})").collect()  # fmt: skip
                except Exception:  # noqa: BLE001 - re-raised: only the half-made table's catalog entry goes first
                    self.sql_catalog(ctx).drop_table((ident.namespace, ident.name))  # nothing half-made stays behind
                    raise
            finally:
                spark.sql(f"DROP TABLE IF EXISTS {staging}")  # external: its files stay
        entry = self.get_entry(ctx, ident)
        if entry is None:  # pragma: no cover
            raise LakecatError(f"convert {ident}: Iceberg reported success but the table is not in the catalog")
        return entry

    # --- create / describe / drop -------------------------------------------------------------
    def check_layout(self, layout: Layout, partitioning: list[PartitionField]) -> None:
        if layout.format_version not in (None, 2, 3):
            raise InvalidArgumentError(f"format_version={layout.format_version}: lakecat creates Iceberg tables of "
                                       "format version 2 or 3")  # fmt: skip

    @staticmethod
    def _create_properties(ctx: CatalogContext, properties: dict[str, str],
                           layout: Layout | None) -> tuple[dict[str, str], Clustering]:  # fmt: skip
        """The properties a new table gets (format version, codec, delete modes, z-order keys) and its clustering."""
        version = layout.format_version if layout and layout.format_version else ctx.config.default_format_version
        props = {"format-version": "2", "write.parquet.compression-codec": "zstd", **properties}
        if version:
            props["format-version"] = str(version)
        dv = (
            layout.deletion_vectors
            if layout and layout.deletion_vectors is not None
            else ctx.config.default_deletion_vectors
        )
        if dv:
            props.update(dict.fromkeys(ROW_DELETE_MODES, "merge-on-read"))
        clustering = layout.clustering if layout else Clustering()
        if clustering.zorder:
            props[ZORDER_PROPERTY] = str(clustering)
        return props, clustering

    def create_light(self, ctx: CatalogContext, ident: TableIdent, columns: list[Column],
                     partitioning: list[PartitionField], properties: dict[str, str], *,
                     layout: Layout | None = None) -> TableEntry:  # fmt: skip
        """pyiceberg's create, with what Spark's CREATE TABLE writes: the same field ids and partition field names, the
        ``owner`` property Spark adds, the table at ``<warehouse>/<namespace>/<table>`` as Spark's JDBC catalog puts it
        (a REST catalog chooses the location itself, for both engines), a sort order with Spark's range distribution."""
        from pyiceberg.exceptions import TableAlreadyExistsError as PyIcebergExists
        from pyiceberg.partitioning import PartitionField as SpecField
        from pyiceberg.partitioning import PartitionSpec
        from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
        from pyiceberg.transforms import IdentityTransform

        props, clustering = self._create_properties(ctx, properties, layout)
        if reserved := sorted(k for k in props if k.lower() in SPARK_RESERVED_PROPERTIES):
            raise NotExactError(f"Spark reserves {', '.join(reserved)} (not a table property)")
        if int(props["format-version"]) >= 3:
            raise NotExactError("pyiceberg does not write format version 3 metadata as Iceberg's Java library does")
        kind = rest.kind(ctx.config)
        if rest.is_external(ctx.config) and not rest.is_rest(ctx.config):
            raise NotExactError(f"a {kind} catalog places new tables by its own rules, which Spark's {kind} catalog "
                                "applies; pyiceberg's may differ")  # fmt: skip
        schema = iceberg_schema(columns)
        ids = {f.name: f.field_id for f in schema.fields}
        spec = PartitionSpec(*(SpecField(source_id=ids[f.column], field_id=1000 + i, transform=_transform(f),
                                         name=spec_field_name(f)) for i, f in enumerate(partitioning)))  # fmt: skip
        order = SortOrder()
        if clustering and not clustering.zorder:  # Spark's WRITE ORDERED BY: ascending, nulls first, range distribution
            order = SortOrder(*(SortField(source_id=ids[c], transform=IdentityTransform(), direction=SortDirection.ASC,
                                          null_order=NullOrder.NULLS_FIRST) for c in clustering.columns))  # fmt: skip
            props["write.distribution-mode"] = "range"
        owner = getpass.getuser()
        props = {"owner": owner, **props}
        catalog = self.sql_catalog(ctx)
        with rest.rest_errors(ctx.config, f"create {ident}"):
            catalog.create_namespace_if_not_exists(
                ident.namespace, {"owner": owner} if rest.is_rest(ctx.config) else {"exists": "true", "owner": owner}
            )
            try:
                catalog.create_table((ident.namespace, ident.name), schema, partition_spec=spec, sort_order=order,
                                     location=None if rest.is_rest(ctx.config) else self.default_location(ctx, ident),
                                     properties=props)  # fmt: skip
            except PyIcebergExists as e:
                raise TableAlreadyExistsError(f"table {ident} already exists") from e
        entry = self.get_entry(ctx, ident)
        if entry is None:  # pragma: no cover - pyiceberg said yes but the catalog row is missing
            raise LakecatError(f"create {ident}: pyiceberg reported success but the table is not in the catalog")
        return entry

    def create(self, ctx: CatalogContext, ident: TableIdent, columns: list[Column], partitioning: list[PartitionField],
               properties: dict[str, str], *, layout: Layout | None = None) -> TableEntry:  # fmt: skip
        spark = ctx.session()
        name = f"{quote(ctx.name)}.{ident.quoted}"
        props, clustering = self._create_properties(ctx, properties, layout)
        parts = f" PARTITIONED BY ({', '.join(partition_sql(f) for f in partitioning)})" if partitioning else ""
        with spark_errors("create", ident):
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {quote(ctx.name)}.{quote(ident.namespace)}")
            spark.sql(f"CREATE TABLE {name} ({schema_ddl(columns)}) USING iceberg{parts}{tblproperties(props)}")
            if clustering and not clustering.zorder:  # Spark's CREATE TABLE takes no sort order: a metadata commit
                spark.sql(f"ALTER TABLE {name} WRITE ORDERED BY {', '.join(quote(c) for c in clustering.columns)}")
        entry = self.get_entry(ctx, ident)
        if entry is None:  # pragma: no cover - Spark said yes but the catalog row is missing
            raise LakecatError(f"create {ident}: Iceberg reported success but the table is not in the catalog")
        return entry

    def load(self, table: TableHandle) -> Any:
        """The table's current metadata as a read-only pyiceberg table (no catalog round trip, no JVM)."""
        from pyiceberg.table import StaticTable

        if rest.is_external(table.catalog.config):  # the catalog hands out the metadata (and may vend credentials)
            return rest.load_table(table.catalog.config, table.entry.ident)
        entry = table.refresh()
        if not entry.metadata_location:
            raise LakecatError(f"table {entry.ident}: the catalog has no metadata location for it")
        cached = self._static.get(entry.metadata_location)
        if cached is not None:  # a metadata file never changes: a new commit writes a new one
            return cached
        try:
            tbl = StaticTable.from_metadata(
                entry.metadata_location, properties=pyiceberg_io_properties(entry.metadata_location)
            )
        except FileNotFoundError as e:
            raise LakecatError(f"table {entry.ident}: its metadata file is missing ({entry.metadata_location})") from e
        if len(self._static) >= 16:
            self._static.pop(next(iter(self._static)))
        self._static[entry.metadata_location] = tbl
        return tbl

    def metadata_doc(self, table: TableHandle) -> dict[str, Any]:
        """The table's current metadata as its metadata file's JSON document: read from the file alone where lakecat's
        catalog names it (no pyiceberg import, the larger part of a ``describe``), through pyiceberg otherwise (a REST catalog)."""
        doc = self.metadata_file_doc(table)
        if doc is None:
            doc = json.loads(self.load(table).metadata.model_dump_json())
        return doc

    def describe(self, table: TableHandle) -> DescribeResult:
        doc = self.metadata_doc(table)
        schema, _ = _current(doc, "schemas", "current-schema-id", "schema-id", "schema")
        spec, specs = _current(doc, "partition-specs", "default-spec-id", "spec-id", "partition-spec")
        names = _column_names(schema.get("fields") or [])
        view = snapshot_view(doc)
        snapshot = next((s for s in view.snapshots if s.snapshot_id == view.current_snapshot_id), None)
        summary = snapshot.summary.additional_properties if snapshot and snapshot.summary else {}
        columns = [ColumnInfo(f["name"], iceberg_type_sql(f["type"]), not f.get("required", False), f.get("doc") or None)
                   for f in schema.get("fields") or []]  # fmt: skip

        def words(s: dict[str, Any]) -> list[str]:
            return [iceberg_transform_word(str(pf["transform"]), names.get(int(pf["source-id"]), "?"))
                    for pf in s.get("fields") or []]  # fmt: skip

        refs = self.ref_infos(view)
        return DescribeResult(
            name=table.name, format=self.name, location=doc.get("location", ""), schema=columns, partitioning=words(spec),
            properties={str(k): str(v) for k, v in (doc.get("properties") or {}).items()},
            current_version=view.current_snapshot_id,
            files=int(summary.get("total-data-files", 0)), size_bytes=int(summary.get("total-files-size", 0)),
            records=int(summary["total-records"]) if "total-records" in summary else (0 if snapshot is None else None),
            last_updated=iso(from_millis(int(doc.get("last-updated-ms", 0)))), capabilities=self.capabilities,
            column_mapping="id", tags=[r for r in refs if r.kind == "tag"], branches=[r for r in refs if r.kind == "branch"],
            partition_specs=[PartitionSpecInfo(int(s.get("spec-id", 0)), words(s), s is spec)
                             for s in sorted(specs, key=lambda s: int(s.get("spec-id", 0)))],
            **self._layout(doc, names).describe_fields(),
        )  # fmt: skip

    def layout(self, table: TableHandle) -> LayoutInfo:
        doc = self.metadata_doc(table)
        schema, _ = _current(doc, "schemas", "current-schema-id", "schema-id", "schema")
        return self._layout(doc, _column_names(schema.get("fields") or []))

    def _layout(self, doc: dict[str, Any], names: dict[int, str]) -> LayoutInfo:
        props = {str(k): str(v) for k, v in (doc.get("properties") or {}).items()}
        version = int(doc.get("format-version", 1))
        order = _sort_order(doc, names)
        zorder = zorder_keys(props.get(ZORDER_PROPERTY, ""), list(names.values()))
        if len(zorder) >= 2:
            clustering = Clustering(zorder, zorder=True)
        else:
            clustering = Clustering(tuple(dict.fromkeys(source for source, _ in order)))
        mode = _delete_mode(version, props)
        features = (("row-lineage",) if version >= 3 else ()) + ((mode.replace(" ", "-"),) if mode in
                                                                  ("deletion vectors", "position deletes") else ())  # fmt: skip
        return LayoutInfo(
            clustering=clustering, clustering_method="zorder" if clustering.zorder else "sort",
            sort_order=tuple(words for _, words in order), format_version=version,
            deletion_vectors=mode in ("deletion vectors", "position deletes"), delete_mode=mode, table_features=features,
        )  # fmt: skip

    def set_clustering(self, table: TableHandle, clustering: Clustering) -> None:
        name = self.spark_name(table.catalog, table.entry)
        order = ", ".join(quote(c) for c in clustering.columns)
        with spark_errors("alter(cluster_by)", table.entry.ident):
            spark = self.refreshed_session(table)
            spark.sql(f"ALTER TABLE {name} WRITE " + (f"ORDERED BY {order}" if clustering and not clustering.zorder
                                                      else "UNORDERED"))  # fmt: skip
        if clustering.zorder:
            self.set_properties(table, {ZORDER_PROPERTY: str(clustering)}, [])
        elif ZORDER_PROPERTY in self.properties(table):
            self.set_properties(table, {}, [ZORDER_PROPERTY])

    def set_deletion_vectors(self, table: TableHandle, on: bool) -> None:
        # merge-on-read writes deletion vectors on format version 3 and position delete files on 2
        self.set_properties(table, dict.fromkeys(ROW_DELETE_MODES, "merge-on-read" if on else "copy-on-write"), [])

    def properties(self, table: TableHandle) -> dict[str, str]:
        return dict(self.load(table).properties)

    def drop(self, ctx: CatalogContext, entry: TableEntry) -> None:
        with rest.rest_errors(ctx.config, f"drop {entry.ident}"):
            self.sql_catalog(ctx).drop_table((entry.ident.namespace, entry.ident.name))

    def rename(self, ctx: CatalogContext, entry: TableEntry, new: TableIdent) -> TableEntry:
        catalog = self.sql_catalog(ctx)
        with rest.rest_errors(ctx.config, f"rename {entry.ident}"):
            catalog.create_namespace_if_not_exists(new.namespace)
            catalog.rename_table((entry.ident.namespace, entry.ident.name), (new.namespace, new.name))
        renamed = self.get_entry(ctx, new)
        if renamed is None:
            raise LakecatError(f"renamed {entry.ident} to {new}, but the catalog does not list {new}")
        return renamed

    def drop_spark(self, ctx: CatalogContext, entry: TableEntry) -> None:
        with spark_errors("drop", entry.ident):  # Iceberg's catalog drops the entry; without PURGE no file goes
            ctx.session().sql(f"DROP TABLE {self.spark_name(ctx, entry)}")

    # --- reads ------------------------------------------------------------------------------
    def refreshed_session(self, table: TableHandle) -> Any:
        spark = table.catalog.session()
        # Spark's Iceberg catalog caches table metadata: another engine (pyiceberg) may have committed since.
        spark.sql(f"REFRESH TABLE {self.spark_name(table.catalog, table.entry)}")  # the table, not a branch of it
        return spark

    def read_current(self, table: TableHandle) -> DataFrame:
        return self.refreshed_session(table).table(table.spark_name)

    # --- writes -----------------------------------------------------------------------------
    def committed_batch(self, table: TableHandle, app_id: str) -> int:
        """The marker of the newest snapshot of ``app_id`` along the lineage the stream writes (the main line, or
        the table's branch); when expiry has cut the lineage before it, the marker lakecat's expiry saved in the
        table properties (``_save_stream_markers``)."""
        tbl = self.load(table)
        found = stream_markers(tbl.metadata, table.branch_name).get(app_id)
        if found is not None:
            return found
        saved = tbl.properties.get(f"{MARKER_PROPERTY_PREFIX}{app_id}")
        return int(saved) if saved is not None and str(saved).lstrip("-").isdigit() else -1

    def append_batch(self, table: TableHandle, df: DataFrame, app_id: str, batch_id: int) -> None:
        with spark_errors("ingest into", table.entry.ident):
            (df.writeTo(table.spark_name).option(f"snapshot-property.{MARKER_QUERY}", app_id)
             .option(f"snapshot-property.{MARKER_BATCH}", str(batch_id)).append())  # fmt: skip

    def append_batch_light(self, table: TableHandle, data: pa.Table, app_id: str, batch_id: int) -> None:
        marker = {MARKER_QUERY: app_id, MARKER_BATCH: str(batch_id)}
        self._light_commit(table, "ingest into", lambda tbl: tbl.append(data, snapshot_properties=marker))

    def merge_marker_conf(self, app_id: str, batch_id: int) -> dict[str, str]:
        return {f"spark.sql.iceberg.snapshot-property.{MARKER_QUERY}": app_id,
                f"spark.sql.iceberg.snapshot-property.{MARKER_BATCH}": str(batch_id)}  # fmt: skip

    def add_columns(self, table: TableHandle, columns: list[tuple[str, str]]) -> None:
        cols = ", ".join(f"{quote(name)} {ddl}" for name, ddl in columns)
        with spark_errors("add columns to", table.entry.ident):
            # the schema belongs to the table, not to a branch of it
            table.catalog.session().sql(
                f"ALTER TABLE {self.spark_name(table.catalog, table.entry)} ADD COLUMNS ({cols})"
            )

    def set_properties_spark(self, table: TableHandle, properties: dict[str, str], removed: list[str]) -> None:
        name = self.spark_name(table.catalog, table.entry)
        statements = []
        if properties:
            items = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in sorted(properties.items()))
            statements.append(f"ALTER TABLE {name} SET TBLPROPERTIES ({items})")
        if removed:
            unset = ", ".join(sql_string(k) for k in removed)
            statements.append(f"ALTER TABLE {name} UNSET TBLPROPERTIES IF EXISTS ({unset})")
        self._spark_sql(table, "alter", lambda: statements)

    def set_properties_light(self, table: TableHandle, properties: dict[str, str], removed: list[str]) -> None:
        from pyiceberg.exceptions import CommitFailedException

        if self.writes_through_spark(table):
            raise NotExactError("pyiceberg does not write format version 3 metadata")

        def commit() -> None:
            try:
                tbl = self.sql_catalog(table.catalog).load_table((table.entry.ident.namespace, table.entry.ident.name))
                with tbl.transaction() as tx:
                    if properties:
                        tx.set_properties(properties)
                    if removed:
                        tx.remove_properties(*removed)
            except CommitFailedException as e:
                raise CommitConflictError(f"alter {table.name}: commit conflict: {first_line(str(e))}") from e

        with_retries(commit, what=f"alter {table.name}")

    def record_key(self, table: TableHandle, keys: list[str]) -> list[str]:
        """The key becomes the table's identifier fields when its columns are NOT NULL (``changes`` pairs updates by them)."""
        schema = self.load(table).schema()
        current = [schema.find_column_name(i) for i in sorted(schema.identifier_field_ids)]
        if current:
            return (
                []
                if sorted(current) == sorted(keys)
                else [f"table identifier fields are {', '.join(current)}, the CDC key is {','.join(keys)}"]
            )
        optional = [k for k in keys if not schema.find_field(k).required]
        if optional:
            return [f"identifier fields not set: key column(s) {', '.join(optional)} are nullable "
                    f"(create the table with {', '.join(optional)} NOT NULL)"]  # fmt: skip
        with spark_errors("set identifier fields of", table.entry.ident):
            table.catalog.session().sql(
                f"ALTER TABLE {self.spark_name(table.catalog, table.entry)} SET IDENTIFIER FIELDS {', '.join(quote(k) for k in keys)}"
            )
        return []
