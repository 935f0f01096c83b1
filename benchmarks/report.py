"""The suite's document read back: its ratios (each with the direction that is better) and the Markdown block of the
docs' Performance page (``--docs``: only the text between the generated-block markers is replaced)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakecat.formats import format_names

START_MARK = "<!-- bench:start -->"
END_MARK = "<!-- bench:end -->"
DOCS_PAGE = "docs/performance.md"  # the docs site's Performance page (``--docs``)


def _doc_formats(doc: dict[str, Any]) -> list[str]:
    """The formats a bench document measured, in its order (the built-in ones for a document without the list)."""
    return list(doc.get("formats") or format_names(builtin_only=True))


def ratios(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every ratio of the document, flat, each with which direction is better."""
    out: dict[str, dict[str, Any]] = {}

    def add(key: str, value: Any, better: str, what: str) -> None:
        if isinstance(value, (int, float)):
            out[key] = {"value": value, "better": better, "what": what}

    for fmt, row in (doc.get("ingest", {}).get("results") or {}).items():
        add(f"ingest.{fmt}.throughput", row.get("ratio"), "higher", "lakecat rows/s / plain rows/s")
        add(f"ingest.{fmt}.cpu", row.get("cpu_ratio"), "lower", "lakecat driver CPU s / plain driver CPU s")
        add(
            f"ingest.{fmt}.tuned_throughput",
            row.get("tuned_ratio"),
            "higher",
            "lakecat rows/s / rows/s of the plain job given lakecat's Kafka consumer defaults",
        )
    for fmt, row in (((doc.get("ingest") or {}).get("dedupe") or {}).get("results") or {}).items():
        add(
            f"ingest.{fmt}.dedupe_throughput",
            row.get("ratio"),
            "higher",
            "lakecat --dedupe-key rows/s / plain dropDuplicatesWithinWatermark rows/s",
        )
    big = (doc.get("ingest") or {}).get("big") or {}
    for fmt, row in (big.get("results") or {}).items():
        add(
            f"ingest_big.{fmt}.throughput",
            row.get("ratio"),
            "higher",
            f"lakecat rows/s / plain rows/s at {big['events']:,} events",
        )
    for fmt, row in ((big.get("dedupe") or {}).get("results") or {}).items():
        add(
            f"ingest_big.{fmt}.dedupe_throughput",
            row.get("ratio"),
            "higher",
            f"lakecat --dedupe-key rows/s / plain dropDuplicatesWithinWatermark rows/s at {big['events']:,} events",
        )
    for fmt, row in (doc.get("freshness", {}).get("results") or {}).items():
        add(f"freshness.{fmt}.p50", row.get("ratio_p50"), "lower", "lakecat p50 latency / plain p50 latency")
        add(f"freshness.{fmt}.p95", row.get("ratio_p95"), "lower", "lakecat p95 latency / plain p95 latency")
    c = doc.get("cdc") or {}
    for fmt in _doc_formats(doc):
        if isinstance(c.get(fmt), dict):
            add(
                f"cdc.{fmt}.throughput",
                c[fmt].get("ratio"),
                "higher",
                "lakecat events/s / plain events/s (benchmarks.cdc)",
            )
    for fmt, row in (doc.get("compact", {}).get("results") or {}).items():
        add(
            f"compact.{fmt}.time_vs_engine",
            row.get("lakecat_over_engine"),
            "lower",
            "lakecat compact s / engine command s",
        )
        add(
            f"compact.{fmt}.filtered_query_speedup",
            row.get("filtered_query_speedup"),
            "higher",
            "query s before / after",
        )
        add(f"compact.{fmt}.full_query_speedup", row.get("full_query_speedup"), "higher", "query s before / after")
    for fmt, row in (((doc.get("compact") or {}).get("big") or {}).get("results") or {}).items():
        add(
            f"compact.{fmt}.big_time_vs_engine",
            row.get("lakecat_over_engine"),
            "lower",
            "lakecat compact s / engine command s (compact_big_files small files)",
        )
    for name, value in (doc.get("metadata", {}).get("ratios") or {}).items():
        add(f"metadata.{name}", value, "lower", "lakecat process s / bare Spark session start s")
    for name, row in ((doc.get("light") or {}).get("results") or {}).items():
        add(f"light.{name}", row.get("ratio"), "lower", "lakecat process s / light-library one-liner process s")
    st = doc.get("start") or {}
    add("start.lakecat_vs_bare", st.get("ratio"), "lower", "lakecat session start s / bare getOrCreate s")
    for name, row in ((doc.get("engine") or {}).get("results") or {}).items():
        add(f"engine.{name}", row.get("ratio"), "lower", "warm-engine process s / cold-start process s")
    return out


