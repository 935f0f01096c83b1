"""Versions of a table: history, time travel, change reads and rollback — one interface over every format.

A *version* is what the format calls one (the Delta version, the Iceberg snapshot id). ``history``
answers from metadata alone (pyiceberg / delta-rs, no JVM); time travel, change reads and rollback
run on Spark. The per-format half lives in each adapter (``lakecat.formats.<format>.versions``);
this module only speaks the contract (``TableFormat.versions`` / ``read_version`` / ``read_changes``).

Timestamps are resolved here, in Python, from the same history that ``history`` shows: ``as_of=T``
reads the newest version committed at or before ``T`` (between two commits: the earlier one), on every
format alike, and every result says which version it read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from . import display
from .engine import first_line, spark_errors
from .errors import InvalidArgumentError, LakecatError, NotExactError, VersionNotFoundError, invalid
from .extras import require
from .identifiers import quote
from .predicate import SPARK_WORDS, _kind_of, _tokens, quote_ident, to_duckdb
from .records import spark_lookup
from .results import HistoryEntry, HistoryResult, ReadResult, RefInfo, Result, RollbackResult
from .units import from_millis, iso, parse_timestamp

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from .formats.base import Commit
    from .protocols import TableLike

CHANGE_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
DEFAULT_ROW_LIMIT = 100
ENGINES = ("light", "spark")


@contextlib.contextmanager
def _engine_errors(what: str, table: TableLike, version: int | None = None) -> Iterator[None]:
    """Spark errors -> lakecat errors; a read of files that are gone -> VersionNotFoundError."""
    with spark_errors(what, table.entry.ident):
        try:
            yield
        except LakecatError:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, typed, by spark_errors when not ours
            failure = table.adapter.classify_read_error(e)
            if failure == "files_gone":
                which = f"version {version}" if version is not None else "a version in the range"
                raise VersionNotFoundError(
                    f"{what} {table.name}: {which} can no longer be read — its files were removed "
                    f"(snapshot expiry / vacuum): {first_line(str(e))}"
                ) from e
            if failure == "no_change_data":
                setting = table.adapter.change_data_property
                raise LakecatError(
                    f"{what} {table.name}: the change data feed was not on for part of the range"
                    + (f" ({setting})" if setting else "")
                    + f": {first_line(str(e))}"
                ) from e
            raise


def _check_int(value: Any, what: str) -> int:
    """``value`` as an int: an int, or its decimal string (``"2556433978692939843"``, as ``version_str`` gives it)."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) <= 2**53:
            return int(value)
        raise InvalidArgumentError(
            f"invalid {what}={value!r}: a number read as floating point has lost digits; pass the version as a "
            "string (the `..._str` keys of lakecat's JSON)"
        )
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return int(str(value).strip())
        except ValueError:
            raise InvalidArgumentError(f"invalid {what}={value!r}: expected an integer version") from None
    return value


def _check_limit(limit: int | None) -> int | None:
    if limit is None:
        return None
    limit = _check_int(limit, "limit")
    if limit < 0:
        raise InvalidArgumentError(f"invalid limit {limit}: must be 0 (no limit) or more")
    return limit or None


# --- history (light path) ----------------------------------------------------------------------
def history(table: TableLike, *, limit: int | None = None) -> HistoryResult:
    """The table's commits, newest first, from metadata alone (no JVM)."""
    limit = _check_limit(limit)
    v = table.adapter.versions(table)
    commits = sorted(v.commits() + v.pointer_moves(), key=lambda c: c.timestamp_ms)  # stable: commits stay in order
    entries = [
        HistoryEntry(c.version, iso(from_millis(c.timestamp_ms)), c.operation, c.summary) for c in reversed(commits)
    ]
    return HistoryResult(table.name, table.format, v.current_version(), entries[:limit] if limit else entries,
                         total=len(entries))  # fmt: skip


