"""The resident memory of a few processes, sampled in the background: a long command's peak (an ingest's: this
process and its Spark driver JVM together). Read from ``/proc/<pid>/statm``; where there is none, the peak is None."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence


def rss_bytes(pid: int) -> int | None:
    """The resident memory of process ``pid`` in bytes; None when it cannot be read (gone, or no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class PeakRss:
    """The highest sum of the resident memory of ``pids`` seen by sampling every ``interval`` seconds."""

    def __init__(self, pids: Sequence[int], *, interval: float = 0.25) -> None:
        self.pids = list(dict.fromkeys(pids))
        self.interval = interval
        self.peak: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> int | None:
        """Read the processes' memory now; the peak so far."""
        found = [n for n in map(rss_bytes, self.pids) if n is not None]
        if found:
            self.peak = max(self.peak or 0, sum(found))
        return self.peak

    def start(self) -> PeakRss:
        if self._thread is None:
            self.sample()
            self._thread = threading.Thread(target=self._loop, name="lakecat-peak-rss", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> int | None:
        """Stop sampling (after a last sample); the peak."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        return self.sample()
