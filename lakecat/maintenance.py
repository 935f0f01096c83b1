"""Table maintenance for every format: compaction, version expiry, orphan cleanup, metadata upkeep, policies.

This module is format-neutral: it validates arguments, plans, applies policies and safety floors,
retries commit conflicts and reports; the work itself is the adapter's (``TableFormat.compact``,
``expire``, ``find_orphans``/``delete_orphans``, ``rewrite_metadata``). Every operation has a dry run
that changes nothing and says what would change; dry runs of compaction and expiry are computed from
metadata (pyiceberg / delta-rs). Expiry, orphan cleanup and metadata upkeep run on the light engine (pyiceberg /
delta-rs and lakecat's own file accounting, no JVM) or on Spark, as ``engine_for`` decides; each result says which.

Safety floors (a shorter window is refused unless ``force``, exit code 2) are the adapter's
``safety_floor``: Delta 7 days (Delta's own ``retentionDurationCheck``), Iceberg 24 hours (the rule
Iceberg's ``remove_orphan_files`` enforces; lakecat applies it to expiry as well).
"""

from __future__ import annotations

import fnmatch
import logging
import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .engine import (
    RETRY_ATTEMPTS,
    check_engine,
    java_message,
    light_or_spark,
    now,
    parse_expression,
    validate_properties,
    with_retries,
)
from .engine_choice import EngineChoice, choose_engine
from .errors import (
    CommitConflictError,
    InvalidArgumentError,
    LakecatError,
    NoTableMatchesError,
    NotExactError,
    UnsupportedOperationError,
    columns_note,
    did_you_mean,
    invalid,
)
from .files import DataFile, exists, file_sizes, no_cyclic_gc, norm_path
from .identifiers import parse_columns
from .maintenance_log import log_action
from .metastore import MaintenanceLog, ScopedPolicies
from .policy import STRATEGIES, load_plan, resolve_policy, table_policy, validate_policy
from .results import (
    CompactResult,
    ExpireResult,
    MaintainAction,
    MaintainResult,
    MetadataResult,
    OrphanResult,
    PartitionPlan,
    PropertiesResult,
    TableMaintenance,
)
from .smallfiles import DEFAULT_TARGET_FILE_SIZE, SmallFileRule, small_file_rule, small_groups
from .units import format_duration, iso, parse_duration, parse_size, parse_timestamp, plural
from .versions import check_predicate_columns

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .protocols import CatalogLike, TableLike

log = logging.getLogger(__name__)

DEFAULT_EXPIRE_WINDOW = timedelta(days=7)
AUTO_MIN_INPUT_FILES = 2  # the service's own tiers compact any partition with small files to share
MINOR_COMPACT_ATTEMPTS = 3  # a minor compaction that keeps conflicting with writers is left to the next pass
MAX_SCOPED_PARTITIONS = 500  # beyond this, a minor compaction's predicate would cost more than it narrows
UNPARTITIONED = "(unpartitioned)"
MAINTAIN_ACTIONS = ("compact", "expire", "clean-orphans", "rewrite-metadata")
# what only `maintain --auto` runs, when health calls for it: drop the rows deletes hide, recluster a clustered table
AUTO_ACTIONS = ("compact", "purge", "cluster", "expire", "clean-orphans", "rewrite-metadata")
COMPACT_SINCE = "compact-since"  # a policy entry the service sets for a minor compaction: data written after it
Decide = Callable[["TableLike", dict[str, str]], tuple[list[str], dict[str, Any]]]

_FORBIDDEN_IN_PREDICATE = (";", "--", "/*", "*/")


# --- shared helpers ----------------------------------------------------------------------------
def data_files(table: TableLike) -> list[DataFile]:
    """The live data files of the current version, with sizes and partitions, from metadata alone."""
    table.refresh()
    with no_cyclic_gc():
        return table.adapter.data_files(table)


def file_totals(table: TableLike) -> tuple[int, int]:
    """(live data files, their bytes) of the current version: the format's totals from metadata when it keeps
    them (no file list in memory), else counted from ``data_files``."""
    table.refresh()
    totals = table.adapter.file_totals(table)
    if totals is None:
        with no_cyclic_gc():
            files = table.adapter.data_files(table)
        totals = len(files), sum(f.size for f in files)
    return totals


