"""Fail closed: a gate or a maintenance job that selects no table fails (exit 1) instead of passing having checked
nothing; a malformed input file is one line naming it; Ctrl-C during a Spark command is exit 130 and one line."""

from __future__ import annotations

import json
import threading

import pytest
from helpers import light_tables

FORMAT_OF = {0: "iceberg", 1: "delta"}


@pytest.mark.parametrize("index", [0, 1], ids=["iceberg", "delta"])
def test_a_pattern_that_matches_no_table_fails_the_gate_and_maintenance(cli, catalog, ns, index):
    from lakecat.errors import NoTableMatchesError
    from lakecat.service import serve

    name = light_tables(catalog, ns, 2, commits=1)[index]
    typo = name[:-1] + "x"  # one letter off: the CI pattern a gate must not silently pass on
    for argv in (["health", typo, "--fail-on", "any"], ["maintain", typo, "--dry-run"],
                 ["maintain", typo, "--auto", "--dry-run"], ["maintain", typo, "--auto", "--every", "1s"]):  # fmt: skip
        code, out, err = cli(*argv)
        errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert code == 1 and len(errors) == 1, (argv, code, err)
        assert errors[0].startswith(f"error: no table matches {typo!r} (--allow-empty accepts that); did you mean ")
        assert repr(name) in errors[0]
        code, out, err = cli(*argv, "--json")
        assert code == 1 and json.loads(out)["error"]["type"] == "NoTableMatchesError", (argv, out)

    # --allow-empty: a script that means "whatever matches, possibly nothing"
    for argv in (["health", typo, "--fail-on", "any"], ["maintain", typo, "--dry-run"],
                 ["maintain", typo, "--auto", "--dry-run"]):  # fmt: skip
        code, out, err = cli(*argv, "--allow-empty", "--json")
        assert code == 0 and json.loads(out)["tables"] == [], (argv, code, err)

    # a plain listing is a question, and "none" is its answer: exit 0, an empty result
    code, out, err = cli("health", typo, "--json")
    assert code == 0 and json.loads(out)["tables"] == [], err
    code, out, err = cli("health", typo)
    assert code == 0 and f"no table matches {typo}" in out, err

    # the same pattern spelt right judges the table (of either format)
    code, out, err = cli("health", name, "--fail-on", "compact", "--json")
    assert [h["name"] for h in json.loads(out)["tables"]] == [name], err

    # the API refuses the same way, and says yes to allow_empty=True
    with pytest.raises(NoTableMatchesError, match="no table matches"):
        catalog.health(typo)
    with pytest.raises(NoTableMatchesError):
        catalog.maintain(typo, dry_run=True)
    with pytest.raises(NoTableMatchesError):
        catalog.maintain(typo, dry_run=True, auto=True)
    stop = threading.Event()
    stop.set()  # one look at the catalog, no pass
    with pytest.raises(NoTableMatchesError):
        serve(catalog, typo, every="1s", stop=stop)
    assert catalog.health(typo, allow_empty=True).tables == []
    assert catalog.maintain(typo, dry_run=True, allow_empty=True).tables == []
    assert serve(catalog, typo, every="1s", stop=stop, allow_empty=True).passes == 0


# --- Ctrl-C during a Spark command -----------------------------------------------------------------------------------
# The command runs in process (its own JVM); the whole process group gets the SIGINT, as a terminal sends it.
# "start": while that JVM starts (as soon as it is a child process). "job": while one of the command's Spark jobs
# runs (a thread of the process watches Spark's status tracker and sends the signal to its own group then).
_DURING_A_JOB = """
import os, signal, sys, threading, time
import lakecat.spark
from lakecat.commands.main import run_cli

def watch():
    while True:
        session = lakecat.spark.active_session()
        if session is not None and session.sparkContext.statusTracker().getActiveJobsIds():
            os.killpg(os.getpgid(0), signal.SIGINT)
            return
        time.sleep(0.05)

threading.Thread(target=watch, daemon=True).start()
sys.exit(run_cli(sys.argv[1:]))
"""


def _java_child(pid: int) -> bool:
    import subprocess

    out = subprocess.run(["ps", "-o", "comm=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return any("java" in line for line in out.split())


@pytest.mark.parametrize(("index", "when"), [(0, "start"), (1, "job")], ids=["iceberg-start", "delta-job"])
def test_ctrl_c_during_a_spark_command_is_exit_130_and_one_line(catalog, ns, tmp_path, index, when):
    import os
    import signal
    import subprocess
    import sys
    import time

    from helpers import read_rows

    name = light_tables(catalog, ns, 2, commits=1)[index]
    before = sorted((r["id"], r["region"]) for r in read_rows(catalog, name))
    source = tmp_path / "changes.json"
    source.write_text("".join(json.dumps({"id": i, "region": "zz"}) + "\n" for i in range(5, 15)))
    argv = ["upsert", name, "--from", str(source), "--key", "id"]
    env = {**os.environ, "LAKECAT_ENGINE": "in-process"}
    if when == "start":
        cmd = [sys.executable, "-m", "lakecat.commands.main", *argv]
    else:
        cmd = [sys.executable, "-c", _DURING_A_JOB, *argv]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        if when == "start":
            while proc.poll() is None and not _java_child(proc.pid):
                time.sleep(0.1)
            assert proc.poll() is None, proc.communicate()
            os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted"), err
    assert len(err.strip().splitlines()) <= 2 and "Traceback" not in err and "py4j" not in err, err
    after = sorted((r["id"], r["region"]) for r in read_rows(catalog, name))
    merged = sorted({**dict(before), **{i: "zz" for i in range(5, 15)}}.items())
    assert after in (before, merged)
