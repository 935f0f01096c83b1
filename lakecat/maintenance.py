"""Table maintenance on both formats: compaction, version expiry, orphan cleanup, metadata upkeep, policies.

Every operation has a dry run that changes nothing and says what would change; dry runs of compaction
and expiry are computed from metadata (pyiceberg / delta-rs), those of orphan cleanup and of Delta's
file deletion ask the engine (Iceberg's ``remove_orphan_files(dry_run => true)``, Delta's
``VACUUM ... DRY RUN``). Commit conflicts with a concurrent writer are retried with backoff.

Safety floors (a shorter window is refused unless ``force``, exit code 2):

- Delta: 7 days, Delta's own ``retentionDurationCheck``; with ``force`` the check is switched off for
  that one VACUUM call only.
- Iceberg: 24 hours, the rule Iceberg's ``remove_orphan_files`` enforces (files younger than that may
  belong to a commit still in flight). lakecat applies it to expiry as well, so both commands share it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import logging
import math
import random
import re
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from .config import pyarrow_filesystem
from .errors import CommitConflictError, InvalidArgumentError, LakecatError, UnsupportedOperationError
from .formats.base import first_line, spark_errors, sql_string, validate_properties
from .identifiers import parse_columns, quote
from .results import Result
from .units import format_duration, iso, parse_duration, parse_size

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .catalog import Catalog
    from .table import Table

log = logging.getLogger(__name__)
T = TypeVar("T")
# PySpark logs every AnalysisException with a query context to stderr (JSON plus a stack) before
# raising it; lakecat translates the exception into one line, so those loggers stay quiet.
for _name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
    logging.getLogger(_name).setLevel(logging.CRITICAL)

STRATEGIES = ("binpack", "sort", "zorder")
DEFAULT_TARGET_FILE_SIZE = 128 * 1000**2
SMALL_FILE_RATIO = 0.75  # a file below 75% of the target is "small" (Iceberg's min-file-size-bytes default)
DEFAULT_EXPIRE_WINDOW = timedelta(days=7)
DEFAULT_ORPHAN_WINDOW = {"iceberg": timedelta(days=3), "delta": timedelta(days=7)}
SAFETY_FLOOR = {"iceberg": timedelta(hours=24), "delta": timedelta(days=7)}
DEFAULT_MIN_INPUT_FILES = 5  # `maintain` compacts a partition once it has this many small files
DEFAULT_MAX_MANIFESTS = 5  # `maintain` rewrites Iceberg manifests past this many
DEFAULT_CHECKPOINT_EVERY = 5  # `maintain` writes a Delta checkpoint when this many commits have none
RETRY_ATTEMPTS = 6

POLICY_KEYS = {
    "lakecat.compact.target-file-size": "size",
    "lakecat.compact.strategy": "strategy",
    "lakecat.compact.by": "columns",
    "lakecat.compact.min-input-files": "int",
    "lakecat.expire.older-than": "duration",
    "lakecat.expire.retain-last": "int",
    "lakecat.orphans.older-than": "duration",
    "lakecat.maintain.enabled": "bool",
}
_FORBIDDEN_IN_PREDICATE = (";", "--", "/*", "*/")


# --- results -----------------------------------------------------------------------------------
@dataclass
class PartitionPlan(Result):
    """What compaction does (or would do) to one partition."""

    partition: str
    files: int
    bytes: int
    estimated_output_files: int


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


@dataclass
class PropertiesResult(Result):
    table: str
    format: str
    properties: dict[str, str]


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


@dataclass
class MaintainReport(Result):
    """The CI report of ``maintain``: every matching table, ``failed`` > 0 means exit code 1."""

    pattern: str | None
    plan: str | None
    dry_run: bool
    tables: list[TableMaintenance]
    failed: int
    succeeded: int
    skipped: int
    duration_s: float = 0.0


# --- shared helpers ----------------------------------------------------------------------------
def with_retries(fn: Callable[[], T], *, what: str, attempts: int = RETRY_ATTEMPTS, base_delay: float = 0.5) -> tuple[T, int]:
    """Run ``fn``; on a commit conflict wait (exponential backoff with jitter) and try again.

    Returns ``(result, retries)``. Maintenance rewrites are idempotent, so a retry is always safe:
    the retried call plans again on top of the concurrent writer's commit.
    """
    retries = 0
    while True:
        try:
            return fn(), retries
        except CommitConflictError as e:
            if retries + 1 >= attempts:
                raise CommitConflictError(f"{e} (gave up after {retries} retries)") from e
            retries += 1
            delay = base_delay * 2 ** (retries - 1) * (1 + random.random() / 2)
            log.info("%s: commit conflict, retry %d in %.1fs", what, retries, delay)
            time.sleep(delay)


@contextlib.contextmanager
def spark_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Set session confs for one call and put the previous values back afterwards."""
    saved = {k: spark.conf.get(k, None) for k in settings}
    try:
        for k, v in settings.items():
            spark.conf.set(k, v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _now() -> datetime:
    return datetime.now(UTC)


def _sql_timestamp(dt: datetime) -> str:
    """A Spark TIMESTAMP literal (the session time zone is UTC)."""
    return "TIMESTAMP " + sql_string(dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3])


def norm_path(path: str) -> str:
    """One spelling per file across engines: ``file:/x``, ``file:///x`` and ``/x`` are ``/x``; %-escapes decoded."""
    p = unquote(str(path))
    if p.startswith("file://"):
        p = p[len("file://"):]
    elif p.startswith("file:"):
        p = p[len("file:"):]
    return p


def _fs_for(uri: str) -> tuple[Any, str]:
    from pyarrow import fs

    if "://" not in uri and not uri.startswith("file:"):
        return fs.LocalFileSystem(), uri
    if uri.startswith("file:"):
        return fs.LocalFileSystem(), norm_path(uri)
    return pyarrow_filesystem(uri)  # s3:// and s3a:// with the AWS_* environment's endpoint


def file_sizes(paths: list[str]) -> dict[str, int]:
    """Sizes of existing files (missing ones are left out)."""
    from pyarrow import fs

    out: dict[str, int] = {}
    for p in paths:
        try:
            filesystem, path = _fs_for(p)
            info = filesystem.get_file_info(path)
        except (OSError, ValueError):
            continue
        if info.type == fs.FileType.File:
            out[p] = int(info.size or 0)
    return out