# --- the docs' generated block ------------------------------------------------------------------------
def _n(x: Any, fmt: str = "{:,.0f}") -> str:
    return "–" if not isinstance(x, (int, float)) else fmt.format(x)


def _s(x: Any) -> str:
    if not isinstance(x, (int, float)):
        return "–"
    return f"{x:.2f} s" if x < 10 else f"{x:.1f} s"


def _x(x: Any) -> str:
    if not isinstance(x, (int, float)):
        return "–"
    return f"{x:.2f}×" if x < 10 else f"{x:.1f}×"


def _load(x: Any) -> str:
    return " / ".join(f"{v:.1f}" for v in x) if isinstance(x, list) else "?"


def machine_note(m: dict[str, Any]) -> str:
    """Where a standalone bench ran: "2 cores, 23.5 GiB, otherwise idle (load average ...)" when the load at its start
    was below the core count, else "..., shared with other work (...): the seconds are contended"."""
    start, end = (m.get("load_average_start") or [None])[0], (m.get("load_average_end") or [None])[0]
    where = f"{m['cpu_count']} cores, {m['memory_gib']} GiB"
    if start is not None and start < m["cpu_count"]:
        return f"{where}, otherwise idle (load average {start} at the start, {end} at the end, the bench's own)"
    return f"{where}, shared with other work (load average {start} at the start, {end} at the end): the seconds are contended"


def _fmt_name(fmt: str) -> str:
    return fmt.capitalize()


def _rounds_note(results: dict[str, dict[str, Any]]) -> str:
    """How a compaction table's times were taken, when over several rounds."""
    n = max((int(r.get("repeat") or 1) for r in results.values()), default=1)
    warm = "after one warm-up round that is not counted, " if any("warmup" in r for r in results.values()) else ""
    if n <= 1:
        return ""
    if not any("lakecat_over_engine_of_medians" in r for r in results.values()):  # documents before the paired ratio
        return (f"; {warm}median of {n} rounds in alternating order (lakecat first, then the engine first, ...), both "
                "tables rolled back to the same files between rounds")  # fmt: skip
    return (f"; {warm}{n} rounds in alternating order (lakecat first, then the engine first, ...), both tables rolled "
            "back to the same files between rounds; times are medians, lakecat / engine the median of the rounds' "
            "ratios")  # fmt: skip