def find_ref(table: TableLike, name: str, kind: str | None = None) -> RefInfo:
    """The tag (or branch) ``name`` of the table; VersionNotFoundError when there is none (light path)."""
    table.adapter.require("tags", "tags")
    table.refresh()
    for r in table.adapter.refs(table):
        if r.name == name and (kind is None or r.kind == kind):
            return r
    raise VersionNotFoundError(f"{table.name} has no {kind or 'tag'} {name!r}; `lakecat tags {table.name}` lists them")


def _tagged(table: TableLike, version: int | None, tag: str | None, what: str = "version") -> int | None:
    if tag is None:
        return version
    if version is not None:
        raise InvalidArgumentError(f"give either {what}= or a tag, not both").with_cli_terms({f"{what}=": f"--{what}"})
    return find_ref(table, tag).version


@dataclass
class ResolvedVersion(Result):
    """The commit a version, a timestamp or a tag names: its ``version``, when it was committed, and the ``as_of``
    time asked for (None when a version or tag was)."""

    version: int
    timestamp_ms: int | None
    as_of: str | None

    @property
    def timestamp(self) -> str | None:
        return iso(from_millis(self.timestamp_ms)) if self.timestamp_ms is not None else None

    def to_dict(self) -> dict[str, Any]:  # type: ignore[override]
        return {"version": self.version, "timestamp": self.timestamp, "as_of": self.as_of}


_Resolved = ResolvedVersion


def resolve_version(
    table: TableLike, *, version: int | None = None, timestamp: str | datetime | None = None
) -> _Resolved:
    """Which version ``version=`` or ``timestamp=`` means (exactly one of them); light path, no JVM.

    A timestamp between two commits resolves to the earlier one; before the first commit is an error.
    """
    if (version is None) == (timestamp is None):
        raise invalid("give exactly one of version or timestamp", "give exactly one of --version or --as-of")
    v = table.adapter.versions(table)
    commits = {c.version: c for c in v.commits()}
    if version is not None:
        version = _check_int(version, "version")
        if not v.exists(version):
            raise v.missing(version)
        v.check_readable(version)
        return _Resolved(version, commits[version].timestamp_ms, None)
    when = parse_timestamp(timestamp)  # type: ignore[arg-type]
    when_ms = int(when.timestamp() * 1000)
    candidates = [(ts, ver) for ts, ver in v.timeline() if ts <= when_ms]
    if not candidates:
        first = v.timeline()
        hint = f"its first commit is at {iso(from_millis(first[0][0]))}" if first else "it has no commits yet"
        raise VersionNotFoundError(f"{table.name} has no version as of {iso(when)}: {hint}")
    found = max(candidates)[1]
    if found not in commits:
        raise VersionNotFoundError(f"{table.name} as of {iso(when)} was version {found}, which has been expired")
    v.check_readable(found)
    return _Resolved(found, commits[found].timestamp_ms, iso(when))


# --- the light path: the format's light library streams Arrow, DuckDB filters/counts/limits it -------------------
def _check_engine(engine: str | None) -> str | None:
    if engine is None:
        return None
    engine = str(engine).strip().lower()
    if engine not in ENGINES:
        raise InvalidArgumentError(f"invalid engine {engine!r}: choose light (no JVM) or spark")
    return engine


check_engine = _check_engine


def count_matching(source: Any, where: str) -> int:
    """Rows of an Arrow source (a table, a dataset, a reader) the predicate ``where`` holds TRUE for, counted by DuckDB.

    Raises:
        NotExactError: a predicate the light path does not read exactly as Spark does.
        InvalidArgumentError: it names a column the source lacks.
    """
    return int(_light_select(source, where=where, limit=None, count=True))