def validate_predicate(spark: SparkSession, text: str | None, table: TableLike | None = None) -> str | None:
    """Check a ``--where`` predicate is exactly one Spark SQL expression (no statement tricks).

    With ``table``, the predicate is also resolved against the columns the format's compaction accepts
    (all of them, or only the partition columns), so a typo is a usage error, not an engine failure.
    """
    if text is None:
        return None
    pred = predicate_text(text)
    try:
        parse_expression(spark, pred)
    except Exception as e:  # noqa: BLE001 - any parser complaint is the user's predicate
        raise InvalidArgumentError(f"invalid where predicate {text!r}: {java_message(e)}") from None
    if table is not None:
        df = table.to_spark()
        allowed = table.adapter.compaction_predicate_columns(table)
        hint = ""
        if allowed is not None:
            hint = f" ({table.format} compaction takes predicates on partition columns only: {', '.join(allowed) or 'none'})"
            if not allowed:
                raise InvalidArgumentError(f"invalid where predicate {text!r}: {table.name} is not partitioned{hint}")
            # a fresh, empty frame: Spark would resolve a Filter on a column dropped by a select
            df = spark.createDataFrame([], df.select(*[f"`{c}`" for c in allowed]).schema)
        try:
            df.where(pred).schema  # noqa: B018 - analysis only, nothing runs
        except Exception as e:  # noqa: BLE001 - an unknown column or a type error in the user's predicate
            raise InvalidArgumentError(f"invalid where predicate {text!r}: {java_message(e)}{hint}") from None
    return pred


def predicate_text(text: str) -> str:
    """A ``--where`` predicate's text, stripped; refuses an empty one and statement tricks (``;``, comments)."""
    pred = str(text).strip()
    if not pred:
        raise InvalidArgumentError("invalid where predicate: it is empty")
    if any(tok in pred for tok in _FORBIDDEN_IN_PREDICATE):
        raise InvalidArgumentError(
            f"invalid where predicate {text!r}: ';' and SQL comments are not allowed in a predicate"
        )
    return pred


def _check_where(table: TableLike, where: str) -> None:
    """What the text and the metadata tell of a compaction's ``--where`` before a JVM starts: its form, the format's
    limit to partition columns, columns the table lacks (``validate_predicate`` checks it all on Spark after)."""
    predicate_text(where)
    allowed = table.adapter.compaction_predicate_columns(table)
    if allowed is None:
        check_predicate_columns(table, where, table.adapter.current_version(table))
        return
    hint = f" ({table.format} compaction takes predicates on partition columns only: {', '.join(allowed) or 'none'})"
    if not allowed:
        raise InvalidArgumentError(f"invalid where predicate {where!r}: {table.name} is not partitioned{hint}")
    try:
        check_predicate_columns(table, where, table.adapter.current_version(table), columns=allowed)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{e}{hint}") from None


def _window(text: str | timedelta | None, default: timedelta) -> timedelta:
    delta = parse_duration(text) if text is not None else default
    if delta.total_seconds() < 0:
        raise invalid("invalid older_than: must not be negative", "invalid --older-than: must not be negative")
    return delta


def _check_floor(table: TableLike, window: timedelta, force: bool, what: str) -> None:
    adapter = table.adapter
    floor = adapter.safety_floor
    if window < floor and not force:
        raise InvalidArgumentError(
            f"refusing to {what} with a window of {format_duration(window)}: shorter than the {adapter.name} safety floor "
            f"of {format_duration(floor)} ({adapter.safety_floor_reason}); pass force=True if no other job "
            "reads or writes this table"
        ).with_cli_terms({"force=True": "--force"})


def engine_for(table: TableLike, action: str, requested: str | None, policy: dict[str, str]) -> EngineChoice:
    """The engine that runs maintenance ``action`` on ``table``: the format's only one when it has one (a request for
    the other is noted in the reason), else ``choose_engine`` on the format's blockers and measure of the work."""
    requested = check_engine(requested)
    sole = table.adapter.sole_engine(table, action)
    if sole is not None:
        engine, why = sole
        if requested is not None and requested != engine:
            why += f"; engine={requested} was asked for, but there is no {requested.capitalize()} step for it"
        return EngineChoice(engine, why)
    blockers = table.adapter.light_blockers(table, action)
    work = table.adapter.light_work_bytes(table, action) if requested is None and not blockers else 0
    return choose_engine(table, action, requested=requested, work_bytes=work, policy=policy, blockers=blockers)


def _record_run(table: TableLike, action: str) -> None:
    """Note in the metastore that ``action`` ran on the table (``health`` shows it; best effort)."""
    try:
        MaintenanceLog(table.catalog.metastore).record(table.name, action, int(time.time() * 1000))
    except Exception as e:  # noqa: BLE001 - the maintenance itself succeeded
        log.warning("table %s: could not record the %s run (%s)", table.name, action, e)


# --- compaction --------------------------------------------------------------------------------
def _plan_compaction(files: list[DataFile], strategy: str, target: int, rule: SmallFileRule) -> list[PartitionPlan]:
    if strategy == "binpack":  # the small files of each partition that has two or more
        groups = small_groups(files, target)
    else:  # sort / zorder rewrite every file of a partition that has more than one
        groups = {}
        for f in files:
            groups.setdefault(f.partition, []).append(f)
    plans = []
    for part, chosen in sorted(groups.items()):
        if len(chosen) < 2:
            continue
        total = sum(f.size for f in chosen)
        due = rule.due(sum(1 for f in chosen if f.size < rule.small_bytes))
        plans.append(PartitionPlan(part or UNPARTITIONED, len(chosen), total, max(1, math.ceil(total / target)), due))
    return plans


