"""The format contract: everything a table format does for lakecat, in one abstract class.

``TableFormat`` declares metadata (catalog entries, describe, commits), reads (a version, a change
range), writes (an idempotent batch append carrying lakecat's exactly-once marker, the marker lookup,
the settings that put the marker on a MERGE commit, schema and property changes), versions (rollback)
and maintenance (compaction, expiry, orphan cleanup, metadata upkeep). An operation an adapter does not
implement raises ``UnsupportedOperationError`` (exit code 3) from here; capabilities are derived from
what the adapter overrides, checked before any work starts (``require``), and shown by ``describe``.

Adapters get what they need passed in — a ``CatalogContext`` (Spark session, metastore, config) and a
``TableHandle`` (the catalog entry) — and never import the catalog or table modules above them.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from ..engine import engine_facts, first_line, light_or_spark, to_int
from ..errors import NotExactError, UnsupportedOperationError, VersionNotFoundError
from ..files import local_path
from ..partitioning import Clustering, Layout, LayoutInfo

if TYPE_CHECKING:
    from collections.abc import Callable

    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from ..config import CatalogConfig
    from ..files import DataFile
    from ..identifiers import TableIdent
    from ..metastore import Metastore, TableEntry
    from ..partitioning import PartitionField
    from ..predicate import FilterNode
    from ..results import DescribeResult, ExpireResult, MetadataResult, MirrorResult, MirrorVerifyResult, RefInfo
    from ..schema import Column

log = logging.getLogger(__name__)


class CatalogContext(Protocol):
    """What an adapter may use of the catalog it serves."""

    @property
    def config(self) -> CatalogConfig: ...

    @property
    def name(self) -> str: ...

    @property
    def metastore(self) -> Metastore: ...

    def session(self) -> SparkSession: ...


class TableHandle(Protocol):
    """One table as an adapter sees it: its catalog and its (refreshable) catalog entry."""

    @property
    def catalog(self) -> CatalogContext: ...

    @property
    def entry(self) -> TableEntry: ...

    @property
    def name(self) -> str: ...

    @property
    def location(self) -> str: ...

    @property
    def spark_name(self) -> str: ...

    @property
    def branch_name(self) -> str | None:
        """The branch reads and writes go to (None: the main line)."""
        ...

    def refresh(self) -> TableEntry: ...


@dataclass
class Commit:
    """One commit of a table, in lakecat's words (``version``: Delta version / Iceberg snapshot id)."""

    version: int
    timestamp_ms: int
    operation: str
    summary: dict[str, Any]
    parent: int | None = None


#: lakecat's names for what a commit did (``Commit.operation``, ``history``'s operation column), the same on every
#: format: each adapter maps its engine's own word to one of these and keeps that word as ``engine_operation``.
OPERATIONS: dict[str, str] = {
    "create": "the table was created (or converted or cloned)",
    "replace": "the table was replaced: a new definition and new data in one commit",
    "append": "rows were added and none removed",
    "overwrite": "rows were replaced: files removed and new ones written",
    "merge": "an upsert or a CDC batch: rows inserted, updated or deleted by key",
    "update": "rows were changed in place by an UPDATE",
    "delete": "rows were removed",
    "compact": "files were rewritten into fewer, larger ones; the rows are the same",
    "restore": "a rollback: the table reads as it did at an earlier version",
    "alter_schema": "columns were added, renamed, dropped or changed",
    "set_properties": "table properties were set or unset",
    "alter": "another change of the table's definition (a constraint, a table feature)",
    "vacuum": "files that no version needs were deleted",
    "repair": "references to missing files were removed",
    "other": "an operation lakecat has no name for (engine_operation says which)",
}


# Metric names of the engines (Spark's and the light libraries' spellings) -> lakecat's summary keys.
_SUMMARY_KEYS = {
    "rows_added": ("numOutputRows", "num_added_rows", "numTargetRowsInserted", "num_target_rows_inserted",
                   "added-records"),
    "rows_removed": ("numDeletedRows", "num_deleted_rows", "numTargetRowsDeleted", "num_target_rows_deleted",
                     "deleted-records", "added-position-deletes", "added-equality-deletes"),
    "rows_updated": ("numUpdatedRows", "num_updated_rows", "numTargetRowsUpdated", "num_target_rows_updated"),
    "files_added": ("numFiles", "numAddedFiles", "num_added_files", "numTargetFilesAdded", "numFilesAdded",
                    "numRestoredFiles", "added-data-files"),
    "files_removed": ("numRemovedFiles", "num_removed_files", "numTargetFilesRemoved", "numFilesRemoved",
                      "deleted-data-files"),
    "bytes_added": ("numOutputBytes", "numAddedBytes", "restoredFilesSize", "added-files-size"),
    "bytes_removed": ("numRemovedBytes", "removedFilesSize", "removed-files-size"),
    "delete_files_added": ("added-delete-files",),
    "total_rows": ("total-records",),
    "total_files": ("total-data-files",),
}  # fmt: skip


def unified_summary(metrics: dict[str, Any]) -> dict[str, Any]:
    """An engine's commit metrics as lakecat's summary keys (first spelling found wins)."""
    out: dict[str, Any] = {}
    for key, names in _SUMMARY_KEYS.items():
        for n in names:
            if n in metrics and (value := to_int(metrics[n])) is not None:
                out[key] = value
                break
    return out