def _exists(path: str) -> bool:
    from pyarrow import fs

    filesystem, p = _fs_for(path)
    return filesystem.get_file_info(p).type != fs.FileType.NotFound


def validate_predicate(spark: SparkSession, text: str | None, table: Table | None = None) -> str | None:
    """Check a ``--where`` predicate is exactly one Spark SQL expression (no statement tricks).

    With ``table``, the predicate is also resolved against the table's columns (Delta: its partition
    columns only, the only ones OPTIMIZE accepts), so a typo is a usage error, not an engine failure.
    """
    if text is None:
        return None
    pred = str(text).strip()
    if not pred:
        raise InvalidArgumentError("invalid --where predicate: it is empty")
    if any(tok in pred for tok in _FORBIDDEN_IN_PREDICATE):
        raise InvalidArgumentError(
            f"invalid --where predicate {text!r}: ';' and SQL comments are not allowed in a predicate"
        )
    try:
        spark._jsparkSession.sessionState().sqlParser().parseExpression(pred)
    except Exception as e:  # noqa: BLE001 - any parser complaint is the user's predicate
        raise InvalidArgumentError(f"invalid --where predicate {text!r}: {_java_message(e)}") from None
    if table is not None:
        df = table.to_spark()
        columns = list(df.columns)
        if table.format == "delta":
            columns = list(table.adapter.load(table.entry).metadata().partition_columns)  # type: ignore[attr-defined]
            if not columns:
                raise InvalidArgumentError(
                    f"invalid --where predicate {text!r}: {table.name} is not partitioned, and Delta's OPTIMIZE "
                    "takes predicates on partition columns only"
                )
            # a fresh, empty frame: Spark would resolve a Filter on a column dropped by a select
            df = spark.createDataFrame([], df.select(*[f"`{c}`" for c in columns]).schema)
        try:
            df.where(pred).schema  # noqa: B018 - analysis only, nothing runs
        except Exception as e:  # noqa: BLE001 - an unknown column or a type error in the user's predicate
            hint = f" (Delta's OPTIMIZE takes partition columns only: {', '.join(columns)})" if table.format == "delta" else ""
            raise InvalidArgumentError(f"invalid --where predicate {text!r}: {_java_message(e)}{hint}") from None
    return pred


def _java_message(e: BaseException) -> str:
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            return first_line(str(java.getMessage()))
        except Exception:  # noqa: BLE001 - fall back to the Python text
            pass
    return first_line(str(e))


def _window(text: str | timedelta | None, default: timedelta, what: str) -> timedelta:
    delta = parse_duration(text) if text is not None else default
    if delta.total_seconds() < 0:
        raise InvalidArgumentError(f"invalid {what}: must not be negative")
    return delta


def _check_floor(fmt: str, window: timedelta, force: bool, what: str) -> None:
    floor = SAFETY_FLOOR[fmt]
    if window < floor and not force:
        why = (
            "Delta's retentionDurationCheck: files younger than that may still be read by running queries "
            "or belong to a commit in flight"
            if fmt == "delta"
            else "Iceberg's orphan-file rule: files younger than that may belong to a commit still in flight, "
            "and readers may still be planning against those snapshots"
        )
        raise InvalidArgumentError(
            f"refusing to {what} with a window of {format_duration(window)}: shorter than the {fmt} safety floor "
            f"of {format_duration(floor)} ({why}); pass --force (force=True) if no other job reads or writes this table"
        )


def _spark_name_of(table: Table) -> str:
    return table.spark_name


def _iceberg_ident_arg(table: Table) -> str:
    return sql_string(f"{table.entry.ident.namespace}.{table.entry.ident.name}")


def _procedure(table: Table, name: str) -> str:
    return f"{quote(table.catalog.name)}.system.{name}"


# --- file listings from metadata (no JVM) ------------------------------------------------------
@dataclass
class _File:
    path: str
    size: int
    partition: str


def data_files(table: Table) -> list[_File]:
    """The live data files of the current version, with sizes and partitions, from metadata alone."""
    table.refresh()
    if table.format == "iceberg":
        tbl = table.adapter.load(table.entry)  # type: ignore[attr-defined]
        if tbl.current_snapshot() is None:
            return []
        schema, specs = tbl.schema(), tbl.specs()
        out = []
        for task in tbl.scan().plan_files():
            f = task.file
            spec = specs.get(f.spec_id)
            try:
                part = spec.partition_to_path(f.partition, schema) if spec is not None and spec.fields else ""
            except Exception:  # noqa: BLE001 - a display string only
                part = str(f.partition)
            out.append(_File(f.file_path, int(f.file_size_in_bytes), part))
        return out
    dt = table.adapter.load(table.entry)  # type: ignore[attr-defined]
    import pyarrow as pa

    rows = pa.table(dt.get_add_actions(flatten=True)).to_pylist()  # delta-rs answers with arro3
    base = table.location.rstrip("/")
    out = []
    for r in rows:
        parts = [f"{k[len('partition.'):]}={v}" for k, v in r.items() if k.startswith("partition.")]
        path = r["path"] if "://" in r["path"] else f"{base}/{r['path']}"
        out.append(_File(path, int(r["size_bytes"]), "/".join(parts)))
    return out


def _files_matching(table: Table, predicate: str) -> set[str]:
    """Files (normalized paths) that may hold rows matching ``predicate``: the engine's own pruning."""
    if table.format == "iceberg":
        # Iceberg's own planning (partition and column-stats pruning), the same rewrite_data_files uses;
        # Spark's inputFiles() knows nothing of DataSource V2 scans.
        tbl = table.adapter.load(table.entry)  # type: ignore[attr-defined]
        try:
            return {norm_path(task.file.file_path) for task in tbl.scan(row_filter=predicate).plan_files()}
        except Exception:  # noqa: BLE001 - pyiceberg cannot parse every Spark predicate: ask Spark
            from pyspark.sql import functions as F

            with spark_errors("compact --where", table.entry.ident):
                rows = table.to_spark().where(predicate).select(F.input_file_name().alias("f")).distinct().collect()
            return {norm_path(r["f"]) for r in rows}
    with spark_errors("compact --where", table.entry.ident):
        return {norm_path(p) for p in table.to_spark().where(predicate).inputFiles()}


