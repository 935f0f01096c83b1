"""The ``compact`` section: ``Table.compact`` against the engine's own command on identical tables of small files
(lakecat's Spark path, ``engine="spark"``: the same engine on both sides), and ``compaction_light``: a due small table
compacted by the light engine (no JVM), by lakecat on Spark, and by the engine's own command.

``python -m benchmarks.compaction [--quick]`` runs ``compaction_light`` alone (both formats, one run each)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from functools import partial
from typing import Any

from lakecat.units import parse_size

from .baselines import baseline
from .measure import TreeSampler, release_state, rounded, say, timed

# --- compaction --------------------------------------------------------------------------------


def _queries(spark: Any, table: Any) -> dict[str, float]:
    def df() -> Any:
        return baseline(table.format).read(spark, table)

    out = {}
    for label, q in (
        ("filtered_query_s", lambda: df().where("region = 'r3' AND id % 97 = 0").agg({"amount": "sum"}).collect()),
        ("full_query_s", lambda: df().agg({"amount": "sum", "id": "count"}).collect()),
    ):
        q()  # warm the plan caches once; the figure is the second run
        out[label], _ = timed(q)
    return out


def _engine_compact(cat: Any, spark: Any, table: Any, target_bytes: int) -> Callable[[], Any]:
    """The engine's own compaction of ``table`` as a user would call it (Iceberg ``rewrite_data_files``, Delta
    ``OPTIMIZE`` through delta-spark), for one target file size: the format's ``Baseline.compact``."""
    return baseline(table.format).compact(spark, cat, table, target_bytes)


def _compact_pair(cat: Any, spark: Any, lt: Any, et: Any, target_bytes: int, row: dict[str, Any], *,
                  repeat: int = 1, first: Any | None = None, sampler: TreeSampler | None = None,
                  label: str = "compact") -> None:  # fmt: skip
    """Dry run and ``Table.compact`` of ``lt``, the engine's own command on its copy ``et``; figures into ``row``.

    With ``repeat`` > 1, first one warm-up round that no figure counts (``warmup``: the first compaction after the
    tables' build often pays for class loading, code generation and the build's garbage, on the side that runs it, e.g. a
    Delta ``OPTIMIZE`` of 2,000 files at ~9 s against ~3 s after), then ``repeat`` rounds in alternating order
    (lakecat first in even rounds, the engine first in odd ones: an even ``repeat`` has each side first equally
    often), both tables rolled back to their version before compaction between rounds (the same files again, no
    rebuild); the times are medians over the counted rounds, ``lakecat_over_engine`` the median of the rounds'
    lakecat / engine ratios (``lakecat_over_engine_of_medians`` the ratio of the medians), each round's pair in
    ``rounds``.

    ``first``: a third copy of the table that the engine's command compacts (not timed) at the start of every round,
    rolled back with the other two: whichever compaction runs first after the rollbacks is slower, lakecat's or the
    engine's alike, so an untimed one takes that place and the two timed sides are compared on equal terms.

    ``sampler``: each side's run also starts from a collected heap (not timed) and its peak memory is its own (the
    sampler's phase ``<label>_<side>``), under ``lakecat_peak_mb`` and ``engine_peak_mb`` (the highest over the rounds; Python and the JVM apart)."""
    row["dry_run_s"], plan = timed(lambda: lt.compact(target_file_size=target_bytes, dry_run=True))
    row["dry_run_estimated_files_after"] = plan.files_after
    start = [(t, t.describe().current_version) for t in (lt, et, *([first] if first is not None else []))]

    def measured(side: str, run: Callable[[], Any]) -> Any:
        if sampler is None:
            return run()
        release_state(spark)
        with sampler.phase(f"{label}_{side}") as usage:
            out = run()
        row[f"{side}_peak_mb"] = {k: usage.get(k) for k in ("python_mb", "jvm_mb", "total_mb")}
        return out

    def by_lakecat(one: dict[str, Any]) -> None:
        one["lakecat_compact_s"], res = measured(
            "lakecat", lambda: timed(lambda: lt.compact(target_file_size=target_bytes, engine="spark"))
        )
        one["lakecat_engine_s"] = res.engine_s  # lakecat's own part: the rest of Table.compact
        one["lakecat_overhead_s"] = rounded(one["lakecat_compact_s"] - res.engine_s)
        one["files_after"] = res.files_after

    def by_engine(one: dict[str, Any]) -> None:
        one["engine_compact_s"], _ = measured("engine", lambda: timed(_engine_compact(cat, spark, et, target_bytes)))

    rounds: list[dict[str, Any]] = []
    warmup = repeat > 1
    for i in range(max(1, repeat) + warmup):
        if i:  # the same small files again
            for t, version in start:
                t.rollback(version=version, force=True)
        if first is not None:
            _engine_compact(cat, spark, first, target_bytes)()  # not timed: the first place after the rollbacks
        n = i - warmup  # the counted round's number; -1: the warm-up
        one: dict[str, Any] = {"first": "lakecat" if n % 2 == 0 else "engine"}
        for side in (by_lakecat, by_engine) if n % 2 == 0 else (by_engine, by_lakecat):
            side(one)
        if n < 0:
            row["warmup"] = one
        else:
            rounds.append(one)
    for key in ("lakecat_compact_s", "lakecat_engine_s", "lakecat_overhead_s", "engine_compact_s"):
        row[key] = rounded(statistics.median(r[key] for r in rounds))
    row["files_after"] = rounds[-1]["files_after"]
    row["engine_files_after"] = et.describe().files
    of_medians = rounded(row["lakecat_compact_s"] / max(row["engine_compact_s"], 1e-9), 2)
    # Paired: each round's two runs share the machine's state of the moment (the rollback before, the load, the heap),
    # and the rounds alone differed by up to 1.4x on one pair; the median of the rounds' ratios compares like with like
    row["lakecat_over_engine"] = (
        rounded(statistics.median(r["lakecat_compact_s"] / max(r["engine_compact_s"], 1e-9) for r in rounds), 2)
        if len(rounds) > 1
        else of_medians
    )
    row["lakecat_over_engine_of_medians"] = of_medians
    row["repeat"] = len(rounds)
    if len(rounds) > 1:
        row["rounds"] = rounds


