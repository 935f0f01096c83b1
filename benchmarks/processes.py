"""The whole-process sections: metadata answers without a JVM (``metadata``), the Spark start of a lakecat session
(``start``) and a warm engine against a cold start per command (``engine``)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lakecat.config import resolve_config
from lakecat.engine_local import LocalEngine
from lakecat.processes import free_port

from .measure import last_json, rounded, run_measured, say

SPARK_ONLY = """
from pyspark.sql import SparkSession
from lakecat import jar_sets, jars
from lakecat.config import resolve_config
paths = jars.jar_paths(jar_sets.config_spark_set(resolve_config()))
b = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
     .config("spark.jars", ",".join(map(str, paths))))
s = b.getOrCreate(); s.range(1).count(); s.stop()
"""


# --- metadata ----------------------------------------------------------------------------------
def make_metadata_tables(cat: Any, *, commits: int, formats: list[str]) -> list[str]:
    """One partitioned table per format with ``commits`` inserts after its creation."""
    names = []
    for fmt in formats:
        t = cat.create_table(f"bench.m_{fmt}", schema="id BIGINT, ts TIMESTAMP", format=fmt, partition_by="days(ts)")
        for i in range(commits):
            # a column list: Delta's days(ts) is a generated column the VALUES do not fill
            cat.session().sql(
                f"INSERT INTO {t.spark_name} (id, ts) VALUES ({i}, TIMESTAMP'2026-01-0{i % 9 + 1} 00:00:00')"
            )
        names.append(t.name)
    return names


def metadata(home: Path, *, repeat: int, spark_start_repeat: int, formats: list[str], commits: int,
             child_start: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Median wall seconds and peak RSS of whole ``lakecat`` processes vs a bare Spark session start.

    With ``spark_start_repeat`` 0 the baseline is ``child_start``: the session start (to a first ``count()``) the
    suite's Spark child measured on itself, which saves one more JVM start in ``--quick``.
    """
    env = {**os.environ, "LAKECAT_HOME": str(home), "NO_COLOR": "1"}
    lakecat_cmd = [sys.executable, "-m", "lakecat.commands.main"]
    commands = {"list": ["list", "--json"]}
    for fmt in formats:
        commands[f"describe_{fmt}"] = ["describe", f"bench.m_{fmt}", "--json"]
        commands[f"history_{fmt}"] = ["history", f"bench.m_{fmt}", "--json"]
    figures: dict[str, Any] = {}
    for name, cmd in commands.items():
        runs = [run_measured([*lakecat_cmd, *cmd], env=env, timeout=300) for _ in range(repeat)]
        bad = [r for r in runs if r["rc"] != 0]
        if bad:
            raise RuntimeError(f"lakecat {' '.join(cmd)} failed: {bad[0]['stderr'].strip()[-500:]}")
        figures[name] = {"s": rounded(statistics.median(r["seconds"] for r in runs)),
                         "peak_mb": max(r["peak_mb"]["total_mb"] for r in runs)}  # fmt: skip
        say(f"metadata {name}: {figures[name]['s']}s")
    if spark_start_repeat < 1 and child_start and child_start.get("s"):
        figures["spark_session_start"] = {"s": child_start["s"], "peak_mb": child_start.get("total_mb"),
                                          "jvm_peak_mb": child_start.get("jvm_mb"), "source": "the suite's Spark child"}  # fmt: skip
    else:
        starts = [
            run_measured([sys.executable, "-c", SPARK_ONLY], env=env, timeout=900)
            for _ in range(max(1, spark_start_repeat))
        ]
        bad = [r for r in starts if r["rc"] != 0]
        if bad:
            raise RuntimeError(f"bare Spark start failed: {bad[0]['stderr'].strip()[-500:]}")
        figures["spark_session_start"] = {"s": rounded(statistics.median(r["seconds"] for r in starts)),
                                          "peak_mb": max(r["peak_mb"]["total_mb"] for r in starts),
                                          "jvm_peak_mb": max(r["peak_mb"]["jvm_mb"] for r in starts),
                                          "source": "a separate python process"}  # fmt: skip
    say(f"metadata bare Spark session start: {figures['spark_session_start']['s']}s")
    spark_s = figures["spark_session_start"]["s"]
    ratios = {
        f"{name}_vs_spark_start": rounded(f["s"] / spark_s)
        for name, f in figures.items()
        if name != "spark_session_start"
    }
    return {"unit": "seconds (median, whole process)", "repeat": repeat, "spark_start_repeat": spark_start_repeat,
            "commits": commits, "results": figures, "ratios": ratios}  # fmt: skip


# --- Spark start: a lakecat session against a bare getOrCreate --------------------------------------
START_BARE = """
import json, time
from pyspark.sql import SparkSession
t = time.perf_counter()
s = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
print(json.dumps({"s": time.perf_counter() - t}))
s.stop()
"""
START_LAKECAT = """
import json, time
import lakecat
cat = lakecat.connect()  # the catalog (metastore, config) is not the Spark start
t = time.perf_counter()
s = cat.session()
print(json.dumps({"s": time.perf_counter() - t}))
"""


