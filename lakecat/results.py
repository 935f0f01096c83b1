"""Result dataclasses: every API call returns one, every one has ``to_dict()`` (the JSON contract).

One naming scheme: what an API call returns is a ``...Result`` (``CompactResult``, ``IngestResult``,
``HistoryResult``); the records inside a result are plain nouns (``HistoryEntry``, ``ColumnInfo``,
``PartitionPlan``).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import display
from .units import human_size

#: Keys whose values are versions (Delta versions, Iceberg snapshot ids), wherever they appear in a JSON document.
VERSION_KEYS = frozenset({
    "version", "current_version", "since_version", "until_version", "from_version", "to_version", "source_version",
    "mirror_version", "first_version", "parent_version", "restored_version", "_commit_version", "expired_versions",
    "retained_versions",
})  # fmt: skip
#: Data rows (``timetravel``, ``changes``): their columns are the table's; only lakecat's own change column is a version.
_ROW_KEYS = ("rows",)
_ROW_VERSION_KEYS = frozenset({"_commit_version"})


def _as_str(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return [str(v) for v in value]
    return value


def with_version_strings(data: Any, _keys: frozenset[str] = VERSION_KEYS) -> Any:
    """``data`` (a ``to_dict()`` document) with ``<key>_str`` beside every version key: the same version as a string.

    An Iceberg snapshot id has 19 digits, more than a double holds: ``jq`` 1.6 and JavaScript read
    ``2556433978692939843`` as ``2556433978692940000``. The number stays (tools may rely on it; Delta versions are
    small), and ``<key>_str`` (``version_str``, ``until_version_str``, ``expired_versions_str``, ...) survives any
    reader. Every command and API that takes a version accepts the string.
    """
    if hasattr(data, "to_dict") and not isinstance(data, dict):
        data = data.to_dict()
    if isinstance(data, list):
        return [with_version_strings(v, _keys) for v in data]
    if not isinstance(data, dict):
        return data
    out: dict[Any, Any] = {}
    for k, v in data.items():
        inner = _ROW_VERSION_KEYS if k in _ROW_KEYS and isinstance(v, list) else _keys
        out[k] = with_version_strings(v, inner)
        if k in _keys and f"{k}_str" not in data and (v is None or _as_str(v) is not v):
            out[f"{k}_str"] = None if v is None else _as_str(v)
    return out


class Result:
    """Base of all results: ``to_dict()`` for JSON, ``_repr_html_`` for notebooks."""

    def to_dict(self) -> Any:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    def _repr_html_(self) -> str:
        """A list of records as rows and columns, a record as its fields (lists of records as tables of their own)."""
        return display.of(self.to_dict())


@dataclass
class TableInfo(Result):
    """One row of ``list``."""

    name: str
    format: str
    location: str
    #: Other formats the table is also readable as (``lakecat mirror``), under the same name.
    mirrors: list[str] = field(default_factory=list)


@dataclass
class ListResult(Result):
    tables: list[TableInfo]

    def to_dict(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [t.to_dict() for t in self.tables]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.tables)

    def _repr_html_(self) -> str:
        return display.table(["table", "format", "location", "mirrors"],
                             ([t.name, t.format, t.location, t.mirrors] for t in self.tables),
                             title=f"{len(self.tables):,} tables", empty="no tables")  # fmt: skip


@dataclass
class NamespaceInfo(Result):
    """One row of ``list_namespaces``: a namespace and how many tables of each format it holds."""

    name: str
    tables: int
    formats: dict[str, int] = field(default_factory=dict)


@dataclass
class NamespacesResult(Result):
    """What ``list_namespaces`` answers, sorted by name; its JSON is the list of namespaces."""

    namespaces: list[NamespaceInfo]

    def to_dict(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [n.to_dict() for n in self.namespaces]

    def __iter__(self) -> Iterator[NamespaceInfo]:
        return iter(self.namespaces)

    def __len__(self) -> int:
        return len(self.namespaces)

    def names(self) -> list[str]:
        return [n.name for n in self.namespaces]

    def _repr_html_(self) -> str:
        return display.table(["namespace", "tables", "formats"],
                             ([n.name, n.tables, n.formats] for n in self.namespaces),
                             title=f"{len(self.namespaces):,} namespaces", empty="no namespaces")  # fmt: skip


@dataclass
class RenameResult(Result):
    """What ``rename_table`` did: the catalog entry's new name (the files stay at ``location``)."""

    old_name: str
    name: str
    format: str
    location: str
    mirrors: list[str] = field(default_factory=list)