class _Answer:
    """Which engine answered a read, and why the light path did not when it did not."""

    def __init__(self, engine: str | None) -> None:
        self.wanted = _check_engine(engine)
        self.engine: str | None = None
        self.reason: str | None = None

    def light(self, table: TableLike, what: str, fn: Any) -> Any:
        """``fn()`` on the light path; None when the read must go to Spark (not asked for light, or it cannot be exact)."""
        if self.wanted == "spark":
            self.reason = "asked for Spark (engine='spark')"
            return None
        try:
            out = fn()
        except NotExactError as e:
            if self.wanted == "light":
                raise NotExactError(f"{what} {table.name} without a JVM: {e}; use engine='spark'") from None
            self.reason = str(e)
            return None
        except LakecatError:
            raise
        except Exception as e:  # noqa: BLE001 - a light library failing: Spark answers (or, asked for light, we say why)
            if self.wanted == "light":
                if isinstance(e, FileNotFoundError) or "not found" in str(e).lower():
                    raise VersionNotFoundError(
                        f"{what} {table.name}: a file of the version is gone: {first_line(str(e))}"
                    ) from e
                raise LakecatError(f"{what} {table.name} without a JVM failed: {first_line(str(e))}") from e
            self.reason = f"the light path failed ({type(e).__name__}: {first_line(str(e))})"
            return None
        self.engine = "light"
        return out

    def spark(self) -> None:
        self.engine = "spark"

    def fields(self) -> dict[str, Any]:
        return {"engine": self.engine, "engine_reason": self.reason if self.engine == "spark" else None}


def _duckdb() -> Any:
    require("duckdb", extra=None, feature="reading without a JVM (DuckDB)")
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")  # Spark's session time zone in lakecat: TIMESTAMP literals and year() agree
    return con


def _check_types(schema: pa.Schema) -> None:
    """Only column types the differential test proves identical on both paths travel the light path."""
    odd = [f"{f.name} ({f.type})" for f in schema if _kind_of(f.type) is None]
    if odd:
        raise NotExactError(f"column(s) {', '.join(odd)} are of a type lakecat returns through Spark")


def _light_select(source: Any, *, where: str | None, limit: int | None, count: bool,
                  order: pa.Table | None = None, columns: list[str] | None = None) -> Any:  # fmt: skip
    """Run one query over ``source`` (a pyarrow Dataset / RecordBatchReader): a count, or rows as an Arrow table
    (of ``columns`` only, in that order, when given: names as the schema spells them).

    DuckDB streams the source: a count keeps no rows, a limit stops the scan early; only the predicate's
    DuckDB rendering (``lakecat.predicate``) and quoted column names reach the SQL.
    """
    schema = source.schema
    predicate = to_duckdb(where, schema) if where is not None and str(where).strip() else None
    if not count:
        import pyarrow as pa

        _check_types(schema if columns is None else pa.schema([schema.field(c) for c in columns]))
    if count and predicate is None and type(source).__module__.startswith("pyarrow"):
        # a plain count needs no SQL engine: a Dataset counts from the files' footers, a reader streams its batches
        if hasattr(source, "count_rows"):
            return int(source.count_rows())
        return sum(batch.num_rows for batch in source)
    reader = None
    if limit and not count and type(source).__module__.startswith("pyarrow") and hasattr(source, "scanner"):
        # DuckDB stopping a pyarrow Dataset's scan early (the limit) leaves Arrow's scan threads running, and the
        # process aborts at exit ("terminate called without an active exception"). A reader closed here ends the
        # scan, and scanning without Arrow's CPU thread pool leaves no task of it behind (closing alone did not
        # always: a benchmark run still aborted once); a limit reads few batches anyway.
        reader = source = source.scanner(use_threads=False).to_reader()
    con = _duckdb()
    try:
        con.register("lakecat_source", source)
        clause = f" WHERE {predicate}" if predicate else ""
        if count:
            return int(con.execute(f"SELECT count(*) FROM lakecat_source{clause}").fetchone()[0])  # type: ignore[index]
        cols = [f"d.{quote_ident(n)}" for n in (schema.names if columns is None else columns)]
        if order is None:
            sql = f"SELECT {', '.join(cols)} FROM lakecat_source AS d{clause}"
        else:
            con.register("lakecat_commits", order)
            cols = [c for c in cols if c != 'd."_commit_timestamp"']
            sql = (f"SELECT {', '.join(cols)}, c.ts AS _commit_timestamp FROM lakecat_source AS d "
                   "JOIN lakecat_commits AS c ON d._commit_version = c.version"
                   f"{clause} ORDER BY c.ord, d._commit_version, CASE d._change_type WHEN 'delete' THEN 0 "
                   "WHEN 'update_preimage' THEN 1 WHEN 'update_postimage' THEN 2 ELSE 3 END")  # fmt: skip
        if limit:
            sql += f" LIMIT {int(limit)}"
        return con.sql(sql).to_arrow_table()
    finally:
        if reader is not None:
            reader.close()
        con.close()


