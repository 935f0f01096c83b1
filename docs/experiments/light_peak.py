"""Wall time and peak RSS of one light (no JVM) call on a table, in a fresh process (an experiment, not part of the
bench). Prints the seconds from interpreter start to the answer, the process's peak RSS (VmHWM) and whether pandas or
pyspark were imported. Compare two checkouts by running it with another ``PYTHONPATH`` (a copy of an older ``lakecat/``
package next to its ``catalog_conf/``), alternating:

    LAKECAT_HOME=... python docs/experiments/light_peak.py TABLE health|dry|describe
    LAKECAT_HOME=... PYTHONPATH=/tmp/old python docs/experiments/light_peak.py TABLE health

``dry`` is ``Table.compact(dry_run=True)`` (the compaction plan from metadata).
"""

from __future__ import annotations

import sys
import time

t0 = time.perf_counter()
import lakecat  # noqa: E402

table = lakecat.connect().table(sys.argv[1])
what = sys.argv[2]
if what == "health":
    table.health()
elif what == "dry":
    table.compact(dry_run=True)
else:
    table.describe()
seconds = time.perf_counter() - t0
with open("/proc/self/status") as fh:
    peak_mb = next(int(line.split()[1]) // 1024 for line in fh if line.startswith("VmHWM"))
print(
    f"{what} {lakecat.__file__} {seconds:.2f} s, peak {peak_mb} MB, pandas imported: {'pandas' in sys.modules}, "
    f"pyspark imported: {'pyspark' in sys.modules}"
)