def _ingest_table(ing: dict[str, Any], title: str) -> list[str]:
    """The ingest table (and its note) for one ingest document: the section's own, or its ``big`` one."""
    lines: list[str] = []
    rows = [(_fmt_name(fmt), r) for fmt, r in (ing.get("results") or {}).items()]
    rows += [
        (f"{_fmt_name(fmt)}, `--dedupe-key`", r) for fmt, r in ((ing.get("dedupe") or {}).get("results") or {}).items()
    ]
    tuned = any("tuned_ratio" in r for _, r in rows)  # a column for the plain job given lakecat's Kafka defaults
    size = (
        (
            f" — {ing['input_bytes'] / 1e6:,.0f} MB of JSON"
            + (
                f", {ing['topic_disk_bytes'] / 1e6:,.0f} MB of Kafka log on disk"
                if isinstance(ing.get("topic_disk_bytes"), int)
                else ""
            )
        )
        if isinstance(ing.get("input_bytes"), int)
        else ""
    )
    order = ", each row's runs together after one untimed run of it" if ing.get("order") == "by_row" else ""
    lines += ["", f"**{title}** ({ing['events']:,} JSON events{size} on a {ing.get('topic_partitions', 3)}-partition "
              f"topic, `available-now`, {ing['batch']:,} per micro-batch"
              f"{', ' + ing.get('statistic', 'mean') + ' of ' + str(ing['repeat']) + ' runs each, alternating order' if ing.get('repeat', 1) > 1 else ''}"
              f"{order}; "
              "plain = `readStream.format(\"kafka\") → from_json → writeStream`"
              + ("; `--dedupe-key`: lakecat `--dedupe-key id --watermark 60d` against the plain job with "
                 "`withWatermark(\"ts\", …).dropDuplicatesWithinWatermark([\"id\"])`, every event kept"
                 if (ing.get("dedupe") or {}).get("results") else "") + "):", "",
              "| format | plain rows/s | lakecat rows/s | lakecat MB/s (JSON in) | lakecat / plain |"
              + (" lakecat / tuned plain |" if tuned else "") + " driver CPU s plain / lakecat | lakecat setup |",
              "|---|---|---|---|---|---|---|" + ("---|" if tuned else "")]  # fmt: skip
    for name, r in rows:
        mb_s = (
            (ing["input_bytes"] / 1e6 / r["lakecat_s"])
            if isinstance(ing.get("input_bytes"), int) and r.get("lakecat_s")
            else None
        )
        lines.append(f"| {name} | {_n(r.get('plain_rows_per_s'))} | {_n(r.get('lakecat_rows_per_s'))} | {_n(mb_s, '{:.1f}')} | "
                     f"{_x(r.get('ratio'))} |{' ' + _x(r.get('tuned_ratio')) + ' |' if tuned else ''} "
                     f"{_n(r.get('plain_cpu_s'), '{:.1f}')} / {_n(r.get('lakecat_cpu_s'), '{:.1f}')} | "
                     f"{_s(r.get('lakecat_setup_s'))} |")  # fmt: skip
    if tuned:
        lines += ["", "*Tuned plain*: the same plain job given lakecat's Kafka consumer default "
                  "(`kafka.fetch.max.wait.ms` = 10, `lakecat.sources.kafka.CONSUMER_DEFAULTS`): lakecat's own cost, "
                  "apart from what that default saves."]  # fmt: skip
    return lines


def _ingest(doc: dict[str, Any]) -> list[str]:
    """The ingest tables (the section's size and, under ``big``, the one at scale)."""
    lines: list[str] = []
    ing = doc.get("ingest") or {}
    if ing.get("results") or (ing.get("dedupe") or {}).get("results"):
        lines += _ingest_table(ing, "Ingest, Kafka → table")
        if ing.get("state_released"):
            lines += ["", "Between two timed ingest runs the suite unloads Spark's state stores and collects the JVM's heap "
                      "(not timed, both jobs): a stopped `--dedupe-key` query's keys otherwise stay in the heap until "
                      "Spark's next state-store maintenance (every 60 s) and slow whichever run comes next."]  # fmt: skip
        big = ing.get("big") or {}
        if big.get("results") or (big.get("dedupe") or {}).get("results"):
            lines += _ingest_table(big, f"Ingest at {big['events']:,} events")
        elif big.get("error"):
            lines += ["", f"**Ingest at scale**: failed in this run ({big['error'][:200]})."]
    elif ing.get("error"):
        lines += ["", f"**Ingest**: failed in this run ({ing['error'][:200]})."]
    return lines


def _freshness(doc: dict[str, Any]) -> list[str]:
    """The freshness table."""
    lines: list[str] = []
    fr = doc.get("freshness") or {}
    if fr.get("results"):
        lines += ["", f"**Freshness** (event produced → first poll that sees it committed; {fr['rate_per_s']} events/s "
                  f"for {fr['seconds']} s on a 1-partition topic, `trigger=\"every 1s\"`, lakecat through "
                  f"`cat.ingest(..., background=True)`; the poll: {fr.get('poll_query', 'a count of the rows')}):", "",
                  "| format | plain p50 / p95 | lakecat p50 / p95 | lakecat / plain (p50) |", "|---|---|---|---|"]  # fmt: skip
        for fmt, r in fr["results"].items():
            p, lc = r.get("plain", {}), r.get("lakecat", {})
            lines.append(f"| {_fmt_name(fmt)} | {_s(p.get('p50_s'))} / {_s(p.get('p95_s'))} | "
                         f"{_s(lc.get('p50_s'))} / {_s(lc.get('p95_s'))} | {_x(r.get('ratio_p50'))} |")  # fmt: skip
    return lines