def check_predicate_columns(table: TableLike, where: str | None, version: int | None, *,
                            columns: list[str] | None = None) -> None:  # fmt: skip
    """Refuse a ``--where`` predicate that names a column ``version`` of the table lacks (of ``columns`` only, when
    given), from the table's metadata: a typo is a usage error before any JVM starts.

    Only predicates the light parser reads (``lakecat.predicate``) are checked; anything else is left to Spark.
    """
    if where is None or not str(where).strip() or version is None:
        return
    try:
        words = {t.text.upper() for t in _tokens(str(where)) if t.kind == "id"}
        schema = table.adapter.scan_version_light(table, version).schema
    except Exception:  # noqa: BLE001 - text the light path does not read, or a version it cannot open: Spark checks
        return
    if words & SPARK_WORDS:
        return
    if columns is not None:
        import pyarrow as pa

        schema = pa.schema([f for f in schema if f.name in columns])
    try:
        to_duckdb(str(where), schema)
    except NotExactError:
        return


def _commit_order(commits: dict[int, Commit]) -> pa.Table:
    import pyarrow as pa

    versions = list(commits)
    return pa.table({
        "version": pa.array(versions, pa.int64()),
        "ord": pa.array(range(len(versions)), pa.int64()),
        "ts": pa.array([commits[v].timestamp_ms * 1000 for v in versions], pa.timestamp("us", tz="UTC")),
    })  # fmt: skip


def _rows(tbl: pa.Table, limit: int | None) -> tuple[list[dict[str, Any]], bool]:
    rows = tbl.to_pylist()
    truncated = bool(limit) and len(rows) > (limit or 0)
    return (rows[:limit] if limit else rows), truncated


# --- time travel --------------------------------------------------------------------------------
def _column_list(columns: str | list[str] | tuple[str, ...] | None) -> list[str] | None:
    if columns is None:
        return None
    names = [str(c).strip() for c in (columns.split(",") if isinstance(columns, str) else columns)]
    if not names or not all(names):
        raise InvalidArgumentError(f"invalid columns={columns!r}: give column names separated by commas")
    return names


