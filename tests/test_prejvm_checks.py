"""Every argument the table's metadata can check is checked before a JVM starts: a bad column, key, version, size,
duration or predicate column is exit 2 (an unknown version exit 1) in about a second, on both formats; so is what an
upsert's local source files tell (a malformed record by file and line, a key or --delete-when column they lack).

Each format's bad command lines run in one fresh ``python`` process that has no Spark session yet, with the Spark path
pointed at an endpoint that does not answer: a command that reached for Spark would fail with "does not accept
connections" instead of its usage error. Afterwards the process reports whether a session or a JVM exists.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import light_tables

# light_tables: even tables are Iceberg (unpartitioned), odd ones Delta (partitioned by region)
FORMAT_OF = {0: "iceberg", 1: "delta"}

# Runs each command line of argv[1] (a JSON list) through the CLI in this process; prints one JSON line per command
# and a last one with what exists of Spark.
_RUNNER = """
import contextlib, io, json, sys
from lakecat.commands.main import run_cli
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = run_cli(argv)
    print(json.dumps({"argv": argv, "code": code, "err": err.getvalue()}))
import lakecat.spark
from pyspark import SparkContext
print(json.dumps({"session": lakecat.spark.active_session() is not None, "jvm": SparkContext._gateway is not None}))
"""


def _cases(name: str, fmt: str, landing: str, version: int) -> list[tuple[list[str], int, str]]:
    """(command line, exit code, what the one error line names)."""
    other = {"iceberg": "delta", "delta": "iceberg"}[fmt]
    files = landing + "/../files"  # json and csv sources, good and malformed (see the test)
    return [
        (["upsert", name, "--from", landing, "--key", "idd"], 2, "no column idd (columns: id, region)"),
        (["upsert", name, "--from", f"{files}/ops.json", "--key", "id", "--delete-when", "nosuch = 'D'"], 2,
         "invalid --delete-when predicate: no column 'nosuch'; the columns are id, region, op"),
        (["upsert", name, "--from", f"{files}/ops.json", "--key", "id", "--delete-when", "op = 'D' OR nosuch > 1"], 2,
         "no column 'nosuch'"),
        (["upsert", name, "--from", f"{files}/ops.csv", "--key", "id", "--delete-when", "opp = 'D'"], 2,
         "no column 'opp'"),
        (["upsert", name, "--from", f"{files}/nokey.json", "--key", "id"], 2,
         "the source has no key column id (its columns: idd, region)"),
        (["upsert", name, "--from", f"{files}/bad.json", "--key", "id"], 2, "bad.json:2: not valid JSON"),
        (["upsert", name, "--from", f"{files}/bad.csv", "--key", "id"], 2,
         "bad.csv:3: 3 field(s) where the header has 2 (id, region)"),
        (["upsert", name, "--from", landing + "/missing.json", "--key", "id"], 2, "does not exist"),
        (["upsert", name, "--from", landing, "--key", "id", "--file-format", "xml"], 2, "invalid file format"),
        (["ingest", name, "--files", landing, "--dedupe-key", "nosuch", "--watermark", "1h"], 2,
         "no column nosuch (columns: id, region)"),
        (["ingest", name, "--files", landing, "--dedupe-key", "id", "--watermark", "1h", "--event-time", "nosuch"], 2,
         "no column nosuch"),
        (["ingest", name, "--files", landing, "--dedupe-key", "id", "--watermark", "1h", "--event-time", "region"], 2,
         "is STRING, not a timestamp"),
        (["ingest", name, "--files", landing, "--cdc", "debezium", "--key", "nosuch"], 2, "no column nosuch"),
        (["timetravel", name, "--version", str(version), "--engine", "spark", "--where", "nosuch = 1", "--count"], 2,
         "no column 'nosuch'"),
        (["timetravel", name, "--version", "999", "--count"], 1, "version 999"),
        (["changes", name, "--since", "999"], 1, "version 999"),
        (["rollback", name, "--version", "999"], 1, "version 999"),
        (["tag", name, "t1", "--version", "999"], 1, "version 999"),
        (["tag", name, "t2", "--retain", "3xx"], 2, "invalid duration"),
        (["compact", name, "--where", "nosuch = 1"], 2, "no column 'nosuch'"),
        (["compact", name, "--where", "id = 1; drop table x"], 2, "not allowed in a predicate"),
        (["compact", name, "--strategy", "zorder", "--by", "nosuch"], 2, "no column nosuch (columns: id, region)"),
        (["compact", name, "--target-file-size", "12qq"], 2, "invalid size"),
        (["expire", name, "--older-than", "3xx"], 2, "invalid duration"),
        (["expire", name, "--retain-last", "0"], 2, "--retain-last"),
        (["clean-orphans", name, "--older-than", "3xx"], 2, "invalid duration"),
        (["alter", name, "--drop-column", "nosuch"], 2, "no column 'nosuch'"),
        (["alter", name, "--rename-column", "nosuch=b"], 2, "no column 'nosuch'"),
        (["alter", name, "--partition-by", "nosuch"], 2, "no column 'nosuch'"),
        (["alter", name, "--cluster-by", "nosuch", "--yes"], 2, "no column 'nosuch' in the schema (columns: id, region)"),
        (["create", f"{name}_new", "--format", other, "--schema", "id BIGINTT"], 2, "unknown type"),
        (["create", f"{name}_new", "--format", other, "--schema", "id BIGINT", "--partition-by", "nosuch"], 2,
         "no column 'nosuch'"),
        (["create", name, "--format", fmt, "--schema", "id BIGINT"], 1, "already exists"),
    ]  # fmt: skip


@pytest.mark.parametrize("index", [0, 1], ids=["iceberg", "delta"])
def test_bad_arguments_are_refused_before_any_jvm(catalog, ns, tmp_path, index):
    from lakecat.processes import free_port

    name = light_tables(catalog, ns, 2, commits=2)[index]
    version = catalog.load_table(name).history().entries[0].version
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_text('{"id": 1, "region": "eu"}\n')
    files = tmp_path / "files"
    files.mkdir()
    (files / "ops.json").write_text('{"id": 1, "region": "eu", "op": "D"}\n\n{"id": 2, "op": "U"}\n')
    (files / "ops.csv").write_text("id,region,op\n1,eu,D\n")
    (files / "nokey.json").write_text('{"idd": 1, "region": "eu"}\n')
    (files / "bad.json").write_text('{"id": 1, "region": "eu"}\n{"id": 2, "region": "eu"\n{"id": 3}\n')
    (files / "bad.csv").write_text("id,region\n1,eu\n2,eu,extra\n")
    cases = _cases(name, FORMAT_OF[index], str(landing), version)
    env = {**os.environ, "LAKECAT_ENGINE": f"sc://127.0.0.1:{free_port()}"}  # nothing answers there
    proc = subprocess.run([sys.executable, "-c", _RUNNER, json.dumps([c[0] for c in cases])], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    *runs, spark = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    problems = []
    for (argv, code, names), run in zip(cases, runs, strict=True):
        errors = [ln for ln in run["err"].splitlines() if ln.startswith("error:")]
        if run["code"] != code or len(errors) != 1 or names not in errors[0]:
            problems.append(f"lakecat {' '.join(argv)}: exit {run['code']}, {run['err'].strip()!r}")
    assert not problems, "\n".join(problems)
    assert spark == {"session": False, "jvm": False}