def _cdc(doc: dict[str, Any]) -> list[str]:
    """The CDC table."""
    lines: list[str] = []
    c = doc.get("cdc") or {}
    cdc_rows = [(fmt, c[fmt]) for fmt in _doc_formats(doc) if isinstance(c.get(fmt), dict)]
    if cdc_rows:
        lines += ["", f"**CDC, Debezium events → MERGE** (`python -m benchmarks.cdc`: {_n(c.get('events'))} messages — "
                  f"{_n(c.get('change_events'))} change events over {_n(c.get('keys'))} keys, with tombstones — on a "
                  f"3-partition topic, `available-now`, {_n(c.get('batch'))} per micro-batch; plain = a hand-written "
                  "foreachBatch with `row_number` per key and `MERGE INTO`):", "",
                  "| format | plain events/s | lakecat events/s | lakecat / plain |", "|---|---|---|---|"]  # fmt: skip
        for fmt, r in cdc_rows:
            lines.append(f"| {_fmt_name(fmt)} | {_n(r.get('plain_events_s'))} | {_n(r.get('lakecat_events_s'))} | "
                         f"{_x(r.get('ratio'))} |")  # fmt: skip
    elif c.get("skipped") or c.get("error"):
        lines += ["", f"**CDC**: not measured in this run ({str(c.get('skipped') or c.get('error'))[:200]})."]
    return lines


def _compaction(doc: dict[str, Any]) -> list[str]:
    """The compaction table."""
    lines: list[str] = []
    cp = doc.get("compact") or {}
    if cp.get("results"):
        res = cp["results"]
        fmts = list(res)
        target = cp.get("target") or f"{cp.get('target_file_size', 0):,} bytes"
        lines += ["", f"**Compaction** ({cp['files']:,} files, {cp['rows']:,} rows, {target} target; the engine's own command "
                  f"(`rewrite_data_files` / `OPTIMIZE`) runs on an identical copy{_rounds_note(res)}):", "",
                  "| | " + " | ".join(_fmt_name(f) for f in fmts) + " |", "|---" * (len(fmts) + 1) + "|"]  # fmt: skip

        def row(label: str, cell: Callable[[dict[str, Any]], str]) -> None:
            lines.append(f"| {label} | " + " | ".join(cell(res[f]) for f in fmts) + " |")

        row("files before → after", lambda r: f"{_n(r.get('files_before'))} → {_n(r.get('files_after'))}")
        row("dry run", lambda r: _s(r.get("dry_run_s")))
        row("`lakecat compact`", lambda r: _s(r.get("lakecat_compact_s")))
        if any("lakecat_engine_s" in r for r in res.values()):  # a result file from an older bench has no split
            row(
                "of it: the engine's procedure / lakecat's own part",
                lambda r: f"{_s(r.get('lakecat_engine_s'))} / {_s(r.get('lakecat_overhead_s'))}",
            )
        row("the engine's own command", lambda r: _s(r.get("engine_compact_s")))
        row("lakecat / engine", lambda r: _x(r.get("lakecat_over_engine")))
        row(
            "filtered query before → after",
            lambda r: (
                f"{_s(r.get('before', {}).get('filtered_query_s'))} → "
                f"{_s(r.get('after', {}).get('filtered_query_s'))} ({_x(r.get('filtered_query_speedup'))} faster)"
            ),
        )
        row(
            "full query before → after",
            lambda r: (
                f"{_s(r.get('before', {}).get('full_query_s'))} → "
                f"{_s(r.get('after', {}).get('full_query_s'))} ({_x(r.get('full_query_speedup'))} faster)"
            ),
        )
    return lines


def _compaction_big(doc: dict[str, Any]) -> list[str]:
    """The many-small-files compaction table."""
    lines: list[str] = []
    cp = doc.get("compact") or {}
    big = cp.get("big") or {}
    if big.get("results"):
        res = big["results"]
        fmts = list(res)
        lines += ["", f"**Compaction of {big['files']:,} small files** (one unpartitioned table, {big['rows']:,} rows, "
                  f"{big.get('rows_per_file', 0):,} per file, {big.get('target')} target; the engine's own command on an "
                  f"identical copy{_rounds_note(res)}):", "", "| | " + " | ".join(_fmt_name(f) for f in fmts) + " |",
                  "|---" * (len(fmts) + 1) + "|"]  # fmt: skip
        for label, cell in (
            ("files before → after", lambda r: f"{_n(r.get('files_before'))} → {_n(r.get('files_after'))}"),
            ("dry run", lambda r: _s(r.get("dry_run_s"))),
            ("`lakecat compact`", lambda r: _s(r.get("lakecat_compact_s"))),
            (
                "of it: the engine's procedure / lakecat's own part",
                lambda r: f"{_s(r.get('lakecat_engine_s'))} / {_s(r.get('lakecat_overhead_s'))}",
            ),
            ("the engine's own command", lambda r: _s(r.get("engine_compact_s"))),
            ("lakecat / engine", lambda r: _x(r.get("lakecat_over_engine"))),
            ("driver peak (Python + JVM)", lambda r: f"{_n((r.get('peak_mb') or {}).get('total_mb'))} MB"),
        ):
            lines.append(f"| {label} | " + " | ".join(cell(res[f]) for f in fmts) + " |")
    elif big.get("error"):
        lines += ["", f"**Compaction of many small files**: failed in this run ({big['error'][:200]})."]
    return lines


