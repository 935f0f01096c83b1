"""The maintenance service: ``lakecat maintain --auto --every 10m`` keeps a catalog's tables healthy until stopped.

Each pass reads every matching table's health from metadata (no JVM), queues the tables that need work by
urgency, and works through the queue on one Spark session — the process's own, or the configured engine — which
stays warm from pass to pass, within a budget (``max_minutes`` per pass, ``parallel`` tables at a time). Compaction
comes in two tiers: *minor* rewrites only the small files of partitions written since the last compaction (often,
cheap), *major* the whole table with the policy's strategy and deletes applied (when health calls for it, or once
per ``lakecat.compact.major-every``). Every action is kept in the catalog's maintenance log; a commit conflict with
a writer skips the action to the next pass. Setting the ``stop`` event finishes the step under way and ends the
service; nothing is ever half-committed, since every commit is atomic.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .engine import is_connect
from .errors import LakecatError, invalid
from .health import table_health
from .maintenance import AUTO_MIN_INPUT_FILES, maintain_table, matching_entries
from .maintenance_log import RETENTION, RunLog
from .metastore import MaintenanceLog, ScopedPolicies
from .metrics import ServiceExporter
from .policy import load_plan, resolve_policy
from .policy_admin import DEFAULT_MAJOR_EVERY
from .results import MaintainAction, Result, TableHealth, TableMaintenance
from .spark import active_session
from .units import from_millis, iso, parse_duration, parse_timestamp

if TYPE_CHECKING:
    from .protocols import CatalogLike

log = logging.getLogger(__name__)

MIB = 2**20


@dataclass(frozen=True)
class ServiceOptions:
    """How the service runs: which tables, how often, within which budget."""

    pattern: str | None = None
    every: timedelta = timedelta(minutes=10)
    max_minutes: float | None = None  # per pass; the tables left over wait for the next pass
    parallel: int = 1  # tables worked on at a time (Spark jobs share one session)
    plan: str | Path | None = None

    def check(self) -> ServiceOptions:
        if self.every.total_seconds() <= 0:
            raise invalid("invalid every: must be longer than 0s", "invalid --every: must be longer than 0s")
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise invalid("invalid max_minutes: must be a positive number",
                          "invalid --max-minutes: must be a positive number")  # fmt: skip
        if self.parallel < 1:
            raise invalid("invalid parallel: must be at least 1", "invalid --parallel: must be at least 1")
        return self


@dataclass
class QueueItem:
    """A table that needs work, what to run on it, and how urgent it is."""

    table: str
    urgency: float
    actions: list[str]
    verdict: str
    reason: str
    tier: str | None = None  # of its compaction
    since: str | None = None  # minor tier: compact the partitions written after this


@dataclass
class PassResult(Result):
    """One pass: how many tables were read, queued, worked on, left over, and the runs' outcomes."""

    number: int
    started: str
    seconds: float = 0.0
    tables: int = 0
    queued: int = 0
    worked: int = 0
    deferred: int = 0  # queued but not reached: the budget was spent, or the service was stopped
    runs: dict[str, int] = field(default_factory=lambda: {"ok": 0, "failed": 0, "skipped": 0})
    bytes_rewritten: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    #: Tables whose health was computed this pass (their commit pointer moved, or a window came due, or their policy
    #: or maintenance runs changed), and tables judged unchanged since the pass that last computed it (no health read).
    evaluated: int = 0
    unchanged: int = 0
    error: str | None = None  # the pass itself failed (say, the metastore did not answer); the next one tries again


@dataclass
class ServiceResult(Result):
    """What the service did until it was stopped."""

    passes: int = 0
    runs: dict[str, int] = field(default_factory=lambda: {"ok": 0, "failed": 0, "skipped": 0})
    bytes_rewritten: int = 0
    seconds: float = 0.0
    stopped_by: str | None = None
    last_pass: PassResult | None = None
    #: Over every pass: health computations, and tables passed over as unchanged.
    evaluated: int = 0
    unchanged: int = 0


@dataclass
class _Judged:
    """A table's health as last computed, and what it was computed from: the table's commit pointer, the policy layers
    kept in the metastore, lakecat's record of the table's runs; ``due_ms``: when time alone changes it."""

    pointer: str
    inputs: tuple[Any, ...]
    policy: dict[str, str]
    health: TableHealth | None  # None: maintenance is disabled by the policy
    due_ms: int | None