@dataclass
class FoundTable:
    """An existing table an adapter recognised at a location (``register``), before anything is recorded."""

    location: str
    #: The metadata file that names the table's current state, when the format has one (Iceberg's metadata.json).
    metadata_location: str | None = None
    #: What the adapter chose on the caller's behalf (which metadata file it took), for the user.
    notes: list[str] = field(default_factory=list)


@dataclass
class FileFact:
    """One live data file as health sees it: size, partition (a display string), rows, rows a deletion vector hides."""

    size: int
    partition: str
    records: int | None = None
    deleted_rows: int = 0
    #: (lower, upper) of each clustering key (``HealthFacts.clustering``) from the file's column statistics; None when
    #: the file has no statistics for a key.
    bounds: tuple[tuple[Any, Any], ...] | None = None


@dataclass
class HealthFacts:
    """What a table's metadata says about its upkeep, read on the light path (no JVM).

    The adapter gathers the facts; ``lakecat/health.py`` judges them (format-neutral thresholds and verdicts).
    """

    files: list[FileFact]
    commits: list[Commit]
    current_version: int | None = None
    #: Delete files of the current version (Iceberg position/equality deletes; Delta: files carrying a deletion vector).
    delete_files: int = 0
    delete_bytes: int = 0
    #: Rows the delete files / deletion vectors hide from readers.
    deleted_rows: int = 0
    #: How the format records deletes, in its own words (``position/equality deletes``, ``deletion vectors``).
    delete_kind: str = ""
    #: Files (and their bytes) only versions other than the current one reference: what expiry frees.
    old_version_files: int = 0
    old_version_bytes: int = 0
    #: When lakecat's ingest last committed (its exactly-once marker), None if it never did.
    stream_commit_ms: int | None = None
    #: The table's clustering keys (Delta liquid clustering, Iceberg's sort order); [] when it has none.
    clustering: list[str] = field(default_factory=list)


class VersionLog:
    """A table's versions as read once for one operation (each commit writes new metadata).

    The default answers suit a format whose versions form one line; formats with branching history
    (Iceberg's snapshot tree) override ``lineage``, ``timeline`` and ``pointer_moves``.
    """

    def __init__(self, fmt: TableFormat, table: TableHandle) -> None:
        self.fmt = fmt
        self.table = table
        self._commits: list[Commit] | None = None

    @property
    def name(self) -> str:
        return self.table.name

    def commits(self) -> list[Commit]:
        """Every commit still in the metadata, oldest first."""
        if self._commits is None:
            self._commits = self.fmt.commits(self.table)
        return self._commits

    def current_version(self) -> int | None:
        return self.fmt.current_version(self.table)

    def pointer_moves(self) -> list[Commit]:
        """Changes of the current version that are no commit of their own (Iceberg rollbacks)."""
        return []

    def timeline(self) -> list[tuple[int, int]]:
        """(timestamp_ms, version) of each time the table's current version changed, oldest first."""
        return [(c.timestamp_ms, c.version) for c in self.commits()]

    def lineage(self, until: int) -> list[int]:
        """The versions ``until`` descends from, newest first, ``until`` included."""
        by_version = {c.version: c for c in self.commits()}
        out: list[int] = []
        current: int | None = until
        while current is not None and current in by_version:
            out.append(current)
            current = by_version[current].parent
        return out

    def exists(self, version: int) -> bool:
        return version in {c.version for c in self.commits()}

    def check_readable(self, version: int) -> None:
        """Raise VersionNotFoundError when the version's files are known to be gone."""

    def missing(self, version: int) -> VersionNotFoundError:
        return VersionNotFoundError(
            f"version {version} of {self.name} does not exist (never committed, or expired); "
            f"`lakecat history {self.name}` lists the versions"
        )

    def not_an_ancestor(self, since: int, until: int) -> Exception:
        """The error for ``--since`` off the line of history that leads to ``--until``."""
        return VersionNotFoundError(
            f"version {since} of {self.name} is not an ancestor of version {until} (rolled back, or on "
            "another branch): changes are read along one line of history"
        )


# capability -> the adapter methods that provide it (all must be overridden)
CAPABILITY_METHODS: dict[str, tuple[str, ...]] = {
    "time_travel": ("read_version",),
    "changes": ("read_changes",),
    "light_time_travel": ("scan_version_light",),
    "light_changes": ("changes_light",),
    "rollback": ("rollback",),
    "ingest": ("append_batch", "committed_batch", "read_current"),
    "merge": ("merge_marker_conf", "committed_batch", "read_current"),
    "alter_properties": ("set_properties_spark",),
    "add_column": ("add_column",),
    "rename_column": ("rename_column",),
    "drop_column": ("drop_column",),
    "widen_column": ("widen_column",),
    "widen_by_rewrite": ("widen_by_rewrite",),
    "comment_column": ("set_column_comment",),
    "partition_evolution": ("evolve_partitioning",),
    "tags": ("create_tag", "drop_tag"),
    "branches": ("create_branch", "publish"),
    "compact": ("compact", "data_files"),
    "expire": ("expire",),
    "clean_orphans": ("find_orphans", "delete_orphans"),
    "rewrite_metadata": ("rewrite_metadata",),
    "rename": ("rename",),
    "health": ("health_facts",),
    "register": ("find_table", "register"),
    "convert": ("convert",),
    "clustering": ("set_clustering",),
    "deletion_vectors": ("set_deletion_vectors",),
    "write": ("write_spark",),
    "delete": ("delete_spark",),
    "light_writes": ("check_light_write", "write_light", "delete_light"),
}
_COMPACT_STRATEGIES = ("binpack", "sort", "zorder")