def _metadata(doc: dict[str, Any]) -> list[str]:
    """The metadata-commands table."""
    lines: list[str] = []
    md = doc.get("metadata") or {}
    if md.get("results"):
        res = md["results"]
        spark = res.get("spark_session_start", {})
        lines += ["", f"**Metadata answers without a JVM** (whole process, median of {md.get('repeat')}; tables with "
                  f"{md.get('commits')} commits after creation):", "",
                  "| command | time | peak RSS | vs a bare Spark session start |", "|---|---|---|---|"]  # fmt: skip
        for name, f in res.items():
            if name == "spark_session_start":
                continue
            cmd, _, fmt = name.partition("_")
            label = f"`lakecat {cmd}`" + (f" ({_fmt_name(fmt)})" if fmt else "")
            lines.append(
                f"| {label} | {_s(f.get('s'))} | {_n(f.get('peak_mb'))} MB | {_x(md.get('ratios', {}).get(name + '_vs_spark_start'))} |"
            )
        what = (
            "lakecat's own Spark session start, to a first `count()`"
            if spark.get("source") == "the suite's Spark child"
            else "a bare Spark session start with the same jars, to a first `count()` (what any Spark-based tool pays first)"
        )
        lines.append(f"| {what} | {_s(spark.get('s'))} | {_n(spark.get('peak_mb'))} MB | 1.00× |")
    return lines


def _start(doc: dict[str, Any]) -> list[str]:
    """The Spark start table."""
    lines: list[str] = []
    st = doc.get("start") or {}
    if st.get("ratio") is not None:
        lines += ["", f"**Spark start** (median of {st.get('repeat')}, each in a fresh process, alternating; timed from the call "
                  "to the session, imports excluded; jars from lakecat's cache, no resolution):", "",
                  "| bare `SparkSession.builder.getOrCreate()` | lakecat session (`cat.session()`: Delta + Iceberg + Kafka + "
                  "JDBC jars, both extensions, the catalog) | lakecat / bare |", "|---|---|---|",
                  f"| {_s(st.get('bare_s'))} | {_s(st.get('lakecat_s'))} | {_x(st.get('ratio'))} |"]  # fmt: skip
    elif st.get("error"):
        lines += ["", f"**Spark start**: failed in this run ({st['error'][:200]})."]
    return lines


def _engine(doc: dict[str, Any]) -> list[str]:
    """The warm-engine table."""
    lines: list[str] = []
    en = doc.get("engine") or {}
    if en.get("results"):
        lines += ["", f"**A warm engine** (whole `lakecat` processes, median of {en.get('repeat')}; warm = a running "
                  f"`lakecat local engine` (Spark Connect, started once in {_s(en.get('engine_start_s'))}), cold = "
                  "`LAKECAT_ENGINE=in-process`, a Spark start per process; peak RSS of the lakecat process tree):", "",
                  "| command | format | cold | warm | warm / cold | peak RSS cold → warm |", "|---|---|---|---|---|---|"]  # fmt: skip
        for name, r in en["results"].items():
            cmd, _, fmt = name.rpartition("_")
            label = {"compact_dry_run": "`compact --dry-run`", "upsert": "`upsert` (100 rows)"}.get(cmd, f"`{cmd}`")
            lines.append(f"| {label} | {_fmt_name(fmt)} | {_s(r.get('cold_s'))} | {_s(r.get('warm_s'))} | {_x(r.get('ratio'))} | "
                         f"{_n(r.get('cold_peak_mb'))} → {_n(r.get('warm_peak_mb'))} MB |")  # fmt: skip
    elif en.get("error"):
        lines += ["", f"**A warm engine**: failed in this run ({en['error'][:200]})."]
    return lines


