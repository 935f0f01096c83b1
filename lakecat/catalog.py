"""The catalog: one place to find, create and drop tables of both formats."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from .config import CatalogConfig, pyarrow_filesystem, resolve_config
from .errors import InvalidArgumentError, LakecatError, TableAlreadyExistsError, TableNotFoundError
from .formats import get_format
from .identifiers import TableIdent, quote
from .metastore import Metastore, TableEntry
from .partitioning import parse_partition_spec
from .results import DropResult, TableInfo, TableList
from .schema import parse_schema

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .table import Table

log = logging.getLogger(__name__)


def connect(catalog: str | Path | CatalogConfig | None = None) -> Catalog:
    """Open a catalog: a name, a path to a TOML config, or None for ``LAKECAT_CATALOG`` / the default.

    Example:
        >>> cat = lakecat.connect()
        >>> cat.list_tables()
    """
    return Catalog(resolve_config(catalog))


class Catalog:
    """A lakecat catalog. Cheap to open: no JVM starts until a Spark-path operation needs one."""

    def __init__(self, config: CatalogConfig) -> None:
        self.config = config
        config.export_storage_env()  # delta-rs reads its object-store settings from AWS_* variables
        self._metastore: Metastore | None = None
        self._pyiceberg: Any = None

    def __repr__(self) -> str:
        return f"Catalog({self.config.name!r}, warehouse={self.config.warehouse_uri!r})"

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def metastore(self) -> Metastore:
        if self._metastore is None:
            self._metastore = Metastore(self.config)
        return self._metastore

    def pyiceberg(self) -> Any:
        """pyiceberg's SqlCatalog over the same metastore, same catalog name as Spark's."""
        if self._pyiceberg is None:
            logging.getLogger("pyiceberg.catalog.sql").setLevel(logging.ERROR)
            from pyiceberg.catalog.sql import SqlCatalog

            self._pyiceberg = SqlCatalog(
                self.config.name,
                uri=self.config.metastore.sqlalchemy_url,
                warehouse=self.config.warehouse_uri,
                **self.config.pyiceberg_properties(),
            )
        return self._pyiceberg

    def session(self) -> SparkSession:
        """The Spark session lakecat uses internally (starts the JVM on first use)."""
        from .spark import get_spark

        self.metastore  # noqa: B018 - WAL mode and tables exist before Spark's JdbcCatalog opens the file
        return get_spark(self.config)

    @property
    def spark(self) -> SparkSession:
        """A Spark session in which every table of this catalog is reachable by name.

        Iceberg tables are ``<catalog>.<namespace>.<table>``; Delta tables are registered in
        ``spark_catalog`` as ``<namespace>.<table>``.
        """
        spark = self.session()
        from .formats.base import sql_string

        for entry in self.metastore.list_entries(fmt="delta"):
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS spark_catalog.{quote(entry.ident.namespace)}")
            spark.sql(
                f"CREATE TABLE IF NOT EXISTS spark_catalog.{entry.ident.quoted} USING delta "
                f"LOCATION {sql_string(entry.location)}"
            )
        return spark

    def local_path(self, location: str) -> Path | None:
        """A location as a local path, or None when it lives in object storage."""
        if "://" not in location:
            return Path(location)
        if location.startswith("file:"):
            return Path(unquote(urlparse(location).path))
        return None

    # --- tables ------------------------------------------------------------------------------
    def entry(self, name: str | TableIdent) -> TableEntry:
        ident = name if isinstance(name, TableIdent) else TableIdent.parse(name)
        entry = self.metastore.get(ident)
        if entry is None:
            raise TableNotFoundError(f"table {ident} not found in catalog {self.name!r}")
        return entry

    def list_tables(self, namespace: str | None = None, *, format: str | None = None) -> TableList:
        """Tables of both formats, sorted by name; optionally one namespace or one format."""
        if namespace is not None:
            from .identifiers import validate_part

            validate_part(namespace, what="namespace")
        if format is not None:
            format = get_format(format).name
        return TableList([TableInfo(str(e.ident), e.format, e.location) for e in self.metastore.list_entries(namespace, format)])

    def table_exists(self, name: str | TableIdent) -> bool:
        ident = name if isinstance(name, TableIdent) else TableIdent.parse(name)
        return self.metastore.get(ident) is not None

    def load_table(self, name: str | TableIdent) -> Table:
        from .table import Table

        return Table(self, self.entry(name))

    table = load_table

    def create_table(
        self,
        name: str | TableIdent,
        *,
        schema: str,
        format: str,
        partition_by: str | list[str] | tuple[str, ...] | None = None,
        properties: dict[str, str] | None = None,
        if_not_exists: bool = False,
    ) -> Table:
        """Create a table of either format.

        Args:
            name: ``namespace.table``.
            schema: column list in SQL, e.g. ``"id BIGINT NOT NULL, ts TIMESTAMP, region STRING"``.
            format: ``iceberg`` or ``delta``.
            partition_by: Iceberg transform words, e.g. ``["days(ts)", "region"]``.
            properties: table properties (``lakecat.*`` maintenance policies included).
            if_not_exists: return the existing table instead of raising.

        Raises:
            InvalidArgumentError: bad name, schema, transform or property.
            UnsupportedOperationError: a transform the format cannot express (bucket on Delta).
            TableAlreadyExistsError: the name is taken (by a table of either format).
        """
        from .maintenance import validate_policy
        from .table import Table

        ident = name if isinstance(name, TableIdent) else TableIdent.parse(name)
        adapter = get_format(format)
        columns = parse_schema(schema)
        fields = parse_partition_spec(partition_by, columns)
        props = validate_policy(properties or {})  # keys, and the values of lakecat.* maintenance policies
        existing = self.metastore.get(ident)
        if existing is not None:
            if if_not_exists:
                return Table(self, existing)
            raise TableAlreadyExistsError(f"table {ident} already exists ({existing.format})")
        if adapter.name == "delta":
            from .partitioning import delta_generated_columns

            delta_generated_columns(fields, columns)  # refuse what Delta cannot express before Spark starts
        try:
            entry = adapter.create(self, ident, columns, fields, props)
        except TableAlreadyExistsError:
            if if_not_exists and (existing := self.metastore.get(ident)) is not None:
                return Table(self, existing)
            raise
        return Table(self, entry)

    def drop_table(self, name: str | TableIdent, *, purge: bool = False) -> DropResult:
        """Remove a table from the catalog; with ``purge`` also delete its data and metadata files."""
        entry = self.entry(name)
        adapter = get_format(entry.format)
        if purge:
            self._check_purge_location(entry)
        adapter.drop(self, entry)
        if purge:
            self._delete_location(entry.location)
        return DropResult(str(entry.ident), entry.format, entry.location, purge)

    def _check_purge_location(self, entry: TableEntry) -> None:
        tail = f"/{entry.ident.namespace}/{entry.ident.name}"
        if not entry.location.rstrip("/").endswith(tail):
            raise InvalidArgumentError(
                f"refusing to purge {entry.ident}: its location {entry.location} is not a table directory "
                f"ending in {tail}; drop without --purge and delete the files yourself"
            )

    def _delete_location(self, location: str) -> None:
        from pyarrow import fs

        try:
            filesystem, path = pyarrow_filesystem(location)
            if filesystem.get_file_info(path).type != fs.FileType.NotFound:
                filesystem.delete_dir(path)
        except OSError as e:
            raise LakecatError(f"dropped from the catalog, but deleting {location} failed: {e}") from e

    # --- ingest ------------------------------------------------------------------------------
    def ingest(self, table: str | TableIdent, source: Any, *, trigger: str = "available-now",
               background: bool = False, **options: Any) -> Any:  # fmt: skip
        """Stream a ``KafkaSource`` or ``FileSource`` into a table of either format, exactly once.

        Args:
            table: ``namespace.table``.
            source: ``lakecat.KafkaSource(bootstrap, topic)`` or ``lakecat.FileSource(dir, format="json")``.
            trigger: ``available-now`` (drain and return) or ``every <duration>`` (runs until stopped).
            background: return an ``IngestHandle`` at once (``.stop()``, ``.await_termination()``, ``.report()``).
            **options: ``checkpoint``, ``dlq`` (a table name, True for ``<table>_dlq``, False to fail on bad
                records), ``merge_schema``, ``dedupe_key``, ``watermark``, ``event_time``,
                ``max_records_per_batch``, ``max_files_per_batch``, ``metrics_file``, ``on_progress``;
                ``cdc="debezium"`` with ``key=[...]`` applies Debezium change events with MERGE (upserts and
                deletes, last event per key per batch, exactly once).

        Returns:
            An ``IngestReport`` (or an ``IngestHandle`` with ``background=True``).

        Example:
            >>> cat.ingest("sales.orders", lakecat.KafkaSource("localhost:9092", "orders")).rows_written
        """
        from .ingest import run_ingest, start_ingest

        if background:
            options.pop("on_progress", None)
            return start_ingest(self, table, source, trigger=trigger, **options)
        return run_ingest(self, table, source, trigger=trigger, **options)

    # --- maintenance (lakecat/maintenance.py) ---------------------------------------------------
    def maintain(self, pattern: str | None = None, *, plan: str | Path | dict[str, Any] | None = None,
                 dry_run: bool = False, progress: Any = None) -> Any:  # fmt: skip
        """Run each matching table's maintenance policy (compact, expire, clean orphans, metadata upkeep).

        Carries on past a failing table; ``report.failed`` counts failures.

        Example:
            >>> cat.maintain("sales.*", dry_run=True).to_dict()
        """
        from .maintenance import maintain

        return maintain(self, pattern, plan=plan, dry_run=dry_run, progress=progress)
