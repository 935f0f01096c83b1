"""Summarize Java Flight Recorder recordings of ingest runs (``JFR=dir`` in ``batch_costs_ab.py``), side by side.

For each recording: the execution samples of the executor task threads, in all and inclusive of the frames named in
``EXECUTOR_FRAMES``; the samples of the stream's own thread (the driver's per-batch work) by planning phase; the
memory the executor threads and the stream's thread allocated (JFR's sampled estimate, GB), and the executors'
allocation sites outside the JDK that allocated most (GB). Reads the recordings with the JDK's ``jfr`` tool.

    python docs/experiments/jfr_summary.py /tmp/jfr/plain_5.jfr /tmp/jfr/lakecat_6.jfr
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from collections.abc import Iterator

EXECUTOR_FRAMES = {
    "from_json": "JsonToStructs",
    "  creating the parser": "CreateJacksonParser$.utf8String",
    "    the UTF-8 decoder": "sun.nio.cs.UTF_8.newDecoder",
    "  the JSON itself": "JacksonParser.org$apache$spark$sql$catalyst$json$JacksonParser$$convertObject",
    "json_object_keys": "jsonObjectKeys",
    "UTF-8 check": "UTF8String.isValid",
    "observation": "CollectMetrics",
    "table write (Iceberg)": "SparkWrite",
    "Kafka read": "KafkaDataConsumer",
}
#: the stream thread's samples by the first of these phases (in this order) whose frame is on the stack
STREAM_PHASES = (
    ("code generation", ("WholeStageCodegenExec.doCodeGen", "CodeGenerator")),
    ("optimizer", ("Optimizer", "lazyOptimizedPlan")),
    ("analyzer", ("Analyzer", "lazyAnalyzed")),
    ("planner", ("SparkPlanner", "lazySparkPlan", "lazyExecutedPlan")),
    ("Iceberg commit", ("SnapshotProducer.commit",)),
    ("Iceberg, other", ("org.apache.iceberg",)),
    ("py4j (lakecat's Python)", ("py4j",)),
    ("Kafka", ("kafka",)),
)
SIZE = {"bytes": 1, "byte": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}


def _events(path: str, kind: str) -> Iterator[dict]:
    text = subprocess.run(["jfr", "print", "--events", kind, "--stack-depth", "200", path], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    event: dict | None = None
    for line in text.splitlines():
        s = line.strip()
        if line.startswith("jdk."):
            event = {"frames": []}
        elif event is not None:
            if s == "}":
                yield event
                event = None
            elif m := re.match(r'(?:sampledThread|eventThread) = "(.*)" \(', s):
                event["thread"] = m.group(1)
            elif s.startswith("weight = "):
                value, unit = s.split("=", 1)[1].split()
                event["weight"] = float(value) * SIZE.get(unit, 1)
            elif s and "line:" in s:
                event["frames"].append(s.split("(")[0])


def summary(path: str) -> tuple[dict[str, float], dict[str, float]]:
    """(the figures by name, GB allocated by the executor threads per allocation site) of one recording."""
    out: dict[str, float] = collections.Counter()
    for e in _events(path, "jdk.ExecutionSample"):
        thread, frames = e.get("thread", ""), e["frames"]
        if thread.startswith("Executor task"):
            out["executor samples"] += 1
            for name, frame in EXECUTOR_FRAMES.items():
                out[f"  {name}"] += any(frame in f for f in frames)
        elif thread.startswith("stream execution thread"):
            out["stream thread samples"] += 1
            phase = next((p for p, keys in STREAM_PHASES if any(k in f for k in keys for f in frames)), "other")
            out[f"  stream: {phase}"] += 1
    sites: dict[str, float] = collections.Counter()
    for e in _events(path, "jdk.ObjectAllocationSample"):
        thread = e.get("thread", "")
        if thread.startswith("Executor task"):
            out["executor allocation, GB"] += e["weight"] / 1e9
            sites[next((f for f in e["frames"] if not f.startswith(("java.", "jdk.", "sun."))), "?")] += (
                e["weight"] / 1e9
            )
        elif thread.startswith("stream execution thread"):
            out["stream thread allocation, GB"] += e["weight"] / 1e9
    return out, sites


def main() -> None:
    paths = sys.argv[1:]
    results = [summary(p) for p in paths]
    keys = ["executor samples", *(f"  {n}" for n in EXECUTOR_FRAMES), "stream thread samples",
            *dict.fromkeys(f"  stream: {p}" for p, _ in STREAM_PHASES), "  stream: other",
            "stream thread allocation, GB", "executor allocation, GB"]  # fmt: skip
    rows = [(k, [r[0].get(k, 0) for r in results]) for k in keys]
    top = sorted({s for _, sites in results for s in sites}, key=lambda s: -max(r[1].get(s, 0) for r in results))[:10]
    rows += [(f"  at {s.rsplit('.', 2)[-2]}.{s.rsplit('.', 1)[-1]}", [r[1].get(s, 0) for r in results]) for s in top]
    print(f"{'':56}" + "".join(f"{p.rsplit('/', 1)[-1]:>16}" for p in paths))
    for k, values in rows:
        gb = "GB" in k or k.startswith("  at ")
        print(f"{k[:56]:56}" + "".join(f"{v:16.2f}" if gb else f"{v:16.0f}" for v in values))


if __name__ == "__main__":
    main()