def urgency(h: TableHealth) -> float:
    """How urgent a table's maintenance is: its small-file and deleted-row shares, weighted by the table's size (a
    big table's small files cost more reads), plus a step for each maintenance that health calls for."""
    size_weight = 1 + math.log10(1 + h.data_bytes / MIB)
    small_share = h.compactable_small_files / h.data_files if h.data_files else 0.0
    score = size_weight * (small_share + (h.deleted_rows_ratio or 0.0))
    score += ("compact" in h.needs) + 0.5 * ("expire" in h.needs) + 0.25 * ("clean" in h.needs)
    score += min(1.0, h.old_version_bytes / 2**30) if "expire" in h.needs else 0.0
    return round(score, 4)


def _newest_data_ms(h: TableHealth) -> int | None:
    """When the table last received data (a commit that is not a compaction), from its timeline."""
    stamps = [parse_timestamp(p.timestamp).timestamp() for p in h.timeline if p.operation != "compact" and p.timestamp]
    return int(max(stamps) * 1000) if stamps else None


def plan_item(h: TableHealth, policy: dict[str, str], last_major_ms: int | None, now_ms: int, *,
              last_compact_started_ms: int | None = None) -> QueueItem | None:  # fmt: skip
    """What the service runs on one table this pass, or None when nothing is due.

    Health's needs run as ``maintain --auto`` runs them (its compaction is the major tier). When health does not
    call for a rewrite but small files share partitions, a major compaction runs once per
    ``lakecat.compact.major-every``, and in between a minor one whenever data arrived since the last compaction
    began (``last_compact_started_ms``, when the service knows it: a commit landing while a compaction ran is older
    than that compaction's own commit, and must not be passed over).
    """
    actions = ["clean-orphans" if n == "clean" else n for n in h.needs]
    if "cluster" in actions:  # reclustering rewrites every file: it merges small files and drops deletes too
        actions = [a for a in actions if a not in ("compact", "purge")]
    item = QueueItem(h.name, urgency(h), actions, h.verdict, h.reason)
    if "compact" in actions:
        item.tier = "major"
    elif not {"purge", "cluster"} & set(actions) and h.max_partition_small_files >= int(
        # the compaction step counts its input per partition: a table queued on its total would be skipped every pass
        policy.get("lakecat.compact.min-input-files", AUTO_MIN_INPUT_FILES)
    ):
        major_every = parse_duration(policy.get("lakecat.compact.major-every", DEFAULT_MAJOR_EVERY))
        newest = _newest_data_ms(h)
        last_compaction = int(parse_timestamp(h.last_compaction).timestamp() * 1000) if h.last_compaction else None
        if last_compaction is not None and last_compact_started_ms is not None:
            last_compaction = min(last_compaction, last_compact_started_ms)
        if last_major_ms is None or now_ms - last_major_ms >= major_every.total_seconds() * 1000:
            item.tier = "major"
        elif newest is not None and (last_compaction is None or newest > last_compaction):
            item.tier, item.since = "minor", iso(from_millis(last_compaction or last_major_ms))
        if item.tier:
            item.actions.insert(0, "compact")
            item.reason = f"{h.compactable_small_files} small files share partitions ({item.tier} compaction)"
    return item if item.actions else None


def without_futile(item: QueueItem | None, h: TableHealth, futile_ms: int | None) -> QueueItem | None:
    """``item`` without a purge or recluster that last rewrote nothing (at ``futile_ms``) when no data came since."""
    if item is None or futile_ms is None or (_newest_data_ms(h) or 0) >= futile_ms:
        return item
    item.actions = [a for a in item.actions if a not in ("purge", "cluster")]
    return item if item.actions else None