def _memory(doc: dict[str, Any]) -> list[str]:
    """The driver-memory table."""
    lines: list[str] = []
    mem = (doc.get("memory") or {}).get("spark_driver") or {}
    order = [f"{sec}_{kind}{fmt}{mode}" for sec, mode in (("ingest", ""), ("ingest", "_dedupe"), ("freshness", ""))
             for fmt in _doc_formats(doc) for kind in ("plain_", "lakecat_", "tuned_")]  # fmt: skip
    order += [f"compact_{kind}{fmt}" for kind in ("", "big_") for fmt in _doc_formats(doc)]
    phases = [(k, mem[k]) for k in order if k in mem]
    if phases:
        lines += ["", "**Driver memory** (peak RSS of the benchmark's driver process tree — Python + the Spark JVM — during "
                  "each phase, in MiB; one JVM serves every phase in turn, so a later phase inherits the heap an earlier one "
                  "grew):", "",
                  "| phase | Python | JVM | total |", "|---|---|---|---|"]  # fmt: skip
        for k, v in phases:
            lines.append(
                f"| {k.replace('_', ' ')} | {_n(v.get('python_mb'))} | {_n(v.get('jvm_mb'))} | {_n(v.get('total_mb'))} |"
            )
        if "overall" in mem:
            v = mem["overall"]
            lines.append(f"| whole run | {_n(v.get('python_mb'))} | {_n(v.get('jvm_mb'))} | {_n(v.get('total_mb'))} |")
            heap = (doc.get("spark") or {}).get("driver_memory_bytes")
            if isinstance(v.get("total_mb"), (int, float)) and isinstance(heap, int) and heap > 0:
                lines += [
                    "",
                    f"The whole run's driver peak, {_n(v['total_mb'])} MiB (Python + JVM), is "
                    f"{v['total_mb'] * 1024**2 / heap:.0%} of the {_n(heap / 1024**2)} MiB heap lakecat chose for this "
                    "machine: the JVM grows its heap only as far as the work needs.",
                ]
    return lines


def _light(doc: dict[str, Any]) -> list[str]:
    """The light-reads tables (``benchmarks.light``)."""
    section, sizes = doc.get("light") or {}, doc.get("sizes") or {}
    res = section.get("results") or {}
    if not res:
        return ["", f"**Light reads**: failed in this run ({str(section.get('error', '?'))[:200]})."] if section else []
    lines = ["", f"**Time travel and changes without a JVM** (whole fresh processes, median of {section.get('repeat')}; "
             f"a table of {sizes.get('light_rows', '?'):,} rows in 5 appends; library = the delta-rs / pyiceberg "
             "one-liner for the same read; pyiceberg has no change scan, so its `changes` figure counts both ends):", "",
             "| format | read | lakecat (light) | library one-liner | lakecat / library | lakecat peak RSS |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    labels = {"timetravel_count": "`timetravel --count`", "changes_count": "`changes --count`",
              "where_limit": f"`timetravel --where \"{section.get('where')}\" --limit 10`"}  # fmt: skip
    big = []
    for key, r in res.items():
        fmt, _, name = key.partition(".")
        if name in labels:
            lines.append(f"| {_fmt_name(fmt)} | {labels[name]} | {_s(r.get('lakecat_s'))} | {_s(r.get('library_s'))} | "
                         f"{_x(r.get('ratio'))} | {_n(r.get('lakecat_peak_mb'))} MB |")  # fmt: skip
        else:
            big.append((fmt, name, r))
    if big:
        lines += ["", f"Streaming: a table of {sizes.get('light_big_rows', '?'):,} rows in {sizes.get('light_big_files', '?')} "
                  "files, one `lakecat timetravel` process each:", "", "| format | read | time | peak RSS |", "|---|---|---|---|"]  # fmt: skip
        for fmt, name, r in big:
            label = "`--limit 10`" if name == "big_limit" else "`--count`"
            lines.append(
                f"| {_fmt_name(fmt)} | {label} | {_s(r.get('lakecat_s'))} | {_n(r.get('lakecat_peak_mb'))} MB |"
            )
    return lines