# --- compaction --------------------------------------------------------------------------------
def _plan_compaction(files: list[_File], strategy: str, target: int) -> list[PartitionPlan]:
    by_part: dict[str, list[_File]] = {}
    for f in files:
        by_part.setdefault(f.partition, []).append(f)
    plans = []
    for part, group in sorted(by_part.items()):
        if strategy == "binpack":
            chosen = [f for f in group if f.size < SMALL_FILE_RATIO * target]
        else:  # sort / zorder rewrite every file of a partition that has more than one
            chosen = list(group)
        if len(chosen) < 2:
            continue
        total = sum(f.size for f in chosen)
        plans.append(PartitionPlan(part or "(unpartitioned)", len(chosen), total, max(1, math.ceil(total / target))))
    return plans


def compact(
    table: Table,
    *,
    strategy: str = "binpack",
    by: list[str] | tuple[str, ...] | str = (),
    target_file_size: int | str | None = None,
    where: str | None = None,
    dry_run: bool = False,
) -> CompactResult:
    """Rewrite small files into fewer, larger ones (optionally sorted or z-ordered). See ``Table.compact``."""
    started = time.monotonic()
    strategy = str(strategy).lower()
    if strategy not in STRATEGIES:
        raise InvalidArgumentError(f"invalid strategy {strategy!r}: use binpack, sort or zorder")
    cols = parse_columns(by) if (by and (not isinstance(by, str) or by.strip())) else []
    if strategy in ("sort", "zorder") and not cols:
        raise InvalidArgumentError(f"--strategy {strategy} needs --by COLS")
    if strategy == "binpack" and cols:
        raise InvalidArgumentError("--by only applies to --strategy sort or zorder")
    if strategy == "sort" and table.format == "delta":
        raise UnsupportedOperationError(
            "compact --strategy sort: not supported for delta tables — Delta's OPTIMIZE has no linear sort; "
            "use --strategy zorder --by COLS (clusters files by those columns)"
        )
    target = _policy_size(table, target_file_size)
    files_before = data_files(table)
    if where is not None:
        where = validate_predicate(table.catalog.session(), where, table)
        matching = _files_matching(table, where)
        candidates = [f for f in files_before if norm_path(f.path) in matching]
    else:
        candidates = files_before
    plans = _plan_compaction(candidates, strategy, target)
    rewritten_est = sum(p.files for p in plans)
    bytes_before = sum(f.size for f in files_before)

    def result(**kw: Any) -> CompactResult:
        return CompactResult(
            table=table.name, format=table.format, strategy=strategy, by=cols, target_file_size=target, where=where,
            files_before=len(files_before), bytes_before=bytes_before, partitions=plans, **kw,
        )  # fmt: skip

    if dry_run:
        return result(
            files_after=len(files_before) - rewritten_est + sum(p.estimated_output_files for p in plans),
            bytes_after=bytes_before, files_rewritten=rewritten_est,
            files_added=sum(p.estimated_output_files for p in plans), dry_run=True,
            duration_s=round(time.monotonic() - started, 3),
        )  # fmt: skip
    if not plans:  # nothing to do: do not start an engine job that commits an empty rewrite
        return result(files_after=len(files_before), bytes_after=bytes_before, files_rewritten=0, files_added=0,
                      dry_run=False, duration_s=round(time.monotonic() - started, 3))  # fmt: skip

    run = _compact_iceberg if table.format == "iceberg" else _compact_delta
    (rewritten, added), retries = with_retries(
        lambda: run(table, strategy, cols, target, where), what=f"compact {table.name}"
    )
    files_after = data_files(table)
    return result(
        files_after=len(files_after), bytes_after=sum(f.size for f in files_after), files_rewritten=rewritten,
        files_added=added, dry_run=False, retries=retries, duration_s=round(time.monotonic() - started, 3),
    )  # fmt: skip


def _compact_iceberg(table: Table, strategy: str, cols: list[str], target: int, where: str | None) -> tuple[int, int]:
    spark = table.catalog.session()
    options = {
        "target-file-size-bytes": str(target),
        "min-input-files": "2",
        "partial-progress.enabled": "true",  # big tables commit group by group: less to redo after a conflict
        "partial-progress.max-commits": "10",
        "use-starting-sequence-number": "true",  # concurrent appends and deletes stay valid
    }
    args = [f"table => {_iceberg_ident_arg(table)}"]
    if strategy == "binpack":
        args.append("strategy => 'binpack'")
    else:
        order = f"zorder({', '.join(cols)})" if strategy == "zorder" else ", ".join(f"{c} ASC NULLS LAST" for c in cols)
        args += ["strategy => 'sort'", f"sort_order => {sql_string(order)}"]
        options["rewrite-all"] = "true"
    args.append("options => map(" + ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in options.items()) + ")")
    if where is not None:
        args.append(f"where => {sql_string(where)}")
    with spark_errors("compact", table.entry.ident):
        row = spark.sql(f"CALL {_procedure(table, 'rewrite_data_files')}({', '.join(args)})").first()
    return (int(row["rewritten_data_files_count"]), int(row["added_data_files_count"])) if row else (0, 0)


def _compact_delta(table: Table, strategy: str, cols: list[str], target: int, where: str | None) -> tuple[int, int]:
    from delta.tables import DeltaTable

    spark = table.catalog.session()
    conf = {
        "spark.databricks.delta.optimize.maxFileSize": str(target),
        "spark.databricks.delta.optimize.minFileSize": str(int(target * SMALL_FILE_RATIO)),
    }
    with spark_errors("compact", table.entry.ident), spark_conf(spark, conf):
        builder = DeltaTable.forPath(spark, table.location).optimize()
        if where is not None:
            builder = builder.where(where)  # Delta itself refuses predicates on non-partition columns
        df = builder.executeZOrderBy(*cols) if strategy == "zorder" else builder.executeCompaction()
        row = df.first()
    metrics = row["metrics"] if row else None
    return (int(metrics["numFilesRemoved"]), int(metrics["numFilesAdded"])) if metrics else (0, 0)