def compact(
    table: TableLike,
    *,
    strategy: str = "binpack",
    by: list[str] | tuple[str, ...] | str = (),
    target_file_size: int | str | None = None,
    where: str | None = None,
    dry_run: bool = False,
    apply_deletes: bool = False,
    full: bool = False,
    since: datetime | None = None,
    engine: str | None = None,
    policy: dict[str, str] | None = None,
) -> CompactResult:
    """Rewrite small files into fewer, larger ones (optionally sorted or z-ordered). See ``Table.compact``.

    ``engine`` (``"light"``, ``"spark"``, None: lakecat chooses) is the engine that rewrites: a bin-pack of a table
    the light libraries write exactly, whose planned bytes are within ``lakecat.maintain.light-max-bytes``, runs
    without a JVM (pyiceberg / delta-rs); the rest on Spark (``lakecat.engine_choice``). A forced light run that
    cannot be done exactly raises ``UnsupportedOperationError`` (exit code 3) before anything is written. ``policy``
    is the resolved policy the limit is read from (``maintain``'s), else the table's own.

    ``since`` is the minor tier a service runs often: only the small files of the partitions that writes after that
    time (naive: UTC) added files to, in one commit, with fewer retries of a commit conflict (the next pass tries
    again); without it the whole table (the major tier).

    ``apply_deletes`` also rewrites files whose rows deletes hide (``maintain --auto`` when deletes call for it),
    so the engine runs even when no partition has small files to merge. On a clustered table the default
    strategy clusters by the table's own keys (strategy ``cluster``): the files that need it, every file with ``full``.
    """
    started = time.monotonic()
    adapter = table.adapter
    adapter.require("compact", "compact")
    requested = check_engine(engine)
    strategy, cols = _check_strategy(table, str(strategy).lower(), by)
    keys = list(adapter.layout(table).clustering.columns)
    if keys and strategy == "binpack":  # the table's declared layout: compaction keeps it clustered
        strategy, cols = "cluster", keys
    elif full:
        why = "is compacted by {}, which rewrites every file anyway" if keys else "has no clustering keys"
        raise invalid(
            f"full=True reclusters a clustered table by its own keys; {table.name} {why.format('strategy=')}",
            f"--full reclusters a clustered table by its own keys; {table.name} {why.format('--strategy')}",
        )
    target = _policy_size(table, target_file_size)
    policy = table_policy(table) if policy is None else policy
    # what sends the whole compaction to Spark before any plan: decided first, so a forced light run is refused
    # before a predicate starts a JVM
    spark_only = _spark_only(strategy, where, apply_deletes)
    choice: EngineChoice | None = None
    if spark_only:
        choice = choose_engine(table, "compact", requested=requested, work_bytes=0, policy=policy, blockers=spark_only)
    files_before = data_files(table)
    if where is not None:
        _check_where(table, where)
        where = validate_predicate(table.catalog.session(), where, table)
        matching = adapter.files_matching(table, where)  # type: ignore[arg-type]
        candidates = [f for f in files_before if norm_path(f.path) in matching]
    else:
        candidates = files_before
    recent = None if since is None else adapter.partitions_written_since(table, _utc(since))
    if recent is not None:
        candidates = [f for f in candidates if f.partition in recent]
    rule = small_file_rule(policy, target)
    plans = _plan_compaction(candidates, ("sort" if full else "binpack") if strategy == "cluster" else strategy, target,
                             rule)  # fmt: skip
    rewritten_est = sum(p.files for p in plans)
    bytes_before = sum(f.size for f in files_before)
    if choice is None:
        choice = choose_engine(table, "compact", requested=requested, work_bytes=sum(p.bytes for p in plans),
                               policy=policy)  # fmt: skip
    ran = [choice]  # the engine chosen, then the one a retry fell back to

    def result(**kw: Any) -> CompactResult:
        return CompactResult(
            table=table.name, format=table.format, strategy=strategy, by=cols, target_file_size=target, where=where,
            files_before=len(files_before), bytes_before=bytes_before, partitions=plans, full=full,
            since=iso(_utc(since)) if since is not None else None, engine=ran[-1].engine, engine_reason=ran[-1].reason,
            due_rule=rule.describe() + " in one partition",
            **kw,
        )  # fmt: skip

    if dry_run:
        return result(
            files_after=len(files_before) - rewritten_est + sum(p.estimated_output_files for p in plans),
            bytes_after=bytes_before, files_rewritten=rewritten_est,
            files_added=sum(p.estimated_output_files for p in plans), dry_run=True,
            duration_s=round(time.monotonic() - started, 3),
        )  # fmt: skip
    # nothing to do: do not start an engine job that commits an empty rewrite
    if not plans and not (apply_deletes or full):
        return result(files_after=len(files_before), bytes_after=bytes_before, files_rewritten=0, files_added=0,
                      dry_run=False, duration_s=round(time.monotonic() - started, 3))  # fmt: skip

    engine_started = time.monotonic()
    scope = where if recent is None else _recent_scope(where, recent, plans)

    def run() -> tuple[int, int]:
        if (
            ran[-1].engine == "light"
        ):  # the adapter plans again by the same rule at each try, on the version it commits to
            table.refresh()
            try:
                return adapter.light_compact(table, target, None if recent is None else set(recent))
            except NotExactError as e:  # the version a retry planned from has what only Spark rewrites exactly
                if requested == "light":
                    raise
                ran.append(EngineChoice("spark", f"{str(e).split(': ', 1)[-1]} (found after the engine was chosen)"))
        return adapter.compact(table, strategy, cols, target, scope, apply_deletes, full=full)

    (rewritten, added), retries = with_retries(
        run, what=f"compact {table.name}", attempts=RETRY_ATTEMPTS if since is None else MINOR_COMPACT_ATTEMPTS
    )
    engine_s = time.monotonic() - engine_started
    files_after, bytes_after = file_totals(table)
    _record_run(table, "compact")
    return result(
        files_after=files_after, bytes_after=bytes_after, files_rewritten=rewritten, files_added=added, dry_run=False,
        retries=retries, duration_s=round(time.monotonic() - started, 3),
        engine_s=round(engine_s, 3),
    )  # fmt: skip


