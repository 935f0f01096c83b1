"""The benchmark suite's plumbing (no timings): its CLI, the docs' Performance generator, the ratios; the measuring
helpers that touch tables run on real ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import read_rows

from benchmarks import cli, compaction, freshness, ingest, measure, report, suite
from benchmarks.baselines import BASELINES, Baseline, baseline
from lakecat.formats import format_names

ROOT = Path(__file__).resolve().parent.parent

SAMPLE = {
    "suite": "benchmarks",
    "quick": False,
    "spark": {
        "master": "local[2]",
        "cores": 2,
        "driver_memory": "11g",
        "driver_memory_bytes": 11 * 1024**3,
        "shuffle_partitions": 2,
        "sources": {"driver_memory": "machine"},
    },
    "machine": {
        "cpu_count": 2,
        "cpu_model": "Test CPU @ 2.0GHz",
        "memory_gib": 23.4,
        "os": "Linux-6.1-x86_64",
        "python": "3.11.9",
        "java": "17.0.15 (OpenJDK Runtime Environment)",
        "pyspark": "4.1.1",
        "delta_spark": "4.4.0",
        "iceberg_spark_runtime": "1.11.0",
        "date": "2026-01-02T03:04:05Z",
        "load_average_start": [1.5, 1.2, 1.0],
        "load_average_end": [2.0, 1.5, 1.1],
    },  # fmt: skip
    "ingest": {
        "events": 200000,
        "batch": 50000,
        "repeat": 2,
        "topic_partitions": 3,
        "input_bytes": 16_000_000,
        "results": {
            "iceberg": {
                "lakecat_s": 13.4,
                "plain_rows_per_s": 15730,
                "lakecat_rows_per_s": 14900,
                "ratio": 0.947,
                "plain_cpu_s": 30.1,
                "lakecat_cpu_s": 31.5,
                "cpu_ratio": 1.047,
                "lakecat_setup_s": 1.2,
            },
            "delta": {
                "plain_rows_per_s": 15603,
                "lakecat_rows_per_s": 15000,
                "ratio": 0.961,
                "plain_cpu_s": 29.0,
                "lakecat_cpu_s": 30.0,
                "cpu_ratio": 1.034,
                "lakecat_setup_s": 0.9,
            },
        },
    },  # fmt: skip
    "freshness": {
        "trigger": "every 1s",
        "rate_per_s": 50,
        "seconds": 60,
        "results": {
            "iceberg": {
                "plain": {"p50_s": 1.4, "p95_s": 2.2},
                "lakecat": {"p50_s": 1.5, "p95_s": 2.4},
                "ratio_p50": 1.071,
            },
            "delta": {
                "plain": {"p50_s": 1.3, "p95_s": 2.0},
                "lakecat": {"p50_s": 1.35, "p95_s": 2.1},
                "ratio_p50": 1.038,
            },
        },
    },  # fmt: skip
    "cdc": {
        "events": 55000,
        "change_events": 50000,
        "keys": 5000,
        "batch": 10000,
        "iceberg": {
            "plain_s": 20.0,
            "lakecat_s": 18.0,
            "plain_events_s": 2750,
            "lakecat_events_s": 3056,
            "ratio": 1.111,
        },
        "delta": {"plain_s": 19.0, "lakecat_s": 18.5, "plain_events_s": 2895, "lakecat_events_s": 2973, "ratio": 1.027},
    },  # fmt: skip
    "compact": {
        "files": 2000,
        "rows": 200000,
        "target_file_size": 67108864,
        "results": {
            "iceberg": {
                "files_before": 2000,
                "files_after": 4,
                "dry_run_s": 0.5,
                "lakecat_compact_s": 7.84,
                "engine_compact_s": 5.93,
                "lakecat_over_engine": 1.32,
                "before": {"filtered_query_s": 3.38, "full_query_s": 9.57},
                "after": {"filtered_query_s": 0.42, "full_query_s": 0.68},
                "filtered_query_speedup": 8.05,
                "full_query_speedup": 14.07,
            },
            "delta": {
                "files_before": 2000,
                "files_after": 4,
                "dry_run_s": 0.03,
                "lakecat_compact_s": 8.37,
                "engine_compact_s": 11.01,
                "lakecat_over_engine": 0.76,
                "before": {"filtered_query_s": 3.51, "full_query_s": 5.01},
                "after": {"filtered_query_s": 1.18, "full_query_s": 0.71},
                "filtered_query_speedup": 2.97,
                "full_query_speedup": 7.06,
            },
        },
    },  # fmt: skip
    "metadata": {
        "repeat": 5,
        "commits": 20,
        "results": {
            "list": {"s": 0.6, "peak_mb": 95},
            "describe_iceberg": {"s": 0.7, "peak_mb": 140},
            "history_delta": {"s": 0.75, "peak_mb": 120},
            "spark_session_start": {"s": 15.2, "peak_mb": 900, "jvm_peak_mb": 820},
        },
        "ratios": {
            "list_vs_spark_start": 0.039,
            "describe_iceberg_vs_spark_start": 0.046,
            "history_delta_vs_spark_start": 0.049,
        },
    },  # fmt: skip
    "memory": {
        "spark_driver": {
            "overall": {"python_mb": 300, "jvm_mb": 1500, "total_mb": 1800},
            "ingest_lakecat_iceberg": {"python_mb": 290, "jvm_mb": 1400, "total_mb": 1690},
        }
    },  # fmt: skip
}


def test_help_runs_without_spark() -> None:
    res = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, env={**os.environ, "PYSPARK_PYTHON": "/nonexistent"})  # fmt: skip
    assert res.returncode == 0, res.stderr
    for flag in ("--quick", "--out", "--docs", "--from-json", "--sections", "--set", "--formats", "--scale"):
        assert flag in res.stdout
    assert "--child" not in res.stdout  # internal
    assert "--readme" not in res.stdout  # the suite writes the docs' generated block, never the README


def test_markdown_has_every_table_and_the_machine() -> None:
    md = report.render_markdown(SAMPLE)
    assert md.startswith(report.START_MARK) and md.endswith(report.END_MARK)
    assert "2 × Test CPU @ 2.0GHz, 23.4 GiB RAM" in md and "PySpark 4.1.1" in md and "Java 17.0.15" in md
    assert "| Iceberg | 15,730 | 14,900 | 1.2 | 0.95× |" in md
    assert "| Delta | 1.30 s / 2.00 s | 1.35 s / 2.10 s | 1.04× |" in md
    assert "| Iceberg | 2,750 | 3,056 | 1.11× |" in md  # CDC
    assert "| files before → after | 2,000 → 4 | 2,000 → 4 |" in md
    assert "| `lakecat describe` (Iceberg) | 0.70 s | 140 MB | 0.05× |" in md
    assert "bare Spark session start" in md and "15.2 s" in md
    assert "| ingest lakecat iceberg | 290 | 1,400 | 1,690 |" in md
    assert "driver peak, 1,800 MiB (Python + JVM), is 16% of the 11,264 MiB heap lakecat chose" in md
    assert "master `local[2]`, driver memory 11g (machine), 2 shuffle partitions" in md
    for line in md.splitlines():  # every table row has as many cells as its header
        assert not line.startswith("|") or line.count("|") >= 3


def test_dedupe_rows_and_ratio() -> None:
    doc = json.loads(json.dumps(SAMPLE))
    doc["ingest"].update({"repeat": 3, "statistic": "median", "dedupe": {"key": "id", "watermark": "60d", "results": {
        "delta": {"plain_rows_per_s": 9000, "lakecat_rows_per_s": 8640, "ratio": 0.96, "plain_cpu_s": 20.0,
                  "lakecat_cpu_s": 21.0, "cpu_ratio": 1.05, "lakecat_setup_s": 0.4}}}})  # fmt: skip
    md = report.render_markdown(doc)
    assert "median of 3 runs each, alternating order" in md and "dropDuplicatesWithinWatermark" in md
    assert "| Delta, `--dedupe-key` | 9,000 | 8,640 | – | 0.96× | 20.0 / 21.0 | 0.40 s |" in md
    assert report.ratios(doc)["ingest.delta.dedupe_throughput"]["value"] == 0.96
    assert ingest.parse_modes("json, dedupe") == ("json", "dedupe")
    try:
        ingest.parse_modes("json,upsert")
    except ValueError as e:
        assert "upsert" in str(e)
    else:
        raise AssertionError("an unknown mode was accepted")


def test_markdown_tolerates_missing_and_failed_sections() -> None:
    doc = {"machine": SAMPLE["machine"], "ingest": {"error": "RuntimeError: boom"},
           "cdc": {"skipped": "not run"}}  # fmt: skip
    md = report.render_markdown(doc)
    assert "failed in this run" in md and "not measured in this run" in md
    assert "Compaction" not in md and "Freshness" not in md


DOCS_PAGE = """# Performance