@dataclass
class TableAsOf(Result):
    """A read-only view of a table pinned to one version (``version`` None: a table nothing was committed to yet,
    which reads as no rows with the table's columns).

    Example:
        >>> v = cat.table("sales.orders").as_of(timestamp="2026-01-31T12:00:00")
        >>> v.version, v.count(), v.to_pandas()
    """

    name: str
    format: str
    version: int | None
    version_timestamp: str | None
    as_of: str | None
    table: TableLike = field(repr=False, compare=False)

    engine: str | None = None
    #: The view of a branch's head (``Table.on_branch(...).current()``): Spark reads the branch itself, as Iceberg
    #: does not time-travel a branch's table name.
    branch: str | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:  # type: ignore[override]
        return {"name": self.name, "format": self.format, "version": self.version,
                "version_timestamp": self.version_timestamp, "as_of": self.as_of}  # fmt: skip

    def _repr_html_(self) -> str:
        """The version and its first rows (read as ``read`` reads them: the light path when exact)."""
        return self.read(limit=display.MAX_ROWS)._repr_html_()

    def _source(self) -> Any:
        """The version's rows as a streaming Arrow source, read without a JVM (NotExactError: only Spark reads it)."""
        if self.version is None:
            return self.table.adapter.scan_empty_light(self.table)
        return self.table.adapter.scan_version_light(self.table, self.version)

    def _columns(self, columns: str | list[str] | tuple[str, ...] | None) -> list[str] | None:
        """``columns`` as the table spells them (Spark matches names case-insensitively), checked from the metadata:
        a column the version lacks is an InvalidArgumentError before any JVM starts. None: all columns."""
        names = _column_list(columns)
        if names is None:
            return None
        try:
            schema = self._source().schema
        except Exception:  # noqa: BLE001 - a version the light path cannot open: Spark checks the names
            return names
        spelled = {n.lower(): n for n in reversed(schema.names)}
        missing = [n for n in names if n.lower() not in spelled]
        if missing:
            raise InvalidArgumentError(f"{self.name} has no column {', '.join(map(repr, missing))}; "
                                       f"its columns: {', '.join(schema.names)}")  # fmt: skip
        resolved = [spelled[n.lower()] for n in names]
        twice = sorted({n for n in resolved if resolved.count(n) > 1})
        if twice:
            raise InvalidArgumentError(f"columns= names {', '.join(map(repr, twice))} more than once").with_cli_terms(
                {"columns=": "--columns"}
            )
        return resolved

    def to_spark(self, *, where: str | None = None, columns: str | list[str] | None = None) -> DataFrame:
        """The rows of this version as a Spark DataFrame (optionally filtered by a SQL predicate, of ``columns``)."""
        check_predicate_columns(self.table, where, self.version)
        names = self._columns(columns)
        with _engine_errors("timetravel", self.table, self.version):
            if self.version is None or self.branch:
                df = self.table.adapter.read_current(self.table)
            else:
                df = self.table.adapter.read_version(self.table, self.version)
        return _select(_where(df, where), names)

    def _light(self, answer: _Answer, **query: Any) -> Any:
        return answer.light(self.table, "timetravel", lambda: _light_select(self._source(), **query))

    def _count(self, where: str | None, answer: _Answer) -> int:
        n = self._light(answer, where=where, limit=None, count=True)
        if n is not None:
            return int(n)
        answer.spark()
        df = self.to_spark(where=where)
        with _engine_errors("timetravel", self.table, self.version):
            return int(df.count())

    def count(self, *, where: str | None = None) -> int:
        """The number of rows (matching ``where``): on the light path when it answers exactly, else on Spark."""
        return self._count(where, _Answer(self.engine))

    def _arrow(
        self, where: str | None, limit: int | None, answer: _Answer, columns: list[str] | None = None
    ) -> pa.Table:
        tbl = self._light(answer, where=where, limit=limit, count=False, columns=columns)
        if tbl is not None:
            return tbl
        answer.spark()
        df = self.to_spark(where=where, columns=columns)
        with _engine_errors("timetravel", self.table, self.version):
            return (df.limit(limit) if limit else df).toArrow()

    def to_arrow(self, *, where: str | None = None, columns: str | list[str] | None = None,
                 limit: int | None = None) -> pa.Table:  # fmt: skip
        """The rows (matching ``where``, of ``columns``, at most ``limit``) as Arrow: light path when exact, else Spark."""
        return self._arrow(where, _check_limit(limit), _Answer(self.engine), self._columns(columns))

    def to_pandas(self, *, where: str | None = None, columns: str | list[str] | None = None,
                  limit: int | None = None) -> pd.DataFrame:  # fmt: skip
        return self.to_arrow(where=where, columns=columns, limit=limit).to_pandas()

    def planned_files(self, *, where: str | None = None) -> tuple[int, int] | None:
        """(files a read filtered by ``where`` opens, files of the version): the files the partition values and column
        statistics cannot rule out, as both engines plan the read; None when the metadata cannot say."""
        if self.version is None:
            return 0, 0
        try:
            return self.table.adapter.planned_files(self.table, self.version, where)
        except Exception:  # noqa: BLE001 - a figure about the read, never a reason for it to fail
            return None

    def read(
        self, *, where: str | None = None, limit: int | None = DEFAULT_ROW_LIMIT, count: bool = False,
        columns: str | list[str] | None = None,
    ) -> ReadResult:  # fmt: skip
        """Rows (at most ``limit``; 0 or None: all; of ``columns``, default all) or, with ``count=True``, the number
        of rows."""
        answer = _Answer(self.engine)
        if count and columns:
            raise InvalidArgumentError("columns= applies to rows, not with count=True")
        names = self._columns(columns)
        scanned, total = self.planned_files(where=where) or (None, None)
        base = dict(name=self.name, format=self.format, version=self.version, version_timestamp=self.version_timestamp,
                    as_of=self.as_of, files_scanned=scanned, files_total=total)  # fmt: skip
        if count:
            n = self._count(where, answer)
            return ReadResult(count=n, **base, **answer.fields())  # type: ignore[arg-type]
        limit = _check_limit(limit)
        tbl = self._arrow(where, limit + 1 if limit else None, answer, names)
        rows, truncated = _rows(tbl, limit)
        return ReadResult(count=len(rows), rows=rows, columns=tbl.column_names, limit=limit, truncated=truncated,
                          **base, **answer.fields())  # type: ignore[arg-type]  # fmt: skip