def spark_start(home: Path, *, repeat: int) -> dict[str, Any]:
    """Median Spark start of a lakecat session vs a bare ``getOrCreate()``, fresh processes, alternating order.

    The jar set is fetched first (``lakecat jars fetch``), so the figure is a start from the cache: no resolution.
    """
    env = {**os.environ, "LAKECAT_HOME": str(home), "NO_COLOR": "1"}
    fetch = subprocess.run([sys.executable, "-m", "lakecat.commands.main", "jars", "fetch", "--json"], env=env,
                           capture_output=True, text=True, timeout=1800)  # fmt: skip
    if fetch.returncode != 0:
        raise RuntimeError(f"lakecat jars fetch failed: {fetch.stderr.strip()[-500:]}")
    times: dict[str, list[float]] = {"bare": [], "lakecat": []}
    for i in range(max(1, repeat)):
        order = ("bare", "lakecat") if i % 2 == 0 else ("lakecat", "bare")
        for kind in order:
            run = run_measured(
                [sys.executable, "-c", START_BARE if kind == "bare" else START_LAKECAT], env=env, timeout=600
            )
            if run["rc"] != 0:
                raise RuntimeError(f"{kind} Spark start failed: {run['stderr'].strip()[-500:]}")
            times[kind].append(last_json(run["stdout"])["s"])
    bare, lake = statistics.median(times["bare"]), statistics.median(times["lakecat"])
    say(f"spark start: bare {bare:.2f}s, lakecat {lake:.2f}s ({lake / bare:.2f}x)")
    return {"unit": "seconds (median, timed inside a fresh process)", "repeat": repeat,
            "bare_s": rounded(bare), "lakecat_s": rounded(lake), "ratio": rounded(lake / bare),
            "runs": {k: [rounded(v) for v in vs] for k, vs in times.items()}}  # fmt: skip


# --- a warm engine (Spark Connect) against a cold start per command ------------------------------
ENGINE_COMMANDS = ("compact_dry_run", "rollback", "upsert")


def engine(home: Path, *, repeat: int, formats: list[str]) -> dict[str, Any]:
    """Median wall seconds and peak RSS of whole lakecat processes: warm (local engine) vs cold (in-process Spark).

    Per round and format: an upsert of 100 rows (new values each round, so it commits), a rollback to the version
    before it, a ``compact --dry-run``; warm and cold rounds alternate. The lakecat process's peak RSS is its own
    tree's (the engine is not in it).
    """
    env = {**os.environ, "LAKECAT_HOME": str(home), "NO_COLOR": "1"}
    env.pop("LAKECAT_ENGINE", None)
    cold_env = {**env, "LAKECAT_ENGINE": "in-process"}
    lakecat_cmd = [sys.executable, "-m", "lakecat.commands.main"]
    source = home / "engine-upsert.json"

    def upsert_source(round_: int) -> Path:
        source.write_text("".join(json.dumps({"id": i, "v": f"v{i}-{round_}"}) + "\n" for i in range(100)))
        return source

    old_home = os.environ.get("LAKECAT_HOME")
    os.environ["LAKECAT_HOME"] = str(home)
    try:
        server = LocalEngine(resolve_config(None), port=free_port())
    finally:
        if old_home is None:
            os.environ.pop("LAKECAT_HOME", None)
        else:
            os.environ["LAKECAT_HOME"] = old_home
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}

    def lakecat(*args: Any, cold: bool) -> dict[str, Any]:
        run = run_measured([*lakecat_cmd, *map(str, args), "--json"], env=cold_env if cold else env, timeout=900)
        if run["rc"] != 0:
            raise RuntimeError(f"lakecat {' '.join(map(str, args))} failed: {run['stderr'].strip()[-500:]}")
        return run

    started = time.perf_counter()
    server.start(timeout=600)
    engine_start_s = time.perf_counter() - started
    try:
        for fmt in formats:
            name = f"bench.engine_{fmt}"
            lakecat("create", name, "--format", fmt, "--schema", "id BIGINT, v STRING", cold=False)
            lakecat("upsert", name, "--from", upsert_source(-1), "--key", "id", "--file-format", "json", cold=False)
            for i in range(max(1, repeat) * 2):
                mode = "cold" if i % 2 else "warm"
                box = runs.setdefault(f"{fmt}_{mode}", {c: [] for c in ENGINE_COMMANDS})
                history = json.loads(lakecat("history", name, "--limit", "1", cold=False)["stdout"])
                before = history[0]["version"]
                box["upsert"].append(lakecat("upsert", name, "--from", upsert_source(i), "--key", "id",
                                             "--file-format", "json", cold=mode == "cold"))  # fmt: skip
                box["rollback"].append(lakecat("rollback", name, "--version", before, "--yes", cold=mode == "cold"))
                box["compact_dry_run"].append(lakecat("compact", name, "--dry-run", cold=mode == "cold"))
                say(f"engine {fmt} {mode}: " + ", ".join(f"{c} {box[c][-1]['seconds']:.1f}s" for c in ENGINE_COMMANDS))
    finally:
        server.stop()
    results: dict[str, Any] = {}
    for fmt in formats:
        for cmd in ENGINE_COMMANDS:
            warm, cold = runs[f"{fmt}_warm"][cmd], runs[f"{fmt}_cold"][cmd]
            w, c = statistics.median(r["seconds"] for r in warm), statistics.median(r["seconds"] for r in cold)
            results[f"{cmd}_{fmt}"] = {"warm_s": rounded(w), "cold_s": rounded(c), "ratio": rounded(w / c),
                                       "warm_peak_mb": max(r["peak_mb"]["total_mb"] for r in warm),
                                       "cold_peak_mb": max(r["peak_mb"]["total_mb"] for r in cold)}  # fmt: skip
    return {"unit": "seconds (median, whole process)", "repeat": repeat, "engine_start_s": rounded(engine_start_s),
            "results": results}  # fmt: skip