#: What a failed read of a version or a change range means (``TableFormat.classify_read_error``).
ReadFailure = Literal["files_gone", "no_change_data"]
#: Spark's and Hadoop's error conditions and classes for a file that is not there, whatever the format.
_ENGINE_FILE_GONE = ("FAILED_READ_FILE.FILE_NOT_EXIST", "PATH_NOT_FOUND", "java.io.FileNotFoundException",
                     "org.apache.iceberg.exceptions.NotFoundException")  # fmt: skip


class LocalServer(Protocol):
    """A development server a format ships (``lakecat local <name> start|stop|status``)."""

    def start(self, *, timeout: float = ...) -> str:
        """Start it (or find it running) and wait until it serves; returns its address."""
        ...

    def stop(self, *, timeout: float = ...) -> bool:
        """Stop it; returns whether it was running."""
        ...

    def status(self) -> dict[str, Any]:
        """Whether it runs, where, and what it serves (the JSON of ``lakecat local <name> status``)."""
        ...


class LocalServerFactory(Protocol):
    """Builds a format's development server over one catalog (``catalog`` is needed by ``start`` only) that listens on
    ``host`` (loopback unless the user asks for another address)."""

    def __call__(
        self, *, data_dir: Path, port: int, host: str = ..., catalog: CatalogContext | None = None
    ) -> LocalServer: ...


