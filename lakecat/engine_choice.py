"""Which engine runs a maintenance step: the light libraries (pyiceberg / delta-rs, no JVM) or Spark.

The light engine runs a step when the format's adapter can do it exactly on this table (``TableFormat.light_blockers``
names what stops it: a writer feature the light library lacks, a strategy only Spark has) and the work is under the
table's ``lakecat.maintain.light-max-bytes`` (default ``DEFAULT_LIGHT_MAX_BYTES``); Spark runs the rest. A caller may
force one (``engine="light"`` / ``"spark"``): a forced light run that cannot be done exactly is refused in one line
(``UnsupportedOperationError``, exit code 3) before anything is written. Every result says which engine ran and why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .engine import check_engine
from .errors import UnsupportedOperationError
from .units import human_size, parse_size

if TYPE_CHECKING:
    from .protocols import TableLike

LIGHT_MAX_BYTES_KEY = "lakecat.maintain.light-max-bytes"
#: The most bytes a light step reads and rewrites in one process (pyarrow holds a partition's rows in memory while it
#: rewrites them); larger work goes to Spark, which spills and spreads it over the cores.
DEFAULT_LIGHT_MAX_BYTES = 256 * 1024**2
#: Called as ``hook(table_name, action)`` by a light step after it planned and wrote its files and before it commits
#: (tests pause a compaction there while another process writes; nothing else sets it).
before_light_commit: Callable[[str, str], None] | None = None


def light_commit_point(table_name: str, action: str) -> None:
    """The moment between a light step's plan (and the files it wrote) and its commit: ``before_light_commit``."""
    if before_light_commit is not None:
        before_light_commit(table_name, action)


@dataclass(frozen=True)
class EngineChoice:
    """The engine a step runs on (``"light"`` or ``"spark"``) and why, in words a log line can carry."""

    engine: str
    reason: str


def light_max_bytes(policy: dict[str, str]) -> int:
    """The light engine's work limit from a table's resolved policy (``lakecat.maintain.light-max-bytes``)."""
    value = policy.get(LIGHT_MAX_BYTES_KEY)
    return parse_size(value) if value else DEFAULT_LIGHT_MAX_BYTES


def choose_engine(
    table: TableLike,
    action: str,
    *,
    requested: str | None,
    work_bytes: int,
    policy: dict[str, str],
    blockers: list[str] | None = None,
) -> EngineChoice:
    """The engine for ``action`` on ``table``: ``requested`` if given (light refused when ``blockers`` say it cannot
    do the step exactly), else light when nothing blocks it and ``work_bytes`` is within the policy's limit."""
    requested = check_engine(requested)
    if requested == "spark":
        return EngineChoice("spark", "engine=spark was asked for")
    blockers = table.adapter.light_blockers(table, action) if blockers is None else blockers
    if blockers:
        if requested == "light":
            raise UnsupportedOperationError(f"{action} of {table.name} cannot run without Spark: {blockers[0]}")
        return EngineChoice("spark", blockers[0])
    if requested == "light":
        return EngineChoice("light", "engine=light was asked for")
    limit = light_max_bytes(policy)
    if work_bytes > limit:
        return EngineChoice(
            "spark", f"{human_size(work_bytes)} of work is over the light engine's {human_size(limit)} "
            f"({LIGHT_MAX_BYTES_KEY})"
        )  # fmt: skip
    return EngineChoice(
        "light", f"{human_size(work_bytes)} of work, within {human_size(limit)} ({LIGHT_MAX_BYTES_KEY})"
    )
