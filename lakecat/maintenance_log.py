"""The record of maintenance runs: one row per action that ``maintain`` or the maintenance service ran on a table.

Rows live in the catalog's metastore (``lakecat_maintenance_log``), so every tool that reaches the catalog — the
CLI, the service, a dashboard reading SQL — sees the same history. ``lakecat maintenance-log`` reads it with no
JVM. Outcomes: ``ok`` (the action changed the table), ``failed`` (its error is kept), ``skipped`` (it was due but
did not run: a commit conflict with a writer left to the next pass, a format that lacks it, a stop).
"""

from __future__ import annotations

import fnmatch
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from . import display
from .errors import ConfigError
from .metastore import add_missing_columns
from .results import MaintainAction, Result
from .units import from_millis, human_size, iso, parse_timestamp

if TYPE_CHECKING:
    import sqlalchemy as sa

    from .metastore import Metastore
    from .protocols import TableLike

log = logging.getLogger(__name__)

OUTCOMES = ("ok", "failed", "skipped")
RETENTION = timedelta(days=30)  # the service drops older rows once a pass


@dataclass
class MaintenanceRun(Result):
    """One action on one table: what it found and left, how long it took, how it ended."""

    table: str
    action: str
    started: str
    seconds: float
    outcome: str
    files_before: int | None = None
    files_after: int | None = None
    bytes_before: int | None = None
    bytes_after: int | None = None
    bytes_rewritten: int | None = None
    files_deleted: int | None = None
    bytes_deleted: int | None = None
    snapshots_removed: int | None = None
    retries: int = 0
    tier: str | None = None  # compaction: minor (recent partitions) or major (the whole table)
    source: str = "maintain"  # maintain | service
    error: str | None = None
    engine: str | None = None  # light (pyiceberg / delta-rs, no JVM) or spark: the engine that did the work
    engine_reason: str | None = None  # why that engine