class TableFormat(ABC):
    """One table format: everything lakecat does with it, and how.

    Subclasses implement the abstract methods (catalog entries, create, describe, drop, commits) and
    whatever else the format can do; the rest answers ``UnsupportedOperationError`` (exit code 3).
    """

    name: ClassVar[str] = ""
    #: Partition transforms the format can express (Iceberg's words: identity, years, ..., bucket, truncate).
    partition_transforms: ClassVar[frozenset[str]] = frozenset({"identity"})
    #: Partition transforms it keeps hidden (derived from a source column without a visible column).
    hidden_partitioning: ClassVar[bool] = False
    #: Compaction strategies ``compact`` accepts.
    compact_strategies: ClassVar[tuple[str, ...]] = ()
    #: Shortest window expiry and orphan cleanup accept without ``force``, and why.
    safety_floor: ClassVar[timedelta] = timedelta(days=7)
    safety_floor_reason: ClassVar[str] = "files younger than that may still be read or belong to a commit in flight"
    #: Default window of ``clean-orphans``.
    default_orphan_window: ClassVar[timedelta] = timedelta(days=7)
    #: ``maintain`` runs metadata upkeep once the format's measure (manifests, commits) reaches this.
    metadata_upkeep_threshold: ClassVar[int] = 5
    #: Whether ``evolve_partitioning`` changes the spec in place (old files keep their layout) or only by a rewrite.
    partition_evolution_in_place: ClassVar[bool] = False
    #: Why the format lacks a capability, for the exit-3 sentence (capability -> reason).
    gap_reasons: ClassVar[dict[str, str]] = {}
    #: Error conditions, SQLSTATEs or exception classes (``EngineFacts.has``) of the format's engine errors that say a
    #: version's files are gone (expired or vacuumed), or that it is no longer there.
    files_gone_errors: ClassVar[tuple[str, ...]] = ()
    #: Last resort, for an engine error of that meaning that has no condition or class of its own: words of its message.
    files_gone_messages: ClassVar[tuple[str, ...]] = ()
    #: Error conditions, SQLSTATEs or classes of its engine errors that say change data was not recorded for part of
    #: a range; and, as for ``files_gone_messages``, words of such messages.
    no_change_data_errors: ClassVar[tuple[str, ...]] = ()
    no_change_data_messages: ClassVar[tuple[str, ...]] = ()
    #: The table property that turns change data on, named when it was off (None: the format has none).
    change_data_property: ClassVar[str | None] = None

    # --- capabilities -------------------------------------------------------------------------
    @property
    def capabilities(self) -> dict[str, bool]:
        """What this adapter can do, derived from the methods it implements."""
        caps = {
            "hidden_partitioning": self.hidden_partitioning,
            "bucket_partitioning": "bucket" in self.partition_transforms,
        }
        for cap, methods in CAPABILITY_METHODS.items():
            caps[cap] = all(getattr(type(self), m) is not getattr(TableFormat, m) for m in methods)
        for strategy in _COMPACT_STRATEGIES:
            if strategy != "binpack":
                caps[f"compact_{strategy}"] = caps["compact"] and strategy in self.compact_strategies
        return caps

    def supports(self, capability: str) -> bool:
        return bool(self.capabilities.get(capability, False))

    def unsupported(self, what: str, why: str = "") -> UnsupportedOperationError:
        return UnsupportedOperationError(f"{what}: not supported for {self.name} tables" + (f" — {why}" if why else ""))

    def require(self, capability: str, what: str | None = None, why: str = "") -> None:
        """Raise ``UnsupportedOperationError`` (exit 3) unless the format has ``capability``."""
        if not self.supports(capability):
            raise self.unsupported(what or capability.replace("_", " "), why or self.gap_reasons.get(capability, ""))

    def local_servers(self) -> dict[str, LocalServerFactory]:
        """Development servers the format ships, by the name ``lakecat local`` gives them (``{"rest": ...}``)."""
        return {}

    # --- catalog entries (light path) ----------------------------------------------------------
    def prepare_metastore(self, metastore: Metastore) -> None:  # noqa: B027 - optional hook
        """Create what the format keeps in the metastore (called once per catalog)."""

    def metastore_status(
        self, config: CatalogConfig, tables: set[str], columns: Callable[[str], set[str]]
    ) -> str | None:
        """What the format keeps in the catalog's metastore database, in a few words for ``lakecat doctor``
        (``tables``: the database's table names; ``columns(table)``: one table's column names); None: nothing."""
        return None

    @abstractmethod
    def list_entries(self, ctx: CatalogContext, namespace: str | None = None) -> list[TableEntry]:
        """The format's tables in this catalog."""

    @abstractmethod
    def get_entry(self, ctx: CatalogContext, ident: TableIdent) -> TableEntry | None:
        """The catalog entry of ``ident`` if it is a table of this format."""

    def check_partitioning(self, fields: list[PartitionField], columns: list[Column]) -> None:
        """Refuse a partition spec the format cannot express, before any engine starts."""
        for f in fields:
            if f.transform not in self.partition_transforms:
                raise self.unsupported(f"partition transform {f}")

    def check_layout(self, layout: Layout, partitioning: list[PartitionField]) -> None:
        """Refuse a layout the format cannot have before any engine starts (exit 3; exit 2 for a combination)."""
        if layout.clustering:
            self.require("clustering", "clustering")
        if layout.deletion_vectors:
            self.require("deletion_vectors", "deletion vectors")
        if layout.format_version is not None:
            raise self.unsupported("a format version")

    @abstractmethod
    def create(self, ctx: CatalogContext, ident: TableIdent, columns: list[Column], partitioning: list[PartitionField],
               properties: dict[str, str], *, layout: Layout | None = None) -> TableEntry:  # fmt: skip
        """Create the table (laid out as ``layout`` says) through Spark and record it in the catalog."""

    def create_light(self, ctx: CatalogContext, ident: TableIdent, columns: list[Column],
                     partitioning: list[PartitionField], properties: dict[str, str], *,
                     layout: Layout | None = None) -> TableEntry:  # fmt: skip
        """Create the table as ``create`` does, with the format's light library (no JVM): the same schema, field ids,
        partitioning, properties and version. Raises ``NotExactError``, before it writes anything, for what the library
        cannot create exactly as Spark does (the caller then runs ``create``)."""
        raise NotExactError(f"{self.name} tables are created by Spark")

    def layout(self, table: TableHandle) -> LayoutInfo:
        """The table's clustering keys, format version and delete mode, from metadata (no JVM)."""
        return LayoutInfo()

    def set_clustering(self, table: TableHandle, clustering: Clustering) -> None:
        """Make ``clustering`` the table's keys (empty: none) in one commit; data files stay as they are."""
        raise self.unsupported("alter(cluster_by)")

    def set_deletion_vectors(self, table: TableHandle, on: bool) -> None:
        """Mark deleted rows (``on``) or rewrite files (off) in the writes that follow."""
        raise self.unsupported("alter(deletion_vectors)")

    @abstractmethod
    def describe(self, table: TableHandle) -> DescribeResult:
        """Describe the table from its metadata alone (light path: no JVM)."""

    @abstractmethod
    def drop(self, ctx: CatalogContext, entry: TableEntry) -> None:
        """Remove the table from the catalog (light path); data files are left in place."""

    def rename(self, ctx: CatalogContext, entry: TableEntry, new: TableIdent) -> TableEntry:
        """Give the table the name ``new`` in the catalog (light path): its files stay where they are, its mirrors
        follow. The caller has checked that ``new`` is free in every format."""
        raise self.unsupported("rename")

    def drop_spark(self, ctx: CatalogContext, entry: TableEntry) -> None:
        """Remove the table from the catalog through Spark (``engine="spark"``), data files left in place."""
        self.drop(ctx, entry)

    # --- existing tables (register, convert) ---------------------------------------------------
    def owns_location(self, location: str) -> bool:
        """Whether ``location`` holds a table of this format (a cheap look at its files, no JVM)."""
        return False

    def find_table(self, location: str) -> FoundTable:
        """The table at ``location``, checked readable (no JVM); ``InvalidArgumentError`` (exit 2) when there is none."""
        raise self.unsupported("register")

    def register(self, ctx: CatalogContext, ident: TableIdent, found: FoundTable) -> TableEntry:
        """Record an existing table in the catalog as ``ident``; its files are not touched."""
        raise self.unsupported("register")

    def convert(self, ctx: CatalogContext, ident: TableIdent, directory: str, columns: list[Column],
                partition_columns: list[Column], partitions: dict[str, dict[str, str | None]]) -> TableEntry:  # fmt: skip
        """Make the Parquet files under ``directory`` (Hive-style ``k=v/`` partitions: ``partition_columns``) a table
        in place, without copying them, and record it as ``ident``. ``partitions``: each partition directory (relative to
        ``directory``) and its values (None: Hive's default partition)."""
        raise self.unsupported("convert")

    def check_changes(self, table: TableHandle, since: int, until: int) -> None:  # noqa: B027 - optional hook
        """Refuse (exit 3, with how to enable it) a change read the table's settings do not allow."""

    def spark_name(self, ctx: CatalogContext, entry: TableEntry) -> str:
        """How Spark SQL names this table (quoted)."""
        raise self.unsupported("Spark SQL access")

    # --- the catalog config ------------------------------------------------------------------
    def check_config(self, config: CatalogConfig) -> None:  # noqa: B027 - optional hook
        """Refuse (``InvalidConfigError``, exit 2) what the config's section for this format says wrongly."""

    def catalog_kind(self, config: CatalogConfig) -> str:
        """Where the config keeps this format's tables: ``metastore`` (lakecat's own database), ``rest``, ..."""
        return "metastore"

    # --- the Spark session (lakecat.spark composes these for every registered format) -----------
    #: The format's Spark SQL session extension class (None: it needs none).
    spark_extension: ClassVar[str | None] = None

    def spark_packages(self, config: CatalogConfig) -> list[str]:
        """Maven coordinates the format needs in a Spark session for this catalog (resolved by lakecat.jars)."""
        return []

    def runtime_versions(self) -> dict[str, str | None]:
        """What the format runs on, by name: its Spark runtime (keyed by the format's name) and its JVM-free library
        (None: not installed).

        Read from lakecat's own coordinates and installed distributions' metadata, never by starting or importing
        Spark: ``lakecat --version`` shows these."""
        return {}

    def spark_session_conf(self, config: CatalogConfig) -> dict[str, str]:
        """Settings fixed when the session starts (e.g. which catalog plugin ``spark_catalog`` is)."""
        return {}

    def spark_catalog_conf(self, config: CatalogConfig) -> dict[str, str]:
        """Settings that register this lakecat catalog's tables of the format in a running session."""
        return {}

    def spark_catalog_sql(self, ctx: CatalogContext, entry: TableEntry) -> list[str]:
        """Statements that make the table reachable by name in a Spark session (none when it is already)."""
        return []

    def properties(self, table: TableHandle) -> dict[str, str]:
        """The table's properties, from metadata (no JVM)."""
        return dict(self.describe(table).properties)

    # --- versions (light path) -------------------------------------------------------------
    @abstractmethod
    def commits(self, table: TableHandle) -> list[Commit]:
        """Every commit still in the metadata, oldest first."""

    @abstractmethod
    def current_version(self, table: TableHandle) -> int | None:
        """The version the table reads now (None: nothing committed)."""

    def versions(self, table: TableHandle) -> VersionLog:
        """A view of the table's versions read once for one operation."""
        return VersionLog(self, table)

    # --- reads (Spark path) -----------------------------------------------------------------
    def read_current(self, table: TableHandle) -> DataFrame:
        """The table's current rows (fresh metadata: other engines may have committed since)."""
        raise self.unsupported("reading the table")

    def read_version(self, table: TableHandle, version: int) -> DataFrame:
        raise self.unsupported("time travel")

    def read_changes(self, table: TableHandle, since: int, until: int, commits: dict[int, Commit]) -> DataFrame:
        """Unified change rows (``_change_type``, ``_commit_version``, ``_commit_timestamp``) of the range."""
        raise self.unsupported("changes")

    # --- reads (light path: no JVM) -------------------------------------------------------------
    def scan_version_light(self, table: TableHandle, version: int) -> Any:
        """The rows of ``version`` as a streaming Arrow source (a ``pyarrow.dataset.Dataset`` or a
        ``RecordBatchReader``; its schema in the table's column order), read without a JVM.

        Raises ``NotExactError`` when the light libraries would not read exactly what Spark reads (the caller
        then goes to Spark).
        """
        raise NotExactError(f"time travel without a JVM is not implemented for {self.name} tables")

    def scan_empty_light(self, table: TableHandle) -> Any:
        """A table nothing has been committed to (``current_version`` None): no rows, its columns, as a streaming
        Arrow source read without a JVM. ``NotExactError`` sends the read to Spark."""
        raise NotExactError(f"reading an empty {self.name} table without a JVM is not implemented")

    def changes_light(self, table: TableHandle, since: int, until: int, commits: dict[int, Commit]) -> Any:
        """The change rows of the range ``since`` (exclusive) .. ``until`` as a streaming Arrow source: the data
        columns, ``_change_type`` (unified words) and ``_commit_version`` (int64); the caller adds
        ``_commit_timestamp`` from ``commits``. ``NotExactError`` when only Spark reads the range exactly.
        """
        raise NotExactError(f"change reads without a JVM are not implemented for {self.name} tables")

    def classify_read_error(self, exc: BaseException) -> ReadFailure | None:
        """What an engine error of a read at a version or over a change range means: ``"files_gone"`` (expiry or
        vacuum removed its files), ``"no_change_data"`` (the range was written without change data), or None."""
        facts = engine_facts(exc)
        if facts is None:
            return None
        if facts.has(*_ENGINE_FILE_GONE, *self.files_gone_errors) or any(
            m in str(exc) for m in self.files_gone_messages
        ):
            return "files_gone"
        if facts.has(*self.no_change_data_errors) or any(m in str(exc) for m in self.no_change_data_messages):
            return "no_change_data"
        return None

    def generated_columns(self, table: TableHandle) -> set[str]:
        """Columns the format computes itself (writers must not fill them)."""
        return set()

    # --- writes (Spark path) ----------------------------------------------------------------
    def committed_batch(self, table: TableHandle, app_id: str) -> int:
        """The highest batch id ``app_id`` has committed to the table (-1: none), from its metadata."""
        raise self.unsupported("exactly-once ingest")

    def append_batch(self, table: TableHandle, df: DataFrame, app_id: str, batch_id: int) -> None:
        """Append ``df`` as one commit that carries the marker (``app_id``, ``batch_id``)."""
        raise self.unsupported("ingest")

    def append_batch_light(self, table: TableHandle, data: pa.Table, app_id: str, batch_id: int) -> None:
        """``append_batch`` of Arrow rows without a JVM, where ``check_light_write(table, "append")`` passed."""
        raise NotExactError(f"writes without a JVM are not implemented for {self.name} tables")

    def merge_marker_conf(self, app_id: str, batch_id: int) -> dict[str, str]:
        """Session settings that put the marker (``app_id``, ``batch_id``) on the next MERGE commit."""
        raise self.unsupported("merge")

    def merge_key_conf(self, keys: list[str]) -> dict[str, str]:
        """Session settings that record on the next MERGE commit that lakecat merged by ``keys``, for a format whose
        commit does not say it was a merge: ``history`` then names it ``merge`` and ``changes`` pairs its updates."""
        return {}

    def add_columns(self, table: TableHandle, columns: list[tuple[str, str]]) -> None:
        """Add nullable columns (name, SQL type) in one commit."""
        raise self.unsupported("adding columns")

    def set_properties(self, table: TableHandle, properties: dict[str, str], removed: list[str]) -> None:
        """Set and unset table properties in one commit: without a JVM where the light library does it exactly, else
        through Spark."""
        light_or_spark(None, f"alter {table.name}", lambda: self.set_properties_light(table, properties, removed),
                       lambda: self.set_properties_spark(table, properties, removed))  # fmt: skip

    def set_properties_spark(self, table: TableHandle, properties: dict[str, str], removed: list[str]) -> None:
        """Set and unset table properties in one commit through Spark."""
        raise self.unsupported("alter")

    def set_properties_light(self, table: TableHandle, properties: dict[str, str], removed: list[str]) -> None:
        """``set_properties`` with the format's light library (no JVM); ``NotExactError``, before any commit, for a
        change it cannot make exactly as Spark does (a property that changes the table's protocol)."""
        raise NotExactError(f"{self.name} table properties are changed by Spark")

    def record_key(self, table: TableHandle, keys: list[str]) -> list[str]:
        """Record a change-event key in the format's own terms; returns notes for the user."""
        return []

    # --- plain writes and deletes (``Table.append`` / ``overwrite`` / ``delete``) ---------------------------------
    def write_schema(self, table: TableHandle) -> pa.Schema:
        """The columns a writer fills (not the ones the format generates) as Arrow types, NOT NULL ones not nullable,
        from metadata (no JVM)."""
        raise self.unsupported("writes")

    def check_light_write(self, table: TableHandle, operation: str) -> None:
        """Raise ``NotExactError`` (saying why) unless the light library writes ``operation`` (``append``,
        ``overwrite``, ``overwrite_where``, ``delete``) to this table as Spark would: every feature the table has is one
        the library writes, and the table's chosen delete mode is the library's."""
        raise NotExactError(f"writes without a JVM are not implemented for {self.name} tables")

    def write_light(self, table: TableHandle, data: pa.Table, mode: str, where: FilterNode | None) -> None:
        """One commit without a JVM: ``data`` (in the table's Arrow schema) appended (``mode="append"``), or replacing
        every row (``"overwrite"``) or the rows ``where`` selects (a ``lakecat.predicate.row_filter`` tree)."""
        raise NotExactError(f"writes without a JVM are not implemented for {self.name} tables")

    def delete_light(self, table: TableHandle, where: FilterNode) -> int | None:
        """Delete the rows ``where`` selects in one commit without a JVM; returns how many (None: the library did not
        say)."""
        raise NotExactError(f"deletes without a JVM are not implemented for {self.name} tables")

    def write_spark(self, table: TableHandle, df: DataFrame, mode: str, where: str | None) -> None:
        """One commit on Spark: ``df`` appended, or replacing every row or the rows the checked Spark SQL predicate
        ``where`` selects (every row of ``df`` matches it)."""
        raise self.unsupported("append" if mode == "append" else "overwrite")

    def delete_spark(self, table: TableHandle, where: str) -> int | None:
        """Delete the rows the checked Spark SQL predicate ``where`` selects, on Spark; returns how many (None: the
        engine did not say)."""
        raise self.unsupported("delete")

    # --- after every commit lakecat makes -------------------------------------------------------------------------
    def after_commit(self, table: TableHandle) -> None:
        """The one step after each commit lakecat makes to the table (a write, a delete, an upsert, an ingest batch, an
        alter, a rollback, a maintenance commit): its mirrors make their matching commits. A mirror that cannot
        follow (a version it refuses, a conflict) stays behind, correct, with one warning; ``lakecat mirror TABLE
        --sync`` says why."""
        if type(self).mirror_formats is TableFormat.mirror_formats:  # a format without mirrors: no catalog lookup
            return
        try:
            targets = self.mirror_formats(table.refresh())
        except Exception:  # noqa: BLE001 - the table is gone (dropped by the operation itself): nothing to follow
            return
        for target in targets:
            try:
                self.sync_mirror(table, target)
            except Exception as e:  # noqa: BLE001 - the table's commit succeeded; `mirror --sync` reports the error
                log.warning("the %s mirror of %s stays behind: %s", target.name, table.name,
                            first_line(str(e)) or type(e).__name__)  # fmt: skip

    # --- evolution (schema and partitioning) ------------------------------------------------
    def schema_upgrade(self, table: TableHandle, kind: str) -> str | None:
        """What a schema change of ``kind`` needs the table to enable first (a protocol upgrade), in a sentence.

        None: nothing. ``alter`` enables it (``apply_schema_upgrade``) only when the caller confirmed.
        """
        return None

    def apply_schema_upgrade(self, table: TableHandle, kind: str) -> None:
        """Enable what ``schema_upgrade`` described (one commit)."""
        raise self.unsupported(f"{kind} column")

    def add_column(self, table: TableHandle, column: Column, position: str | None) -> None:
        """Add one column (``position``: None, ``"FIRST"`` or ``"AFTER x"``) in one commit."""
        raise self.unsupported("adding a column")

    def rename_column(self, table: TableHandle, old: str, new: str) -> None:
        raise self.unsupported("renaming a column")

    def drop_column(self, table: TableHandle, name: str) -> None:
        raise self.unsupported("dropping a column")

    def widen_column(self, table: TableHandle, name: str, new_type: str) -> None:
        raise self.unsupported("widening a column type")

    def widen_by_rewrite(self, table: TableHandle, types: dict[str, str], dry_run: bool) -> tuple[int, int]:
        """Widen columns (name -> wider type) by rewriting every data file in one commit, for a format whose in-place
        widening locks readers out; returns (files to rewrite, their bytes)."""
        raise self.unsupported("alter(widen, rewrite=True)")

    def set_column_comment(self, table: TableHandle, name: str, comment: str) -> None:
        raise self.unsupported("setting a column comment")

    def evolve_partitioning(
        self, table: TableHandle, fields: list[PartitionField], rewrite: bool, dry_run: bool
    ) -> tuple[int, int]:
        """Make ``fields`` the table's partitioning; returns (files to rewrite, their bytes) — (0, 0) in place."""
        raise self.unsupported("partition evolution")

    # --- named versions (tags, branches) ----------------------------------------------------
    def refs(self, table: TableHandle) -> list[RefInfo]:
        """The table's tags and branches (besides its main line), light path."""
        return []

    def create_tag(self, table: TableHandle, name: str, version: int, retain: timedelta | None) -> None:
        raise self.unsupported("tags")

    def drop_tag(self, table: TableHandle, name: str) -> None:
        raise self.unsupported("tags")

    def create_branch(self, table: TableHandle, name: str, version: int | None) -> None:
        raise self.unsupported("branches")

    def branch_spark_name(self, spark_name: str, branch: str) -> str:
        """How Spark SQL names a branch of the table (reads and writes go to the branch)."""
        raise self.unsupported("branches")

    def publish(self, table: TableHandle, branch: str) -> int | None:
        """Fast-forward the main line to ``branch``; returns the table's version afterwards."""
        raise self.unsupported("branches")

    # --- versions (Spark path) --------------------------------------------------------------
    def rollback(self, table: TableHandle, target: int, current: int | None) -> int | None:
        """Make the table read ``target``'s state; returns the version it is at afterwards."""
        raise self.unsupported("rollback")

    def streams_undone_by(self, table: TableHandle, target: int, current: int | None) -> list[str]:
        """Ingest streams (their ids) whose committed batches a rollback from ``current`` to ``target`` undoes."""
        return []

    # --- maintenance ------------------------------------------------------------------------
    def data_files(self, table: TableHandle) -> list[DataFile]:
        """The live data files of the current version, from metadata (no JVM)."""
        raise self.unsupported("listing data files")

    def file_totals(self, table: TableHandle) -> tuple[int, int] | None:
        """(live data files, their bytes) of the current version from the format's cheapest metadata — no file
        list; None: lakecat counts ``data_files`` instead."""
        return None

    def compaction_predicate_columns(self, table: TableHandle) -> list[str] | None:
        """The columns a compaction ``where`` may use (None: every column)."""
        return None

    def files_matching(self, table: TableHandle, predicate: str) -> set[str]:
        """Normalized paths of the files that may hold rows matching ``predicate``."""
        raise self.unsupported("compact(where)")

    def partitions_written_since(self, table: TableHandle, since: datetime) -> dict[str, str | None]:
        """The partitions (as ``DataFile.partition`` spells them) of the live files that writes after ``since`` added,
        each with a Spark SQL predicate that selects it for a rewrite (None: it cannot be narrowed to)."""
        raise self.unsupported("compact since")

    def light_blockers(self, table: TableHandle, action: str) -> list[str]:
        """Why the light engine (pyiceberg / delta-rs, no JVM) cannot run maintenance ``action`` ("compact",
        "expire", "clean-orphans", "rewrite-metadata") on this table exactly: one line each, empty when it can.
        ``lakecat.engine_choice.choose_engine`` sends a blocked step to Spark (or refuses a forced light run)."""
        return [f"lakecat has no light engine for {action} of {self.name} tables"]

    def light_work_bytes(self, table: TableHandle, action: str) -> int:
        """How much a light run of ``action`` would read (bytes), held against ``lakecat.maintain.light-max-bytes``."""
        return 0

    def sole_engine(self, table: TableHandle, action: str) -> tuple[str, str] | None:
        """The one engine ("light" or "spark") the format has for maintenance ``action``, and why; None when both can
        run it and lakecat chooses (``lakecat.engine_choice``)."""
        return None

    def light_compact(self, table: TableHandle, target: int, partitions: set[str] | None) -> tuple[int, int]:
        """The light engine's bin-pack compaction (no JVM): merge the small files (``lakecat.smallfiles``) of each
        partition (only ``partitions``, ``col=value/...`` texts, when given) into files of about ``target`` bytes, in
        one commit that replaces them, against the version it planned from (a conflict raises
        ``CommitConflictError``: the caller plans again); (files removed, files added). Called only when
        ``light_blockers(table, "compact")`` is empty."""
        raise self.unsupported("compact without Spark")

    def compact(self, table: TableHandle, strategy: str, by: list[str], target: int, where: str | None,
                apply_deletes: bool = False, *, full: bool = False) -> tuple[int, int]:  # fmt: skip
        """Rewrite small files (with ``apply_deletes`` also files that deletes hide rows of, whatever their size);
        returns (files rewritten, files added). Strategy ``cluster`` (a clustered table) clusters by the table's own
        keys: the files that need it, or with ``full`` every file."""
        raise self.unsupported("compact")

    def planned_files(self, table: TableHandle, version: int, where: str | None) -> tuple[int, int] | None:
        """(files a read of ``version`` filtered by ``where`` plans to open, files of the version), from the files'
        partition values and column statistics (no JVM); None when the metadata cannot say."""
        return None

    def expire(self, table: TableHandle, window: timedelta, keep: int, dry_run: bool, force: bool, *,
               engine: str = "spark") -> ExpireResult:  # fmt: skip
        """Expire versions (``engine``: ``lakecat.maintenance.engine_for``'s choice, "light" or "spark")."""
        raise self.unsupported("expire")

    def find_orphans(self, table: TableHandle, cutoff: datetime, window: timedelta, *,
                     engine: str = "spark") -> list[str]:  # fmt: skip
        """Files under the table no version references, older than ``cutoff`` (nothing is deleted)."""
        raise self.unsupported("clean-orphans")

    def delete_orphans(self, table: TableHandle, cutoff: datetime, window: timedelta, *,
                       engine: str = "spark") -> None:  # fmt: skip
        raise self.unsupported("clean-orphans")

    def rewrite_metadata(self, table: TableHandle, dry_run: bool, min_count: int, *,
                         engine: str = "spark") -> MetadataResult:  # fmt: skip
        raise self.unsupported("rewrite-metadata")

    # --- mirrors: the table also readable as another format, metadata only -------------------
    def mirrors(self, entry: TableEntry) -> list[str]:
        """The formats the table is also readable as (``lakecat mirror``), from its catalog entry."""
        return []

    def mirror_formats(self, entry: TableEntry) -> list[TableFormat]:
        """The adapters of the formats the table is also readable as (``mirrors``)."""
        return []

    def library_catalog(self, ctx: CatalogContext) -> Any:
        """The format's own library's catalog over this lakecat catalog (pyiceberg's for Iceberg), which another
        format's mirror commits to."""
        raise self.unsupported("a catalog other formats' mirrors commit to")

    def mirror(self, table: TableHandle, target: TableFormat, *, purge_deletes: bool = False) -> MirrorResult:
        """Make the table readable as ``target`` too (its metadata over the same data files) and bring it up to date."""
        raise self.unsupported(f"mirror(as_format={target.name!r})")

    def sync_mirror(self, table: TableHandle, target: TableFormat, *, purge_deletes: bool = False) -> MirrorResult:
        """Bring the mirror as ``target`` up to the table's current version, one mirror commit per version;
        ``purge_deletes`` first rewrites away what the mirror cannot express (Delta's deletion vectors)."""
        raise self.unsupported(f"mirror(as_format={target.name!r})")

    def drop_mirror(self, ctx: CatalogContext, entry: TableEntry, target: TableFormat) -> None:
        """Remove the mirror as ``target`` from the catalog (its metadata stays; the data files are the table's)."""
        raise self.unsupported(f"mirror(as_format={target.name!r})")

    def verify_mirror(self, table: TableHandle, target: TableFormat) -> MirrorVerifyResult:
        """Compare the table and its mirror at the mirrored version: rows and a checksum of every column."""
        raise self.unsupported(f"mirror(as_format={target.name!r})")

    # --- health (light path) ---------------------------------------------------------------
    def change_pointer(self, table: TableHandle) -> str | None:
        """A token that changes with every commit to the table, read cheaply: no log replay, no manifest (the
        maintenance service judges again only the tables whose token moved). None: the format has none, and the
        table is judged at every pass."""
        return None

    def health_facts(self, table: TableHandle) -> HealthFacts:
        """Files, deletes, versions and what only old versions hold, from metadata alone (no JVM)."""
        raise self.unsupported("health")

    # --- locations --------------------------------------------------------------------------
    def default_location(self, ctx: CatalogContext, ident: TableIdent) -> str:
        return f"{ctx.config.warehouse_uri.rstrip('/')}/{ident.namespace}/{ident.name}"

    @staticmethod
    def local_dir(location: str) -> Path | None:
        return local_path(location)