def _small_files_table(cat: Any, spark: Any, name: str, fmt: str, *, files: int, rows_per_file: int) -> Any:
    """An unpartitioned table of ``files`` data files of ``rows_per_file`` rows, written by one two-task job (each
    task rolls to a new file every ``rows_per_file`` rows: Iceberg at a 1-byte target size, which it checks every
    1,000 rows, Delta by ``maxRecordsPerFile``) and committed once."""
    t = cat.create_table(name, schema="id BIGINT, region STRING, amount DOUBLE", format=fmt)
    data = (spark.range(files * rows_per_file, numPartitions=2)
            .selectExpr("id", "concat('r', CAST(id % 4 AS STRING)) AS region", "rand(7) * 100 AS amount"))  # fmt: skip
    baseline(t.format).append_small_files(spark, data, t, rows_per_file)
    return t


def compaction_big(cat: Any, *, files: int, rows_per_file: int, target: str, formats: list[str],
                   sampler: TreeSampler | None = None, repeat: int = 1) -> dict[str, Any]:  # fmt: skip
    """Compaction of ``files`` small files (one unpartitioned table per format, an identical copy for the engine's
    own command): times, lakecat's own overhead and the driver's peak memory (Python + JVM)."""
    spark = cat.session()
    sampler = sampler or TreeSampler()
    target_bytes = parse_size(target)
    report: dict[str, Any] = {"files": files, "rows": files * rows_per_file, "rows_per_file": rows_per_file,
                              "target": target, "target_file_size": target_bytes, "results": {}}  # fmt: skip
    for fmt in formats:
        tables = {}
        row: dict[str, Any] = {"build_s": 0.0}
        for which in ("lakecat", "engine"):
            s, tables[which] = timed(
                partial(_small_files_table, cat, spark, f"bench.cb_{fmt}_{which}", fmt, files=files,
                        rows_per_file=rows_per_file)
            )  # fmt: skip
            row["build_s"] = rounded(row["build_s"] + s)
        lt, et = tables["lakecat"], tables["engine"]
        row["files_before"] = lt.describe().files
        row["engine_files_before"] = et.describe().files
        release_state(spark)  # not timed: the phase starts from a collected heap, as a new process would
        label = f"compact_big_{fmt}"
        with sampler.phase(label) as usage:
            _compact_pair(cat, spark, lt, et, target_bytes, row, repeat=repeat, sampler=sampler, label=label)
        row["cpu_s"] = usage["cpu_s"]
        row["peak_mb"] = {k: usage.get(k) for k in ("python_mb", "jvm_mb", "total_mb")}
        say(
            f"compact {row['files_before']:,} files {fmt}: lakecat {row['lakecat_compact_s']}s (overhead "
            f"{row['lakecat_overhead_s']}s) engine {row['engine_compact_s']}s, peak {usage.get('total_mb')} MB"
        )
        report["results"][fmt] = row
    return report


