"""Table health for every format: figures from metadata, a verdict per table, and maintenance that follows it.

This module is format-neutral. Each adapter gathers its table's facts on the light path
(``TableFormat.health_facts``: pyiceberg manifests, the Delta log through delta-rs — no JVM); this module
turns them into figures (file-size distribution, deletes, versions, partition skew), judges them against
thresholds kept as table properties, and decides what ``maintain --auto`` runs.

Verdicts, most urgent first: ``compact`` (a partition is due: ``lakecat.smallfiles``, the rule ``compact`` and
``maintain`` follow too), ``purge`` (deletes — delete files, deletion vectors —
hide a large share of the rows: rewrite the files without them), ``cluster`` (a clustered table whose files' key
ranges overlap deeply: a selective read opens many files), ``expire`` (versions older than the expiry policy),
``clean`` (files were rewritten or expired longer ago than the orphan window and no orphan cleanup ran since), else
``healthy``.
"""

from __future__ import annotations

import bisect
import statistics
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import LakecatError, invalid
from .files import no_cyclic_gc
from .maintenance import DEFAULT_EXPIRE_WINDOW, maintain, matching_entries, resolve_policy
from .metastore import MaintenanceLog
from .results import FAIL_ON, HealthResult, MaintainResult, SizeBucket, TableHealth, VersionPoint
from .smallfiles import small_file_rule
from .units import format_duration, from_millis, human_size, iso, parse_duration, plural

if TYPE_CHECKING:
    from .formats.base import Commit, HealthFacts
    from .protocols import CatalogLike, TableLike

VERDICTS = ("compact", "purge", "cluster", "expire", "clean", "healthy")
DEFAULT_DELETED_ROWS_PERCENT = 10  # purge once deletes hide this share of the rows
DEFAULT_CLUSTERING_DEPTH = 4  # recluster once a key value may be in this many files on average
OVERLAP_SAMPLE = 4000  # files compared pairwise for a multi-key clustering depth (an evenly spaced sample beyond)
# Upper bounds of the file-size histogram (bytes): powers of four from 1 KiB to 1 GiB, then the rest.
SIZE_BUCKETS = tuple(1024 * 4**i for i in range(11))
TIMELINE_LIMIT = 200
_REWRITES = {"compact", "overwrite", "delete", "merge", "update", "restore", "replace"}
_ACTION_FOR = {
    "compact": "compact",
    "purge": "purge",
    "cluster": "cluster",
    "expire": "expire",
    "clean": "clean-orphans",
}


# --- thresholds ------------------------------------------------------------------------------------
def thresholds(table: TableLike, policy: dict[str, str]) -> dict[str, Any]:
    """The figures a verdict is judged against: table properties (``lakecat.health.*``, the expiry and
    orphan policies, the target file size), else the documented defaults."""
    rule = small_file_rule(policy)
    window = (
        parse_duration(policy["lakecat.expire.older-than"])
        if "lakecat.expire.older-than" in policy
        else DEFAULT_EXPIRE_WINDOW
    )
    orphans = (parse_duration(policy["lakecat.orphans.older-than"]) if "lakecat.orphans.older-than" in policy
               else table.adapter.default_orphan_window)  # fmt: skip
    return {
        "target_file_size": rule.target,
        "small_file_bytes": rule.small_bytes,
        "small_files": rule.min_files,  # small files in one partition that make it due (min-input-files)
        "due_rule": rule.describe() + " in one partition",
        "deleted_rows_percent": int(policy.get("lakecat.health.deleted-rows-percent", DEFAULT_DELETED_ROWS_PERCENT)),
        "clustering_depth": int(policy.get("lakecat.health.clustering-depth", DEFAULT_CLUSTERING_DEPTH)),
        "expire_older_than": format_duration(window),
        "expire_older_than_s": window.total_seconds(),
        "retain_last": int(policy.get("lakecat.expire.retain-last", 1)),
        "orphans_older_than": format_duration(orphans),
        "orphans_older_than_s": orphans.total_seconds(),
    }


