"""What a Python process keeps after reading a many-file Delta table with delta-rs (an experiment, not part of the
bench): the resident set after 10 reads of one kind, in a fresh process with pandas imported (as the bench's process
has it through pyspark). Builds the table first if ``LOCATION`` does not exist: ~10,000 files of 1,000 rows written by
delta-rs, then ``ROUNDS`` rounds of delta-rs's own compaction and a restore to the first version (log versions of
10,000 removes and adds each, as the bench's compaction rounds leave them).

    python docs/experiments/delta_open_rss.py LOCATION open|actions|files [ROUNDS]

``open``: ``DeltaTable(LOCATION)`` alone (delta-rs's log replay); ``actions``: also lakecat's file list as Arrow
(``lakecat.formats.delta.log.add_actions``); ``files``: also its rows in Python (``live_files``, what the compaction
plan reads).
"""

from __future__ import annotations

import gc
import os
import sys


def rss_mb() -> tuple[int, int]:
    with open("/proc/self/status") as fh:
        d = {line.split(":")[0]: line.split()[1] for line in fh if len(line.split()) > 1}
    return int(d["VmRSS"]) // 1024, int(d["VmHWM"]) // 1024


def build(location: str, rounds: int) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    batches = [pa.record_batch({"id": pa.array(range(i * 1000, (i + 1) * 1000), pa.int64()),
                                "region": [f"r{i % 4}"] * 1000, "amount": [float(i)] * 1000}) for i in range(10_000)]  # fmt: skip
    write_deltalake(location, pa.Table.from_batches(batches), target_file_size=1)  # a file per row group
    for _ in range(rounds):
        dt = DeltaTable(location)
        dt.optimize.compact(target_size=64 * 1024 * 1024)
        DeltaTable(location).restore(0)
    dt = DeltaTable(location)
    print(f"built {location}: {len(dt.file_uris())} files, version {dt.version()}")


def main() -> None:
    location, what = sys.argv[1], sys.argv[2]
    if not os.path.exists(location):
        build(location, int(sys.argv[3]) if len(sys.argv) > 3 else 8)
        return print("built; run again for the figure (a fresh process)")
    import pandas  # noqa: F401
    from deltalake import DeltaTable

    from lakecat.formats.delta.log import add_actions, live_files

    start = rss_mb()
    for _ in range(10):
        dt = DeltaTable(location)
        if what == "actions":
            add_actions(dt)
        elif what == "files":
            live_files(dt, location)
        del dt
        gc.collect()
    now, peak = rss_mb()
    print(f"{what}: RSS {start[0]} MB before, {now} MB after 10 reads (peak {peak} MB)")


if __name__ == "__main__":
    main()
