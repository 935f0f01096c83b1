"""The catalog: one place to find, create and drop tables of both formats."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from . import adopt, health, maintenance, mirror
from .config import (
    DEFAULT_CATALOG,
    CatalogConfig,
    available_catalogs,
    bundled_conf_dir,
    load_config_file,
    pyarrow_filesystem,
    resolve_config,
)
from .engine_local import engine_url
from .errors import (
    ConfigError,
    InvalidArgumentError,
    LakecatError,
    TableAlreadyExistsError,
    TableNotFoundError,
    did_you_mean,
)
from .files import local_path
from .formats import all_formats, get_format
from .identifiers import TableIdent, validate_part
from .ingest import IngestHandle, IngestOptions, ProgressCallback, run_ingest, start_ingest
from .metastore import Metastore, TableEntry
from .partitioning import Clustering, Layout, parse_cluster_by, parse_partition_spec
from .results import (
    CatalogInfo,
    ConvertResult,
    DropResult,
    HealthResult,
    IngestResult,
    ListResult,
    MaintainResult,
    RegisterResult,
    TableInfo,
)
from .schema import parse_schema
from .spark import get_spark
from .table import Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .sources import Source

log = logging.getLogger(__name__)


def connect(catalog: str | Path | CatalogConfig | None = None) -> Catalog:
    """Open a catalog: a name, a path to a TOML config, or None for ``LAKECAT_CATALOG`` / the default.

    Example:
        >>> cat = lakecat.connect()
        >>> cat.list_tables()
    """
    return Catalog(resolve_config(catalog))


def catalog_kinds(config: CatalogConfig) -> dict[str, str]:
    """Where the config keeps each format's tables (format -> ``metastore``, ``rest``, ...)."""
    return {adapter.name: adapter.catalog_kind(config) for adapter in all_formats()}


def list_catalogs(active: str) -> list[CatalogInfo]:
    """Every catalog config lakecat finds by name, with the kind of catalog each format's tables live in."""

    out = []
    for name, path in available_catalogs():
        try:
            config = load_config_file(path)
            for adapter in all_formats():
                adapter.check_config(config)
            kinds, metastore, problem = catalog_kinds(config), config.metastore.kind, None
        except ConfigError as e:  # one unusable config (an unset variable) does not hide the others
            kinds, metastore, problem = {}, None, str(e)
        example = name != DEFAULT_CATALOG and path.parent == bundled_conf_dir()
        out.append(
            CatalogInfo(name, str(path), name == active or str(path) == active, kinds, metastore, problem, example)
        )
    return out


def _prepare_metastore(metastore: Metastore) -> None:
    """What each format keeps in the metastore exists before any engine (Spark, pyiceberg) writes to it."""
    for adapter in all_formats():
        adapter.prepare_metastore(metastore)


