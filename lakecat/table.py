"""A table of either format, and everything lakecat does with it."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from . import cdc, display, evolution, health, layouts, maintenance, mirror, versions, writes
from .engine import spark_errors
from .errors import InvalidArgumentError, LakecatError, invalid
from .formats import get_format
from .records import input_fields
from .units import human_size

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField, StructType

    from .formats.base import TableFormat
    from .metastore import TableEntry
    from .protocols import CatalogLike
    from .results import (
        AlterResult,
        CompactResult,
        DeleteResult,
        DescribeResult,
        ExpireResult,
        HistoryResult,
        MetadataResult,
        MirrorResult,
        MirrorVerifyResult,
        OrphanResult,
        PropertiesResult,
        RollbackResult,
        TableHealth,
        TagResult,
        TagsResult,
        UpsertResult,
        WriteResult,
    )
    from .versions import ResolvedVersion, TableAsOf, TableChanges

R = TypeVar("R")


def _commits(method: Callable[..., R]) -> Callable[..., R]:
    """Mark a method that commits to the table: after it, the format's one post-commit step runs
    (``TableFormat.after_commit``: the mirrors follow), unless the result says nothing was committed (a dry run)."""

    @functools.wraps(method)
    def run(self: Table, *args: Any, **kwargs: Any) -> R:
        result = method(self, *args, **kwargs)
        if not getattr(result, "dry_run", False) and getattr(result, "committed", True) is not False:
            self.committed()
        return result

    return run


class Table:
    """A handle on one table; cheap to create, reads metadata only when asked."""

    def __init__(self, catalog: CatalogLike, entry: TableEntry, *, branch: str | None = None) -> None:
        self.catalog = catalog
        self.entry = entry
        self.branch_name = branch
        #: On the table ``create_table`` returns: the engine that created it (``light``: no JVM, or ``spark``) and
        #: why Spark did; None otherwise (and when ``if_not_exists`` found the table).
        self.engine: str | None = None
        self.engine_reason: str | None = None

    def __repr__(self) -> str:
        return f"Table({self.name!r}, format={self.format!r})"

    def _repr_html_(self) -> str:
        """Name, format, version, files and size, then the columns (metadata only, no JVM)."""
        try:
            d = self.describe()
        except LakecatError as e:  # a table whose metadata cannot be read is still shown, with why
            return display.table(["table", "format", "location", "error"], [[self.name, self.format, self.location,
                                                                             str(e)]])  # fmt: skip
        head = display.table(
            ["table", "format", "version", "files", "size", "partitioning", "location"],
            [[d.name, d.format, "" if d.current_version is None else str(d.current_version), d.files,
              human_size(d.size_bytes), d.partitioning, d.location]],
        )  # fmt: skip
        return head + display.table(["column", "type", "nullable", "comment"],
                                    ([c.name, c.type, c.nullable, c.comment] for c in d.schema), title="schema")  # fmt: skip

    @property
    def name(self) -> str:
        return str(self.entry.ident)

    @property
    def format(self) -> str:
        return self.entry.format

    @property
    def location(self) -> str:
        return self.entry.location

    @property
    def adapter(self) -> TableFormat:
        return get_format(self.entry.format)

    @property
    def spark_name(self) -> str:
        """The quoted name Spark SQL knows this table by (a branch of it, for a table ``on_branch``)."""
        name = self.adapter.spark_name(self.catalog, self.entry)
        return self.adapter.branch_spark_name(name, self.branch_name) if self.branch_name else name

    def on_branch(self, branch: str) -> Table:
        """This table as its branch ``branch`` sees it: reads and writes (``upsert``) go to the branch.

        Example:
            >>> t.branch("audit"); t.on_branch("audit").upsert("/landing/fixes/", key="id"); t.publish("audit")
        """
        self.adapter.require("branches", "branches")
        versions.find_ref(self, branch, "branch")
        return Table(self.catalog, self.entry, branch=branch)

    def refresh(self) -> TableEntry:
        """Re-read the catalog entry (an Iceberg table's metadata pointer moves with every commit)."""
        self.entry = self.catalog.entry(self.entry.ident)
        return self.entry

    @property
    def capabilities(self) -> dict[str, bool]:
        """What lakecat can do with this table's format (derived from its adapter)."""
        return self.adapter.capabilities

    def describe(self) -> DescribeResult:
        """Schema, partitioning, properties, version, files and size — from metadata, no JVM."""
        self.refresh()
        result = self.adapter.describe(self)
        result.mirrors = mirror.mirrors(self.entry)
        return result

    def to_spark(self) -> DataFrame:
        """The table's current contents as a Spark DataFrame."""
        with spark_errors("read", self.entry.ident):
            return self.adapter.read_current(self)

    def current(self, *, engine: str | None = None) -> TableAsOf:
        """A read-only view pinned to the version the table reads now (what ``read`` reads); ``engine`` as for
        ``as_of``. Its ``read()`` gives rows or a count with the version and the engine that answered.

        Example:
            >>> t.current().read(where="region = 'eu'", count=True).count
        """
        return versions.current(self, engine=engine)

    def read(self, *, where: str | None = None, columns: list[str] | None = None, limit: int | None = None,
             engine: str | None = None) -> pa.Table:  # fmt: skip
        """The table's current rows as a ``pyarrow.Table``: those matching the Spark SQL predicate ``where``, of
        ``columns`` only (in that order), at most ``limit`` (None or 0: all).

        ``engine``: ``"light"`` (no JVM: pyiceberg / delta-rs + DuckDB; ``NotExactError`` where it cannot give
        Spark's exact answer), ``"spark"``, or None: the light path where it answers exactly, else Spark. A table
        nothing has been committed to reads as no rows with the table's columns.

        Example:
            >>> t.read(where="region = 'eu'", columns=["id", "amount"], limit=10)
        """
        return self.current(engine=engine).to_arrow(where=where, columns=columns, limit=limit)

    def to_pandas(self, *, where: str | None = None, columns: list[str] | None = None, limit: int | None = None,
                  engine: str | None = None) -> pd.DataFrame:  # fmt: skip
        """``read`` as a pandas DataFrame."""
        return self.read(where=where, columns=columns, limit=limit, engine=engine).to_pandas()

    def spark_schema(self) -> StructType:
        """The table's current Spark schema (fresh metadata)."""
        return self.to_spark().schema

    def writable_fields(self) -> list[StructField]:
        """The columns a writer fills: all but the ones the format generates itself."""
        return input_fields(self.spark_schema(), self.adapter.generated_columns(self))

    # --- versions (lakecat/versions.py) ---------------------------------------------------------
    def history(self, *, limit: int | None = None) -> HistoryResult:
        """The table's commits, newest first (``version`` = Delta version / Iceberg snapshot id); no JVM."""
        return versions.history(self, limit=limit)

    def resolve_version(self, *, version: int | None = None, timestamp: str | datetime | None = None,
                        tag: str | None = None) -> ResolvedVersion:  # fmt: skip
        """Which commit ``version``, ``timestamp`` (the newest at or before it) or ``tag`` names (exactly one of
        them), from metadata; no JVM. The answer has ``version`` and ``timestamp``.

        Example:
            >>> t.resolve_version(timestamp="2026-01-31T12:00:00").version
        """
        if tag is not None:
            if version is not None or timestamp is not None:
                raise invalid("give one of version, timestamp or tag", "give one of --version, --as-of or --tag")
            self.adapter.require("tags", "tags")
            version = versions.find_ref(self, tag).version
        return versions.resolve_version(self, version=version, timestamp=timestamp)

    def as_of(self, *, version: int | None = None, timestamp: str | None = None, tag: str | None = None,
              engine: str | None = None) -> TableAsOf:  # fmt: skip
        """A read-only view pinned to ``version`` (or the version tagged ``tag``), or to the newest version at or
        before ``timestamp``. ``engine``: "light" (no JVM), "spark", or None (light where it answers exactly).

        Example:
            >>> t.as_of(version=3).to_pandas()
            >>> t.as_of(tag="eom-2026-01").count()
        """
        return versions.as_of(self, version=version, timestamp=timestamp, tag=tag, engine=engine)

    def changes(self, *, since: int | None = None, until: int | None = None, since_tag: str | None = None,
                until_tag: str | None = None, engine: str | None = None) -> TableChanges:  # fmt: skip
        """Rows changed after ``since`` (or the version tagged ``since_tag``; exclusive) up to ``until``
        (or ``until_tag``; inclusive, default current); ``engine`` as for ``as_of``."""
        return versions.changes(self, since=since, until=until, since_tag=since_tag, until_tag=until_tag, engine=engine)

    @_commits
    def rollback(self, *, version: int | None = None, timestamp: str | None = None, tag: str | None = None,
                 force: bool = False) -> RollbackResult:  # fmt: skip
        """Make the table read as it did at ``version`` (or the version tagged ``tag``, or as of ``timestamp``);
        ``force`` also undoes batches an ingest stream committed (refused otherwise: it would not write them again)."""
        return versions.rollback(self, version=version, timestamp=timestamp, tag=tag, force=force)

    # --- evolution and named versions (lakecat/evolution.py) ---------------------------------------
    @_commits
    def alter(self, *, add_columns: list[str] | tuple[str, ...] = (),
              rename_columns: Mapping[str, str] | list[str] | tuple[str, ...] = (),
              drop_columns: list[str] | tuple[str, ...] = (), widen: Mapping[str, str] | list[str] | tuple[str, ...] = (),
              comments: Mapping[str, str] | list[str] | tuple[str, ...] = (), partition_by: str | None = None,
              rewrite: bool = False, cluster_by: str | None = None, deletion_vectors: bool | None = None,
              dry_run: bool = False, confirm: bool = False, yes: bool | None = None) -> AlterResult:  # fmt: skip
        """Evolve the schema (one commit per change) and/or the partitioning.

        ``add_columns``: ``["c TYPE [NOT NULL] [COMMENT '...'] [AFTER x | FIRST]"]``; ``rename_columns``:
        ``{"old": "new"}``; ``drop_columns``: ``["c"]``; ``widen``: ``{"c": "BIGINT"}``; ``comments``:
        ``{"c": "text"}``. ``confirm`` allows what the format must enable first (Delta's column mapping for rename and
        drop, type widening for an in-place widen); ``rewrite`` makes Delta rewrite the data for ``partition_by`` or
        ``widen`` instead. ``cluster_by`` (``"a, b"``, ``"zorder(a, b)"``, ``"none"``) changes the clustering keys and
        ``deletion_vectors`` whether deletes mark rows, each in an alter of its own. Returns an ``AlterResult``.

        Deprecated, read for one more release with a ``DeprecationWarning``: lists of ``"old=new"`` / ``"c=BIGINT"``
        / ``"c=text"`` strings, and ``yes=`` for ``confirm=``.

        Example:
            >>> t.alter(add_columns=["discount DECIMAL(5,2) AFTER amount"], rename_columns={"cust": "customer_id"},
            ...         confirm=True)
        """
        for param, value in (("rename_columns", rename_columns), ("widen", widen), ("comments", comments)):
            if value and not isinstance(value, Mapping):
                warnings.warn(f"Table.alter({param}=[...'k=v' strings]) is deprecated: pass a dict, "
                              f"{param}={{'k': 'v'}}", DeprecationWarning, stacklevel=2)  # fmt: skip
        if yes is not None:
            warnings.warn("Table.alter(yes=...) is deprecated: pass confirm=...", DeprecationWarning, stacklevel=2)
            confirm = confirm or yes
        if isinstance(deletion_vectors, str):
            raise invalid(f"invalid deletion_vectors {deletion_vectors!r}: use True or False",
                          f"invalid --deletion-vectors {deletion_vectors!r}: use on or off")  # fmt: skip
        changes = evolution.schema_changes(add_columns=add_columns, rename_columns=rename_columns, drop_columns=drop_columns,
                                 widen=widen, comments=comments)  # fmt: skip
        if cluster_by is not None or deletion_vectors is not None:
            if changes or partition_by is not None or rewrite:
                raise InvalidArgumentError("give cluster_by / deletion_vectors in an alter of their own, not with "
                                           "schema or partition changes").with_cli_terms(
                    {"cluster_by / deletion_vectors": "--cluster-by / --deletion-vectors"})  # fmt: skip
            result: AlterResult = layouts.alter_layout(self, cluster_by=cluster_by, deletion_vectors=deletion_vectors,
                                                       dry_run=dry_run)  # fmt: skip
        else:
            result = evolution.alter(
                self, changes=changes, partition_by=partition_by, rewrite=rewrite, dry_run=dry_run, confirm=confirm
            )
        return result

    def tag(
        self, name: str, *, version: int | None = None, timestamp: str | None = None, retain: str | None = None
    ) -> TagResult:
        """Name a version (default: the current one); ``retain`` (e.g. ``"30d"``) limits how long the tag lives.

        Example:
            >>> t.tag("eom-2026-01", retain="365d")
        """
        return evolution.tag(self, name, version=version, timestamp=timestamp, retain=retain)

    def untag(self, name: str) -> TagResult:
        """Remove a tag."""
        return evolution.untag(self, name)

    def tags(self) -> TagsResult:
        """The table's tags and branches."""
        return evolution.refs(self)

    def branch(self, name: str, *, version: int | None = None) -> TagResult:
        """Create a branch (write-audit-publish) at ``version`` (default: the current one)."""
        return evolution.branch(self, name, version=version)

    def publish(self, branch: str) -> TagResult:
        """Fast-forward the main line to ``branch``."""
        return evolution.publish(self, branch)

    @_commits
    def upsert(self, data: DataFrame | str | Path, *, key: str | list[str] | tuple[str, ...], file_format: str | None = None,
               delete_when: str | None = None, branch: str | None = None) -> UpsertResult:  # fmt: skip
        """MERGE a Spark DataFrame or a path of json/csv/parquet files into this table by ``key``.

        Matched rows whose values differ are updated (the others count as ``unchanged``), new keys inserted; rows for
        which ``delete_when`` (a SQL predicate over the source's columns) holds delete their match instead. One commit
        (on ``branch``, when given: an Iceberg branch made with ``Table.branch``, published with ``Table.publish``),
        none when nothing would change (``committed`` is False); returns an ``UpsertResult``.

        Example:
            >>> t.upsert("/landing/fixes/", key=["id"], delete_when="op = 'D'").updated
        """
        target = self.on_branch(branch) if branch is not None else self
        return cdc.upsert(target, data, key=key, file_format=file_format, delete_when=delete_when)

    # --- plain writes and deletes (lakecat/writes.py) ------------------------------------------------
    @_commits
    def append(self, data: pa.Table | pd.DataFrame | DataFrame | str | Path, *, engine: str | None = None,
               file_format: str | None = None) -> WriteResult:  # fmt: skip
        """Append rows in one commit: a ``pyarrow.Table``, a pandas or Spark DataFrame, or a path of parquet / csv /
        json lines files (``file_format`` when the names do not say).

        Columns match the table's by name; a type is cast only where no value changes (``int`` to ``bigint``); a
        column the data lacks is null, and refused where the table says NOT NULL. A mismatch is an
        ``InvalidArgumentError`` and nothing is written.

        ``engine``: ``"light"`` (pyiceberg / delta-rs, no JVM; ``NotExactError`` where the table has what they do not
        write: deletion vectors, clustering, generated columns, merge-on-read deletes, Iceberg format version 3),
        ``"spark"``, or None: the light path where it writes the table as Spark would, else Spark. The result names
        the engine and, for Spark, why.

        Example:
            >>> t.append(pa.table({"id": [1, 2], "region": ["eu", "us"]})).version
        """
        return writes.write(self, data, mode="append", engine=engine, file_format=file_format)

    @_commits
    def overwrite(self, data: pa.Table | pd.DataFrame | DataFrame | str | Path, *, where: str | None = None,
                  engine: str | None = None, file_format: str | None = None) -> WriteResult:  # fmt: skip
        """Replace every row (or, with ``where``, the rows that Spark SQL predicate selects) with ``data``, in one commit.

        With ``where`` every row of ``data`` must match it (Delta's replaceWhere rule; refused otherwise, nothing
        written). Data and ``engine`` as for ``append``; a predicate the light path cannot apply exactly as Spark
        does is applied by Spark.

        Example:
            >>> t.overwrite(fixes, where="day = DATE '2026-01-31'")
        """
        return writes.write(self, data, mode="overwrite", where=where, engine=engine, file_format=file_format)

    @_commits
    def delete(self, *, where: str, dry_run: bool = False, engine: str | None = None) -> DeleteResult:
        """Delete the rows the Spark SQL predicate ``where`` holds TRUE for, in one commit (none when no row matches);
        ``dry_run`` counts them instead. Where the table marks deleted rows (Delta's deletion vectors, Iceberg's
        merge-on-read), Spark deletes, and marks them; elsewhere pyiceberg / delta-rs rewrite the files without a JVM
        when the predicate is one they apply exactly as Spark does (``engine`` as for ``append``).

        Example:
            >>> t.delete(where="customer_id = 42", dry_run=True).rows
        """
        return writes.delete(self, where=where, dry_run=dry_run, engine=engine)

    def committed(self) -> None:
        """The one step after each commit lakecat makes to the table (``TableFormat.after_commit``): its mirrors make
        their matching commits. lakecat runs it itself; call it after committing to the table through Spark yourself."""
        self.adapter.after_commit(self)

    # --- maintenance (lakecat/maintenance.py) ---------------------------------------------------
    @_commits
    def compact(self, *, strategy: str = "binpack", by: list[str] | tuple[str, ...] | str = (),
                target_file_size: int | str | None = None, where: str | None = None, dry_run: bool = False,
                full: bool = False, since: datetime | None = None, engine: str | None = None) -> CompactResult:  # fmt: skip
        """Rewrite small files into fewer, larger ones; ``dry_run`` only reports what would be rewritten. A clustered
        table is clustered by its own keys (``strategy="binpack"``, the default): the files that need it, or with
        ``full`` every file. With ``since`` only the small files of the partitions written after that time (the
        minor tier a maintenance service runs often; one commit). ``engine`` forces the engine that rewrites:
        ``"light"`` (pyiceberg / delta-rs, no JVM; refused with exit code 3 where it cannot do the work exactly) or
        ``"spark"``; by default a bin-pack of a small table runs light (``result.engine`` and ``engine_reason`` say).

        Example:
            >>> t.compact(strategy="zorder", by=["user_id"], target_file_size="128MB").files_after
        """
        return maintenance.compact(self, strategy=strategy, by=by, target_file_size=target_file_size, where=where,
                                   dry_run=dry_run, full=full, since=since, engine=engine)  # fmt: skip

    @_commits
    def expire(self, *, older_than: str | None = None, retain_last: int | None = None, dry_run: bool = False,
               force: bool = False, engine: str | None = None) -> ExpireResult:  # fmt: skip
        """Expire versions older than ``older_than`` (keeping the newest ``retain_last``) and their files.

        ``engine``: "light" (pyiceberg / delta-rs, no JVM), "spark", or None to let lakecat choose; the result's
        ``engine`` and ``engine_reason`` say which ran and why."""
        return maintenance.expire(self, older_than=older_than, retain_last=retain_last, dry_run=dry_run, force=force,
                                  engine=engine)  # fmt: skip

    def clean_orphans(
        self, *, older_than: str | None = None, dry_run: bool = False, force: bool = False, engine: str | None = None
    ) -> OrphanResult:
        """Delete files no version references that are older than ``older_than`` (``engine`` as for ``expire``)."""
        return maintenance.clean_orphans(self, older_than=older_than, dry_run=dry_run, force=force, engine=engine)

    def rewrite_metadata(self, *, dry_run: bool = False, engine: str | None = None) -> MetadataResult:
        """Iceberg: merge manifests; Delta: write a checkpoint and clean up expired log files (``engine`` as for
        ``expire``)."""
        return maintenance.rewrite_metadata(self, dry_run=dry_run, engine=engine)

    def health(self) -> TableHealth:
        """Files, deletes, versions and a verdict (healthy / compact / expire / clean), from metadata; no JVM."""
        return health.table_health(self)

    @_commits
    def set_properties(
        self,
        properties: dict[str, str] | None = None,
        *,
        unset: list[str] | tuple[str, ...] = (),
        engine: str | None = None,
        dry_run: bool = False,
    ) -> PropertiesResult:
        """Set or unset table properties (maintenance policies ``lakecat.*`` are validated) in one commit;
        ``dry_run`` checks the change and returns the properties the table would have, committing nothing.

        ``engine``: ``"light"`` (no JVM: pyiceberg / delta-rs; exit 3 where it cannot make the change exactly as Spark
        does), ``"spark"``, or None: light where it is exact, else Spark. The result's ``engine`` says which ran.
        """
        return maintenance.set_properties(self, properties, unset=unset, engine=engine, dry_run=dry_run)

    # --- mirrors (lakecat/mirror.py) --------------------------------------------------------------
    def mirror(self, *, as_format: str, purge_deletes: bool = False) -> MirrorResult:
        """Make the table readable as ``as_format`` too, under its own name (metadata only: no data is copied), and keep
        it in step with every commit lakecat makes; ``purge_deletes`` first rewrites away Delta's deletion vectors.

        Example:
            >>> t.mirror(as_format="iceberg").source_version
        """
        return mirror.mirror(self, as_format=as_format, purge_deletes=purge_deletes)

    def sync_mirrors(self, *, as_format: str | None = None, purge_deletes: bool = False) -> list[MirrorResult]:
        """Bring the table's mirrors (or its mirror as ``as_format``) up to its current version (commits other writers
        made); ``purge_deletes`` first rewrites away Delta's deletion vectors, which a mirror skips the versions of up
        to a version without them."""
        return mirror.sync(self, as_format=self._mirrored(as_format), purge_deletes=purge_deletes)

    def verify_mirrors(self, *, as_format: str | None = None) -> list[MirrorVerifyResult]:
        """Compare the table with each mirror (or its mirror as ``as_format``) at the mirrored version: row count and a
        checksum of every column."""
        return mirror.verify(self, as_format=self._mirrored(as_format))

    def drop_mirrors(self, *, as_format: str | None = None) -> list[str]:
        """Remove the table's mirrors (or its mirror as ``as_format``) from the catalog (the data files stay: they
        are the table's)."""
        return mirror.drop(self.catalog, self.entry, as_format=self._mirrored(as_format))

    def _mirrored(self, as_format: str | None) -> str | None:
        """``as_format`` as the name of one of the table's mirrors (None: all of them)."""
        if as_format is None:
            return None
        name = get_format(as_format).name
        if name not in mirror.mirrors(self.refresh()):
            raise InvalidArgumentError(f"{self.name} has no {name} mirror; mirror(as_format={name!r}) makes one"
                                       ).with_cli_terms({f"mirror(as_format={name!r})":
                                                         f"`lakecat mirror {self.name} --as {name}`"})  # fmt: skip
        return name