<!-- bench:start -->
old generated block
<!-- bench:end -->

## What profiling found

- keep me
"""


def test_from_json_rewrites_the_docs_page(tmp_path, capsys, monkeypatch) -> None:
    saved = tmp_path / "bench.json"
    saved.write_text(json.dumps(SAMPLE))
    page = tmp_path / "docs" / "performance.md"
    page.parent.mkdir()
    page.write_text(DOCS_PAGE)
    monkeypatch.chdir(tmp_path)  # --docs without a value: docs/performance.md of the current directory
    assert cli.main(["--from-json", str(saved), "--docs"]) == 0
    assert json.loads(capsys.readouterr().out)["ingest"]["events"] == 200000
    text = page.read_text()
    assert "old generated block" not in text and "| Iceberg | 15,730 | 14,900 | 1.2 | 0.95× |" in text
    assert text.startswith("# Performance\n\n" + report.START_MARK) and text.endswith(
        "## What profiling found\n\n- keep me\n"
    )
    assert "--from-json bench.json --docs" in text


def test_the_generated_block_is_replaced_and_nothing_else() -> None:
    first = report.replace_generated_block(DOCS_PAGE, report.render_markdown(SAMPLE))
    assert "old generated block" not in first and first.startswith("# Performance\n\n" + report.START_MARK)
    assert first.endswith(report.END_MARK + "\n\n## What profiling found\n\n- keep me\n")
    changed = json.loads(json.dumps(SAMPLE))
    changed["ingest"]["results"]["iceberg"]["lakecat_rows_per_s"] = 16000
    second = report.replace_generated_block(first, report.render_markdown(changed))
    assert "16,000" in second and "14,900" not in second and second.count(report.START_MARK) == 1
    assert report.replace_generated_block(second, report.render_markdown(changed)) == second  # idempotent
    with pytest.raises(ValueError, match="no generated block"):  # a page without the markers is never rewritten
        report.replace_generated_block("# Performance\n\nprose\n", report.render_markdown(SAMPLE))


def test_the_docs_performance_page_is_generated_from_the_checked_in_json() -> None:
    doc = json.loads((ROOT / "benchmarks" / "results" / "suite.json").read_text())
    page = (ROOT / report.DOCS_PAGE).read_text()
    assert report.render_markdown(doc) in page, (
        "regenerate: python -m benchmarks --from-json benchmarks/results/suite.json --docs"
    )


def test_the_maintenance_service_page_is_generated_from_the_checked_in_json() -> None:
    from benchmarks import service

    doc = json.loads((ROOT / "benchmarks" / "results" / "service.json").read_text())
    page = (ROOT / "docs" / "maintenance-service.md").read_text()
    assert "\n".join(service.docs_lines(doc)) in page, (
        "regenerate: python -m benchmarks.service --from-json benchmarks/results/service.json --docs"
    )
    one = {"rounds": [{"actions": {"expire ok": 0.1, "compact (major) ok": 0.2, "clean-orphans failed": 0.0}}]}
    assert service._steps_ran(one) == "compacted and expired"  # what ran, in the order a pass runs it
    assert service._steps_ran({"rounds": [{"actions": {"compact (minor) ok": 0.1}}]}) == "compacted"


def test_ratios_are_flat_with_a_direction() -> None:
    r = report.ratios(SAMPLE)
    assert r["ingest.iceberg.throughput"] == {
        "value": 0.947,
        "better": "higher",
        "what": "lakecat rows/s / plain rows/s",
    }
    assert r["freshness.delta.p50"]["better"] == "lower"
    assert r["cdc.delta.throughput"] == {
        "value": 1.027,
        "better": "higher",
        "what": "lakecat events/s / plain events/s (benchmarks.cdc)",
    }
    assert r["compact.iceberg.time_vs_engine"]["value"] == 1.32
    assert r["metadata.list_vs_spark_start"]["value"] == 0.039


def test_failed_sections_and_quantiles() -> None:
    assert suite.failed_sections(SAMPLE) == []
    assert suite.failed_sections({"compact": {"error": "x"}, "cdc": {"skipped": "y"}}) == ["compact"]
    assert suite.failed_sections({"compact": {"results": {}, "big": {"error": "MemoryError"}}}) == ["compact.big"]
    assert suite.failed_sections({"ingest": {"results": {}, "big": {"error": "ConnectionRefusedError"}}}) == [
        "ingest.big"
    ]
    assert measure.quantile([3.0, 1.0, 2.0, 4.0], 0.5) == 2.5
    assert measure.quantile([], 0.5) is None


def test_a_failed_section_keeps_the_spark_logs(tmp_path) -> None:
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    (home / "child.log").write_text("[bench] ingest at 2,000,000 events failed\n")
    (home / "logs" / "spark.log").write_text("java.lang.OutOfMemoryError: Java heap space\n")
    ok = {"ingest": {"results": {"iceberg": {"ratio": 1.0}}}, "compact": {"results": {}}}
    assert suite.failed_sections(ok) == [] and suite.keep_logs(home, ok) is None
    failed = {
        "ingest": {"results": {}, "big": {"events": 2_000_000, "error": "ConnectionRefusedError(111)"}},
        "freshness": {"error": "ConnectionRefusedError(111)"},
    }
    assert suite.failed_sections(failed) == ["freshness", "ingest.big"]
    kept = suite.keep_logs(home, failed)
    assert kept is not None and kept.parent != home and not kept.is_relative_to(home)
    assert (kept / "spark.log").read_text().startswith("java.lang.OutOfMemoryError")
    assert (kept / "child.log").read_text().startswith("[bench] ingest")
    assert suite.keep_logs(home, {"spark_child_error": "spark child exited 1: ..."}) is not None
    assert suite.keep_logs(tmp_path / "empty", failed) is None  # nothing to keep


def test_the_ingest_at_scale_renders_and_has_its_ratios() -> None:
    doc = json.loads(json.dumps(SAMPLE))
    row = {
        "plain_rows_per_s": 34913,
        "lakecat_rows_per_s": 33415,
        "ratio": 0.957,
        "plain_cpu_s": 91.6,
        "lakecat_cpu_s": 97.8,
        "cpu_ratio": 1.068,
        "lakecat_setup_s": 0.21,
        "lakecat_s": 59.85,
    }
    doc["ingest"].update({"state_released": True, "big": {
        "events": 2_000_000, "batch": 50000, "repeat": 3, "statistic": "median", "topic_partitions": 3,
        "input_bytes": 161_377_780, "topic_disk_bytes": 181_465_054, "results": {"delta": dict(row, ratio=0.96)},
        "dedupe": {"key": "id", "watermark": "60d", "results": {"iceberg": row}}}})  # fmt: skip
    md = report.render_markdown(doc)
    assert "**Ingest at 2,000,000 events** (2,000,000 JSON events — 161 MB of JSON, 181 MB of Kafka log on disk" in md
    assert "| Iceberg, `--dedupe-key` | 34,913 | 33,415 | 2.7 | 0.96× | 91.6 / 97.8 | 0.21 s |" in md
    assert "unloads Spark's state stores" in md
    r = report.ratios(doc)
    assert (
        r["ingest_big.iceberg.dedupe_throughput"]["value"] == 0.957
        and r["ingest_big.delta.throughput"]["value"] == 0.96
    )
    assert r["ingest.iceberg.throughput"]["value"] == doc["ingest"]["results"]["iceberg"]["ratio"]  # the 200k keys stay
    doc["ingest"]["big"] = {"events": 2_000_000, "error": "RuntimeError: boom"}
    assert "**Ingest at scale**: failed in this run (RuntimeError: boom)." in report.render_markdown(doc)


def test_process_tree_usage_sees_this_process() -> None:
    usage = measure.tree_usage()
    assert usage["total_mb"] > 1 and usage["cpu_s"] > 0 and usage["jvm_mb"] >= 0


def test_scale_sets_the_ingest_events() -> None:
    assert cli._scale("2m") == 2_000_000 and cli._scale("200k") == 200_000 and cli._scale("1.5M") == 1_500_000
    assert cli._scale("50000") == 50_000
    res = subprocess.run([sys.executable, "-m", "benchmarks", "--scale", "lots", "--sections", "ingest"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert res.returncode == 2 and "invalid scale 'lots'" in res.stderr


def test_the_many_small_files_compaction_and_the_input_size_render() -> None:
    doc = json.loads(json.dumps(SAMPLE))
    doc["ingest"].update({"input_bytes": 21_500_000, "topic_disk_bytes": 30_100_000})
    for row in doc["compact"]["results"].values():
        row.update({"lakecat_engine_s": 5.5, "lakecat_overhead_s": 0.31})
    doc["compact"]["big"] = {"files": 10000, "rows": 10_000_000, "rows_per_file": 1000, "target": "64MB", "results": {
        fmt: {"files_before": 10000, "files_after": 3, "dry_run_s": 1.2, "lakecat_compact_s": 42.0, "lakecat_engine_s": 41.2,
              "lakecat_overhead_s": 0.8, "engine_compact_s": 40.0, "lakecat_over_engine": 1.05,
              "peak_mb": {"python_mb": 350, "jvm_mb": 1400, "total_mb": 1750}} for fmt in ("iceberg", "delta")}}  # fmt: skip
    doc["memory"]["spark_driver"]["compact_big_delta"] = {"python_mb": 350, "jvm_mb": 1400, "total_mb": 1750}
    doc["memory"]["spark_driver"]["ingest_tuned_delta"] = {"python_mb": 230, "jvm_mb": 1640, "total_mb": 1870}
    md = report.render_markdown(doc)
    assert "200,000 JSON events — 22 MB of JSON, 30 MB of Kafka log on disk" in md
    assert "**Compaction of 10,000 small files**" in md and "| files before → after | 10,000 → 3 | 10,000 → 3 |" in md
    assert "| of it: the engine's procedure / lakecat's own part | 41.2 s / 0.80 s |" in md
    assert "| driver peak (Python + JVM) | 1,750 MB | 1,750 MB |" in md
    assert "| compact big delta | 350 | 1,400 | 1,750 |" in md
    assert "| ingest tuned delta | 230 | 1,640 | 1,870 |" in md  # the tuned plain job's phases are measured too
    assert report.ratios(doc)["compact.delta.big_time_vs_engine"]["value"] == 1.05


def test_the_freshness_poll_counts_what_a_reader_sees(catalog, spark, ns, table_format):
    """The freshness section's poll on a real table, both ways (a full run once failed here after the format refactor)."""
    t = catalog.create_table(f"{ns}.fresh_poll", schema=ingest.SCHEMA, format=table_format)
    metadata, by_spark = freshness.visible_rows(catalog, t, "metadata"), freshness.visible_rows(catalog, t, "spark")
    assert metadata() == 0 and by_spark() == 0
    spark.sql(f"""INSERT INTO {t.spark_name} VALUES (1, TIMESTAMP '2024-01-01 00:00:00', 'a', 1.50),
        (2, NULL, 'b', NULL), (3, TIMESTAMP '2024-01-02 00:00:00', NULL, 2.00)""")
    assert metadata() == 3 and by_spark() == 3
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (4, NULL, 'd', 0.10)")
    assert metadata() == 4 and by_spark() == 4