def as_of(table: TableLike, *, version: int | None = None, timestamp: str | datetime | None = None,
          tag: str | None = None, engine: str | None = None) -> TableAsOf:  # fmt: skip
    """The table pinned to ``version``, to the version tagged ``tag``, or to the newest version at or before ``timestamp``.

    ``engine``: ``"light"`` (no JVM: pyiceberg / delta-rs + DuckDB; exit 3 where it cannot answer exactly),
    ``"spark"``, or None: the light path where it answers exactly, else Spark.
    """
    table.adapter.require("time_travel", "timetravel")
    engine = _check_engine(engine)
    version = _tagged(table, version, tag)
    r = resolve_version(table, version=version, timestamp=timestamp)
    return TableAsOf(table.name, table.format, r.version, iso(from_millis(r.timestamp_ms)) if r.timestamp_ms else None,
                     r.as_of, table, engine)  # fmt: skip


def current(table: TableLike, *, engine: str | None = None) -> TableAsOf:
    """The table pinned to the version it reads now (a table on a branch: the branch's head), from fresh metadata.

    Reads of it go the way time travel does (``engine`` as for ``as_of``); a table nothing has been committed to
    yet reads as no rows with the table's columns (``version`` None).
    """
    engine = _check_engine(engine)
    table.refresh()
    branch = getattr(table, "branch_name", None)
    version = find_ref(table, branch, "branch").version if branch else table.adapter.versions(table).current_version()
    if version is None:
        return TableAsOf(table.name, table.format, None, None, None, table, engine)
    r = resolve_version(table, version=version)
    return TableAsOf(table.name, table.format, r.version, iso(from_millis(r.timestamp_ms)) if r.timestamp_ms else None,
                     None, table, engine, branch)  # fmt: skip


def _select(df: DataFrame, columns: list[str] | None) -> DataFrame:
    if columns is None:
        return df
    from pyspark.sql import functions as F

    try:
        out = df.select(*[F.col(quote(c)) for c in columns])
        out.schema  # noqa: B018 - analysed now, so a missing column is a usage error (Spark Connect analyses lazily)
        return out
    except Exception as e:  # noqa: BLE001 - a name Spark cannot resolve is the caller's mistake
        raise InvalidArgumentError(f"invalid columns={','.join(columns)!r}: {first_line(str(e))}") from None


def _where(df: DataFrame, where: str | None) -> DataFrame:
    if where is None or not str(where).strip():
        return df
    try:
        out = df.where(str(where))  # user text stays a predicate: Spark parses it as one expression
        out.schema  # noqa: B018 - analysed now (Spark Connect analyses lazily), so a bad predicate is a usage error
        return out
    except Exception as e:  # noqa: BLE001 - any failure to analyse the predicate is the caller's mistake
        raise InvalidArgumentError(f"invalid where predicate {where!r}: {first_line(str(e))}") from None