# --- expiry ------------------------------------------------------------------------------------
def expire(
    table: Table,
    *,
    older_than: str | timedelta | None = None,
    retain_last: int | None = None,
    dry_run: bool = False,
    force: bool = False,
) -> ExpireResult:
    """Expire old versions and delete the files only they reference. See ``Table.expire``."""
    started = time.monotonic()
    policy = _table_policy(table)
    if older_than is None and "lakecat.expire.older-than" in policy:
        older_than = policy["lakecat.expire.older-than"]
    if retain_last is None and "lakecat.expire.retain-last" in policy:
        retain_last = int(policy["lakecat.expire.retain-last"])
    window = _window(older_than, DEFAULT_EXPIRE_WINDOW, "--older-than")
    keep = 1 if retain_last is None else int(retain_last)
    if keep < 1:
        raise InvalidArgumentError("invalid --retain-last: must be at least 1 (the current version is always kept)")
    _check_floor(table.format, window, force, "expire")
    fn = _expire_iceberg if table.format == "iceberg" else _expire_delta
    res, retries = with_retries(lambda: fn(table, window, keep, dry_run, force), what=f"expire {table.name}")
    res.retries = retries
    res.duration_s = round(time.monotonic() - started, 3)
    return res


def _iceberg_reachable(tbl: Any, snapshots: list[Any]) -> tuple[dict[str, int], dict[str, int]]:
    """Live content files and manifests (path -> size) referenced by ``snapshots``."""
    files: dict[str, int] = {}
    manifests: dict[str, int] = {}
    for snap in snapshots:
        for m in snap.manifests(tbl.io):
            if m.manifest_path in manifests:
                continue
            manifests[m.manifest_path] = int(m.manifest_length)
            for entry in m.fetch_manifest_entry(tbl.io, discard_deleted=True):
                files[entry.data_file.file_path] = int(entry.data_file.file_size_in_bytes)
    return files, manifests


def _expire_iceberg(table: Table, window: timedelta, keep: int, dry_run: bool, force: bool) -> ExpireResult:
    table.refresh()
    tbl = table.adapter.load(table.entry)  # type: ignore[attr-defined]
    meta = tbl.metadata
    now = _now()
    cutoff = now - window
    cutoff_ms = int(cutoff.timestamp() * 1000)
    current = tbl.current_snapshot()
    by_id = {s.snapshot_id: s for s in meta.snapshots}
    ancestors: list[int] = []
    sid = current.snapshot_id if current else None
    while sid is not None and sid in by_id and len(ancestors) < keep:
        ancestors.append(sid)
        sid = by_id[sid].parent_snapshot_id
    refs = {ref.snapshot_id for ref in (meta.refs or {}).values()}
    kept_ids = set(ancestors) | refs | {s.snapshot_id for s in meta.snapshots if s.timestamp_ms >= cutoff_ms}
    expired = [s for s in sorted(meta.snapshots, key=lambda s: s.timestamp_ms) if s.snapshot_id not in kept_ids]
    retained = [s for s in sorted(meta.snapshots, key=lambda s: s.timestamp_ms) if s.snapshot_id in kept_ids]
    gone_files: dict[str, int] = {}
    if expired:
        old_files, old_manifests = _iceberg_reachable(tbl, expired)
        live_files, live_manifests = _iceberg_reachable(tbl, retained)
        gone_files = {p: s for p, s in old_files.items() if p not in live_files}
        gone_files.update({p: s for p, s in old_manifests.items() if p not in live_manifests})
        for s in expired:
            if s.manifest_list:
                gone_files.setdefault(s.manifest_list, 0)
    result = ExpireResult(
        table=table.name, format="iceberg", expired_versions=[s.snapshot_id for s in expired],
        retained_versions=[s.snapshot_id for s in retained], deleted_files=len(gone_files),
        deleted_bytes=sum(gone_files.values()), older_than=format_duration(window), retain_last=keep,
        cutoff=iso(cutoff), forced=force, dry_run=dry_run, files=sorted(gone_files),
    )  # fmt: skip
    if dry_run or not expired:
        return result
    spark = table.catalog.session()
    args = [f"table => {_iceberg_ident_arg(table)}", f"older_than => {_sql_timestamp(cutoff)}", f"retain_last => {int(keep)}"]
    with spark_errors("expire", table.entry.ident):
        row = spark.sql(f"CALL {_procedure(table, 'expire_snapshots')}({', '.join(args)})").first()
    if row is not None:
        result.deleted_files = sum(int(v or 0) for v in row.asDict().values())
    table.refresh()
    after = table.adapter.load(table.entry).metadata  # type: ignore[attr-defined]
    remaining = {s.snapshot_id for s in after.snapshots}
    result.expired_versions = [s.snapshot_id for s in expired if s.snapshot_id not in remaining]
    result.retained_versions = [s.snapshot_id for s in sorted(after.snapshots, key=lambda s: s.timestamp_ms)]
    return result


# Delta ------------------------------------------------------------------------------------------
_LOG_FILE = re.compile(r"(\d{20})\.(json|crc|checkpoint(?:\.\d+\.\d+)?(?:\.[0-9a-f-]+)?\.parquet)\Z")
_COMPACTED = re.compile(r"(\d{20})\.(\d{20})\.compacted\.json\Z")


@dataclass
class _LogEntry:
    version: int
    name: str
    path: str
    mtime_ms: int


def _delta_log(table: Table) -> list[_LogEntry]:
    from pyarrow import fs

    filesystem, base = _fs_for(table.location.rstrip("/") + "/_delta_log")
    try:
        infos = filesystem.get_file_info(fs.FileSelector(base, recursive=False))
    except FileNotFoundError as e:
        raise LakecatError(f"table {table.name}: no Delta log at {table.location}") from e
    out = []
    for info in infos:
        name = info.base_name.lstrip(".")
        m = _LOG_FILE.match(name) or _COMPACTED.match(name)
        if not m or info.type != fs.FileType.File:
            continue
        version = int(m.group(2)) if _COMPACTED.match(name) else int(m.group(1))  # compacted: its last version
        mtime = int(info.mtime.timestamp() * 1000) if info.mtime else 0
        out.append(_LogEntry(version, info.base_name, info.path, mtime))
    return out