@dataclass
class RunLogResult(Result):
    """``lakecat maintenance-log``: runs, newest first; its JSON is the list of runs."""

    runs: list[MaintenanceRun]

    def to_dict(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [r.to_dict() for r in self.runs]

    def __iter__(self) -> Iterator[MaintenanceRun]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    def _repr_html_(self) -> str:
        return display.table(
            ["started (UTC)", "table", "action", "outcome", "seconds", "files", "bytes", "detail"],
            ([r.started, r.table, r.action + (f" ({r.tier})" if r.tier else ""), r.outcome, round(r.seconds, 1),
              f"{r.files_before:,} → {r.files_after:,}" if r.files_before is not None and r.files_after is not None
              else "", f"{human_size(r.bytes_before)} → {human_size(r.bytes_after)}" if r.bytes_before is not None
              and r.bytes_after is not None else "", r.error or ""] for r in self.runs),
            title="maintenance log", empty="no maintenance runs",
        )  # fmt: skip


_INTS = ("files_before", "files_after", "bytes_before", "bytes_after", "bytes_rewritten", "files_deleted",
         "bytes_deleted", "snapshots_removed")  # fmt: skip


def run_of(table: str, action: str, status: str, result: dict[str, Any] | None, *, started_ms: int, seconds: float,
           reason: str = "", tier: str | None = None, source: str = "maintain") -> MaintenanceRun:  # fmt: skip
    """A run from a maintenance action's status (done / failed / skipped) and its result document."""
    r = result or {}
    run = MaintenanceRun(table, action, iso(from_millis(started_ms)) or "", round(seconds, 3),
                         {"done": "ok", "failed": "failed"}.get(status, "skipped"), tier=tier, source=source,
                         retries=int(r.get("retries") or 0), error=(reason or None) if status != "done" else None,
                         engine=r.get("engine") or None)  # fmt: skip
    if "files_before" in r:  # a rewrite: compact, and maintain --auto's purge and cluster
        run.files_before, run.files_after = r.get("files_before"), r.get("files_after")
        run.bytes_before, run.bytes_after = r.get("bytes_before"), r.get("bytes_after")
        if status == "done":
            run.bytes_rewritten = sum(p.get("bytes", 0) for p in r.get("partitions") or [])
    elif action == "expire":
        run.snapshots_removed = len(r.get("expired_versions") or []) if status == "done" else None
        run.files_deleted, run.bytes_deleted = r.get("deleted_files"), r.get("deleted_bytes")
    elif action == "clean-orphans":
        run.files_deleted, run.bytes_deleted = r.get("deleted_files"), r.get("deleted_bytes")
    if status != "done":
        run.files_deleted = run.bytes_deleted = None
    run.engine, run.engine_reason = r.get("engine") or None, r.get("engine_reason") or None
    return run


class RunLog:
    """The runs of one catalog in its metastore."""

    TABLE = "lakecat_maintenance_log"

    def __init__(self, metastore: Metastore) -> None:
        self.metastore = metastore

    @cached_property
    def t(self) -> sa.Table:
        import sqlalchemy as sa

        t = self.metastore.table(
            self.TABLE,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("catalog_name", sa.String(255), nullable=False, index=True),
            sa.Column("table_name", sa.String(511), nullable=False),
            sa.Column("action", sa.String(64), nullable=False),
            sa.Column("started_ms", sa.BigInteger, nullable=False),
            sa.Column("seconds", sa.Float, nullable=False),
            sa.Column("outcome", sa.String(16), nullable=False),
            *[sa.Column(name, sa.BigInteger, nullable=True) for name in _INTS],
            sa.Column("retries", sa.Integer, nullable=False, default=0),
            sa.Column("tier", sa.String(16), nullable=True),
            sa.Column("source", sa.String(16), nullable=False),
            sa.Column("error", sa.Text, nullable=True),
            sa.Column("engine", sa.String(16), nullable=True),
            sa.Column("engine_reason", sa.Text, nullable=True),
        )
        try:
            add_missing_columns(self.metastore.engine, t)  # a log an older lakecat created: without the engine
        except sa.exc.SQLAlchemyError as e:
            raise ConfigError(f"cannot update {self.TABLE} in the metastore: {str(e).splitlines()[0]}") from None
        return t

    def record(self, run: MaintenanceRun) -> None:
        started_ms = int(parse_timestamp(run.started).timestamp() * 1000)
        values = {k: getattr(run, k) for k in (*_INTS, "seconds", "outcome", "retries", "tier", "source", "error",
                                               "engine", "engine_reason")}  # fmt: skip
        with self.metastore.engine.begin() as con:
            con.execute(self.t.insert().values(catalog_name=self.metastore.catalog_name, table_name=run.table,
                                               action=run.action, started_ms=started_ms, **values))  # fmt: skip

    def runs(self, pattern: str | None = None, *, since: timedelta | None = None, action: str | None = None,
             limit: int | None = None) -> list[MaintenanceRun]:  # fmt: skip
        """The runs of tables matching ``pattern`` (fnmatch) started within ``since``, newest first."""
        cutoff = int((time.time() - since.total_seconds()) * 1000) if since is not None else None
        if self.metastore.sqlite_path is None:
            self.t  # noqa: B018 - declared before SQLAlchemy reads it (a read on SQLite needs no declaration)
        where = {"catalog_name": self.metastore.catalog_name, **({"action": action} if action else {})}
        rows = self.metastore.find(self.TABLE, where, order_by="id")
        out = []
        for row in reversed(rows):
            if (cutoff is not None and row["started_ms"] < cutoff) or (
                pattern is not None and not fnmatch.fnmatchcase(row["table_name"], pattern)
            ):
                continue
            out.append(MaintenanceRun(row["table_name"], row["action"], iso(from_millis(row["started_ms"])) or "",
                                      float(row["seconds"]), row["outcome"],
                                      **{k: row[k] for k in (*_INTS, "retries", "tier", "source", "error")},
                                      engine=row.get("engine"), engine_reason=row.get("engine_reason")))  # fmt: skip
            if limit is not None and len(out) >= limit:
                break
        return out

    def prune(self, older_than: timedelta = RETENTION) -> int:
        """Drop the rows of runs started longer ago than ``older_than``; returns how many."""
        c = self.t.c
        cutoff = int((time.time() - older_than.total_seconds()) * 1000)
        with self.metastore.engine.begin() as con:
            res = con.execute(self.t.delete().where(c.catalog_name == self.metastore.catalog_name,
                                                    c.started_ms < cutoff))  # fmt: skip
        return int(res.rowcount or 0)


def log_action(table: TableLike, action: MaintainAction, began: tuple[float, float], *, tier: str | None,
               source: str) -> None:  # fmt: skip
    """Keep one maintenance action's run (``began``: wall and monotonic clock at its start) in the table's catalog's
    log; best effort, as the maintenance itself is done."""
    run = run_of(table.name, action.action, action.status, action.result, started_ms=int(began[0] * 1000),
                 seconds=time.monotonic() - began[1], reason=action.reason, tier=tier, source=source)  # fmt: skip
    try:
        RunLog(table.catalog.metastore).record(run)
    except Exception as e:  # noqa: BLE001 - a log that cannot be written must not fail the maintenance
        log.warning("table %s: could not log the %s run (%s)", table.name, action.action, e)
