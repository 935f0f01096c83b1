"""Where the bench's Spark driver memory goes (an experiment, not part of the bench). Runs the bench's Spark sections
(``lakecat.bench.suite.run_spark_sections``) in this process with the JVM's Native Memory Tracking on, and every
INTERVAL seconds (env, default 45), and whenever the JVM's RSS reaches a new high, records the process tree's RSS
(Python, JVM) and the JVM's committed memory per NMT category. At the end, before the session stops, it asks glibc to
give back what it keeps free, in the JVM (``jcmd System.trim_native_heap``) and in Python (``malloc_trim(0)``), and
prints what that returned.

    python docs/experiments/driver_memory.py SECTIONS FORMATS [KEY=VALUE ...]
    python docs/experiments/driver_memory.py ingest,compact iceberg,delta events=200000 ingest_big_events=0

``JAVA_OPTIONS`` (env) adds JVM options to the embedded catalog's Spark driver, like batch_costs_ab.py's; ``SPARK_CONF``
(env, ``key=value,...``) adds Spark settings (e.g. ``spark.driver.memory=768m``). ``HISTO`` (env, any value) prints the
cached RDDs and the heap's top classes (a full GC) when the compaction section starts. ``OUT`` (env, a
file) keeps the sections' whole result there (the bench child's JSON: ratios, rows/s, memory).
Sizes start from the full bench's (``lakecat.bench.suite.FULL``); KEY=VALUE pairs override them.
"""

from __future__ import annotations

import ctypes
import json
import os
import pathlib
import re
import subprocess
import sys
import threading
import time

from rounds import lakecat_home  # docs/experiments/rounds.py

home = lakecat_home(
    "lakecat-driver-memory-",
    ("-XX:NativeMemoryTracking=summary " + os.environ.get("JAVA_OPTIONS", "")).strip(),
    os.environ.get("SPARK_CONF", ""),
)

import lakecat.spark  # noqa: E402
from lakecat.bench import suite  # noqa: E402
from lakecat.kafka_local import LocalKafka, free_port  # noqa: E402

SECTIONS, FORMATS = sys.argv[1].split(","), sys.argv[2].split(",")
sizes = dict(suite.FULL)
for pair in sys.argv[3:]:
    k, v = pair.split("=", 1)
    sizes[k] = int(v) if v.isdigit() else v
INTERVAL = float(os.environ.get("INTERVAL", "45"))
samples: list[dict] = []
done = threading.Event()


def jvm_pid() -> int | None:
    from pyspark.sql import SparkSession

    s = SparkSession._instantiatedSession  # the active session is per thread; the sampler has none
    return None if s is None else int(s._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]


def rss_mb(pid: int) -> float:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def nmt(pid: int) -> dict[str, float]:
    """Committed MB per NMT category (NMT's own total line has another shape and is left out)."""
    out = subprocess.run(
        ["jcmd", str(pid), "VM.native_memory", "summary", "scale=MB"], capture_output=True, text=True
    ).stdout
    cats = {}
    for m in re.finditer(r"^-?\s*(Total|[A-Z][\w ]+?) \(reserved=\d+MB, committed=(\d+)MB\)", out, re.M):
        cats[m.group(1).strip()] = float(m.group(2))
    return cats


def sampler() -> None:
    """RSS every 0.2 s; NMT every INTERVAL s and whenever the JVM's RSS reaches a new high (by 25 MB)."""
    high, last = 0.0, 0.0
    while not done.wait(0.2):
        pid = jvm_pid()
        if pid is None:
            continue
        jvm = rss_mb(pid)
        now = time.monotonic()
        if jvm < high + 25 and now - last < INTERVAL:
            continue
        row = {"t": round(now - t0, 1), "python_mb": round(rss_mb(os.getpid())), "jvm_mb": round(jvm), **nmt(pid)}
        row["jvm_mb_after_nmt"] = round(rss_mb(pid))
        if jvm >= high + 25:
            row["new_high"] = True
            high = jvm
        last = now
        samples.append(row)
        print("sample", json.dumps(row), file=sys.stderr, flush=True)


real_stop = lakecat.spark.stop_spark


def stop_with_report() -> None:
    pid = jvm_pid()
    if pid is not None:
        before = {"python_mb": rss_mb(os.getpid()), "jvm_mb": rss_mb(pid), **nmt(pid)}
        trim = subprocess.run(["jcmd", str(pid), "System.trim_native_heap"], capture_output=True, text=True).stdout
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
        time.sleep(1)
        after = {"python_mb": rss_mb(os.getpid()), "jvm_mb": rss_mb(pid)}
        print("end", json.dumps({"before": before, "after_trim": after}), file=sys.stderr, flush=True)
        print(trim.strip(), file=sys.stderr, flush=True)
    real_stop()


lakecat.spark.stop_spark = stop_with_report

if os.environ.get("HISTO"):  # what the heap holds when compaction starts: cached RDDs and the live classes
    real_compaction = suite.compaction

    def compaction_with_histogram(cat, **kw):  # type: ignore[no-untyped-def]
        sc = cat.session().sparkContext
        cached = sc._jsc.sc().getRDDStorageInfo()  # type: ignore[union-attr]
        print(
            "cached",
            json.dumps([{"name": str(r.name()), "mem_mb": r.memSize() / 2**20} for r in cached]),
            file=sys.stderr,
            flush=True,
        )
        histo = subprocess.run(["jcmd", str(jvm_pid()), "GC.class_histogram"], capture_output=True, text=True).stdout
        print("histogram", "\n".join(histo.splitlines()[:30]), file=sys.stderr, flush=True)
        return real_compaction(cat, **kw)

    suite.compaction = compaction_with_histogram
t0 = time.monotonic()
broker = None
bootstrap = None
if {"ingest", "freshness"} & set(SECTIONS):
    broker = LocalKafka(data_dir=home / "kafka", port=free_port())
    bootstrap = broker.start(timeout=180)
threading.Thread(target=sampler, daemon=True).start()
try:
    result = suite.run_spark_sections({"home": str(home), "sizes": sizes, "formats": FORMATS, "sections": SECTIONS,
                                       "bootstrap": bootstrap})  # fmt: skip
finally:
    done.set()
    if broker is not None:
        broker.stop()
if os.environ.get("OUT"):
    pathlib.Path(os.environ["OUT"]).write_text(json.dumps(result, indent=1))
peak = max(samples, key=lambda r: r["python_mb"] + r["jvm_mb"]) if samples else {}
print(
    json.dumps(
        {"memory": result.get("memory"), "peak_sample": peak, "pandas_imported": "pandas" in sys.modules}, indent=1
    )
)