class Service:
    """The loop: passes every ``options.every`` until ``stop`` is set (see the module's description)."""

    def __init__(self, catalog: CatalogLike, options: ServiceOptions, *, stop: threading.Event | None = None,
                 metrics: ServiceExporter | None = None,
                 on_pass: Callable[[PassResult], None] | None = None) -> None:  # fmt: skip
        self.catalog = catalog
        self.options = options.check()
        self.plan = load_plan(options.plan)  # a bad plan is a usage error before the first pass
        self.stop = stop or threading.Event()
        self.metrics = metrics
        self.on_pass = on_pass
        self.result = ServiceResult()
        self._last_major: dict[str, int] | None = None
        self._compact_started: dict[str, int] = {}  # when each table's last compaction began (ms)
        # when a purge or recluster last rewrote nothing on a table (ms): the engine may keep a file it judges done
        # (a one-file Delta cluster keeps its deletion vector), and asking again before new data would change nothing
        self._futile: dict[str, int] = {}
        self._judged: dict[str, _Judged] = {}  # table -> its last health, reused while nothing it was judged on moved

    def run(self) -> ServiceResult:
        """Pass after pass until ``stop`` is set; returns what was done."""
        started = time.monotonic()
        number = 0
        while not self.stop.is_set():
            number += 1
            began = time.monotonic()
            self.run_pass(number)
            self.stop.wait(max(0.0, self.options.every.total_seconds() - (time.monotonic() - began)))
        self.result.seconds = round(time.monotonic() - started, 3)
        return self.result

    def run_pass(self, number: int) -> PassResult:
        """One pass: read health, queue, work within the budget, record; a failing pass is reported, not raised."""
        began = time.monotonic()
        p = PassResult(number, iso(from_millis(int(time.time() * 1000))) or "")
        try:
            queue = self._queue(p)
            p.queued = len(queue)
            self._work(queue, p, deadline=began + self.options.max_minutes * 60 if self.options.max_minutes else None)
            if number == 1 or number % 100 == 0:
                RunLog(self.catalog.metastore).prune(RETENTION)
        except Exception as e:  # noqa: BLE001 - the service outlives one bad pass; the next one tries again
            p.error = f"{type(e).__name__}: {e}"
            log.warning("maintenance pass %d failed: %s", number, p.error)
        p.seconds = round(time.monotonic() - began, 3)
        r = self.result
        r.passes, r.last_pass, r.bytes_rewritten = number, p, r.bytes_rewritten + p.bytes_rewritten
        r.evaluated, r.unchanged = r.evaluated + p.evaluated, r.unchanged + p.unchanged
        for k, n in p.runs.items():
            r.runs[k] = r.runs.get(k, 0) + n
        if self.metrics is not None:
            self.metrics.pass_done(p)
        if self.on_pass is not None:
            self.on_pass(p)
        return p

    def _queue(self, p: PassResult) -> list[QueueItem]:
        """Every matching table's health (light path), the due ones ordered by urgency, most urgent first."""
        pattern = self.options.pattern
        entries = matching_entries(self.catalog, pattern, allow_empty=True)
        scoped = ScopedPolicies(self.catalog.metastore).all()
        runs = MaintenanceLog(self.catalog.metastore).last_runs()
        runs_of: dict[str, list[tuple[str, int]]] = {}
        for (name, action), ms in sorted(runs.items()):
            runs_of.setdefault(name, []).append((action, ms))
        last_major = self._majors()
        now_ms = int(time.time() * 1000)
        queue: list[QueueItem] = []
        for gone in set(self._judged) - {str(e.ident) for e in entries}:  # dropped, or no longer matching
            del self._judged[gone]
        for entry in entries:
            if self.stop.is_set():
                break
            try:
                namespace = entry.ident.namespace
                inputs = (scoped.get(ScopedPolicies.CATALOG_SCOPE), scoped.get(namespace),
                          tuple(runs_of.get(str(entry.ident), ())))  # fmt: skip
                item = self._plan_one(entry, p, scoped=scoped, runs=runs, last_major=last_major, now_ms=now_ms,
                                      inputs=inputs)  # fmt: skip
            except Exception as e:  # a table dropped mid-pass, or unreadable: the other tables are still maintained
                log.warning("maintenance service: %s: %s", entry.ident, str(e).splitlines()[0] if str(e) else e)
                p.verdicts["failed"] = p.verdicts.get("failed", 0) + 1
                continue
            if item is not None:
                queue.append(item)
        queue.sort(key=lambda i: (-i.urgency, i.table))
        if self.metrics is not None:
            self.metrics.queued(len(queue), p.verdicts)
        return queue

    def _plan_one(self, entry: Any, p: PassResult, *, scoped: Any, runs: Any, last_major: dict[str, int],
                  now_ms: int, inputs: tuple[Any, ...] = ()) -> QueueItem | None:  # fmt: skip
        """One table's health and what is due on it (None: nothing, or a table health does not judge).

        The health is computed again only when the table's commit pointer moved since it was last computed, when its
        policy layers or maintenance runs (``inputs``) changed, or when a window it depends on came due; otherwise the
        last one serves (what is due is still decided now: a major compaction's interval, say)."""
        table = self.catalog.table_of(entry)
        if not table.adapter.supports("health"):
            return None
        p.tables += 1
        pointer = self._pointer(table)
        last = self._judged.get(table.name)
        if (last is not None and pointer is not None and last.pointer == pointer and last.inputs == inputs
                and (last.due_ms is None or now_ms < last.due_ms)):  # fmt: skip
            p.unchanged += 1
            policy, judged = last.policy, last.health
        else:
            p.evaluated += 1
            policy = resolve_policy(table, self.plan, scoped=scoped)
            judged = None
            if policy.get("lakecat.maintain.enabled", "true").lower() != "false":
                judged = table_health(table, policy=policy, runs=runs)
            if pointer is None or (judged is not None and judged.verdict == "failed"):
                self._judged.pop(table.name, None)  # judged again next pass
            else:
                due = parse_timestamp(judged.next_due) if judged is not None and judged.next_due else None
                self._judged[table.name] = _Judged(pointer, inputs, policy, judged,
                                                   int(due.timestamp() * 1000) if due else None)  # fmt: skip
        if judged is None:
            p.verdicts["disabled"] = p.verdicts.get("disabled", 0) + 1
            return None
        h = judged
        p.verdicts[h.verdict] = p.verdicts.get(h.verdict, 0) + 1
        if h.verdict == "failed":
            return None
        item = plan_item(h, policy, last_major.get(table.name), now_ms,
                         last_compact_started_ms=self._compact_started.get(table.name))  # fmt: skip
        return without_futile(item, h, self._futile.get(table.name))

    @staticmethod
    def _pointer(table: Any) -> str | None:
        """The table's commit pointer (``TableFormat.change_pointer``); None when it cannot be read (then health is
        computed, and says what is wrong)."""
        try:
            return table.adapter.change_pointer(table)
        except Exception as e:  # noqa: BLE001 - an unreadable pointer only means the table is judged in full
            log.debug("maintenance service: %s: no commit pointer (%s)", table.name, e)
            return None

    def _majors(self) -> dict[str, int]:
        """When each table's last major compaction began (from the run log at the first pass, then kept up here);
        the same read fills ``_compact_started``, the start of each table's last compaction of either tier."""
        if self._last_major is None:
            self._last_major = {}
            for run in reversed(RunLog(self.catalog.metastore).runs(action="compact")):
                started = int(parse_timestamp(run.started).timestamp() * 1000)
                if run.outcome == "ok":
                    self._compact_started[run.table] = started
                if run.tier == "major" and run.outcome == "ok":
                    self._last_major[run.table] = started
        return self._last_major

    def _work(self, queue: list[QueueItem], p: PassResult, deadline: float | None) -> None:
        """Work through the queue, ``parallel`` tables at a time; nothing new starts past ``deadline`` or a stop."""
        pending: set[Future[TableMaintenance | None]] = set()
        items = iter(queue)
        with ThreadPoolExecutor(max_workers=self.options.parallel, thread_name_prefix="lakecat-maintain") as pool:
            while True:
                while len(pending) < self.options.parallel and not self._over(deadline):
                    item = next(items, None)
                    if item is None:
                        break
                    pending.add(pool.submit(self._one, item))
                if not pending:
                    break
                done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                for f in done:
                    self._count(f.result(), p)
                if self.metrics is not None:
                    self.metrics.queue_depth(len(queue) - p.worked - len(pending))
        p.deferred = p.queued - p.worked
        if self.metrics is not None:
            self.metrics.queue_depth(0)

    def _over(self, deadline: float | None) -> bool:
        return self.stop.is_set() or (deadline is not None and time.monotonic() >= deadline)

    def _one(self, item: QueueItem) -> TableMaintenance:
        try:
            table = self.catalog.load_table(item.table)
        except LakecatError as e:  # dropped since the queue was made, say
            return TableMaintenance(item.table, "", "failed", [MaintainAction("load", "failed", str(e))], error=str(e))
        health: dict[str, Any] = {"verdict": item.verdict, "reason": item.reason, "urgency": item.urgency,
                                  "tier": item.tier, "compact_since": item.since}  # fmt: skip
        began = int(time.time() * 1000)
        report = maintain_table(table, self.plan, decide=lambda _t, _p: (item.actions, health), stop=self.stop,
                                source="service")  # fmt: skip
        for a in report.actions:
            if a.action in ("purge", "cluster") and a.status == "done" and not (a.result or {}).get("files_rewritten"):
                self._futile[item.table] = began
            if a.action != "compact":
                continue
            # done, or looked at and nothing worth rewriting: what the next minor pass wants is data after `began`
            if a.status == "done" or (a.status == "skipped" and a.result is not None and not a.result.get("conflict")):
                self._compact_started[item.table] = began
            if a.status == "done" and item.tier == "major":
                self._majors()[item.table] = began
        return report

    def _count(self, report: TableMaintenance | None, p: PassResult) -> None:
        if report is None:
            return
        p.worked += 1
        for a in report.actions:
            outcome = {"done": "ok", "failed": "failed"}.get(a.status)
            if outcome is None and (a.result or {}).get("conflict"):
                outcome = "skipped"
            if outcome is None:
                continue
            p.runs[outcome] += 1
            rewritten = 0
            if outcome == "ok":  # the files a rewrite (compact, purge, cluster) replaced
                rewritten = sum(x.get("bytes", 0) for x in (a.result or {}).get("partitions") or [])
            p.bytes_rewritten += rewritten
            if self.metrics is not None:
                self.metrics.ran(a.action, outcome, rewritten)