@dataclass
class ColumnInfo(Result):
    name: str
    type: str
    nullable: bool
    comment: str | None = None
    generated: str | None = None


@dataclass
class RefInfo(Result):
    """A named version: a tag (or an Iceberg branch) and the version it points at."""

    name: str
    kind: str  # tag | branch
    version: int
    retain: str | None = None
    expires: str | None = None
    created: str | None = None


@dataclass
class PartitionSpecInfo(Result):
    """One partition spec a table has had (Iceberg keeps them all; old files keep their spec)."""

    spec_id: int
    fields: list[str]
    current: bool


@dataclass
class DescribeResult(Result):
    """What ``describe`` answers."""

    name: str
    format: str
    location: str
    schema: list[ColumnInfo]
    partitioning: list[str]
    properties: dict[str, str]
    current_version: int | None
    files: int
    size_bytes: int
    records: int | None = None
    last_updated: str | None = None
    capabilities: dict[str, bool] = field(default_factory=dict)
    tags: list[RefInfo] = field(default_factory=list)
    branches: list[RefInfo] = field(default_factory=list)
    partition_specs: list[PartitionSpecInfo] = field(default_factory=list)
    column_mapping: str | None = None
    #: Other formats the table is also readable as (``lakecat mirror``), under the same name.
    mirrors: list[str] = field(default_factory=list)
    #: The clustering keys (Delta liquid clustering, an Iceberg sort order or z-order); [] when none.
    clustering: list[str] = field(default_factory=list)
    #: ``liquid``, ``sort`` or ``zorder`` (None: no keys); ``sort_order``: Iceberg's order in its own words.
    clustering_method: str | None = None
    sort_order: list[str] = field(default_factory=list)
    #: Iceberg's format version; Delta's minimum writer version.
    format_version: int | None = None
    #: Whether deletes, updates and merges mark rows (deletion vectors, position deletes) instead of rewriting files.
    deletion_vectors: bool = False
    delete_mode: str | None = None
    table_features: list[str] = field(default_factory=list)


@dataclass
class CreateResult(DescribeResult):
    """What ``create`` answers: the new table as ``describe`` shows it, and the engine that created it."""

    #: ``light`` (no JVM: pyiceberg / delta-rs) or ``spark``; ``engine_reason``: why Spark ran. None: the table existed.
    engine: str | None = None
    engine_reason: str | None = None

    @classmethod
    def of(cls, description: DescribeResult, engine: str | None, engine_reason: str | None) -> CreateResult:
        fields = {f.name: getattr(description, f.name) for f in dataclasses.fields(description)}
        return cls(**fields, engine=engine, engine_reason=engine_reason)


@dataclass
class DropResult(Result):
    name: str
    format: str
    location: str
    purged: bool
    #: ``light`` (no JVM) or ``spark``; ``engine_reason``: why Spark ran.
    engine: str = "light"
    engine_reason: str | None = None


@dataclass
class RegisterResult(Result):
    """What ``register`` recorded: an existing table, its files untouched."""

    name: str
    format: str
    location: str
    metadata_location: str | None
    notes: list[str]
    current_version: int | None
    files: int
    records: int | None


@dataclass
class ParquetFileInfo(Result):
    """One Parquet file ``convert`` found: its path under the directory, size, rows (footer) and partition values."""

    path: str
    size: int
    rows: int
    partition: dict[str, str | None]


@dataclass
class ConvertResult(Result):
    """What ``convert`` did (or, with ``dry_run``, would do): the files, partitions, rows and inferred schema."""

    name: str
    format: str
    location: str
    files: list[str]
    partitions: list[str]
    partition_columns: list[str]
    rows: int
    size_bytes: int
    schema: list[ColumnInfo]
    dry_run: bool