def _delta_commit_times(entries: list[_LogEntry]) -> dict[int, int]:
    """version -> commit time (ms): the commit file's modification time, made monotonic like Delta does."""
    times: dict[int, int] = {}
    for e in sorted(entries, key=lambda e: e.version):
        if e.name == f"{e.version:020d}.json":
            times[e.version] = e.mtime_ms
    last = -1
    for v in sorted(times):
        times[v] = last = max(times[v], last + 1)
    return times


def _delta_log_actions(table: Table, entries: list[_LogEntry], first: int, last: int) -> tuple[set[str], set[str]]:
    """Normalized paths added and removed by the commits ``first..last`` (inclusive) still in the log."""
    base = table.location.rstrip("/")
    added: set[str] = set()
    removed: set[str] = set()
    filesystem, _ = _fs_for(table.location)
    for e in entries:
        if not first <= e.version <= last or e.name != f"{e.version:020d}.json":
            continue
        with filesystem.open_input_stream(e.path) as fh:
            for line in fh.read().decode("utf-8").splitlines():
                if '"add"' not in line and '"remove"' not in line:
                    continue
                action = json.loads(line)
                for kind, bucket in (("add", added), ("remove", removed)):
                    if kind in action:
                        path = action[kind]["path"]
                        bucket.add(norm_path(path if "://" in path else f"{base}/{path}"))
    return added, removed


def _vacuum(table: Table, hours: int, *, dry_run: bool) -> list[str]:
    """Run Delta VACUUM (FULL) with its safety check off for this call only (the caller checked the floor)."""
    spark = table.catalog.session()
    from .formats.delta import spark_path

    sql = f"VACUUM {spark_path(table.location)} RETAIN {max(int(hours), 0)} HOURS{' DRY RUN' if dry_run else ''}"
    conf = {
        "spark.databricks.delta.retentionDurationCheck.enabled": "false",
        "spark.databricks.delta.vacuum.logging.enabled": "false",  # no VACUUM START/END commits in the history
        # VACUUM lists the table with this many tasks per pass (Spark's default: 10,000 — minutes for a tiny table)
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(max(8, spark.sparkContext.defaultParallelism * 4)),
    }
    with spark_errors("vacuum", table.entry.ident), spark_conf(spark, conf):
        rows = spark.sql(sql).collect()
    if not dry_run:
        return []
    return [r["path"] for r in rows if not _local_dir(r["path"])]  # empty directories (e.g. _change_data/) are not files


def _local_dir(path: str) -> bool:
    from urllib.parse import unquote, urlparse

    parsed = urlparse(path)
    if parsed.scheme not in ("", "file"):
        return False
    return Path(unquote(parsed.path)).is_dir()


def _vacuum_hours(window: timedelta) -> int:
    """VACUUM's RETAIN in whole hours, rounded up (Delta rounds a fraction to the nearest hour: never shorter)."""
    return math.ceil(window.total_seconds() / 3600 - 1e-9)


def _expire_delta(table: Table, window: timedelta, keep: int, dry_run: bool, force: bool) -> ExpireResult:
    """Delta: delete the data files only expired versions read, then truncate the log before the oldest kept.

    The files are computed from the log rather than left to VACUUM: VACUUM's RETAIN rounds to whole
    hours (so a window derived from ``retain_last`` cannot be expressed exactly) and VACUUM FULL would
    also delete untracked files a concurrent writer has not committed yet.
    """
    from deltalake import DeltaTable

    table.refresh()
    dt = table.adapter.load(table.entry)  # type: ignore[attr-defined]
    current = dt.version()
    entries = _delta_log(table)
    times = _delta_commit_times(entries)
    now = _now()
    cutoff = now - window
    cutoff_ms = int(cutoff.timestamp() * 1000)
    available = sorted(v for v in times if v <= current)
    recent = [v for v in available if times[v] >= cutoff_ms]
    oldest_kept = min([current - keep + 1, *(recent[:1] or [current])])
    oldest_kept = max(oldest_kept, available[0] if available else 0)
    expired = [v for v in available if v < oldest_kept]
    retained = [v for v in available if v >= oldest_kept]
    doomed: dict[str, int] = {}
    if expired:
        needed = {norm_path(u) for u in DeltaTable(table.location, version=oldest_kept).file_uris()}
        later_adds, _ = _delta_log_actions(table, entries, oldest_kept + 1, current)
        needed |= later_adds
        earliest = {norm_path(u) for u in DeltaTable(table.location, version=expired[0]).file_uris()}
        adds, removes = _delta_log_actions(table, entries, expired[0] + 1, oldest_kept)
        doomed = file_sizes(sorted((earliest | adds | removes) - needed))
    result = ExpireResult(
        table=table.name, format="delta", expired_versions=expired, retained_versions=retained,
        deleted_files=len(doomed), deleted_bytes=sum(doomed.values()), older_than=format_duration(window),
        retain_last=keep, cutoff=iso(cutoff), forced=force, dry_run=dry_run, files=sorted(doomed),
    )  # fmt: skip
    if dry_run or not expired:
        return result
    filesystem, _ = _fs_for(table.location)
    gone = []
    for path in doomed:
        try:
            fs_, p = _fs_for(path)
            fs_.delete_file(p)
            gone.append(path)
        except FileNotFoundError:
            continue
        head, _, name = p.rpartition("/")
        with contextlib.suppress(OSError):
            fs_.delete_file(f"{head}/.{name}.crc")  # Hadoop's checksum sidecar
    result.deleted_files, result.deleted_bytes = len(gone), sum(doomed[g] for g in gone)
    result.log_truncated_before = _truncate_delta_log(table, oldest_kept)
    return result


def _truncate_delta_log(table: Table, oldest_kept: int) -> int | None:
    """Make versions before ``oldest_kept`` unreadable: a checkpoint at it, then the older log files go.

    This is what Delta's own log cleanup does at checkpoint time once ``delta.logRetentionDuration``
    (30 days by default, cut off at day boundaries) has passed; lakecat does it for the window asked.
    """
    from deltalake import DeltaTable

    entries = _delta_log(table)
    has_checkpoint = any(e.version == oldest_kept and ".checkpoint" in e.name for e in entries)
    try:
        if not has_checkpoint:
            DeltaTable(table.location, version=oldest_kept).create_checkpoint()
        last = _read_last_checkpoint(table)
        if last is not None and last < oldest_kept:
            DeltaTable(table.location, version=oldest_kept).create_checkpoint()
    except Exception as e:  # noqa: BLE001 - keep every version rather than risk an unreadable log
        log.warning("table %s: no checkpoint at version %d (%s); the log is left whole", table.name, oldest_kept, e)
        return None
    filesystem, _ = _fs_for(table.location)
    for e in entries:
        if e.version < oldest_kept:
            with contextlib.suppress(FileNotFoundError):
                filesystem.delete_file(e.path)
    return oldest_kept