# --- changes ------------------------------------------------------------------------------------
@dataclass
class TableChanges(Result):
    """The rows that changed after ``since_version`` up to and including ``until_version``.

    Every row carries ``_change_type`` (``insert``, ``delete``, ``update_preimage``, ``update_postimage``),
    ``_commit_version`` and ``_commit_timestamp``, on both formats. Resume with ``since=until_version``.
    """

    name: str
    format: str
    since_version: int
    until_version: int
    until_timestamp: str | None
    table: TableLike = field(repr=False, compare=False)
    _commits: dict[int, Commit] = field(repr=False, compare=False, default_factory=dict)
    engine: str | None = None

    def to_dict(self) -> dict[str, Any]:  # type: ignore[override]
        return {"name": self.name, "format": self.format, "since_version": self.since_version,
                "until_version": self.until_version, "until_timestamp": self.until_timestamp}  # fmt: skip

    def _repr_html_(self) -> str:
        """The range and its first change rows (read as ``read`` reads them: the light path when exact)."""
        return self.read(limit=display.MAX_ROWS)._repr_html_()

    def to_spark(self) -> DataFrame:
        """The change rows as a Spark DataFrame (unordered)."""
        with _engine_errors("changes", self.table):
            return self.table.adapter.read_changes(self.table, self.since_version, self.until_version, self._commits)

    def _light(self, answer: _Answer, **query: Any) -> Any:
        def run() -> Any:
            source = self.table.adapter.changes_light(self.table, self.since_version, self.until_version, self._commits)
            return _light_select(
                source, where=None, order=None if query["count"] else _commit_order(self._commits), **query
            )

        return answer.light(self.table, "changes", run)

    def _count(self, answer: _Answer) -> int:
        n = self._light(answer, limit=None, count=True)
        if n is not None:
            return int(n)
        answer.spark()
        df = self.to_spark()
        with _engine_errors("changes", self.table):
            return int(df.count())

    def count(self) -> int:
        return self._count(_Answer(self.engine))

    def _ordered(self) -> DataFrame:
        from pyspark.sql import functions as F

        df = self.to_spark()
        order = {v: i for i, v in enumerate(self._commits)}  # commits are kept oldest first
        kind = (F.when(F.col("_change_type") == "delete", 0).when(F.col("_change_type") == "update_preimage", 1)
                .when(F.col("_change_type") == "update_postimage", 2).otherwise(3))  # fmt: skip
        return df.orderBy(spark_lookup(order, F.col("_commit_version"), "int"), F.col("_commit_version"), kind)

    def _arrow(self, limit: int | None, answer: _Answer) -> pa.Table:
        tbl = self._light(answer, limit=limit, count=False)
        if tbl is not None:
            return tbl
        answer.spark()
        df = self._ordered()
        with _engine_errors("changes", self.table):
            return (df.limit(limit) if limit else df).toArrow()

    def to_arrow(self, *, limit: int | None = None) -> pa.Table:
        """The change rows in commit order (deletes and pre-images before inserts and post-images)."""
        return self._arrow(_check_limit(limit), _Answer(self.engine))

    def to_pandas(self, *, limit: int | None = None) -> pd.DataFrame:
        return self.to_arrow(limit=limit).to_pandas()

    def read(self, *, limit: int | None = DEFAULT_ROW_LIMIT, count: bool = False) -> ReadResult:
        answer = _Answer(self.engine)
        base = dict(name=self.name, format=self.format, since_version=self.since_version,
                    until_version=self.until_version, until_timestamp=self.until_timestamp)  # fmt: skip
        if count:
            return ReadResult(count=self._count(answer), **base, **answer.fields())  # type: ignore[arg-type]
        limit = _check_limit(limit)
        tbl = self._arrow(limit + 1 if limit else None, answer)
        rows, truncated = _rows(tbl, limit)
        return ReadResult(count=len(rows), rows=rows, columns=tbl.column_names, limit=limit, truncated=truncated,
                          **base, **answer.fields())  # type: ignore[arg-type]  # fmt: skip