def abandon_current_step() -> None:
    """Cancel the Spark jobs under way in this process's session (a second stop signal): the step fails, its commit
    never happens, and what it wrote is an orphan that a later orphan cleanup removes."""
    spark = active_session()
    if spark is None:
        return
    try:
        if is_connect(spark):
            spark.interruptAll()
        else:
            spark.sparkContext.cancelAllJobs()
    except Exception as e:  # noqa: BLE001 - the session may be gone already
        log.warning("could not cancel the running Spark jobs: %s", e)


def serve(
    catalog: CatalogLike,
    pattern: str | None = None,
    *,
    every: str | timedelta = "10m",
    max_minutes: float | None = None,
    parallel: int = 1,
    plan: str | Path | None = None,
    metrics_port: int | None = None,
    stop: threading.Event | None = None,
    on_pass: Callable[[PassResult], None] | None = None,
    allow_empty: bool = False,
    on_start: Callable[[], None] | None = None,
) -> ServiceResult:
    """Run the maintenance service until ``stop`` is set (``lakecat maintain --auto --every``); see the module.

    A ``pattern`` that matches no table when the service starts raises ``NoTableMatchesError`` (a typo would
    otherwise serve nothing for ever) unless ``allow_empty`` (tables created later are picked up by the next pass,
    and a pass that finds none goes on). ``on_start`` is called once the options are checked, before the first pass.

    Example:
        >>> stop = threading.Event()
        >>> threading.Timer(3600, stop.set).start()
        >>> serve(cat, "sales.*", every="10m", max_minutes=5, stop=stop).runs  # doctest: +SKIP
        {'ok': 12, 'failed': 0, 'skipped': 1}
    """
    options = ServiceOptions(pattern, parse_duration(every), max_minutes, int(parallel), plan).check()
    matching_entries(catalog, pattern, allow_empty=allow_empty)
    exporter = None
    if metrics_port is not None:
        exporter = ServiceExporter(metrics_port)
    try:
        if on_start is not None:
            on_start()
        return Service(catalog, options, stop=stop, metrics=exporter, on_pass=on_pass).run()
    finally:
        if exporter is not None:
            exporter.close()
