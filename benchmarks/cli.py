"""The command line of ``python -m benchmarks`` (the suite: ``benchmarks/suite.py``)."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from . import suite
from .measure import say
from .report import DOCS_PAGE, render_markdown, replace_generated_block
from .suite import FULL, QUICK, SECTIONS, child_main, failed_sections, run_suite


def _scale(text: str) -> int:
    """``2m`` -> 2_000_000, ``200k`` -> 200_000, ``50000`` -> 50_000 (for ``--scale``)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"invalid scale {text!r}: a positive count like 200k or 2m")
    return int(float(m.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2).lower()])


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=(suite.__doc__ or "").split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Sections: " + ", ".join(SECTIONS) + ". Prints one JSON document on stdout; "
                                 "progress goes to stderr. Run from the checkout's root.")  # fmt: skip
    ap.add_argument(
        "--quick", action="store_true", help="small sizes (a few minutes on 2 cores) instead of the full ones"
    )
    ap.add_argument("--out", metavar="FILE.json", help="also write the JSON document to this file")
    ap.add_argument(
        "--docs",
        nargs="?",
        const=DOCS_PAGE,
        metavar="PAGE.md",
        help=f"rewrite the generated block of the docs' Performance page (default ./{DOCS_PAGE}); nothing else of it",
    )
    ap.add_argument("--from-json", metavar="FILE.json", help="render a saved document instead of running (with --docs)")
    ap.add_argument("--markdown", action="store_true", help="print the generated markdown section instead of the JSON")
    ap.add_argument(
        "--scale",
        metavar="N",
        type=_scale,
        help="events for the ingest section, e.g. 200k or 2m (the same as --set events=N)",
    )
    ap.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset of the sections")
    ap.add_argument("--formats", default="iceberg,delta")
    ap.add_argument("--bootstrap", metavar="HOST:PORT", help="use this Kafka broker instead of starting one")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one size, e.g. --set events=100000 (keys: " + ", ".join(FULL) + ")",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    return ap


def _sizes(args: argparse.Namespace) -> dict[str, Any]:
    """The sizes of this run: ``--quick`` or the full ones, then ``--scale`` and every ``--set``."""
    sizes = dict(QUICK if args.quick else FULL)
    if args.scale:  # the ingest section at this size alone
        sizes["events"], sizes["ingest_big_events"] = args.scale, 0
    for item in args.set:
        key, _, value = item.partition("=")
        if key not in sizes:
            _parser().error(f"--set {key}: unknown size; one of {', '.join(sizes)}")
        sizes[key] = (
            value
            if key in ("compact_target", "fresh_poll", "ingest_modes")
            else (None if value.lower() == "none" else float(value) if "." in value else int(value))
        )
    return sizes


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.child:
        return child_main(args.child, args.child_out)
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
    else:
        sections = [s.strip() for s in args.sections.split(",") if s.strip()]
        unknown = [s for s in sections if s not in SECTIONS]
        if unknown:
            _parser().error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
        formats = [f.strip() for f in args.formats.split(",") if f.strip()]
        doc = run_suite(_sizes(args), sections=sections, formats=formats, bootstrap=args.bootstrap, quick=args.quick)
        doc["command"] = shlex.join(["python", "-m", "benchmarks", *(argv if argv is not None else sys.argv[1:])])
    text = json.dumps(doc, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    if args.docs:
        page = Path(args.docs)
        page.write_text(replace_generated_block(page.read_text(), render_markdown(doc)))
        say(f"rewrote the generated block of {page}")
    print(render_markdown(doc) if args.markdown else text)
    return 1 if failed_sections(doc) else 0
