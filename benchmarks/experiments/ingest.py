"""Benchmark: `lakecat ingest` against a plain hand-written Structured Streaming job, both formats.

Not a test. Run:  python -m benchmarks.experiments.ingest [--events 200000] [--batch 50000] [--repeat 2] [--freshness]
A thin wrapper over the suite (`python -m benchmarks --sections ingest`, logic in benchmarks/): N JSON
events on a 3-partition topic of a private local KRaft broker (or --bootstrap), drained with trigger available-now
into a fresh table of each format, once by lakecat (parse + validate + dead-letter split + idempotent foreachBatch
writes) and once by the plain job (readStream kafka -> from_json -> writeStream), same Spark session and batch
size. --freshness adds the produce -> visible latency with a 1 s trigger. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..suite import FULL, failed_sections, run_suite


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=FULL["events"])
    ap.add_argument("--batch", type=int, default=FULL["batch"], help="max records per micro-batch (both jobs)")
    ap.add_argument(
        "--repeat", type=int, default=1, help="runs per job; 2 alternates the order (plain first, then lakecat first)"
    )
    ap.add_argument("--freshness", action="store_true", help="also measure freshness with trigger 'every 1s'")
    ap.add_argument("--bootstrap", help="use this broker instead of starting one")
    ap.add_argument("--formats", default="iceberg,delta")
    args = ap.parse_args()
    sizes = {**FULL, "events": args.events, "batch": args.batch, "ingest_repeat": args.repeat}
    sections = ["ingest", "freshness"] if args.freshness else ["ingest"]
    doc = run_suite(sizes, sections=sections, formats=args.formats.split(","), bootstrap=args.bootstrap)
    print(json.dumps(doc, indent=2))
    return 1 if failed_sections(doc) else 0


if __name__ == "__main__":
    sys.exit(main())