class Catalog:
    """A lakecat catalog. Cheap to open: no JVM starts until a Spark-path operation needs one."""

    def __init__(self, config: CatalogConfig) -> None:
        self.config = config
        for adapter in all_formats():  # a bad section of the config is exit 2 before anything connects
            adapter.check_config(config)
        config.export_storage_env()  # delta-rs reads its object-store settings from AWS_* variables
        self._metastore: Metastore | None = None

    def __repr__(self) -> str:
        return f"Catalog({self.config.name!r}, warehouse={self.config.warehouse_uri!r})"

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def metastore(self) -> Metastore:
        if self._metastore is None:
            self._metastore = Metastore(self.config, prepare=_prepare_metastore)
        return self._metastore

    def session(self) -> SparkSession:
        """The Spark session lakecat uses internally (starts the JVM on first use)."""

        # in process: WAL mode and the formats' tables exist before Spark's JdbcCatalog opens the file (an engine
        # opens its own; lakecat creates what it writes there on first write)
        return get_spark(self.config, before_local_start=lambda: self.metastore.ready(), remote=engine_url)

    @property
    def spark(self) -> SparkSession:
        """A Spark session in which every table of this catalog is reachable by name.

        Iceberg tables are ``<catalog>.<namespace>.<table>``; Delta tables are registered in
        ``spark_catalog`` as ``<namespace>.<table>``.
        """
        spark = self.session()
        for adapter in all_formats():
            for entry in adapter.list_entries(self):
                try:
                    for statement in adapter.spark_catalog_sql(self, entry):
                        spark.sql(statement)
                except Exception as e:  # a table whose files are gone: the session still serves every other one
                    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    log.warning("%s is not reachable by name in this session: %s", entry.ident, first)
        return spark

    def local_path(self, location: str) -> Path | None:
        """A location as a local path, or None when it lives in object storage."""
        return local_path(location)

    # --- tables ------------------------------------------------------------------------------
    def find_entry(self, ident: TableIdent) -> TableEntry | None:
        """The catalog entry of ``ident``, whichever format owns it (None: no such table)."""
        self.metastore  # noqa: B018 - the formats' metastore tables exist
        found = [e for adapter in all_formats() if (e := adapter.get_entry(self, ident)) is not None]
        found = mirror.one_per_name(found) if len(found) > 1 else found
        return found[0] if found else None

    def entries(self, namespace: str | None = None, *, format: str | None = None) -> list[TableEntry]:
        """Catalog entries of every format (or one), sorted by name."""
        self.metastore  # noqa: B018 - the formats' metastore tables exist
        adapters = [get_format(format)] if format is not None else all_formats()
        out = mirror.one_per_name(e for adapter in all_formats() for e in adapter.list_entries(self, namespace))
        if format is not None:
            out = [e for e in out if e.format in {a.name for a in adapters}]
        return sorted(out, key=lambda e: (e.ident.namespace, e.ident.name))

    def entry(self, name: str | TableIdent) -> TableEntry:
        ident = name if isinstance(name, TableIdent) else TableIdent.parse(name)
        entry = self.find_entry(ident)
        if entry is None:
            raise TableNotFoundError(f"table {ident} not found in catalog {self.name!r}{self._nearest(str(ident))}")
        return entry

    def _nearest(self, name: str) -> str:
        """A "did you mean" for a table name that is not there (metadata only, asked on the error path alone)."""
        try:
            return did_you_mean(name, (str(e.ident) for e in self.entries()))
        except LakecatError:  # a metastore that cannot list: the error stands without a suggestion
            return ""

    def list_tables(self, namespace: str | None = None, *, format: str | None = None) -> ListResult:
        """Tables of every format, sorted by name; optionally one namespace or one format."""
        if namespace is not None:
            validate_part(namespace, what="namespace")
        if format is not None:
            format = get_format(format).name
        return ListResult(
            [
                TableInfo(str(e.ident), e.format, e.location, mirror.mirrors(e))
                for e in self.entries(namespace, format=format)
            ]
        )

    def table_exists(self, name: str | TableIdent) -> bool:
        ident = name if isinstance(name, TableIdent) else TableIdent.parse(name)
        return self.find_entry(ident) is not None

    def load_table(self, name: str | TableIdent) -> Table:

        return Table(self, self.entry(name))

    def table_of(self, entry: TableEntry) -> Table:
        """The table of a catalog entry already in hand (``entries()``), without looking it up again."""

        return Table(self, entry)

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
        cluster_by: str | list[str] | None = None,
        format_version: int | None = None,
        deletion_vectors: bool | None = None,
    ) -> Table:
        """Create a table of either format.

        Args:
            name: ``namespace.table``.
            schema: column list in SQL, e.g. ``"id BIGINT NOT NULL, ts TIMESTAMP, region STRING"``.
            format: ``iceberg`` or ``delta`` (or another registered format).
            partition_by: Iceberg transform words, e.g. ``["days(ts)", "region"]``.
            properties: table properties (``lakecat.*`` maintenance policies included).
            if_not_exists: return the existing table instead of raising.
            cluster_by: clustering keys, ``"a, b"`` or ``"zorder(a, b)"`` (Delta: liquid clustering; Iceberg: the
                table's sort order, or z-order).
            format_version: Iceberg's format version (2 or 3); None: the catalog config's ``[tables]`` default, else 2.
            deletion_vectors: mark deleted rows instead of rewriting files (Delta's deletion vectors, Iceberg's
                merge-on-read); None: the catalog config's ``[tables]`` default, else off.

        Raises:
            InvalidArgumentError: bad name, schema, transform or property.
            UnsupportedOperationError: a transform the format cannot express (bucket on Delta).
            TableAlreadyExistsError: the name is taken (by a table of either format).
        """

        ident = name if isinstance(name, TableIdent) else TableIdent.parse(name)
        adapter = get_format(format)
        columns = parse_schema(schema)
        fields = parse_partition_spec(partition_by, columns)
        layout = Layout(parse_cluster_by(cluster_by, columns) if cluster_by else Clustering(), format_version,
                        deletion_vectors)  # fmt: skip
        props = maintenance.validate_policy(properties or {})  # keys, and the values of lakecat.* maintenance policies
        existing = self.find_entry(ident)
        if existing is not None:
            if if_not_exists:
                return Table(self, existing)
            raise TableAlreadyExistsError(f"table {ident} already exists ({existing.format})")
        adapter.check_partitioning(fields, columns)  # refuse what the format cannot express before Spark starts
        adapter.check_layout(layout, fields)
        try:
            entry = adapter.create(self, ident, columns, fields, props, layout=layout)
        except TableAlreadyExistsError:
            if if_not_exists and (existing := self.find_entry(ident)) is not None:
                return Table(self, existing)
            raise
        return Table(self, entry)

    def register_table(self, name: str | TableIdent, *, location: str, format: str | None = None) -> RegisterResult:
        """Add an existing table to the catalog by its location, without touching its files.

        Args:
            name: ``namespace.table``.
            location: a Delta table's directory; an Iceberg table's directory (its newest
                ``metadata/*.metadata.json`` is taken) or one ``metadata.json`` file. A local path or a URI.
            format: the table's format; detected from the location when not given.

        Raises:
            InvalidArgumentError: no table at the location, an unreadable one, or an ambiguous Iceberg directory.
            TableAlreadyExistsError: the name is taken, or the location is registered under another name.

        Example:
            >>> cat.register_table("sales.orders", location="/lake/orders").metadata_location
        """

        return adopt.register_table(self, name, location=location, format=format)

    def convert_table(self, name: str | TableIdent, *, source: str, format: str,
                      partition_by: str | list[str] | None = None, dry_run: bool = False) -> ConvertResult:  # fmt: skip
        """Make a directory of Parquet files (Hive-style ``k=v/`` partitions allowed) a table in place: no data is copied.

        With ``dry_run``, only report the files, partitions, row count and inferred schema.

        Raises:
            InvalidArgumentError: no Parquet files, files that disagree on the schema (two of them are named),
                a layout other than ``partition_by``, a directory that is a table already.
            TableAlreadyExistsError: the name is taken, or the directory is registered already.

        Example:
            >>> cat.convert_table("raw.events", source="/landing/events", format="delta", dry_run=True).rows
        """

        return adopt.convert_directory(
            self, name, source=source, format=format, partition_by=partition_by, dry_run=dry_run
        )

    def drop_table(self, name: str | TableIdent, *, purge: bool = False) -> DropResult:
        """Remove a table from the catalog; with ``purge`` also delete its data and metadata files."""
        entry = self.entry(name)
        adapter = get_format(entry.format)
        if purge:
            self._check_purge_location(entry)
        mirror.drop(self, entry)  # a mirror is the table read as another format: it goes with the table
        adapter.drop(self, entry)
        if purge:
            self._delete_location(entry.location)
        return DropResult(str(entry.ident), entry.format, entry.location, purge)

    def _check_purge_location(self, entry: TableEntry) -> None:
        tail = f"/{entry.ident.namespace}/{entry.ident.name}"
        if get_format(entry.format).owns_location(entry.location):  # a registered table's own directory
            return
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
    @overload
    def ingest(
        self,
        table: str | TableIdent,
        source: Source,
        *,
        background: Literal[False] = False,
        options: IngestOptions | None = None,
        on_progress: ProgressCallback | None = None,
        stop_event: threading.Event | None = None,
        **kwargs: Any,
    ) -> IngestResult: ...

    @overload
    def ingest(
        self,
        table: str | TableIdent,
        source: Source,
        *,
        background: Literal[True],
        options: IngestOptions | None = None,
        on_progress: ProgressCallback | None = None,
        stop_event: threading.Event | None = None,
        **kwargs: Any,
    ) -> IngestHandle: ...

    def ingest(
        self,
        table: str | TableIdent,
        source: Source,
        *,
        background: bool = False,
        options: IngestOptions | None = None,
        on_progress: ProgressCallback | None = None,
        stop_event: threading.Event | None = None,
        **kwargs: Any,
    ) -> IngestResult | IngestHandle:
        """Stream a source (``KafkaSource``, ``FileSource``) into a table of any format, exactly once.

        Args:
            table: ``namespace.table``.
            source: ``lakecat.KafkaSource(bootstrap, topic)`` or ``lakecat.FileSource(dir, format="json")``.
            background: return an ``IngestHandle`` at once (``.stop()``, ``.await_termination()``, ``.report()``).
            options: an ``IngestOptions`` (trigger, checkpoint, dead-letter table, dedupe, CDC, branch, ...).
            on_progress: called with ``(handle, progress)`` per finished batch (not with ``background``).
            stop_event: a ``threading.Event`` that stops the stream after the batch in flight when set.
            **kwargs: ``IngestOptions`` fields, set on top of ``options`` (``trigger="every 10s"``); an unknown one
                is an ``InvalidArgumentError``.

        Returns:
            An ``IngestResult`` (or an ``IngestHandle`` with ``background=True``).

        Example:
            >>> cat.ingest("sales.orders", lakecat.KafkaSource("localhost:9092", "orders")).rows_written
        """
        opts = IngestOptions.of(options, **kwargs)
        if background:
            if opts.metrics_port is not None:
                raise InvalidArgumentError(
                    "metrics_port serves /metrics while ingest waits for its stream: not with background=True"
                )
            return start_ingest(self, table, source, opts)
        ident = table if isinstance(table, TableIdent) else TableIdent.parse(table)
        entry = self.find_entry(ident)
        if entry is None or not mirror.mirrors(entry):
            return run_ingest(self, table, source, opts, on_progress=on_progress, stop_event=stop_event)
        target = Table(self, entry)

        def in_step(handle: Any, progress: Any) -> None:  # the mirror's commit follows each batch's
            if progress is not None:  # None: a tick of the display without a new batch
                mirror.keep_in_step(target)
            if on_progress is not None:
                on_progress(handle, progress)

        result = run_ingest(self, table, source, opts, on_progress=in_step, stop_event=stop_event)
        mirror.keep_in_step(target)
        return result

    # --- maintenance (lakecat/maintenance.py) ---------------------------------------------------
    def maintain(self, pattern: str | None = None, *, plan: str | Path | dict[str, Any] | None = None,
                 dry_run: bool = False, auto: bool = False, progress: Callable[[str, int, int], None] | None = None,
                 allow_empty: bool = False, engine: str | None = None) -> MaintainResult:  # fmt: skip
        """Run each matching table's maintenance policy (compact, expire, clean orphans, metadata upkeep).

        ``engine`` (``"light"`` / ``"spark"``) forces the engine of every compaction (see ``Table.compact``).

        With ``auto``, each table runs only what its health calls for (see ``health``). Carries on past a
        failing table; ``report.failed`` counts failures. A ``pattern`` that matches no table raises
        ``NoTableMatchesError`` (a typo would otherwise maintain nothing and succeed) unless ``allow_empty``.

        Example:
            >>> cat.maintain("sales.*", dry_run=True).to_dict()
        """
        if auto:
            return health.maintain_auto(
                self, pattern, plan=plan, dry_run=dry_run, progress=progress, allow_empty=allow_empty, engine=engine
            )

        return maintenance.maintain(
            self, pattern, plan=plan, dry_run=dry_run, progress=progress, allow_empty=allow_empty, engine=engine
        )

    def health(
        self,
        pattern: str | None = None,
        *,
        progress: Callable[[str, int, int], None] | None = None,
        allow_empty: bool = False,
    ) -> HealthResult:
        """Each matching table's health from metadata alone (no JVM): files, deletes, versions, a verdict.

        A ``pattern`` that matches no table raises ``NoTableMatchesError`` unless ``allow_empty`` (then the result
        has no tables).

        Example:
            >>> [(t.name, t.verdict) for t in cat.health("sales.*").tables]
        """

        return health.health(self, pattern, progress=progress, allow_empty=allow_empty)