def _spark_only(strategy: str, where: str | None, apply_deletes: bool) -> list[str]:
    """Why a compaction can only run on Spark whatever the table (empty: the light engine may run it)."""
    out = []
    if strategy != "binpack":
        out.append(f"only Spark runs a {strategy} compaction (sort, z-order and clustering rewrites)")
    if apply_deletes:
        out.append("only Spark applies deletes while it rewrites (purge)")
    if where is not None:
        out.append("a where predicate is evaluated by Spark")
    return out


def _check_strategy(table: TableLike, strategy: str, by: list[str] | tuple[str, ...] | str) -> tuple[str, list[str]]:
    """(strategy, columns) of a compaction, checked against the format and the table's columns."""
    adapter = table.adapter
    if strategy not in STRATEGIES:
        raise InvalidArgumentError(f"invalid strategy {strategy!r}: use binpack, sort or zorder")
    cols = parse_columns(by) if (by and (not isinstance(by, str) or by.strip())) else []
    if strategy in ("sort", "zorder") and not cols:
        raise invalid(f"strategy={strategy!r} needs by=[columns]", f"--strategy {strategy} needs --by COLS")
    if strategy == "binpack" and cols:
        raise invalid(
            "by= only applies to strategy='sort' or 'zorder'", "--by only applies to --strategy sort or zorder"
        )
    if strategy not in adapter.compact_strategies:
        others = [s for s in adapter.compact_strategies if s != "binpack"]
        raise UnsupportedOperationError(
            f"compact strategy={strategy!r}: not supported for {adapter.name} tables"
            + (f"; use strategy={' or '.join(map(repr, others))} with by=[columns]" if others else "")
        ).with_cli_terms({" or ".join(map(repr, others)): " or ".join(others), "with by=[columns]": "--by COLS"})
    if cols:  # every argument is checked against the table before deciding there is nothing to do
        known = [c.name for c in table.describe().schema]
        unknown = [c for c in cols if c not in known]
        if unknown:
            what = f"table {table.name} has no column {', '.join(unknown)}{columns_note(known)}"
            raise invalid(f"by: {what}", f"--by: {what}")
    return strategy, cols


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _recent_scope(where: str | None, recent: dict[str, str | None], plans: list[PartitionPlan]) -> str | None:
    """The minor tier's rewrite narrowed to the partitions it plans (with the caller's ``where``); not narrowed when
    a partition has no predicate or so many that the predicate would cost more than it saves."""
    chosen = [recent.get("" if p.partition == UNPARTITIONED else p.partition) for p in plans]
    if not chosen or None in chosen or len(chosen) > MAX_SCOPED_PARTITIONS:
        return where
    scope = " OR ".join(f"({c})" for c in sorted(set(c for c in chosen if c)))
    return scope if where is None else f"({where}) AND ({scope})"