def changes(table: TableLike, *, since: int | None = None, until: int | None = None, since_tag: str | None = None,
            until_tag: str | None = None, engine: str | None = None) -> TableChanges:  # fmt: skip
    """Changes committed after ``since`` (exclusive) up to ``until`` (inclusive; default: the current version).

    ``engine``: ``"light"`` (no JVM), ``"spark"``, or None: the light path where it answers exactly, else Spark.

    ``since=-1`` reads from the table's first commit. On Iceberg, versions are snapshot ids and ``since``
    must be an ancestor of ``until`` (changes are read along one line of history).
    """
    table.adapter.require("changes", "changes")
    engine = _check_engine(engine)
    since = _tagged(table, since, since_tag, "since")
    until = _tagged(table, until, until_tag, "until")
    if since is None:
        raise invalid("give since= (a version) or since_tag= (a tag name)", "give --since VERSION or --since-tag NAME")
    since = _check_int(since, "since")
    v = table.adapter.versions(table)
    commits = {c.version: c for c in v.commits()}
    current = v.current_version()
    if until is None:
        if current is None:
            raise VersionNotFoundError(f"{table.name} has no versions yet: nothing has been committed")
        until = current
    until = _check_int(until, "until")
    if not v.exists(until):
        raise v.missing(until)
    lineage = v.lineage(until)
    if since != -1:
        if since not in commits and since not in lineage:
            raise v.missing(since)
        if since not in lineage:
            raise v.not_an_ancestor(since, until)
        span = lineage[: lineage.index(since)]
    else:
        span = lineage
    missing = [x for x in span if x not in commits]
    if missing:
        raise VersionNotFoundError(f"changes {table.name}: version {missing[0]} in the range has been expired")
    in_range = {x: commits[x] for x in reversed(span)}  # oldest first
    table.adapter.check_changes(table, since, until)
    return TableChanges(table.name, table.format, since, until, iso(from_millis(commits[until].timestamp_ms)),
                        table, in_range, engine)  # fmt: skip


# --- rollback -----------------------------------------------------------------------------------
def rollback(table: TableLike, *, version: int | None = None, timestamp: str | datetime | None = None,
             tag: str | None = None, force: bool = False) -> RollbackResult:  # fmt: skip
    """Make the table read as it did at ``version`` (or as of ``timestamp``).

    Iceberg moves the current-snapshot pointer (``rollback_to_snapshot``, or ``set_current_snapshot``
    when the target is not an ancestor); Delta commits a ``RESTORE``.

    A rollback that undoes batches an ingest stream committed is refused unless ``force``: the stream's
    checkpoint has moved past them and would not write them again, so their rows would silently be gone.
    """
    table.adapter.require("rollback", "rollback")
    version = _tagged(table, version, tag)
    target = resolve_version(table, version=version, timestamp=timestamp)
    current = table.adapter.current_version(table)
    stamp = iso(from_millis(target.timestamp_ms)) if target.timestamp_ms else None
    if current == target.version:
        return RollbackResult(table.name, table.format, current, target.version, current, stamp, False)
    streams = table.adapter.streams_undone_by(table, target.version, current)
    if streams and not force:
        raise InvalidArgumentError(
            f"refusing to roll back {table.name} to version {target.version}: it would undo batches that "
            f"{len(streams)} ingest stream(s) committed ({', '.join(streams)}), and their checkpoints have moved past "
            "them, so a restarted stream would not write those rows again; pass force=True to roll back "
            "anyway, then re-ingest what is needed (an ingest with a new checkpoint replays the source)"
        ).with_cli_terms({"force=True": "--force"})
    with _engine_errors("rollback", table, target.version):
        after = table.adapter.rollback(table, target.version, current)
    table.refresh()
    return RollbackResult(table.name, table.format, current, target.version, after, stamp, True)
