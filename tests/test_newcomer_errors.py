"""Errors a newcomer meets get one line that says what to do (and an exit code), not a trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

LAKECAT = [sys.executable, "-m", "lakecat.commands.main"]


def _run(args, env_extra, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECAT_")}
    env.update({"LAKECAT_HOME": str(tmp_path / "home"), "NO_COLOR": "1", **env_extra})
    return subprocess.run([*LAKECAT, *args], env=env, capture_output=True, text=True, timeout=180)


def _one_line_error(proc, needle):
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert needle in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


def test_no_java(tmp_path):
    env = {"JAVA_HOME": "", "PATH": str(Path(sys.executable).parent)}  # python yes, java no
    proc = _run(["create", "a.b", "--format", "delta", "--schema", "id INT", "--json"], env, tmp_path)
    assert proc.returncode == 1
    _one_line_error(proc, "no Java found")
    assert json.loads(proc.stdout)["error"]["type"] == "EnvironmentProblemError"


def test_home_not_writable(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = _run(["list"], {"LAKECAT_HOME": str(blocker / "home")}, tmp_path)
    assert proc.returncode == 1
    _one_line_error(proc, "LAKECAT_HOME writable")


def test_no_network_to_maven_central(tmp_path):
    conf = tmp_path / "off.toml"
    conf.write_text(
        f'name = "off"\nwarehouse = "{tmp_path}/wh"\nmetastore = "sqlite:///{tmp_path}/c.db"\n'
        f'[spark.conf]\n"spark.jars.ivy" = "{tmp_path}/empty-ivy"\n'  # an empty Ivy cache: must download
    )
    proxy = "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=9 -Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=9"
    proc = _run(["create", "a.b", "--format", "delta", "--schema", "id INT", "--catalog", str(conf)], {"JAVA_TOOL_OPTIONS": proxy}, tmp_path)
    assert proc.returncode == 1
    _one_line_error(proc, "could not download its jars from Maven Central")
