"""Errors a newcomer meets get one line that says what to do (and an exit code), not a trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LAKECAT = [sys.executable, "-m", "lakecat.commands.main"]
#: A command that needs Spark (create alone runs light, with no JVM to fail).
_CREATE = ["create", "a.b", "--format", "delta", "--schema", "id INT", "--engine", "spark"]


def _run(args, env_extra, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECAT_")}
    env.update({"LAKECAT_HOME": str(tmp_path / "home"), "NO_COLOR": "1", **env_extra})
    return subprocess.run([*LAKECAT, *args], env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path)


def _one_line_error(proc, needle):
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert needle in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


def test_no_java(tmp_path):
    env = {"JAVA_HOME": "", "PATH": str(Path(sys.executable).parent)}  # python yes, java no
    proc = _run([*_CREATE, "--json"], env, tmp_path)
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
    """An empty jar cache and no route to Maven Central: the artifact, the repository and the mirror/offline hint."""
    proxy = "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=9 -Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=9"
    env = {"JAVA_TOOL_OPTIONS": proxy, "LAKECAT_JARS_CACHE": str(tmp_path / "empty-cache")}
    proc = _run([*_CREATE, "--json"], env, tmp_path)
    assert proc.returncode == 1
    from lakecat.config import resolve_config
    from lakecat.jar_sets import config_spark_set

    first = config_spark_set(resolve_config()).coordinates[0]  # the first jar of the set is the first to fail
    _one_line_error(proc, f"could not fetch {first}")
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")][0]
    assert (
        "from https://repo1.maven.org/maven2/" in line
        and "LAKECAT_MAVEN_REPOSITORY" in line
        and "lakecat jars fetch" in line
    )
    assert "JAVA_GATEWAY_EXITED" not in proc.stderr + proc.stdout
    assert json.loads(proc.stdout)["error"]["type"] == "JarResolutionError"


def _cached_jars() -> dict[str, str]:
    """The run's jar cache, filled first: the failures below happen at the JVM's start, after the jars."""
    from lakecat import jars
    from lakecat.config import resolve_config

    jars.fetch(resolve_config())
    return {"LAKECAT_JARS_CACHE": str(jars.cache_dir())}


@pytest.mark.spark
def test_java_too_old(tmp_path):
    fake = tmp_path / "jdk11" / "bin"
    fake.mkdir(parents=True)
    (fake / "java").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-version" ]; then echo \'openjdk version "11.0.22" 2024-01-16\' >&2; exit 0; fi\n'
        "echo 'Error: LinkageError occurred while loading main class org.apache.spark.launcher.Main' >&2\n"
        "echo 'java.lang.UnsupportedClassVersionError: org/apache/spark/launcher/Main has been compiled by a more recent "
        "version of the Java Runtime (class file version 61.0), this version of the Java Runtime only recognizes class "
        "file versions up to 55.0' >&2\nexit 1\n"
    )
    (fake / "java").chmod(0o755)
    proc = _run([*_CREATE, "--json"],
                {**_cached_jars(), "JAVA_HOME": str(fake.parent)}, tmp_path)  # fmt: skip
    assert proc.returncode == 1
    _one_line_error(proc, "Java 11 is too old")
    assert "needs Java 17 or newer" in proc.stderr and f"JAVA_HOME={fake.parent}" in proc.stderr
    assert "JAVA_GATEWAY_EXITED" not in proc.stderr + proc.stdout


@pytest.mark.spark
def test_jvm_without_its_memory(tmp_path):
    conf = tmp_path / "big.toml"
    conf.write_text(f'name = "big"\nwarehouse = "{tmp_path}/wh"\nmetastore = "sqlite:///{tmp_path}/c.db"\n'
                    '[spark.conf]\n"spark.driver.memory" = "100t"\n')  # fmt: skip
    proc = _run(
        [*_CREATE, "--catalog", str(conf), "--json"],
        _cached_jars(),
        tmp_path,
    )
    assert proc.returncode == 1
    _one_line_error(proc, "the Spark JVM could not get its memory")
    assert "spark.driver.memory" in proc.stderr and "spark.log" in proc.stderr
    assert "JAVA_GATEWAY_EXITED" not in proc.stderr + proc.stdout