# --- judging ---------------------------------------------------------------------------------------
def _histogram(sizes: list[int]) -> list[SizeBucket]:
    counts = [0] * (len(SIZE_BUCKETS) + 1)
    for size in sizes:
        i = next((i for i, bound in enumerate(SIZE_BUCKETS) if size <= bound), len(SIZE_BUCKETS))
        counts[i] += 1
    return [SizeBucket(SIZE_BUCKETS[i] if i < len(SIZE_BUCKETS) else None, n) for i, n in enumerate(counts)]


def _iso_ms(ms: int | None) -> str | None:
    return iso(from_millis(ms)) if ms is not None else None


def _judge_files(h: TableHealth, facts: HealthFacts) -> None:
    """Files, sizes, partitions and deletes."""
    sizes = [f.size for f in facts.files]
    h.data_files, h.data_bytes = len(sizes), sum(sizes)
    records = [f.records for f in facts.files]
    h.rows = sum(r for r in records if r is not None) if records and all(r is not None for r in records) else None
    h.median_file_bytes = int(statistics.median(sizes)) if sizes else 0
    h.file_sizes = _histogram(sizes)
    small_by_part: dict[str, int] = {}
    bytes_by_part: dict[str, int] = {}
    for f in facts.files:
        bytes_by_part[f.partition] = bytes_by_part.get(f.partition, 0) + f.size
        if f.size < h.small_file_bytes:
            small_by_part[f.partition] = small_by_part.get(f.partition, 0) + 1
    h.small_files = sum(small_by_part.values())
    h.compactable_small_files = sum(n for n in small_by_part.values() if n >= 2)
    h.max_partition_small_files = max(small_by_part.values(), default=0)
    h.partitions = len(bytes_by_part)
    if bytes_by_part:
        h.largest_partition_bytes = max(bytes_by_part.values())
        h.median_partition_bytes = int(statistics.median(bytes_by_part.values()))
        if h.partitions > 1 and h.median_partition_bytes:
            h.partition_skew = round(h.largest_partition_bytes / h.median_partition_bytes, 2)
    h.delete_files, h.delete_bytes, h.deleted_rows = facts.delete_files, facts.delete_bytes, facts.deleted_rows
    if h.rows:
        h.deleted_rows_ratio = round(min(1.0, facts.deleted_rows / h.rows), 4)


def _overlaps(boxes: list[tuple[tuple[Any, Any], ...]]) -> list[int]:
    """For each box (a (lower, upper) range per key), how many other boxes it overlaps on every key."""
    if len(boxes[0]) == 1:  # one key: the ranges that start after it ends or end before it starts do not overlap
        lowers = sorted(b[0][0] for b in boxes)
        uppers = sorted(b[0][1] for b in boxes)
        return [bisect.bisect_right(lowers, hi) - bisect.bisect_left(uppers, lo) - 1 for ((lo, hi),) in boxes]
    order = sorted(range(len(boxes)), key=lambda i: boxes[i][0][0])
    counts = [0] * len(boxes)
    for pos, i in enumerate(order):
        hi = boxes[i][0][1]
        for j in order[pos + 1 :]:
            if boxes[j][0][0] > hi:
                break
            if all(a[0] <= b[1] and b[0] <= a[1] for a, b in zip(boxes[i][1:], boxes[j][1:], strict=True)):
                counts[i] += 1
                counts[j] += 1
    return counts