def test_the_compaction_pair_alternates_and_rolls_back_between_rounds(catalog, spark, ns, table_format):
    """Repeated compaction rounds (the fairness of the lakecat / engine ratio): the order alternates and every round
    compacts the same small files again (both tables rolled back in between); both tables end compacted. A third
    copy (``first``) is compacted at the start of every round, untimed, and rolled back with them."""
    tables = {}
    for which in ("l", "e", "f"):
        t = catalog.create_table(f"{ns}.pair_{which}", schema="id BIGINT, region STRING", format=table_format)
        for i in range(3):
            spark.sql(f"INSERT INTO {t.spark_name} VALUES ({i}, 'r{i}')")
        tables[which] = t
    lt, et = tables["l"], tables["e"]
    before = lt.describe().files
    row: dict = {}
    commits_before = len(tables["f"].history().entries)
    compaction._compact_pair(catalog, spark, lt, et, 64 * 1024 * 1024, row, repeat=3, first=tables["f"])
    # the third copy: compacted in each of the 4 rounds (warm-up included), rolled back in between
    assert tables["f"].describe().files == 1
    assert len(tables["f"].history().entries) - commits_before >= 4
    # a warm-up round first, not counted; then each side first in turn
    assert row["warmup"]["files_after"] == 1 and row["warmup"]["engine_compact_s"] > 0
    assert [r["first"] for r in row["rounds"]] == ["lakecat", "engine", "lakecat"]
    assert before == 3 and all(r["files_after"] == 1 for r in row["rounds"])  # each round merged the 3 files again
    assert row["repeat"] == 3 and row["files_after"] == 1 and row["engine_files_after"] == 1
    assert all(r["lakecat_compact_s"] > 0 and r["engine_compact_s"] > 0 for r in row["rounds"])
    assert sorted(r["lakecat_compact_s"] for r in row["rounds"])[1] == row["lakecat_compact_s"]  # the median
    # lakecat / engine pairs each round's two runs: the median of the rounds' ratios (the ratio of medians kept too)
    ratios = sorted(r["lakecat_compact_s"] / r["engine_compact_s"] for r in row["rounds"])
    assert row["lakecat_over_engine"] == round(ratios[1], 2)
    assert row["lakecat_over_engine_of_medians"] == round(row["lakecat_compact_s"] / row["engine_compact_s"], 2)
    assert row["warmup"] not in row["rounds"]
    assert spark.table(lt.spark_name).count() == 3 and spark.table(et.spark_name).count() == 3
    for t in (lt, et):  # read by pyiceberg / delta-rs: the rolled-back-and-compacted tables are valid and whole
        assert sorted((r["id"], r["region"]) for r in read_rows(catalog, t)) == [(0, "r0"), (1, "r1"), (2, "r2")]
    md = report._rounds_note({"x": row})
    assert "after one warm-up round that is not counted, 3 rounds in alternating order" in md
    assert "lakecat / engine the median of the rounds' ratios" in md


