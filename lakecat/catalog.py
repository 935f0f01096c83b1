"""The catalog: one place to find, create and drop tables of both formats."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from . import adopt, display, health, maintenance, mirror, service
from .config import (
    DEFAULT_CATALOG,
    CatalogConfig,
    available_catalogs,
    bundled_conf_dir,
    load_config_file,
    pyarrow_filesystem,
    resolve_config,
    use_store,
)
from .engine import check_engine, light_or_spark
from .engine_local import engine_url
from .errors import (
    ConfigError,
    InvalidArgumentError,
    LakecatError,
    TableAlreadyExistsError,
    TableNotFoundError,
    did_you_mean,
    invalid,
)
from .files import local_path
from .formats import all_formats, get_format
from .health_html import write_html
from .identifiers import TableIdent, validate_part
from .ingest import IngestHandle, IngestOptions, ProgressCallback, run_ingest, start_ingest
from .maintenance_log import RunLog, RunLogResult
from .metastore import Metastore, TableEntry
from .metrics import require_client, write_health_textfile
from .partitioning import Clustering, Layout, parse_cluster_by, parse_partition_spec
from .policy_admin import PolicySetResult, PolicyShowResult, set_policy, show_policy
from .results import (
    CatalogInfo,
    CatalogsResult,
    ConvertResult,
    DropResult,
    HealthResult,
    IngestResult,
    ListResult,
    MaintainResult,
    NamespaceInfo,
    NamespacesResult,
    RegisterResult,
    RenameResult,
    TableInfo,
)
from .schema import parse_schema
from .service import PassResult, ServiceResult
from .spark import get_spark, reach_buckets
from .table import Table
from .units import parse_duration

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


def list_catalogs(active: str | None = None) -> CatalogsResult:
    """Every catalog config lakecat finds by name, with the kind of catalog each format's tables live in; ``active``
    (a name or a config's path; None: ``LAKECAT_CATALOG``, else the default) is marked."""
    if active is None:
        active = os.environ.get("LAKECAT_CATALOG") or DEFAULT_CATALOG

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
    return CatalogsResult(out)


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
        self._metastore: Metastore | None = None
        # Its own object store for its warehouse in every engine it opens: never through the process environment,
        # so catalogs on different stores live side by side in one process.
        self._s3 = config.s3()
        if self._s3 is not None:
            use_store(config.warehouse_uri, self._s3)

    def _reach(self, location: str | None) -> None:
        """Reach ``location`` (a table of this catalog outside its warehouse, a checkpoint, a source directory)
        through this catalog's object store, unless a catalog of this process claimed it already."""
        if self._s3 is not None and location and use_store(str(location), self._s3, unless_known=True):
            reach_buckets()

    def __repr__(self) -> str:
        return f"Catalog({self.config.name!r}, warehouse={self.config.warehouse_uri!r})"

    def _repr_html_(self) -> str:
        """The catalog's name, warehouse and metastore, and its tables (metadata only)."""
        head = display.table(["catalog", "warehouse", "metastore"],
                             [[self.name, self.config.warehouse_uri, self.config.metastore.kind]])  # fmt: skip
        try:
            return head + self.list_tables()._repr_html_()
        except LakecatError as e:  # a metastore that cannot list: the catalog is still shown, with why
            return head + display.table(["tables"], [[f"could not be listed: {e}"]])

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
        if found:
            self._reach(found[0].location)
        return found[0] if found else None

    def entries(self, namespace: str | None = None, *, format: str | None = None) -> list[TableEntry]:
        """Catalog entries of every format (or one), sorted by name."""
        self.metastore  # noqa: B018 - the formats' metastore tables exist
        adapters = [get_format(format)] if format is not None else all_formats()
        out = mirror.one_per_name(e for adapter in all_formats() for e in adapter.list_entries(self, namespace))
        for e in out:
            self._reach(e.location)
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

    def list_namespaces(self) -> NamespacesResult:
        """The namespaces that hold tables, sorted by name, with how many tables of each format (metadata only).

        Example:
            >>> cat.list_namespaces().names()
            ['raw', 'sales']
        """
        counts: dict[str, dict[str, int]] = {}
        for e in self.entries():
            formats = counts.setdefault(e.ident.namespace, {})
            formats[e.format] = formats.get(e.format, 0) + 1
        return NamespacesResult([NamespaceInfo(ns, sum(f.values()), dict(sorted(f.items())))
                                 for ns, f in sorted(counts.items())])  # fmt: skip

    def rename_table(self, old: str | TableIdent, new: str | TableIdent) -> RenameResult:
        """Give a table a new name (another namespace allowed): the catalog entry only, no JVM; its files stay where
        they are, and its mirrors follow it. A name taken by a table of any format is refused.

        Raises:
            TableNotFoundError: no table ``old``.
            TableAlreadyExistsError: ``new`` is taken.
            UnsupportedOperationError: the table's format cannot rename (exit 3).

        Example:
            >>> cat.rename_table("sales.orders", "sales.orders_2025").name
        """
        entry = self.entry(old)
        target = new if isinstance(new, TableIdent) else TableIdent.parse(new)
        if (target.namespace, target.name) == (entry.ident.namespace, entry.ident.name):
            raise InvalidArgumentError(f"{entry.ident} has that name already")
        existing = self.find_entry(target)
        if existing is not None:
            raise TableAlreadyExistsError(f"cannot rename {entry.ident} to {target}: table {target} already exists "
                                          f"({existing.format})")  # fmt: skip
        adapter = get_format(entry.format)
        adapter.require("rename", f"rename {entry.ident}")
        renamed = adapter.rename(self, entry, target)
        return RenameResult(str(entry.ident), str(renamed.ident), renamed.format, renamed.location,
                            mirror.mirrors(renamed))  # fmt: skip

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
        engine: str | None = None,
    ) -> Table:
        """Create a table of either format.

        Without a JVM where the light library (pyiceberg, delta-rs) creates exactly what Spark's CREATE TABLE would,
        else through Spark; the returned table's ``engine`` says which ran (``engine_reason``: why Spark did).

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
            engine: ``"light"`` (no JVM; ``NotExactError``, exit 3, where the light library cannot create the table
                exactly as Spark does), ``"spark"``, or None: light where it is exact, else Spark.

        Raises:
            InvalidArgumentError: bad name, schema, transform, property or engine.
            UnsupportedOperationError: a transform the format cannot express (bucket on Delta).
            TableAlreadyExistsError: the name is taken (by a table of either format).
        """

        check_engine(engine)
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
            entry, used, reason = light_or_spark(
                engine, f"create {ident}",
                lambda: adapter.create_light(self, ident, columns, fields, props, layout=layout),
                lambda: adapter.create(self, ident, columns, fields, props, layout=layout),
            )  # fmt: skip
        except TableAlreadyExistsError:
            if if_not_exists and (existing := self.find_entry(ident)) is not None:
                return Table(self, existing)
            raise
        table = Table(self, entry)
        table.engine, table.engine_reason = used, reason
        return table

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

        self._reach(adopt.absolute_location(location))
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

        self._reach(adopt.absolute_location(source))
        return adopt.convert_directory(
            self, name, source=source, format=format, partition_by=partition_by, dry_run=dry_run
        )

    def drop_table(self, name: str | TableIdent, *, purge: bool = False, engine: str | None = None) -> DropResult:
        """Remove a table from the catalog; with ``purge`` also delete its data and metadata files.

        No JVM starts: the catalog entry goes from the metastore (or the REST catalog), the files through the
        filesystem. ``engine="spark"`` removes the entry through Spark's catalog instead.
        """
        wanted = check_engine(engine)
        entry = self.entry(name)
        adapter = get_format(entry.format)
        if purge:
            self._check_purge_location(entry)
        mirror.drop(self, entry)  # a mirror is the table read as another format: it goes with the table
        if wanted == "spark":
            adapter.drop_spark(self, entry)
        else:
            adapter.drop(self, entry)
        if purge:
            self._delete_location(entry.location)
        return DropResult(str(entry.ident), entry.format, entry.location, purge, engine=wanted or "light",
                          engine_reason="asked for Spark (engine='spark')" if wanted == "spark" else None)  # fmt: skip

    def _check_purge_location(self, entry: TableEntry) -> None:
        tail = f"/{entry.ident.namespace}/{entry.ident.name}"
        if get_format(entry.format).owns_location(entry.location):  # a registered table's own directory
            return
        if not entry.location.rstrip("/").endswith(tail):
            raise InvalidArgumentError(
                f"refusing to purge {entry.ident}: its location {entry.location} is not a table directory "
                f"ending in {tail}; drop without purge=True and delete the files yourself"
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
        for location in (opts.checkpoint, getattr(source, "path", None)):  # in this catalog's store unless claimed
            self._reach(location)
        if background:
            if opts.metrics_port is not None:
                raise InvalidArgumentError(
                    "metrics_port serves /metrics while ingest waits for its stream: not with background=True"
                )
            return start_ingest(self, table, source, opts)
        # each batch's commit is followed by the format's post-commit step (the mirrors follow), in the stream itself
        return run_ingest(self, table, source, opts, on_progress=on_progress, stop_event=stop_event)

    # --- maintenance (lakecat/maintenance.py, lakecat/service.py) --------------------------------------
    @overload
    def maintain(self, pattern: str | None = None, *, plan: str | Path | dict[str, Any] | None = None,
                 dry_run: bool = False, auto: bool = False, progress: Callable[[str, int, int], None] | None = None,
                 allow_empty: bool = False, prometheus: str | Path | None = None, every: None = None,
                 max_minutes: float | None = None, parallel: int | None = None, metrics_port: int | None = None,
                 stop: threading.Event | None = None, on_pass: Callable[[PassResult], None] | None = None,
                 on_start: Callable[[], None] | None = None, engine: str | None = None) -> MaintainResult: ...  # fmt: skip

    @overload
    def maintain(self, pattern: str | None = None, *, plan: str | Path | dict[str, Any] | None = None,
                 dry_run: bool = False, auto: bool = False, progress: Callable[[str, int, int], None] | None = None,
                 allow_empty: bool = False, prometheus: str | Path | None = None, every: str | timedelta,
                 max_minutes: float | None = None, parallel: int | None = None, metrics_port: int | None = None,
                 stop: threading.Event | None = None, on_pass: Callable[[PassResult], None] | None = None,
                 on_start: Callable[[], None] | None = None, engine: str | None = None) -> ServiceResult: ...  # fmt: skip

    def maintain(self, pattern: str | None = None, *, plan: str | Path | dict[str, Any] | None = None,
                 dry_run: bool = False, auto: bool = False, progress: Callable[[str, int, int], None] | None = None,
                 allow_empty: bool = False, prometheus: str | Path | None = None, every: str | timedelta | None = None,
                 max_minutes: float | None = None, parallel: int | None = None, metrics_port: int | None = None,
                 stop: threading.Event | None = None, on_pass: Callable[[PassResult], None] | None = None,
                 on_start: Callable[[], None] | None = None, engine: str | None = None) -> MaintainResult | ServiceResult:  # fmt: skip
        """Run each matching table's maintenance policy (compact, expire, clean orphans, metadata upkeep).

        ``engine`` ("light", "spark", None: lakecat chooses per step) forces the engine of every compaction, expiry,
        orphan cleanup and metadata upkeep step; every action's result says which engine ran and why.

        With ``auto``, each table runs only what its health calls for (see ``health``). Carries on past a
        failing table; ``report.failed`` counts failures. A ``pattern`` that matches no table raises
        ``NoTableMatchesError`` (a typo would otherwise maintain nothing and succeed) unless ``allow_empty``.
        ``prometheus``: afterwards, write the tables' health gauges to this file (Prometheus' text format).

        With ``every`` (``"10m"``; needs ``auto``) it is the maintenance service: a pass every ``every`` until
        ``stop`` is set, each working on the most urgent tables first, at most ``max_minutes`` of new work a pass,
        ``parallel`` tables at a time, ``/metrics`` served on ``metrics_port``; ``on_start`` is called once the
        options are checked, ``on_pass`` after each pass; returns a ``ServiceResult``. The service runs until
        stopped, so ``dry_run`` and ``prometheus`` (one pass's) are refused with it, and the service's own options
        without it.

        Example:
            >>> cat.maintain("sales.*", dry_run=True).to_dict()
            >>> stop = threading.Event(); threading.Timer(3600, stop.set).start()
            >>> cat.maintain("sales.*", auto=True, every="10m", max_minutes=5, stop=stop).runs
        """
        if every is None:
            if any(v is not None for v in (max_minutes, parallel, metrics_port, stop, on_pass, on_start)):
                raise invalid("max_minutes, parallel, metrics_port, stop, on_pass and on_start go with every= "
                              "(the service)", "--max-minutes, --parallel and --metrics-port go with --every "
                              "(the service)")  # fmt: skip
            if prometheus is not None:
                require_client()  # a missing extra before any table is maintained
            if auto:
                report = health.maintain_auto(self, pattern, plan=plan, dry_run=dry_run, progress=progress,
                                              allow_empty=allow_empty, engine=engine)  # fmt: skip
            else:
                report = maintenance.maintain(self, pattern, plan=plan, dry_run=dry_run, progress=progress,
                                              allow_empty=allow_empty, engine=engine)  # fmt: skip
            if prometheus is not None:  # the state the maintenance left behind, read on the light path
                write_health_textfile(self.health(pattern, allow_empty=True), prometheus)
            return report
        if engine is not None:
            raise invalid("engine= goes with one pass (the service chooses the engine per step)",
                          "--engine goes with one pass (the service chooses the engine per step)")  # fmt: skip
        if not auto:
            raise invalid("every= needs auto=True: the service runs what each table's health calls for",
                          "--every needs --auto: the service runs what each table's health calls for")  # fmt: skip
        if dry_run or prometheus is not None:
            python, cli = ("dry_run=True", "--dry-run") if dry_run else ("prometheus=", "--prometheus")
            raise invalid(f"every= runs until stopped: {python} goes with one pass (maintain(auto=True)); the "
                          "service serves metrics_port", f"--every runs until stopped: {cli} goes with one pass "
                          "(maintain --auto), the service serves --metrics-port")  # fmt: skip
        service.ServiceOptions(every=parse_duration(every), max_minutes=max_minutes, parallel=parallel or 1).check()
        if metrics_port is not None:
            require_client()
        return service.serve(self, pattern, every=every, max_minutes=max_minutes, parallel=parallel or 1,
                             plan=plan if not isinstance(plan, dict) else None, metrics_port=metrics_port, stop=stop,
                             on_pass=on_pass, allow_empty=allow_empty, on_start=on_start)  # fmt: skip

    def maintenance_log(self, pattern: str | None = None, *, since: str | timedelta | None = None,
                        limit: int = 200) -> RunLogResult:  # fmt: skip
        """What maintenance ran on the matching tables (fnmatch; None: all), newest first, at most ``limit`` runs,
        only those started within ``since`` (``"1d"``): ``maintain`` and the service keep every action in the
        metastore (outcome, files and bytes before and after, error). No JVM.

        Example:
            >>> cat.maintenance_log("sales.*", since="1d")
        """
        window = parse_duration(since) if since is not None else None
        if limit < 1:
            raise invalid("invalid limit: must be at least 1", "invalid --limit: must be at least 1")
        return RunLogResult(RunLog(self.metastore).runs(pattern, since=window, limit=limit))

    def set_policy(self, pattern: str, values: dict[str, str] | None = None, *, unset: list[str] | tuple[str, ...] = (),
                   engine: str | None = None) -> PolicySetResult:  # fmt: skip
        """Set (and ``unset``) maintenance policy keys (``{"expire.retain-last": "10"}``, with or without
        ``lakecat.``) for a table (``sales.orders``: its properties), a namespace (``sales.*``) or the catalog
        (``*``); tables inherit catalog → namespace → table. A namespace's or the catalog's policy needs no JVM; a
        table's is a property change (``engine`` as for ``Table.set_properties``).

        Example:
            >>> cat.set_policy("sales.*", {"compact.target-file-size": "256MB"})
        """
        return set_policy(self, pattern, dict(values or {}), unset=list(unset), engine=engine)

    def policy(self, name: str | TableIdent, *, plan: str | Path | None = None) -> PolicyShowResult:
        """A table's effective maintenance policy, each key with where it comes from (default, catalog, namespace,
        table property, ``plan``). No JVM.

        Example:
            >>> cat.policy("sales.orders").policy["lakecat.expire.retain-last"]
        """
        return show_policy(self, str(name), plan=plan)

    def health(
        self,
        pattern: str | None = None,
        *,
        progress: Callable[[str, int, int], None] | None = None,
        allow_empty: bool = False,
        fail_on: str | None = None,
        html: str | Path | None = None,
        prometheus: str | Path | None = None,
    ) -> HealthResult:
        """Each matching table's health from metadata alone (no JVM): files, deletes, versions, a verdict.

        A ``pattern`` that matches no table raises ``NoTableMatchesError`` unless ``allow_empty`` (then the result
        has no tables). ``fail_on`` (``compact``, ``expire`` or ``any``) is checked before any table is read;
        ``result.failing(fail_on)`` then names the tables that trip it. ``html``
        writes one self-contained page (histograms, versions, verdicts, the tables' recent maintenance runs);
        ``prometheus`` writes the health gauges in Prometheus' text format (node-exporter's textfile collector).

        Example:
            >>> [(t.name, t.verdict) for t in cat.health("sales.*").tables]
            >>> cat.health("sales.*", html="health.html")
        """
        health.check_fail_on(fail_on)  # a usage error before any table is read
        if prometheus is not None:
            require_client()  # a missing extra before the tables are read
        result = health.health(self, pattern, progress=progress, allow_empty=allow_empty)
        if html is not None:
            write_html(result, html, RunLog(self.metastore).runs(pattern, limit=100))
        if prometheus is not None:
            write_health_textfile(result, prometheus)
        return result
