"""Benchmark: metadata commands (light path, no JVM) against a bare Spark session start.

Not a test. Run:  python -m benchmarks.experiments.metadata [--repeat 5] [--commits 20]
A thin wrapper over the suite (`python -m benchmarks --sections metadata`, logic in benchmarks/): median
wall-clock seconds and peak RSS of whole `lakecat` processes (`list`, `describe` and `history` on an Iceberg and
a Delta table) and of a plain Python process that only starts a Spark session with the same jars (what any
Spark-based tool pays before its first answer). Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..suite import FULL, failed_sections, run_suite


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=FULL["meta_repeat"])
    parser.add_argument("--commits", type=int, default=FULL["meta_commits"], help="inserts after each table's creation")
    parser.add_argument("--formats", default="iceberg,delta")
    args = parser.parse_args()
    sizes = {**FULL, "meta_repeat": args.repeat, "meta_commits": args.commits,
             "spark_start_repeat": max(1, args.repeat // 2)}  # fmt: skip
    doc = run_suite(sizes, sections=["metadata"], formats=args.formats.split(","))
    print(json.dumps(doc, indent=2))
    return 1 if failed_sections(doc) else 0


if __name__ == "__main__":
    sys.exit(main())
