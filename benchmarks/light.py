"""The ``light`` section of ``python -m benchmarks``: time travel and change reads without a JVM.

Whole fresh processes, both formats: ``lakecat timetravel --count``, ``lakecat changes --count`` and
``lakecat timetravel --where ... --limit 10`` against the one-liner a user would write with the format's own
light library (delta-rs / pyiceberg) for the same read; the peak RSS of each process; and the lakecat process's
peak RSS for ``--limit`` and ``--count`` on a larger table of many files (streaming: it must not load the table).
The tables are made by the suite's Spark child (``make_tables``); this module measures in the parent.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from .baselines import baseline
from .measure import rounded, run_measured, say

WHERE = "region = 'eu' AND amt > 10"


def make_tables(cat: Any, *, rows: int, big_rows: int, big_files: int, formats: list[str]) -> dict[str, Any]:
    """A small table per format (5 appends) and a larger one of ``big_files`` files; what the reads need to know."""
    spark = cat.session()
    out: dict[str, Any] = {}
    for fmt in formats:
        t = cat.create_table(f"bench.light_{fmt}", schema="id BIGINT, region STRING, amt DECIMAL(10,2), ts TIMESTAMP",
                             format=fmt)  # fmt: skip
        per = max(rows // 5, 1)
        for i in range(5):
            spark.sql(f"""INSERT INTO {t.spark_name} SELECT id, element_at(array('eu', 'us', 'apac'), CAST(id % 3 AS INT) + 1),
                          CAST(id % 100 AS DECIMAL(10,2)), TIMESTAMP '2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id)
                          FROM range({i * per}, {(i + 1) * per})""")  # fmt: skip
        versions = [e.version for e in reversed(t.history().entries) if e.operation != "create"]
        big = cat.create_table(f"bench.light_big_{fmt}", schema="id BIGINT, region STRING, payload STRING", format=fmt)
        spark.range(big_rows).selectExpr("id", "element_at(array('eu', 'us'), CAST(id % 2 AS INT) + 1) AS region",
                                         "repeat(md5(CAST(id AS STRING)), 4) AS payload") \
            .repartition(big_files).writeTo(big.spark_name).append()  # fmt: skip
        out[fmt] = {"name": t.name, "location": t.location, "versions": versions, "big": big.name,
                    "big_version": big.history(limit=1)[0].version, "ident": f"{t.entry.ident.namespace}.{t.entry.ident.name}"}  # fmt: skip
    out["catalog"] = {
        "name": cat.name,
        "uri": cat.config.metastore.sqlalchemy_url,
        "warehouse": cat.config.warehouse_uri,
    }
    return out


def measure(home: Path, tables: dict[str, Any], *, repeat: int, formats: list[str]) -> dict[str, Any]:
    """Median whole-process seconds and peak RSS: lakecat (light path) vs the light library's one-liner."""
    env = {**os.environ, "LAKECAT_HOME": str(home), "NO_COLOR": "1"}
    lakecat_cmd = [sys.executable, "-m", "lakecat.commands.main"]
    results: dict[str, Any] = {}
    for fmt in formats:
        tb = tables[fmt]
        versions = tb["versions"]
        version, since, until = versions[2], versions[0], versions[-1]
        reads = {
            "timetravel_count": ["timetravel", tb["name"], "--version", str(version), "--count"],
            "changes_count": ["changes", tb["name"], "--since", str(since), "--until", str(until), "--count"],
            "where_limit": ["timetravel", tb["name"], "--version", str(version), "--where", WHERE, "--limit", "10"],
        }
        cat = tables["catalog"]
        fill = {"loc": tb["location"], "version": version, "since": since, "until": until, "start": since + 1,
                "where": WHERE, "catalog": cat["name"], "uri": cat["uri"], "warehouse": cat["warehouse"],
                "ident": tb["ident"]}  # fmt: skip
        scripts = baseline(fmt).light_one_liners  # the same read, the way a user writes it
        for name, args in reads.items():
            mine, theirs = [], []
            for _ in range(repeat):  # alternating order
                mine.append(run_measured([*lakecat_cmd, *args, "--json"], env=env, timeout=300))
                theirs.append(run_measured([sys.executable, "-c", scripts[name].format(**fill)], env=env, timeout=300))
            bad = [r for r in mine + theirs if r["rc"] != 0]
            if bad:
                raise RuntimeError(f"light {fmt} {name} failed: {bad[0]['stderr'].strip()[-500:]}")
            engine = json.loads(mine[-1]["stdout"]).get("engine")
            row = {"lakecat_s": rounded(statistics.median(r["seconds"] for r in mine)),
                   "library_s": rounded(statistics.median(r["seconds"] for r in theirs)),
                   "lakecat_peak_mb": max(r["peak_mb"]["total_mb"] for r in mine),
                   "library_peak_mb": max(r["peak_mb"]["total_mb"] for r in theirs), "engine": engine}  # fmt: skip
            row["ratio"] = rounded(row["lakecat_s"] / row["library_s"]) if row["library_s"] else None
            results[f"{fmt}.{name}"] = row
            say(f"light {fmt} {name}: lakecat {row['lakecat_s']}s vs library {row['library_s']}s ({engine})")
        for name, args in {"big_limit": ["--limit", "10"], "big_count": ["--count"]}.items():
            r = run_measured([*lakecat_cmd, "timetravel", tb["big"], "--version", str(tb["big_version"]), *args, "--json"],
                             env=env, timeout=600)  # fmt: skip
            if r["rc"] != 0:
                raise RuntimeError(f"light {fmt} {name} failed: {r['stderr'].strip()[-500:]}")
            results[f"{fmt}.{name}"] = {"lakecat_s": rounded(r["seconds"]), "lakecat_peak_mb": r["peak_mb"]["total_mb"],
                                        "engine": json.loads(r["stdout"]).get("engine")}  # fmt: skip
    return {"unit": "seconds (median, whole process)", "repeat": repeat, "where": WHERE, "results": results}