@dataclass
class CatalogInfo(Result):
    name: str
    source: str
    active: bool
    #: format -> where its tables live: ``metastore`` (lakecat's database), ``rest``, ``hive``, ``glue``
    kind: dict[str, str] = field(default_factory=dict)
    #: the metastore's database kind (``sqlite``, ``postgresql``)
    metastore: str | None = None
    #: why the config cannot be used as it stands (an unset variable, a bad section), else None
    problem: str | None = None
    #: one of the example configs shipped with lakecat (to copy and edit), not a catalog of the user's
    example: bool = False


@dataclass
class CatalogsResult(Result):
    """What ``list_catalogs`` answers: every catalog config lakecat finds; its JSON is the list of them."""

    catalogs: list[CatalogInfo]

    def to_dict(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [c.to_dict() for c in self.catalogs]

    def __iter__(self) -> Iterator[CatalogInfo]:
        return iter(self.catalogs)

    def __len__(self) -> int:
        return len(self.catalogs)

    def _repr_html_(self) -> str:
        return display.table(["", "name", "kind", "config", "problem"],
                             (["*" if c.active else "", c.name, c.kind, c.source, c.problem or ""]
                              for c in self.catalogs if c.active or not c.example),
                             title="catalogs (* active)")  # fmt: skip


@dataclass
class HistoryEntry(Result):
    """One commit: ``version`` is the Delta version or the Iceberg snapshot id."""

    version: int
    timestamp: str | None
    operation: str
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass
class HistoryResult(Result):
    """What ``history`` answers, newest first."""

    name: str
    format: str
    current_version: int | None
    entries: list[HistoryEntry]
    #: How many commits the table has in all (``entries`` holds the newest ``limit`` of them)
    total: int | None = None

    def to_dict(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [e.to_dict() for e in self.entries]

    def __iter__(self) -> Iterator[HistoryEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i: int) -> HistoryEntry:
        return self.entries[i]

    def _repr_html_(self) -> str:
        more = (
            f" (newest {len(self.entries):,} of {self.total:,})"
            if self.total and self.total > len(self.entries)
            else ""
        )
        return display.table(["version", "timestamp", "operation", "summary"],
                             ([str(e.version), e.timestamp, e.operation, e.summary] for e in self.entries),
                             title=f"{self.name} ({self.format}) history{more}", empty="no commits")  # fmt: skip


@dataclass
class ReadResult(Result):
    """Rows (or a count) read from a table as of a version, or from its changes.

    ``to_dict()`` has ``count`` with ``count=True`` and ``rows`` otherwise, plus which versions were read.
    """

    name: str
    format: str
    count: int | None = None
    rows: list[dict[str, Any]] | None = None
    columns: list[str] | None = None
    limit: int | None = None
    truncated: bool | None = None
    version: int | None = None
    version_timestamp: str | None = None
    as_of: str | None = None
    since_version: int | None = None
    until_version: int | None = None
    until_timestamp: str | None = None
    #: Which engine answered: "light" (no JVM: pyiceberg / delta-rs + DuckDB) or "spark"; and, for Spark, why.
    engine: str | None = None
    engine_reason: str | None = None
    #: A read at a version: the files its planning keeps (statistics rule the others out) and the version's files.
    files_scanned: int | None = None
    files_total: int | None = None

    def to_dict(self) -> dict[str, Any]:  # type: ignore[override]
        data: dict[str, Any] = {"name": self.name, "format": self.format, "engine": self.engine}
        if self.engine_reason:
            data["engine_reason"] = self.engine_reason
        if self.since_version is not None:
            data.update(since_version=self.since_version, until_version=self.until_version,
                        until_timestamp=self.until_timestamp)  # fmt: skip
        else:
            data.update(version=self.version, version_timestamp=self.version_timestamp, as_of=self.as_of,
                        files_scanned=self.files_scanned, files_total=self.files_total)  # fmt: skip
        if self.rows is None:
            data["count"] = self.count
        else:
            data.update(columns=self.columns, rows=self.rows, returned=len(self.rows), limit=self.limit,
                        truncated=self.truncated)  # fmt: skip
        return data

    def _repr_html_(self) -> str:
        if self.since_version is not None:
            title = f"{self.name}: changes after version {self.since_version} up to version {self.until_version}"
        elif self.version is None:
            title = f"{self.name} (nothing committed yet)"
        else:
            title = f"{self.name} at version {self.version}" + (f", as of {self.as_of}" if self.as_of else "")
        if self.rows is None:
            return display.table(["rows"], [[self.count]], title=title)
        more = f" (first {len(self.rows):,})" if self.truncated else ""
        return display.table(self.columns or [], ([row.get(c) for c in self.columns or []] for row in self.rows),
                             title=title + more, empty="no rows")  # fmt: skip


@dataclass
class RollbackResult(Result):
    """What ``rollback`` did: the table read ``from_version`` before and reads ``to_version``'s state now.

    ``current_version`` is the version the table is at afterwards: ``to_version`` on Iceberg (the snapshot
    pointer moved), a new RESTORE commit on Delta.
    """

    name: str
    format: str
    from_version: int | None
    to_version: int
    current_version: int | None
    to_timestamp: str | None
    changed: bool


@dataclass
class PartitionPlan(Result):
    """What compaction does (or would do) to one partition."""

    partition: str
    files: int
    bytes: int
    estimated_output_files: int
    due: bool = False  # it holds lakecat.compact.min-input-files small files (lakecat.smallfiles): maintain compacts it


@dataclass
class CompactResult(Result):
    """What ``compact`` did, or with ``dry_run`` would do."""

    table: str
    format: str
    strategy: str
    by: list[str]
    target_file_size: int
    where: str | None
    files_before: int
    files_after: int
    bytes_before: int
    bytes_after: int
    files_rewritten: int
    files_added: int
    partitions: list[PartitionPlan]
    dry_run: bool
    retries: int = 0
    duration_s: float = 0.0
    engine_s: float = 0.0  # of duration_s, the engine's own procedure (rewrite_data_files / OPTIMIZE)
    full: bool = False  # a clustered table reclustered whole (``--full``)
    since: str | None = None  # the minor tier: only the partitions written after this time
    engine: str = ""  # "light" (pyiceberg / delta-rs, no JVM) or "spark": the engine that did the work
    engine_reason: str = ""  # why that engine (lakecat.engine_choice)
    due_rule: str = ""  # when a partition is due for compaction (lakecat.smallfiles), as health and maintain say it


@dataclass
class ExpireResult(Result):
    """What ``expire`` did, or with ``dry_run`` would do. Versions are Delta versions / Iceberg snapshot ids."""

    table: str
    format: str
    expired_versions: list[int]
    retained_versions: list[int]
    deleted_files: int
    deleted_bytes: int
    older_than: str
    retain_last: int
    cutoff: str | None
    forced: bool
    dry_run: bool
    files: list[str] = field(default_factory=list)
    log_truncated_before: int | None = None
    retries: int = 0
    duration_s: float = 0.0
    engine: str = ""  # "light" (pyiceberg / delta-rs, no JVM) or "spark": the engine that did the work
    engine_reason: str = ""  # why that engine (lakecat.engine_choice)


@dataclass
class OrphanResult(Result):
    """What ``clean-orphans`` removed, or with ``dry_run`` would remove."""

    table: str
    format: str
    orphan_files: list[str]
    deleted_files: int
    deleted_bytes: int
    older_than: str
    cutoff: str | None
    forced: bool
    dry_run: bool
    retries: int = 0
    duration_s: float = 0.0
    engine: str = ""  # "light" (pyiceberg / delta-rs, no JVM) or "spark": the engine that did the work
    engine_reason: str = ""  # why that engine (lakecat.engine_choice)


@dataclass
class MetadataResult(Result):
    """Metadata upkeep: Iceberg ``rewrite_manifests``; Delta checkpoint + expired-log cleanup."""

    table: str
    format: str
    action: str
    needed: bool
    before: int
    after: int
    detail: str
    dry_run: bool
    retries: int = 0
    duration_s: float = 0.0
    engine: str = ""  # "light" (pyiceberg / delta-rs, no JVM) or "spark": the engine that did the work
    engine_reason: str = ""  # why that engine (lakecat.engine_choice)


@dataclass
class AlterResult(Result):
    """What ``alter`` changed: one commit per change (``upgrades``: what was enabled first, e.g. column mapping)."""

    table: str
    format: str
    changes: list[str]
    upgrades: list[str]
    schema: list[ColumnInfo]
    partitioning: list[str]
    properties: dict[str, str]
    column_mapping: str | None = None
    dry_run: bool = False
    rewrite_files: int = 0
    rewrite_bytes: int = 0
    version: int | None = None
    clustering: list[str] = field(default_factory=list)
    deletion_vectors: bool | None = None


@dataclass
class TagResult(Result):
    """What ``tag`` / ``untag`` / ``branch`` / ``publish`` did."""

    table: str
    format: str
    action: str  # tagged | untagged | branched | published
    name: str
    kind: str
    version: int | None
    retain: str | None = None
    current_version: int | None = None


@dataclass
class TagsResult(Result):
    """What ``tags`` answers: the table's tags and branches."""

    table: str
    format: str
    tags: list[RefInfo]
    branches: list[RefInfo]


@dataclass
class PropertiesResult(Result):
    table: str
    format: str
    properties: dict[str, str]
    #: ``light`` (no JVM: pyiceberg / delta-rs) or ``spark``; ``engine_reason``: why Spark ran. A dry run: None.
    engine: str | None = "light"
    engine_reason: str | None = None
    #: True: ``properties`` are what the table would have; nothing was committed.
    dry_run: bool = False


@dataclass
class MaintainAction(Result):
    action: str
    status: str  # done | skipped | would-run | failed
    reason: str = ""
    result: dict[str, Any] | None = None


@dataclass
class TableMaintenance(Result):
    name: str
    format: str
    status: str  # ok | skipped | planned | failed
    actions: list[MaintainAction] = field(default_factory=list)
    policy: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    error_type: str | None = None
    duration_s: float = 0.0
    health: dict[str, Any] | None = None  # maintain --auto: the verdict that chose the actions


@dataclass
class MaintainResult(Result):
    """The CI report of ``maintain``: every matching table, ``failed`` > 0 means exit code 1."""

    pattern: str | None
    plan: str | None
    dry_run: bool
    tables: list[TableMaintenance]
    failed: int
    succeeded: int
    skipped: int
    duration_s: float = 0.0
    auto: bool = False

    def _repr_html_(self) -> str:
        title = (f"maintenance of {self.pattern or 'every table'}{' (auto)' if self.auto else ''}"
                 f"{' (dry run)' if self.dry_run else ''}: {self.succeeded} maintained, {self.skipped} needed nothing, "
                 f"{self.failed} failed")  # fmt: skip
        return display.table(
            ["table", "format", "status", "actions", "seconds", "error"],
            ([t.name, t.format, t.status, [f"{a.action} {a.status}" for a in t.actions if a.status != "skipped"],
              round(t.duration_s, 1), t.error] for t in self.tables),
            title=title,
        )  # fmt: skip


@dataclass
class SizeBucket(Result):
    """Files whose size is at most ``le`` bytes and above the previous bucket's (``le`` None: the rest)."""

    le: int | None
    files: int


@dataclass
class VersionPoint(Result):
    """One retained version for the health timeline."""

    version: int
    timestamp: str
    operation: str


@dataclass
class TableHealth(Result):
    """One table's health: every figure from metadata, the verdict and its reason (``lakecat health``)."""

    name: str
    format: str
    verdict: str  # healthy | compact | purge | cluster | expire | clean | failed
    reason: str
    needs: list[str] = field(default_factory=list)  # every action called for, most urgent first
    data_files: int = 0
    data_bytes: int = 0
    rows: int | None = None
    target_file_size: int = 0
    small_file_bytes: int = 0  # a file below this is small (75% of the target: lakecat.smallfiles)
    small_files: int = 0
    compactable_small_files: int = 0  # small files sharing a partition with another small file
    max_partition_small_files: int = 0  # the most small files one partition holds (what a compaction's input can be)
    median_file_bytes: int = 0
    file_sizes: list[SizeBucket] = field(default_factory=list)
    delete_kind: str = ""
    delete_files: int = 0
    delete_bytes: int = 0
    deleted_rows: int = 0
    deleted_rows_ratio: float = 0.0
    current_version: int | None = None
    versions: int = 0
    oldest_version_at: str | None = None
    oldest_version_age_s: float | None = None
    expirable_versions: int = 0
    old_version_files: int = 0
    old_version_bytes: int = 0
    last_compaction: str | None = None
    last_expiry: str | None = None
    last_orphan_cleanup: str | None = None
    partitions: int = 0
    largest_partition_bytes: int = 0
    median_partition_bytes: int = 0
    partition_skew: float | None = None  # largest / median partition (bytes)
    clustering: list[str] = field(default_factory=list)  # the clustering keys ([]: the table is not clustered)
    overlapping_files: int | None = None  # files whose key ranges overlap another file's (None: not clustered)
    clustering_depth: float | None = None  # files a key value may be in, on average (1.0: perfectly clustered)
    stream_last_commit: str | None = None
    thresholds: dict[str, Any] = field(default_factory=dict)
    #: When time alone next changes what the table needs (a version passes the expiry window, the orphan window
    #: elapses since a rewrite); None: only a commit, a maintenance run or a policy change does.
    next_due: str | None = None
    timeline: list[VersionPoint] = field(default_factory=list)
    error: str | None = None
    error_type: str | None = None
    duration_s: float = 0.0


# purge and cluster rewrite files as compaction does: fail_on="compact" trips on them too
FAIL_ON = {"compact": {"compact", "purge", "cluster"}, "expire": {"expire"},
           "any": {"compact", "purge", "cluster", "expire", "clean", "failed"}}  # fmt: skip


@dataclass
class HealthResult(Result):
    """``lakecat health``: every matching table, with counts per verdict."""

    pattern: str | None
    tables: list[TableHealth]
    verdicts: dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0

    def failing(self, fail_on: str | None = None) -> list[TableHealth]:
        """The tables that fail a gate: those whose metadata could not be read, and those whose verdict (or any need)
        trips ``fail_on`` (``compact``, ``expire`` or ``any``; ``lakecat health --fail-on``)."""
        verdicts = FAIL_ON.get(fail_on or "", set()) | {"failed"}
        return [h for h in self.tables if h.verdict in verdicts or verdicts & set(h.needs)]

    def _repr_html_(self) -> str:
        return display.table(
            ["table", "format", "verdict", "files", "small files", "size", "versions", "old versions hold", "reason"],
            ([h.name, h.format, h.verdict, h.data_files, h.small_files, human_size(h.data_bytes), h.versions,
              human_size(h.old_version_bytes), h.error or h.reason] for h in self.tables),
            title=f"health of {self.pattern or 'every table'}: " + (display.text(self.verdicts) or "no tables"),
        )  # fmt: skip


@dataclass
class IngestResult(Result):
    """What an ingest did in this run (``lakecat ingest --json``)."""

    table: str
    format: str
    source: str
    rows_written: int = 0
    rows_dead_lettered: int = 0
    batches: int = 0
    batches_skipped: int = 0
    #: What each micro-batch could read: ``records`` (Kafka), ``files`` or ``bytes`` (landed files), and ``source``:
    #: ``option`` or ``default from driver memory`` (then ``driver_memory``, the heap it was sized from).
    batch_bound: dict[str, Any] = field(default_factory=dict)
    #: ``one job``: every batch's dead letters were collected by the job that wrote its good rows; ``two jobs``: some
    #: batch's were read by a second job; None when no batch wrote dead letters.
    dead_letter_path: str | None = None
    #: The highest resident memory of this process and its Spark driver JVM together while the ingest ran (sampled;
    #: None where the OS does not say). With a Spark Connect engine, this process's alone.
    peak_rss_bytes: int | None = None
    duration_s: float = 0.0
    unknown_fields: int = 0
    unknown_field_names: list[str] = field(default_factory=list)
    unknown_fields_checked: int = 0
    added_columns: list[str] = field(default_factory=list)
    dlq_table: str | None = None
    checkpoint: str = ""
    trigger: str = "available-now"
    stopped_by: str = "drained"
    started_at: str | None = None
    lag: int | None = None
    cdc: str | None = None
    key: list[str] | None = None
    branch: str | None = None


@dataclass
class UpsertResult(Result):
    """What ``lakecat upsert`` did."""

    table: str
    format: str
    source: str
    rows_in: int = 0
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    #: Matched rows whose values are already the source's: not rewritten.
    unchanged: int = 0
    #: Whether the upsert made a commit (False when it would change nothing).
    committed: bool = False
    version: int | None = None
    duration_s: float = 0.0


@dataclass
class WriteResult(Result):
    """What ``append`` / ``overwrite`` did (``lakecat append --json``)."""

    table: str
    format: str
    #: ``append``, or ``overwrite`` (every row, or with ``where`` the rows it selects)
    operation: str
    #: ``light`` (pyiceberg / delta-rs, no JVM) or ``spark``
    engine: str
    #: Why Spark wrote it (None on the light path)
    engine_reason: str | None = None
    #: Rows written (None: the engine did not say)
    rows: int | None = None
    where: str | None = None
    #: The version the write committed (None: nothing was committed)
    version: int | None = None
    committed: bool = False
    duration_s: float = 0.0


@dataclass
class DeleteResult(Result):
    """What ``delete`` did, or with ``dry_run`` would do (``lakecat delete --json``)."""

    table: str
    format: str
    where: str
    #: ``light`` (pyiceberg / delta-rs, DuckDB for a dry run's count; no JVM) or ``spark``
    engine: str
    engine_reason: str | None = None
    #: Rows deleted (with ``dry_run``: rows the predicate selects now); None: the engine did not say
    rows: int | None = None
    dry_run: bool = False
    #: The version the delete committed (None: nothing was committed)
    version: int | None = None
    committed: bool = False
    duration_s: float = 0.0


@dataclass
class QuickstartResult(Result):
    """What the quickstart did."""

    run: int
    bootstrap: str
    topic: str
    events_produced: int
    malformed_produced: int
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    next_commands: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    def figures(self) -> dict[str, dict[str, str]]:
        """Each table's figures as text, by label (the same labels for every table, in order): what the terminal's
        summary and the notebook's table show."""
        return {name: {
            "format": s["format"],
            "ingested": f"{s['rows_written']:,}",
            "dead-lettered": f"{s['rows_dead_lettered']:,}",
            "versions": f"{s['versions']:,}",
            "rows @ first batch": f"{s['rows_at_first_version']:,}",
            "changes since": f"{s['changes_since_first_version']:,}",
            "files before→after": f"{s['compaction']['files_before']:,}→{s['compaction']['files_after']:,}",
            "rows now": f"{s['rows_now']:,}",
        } for name, s in self.tables.items()}  # fmt: skip

    def _repr_html_(self) -> str:
        figures = self.figures()
        labels = list(next(iter(figures.values()), {}))
        head = "".join(f"<th>{html.escape(name)}</th>" for name in figures)
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(label)}</th>"
            + "".join(f"<td style='text-align:right'>{html.escape(f[label])}</td>" for f in figures.values())
            + "</tr>"
            for label in labels
        )
        steps = "".join(f"<li><code>{html.escape(c)}</code></li>" for c in self.next_commands)
        return (
            f"<p><b>lakecat quickstart</b>: run {self.run}, {self.duration_s:.1f}s; {self.events_produced:,} events "
            f"(+{self.malformed_produced:,} malformed) to {html.escape(self.topic)} on {html.escape(self.bootstrap)}</p>"
            f"<table><tr><th></th>{head}</tr>{rows}</table>" + (f"<p>next, try:</p><ul>{steps}</ul>" if steps else "")
        )


@dataclass
class MirrorResult(Result):
    """What ``mirror`` (and ``mirror --sync``) did: the table read as another format, how far it is mirrored."""

    name: str
    mirror_format: str
    #: The table's version the mirror reads as now (Delta version), and the mirror's own version there (snapshot id).
    source_version: int | None
    mirror_version: int | None
    #: Commits the mirror made in this call (one per source version), and whether it was built from the current state.
    commits: int = 0
    rebuilt: bool = False
    files: int = 0
    behind: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class MirrorCheck(Result):
    """One column (or the row count) compared on both sides of a mirror."""

    column: str
    source: str
    mirror: str
    equal: bool


@dataclass
class MirrorVerifyResult(Result):
    """``mirror --verify``: the table and its mirror read by each format's own library at the mirrored version."""

    name: str
    mirror_format: str
    source_version: int | None
    mirror_version: int | None
    rows: int
    checks: list[MirrorCheck]
    equal: bool