# --- expiry ------------------------------------------------------------------------------------
def expire(
    table: TableLike,
    *,
    older_than: str | timedelta | None = None,
    retain_last: int | None = None,
    dry_run: bool = False,
    force: bool = False,
    engine: str | None = None,
    policy: dict[str, str] | None = None,
) -> ExpireResult:
    """Expire old versions and delete the files only they reference. See ``Table.expire``.

    ``engine`` ("light", "spark", None: lakecat chooses) and ``policy`` (the resolved policy ``maintain`` passes;
    default the table's own ``lakecat.*`` properties) decide which engine runs (``lakecat.engine_choice``)."""
    started = time.monotonic()
    table.adapter.require("expire", "expire")
    requested = check_engine(engine)
    policy = table_policy(table) if policy is None else policy
    if older_than is None and "lakecat.expire.older-than" in policy:
        older_than = policy["lakecat.expire.older-than"]
    if retain_last is None and "lakecat.expire.retain-last" in policy:
        retain_last = int(policy["lakecat.expire.retain-last"])
    window = _window(older_than, DEFAULT_EXPIRE_WINDOW)
    keep = 1 if retain_last is None else int(retain_last)
    if keep < 1:
        raise invalid(
            "invalid retain_last: must be at least 1 (the current version is always kept)",
            "invalid --retain-last: must be at least 1 (the current version is always kept)",
        )
    _check_floor(table, window, force, "expire")
    table.refresh()
    choice = engine_for(table, "expire", requested, policy)

    def run() -> ExpireResult:
        table.refresh()
        return table.adapter.expire(table, window, keep, dry_run, force, engine=choice.engine)

    res, retries = with_retries(run, what=f"expire {table.name}")
    if not dry_run:
        _record_run(table, "expire")
    res.retries = retries
    res.engine, res.engine_reason = choice.engine, choice.reason
    res.duration_s = round(time.monotonic() - started, 3)
    return res


# --- orphans -----------------------------------------------------------------------------------
def clean_orphans(
    table: TableLike,
    *,
    older_than: str | timedelta | None = None,
    dry_run: bool = False,
    force: bool = False,
    engine: str | None = None,
    policy: dict[str, str] | None = None,
) -> OrphanResult:
    """Delete files in the table's directory that no version references and that are older than the window
    (``engine`` and ``policy`` as for ``expire``)."""
    started = time.monotonic()
    adapter = table.adapter
    adapter.require("clean_orphans", "clean-orphans")
    requested = check_engine(engine)
    policy = table_policy(table) if policy is None else policy
    if older_than is None and "lakecat.orphans.older-than" in policy:
        older_than = policy["lakecat.orphans.older-than"]
    window = _window(older_than, adapter.default_orphan_window)
    _check_floor(table, window, force, "clean orphan files")
    table.refresh()
    adapter.current_version(table)  # a table whose metadata is gone fails here, in one line, before any engine work
    cutoff = now() - window
    choice = engine_for(table, "clean-orphans", requested, policy)

    def run() -> OrphanResult:
        found = adapter.find_orphans(table, cutoff, window, engine=choice.engine)
        sizes = file_sizes(found)
        res = OrphanResult(
            table=table.name, format=table.format, orphan_files=sorted(found), deleted_files=len(found),
            deleted_bytes=sum(sizes.values()), older_than=format_duration(window), cutoff=iso(cutoff),
            forced=force, dry_run=dry_run,
        )  # fmt: skip
        if dry_run or not found:
            return res
        adapter.delete_orphans(table, cutoff, window, engine=choice.engine)
        gone = [f for f in found if not exists(f)]
        res.deleted_files, res.deleted_bytes = len(gone), sum(sizes.get(f, 0) for f in gone)
        return res

    res, retries = with_retries(run, what=f"clean-orphans {table.name}")
    if not dry_run:
        _record_run(table, "clean-orphans")
    res.retries = retries
    res.engine, res.engine_reason = choice.engine, choice.reason
    res.duration_s = round(time.monotonic() - started, 3)
    return res


# --- metadata upkeep ---------------------------------------------------------------------------
def rewrite_metadata(
    table: TableLike,
    *,
    dry_run: bool = False,
    min_count: int = 2,
    engine: str | None = None,
    policy: dict[str, str] | None = None,
) -> MetadataResult:
    """The format's metadata upkeep: Iceberg merges manifests, Delta writes a checkpoint and cleans up its log
    (``engine`` and ``policy`` as for ``expire``)."""
    table.adapter.require("rewrite_metadata", "rewrite-metadata")
    requested = check_engine(engine)
    policy = table_policy(table) if policy is None else policy
    table.refresh()
    choice = engine_for(table, "rewrite-metadata", requested, policy)
    res = table.adapter.rewrite_metadata(table, dry_run, min_count, engine=choice.engine)
    res.engine, res.engine_reason = choice.engine, choice.reason
    return res


# --- properties / policies ---------------------------------------------------------------------
def _policy_size(table: TableLike, explicit: int | str | None) -> int:
    if explicit is not None:
        return parse_size(explicit)
    value = table_policy(table).get("lakecat.compact.target-file-size")
    return parse_size(value) if value else DEFAULT_TARGET_FILE_SIZE