def _read_last_checkpoint(table: Table) -> int | None:
    filesystem, base = _fs_for(table.location.rstrip("/") + "/_delta_log/_last_checkpoint")
    try:
        with filesystem.open_input_stream(base) as fh:
            return int(json.loads(fh.read().decode("utf-8"))["version"])
    except (FileNotFoundError, KeyError, ValueError, OSError):
        return None


# --- orphans -----------------------------------------------------------------------------------
def clean_orphans(
    table: Table, *, older_than: str | timedelta | None = None, dry_run: bool = False, force: bool = False
) -> OrphanResult:
    """Delete files in the table's directory that no version references and that are older than the window."""
    started = time.monotonic()
    policy = _table_policy(table)
    if older_than is None and "lakecat.orphans.older-than" in policy:
        older_than = policy["lakecat.orphans.older-than"]
    window = _window(older_than, DEFAULT_ORPHAN_WINDOW[table.format], "--older-than")
    _check_floor(table.format, window, force, "clean orphan files")
    table.refresh()
    table.adapter.load(table.entry)  # type: ignore[attr-defined] # a missing table fails here, in one line
    cutoff = _now() - window

    def run() -> OrphanResult:
        if table.format == "iceberg":
            found = _iceberg_orphans(table, cutoff, dry_run=True)
        else:
            found = _vacuum(table, _vacuum_hours(window), dry_run=True)
        sizes = file_sizes(found)
        res = OrphanResult(
            table=table.name, format=table.format, orphan_files=sorted(found), deleted_files=len(found),
            deleted_bytes=sum(sizes.values()), older_than=format_duration(window), cutoff=iso(cutoff),
            forced=force, dry_run=dry_run,
        )  # fmt: skip
        if dry_run or not found:
            return res
        if table.format == "iceberg":
            _iceberg_orphans(table, cutoff, dry_run=False)
        else:
            _vacuum(table, _vacuum_hours(window), dry_run=False)
        gone = [f for f in found if not _exists(f)]
        res.deleted_files, res.deleted_bytes = len(gone), sum(sizes.get(f, 0) for f in gone)
        return res

    res, retries = with_retries(run, what=f"clean-orphans {table.name}")
    res.retries = retries
    res.duration_s = round(time.monotonic() - started, 3)
    return res


class _KeepFile:
    """A java.util.function.Consumer that deletes nothing: Iceberg's action runs as a dry run."""

    def accept(self, path: str) -> None:  # noqa: ARG002 - called from the JVM
        return None

    class Java:
        implements = ["java.util.function.Consumer"]


def _iceberg_orphans(table: Table, cutoff: datetime, *, dry_run: bool) -> list[str]:
    spark = table.catalog.session()
    if _now() - cutoff >= timedelta(hours=24):
        args = [f"table => {_iceberg_ident_arg(table)}", f"older_than => {_sql_timestamp(cutoff)}",
                f"dry_run => {'true' if dry_run else 'false'}"]  # fmt: skip
        with spark_errors("clean-orphans", table.entry.ident):
            rows = spark.sql(f"CALL {_procedure(table, 'remove_orphan_files')}({', '.join(args)})").collect()
        return [r["orphan_file_location"] for r in rows]
    # The procedure refuses windows under 24 h outright; the caller passed force, so use the action API.
    jvm = spark._jvm
    jspark = spark._jsparkSession
    with spark_errors("clean-orphans", table.entry.ident):
        jtable = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            jspark, f"{quote(table.catalog.name)}.{table.entry.ident.quoted}"
        )
        action = jvm.org.apache.iceberg.spark.actions.SparkActions.get(jspark).deleteOrphanFiles(jtable)
        action = action.olderThan(int(cutoff.timestamp() * 1000))
        if dry_run:
            from pyspark.java_gateway import ensure_callback_server_started

            ensure_callback_server_started(spark.sparkContext._gateway)
            action = action.deleteWith(_KeepFile())
        result = action.execute()
        return [str(p) for p in result.orphanFileLocations()]


# --- metadata upkeep ---------------------------------------------------------------------------
def rewrite_metadata(table: Table, *, dry_run: bool = False, min_count: int = 2) -> MetadataResult:
    """Iceberg: merge manifests (``rewrite_manifests``). Delta: write a checkpoint, clean up expired log files."""
    started = time.monotonic()
    table.refresh()
    if table.format == "iceberg":
        tbl = table.adapter.load(table.entry)  # type: ignore[attr-defined]
        snap = tbl.current_snapshot()
        before = len(snap.manifests(tbl.io)) if snap else 0
        needed = before >= max(2, min_count)
        res = MetadataResult(table.name, "iceberg", "rewrite_manifests", needed, before, before,
                             f"{before} manifests in the current snapshot", dry_run)  # fmt: skip
        if dry_run or not needed:
            return res

        def run() -> None:
            spark = table.catalog.session()
            with spark_errors("rewrite manifests", table.entry.ident):
                spark.sql(f"CALL {_procedure(table, 'rewrite_manifests')}(table => {_iceberg_ident_arg(table)})").collect()

        _, res.retries = with_retries(run, what=f"rewrite manifests {table.name}")
        table.refresh()
        tbl = table.adapter.load(table.entry)  # type: ignore[attr-defined]
        snap = tbl.current_snapshot()
        res.after = len(snap.manifests(tbl.io)) if snap else 0
        res.detail = f"manifests {before} -> {res.after}"
    else:
        dt = table.adapter.load(table.entry)  # type: ignore[attr-defined]
        version = dt.version()
        last = _read_last_checkpoint(table)
        since = version - (last if last is not None else -1)
        needed = since >= max(1, min_count)
        res = MetadataResult(table.name, "delta", "checkpoint", needed, since, since,
                             f"{since} commits since the last checkpoint (version {last})", dry_run)  # fmt: skip
        if dry_run or not needed:
            return res
        try:
            dt.create_checkpoint()
            dt.cleanup_metadata()  # drops log files older than delta.logRetentionDuration (default 30 days)
        except Exception as e:  # noqa: BLE001 - delta-rs errors become one line
            raise LakecatError(f"checkpoint {table.name} failed: {first_line(str(e))}") from e
        res.after = 0
        res.detail = f"checkpoint written at version {version}; expired log files cleaned up"
    res.duration_s = round(time.monotonic() - started, 3)
    return res