def _judge_clustering(h: TableHealth, facts: HealthFacts) -> None:
    """How well a clustered table's files are clustered: files whose key ranges (column statistics) overlap another
    file's, and the average depth (files a value of the keys may be in, the file itself included)."""
    h.clustering = list(facts.clustering)
    if not facts.clustering:
        return
    boxes = [f.bounds for f in facts.files if f.bounds is not None]
    if len(boxes) < 2:  # no statistics of the keys: no figure; one file: nothing to overlap
        if boxes:
            h.overlapping_files, h.clustering_depth = 0, 1.0
        return
    try:
        step = max(1, len(boxes) // OVERLAP_SAMPLE) if len(boxes[0]) > 1 else 1
        sample = boxes[::step]
        counts = _overlaps(sample)
    except TypeError:  # bounds of a type that does not compare (a format's odd statistics): no figure
        return
    scale = (len(boxes) - 1) / (len(sample) - 1)
    h.overlapping_files = round(sum(c > 0 for c in counts) * len(boxes) / len(sample))
    h.clustering_depth = round(1 + scale * sum(counts) / len(sample), 2)


def _judge_versions(h: TableHealth, facts: HealthFacts, commits: list[Commit], th: dict[str, Any], now_ms: int,
                    last_expire: int | None) -> None:  # fmt: skip
    """How many versions, how old, how many expiry may remove, and the newest ones as a timeline.

    A version that was past the window when lakecat's maintenance last expired the table (``last_expire``, epoch ms)
    was expired then: it may stay listed a while (a Delta log is cut only an hour behind its readers), and is not
    expirable again."""
    h.versions = len(commits)
    if commits:
        h.oldest_version_at = _iso_ms(commits[0].timestamp_ms)
        h.oldest_version_age_s = round(max(0, now_ms - commits[0].timestamp_ms) / 1000, 3)
    kept = {c.version for c in commits[-th["retain_last"] :]} | {facts.current_version}
    cutoff_ms = now_ms - th["expire_older_than_s"] * 1000
    expired_ms = last_expire - th["expire_older_than_s"] * 1000 if last_expire is not None else None
    h.expirable_versions = sum(c.version not in kept and c.timestamp_ms < cutoff_ms
                               and (expired_ms is None or c.timestamp_ms >= expired_ms) for c in commits)  # fmt: skip
    h.old_version_files, h.old_version_bytes = facts.old_version_files, facts.old_version_bytes
    h.timeline = [
        VersionPoint(c.version, _iso_ms(c.timestamp_ms) or "", c.operation) for c in commits[-TIMELINE_LIMIT:]
    ]


def _judge_maintenance(
    h: TableHealth, table: TableLike, facts: HealthFacts, commits: list[Commit], runs: dict[tuple[str, str], int]
) -> tuple[int | None, int | None]:
    """Maintenance seen so far: the history's compactions and vacuums, lakecat's own record of every run.

    Returns:
        When expiry and orphan cleanup last ran (epoch ms, None: never).
    """
    compacted = [c.timestamp_ms for c in commits if c.operation == "compact"]
    last = {a: runs.get((table.name, a)) for a in ("compact", "expire", "clean-orphans")}
    last_compact = max([*compacted, *([last["compact"]] if last["compact"] else [])], default=None)
    vacuumed = [c.timestamp_ms for c in commits if c.operation == "vacuum"]
    last_clean = max([*vacuumed, *([last["clean-orphans"]] if last["clean-orphans"] else [])], default=None)
    h.last_compaction, h.last_expiry, h.last_orphan_cleanup = (
        _iso_ms(last_compact),
        _iso_ms(last["expire"]),
        _iso_ms(last_clean),
    )
    h.stream_last_commit = _iso_ms(facts.stream_commit_ms)
    return last["expire"], last_clean


def _reasons(h: TableHealth, facts: HealthFacts, commits: list[Commit], th: dict[str, Any], now_ms: int,
             last_expire: int | None, last_clean: int | None) -> dict[str, str]:  # fmt: skip
    """What calls for maintenance (verdict -> why), from the figures ``h`` holds already."""
    reasons: dict[str, str] = {}
    if h.max_partition_small_files >= th["small_files"]:  # the shared rule (lakecat.smallfiles)
        reasons["compact"] = (f"a partition holds {plural(h.max_partition_small_files, 'small file')}: due at "
                              f"{th['due_rule']} (lakecat.compact.min-input-files)")  # fmt: skip
    if h.rows and h.deleted_rows_ratio * 100 >= th["deleted_rows_percent"]:
        reasons["purge"] = (f"{facts.delete_kind or 'deletes'} hide {h.deleted_rows_ratio:.0%} of the rows "
                            f"(threshold {th['deleted_rows_percent']}%)")  # fmt: skip
    if h.clustering_depth is not None and h.clustering_depth >= th["clustering_depth"]:
        reasons["cluster"] = (f"the files' ranges of the clustering keys ({', '.join(h.clustering)}) overlap: a key value "
                              f"may be in {h.clustering_depth:g} files on average, {plural(h.overlapping_files or 0, 'file')} "
                              f"overlap another (threshold {th['clustering_depth']})")  # fmt: skip
    if h.expirable_versions:
        are = "is" if h.expirable_versions == 1 else "are"
        reasons["expire"] = (f"{plural(h.expirable_versions, 'version')} {are} older than {th['expire_older_than']} beyond the newest "
                             f"{th['retain_last']}; files only old versions reference hold {human_size(h.old_version_bytes)}")  # fmt: skip
    churn = [c.timestamp_ms for c in commits if c.operation in _REWRITES] + ([last_expire] if last_expire else [])
    since_clean = [t for t in churn if last_clean is None or t > last_clean]
    if since_clean and min(since_clean) < now_ms - th["orphans_older_than_s"] * 1000:
        reasons["clean"] = (f"files were rewritten or expired {format_duration(timedelta(seconds=int((now_ms - min(since_clean)) / 1000)))} ago and no "
                            "orphan cleanup ran since (failed writes leave files behind)")  # fmt: skip
    return reasons


def _next_due(facts: HealthFacts, commits: list[Commit], th: dict[str, Any], now_ms: int, last_expire: int | None,
              last_clean: int | None) -> int | None:  # fmt: skip
    """When time alone next changes the table's needs (epoch ms): the first version not yet past the expiry window
    that will pass it (one of the newest ``retain_last`` never does), the orphan window elapsing since the oldest
    rewrite no orphan cleanup followed. None: nothing changes with time alone."""
    window_ms = th["expire_older_than_s"] * 1000
    kept = {c.version for c in commits[-th["retain_last"] :]} | {facts.current_version}
    due = [
        int(c.timestamp_ms + window_ms)
        for c in commits
        if c.version not in kept and c.timestamp_ms >= now_ms - window_ms
    ]
    churn = [c.timestamp_ms for c in commits if c.operation in _REWRITES] + ([last_expire] if last_expire else [])
    since_clean = [t for t in churn if last_clean is None or t > last_clean]
    if since_clean and (clean_at := int(min(since_clean) + th["orphans_older_than_s"] * 1000)) > now_ms:
        due.append(clean_at)
    return min(due, default=None)


def judge(table: TableLike, facts: HealthFacts, policy: dict[str, str], runs: dict[tuple[str, str], int],
          now_ms: int | None = None) -> TableHealth:  # fmt: skip
    """Figures and a verdict from one table's facts, its policy and lakecat's record of maintenance runs."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    th = thresholds(table, policy)
    h = TableHealth(table.name, table.format, "healthy", "", thresholds=th, current_version=facts.current_version,
                    target_file_size=th["target_file_size"], small_file_bytes=th["small_file_bytes"],
                    delete_kind=facts.delete_kind)  # fmt: skip
    _judge_files(h, facts)
    _judge_clustering(h, facts)
    commits = sorted(facts.commits, key=lambda c: c.timestamp_ms)
    _judge_versions(h, facts, commits, th, now_ms, runs.get((table.name, "expire")))
    last_expire, last_clean = _judge_maintenance(h, table, facts, commits, runs)
    reasons = _reasons(h, facts, commits, th, now_ms, last_expire, last_clean)
    h.next_due = _iso_ms(_next_due(facts, commits, th, now_ms, last_expire, last_clean))
    h.needs = [v for v in VERDICTS if v in reasons]
    if h.needs:
        h.verdict = h.needs[0]
        h.reason = reasons[h.verdict] + "".join(f"; also {v}: {reasons[v]}" for v in h.needs[1:]) + "."
    else:
        h.reason = (f"{plural(h.data_files, 'file')} ({human_size(h.data_bytes)}), {plural(h.versions, 'version')}: nothing calls for "
                    "maintenance.")  # fmt: skip
    return h


def table_health(table: TableLike, *, policy: dict[str, str] | None = None,
                 runs: dict[tuple[str, str], int] | None = None) -> TableHealth:  # fmt: skip
    """One table's health from metadata alone (no JVM); a table whose metadata cannot be read is ``failed``."""
    started = time.monotonic()
    try:
        table.adapter.require("health", "health")
        with no_cyclic_gc():  # every manifest entry / add action of the table, as for compaction's plan
            facts = table.adapter.health_facts(table)
        if runs is None:
            runs = MaintenanceLog(table.catalog.metastore).last_runs()
        h = judge(table, facts, policy if policy is not None else resolve_policy(table, {}), runs)
    except LakecatError as e:
        if e.exit_code == 3:  # not supported: the caller's exit code, not one table's failure
            raise
        h = TableHealth(table.name, table.format, "failed", str(e), error=str(e), error_type=e.type_name)
    except Exception as e:  # noqa: BLE001 - one table's unreadable metadata must not stop the others
        msg = f"internal error ({type(e).__name__}: {e})"
        h = TableHealth(table.name, table.format, "failed", msg, error=msg, error_type="InternalError")
    h.duration_s = round(time.monotonic() - started, 3)
    return h


def health(catalog: CatalogLike, pattern: str | None = None, *, progress: Callable[[str, int, int], None] | None = None,
           allow_empty: bool = False) -> HealthResult:  # fmt: skip
    """The health of every table matching ``pattern`` (fnmatch, e.g. ``sales.*``), from metadata alone.

    Raises:
        NoTableMatchesError: ``pattern`` matches no table (a gate that judges nothing must not pass), unless
            ``allow_empty``.
    """
    started = time.monotonic()
    entries = matching_entries(catalog, pattern, allow_empty=allow_empty)
    runs = MaintenanceLog(catalog.metastore).last_runs()
    tables: list[TableHealth] = []
    for i, entry in enumerate(entries):
        if progress is not None:
            progress(str(entry.ident), i, len(entries))
        table = catalog.table_of(entry)
        if not table.adapter.supports("health"):
            why = f"health: not supported for {table.format} tables"
            tables.append(TableHealth(table.name, table.format, "unsupported", why))
            continue
        tables.append(table_health(table, runs=runs))
    counts: dict[str, int] = {}
    for h in tables:
        counts[h.verdict] = counts.get(h.verdict, 0) + 1
    return HealthResult(pattern, tables, counts, round(time.monotonic() - started, 3))


def check_fail_on(value: str | None) -> set[str]:
    """The verdicts that make ``health --fail-on VALUE`` exit 1."""
    if value is None:
        return set()
    if value not in FAIL_ON:
        raise invalid(f"invalid fail_on {value!r}: use compact, expire or any",
                      f"invalid --fail-on {value!r}: use compact, expire or any")  # fmt: skip
    return FAIL_ON[value]


# --- maintenance that follows the verdict ----------------------------------------------------------
def maintain_auto(
    catalog: CatalogLike,
    pattern: str | None = None,
    *,
    plan: str | Path | dict[str, Any] | None = None,
    dry_run: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    allow_empty: bool = False,
    engine: str | None = None,
) -> MaintainResult:
    """Run, per table, only what its health calls for (``maintain --auto``); carry on past failures (``engine`` as
    for ``maintain``).

    Each action is the one ``maintain`` runs, with the table's policy; the health verdict and its reason
    are the report's ``health`` entry of every table.
    """
    runs = MaintenanceLog(catalog.metastore).last_runs()

    def decide(table: TableLike, policy: dict[str, str]) -> tuple[list[str], dict[str, Any]]:
        h = table_health(table, policy=policy, runs=runs)
        if h.verdict == "failed":
            raise LakecatError(h.reason)
        actions = [_ACTION_FOR[n] for n in h.needs]
        if "cluster" in actions:  # reclustering rewrites every file: it merges small files and drops deletes too
            actions = [a for a in actions if a not in ("compact", "purge")]
        return actions, {"verdict": h.verdict, "reason": h.reason, "needs": h.needs}

    return maintain(
        catalog,
        pattern,
        plan=plan,
        dry_run=dry_run,
        progress=progress,
        decide=decide,
        allow_empty=allow_empty,
        engine=engine,
    )
