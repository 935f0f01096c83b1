"""Benchmark: `lakecat compact` against the engines' own compaction, both formats.

Not a test. Run:  python -m benchmarks.experiments.compact [--files 2000] [--rows 200000] [--target 64MB]
A thin wrapper over the suite (`python -m benchmarks --sections compact`, logic in benchmarks/): for each
format, one write repartitioned into N files builds a table of many small files, and an identical copy. lakecat's
compaction (dry-run planning from metadata + the engine call + before/after metadata reads) runs on one, the
engine's own command on the other (Iceberg `CALL <catalog>.system.rewrite_data_files`, Delta `OPTIMIZE`), same
target size. A filtered and a full query are timed before and after. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..suite import FULL, failed_sections, run_suite


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=FULL["compact_files"])
    parser.add_argument("--rows", type=int, default=FULL["compact_rows"])
    parser.add_argument("--target", default=FULL["compact_target"])
    parser.add_argument("--formats", default="iceberg,delta")
    args = parser.parse_args()
    sizes = {**FULL, "compact_files": args.files, "compact_rows": args.rows, "compact_target": args.target}
    doc = run_suite(sizes, sections=["compact"], formats=args.formats.split(","))
    print(json.dumps(doc, indent=2))
    return 1 if failed_sections(doc) else 0


if __name__ == "__main__":
    sys.exit(main())
