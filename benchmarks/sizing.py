"""The plain-job ratios with lakecat's machine-sized defaults, in a small container and on the whole machine.

    python -m benchmarks.contained --cores 1 --memory 3GiB -- \\
        python -m benchmarks --sections ingest,compact --out small.json [--set ...]
    python -m benchmarks --sections ingest,compact --out whole.json [--set ...]
    python -m benchmarks.sizing --small small.json --whole whole.json --out sizing.json --docs docs/catalogs.md

Both runs are the suite's own (each ratio measured side by side in one run, lakecat against the hand-written job or
the engine's procedure); this module puts the two side by side with the driver each one got.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .report import machine_note, publish

#: (the suite's ratio key, what it is, the bound)
ROWS = (
    ("ingest.{fmt}.throughput", "ingest: lakecat / plain rows/s", "≥ 0.95×"),
    ("ingest.{fmt}.tuned_throughput", "ingest: lakecat / plain given lakecat's Kafka consumer default", "—"),
    ("ingest.{fmt}.dedupe_throughput", "ingest `--dedupe-key`: lakecat / plain rows/s", "≥ 0.95×"),
    ("compact.{fmt}.time_vs_engine", "compaction: lakecat / the engine's procedure, s", "≤ 1.05×"),
)


def driver(run: dict[str, Any]) -> str:
    """The driver lakecat sized for the run, from the suite's note of it (else the machine)."""
    s = run.get("spark") or {}
    if s:
        return f"`{s.get('master')}`, heap {s.get('driver_memory')}"
    return "—"


def docs_lines(doc: dict[str, Any]) -> list[str]:
    runs = {"small": doc["small"], "whole": doc["whole"]}
    rows = ["| Ratio | Format | 1 core, 3 GiB | whole machine | Bound |", "|---|---|---|---|---|"]
    for key, what, bound in ROWS:
        for fmt in ("iceberg", "delta"):
            got = [(r.get("ratios") or {}).get(key.format(fmt=fmt), {}).get("value") for r in runs.values()]
            if any(g is not None for g in got):
                cells = [f"{g:.2f}×" if g is not None else "—" for g in got]
                rows.append(f"| {what} | {fmt.capitalize()} | {cells[0]} | {cells[1]} | {bound} |")
    small, whole = runs["small"], runs["whole"]
    s = small.get("sizes", {})
    rows += ["", f"Driver: {driver(small)} in the container, {driver(whole)} on the whole machine (lakecat's choice "
             f"in both; nothing pinned). Two runs of `python -m benchmarks --sections ingest,compact` at "
             f"{s.get('events', 0):,} events ({s.get('ingest_repeat')} timed runs of each) and "
             f"{s.get('compact_files', 0):,} files ({s.get('compact_repeat')} rounds), one inside "
             "`python -m benchmarks.contained --cores 1 --memory 3GiB`, one outside, on "
             f"{machine_note(whole['machine'])}. Ratios within a few percent of 1.00× are inside the run-to-run "
             "spread; with two runs and a few rounds a row moves by more. The rows \"given lakecat's Kafka consumer default\" run the plain job with "
             "`kafka.fetch.max.wait.ms` = 10 as lakecat sets it: lakecat's own cost, apart from what that setting saves."]  # fmt: skip
    for name, where in (("small", "in the container"), ("whole", "on the whole machine")):
        spread = [
            f"{fmt.capitalize()} {min(r):.2f}–{max(r):.2f}×"
            for fmt, r in (runs[name].get("compact_rounds") or {}).items()
            if r
        ]
        if spread:
            rows[-1] += f" Compaction rounds {where} (lakecat / engine, each round): {', '.join(spread)}."
        later = runs[name].get("compact_machine")
        if later:
            c = runs[name].get("compact_sizes") or {}
            which = " and ".join(f.capitalize() for f in runs[name].get("compact_formats") or [])
            rows[-1] += (f" The {which} compaction row {where} comes from a later run ({later['date'][:10]}, "
                         f"`--sections compact`, {c.get('compact_small_repeat')} rounds) on {machine_note(later)}.")  # fmt: skip
    return rows


def merged_compaction(old: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """``old`` (one run of a sizing document) with the compaction ratios and rounds of the formats a later suite
    ``run`` measured; that run is noted as ``compact_machine`` (its sizes as ``compact_sizes``)."""
    formats = tuple(f"compact.{fmt}." for fmt in compact_rounds(run))
    ratios = {k: v for k, v in (old.get("ratios") or {}).items() if not k.startswith(formats)}
    ratios.update({k: v for k, v in (run.get("ratios") or {}).items() if k.startswith(formats)})
    sizes = run.get("sizes") or {}
    return {**old, "ratios": ratios, "compact_rounds": {**(old.get("compact_rounds") or {}), **compact_rounds(run)},
            "compact_machine": run["machine"], "compact_formats": [f.split(".")[1] for f in formats],
            "compact_sizes": {k: sizes.get(k) for k in ("compact_files", "compact_repeat", "compact_small_repeat")},
            "compact_spark": run.get("spark")}  # fmt: skip


def compact_rounds(run: dict[str, Any]) -> dict[str, list[float]]:
    """Each compaction round's lakecat / engine ratio, by format, from a suite document."""
    results = (run.get("compact") or {}).get("results") or {}
    return {fmt: [round(r["lakecat_compact_s"] / max(r["engine_compact_s"], 1e-9), 2) for r in row.get("rounds") or []]
            for fmt, row in results.items()}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=Path, help="the suite's JSON from inside the small container")
    ap.add_argument("--whole", type=Path, help="the suite's JSON from the whole machine")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--docs", nargs="?", const="docs/catalogs.md", help="write the table into this page's block")
    ap.add_argument("--from-json", type=Path, help="render a saved document (with --docs)")
    ap.add_argument("--merge-into", type=Path, metavar="SIZING.json",
                    help="replace the compaction figures of the runs given (--small, --whole) in a saved document "
                         "with theirs: a later suite run of --sections compact")  # fmt: skip
    a = ap.parse_args()
    if a.from_json:
        doc = json.loads(a.from_json.read_text())
    elif a.merge_into:
        doc = json.loads(a.merge_into.read_text())
        for name, path in (("small", a.small), ("whole", a.whole)):
            if path is not None:
                doc[name] = merged_compaction(doc[name], json.loads(path.read_text()))
        a.out = a.out or a.merge_into
    else:
        keep = ("machine", "sizes", "ratios", "spark", "memory", "wall_s")
        runs = {name: json.loads(path.read_text()) for name, path in (("small", a.small), ("whole", a.whole))}
        doc = {name: {**{k: v for k, v in run.items() if k in keep}, "compact_rounds": compact_rounds(run)}
               for name, run in runs.items()}  # fmt: skip
    publish(doc, name="sizing", lines=docs_lines, command="python -m benchmarks.sizing --docs", out=a.out,
            page=a.docs, echo=not a.from_json)  # fmt: skip


if __name__ == "__main__":
    main()