@pytest.mark.spark
@pytest.mark.kafka
@pytest.mark.slow
def test_the_ingest_section_runs_both_sizes_apart_and_releases_state(catalog, kafka_bootstrap, tmp_path):
    """The ingest section end to end on a real broker, tiny: the second size's tables and checkpoints are its own
    (a shared checkpoint would make its runs no-ops), every run keeps every event, and the state stores are released."""
    sizes = {"events": 400, "batch": 200, "ingest_repeat": 1, "ingest_modes": "dedupe", "ingest_plain": 1,
             "ingest_big_events": 600, "ingest_big_repeat": 1}  # fmt: skip
    out = ingest.ingest_section(catalog, kafka_bootstrap, sizes, formats=["iceberg", "delta"], home=tmp_path,
                               sampler=measure.TreeSampler())  # fmt: skip
    for doc, n in ((out, 400), (out["big"], 600)):
        assert doc["events"] == n and doc["state_released"] is True and doc["order"] == "by_row"
        for fmt in ("iceberg", "delta"):
            row = doc["dedupe"]["results"][fmt]
            assert row["ratio"] > 0 and row["plain_spark"]["triggers_with_data"] >= n // 200
    for fmt in ("iceberg", "delta"):  # each size wrote its own tables, every event once (the independent readers)
        for name, n in (
            (f"bench.i_lakecat_dedupe_{fmt}_0", 400),
            (f"bench.ibig_plain_dedupe_{fmt}_0", 600),
            (f"bench.i_lead_dedupe_{fmt}", 400),
        ):  # each row's untimed first run, of the full size
            assert sorted(r["id"] for r in read_rows(catalog, name)) == list(range(n))
    assert "each row's runs together after one untimed run of it" in report.render_markdown({"ingest": out})