def render_markdown(doc: dict[str, Any]) -> str:
    """The generated block of the docs' Performance page, markers included, for a suite document."""
    m = doc.get("machine", {})
    lines = [
        START_MARK,
        "<!-- generated by `python -m benchmarks --docs` (benchmarks/report.py); edit the generator, not this text -->",
        "",
        f"Measured by `{doc.get('command') or 'python -m benchmarks' + (' --quick' if doc.get('quick') else '')}` on "
        f"{m.get('date', '?')[:10]}: "
        f"{m.get('cpu_count', '?')} × {m.get('cpu_model') or 'unknown CPU'}, {m.get('memory_gib', '?')} GiB RAM, "
        f"{m.get('os', '?')}; Python {m.get('python', '?')}, Java {m.get('java') or '?'}, PySpark {m.get('pyspark', '?')}, "
        f"delta-spark {m.get('delta_spark', '?')}, Iceberg {m.get('iceberg_spark_runtime', '?')}. "
        f"Load average (1/5/15 min) {_load(m.get('load_average_start'))} at the start, {_load(m.get('load_average_end'))} at the end "
        "(the suite keeps both cores busy itself; other work on the machine moves absolute numbers — ratios measured in "
        "the same run are steadier). "
        'Every "plain" figure is the hand-written Spark baseline, run by the same suite in the same Spark session.',
    ]
    sizing = doc.get("spark") or {}
    if sizing.get("driver_memory"):
        src = sizing.get("sources") or {}
        lines[-1] += (
            f" Spark as lakecat sizes it for this machine, defaults only: master `{sizing.get('master')}`, driver memory "
            f"{sizing.get('driver_memory')} ({src.get('driver_memory', '?')}), "
            f"{sizing.get('shuffle_partitions')} shuffle partitions."
        )
    for section in (_ingest, _freshness, _cdc, _compaction, _compaction_big, _metadata, _light, _start, _engine,
                    _memory):  # fmt: skip
        lines += section(doc)
    lines += ["", "Rerun from a checkout: `python -m benchmarks --out bench.json` (full sizes; `--quick` for a smoke run), "
              "then `python -m benchmarks --from-json bench.json --docs` to regenerate this section.", END_MARK]  # fmt: skip
    return "\n".join(lines)


def replace_generated_block(text: str, block: str) -> str:
    """``text`` with its generated block (``START_MARK`` to ``END_MARK``, both included) replaced by ``block``; the
    rest of the page is left as it is. A page without both markers is an error: the suite never writes a new one."""
    if START_MARK not in text or END_MARK not in text:
        raise ValueError(f"no generated block ({START_MARK} ... {END_MARK}) to replace")
    before, rest = text.split(START_MARK, 1)
    _, after = rest.split(END_MARK, 1)
    return before + block + after


def named_marks(name: str) -> tuple[str, str]:
    """The markers of a standalone bench's generated block (``python -m benchmarks.<name> --docs``) in a docs page."""
    return f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"


def write_named_block(page: str, name: str, lines: list[str], *, command: str) -> None:
    """Replace the text between ``name``'s markers in ``page`` with ``lines`` (a generated Markdown table and the
    sentence saying how it was measured); the rest of the page is left as it is. A page without both markers is an
    error: a bench never adds a block to a page by itself."""
    start, end = named_marks(name)
    path = Path(page)
    text = path.read_text()
    if start not in text or end not in text:
        raise ValueError(f"{page}: no generated block ({start} ... {end}) to replace")
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    note = f"<!-- generated by `{command}`; edit the generator, not this text -->"
    path.write_text(before + "\n".join([start, note, "", *lines, "", end]) + after)


def publish(doc: dict[str, Any], *, name: str, lines: Callable[[dict[str, Any]], list[str]], command: str,
            out: str | Path | None = None, page: str | None = None, echo: bool = True) -> None:  # fmt: skip
    """What a standalone bench does with its document: print it (``echo``), keep it in ``out``, and write its table
    (``lines(doc)``) into ``page``'s ``name`` block. A document read back with ``--from-json`` is not echoed."""
    if echo:
        text = json.dumps(doc, indent=2, default=str)
        print(text)
        if out:
            Path(out).write_text(text + "\n")
    if page:
        write_named_block(page, name, lines(doc), command=command)
