"""lakecat's benchmark suite: every figure next to the plain-Spark baseline measured in the same run.

Run from the checkout's root::

    python -m benchmarks [--quick] [--scale 2m] [--out FILE.json] [--docs [docs/performance.md]] [--from-json FILE.json]

Sections (``--sections``, all by default):

- ``ingest``: N JSON events from a 3-partition Kafka topic into a fresh table of each format, ``available-now``,
  lakecat's ``cat.ingest`` against the hand-written ``readStream.format("kafka") -> from_json -> writeStream``
  job; rows/s, CPU seconds of the driver (Python + JVM), Spark's per-trigger timings, lakecat's setup time.
  ``--scale 2m`` sets the event count (2,000,000); the document states the input's size (JSON bytes and the topic's
  log on disk).
- ``freshness``: events produced at a steady rate to a 1-partition topic while a ``trigger="every 1s"``
  stream runs (lakecat's ``cat.ingest(..., background=True)`` handle, or the plain job); a poller runs
  ``SELECT max(id)`` and records, per event, the time from produce to the first query that returned it.
- ``cdc``: ``benchmarks/cdc.py`` (``python -m benchmarks.cdc``), run as a subprocess.
- ``compact``: ``Table.compact`` against the engine's own command (Iceberg ``rewrite_data_files``, Delta
  ``OPTIMIZE``) on identical tables of many small files, and the query speedup after; then the same on two
  unpartitioned tables of ``compact_big_files`` (10,000) files of ``compact_big_rows_per_file`` rows each, with the
  driver's peak memory. Each lakecat run is split into the engine's procedure and lakecat's own overhead (planning
  from metadata before, the totals after, the maintenance record). One warm-up round that is not counted, then
  ``compact_repeat`` (8) rounds per pair in alternating order (both tables rolled back to the same files between
  rounds): medians of the times, and lakecat / engine as the median of the rounds' ratios (paired). The 2,000-file
  pair runs ``compact_small_repeat`` (32) rounds (its ~2 s jobs spread by ±30% between rounds; with 16 the median
  ratio moved by more than 5% from run to run), each opened by an untimed compaction of a third copy: whichever
  compaction runs first after the rollbacks is slower.
- ``metadata``: whole ``lakecat list/describe/history`` processes (light path, no JVM) against a process that
  only starts a bare Spark session with the same jars.
- ``engine``: whole ``lakecat compact --dry-run`` / ``rollback`` / ``upsert`` (100 rows) processes on a warm local
  engine (``lakecat local engine``, Spark Connect: no JVM in the lakecat process) against the same commands with
  ``LAKECAT_ENGINE=in-process`` (each process starts its own Spark); wall seconds and peak RSS of the lakecat process.
- ``start``: the Spark start of a lakecat session (``cat.session()`` after ``lakecat.connect()``: jars from
  lakecat's cache, both extensions, the catalog registered) against a bare ``SparkSession.builder.getOrCreate()``,
  each in a fresh process, alternating, timed inside the process from the call to the session (interpreter,
  imports and the catalog's own setup excluded).

The driver's memory (peak RSS of Python + JVM) and CPU time are sampled from the process tree for every phase.
Everything runs in a private ``LAKECAT_HOME`` (temp dir) with its own Kafka broker; the Spark work runs in one
child process (``--child``), so the suite's own process never starts a JVM. When a section fails (exit 1), the
child's output and Spark's logs are copied out of the temp dir before it is removed (``logs_kept`` in the JSON).
The suite writes into the checkout only what it is told to: the JSON document (``--out``) and, with ``--docs``, the
generated block of the docs site's Performance page (between ``<!-- bench:start -->`` and ``<!-- bench:end -->``;
the page's prose is left alone). ``--from-json`` renders a saved document without running anything.

One module per section (``ingest``, ``freshness``, ``compaction``, ``processes``, ``light``, ``cdc``); ``measure``
holds what they measure with, ``report`` the ratios and the Markdown, ``baselines`` each format's hand-written jobs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakecat.kafka_local import LocalKafka
from lakecat.processes import free_port

from . import cdc, light
from .compaction import compaction
from .freshness import freshness
from .ingest import ingest_section
from .measure import TreeSampler, child_env, machine_info, rounded, say
from .processes import engine, make_metadata_tables, metadata, spark_start
from .report import ratios

SECTIONS = ("ingest", "freshness", "cdc", "compact", "metadata", "light", "start", "engine")
SPARK_SECTIONS = ("ingest", "freshness", "compact")

#: Sizes. ``--quick`` finishes in a few minutes on 2 cores; the default is what the README reports.
FULL: dict[str, Any] = {
    "events": 200_000, "batch": 50_000, "ingest_repeat": 6, "ingest_modes": "json,dedupe", "ingest_plain": 2,
    "ingest_big_events": 2_000_000, "ingest_big_repeat": 4,
    "fresh_seconds": 60, "fresh_rate": 50, "fresh_poll": "metadata",
    "cdc_events": None,  # benchmarks.cdc's own default
    "compact_files": 2000, "compact_rows": 200_000, "compact_target": "64MB",
    "compact_big_files": 10_000, "compact_big_rows_per_file": 1000, "compact_repeat": 8, "compact_small_repeat": 32,
    "meta_commits": 20, "meta_repeat": 5, "spark_start_repeat": 2, "start_repeat": 5, "engine_repeat": 3,
    "light_rows": 2_500, "light_big_rows": 2_000_000, "light_big_files": 200, "light_repeat": 5,
}  # fmt: skip
QUICK: dict[str, Any] = {
    "events": 10_000, "batch": 5_000, "ingest_repeat": 1, "ingest_modes": "json,dedupe", "ingest_plain": 1,
    "ingest_big_events": 0, "ingest_big_repeat": 1,
    "fresh_seconds": 8, "fresh_rate": 20, "fresh_poll": "metadata",
    "cdc_events": 2_000,
    "compact_files": 100, "compact_rows": 10_000, "compact_target": "64MB",
    "compact_big_files": 200, "compact_big_rows_per_file": 1000, "compact_repeat": 1, "compact_small_repeat": 1,
    "meta_commits": 3, "meta_repeat": 2,
    "spark_start_repeat": 0,  # 0: the suite's own Spark child's session start stands in for a separate bare start
    "start_repeat": 2,
    "light_rows": 2_500, "light_big_rows": 100_000, "light_big_files": 20, "light_repeat": 2,
    "engine_repeat": 1,
}  # fmt: skip


def run_spark_sections(params: dict[str, Any]) -> dict[str, Any]:
    """Everything that needs the JVM, in this process: (metadata tables,) ingest, freshness, compaction."""
    home = Path(params["home"])
    os.environ["LAKECAT_HOME"] = str(home)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import lakecat

    sizes, formats, sections = params["sizes"], params["formats"], params["sections"]
    sampler = TreeSampler().start()
    out: dict[str, Any] = {}
    try:
        with sampler.phase("spark_session_start") as usage:
            cat = lakecat.connect()
            cat.session().range(1).count()
        out["session_start"] = usage
        jobs: list[tuple[str, Callable[[], Any]]] = [
            ("metadata", lambda: make_metadata_tables(cat, commits=sizes["meta_commits"], formats=formats)),
            ("light", lambda: light.make_tables(cat, rows=sizes["light_rows"], big_rows=sizes["light_big_rows"],
                                                big_files=sizes["light_big_files"], formats=formats)),
            ("ingest", lambda: ingest_section(cat, params["bootstrap"], sizes, formats=formats, home=home, sampler=sampler)),
            ("freshness", lambda: freshness(cat, params["bootstrap"], seconds=sizes["fresh_seconds"], rate=sizes["fresh_rate"],
                                            poll=sizes.get("fresh_poll", "metadata"), formats=formats, home=home,
                                            sampler=sampler)),
            ("compact", lambda: compaction(cat, files=sizes["compact_files"], rows=sizes["compact_rows"],
                                           target=sizes["compact_target"], formats=formats, sampler=sampler,
                                           big_files=sizes.get("compact_big_files") or 0,
                                           big_rows_per_file=sizes.get("compact_big_rows_per_file") or 1000,
                                           repeat=sizes.get("compact_repeat") or 1,
                                           small_repeat=sizes.get("compact_small_repeat"))),
        ]  # fmt: skip
        for name, job in jobs:
            if name not in sections:
                continue
            key = f"{name}_tables" if name in ("metadata", "light") else name
            say(f"section {name}" + (" (its tables)" if name in ("metadata", "light") else ""))
            try:
                out[key] = job()
            except Exception as e:  # noqa: BLE001 - one failing section must not lose the others' figures
                say(f"section {name} failed: {e!r}")
                out[key] = {"error": f"{type(e).__name__}: {e}"[:2000]}
    finally:
        from lakecat.spark import stop_spark

        with contextlib.suppress(Exception):
            stop_spark()
        sampler.stop()
    out["memory"] = sampler.report()
    return out


def child_main(params_json: str, out_file: str) -> int:
    result = run_spark_sections(json.loads(params_json))
    Path(out_file).write_text(json.dumps(result))
    return 0


def keep_logs(home: Path, doc: dict[str, Any]) -> Path | None:
    """When a section failed, copy the Spark child's output and the Spark logs out of the suite's working directory
    ``home`` (removed at the end) into a new directory and return it; None when nothing failed or there is no log."""
    if not failed_sections(doc):
        return None
    logs = [f for f in [home / "child.log", *sorted((home / "logs").glob("*"))] if f.is_file()]
    if not logs:
        return None
    kept = Path(tempfile.mkdtemp(prefix="lakecat-bench-logs-"))
    for f in logs:
        shutil.copy2(f, kept / f.name)
    return kept


def driver_sizing() -> dict[str, Any] | None:
    """The Spark driver lakecat sizes for this machine (``lakecat doctor``'s ``spark``), as the Spark child gets it."""
    from lakecat.config import resolve_config
    from lakecat.doctor import spark_sizing

    try:
        return spark_sizing(resolve_config())
    except Exception as e:  # noqa: BLE001 - a note in the document, not a reason to stop
        return {"error": f"{type(e).__name__}: {e}"}


def run_suite(sizes: dict[str, Any], *, sections: list[str], formats: list[str], bootstrap: str | None = None,
              quick: bool = False) -> dict[str, Any]:  # fmt: skip
    """Run the selected sections (Spark work in one child process) and return the whole JSON document."""
    started = time.monotonic()
    doc: dict[str, Any] = {"suite": "benchmarks", "quick": quick, "machine": machine_info(), "sizes": sizes,
                           "formats": formats, "sections": sections, "spark": driver_sizing()}  # fmt: skip
    home = Path(tempfile.mkdtemp(prefix="lakecat-bench-"))
    env = child_env({**os.environ, "LAKECAT_HOME": str(home),
                     "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)})  # fmt: skip
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):  # the suite writes no bytecode into the checkout itself
        say("PYTHONDONTWRITEBYTECODE is set: every whole-process figure includes compiling lakecat's modules")
    broker = None
    try:
        if bootstrap is None and {"ingest", "freshness", "cdc"} & set(sections):
            broker = LocalKafka(data_dir=home / "kafka", port=free_port())
            bootstrap = broker.start(timeout=180)
            say(f"kafka broker on {bootstrap}")
        if "start" in sections:  # first: before the long sections heat the machine
            say("section start")
            try:
                doc["start"] = spark_start(home, repeat=sizes.get("start_repeat", 2))
            except Exception as e:  # noqa: BLE001
                doc["start"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        if "engine" in sections:
            say("section engine")
            try:
                doc["engine"] = engine(home, repeat=sizes.get("engine_repeat", 1), formats=formats)
            except Exception as e:  # noqa: BLE001
                doc["engine"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        spark_sections = [s for s in sections if s in SPARK_SECTIONS or s in ("metadata", "light")]
        child: dict[str, Any] = {}
        if spark_sections:
            params = {
                "home": str(home),
                "bootstrap": bootstrap,
                "sizes": sizes,
                "formats": formats,
                "sections": spark_sections,
            }
            out_file = home / "child.json"
            log = home / "child.log"
            say(f"spark child: {', '.join(spark_sections)} (log {log})")
            with open(log, "wb") as logf:
                proc = subprocess.Popen([sys.executable, "-m", "benchmarks", "--child", json.dumps(params),
                                         "--child-out", str(out_file)], env=env, stdin=subprocess.DEVNULL,
                                        stdout=logf, stderr=subprocess.PIPE)  # fmt: skip
                assert proc.stderr is not None
                for raw in proc.stderr:  # progress lines through to our stderr as they come, everything to the log
                    logf.write(raw)
                    logf.flush()
                    if raw.startswith(b"[bench"):
                        sys.stderr.write(raw.decode(errors="replace"))
                rc = proc.wait()
            child = json.loads(out_file.read_text()) if out_file.exists() else {}
            if rc != 0 or not child:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                child = {**child, "error": f"spark child exited {rc}: {tail}"}
                sys.stderr.write(tail)
            for name in SPARK_SECTIONS:
                if name in child:
                    doc[name] = child[name]
            doc["memory"] = {"spark_driver": child.get("memory", {}), "session_start": child.get("session_start")}
            if "error" in child:
                doc["spark_child_error"] = child["error"]
        made = child.get("metadata_tables") if spark_sections else None
        if "metadata" in sections and not isinstance(made, list):
            doc["metadata"] = {"error": f"its tables were not made: {(made or child).get('error', '?')}"[:2000]}
        elif "metadata" in sections:
            say("section metadata")
            try:
                doc["metadata"] = metadata(home, repeat=sizes["meta_repeat"], spark_start_repeat=sizes["spark_start_repeat"],
                                           formats=formats, commits=sizes["meta_commits"],
                                           child_start=child.get("session_start"))  # fmt: skip
            except Exception as e:  # noqa: BLE001
                doc["metadata"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        made_light = child.get("light_tables") if spark_sections else None
        if "light" in sections and not (isinstance(made_light, dict) and "error" not in made_light):
            doc["light"] = {"error": f"its tables were not made: {(made_light or child).get('error', '?')}"[:2000]}
        elif "light" in sections:
            say("section light")
            try:
                doc["light"] = light.measure(home, made_light, repeat=sizes["light_repeat"], formats=formats)  # type: ignore[arg-type]
            except Exception as e:  # noqa: BLE001
                doc["light"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        if "cdc" in sections:
            say("section cdc")
            try:
                doc["cdc"] = cdc.run_section(
                    events=sizes["cdc_events"], bootstrap=bootstrap, timeout=600 if quick else 3600
                )
            except Exception as e:  # noqa: BLE001
                doc["cdc"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
    finally:
        if broker is not None:
            with contextlib.suppress(Exception):
                broker.stop()
        with contextlib.suppress(OSError):
            kept = keep_logs(home, doc)
            if kept is not None:
                doc["logs_kept"] = str(kept)
                say(f"a section failed: the Spark child's output and Spark's logs are kept in {kept}")
        shutil.rmtree(home, ignore_errors=True)
    doc["ratios"] = ratios(doc)
    doc["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    doc["wall_s"] = rounded(time.monotonic() - started, 1)
    return doc


def failed_sections(doc: dict[str, Any]) -> list[str]:
    """The sections (and sub-parts: ``ingest.big``, ``compact.big``) that failed in this run; any makes the exit code 1."""
    failed = [s for s in SECTIONS if isinstance(doc.get(s), dict) and "error" in doc[s]]
    for s in ("ingest", "compact"):  # their part at scale fails on its own and keeps the rest
        big = doc[s].get("big") if isinstance(doc.get(s), dict) else None
        if isinstance(big, dict) and "error" in big:
            failed.append(f"{s}.big")
    return failed + (["spark_child"] if "spark_child_error" in doc else [])