def test_every_builtin_format_has_its_hand_written_baseline() -> None:
    """Each format's baseline is registered by name inside the benchmarks (no adapter knows the harness): every member
    of the protocol for the built-in formats; a format without one is named in the error."""
    members = [m for m in vars(Baseline) if not m.startswith("_")] + list(Baseline.__annotations__)
    assert set(BASELINES) == set(format_names(builtin_only=True))
    for name in BASELINES:
        plain = baseline(name)
        missing = [m for m in members if not hasattr(plain, m)]
        assert not missing, (name, missing)
        assert set(plain.light_one_liners) == {"timetravel_count", "changes_count", "where_limit"}
    with pytest.raises(LookupError, match="no hand-written baseline for jsonlog tables"):
        baseline("jsonlog")


def test_the_mirror_bench_runs_small_and_renders(tmp_path) -> None:
    import json as _json

    from benchmarks.mirror import docs_lines

    out = tmp_path / "mirror.json"
    res = subprocess.run([sys.executable, "-m", "benchmarks.mirror", "--files", "20", "--commits", "1", "--rounds", "1",
                          "--large-files", "2", "--large-rows-per-file", "100", "--out", str(out)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    doc = _json.loads(out.read_text())
    assert doc["figures"]["first_mirror_files"] == 20 and doc["figures"]["files"] == 30
    assert doc["figures"]["large_files"]["rows"] == 200 and "read_ratio_mirror_over_native_iceberg" in doc["figures"]
    assert any("first mirror of 20 files" in line for line in docs_lines(doc))