def set_properties(
    table: TableLike,
    properties: dict[str, str] | None = None,
    *,
    unset: list[str] | tuple[str, ...] = (),
    engine: str | None = None,
    dry_run: bool = False,
) -> PropertiesResult:
    """Set (and unset) table properties — maintenance policies included — in the table's own metadata, in one commit:
    without a JVM where the light library makes the change exactly as Spark does (``engine`` as for ``create``).
    ``dry_run``: check the change and return the properties the table would have, committing nothing."""
    check_engine(engine)
    table.adapter.require("alter_properties", "alter")
    props = validate_policy(properties or {})
    removed = list(validate_properties({k: "" for k in unset}))
    if not props and not removed:
        raise InvalidArgumentError("nothing to change: give at least one key=value or a key to unset")
    adapter = table.adapter
    if dry_run:
        current = dict(table.describe().properties)
        would = {k: v for k, v in {**current, **props}.items() if k not in removed}
        return PropertiesResult(table.name, table.format, would, None, "dry run: nothing changed", dry_run=True)
    _, used, reason = light_or_spark(engine, f"alter {table.name}",
                                     lambda: adapter.set_properties_light(table, props, removed),
                                     lambda: adapter.set_properties_spark(table, props, removed))  # fmt: skip
    return PropertiesResult(table.name, table.format, dict(table.describe().properties), used, reason)


# --- maintain ----------------------------------------------------------------------------------
def matching_entries(catalog: CatalogLike, pattern: str | None, *, allow_empty: bool) -> list[Any]:
    """The catalog's entries whose ``namespace.table`` matches ``pattern`` (fnmatch; None: every table).

    Raises:
        NoTableMatchesError: nothing matches and not ``allow_empty``.
    """
    every = catalog.entries()
    entries = [e for e in every if pattern is None or fnmatch.fnmatchcase(str(e.ident), pattern)]
    if not entries and not allow_empty:
        if pattern is None:
            raise NoTableMatchesError(f"catalog {catalog.name!r} has no table (allow_empty=True accepts that)"
                                      ).with_cli_terms(_ALLOW_EMPTY)  # fmt: skip
        hint = did_you_mean(pattern, (str(e.ident) for e in every))
        raise NoTableMatchesError(f"no table matches {pattern!r} (allow_empty=True accepts that){hint}"
                                  ).with_cli_terms(_ALLOW_EMPTY)  # fmt: skip
    return entries


_ALLOW_EMPTY = {"allow_empty=True": "--allow-empty"}


def maintain(
    catalog: CatalogLike,
    pattern: str | None = None,
    *,
    plan: str | Path | dict[str, Any] | None = None,
    dry_run: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    decide: Decide | None = None,
    allow_empty: bool = False,
    engine: str | None = None,
) -> MaintainResult:
    """Run the maintenance each matching table's policy asks for; carry on past failures.

    ``engine`` ("light", "spark", None: lakecat chooses per step) is the engine of expiry, orphan cleanup and
    metadata upkeep (``lakecat.engine_choice``); each action's result says which ran and why.

    ``decide(table, policy)`` (``maintain --auto``: the table's health) narrows each table's actions to the
    ones it returns, with a note kept in the report; without it every action whose policy calls for it runs.
    Every action that ran (or was due and could not run) is kept in the catalog's maintenance log.
    A ``pattern`` that matches no table raises ``NoTableMatchesError`` unless ``allow_empty``. ``engine`` forces
    the engine of every compaction (``compact``'s), refused per table where the light engine cannot do it.
    """
    started = time.monotonic()
    engine = check_engine(engine)
    loaded = load_plan(plan)
    entries = matching_entries(catalog, pattern, allow_empty=allow_empty)
    scoped = ScopedPolicies(catalog.metastore).all()
    reports: list[TableMaintenance] = []
    for i, entry in enumerate(entries):
        if progress is not None:
            progress(str(entry.ident), i, len(entries))
        table = catalog.load_table(entry.ident)
        reports.append(maintain_table(table, loaded, dry_run=dry_run, decide=decide, scoped=scoped, engine=engine))
    if progress is not None:
        progress("", len(entries), len(entries))
    failed = sum(r.status == "failed" for r in reports)
    skipped = sum(r.status == "skipped" for r in reports)
    return MaintainResult(
        pattern=pattern, plan=str(plan) if isinstance(plan, (str, Path)) else None, dry_run=dry_run, tables=reports, auto=decide is not None,
        failed=failed, succeeded=len(reports) - failed - skipped, skipped=skipped,
        duration_s=round(time.monotonic() - started, 3),
    )  # fmt: skip