def compaction(cat: Any, *, files: int, rows: int, target: str, formats: list[str],
               sampler: TreeSampler | None = None, big_files: int = 0, big_rows_per_file: int = 1000,
               repeat: int = 1, small_repeat: int | None = None) -> dict[str, Any]:  # fmt: skip
    """``Table.compact`` against the engine's own command on an identical copy (a third copy, compacted untimed, takes
    each round's first place: ``_compact_pair``'s ``first``), ``small_repeat`` rounds (default ``repeat``); queries
    before and after. With ``big_files``, also ``compaction_big`` (its figures under the ``big`` key, ``repeat``
    rounds)."""
    spark = cat.session()
    sampler = sampler or TreeSampler()
    target_bytes = parse_size(target)
    report: dict[str, Any] = {
        "files": files,
        "rows": rows,
        "target": target,
        "target_file_size": target_bytes,
        "results": {},
    }
    for fmt in formats:
        tables = {}
        build_s = 0.0
        plain = baseline(fmt)
        for which in ("lakecat", "engine", "first"):
            t = cat.create_table(f"bench.c_{fmt}_{which}", schema="id BIGINT, region STRING, amount DOUBLE",
                                 format=fmt, partition_by="region", properties=plain.many_files_properties)  # fmt: skip
            data = (spark.range(rows).selectExpr("id", "concat('r', CAST(id % 4 AS STRING)) AS region",
                                                 "rand(42) * 100 AS amount").repartition(max(1, files // 4), "region", "id"))  # fmt: skip
            secs, _ = timed(partial(plain.append, data, t))
            build_s = round(build_s + secs, 3)  # the three copies' build, as the 10,000-file row's
            tables[which] = t
        lt, et = tables["lakecat"], tables["engine"]
        row: dict[str, Any] = {"build_s": build_s, "files_before": lt.describe().files}
        release_state(spark)  # not timed: the phase starts from a collected heap, as a new process would
        with sampler.phase(f"compact_{fmt}") as usage:
            row["before"] = _queries(spark, lt)
            _compact_pair(cat, spark, lt, et, target_bytes, row, repeat=small_repeat or repeat, first=tables["first"])
            row["after"] = _queries(spark, lt)
        for q in ("filtered_query_s", "full_query_s"):
            row[f"{q.removesuffix('_s')}_speedup"] = rounded(row["before"][q] / max(row["after"][q], 1e-9), 2)
        row["cpu_s"] = usage["cpu_s"]
        say(f"compact {fmt}: lakecat {row['lakecat_compact_s']}s engine {row['engine_compact_s']}s "
             f"({row['files_before']} -> {row['files_after']} files)")  # fmt: skip
        report["results"][fmt] = row
    if big_files:
        try:
            report["big"] = compaction_big(cat, files=big_files, rows_per_file=big_rows_per_file, target=target,
                                           formats=formats, sampler=sampler, repeat=repeat)  # fmt: skip
        except Exception as e:  # noqa: BLE001 - the small-table figures stand on their own
            say(f"compaction of {big_files} files failed: {e!r}")
            report["big"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
    return report


def compaction_light(
    cat: Any, *, commits: int, rows_per_commit: int, target: str, formats: list[str]
) -> dict[str, Any]:
    """A due small table (``commits`` appends, each a small file in each of 2 partitions), three identical copies: the
    light engine's compaction (pyiceberg / delta-rs, no JVM), lakecat's on Spark (``engine="spark"``, a warm session)
    and the engine's own command (``rewrite_data_files`` / ``OPTIMIZE``); one run each, rows checked equal after."""
    spark = cat.session()
    spark.range(1).count()  # a warm session: Spark's side pays no start
    target_bytes = parse_size(target)
    report: dict[str, Any] = {"commits": commits, "rows_per_commit": rows_per_commit, "target": target, "results": {}}
    for fmt in formats:
        tables = {}
        for which in ("light", "spark", "engine"):
            t = cat.create_table(f"bench.cl_{fmt}_{which}", schema="id BIGINT, region STRING, amount DOUBLE",
                                 format=fmt, partition_by="region")  # fmt: skip
            for i in range(commits):  # one commit each: a small file in each partition
                first = i * rows_per_commit
                data = spark.range(first, first + rows_per_commit, numPartitions=1).selectExpr(
                    "id", "concat('r', CAST(id % 2 AS STRING)) AS region", "rand(3) * 100 AS amount"
                )
                baseline(fmt).append(data, t)
            tables[which] = t
        row: dict[str, Any] = {"files_before": tables["light"].describe().files}
        plan = tables["light"].compact(target_file_size=target_bytes, dry_run=True)
        row["engine_chosen"], row["engine_reason"] = plan.engine, plan.engine_reason
        row["light_s"], res = timed(partial(tables["light"].compact, target_file_size=target_bytes, engine="light"))
        row["light_files_after"] = res.files_after
        row["spark_s"], res = timed(partial(tables["spark"].compact, target_file_size=target_bytes, engine="spark"))
        row["spark_files_after"] = res.files_after
        row["engine_s"], _ = timed(_engine_compact(cat, spark, tables["engine"], target_bytes))
        row["engine_files_after"] = tables["engine"].describe().files
        counts = {w: baseline(fmt).read(spark, t).count() for w, t in tables.items()}
        row["rows_equal"] = len(set(counts.values())) == 1
        say(f"compact light {fmt}: light {row['light_s']}s, lakecat on Spark {row['spark_s']}s, engine "
            f"{row['engine_s']}s ({row['files_before']} files)")  # fmt: skip
        report["results"][fmt] = row
    return report


if __name__ == "__main__":
    import json
    import os
    import sys
    import tempfile

    quick = "--quick" in sys.argv
    os.environ.setdefault("LAKECAT_HOME", tempfile.mkdtemp(prefix="lakecat-bench-light-"))
    import lakecat

    doc = compaction_light(lakecat.connect(), commits=20 if quick else 50, rows_per_commit=200 if quick else 2000,
                           target="128MB", formats=["iceberg", "delta"])  # fmt: skip
    print(json.dumps(doc, indent=2))