# --- properties / policies ---------------------------------------------------------------------
def validate_policy(properties: dict[str, str]) -> dict[str, str]:
    """Check the values of ``lakecat.*`` policy properties (other keys pass through)."""
    props = validate_properties(properties)
    for k, v in props.items():
        kind = POLICY_KEYS.get(k)
        if kind is None:
            if k.startswith(("lakecat.compact.", "lakecat.expire.", "lakecat.orphans.", "lakecat.maintain.")):
                raise InvalidArgumentError(f"unknown maintenance property {k!r}: use one of {', '.join(POLICY_KEYS)}")
            continue
        try:
            if kind == "size":
                parse_size(v)
            elif kind == "duration":
                parse_duration(v)
            elif kind == "strategy" and v.lower() not in STRATEGIES:
                raise InvalidArgumentError(f"use {', '.join(STRATEGIES)}")
            elif kind == "columns":
                parse_columns(v)
            elif kind == "int" and (not str(v).strip().isdigit() or int(v) < 1):
                raise InvalidArgumentError("use a positive integer")
            elif kind == "bool" and str(v).lower() not in ("true", "false"):
                raise InvalidArgumentError("use true or false")
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"invalid value {v!r} for {k}: {e}") from None
    return props


def _table_policy(table: Table) -> dict[str, str]:
    """The ``lakecat.*`` properties of a table, from metadata (no JVM)."""
    try:
        if table.format == "iceberg":
            props = dict(table.adapter.load(table.refresh()).properties)  # type: ignore[attr-defined]
        else:
            props = dict(table.adapter.load(table.entry).metadata().configuration)  # type: ignore[attr-defined]
    except LakecatError:
        raise
    return {k: v for k, v in props.items() if k.startswith("lakecat.")}


def _policy_size(table: Table, explicit: int | str | None) -> int:
    if explicit is not None:
        return parse_size(explicit)
    value = _table_policy(table).get("lakecat.compact.target-file-size")
    return parse_size(value) if value else DEFAULT_TARGET_FILE_SIZE


def set_properties(table: Table, properties: dict[str, str] | None = None, *, unset: list[str] | tuple[str, ...] = ()) -> PropertiesResult:
    """Set (and unset) table properties — maintenance policies included — in the table's own metadata."""
    props = validate_policy(properties or {})
    removed = list(validate_properties({k: "" for k in unset}))
    if not props and not removed:
        raise InvalidArgumentError("nothing to change: give at least one key=value or a key to unset")
    if table.format == "iceberg":
        from pyiceberg.exceptions import CommitFailedException

        def commit() -> None:
            try:
                tbl = table.catalog.pyiceberg().load_table((table.entry.ident.namespace, table.entry.ident.name))
                with tbl.transaction() as tx:
                    if props:
                        tx.set_properties(props)
                    if removed:
                        tx.remove_properties(*removed)
            except CommitFailedException as e:
                raise CommitConflictError(f"alter {table.name}: commit conflict: {first_line(str(e))}") from e

        with_retries(commit, what=f"alter {table.name}")
    else:
        from .formats.delta import spark_path

        spark = table.catalog.session()
        name = spark_path(table.location)

        def commit() -> None:
            with spark_errors("alter", table.entry.ident):
                if props:
                    items = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in sorted(props.items()))
                    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({items})")
                if removed:
                    spark.sql(f"ALTER TABLE {name} UNSET TBLPROPERTIES IF EXISTS ({', '.join(sql_string(k) for k in removed)})")

        with_retries(commit, what=f"alter {table.name}")
    return PropertiesResult(table.name, table.format, dict(table.describe().properties))


# --- maintain ----------------------------------------------------------------------------------
def load_plan(path: str | Path | dict[str, Any] | None) -> dict[str, Any]:
    """Read a maintenance plan (TOML): ``[defaults]`` and ``[[tables]]`` entries with ``match``."""
    if path is None:
        return {}
    if isinstance(path, dict):
        raw = path
    else:
        try:
            raw = tomllib.loads(Path(path).read_text())
        except FileNotFoundError:
            raise InvalidArgumentError(f"plan file {path} not found") from None
        except tomllib.TOMLDecodeError as e:
            raise InvalidArgumentError(f"plan file {path} is not valid TOML: {e}") from None
    plan: dict[str, Any] = {"defaults": _flat_policy(raw.get("defaults", {}), "[defaults]"), "tables": []}
    for i, item in enumerate(raw.get("tables", [])):
        if not isinstance(item, dict) or not isinstance(item.get("match"), str):
            raise InvalidArgumentError(f"plan file: [[tables]] entry {i + 1} needs match = \"namespace.pattern\"")
        body = {k: v for k, v in item.items() if k != "match"}
        plan["tables"].append((item["match"], _flat_policy(body, f"[[tables]] {item['match']}")))
    unknown = set(raw) - {"defaults", "tables"}
    if unknown:
        raise InvalidArgumentError(f"plan file: unknown section(s) {', '.join(sorted(unknown))}: use [defaults] and [[tables]]")
    return plan


def _flat_policy(body: Any, where: str) -> dict[str, str]:
    if not isinstance(body, dict):
        raise InvalidArgumentError(f"plan file: {where} must be a table of settings")
    flat: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, list):
            flat[prefix] = ",".join(str(v) for v in value)
        elif isinstance(value, bool):
            flat[prefix] = "true" if value else "false"
        else:
            flat[prefix] = str(value)

    walk("", body)
    out: dict[str, str] = {}
    for k, v in flat.items():
        if k == "force":
            out["force"] = v
            continue
        key = k if k.startswith("lakecat.") else f"lakecat.{k}"
        if key not in POLICY_KEYS:
            raise InvalidArgumentError(f"plan file: unknown setting {k!r} in {where}")
        out[key] = v
    forced = out.pop("force", None)
    validate_policy(out)
    if forced is not None:
        out["force"] = forced
    return out