def maintain_table(
    table: TableLike,
    plan: dict[str, Any],
    *,
    dry_run: bool = False,
    decide: Decide | None = None,
    scoped: dict[str, dict[str, str]] | None = None,
    stop: threading.Event | None = None,
    source: str = "maintain",
    engine: str | None = None,
) -> TableMaintenance:
    """One table's maintenance (see ``maintain``); ``plan`` is a loaded plan (``load_plan``).

    Once ``stop`` is set, the step under way finishes and the table's later steps are left for the next run. A
    commit conflict that outlasts the retries skips its step to the next run (``skipped``, not ``failed``).
    """
    started = time.monotonic()
    report = TableMaintenance(table.name, table.format, "skipped")
    current, began = "policy", (time.time(), time.monotonic())
    try:
        policy = resolve_policy(table, plan, scoped=scoped)
        report.policy = {k: v for k, v in policy.items() if k not in (COMPACT_SINCE,)}
        if policy.get("lakecat.maintain.enabled", "true").lower() == "false":
            report.actions.append(MaintainAction("all", "skipped", "lakecat.maintain.enabled=false"))
            return report
        force = policy.get("force", "false").lower() == "true"
        wanted: tuple[str, ...] = MAINTAIN_ACTIONS
        if decide is not None:
            current = "health"
            chosen, report.health = decide(table, policy)
            if report.health.get("compact_since"):  # the service's minor tier
                policy[COMPACT_SINCE] = str(report.health["compact_since"])
            wanted = tuple(a for a in AUTO_ACTIONS if a in chosen)
            if source == "service":  # its minor and major tiers run below the due threshold, on their own schedule
                policy.setdefault("lakecat.compact.min-input-files", str(AUTO_MIN_INPUT_FILES))
            for skipped in (a for a in MAINTAIN_ACTIONS if a not in chosen):
                report.actions.append(
                    MaintainAction(skipped, "skipped", f"health does not call for it ({report.health['verdict']})")
                )
        for current in wanted:
            if stop is not None and stop.is_set():
                report.actions.append(MaintainAction(current, "skipped", "stopped before this step"))
                continue
            began = (time.time(), time.monotonic())
            try:
                action = _maintain_action(table, current, policy, dry_run, force, engine)
            except CommitConflictError as e:
                action = MaintainAction(current, "skipped", f"commit conflict, left to the next run: {e}")
                action.result = {"conflict": True}
            report.actions.append(action)
            if not dry_run and (action.status == "done" or (action.result or {}).get("conflict")):
                log_action(table, action, began, tier=_tier(action.action, policy), source=source)
        ran = [a for a in report.actions if a.status in ("done", "would-run")]
        report.status = ("planned" if dry_run else "ok") if ran else "skipped"
        if not dry_run and any(a.status == "done" for a in report.actions):
            table.adapter.after_commit(table)  # the one post-commit step (the mirrors follow), once for the pass
    except Exception as e:  # noqa: BLE001 - one table's failure must not stop the others
        report.status = "failed"
        report.error = str(e) if isinstance(e, LakecatError) else f"internal error ({type(e).__name__}: {e})"
        report.error_type = e.type_name if isinstance(e, LakecatError) else "InternalError"
        report.actions.append(MaintainAction(current, "failed", report.error))
        if not dry_run:
            log_action(table, report.actions[-1], began, tier=None, source=source)
    finally:
        report.duration_s = round(time.monotonic() - started, 3)
    return report


def _tier(action: str, policy: dict[str, str]) -> str | None:
    """A compaction's tier: minor (the partitions written since a time) or major (the whole table)."""
    return ("minor" if COMPACT_SINCE in policy else "major") if action == "compact" else None


def _rewrite_action(
    table: TableLike, action: str, policy: dict[str, str], dry_run: bool, engine: str | None
) -> MaintainAction:
    """``maintain --auto``'s purge (rewrite the files deletes hide rows of, without them) and cluster (recluster a
    clustered table whole): health found the need, so they run whatever the small-file plan says."""
    target, full = policy.get("lakecat.compact.target-file-size"), action == "cluster"
    if dry_run:
        what = "recluster every file by the table's keys" if full else "rewrite the files deletes hide rows of"
        plan = compact(table, dry_run=True, full=full, apply_deletes=not full, target_file_size=target, engine=engine,
                       policy=policy)  # fmt: skip
        return MaintainAction(action, "would-run", f"{what} ({_engine_note(plan)})", plan.to_dict())
    done = compact(table, full=full, apply_deletes=not full, target_file_size=target, engine=engine, policy=policy)
    return MaintainAction(action, "done", "", done.to_dict())


_ACTION_CAPABILITY = {
    "compact": "compact",
    "expire": "expire",
    "clean-orphans": "clean_orphans",
    "rewrite-metadata": "rewrite_metadata",
    "purge": "compact",
    "cluster": "compact",
}


def _engine_note(result: CompactResult | ExpireResult | OrphanResult | MetadataResult) -> str:
    """The engine a step ran (or would run) on and why, for its maintenance report."""
    return f"{result.engine} engine: {result.engine_reason}" if result.engine else ""


