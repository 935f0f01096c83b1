"""Delta Lake: Spark (delta-spark) for writes, delta-rs (``deltalake``) for metadata reads."""

import os
import sys

#: Settings of delta-rs's memory allocator (the jemalloc inside ``deltalake``, read once, when it is first imported)
#: that lakecat sets unless the process's environment has its own. By default jemalloc keeps the pages a read freed
#: for seconds and returns them only when the library allocates again, so each open of a large table's log would leave
#: its memory in the process; with no decay they go back to the OS at once.
#: The variable is jemalloc's own for every Rust library built on tikv-jemallocator (polars too).
ALLOCATOR_ENVIRONMENT = {"_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}

if "deltalake" not in sys.modules:  # too late for a deltalake imported before lakecat: it keeps its own
    for _k, _v in ALLOCATOR_ENVIRONMENT.items():
        os.environ.setdefault(_k, _v)

from .adapter import DeltaFormat  # noqa: E402 - after the allocator's settings

__all__ = ["ALLOCATOR_ENVIRONMENT", "DeltaFormat"]