def resolve_policy(table: Table, plan: dict[str, Any]) -> dict[str, str]:
    """built-in defaults < plan [defaults] < table properties < plan [[tables]] entries that match (later wins)."""
    policy: dict[str, str] = dict(plan.get("defaults", {}))
    policy.update(_table_policy(table))
    for pattern, body in plan.get("tables", []):
        if fnmatch.fnmatchcase(table.name, pattern):
            policy.update(body)
    return policy


def maintain(
    catalog: Catalog,
    pattern: str | None = None,
    *,
    plan: str | Path | dict[str, Any] | None = None,
    dry_run: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> MaintainReport:
    """Run the maintenance each matching table's policy asks for; carry on past failures."""
    started = time.monotonic()
    loaded = load_plan(plan)
    entries = [e for e in catalog.metastore.list_entries() if pattern is None or fnmatch.fnmatchcase(str(e.ident), pattern)]
    reports: list[TableMaintenance] = []
    from .table import Table

    for i, entry in enumerate(entries):
        if progress is not None:
            progress(str(entry.ident), i, len(entries))
        reports.append(_maintain_one(Table(catalog, entry), loaded, dry_run))
    if progress is not None:
        progress("", len(entries), len(entries))
    failed = sum(r.status == "failed" for r in reports)
    skipped = sum(r.status == "skipped" for r in reports)
    return MaintainReport(
        pattern=pattern, plan=str(plan) if isinstance(plan, (str, Path)) else None, dry_run=dry_run, tables=reports,
        failed=failed, succeeded=len(reports) - failed - skipped, skipped=skipped,
        duration_s=round(time.monotonic() - started, 3),
    )  # fmt: skip


def _maintain_one(table: Table, plan: dict[str, Any], dry_run: bool) -> TableMaintenance:
    started = time.monotonic()
    report = TableMaintenance(table.name, table.format, "skipped")
    current = "policy"
    try:
        policy = resolve_policy(table, plan)
        report.policy = dict(policy)
        if policy.get("lakecat.maintain.enabled", "true").lower() == "false":
            report.actions.append(MaintainAction("all", "skipped", "lakecat.maintain.enabled=false"))
            return report
        force = policy.get("force", "false").lower() == "true"
        for current in ("compact", "expire", "clean-orphans", "rewrite-metadata"):
            action = _maintain_action(table, current, policy, dry_run, force)
            report.actions.append(action)
        ran = [a for a in report.actions if a.status in ("done", "would-run")]
        report.status = ("planned" if dry_run else "ok") if ran else "skipped"
    except Exception as e:  # noqa: BLE001 - one table's failure must not stop the others
        report.status = "failed"
        report.error = str(e) if isinstance(e, LakecatError) else f"internal error ({type(e).__name__}: {e})"
        report.error_type = e.type_name if isinstance(e, LakecatError) else "InternalError"
        report.actions.append(MaintainAction(current, "failed", report.error))
    finally:
        report.duration_s = round(time.monotonic() - started, 3)
    return report


def _maintain_action(table: Table, action: str, policy: dict[str, str], dry_run: bool, force: bool) -> MaintainAction:
    if action == "compact":
        strategy = policy.get("lakecat.compact.strategy", "binpack").lower()
        by = policy.get("lakecat.compact.by", "")
        min_files = int(policy.get("lakecat.compact.min-input-files", DEFAULT_MIN_INPUT_FILES))
        kw = {"strategy": strategy, "by": by if strategy != "binpack" else (),
              "target_file_size": policy.get("lakecat.compact.target-file-size")}  # fmt: skip
        plan = compact(table, dry_run=True, **kw)  # type: ignore[arg-type]
        if not any(p.files >= min_files for p in plan.partitions):
            return MaintainAction("compact", "skipped", f"no partition has {min_files} or more small files", plan.to_dict())
        if dry_run:
            return MaintainAction("compact", "would-run", f"{plan.files_rewritten} files in {len(plan.partitions)} partition(s)", plan.to_dict())
        return MaintainAction("compact", "done", "", compact(table, **kw).to_dict())  # type: ignore[arg-type]
    if action == "expire":
        kw = {"older_than": policy.get("lakecat.expire.older-than"),
              "retain_last": int(policy["lakecat.expire.retain-last"]) if "lakecat.expire.retain-last" in policy else None,
              "force": force}  # fmt: skip
        plan = expire(table, dry_run=True, **kw)  # type: ignore[arg-type]
        if not plan.expired_versions and not plan.deleted_files:
            return MaintainAction("expire", "skipped", "no version is old enough to expire", plan.to_dict())
        if dry_run:
            return MaintainAction("expire", "would-run", f"{len(plan.expired_versions)} versions, {plan.deleted_files} files", plan.to_dict())
        return MaintainAction("expire", "done", "", expire(table, **kw).to_dict())  # type: ignore[arg-type]
    if action == "clean-orphans":
        older = policy.get("lakecat.orphans.older-than")
        res = clean_orphans(table, older_than=older, dry_run=True, force=force)
        if not res.orphan_files:
            return MaintainAction("clean-orphans", "skipped", "no orphan files older than the window", res.to_dict())
        if dry_run:
            return MaintainAction("clean-orphans", "would-run", f"{len(res.orphan_files)} files", res.to_dict())
        return MaintainAction("clean-orphans", "done", "", clean_orphans(table, older_than=older, force=force).to_dict())
    threshold = DEFAULT_MAX_MANIFESTS if table.format == "iceberg" else DEFAULT_CHECKPOINT_EVERY
    res_m = rewrite_metadata(table, dry_run=True, min_count=threshold)
    if not res_m.needed:
        return MaintainAction("rewrite-metadata", "skipped", res_m.detail, res_m.to_dict())
    if dry_run:
        return MaintainAction("rewrite-metadata", "would-run", res_m.detail, res_m.to_dict())
    return MaintainAction("rewrite-metadata", "done", "", rewrite_metadata(table, min_count=threshold).to_dict())