def _would_run_on(table: TableLike, action: str, engine: str | None, policy: dict[str, str],
                  planned: ExpireResult | OrphanResult | MetadataResult) -> None:  # fmt: skip
    """A due step's plan (made with lakecat's choice of engine, so a step with nothing to do never fails on a forced
    engine) says the engine it will run on when one is forced; a forced light run it cannot do is refused here."""
    if engine is not None:
        choice = engine_for(table, action, engine, policy)
        planned.engine, planned.engine_reason = choice.engine, choice.reason


def _maintain_action(
    table: TableLike, action: str, policy: dict[str, str], dry_run: bool, force: bool, engine: str | None = None
) -> MaintainAction:
    if not table.adapter.supports(_ACTION_CAPABILITY[action]):
        return MaintainAction(action, "skipped", f"not supported for {table.format} tables")
    if action in ("purge", "cluster"):
        return _rewrite_action(table, action, policy, dry_run, engine)
    if action == "compact":
        strategy = policy.get("lakecat.compact.strategy", "binpack").lower()
        by = policy.get("lakecat.compact.by", "")
        rule = small_file_rule(policy)
        kw: dict[str, Any] = {"strategy": strategy, "by": by if strategy != "binpack" else (),
              "target_file_size": policy.get("lakecat.compact.target-file-size"), "engine": engine, "policy": policy}  # fmt: skip
        if COMPACT_SINCE in policy:  # minor tier: small files of the partitions written since, binpacked
            kw = {**kw, "strategy": "binpack", "by": (), "since": parse_timestamp(policy[COMPACT_SINCE])}
        plan = compact(table, dry_run=True, **kw)  # type: ignore[arg-type]
        if not any(p.due for p in plan.partitions):
            return MaintainAction(
                "compact", "skipped", f"not due: no partition holds {rule.describe()}", plan.to_dict()
            )
        if dry_run:
            return MaintainAction(
                "compact",
                "would-run",
                f"{plural(plan.files_rewritten, 'file')} in {plural(len(plan.partitions), 'partition')} "
                f"({_engine_note(plan)})",
                plan.to_dict(),
            )
        return MaintainAction("compact", "done", "", compact(table, **kw).to_dict())  # type: ignore[arg-type]
    if action == "expire":
        older = policy.get("lakecat.expire.older-than")
        keep = int(policy["lakecat.expire.retain-last"]) if "lakecat.expire.retain-last" in policy else None
        kw_e: dict[str, Any] = {"older_than": older, "retain_last": keep, "force": force, "policy": policy}
        planned = expire(table, dry_run=True, **kw_e)
        if not planned.expired_versions and not planned.deleted_files:
            return MaintainAction("expire", "skipped", "no version is old enough to expire", planned.to_dict())
        _would_run_on(table, "expire", engine, policy, planned)
        kw_e["engine"] = engine
        if dry_run:
            return MaintainAction(
                "expire",
                "would-run",
                f"{plural(len(planned.expired_versions), 'version')}, {plural(planned.deleted_files, 'file')}; "
                + _engine_note(planned),
                planned.to_dict(),
            )
        done_e = expire(table, **kw_e)
        return MaintainAction("expire", "done", _engine_note(done_e), done_e.to_dict())
    if action == "clean-orphans":
        older = policy.get("lakecat.orphans.older-than")
        kw_o: dict[str, Any] = {"older_than": older, "force": force, "policy": policy}
        res = clean_orphans(table, dry_run=True, **kw_o)
        if not res.orphan_files:
            return MaintainAction("clean-orphans", "skipped", "no orphan files older than the window", res.to_dict())
        _would_run_on(table, "clean-orphans", engine, policy, res)
        kw_o["engine"] = engine
        if dry_run:
            return MaintainAction("clean-orphans", "would-run",
                                  f"{plural(len(res.orphan_files), 'file')}; {_engine_note(res)}", res.to_dict())  # fmt: skip
        done_o = clean_orphans(table, **kw_o)
        return MaintainAction("clean-orphans", "done", _engine_note(done_o), done_o.to_dict())
    threshold = table.adapter.metadata_upkeep_threshold
    kw_m: dict[str, Any] = {"min_count": threshold, "policy": policy}
    res_m = rewrite_metadata(table, dry_run=True, **kw_m)
    if not res_m.needed:
        return MaintainAction("rewrite-metadata", "skipped", res_m.detail, res_m.to_dict())
    _would_run_on(table, "rewrite-metadata", engine, policy, res_m)
    kw_m["engine"] = engine
    if dry_run:
        return MaintainAction(
            "rewrite-metadata", "would-run", f"{res_m.detail}; {_engine_note(res_m)}", res_m.to_dict()
        )
    done_m = rewrite_metadata(table, **kw_m)
    return MaintainAction("rewrite-metadata", "done", _engine_note(done_m), done_m.to_dict())
