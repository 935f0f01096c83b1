"""Ingest with its defaults only, as a user runs it: ``lakecat ingest T --kafka ... --topic t --trigger available-now``.

    python -m benchmarks.ingest_defaults [--events 1m] [--scale 10] [--formats iceberg,delta] [--out FILE.json]

Each run is a whole ``lakecat ingest`` process with no batch option and lakecat's own sizing of the driver
(``SPARK_DRIVER_MEMORY`` is removed from its environment), timed from outside with the peak resident memory of its
process tree (Python + JVM, sampled every 50 ms). Three topics of 3 partitions: ``events`` JSON events,
``events × scale`` JSON events, and ``events`` JSON events with one malformed record after every 99 good ones (1%).
Per format, in that order (each into a fresh table): the clean topic, the malformed one, the large one. The ratios:
time and peak memory of the large topic over the clean one, and the malformed topic's rows/s over the clean one's.
The ingest's own result (batches, its bound, ``peak_rss_bytes``, ``dead_letter_path``) is kept beside each run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .cli import _scale
from .ingest import SCHEMA, json_events
from .measure import child_env, last_json, machine_info, rounded, run_measured, say

MALFORMED_EVERY = 100  # one malformed record in 100


def events_with_malformed(n: int) -> Iterator[str]:
    """``n`` records: ``json_events`` with the ``MALFORMED_EVERY``-th replaced by a truncated JSON object."""
    for i, e in enumerate(json_events(n)):
        yield e[: len(e) // 2] if (i + 1) % MALFORMED_EVERY == 0 else e


def produce_topic(bootstrap: str, topic: str, n: int, *, malformed: bool) -> None:
    """Produce ``n`` events to ``topic`` in this process (run in a child: ``produce_child``)."""
    from lakecat.kafka_local import create_topic, produce

    create_topic(bootstrap, topic, partitions=3)
    produce(bootstrap, topic, events_with_malformed(n) if malformed else json_events(n), timeout=max(600, n / 500))


def produce_child(bootstrap: str, topic: str, n: int, *, malformed: bool) -> None:
    code = ("import sys; from benchmarks.ingest_defaults import produce_topic as p; "
            "p(sys.argv[1], sys.argv[2], int(sys.argv[3]), malformed=sys.argv[4] == '1')")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code, bootstrap, topic, str(n), "1" if malformed else "0"],
                         capture_output=True, text=True, check=False, env=child_env())  # fmt: skip
    if out.returncode:
        raise RuntimeError(f"producing {n:,} events to {topic} failed: {out.stderr.strip()[-400:]}")


def lakecat_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "lakecat.commands.main", *args]


def ingest_run(env: dict[str, str], bootstrap: str, topic: str, table: str, fmt: str) -> dict[str, Any]:
    """One ``lakecat ingest`` process into a fresh ``table`` with the defaults; its figures and its JSON result."""
    made = subprocess.run(lakecat_cmd("create", table, "--format", fmt, "--schema", SCHEMA), env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if made.returncode:
        raise RuntimeError(f"lakecat create {table} failed: {made.stderr.strip()[-400:]}")
    run = run_measured(lakecat_cmd("ingest", table, "--kafka", bootstrap, "--topic", topic, "--trigger",
                                   "available-now", "--json"), env=env, timeout=7200)  # fmt: skip
    if run["rc"] != 0:
        raise RuntimeError(f"lakecat ingest {table} exited {run['rc']}: {run['stderr'].strip()[-800:]}")
    result = last_json(run["stdout"])
    keep = ("rows_written", "rows_dead_lettered", "batches", "batch_bound", "dead_letter_path", "peak_rss_bytes",
            "duration_s")  # fmt: skip
    rows = result["rows_written"] + result["rows_dead_lettered"]
    return {"s": rounded(run["seconds"], 2), "rows_per_s": round(rows / run["seconds"]), "peak_mb": run["peak_mb"],
            "result": {k: result.get(k) for k in keep}}  # fmt: skip


def measure(bootstrap: str, *, events: int, scale: int, formats: list[str], home: Path) -> dict[str, Any]:
    env = child_env({**os.environ, "LAKECAT_HOME": str(home)})
    env.pop("SPARK_DRIVER_MEMORY", None)  # lakecat's own sizing of this machine
    tag = uuid.uuid4().hex[:6]
    topics = {"clean": (f"d{tag}_clean", events, False), "malformed": (f"d{tag}_bad", events, True),
              "large": (f"d{tag}_large", events * scale, False)}  # fmt: skip
    for kind, (topic, n, malformed) in topics.items():
        say(f"producing {n:,} events to {topic} ({kind})")
        produce_child(bootstrap, topic, n, malformed=malformed)
    out: dict[str, Any] = {}
    for fmt in formats:
        runs: dict[str, Any] = {}
        for kind, (topic, n, _) in topics.items():
            runs[kind] = ingest_run(env, bootstrap, topic, f"bench.d{tag}_{kind}_{fmt}", fmt)
            r = runs[kind]
            say(f"{fmt} {kind} ({n:,}): {r['s']}s, {r['rows_per_s']:,} rows/s, peak {r['peak_mb']} MB; "
                f"its result: {r['result']}")  # fmt: skip
        clean, large, bad = runs["clean"], runs["large"], runs["malformed"]
        own = {k: r["result"]["duration_s"] for k, r in runs.items()}  # the ingest's own time: no process start
        runs["ratios"] = {
            "time_large_over_clean": rounded(large["s"] / clean["s"], 2),
            "peak_rss_large_over_clean": rounded(large["peak_mb"]["total_mb"] / clean["peak_mb"]["total_mb"], 2),
            "malformed_over_clean_rows_per_s": rounded(bad["rows_per_s"] / clean["rows_per_s"], 2),
            "ingest_time_large_over_clean": rounded(own["large"] / own["clean"], 2),
            "ingest_malformed_over_clean_rows_per_s": rounded(own["clean"] / own["malformed"], 2),
        }
        say(f"{fmt}: {runs['ratios']}")
        out[fmt] = runs
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.ingest_defaults", description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=_scale, default=1_000_000, help="events of the clean topic (default 1m)")
    ap.add_argument("--scale", type=int, default=10, help="the large topic holds this many times --events")
    ap.add_argument("--formats", default="iceberg,delta")
    ap.add_argument("--bootstrap", metavar="HOST:PORT", help="use this Kafka broker instead of starting one")
    ap.add_argument("--out", metavar="FILE.json")
    a = ap.parse_args(argv)
    from lakecat.kafka_local import LocalKafka
    from lakecat.processes import free_port

    started = time.monotonic()
    home = Path(tempfile.mkdtemp(prefix="lakecat-bench-defaults-"))
    broker = None
    doc: dict[str, Any] = {"machine": machine_info(), "events": a.events, "scale": a.scale,
                           "malformed_every": MALFORMED_EVERY, "topic_partitions": 3}  # fmt: skip
    try:
        bootstrap = a.bootstrap
        if bootstrap is None:
            broker = LocalKafka(data_dir=home / "kafka", port=free_port())
            bootstrap = broker.start(timeout=180)
        doc["results"] = measure(bootstrap, events=a.events, scale=a.scale,
                                 formats=[f.strip() for f in a.formats.split(",") if f.strip()], home=home)  # fmt: skip
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(home, ignore_errors=True)
    doc["wall_s"] = rounded(time.monotonic() - started, 1)
    text = json.dumps(doc, indent=2)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
