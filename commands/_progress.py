"""The progress line of long commands: own steps or the running Spark stages' tasks."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


class _ProgressLine:
    """The line ``Output.progress`` shows: spinner, what runs, a bar (own steps or Spark tasks), elapsed time."""

    def __init__(self, console: Console, description: str, total: int | None) -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=30),
                            TextColumn("{task.fields[counts]}"), TimeElapsedColumn(), console=console,
                            transient=True, refresh_per_second=4)  # fmt: skip
        self.task = self.bar.add_task(description, total=total, counts="")
        self.total, self.completed = total, 0
        self.spark: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="lakecat-progress", daemon=True)

    def __enter__(self) -> _ProgressLine:
        self.bar.start()
        self._poller.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._poller.join(timeout=2)
        self.bar.stop()

    def update(self, completed: int | None = None, total: int | None = None, description: str | None = None) -> None:
        self.total = self.total if total is None else total
        self.completed = self.completed if completed is None else completed
        self._show(description)

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            self.spark = _spark_tasks()
            self._show()

    def _show(self, description: str | None = None) -> None:
        spark = f"Spark tasks {self.spark[0]}/{self.spark[1]}" if self.spark else ""
        if self.total is not None:
            counts = " · ".join(c for c in (f"{self.completed}/{self.total}", spark) if c)
            self.bar.update(
                self.task, completed=self.completed, total=self.total, counts=counts, description=description
            )
        else:
            done, total = self.spark or (0, None)
            self.bar.update(self.task, completed=done, total=total, counts=spark, description=description)


def _ignore(*args: Any, **kwargs: Any) -> None:
    """The progress updater when no progress is shown."""


def _spark_tasks() -> tuple[int, int] | None:
    """(done, total) tasks of the Spark stages running now; None when Spark is idle or was never started."""
    spark_module = sys.modules.get("lakecat.spark")  # never import (and so start) the Spark path for a progress bar
    return spark_module.running_tasks() if spark_module is not None else None
