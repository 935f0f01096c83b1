"""What a user installs: the sdist and the wheel built from this source tree, installed (not editable) into a fresh
virtualenv outside the checkout, run from an empty directory with a Java runtime that has no compiler.

The build is ``python -m build`` (the sdist, then the wheel built from the sdist) over a copy of the source tree, so a
file the sdist forgets fails here too. The smoke (tests/wheel_smoke.py) runs in the new virtualenv: one Spark session
creates, upserts and reads back both formats through Spark, with lakecat's Spark extension in use; the CLI answers
``--help`` and ``--version``, reads through Spark, and serves Iceberg's REST catalog on loopback. A ``javac`` first on
``PATH`` records any call: nothing may compile Java on a user's machine.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from helpers import listening_on

from lakecat.jars import java_executable
from lakecat.processes import free_port

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def _run(cmd: list[str | Path], *, timeout: float, **kwargs) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kwargs)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """``python -m build`` over the tree's files (tracked and new, nothing ignored: no jar built in the checkout)."""
    source = tmp_path_factory.mktemp("source")
    listed = _run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, timeout=60).stdout
    for rel in filter(None, listed.split("\0")):
        if (ROOT / rel).is_file():
            (source / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, source / rel)
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", out, source], timeout=900)
    return out


def _source_packages() -> set[str]:
    """Every package of the source tree as it installs (commands/ and catalog_conf/ inside lakecat)."""
    found = {"lakecat.catalog_conf"}
    for init in [*ROOT.glob("lakecat/**/__init__.py"), *ROOT.glob("commands/**/__init__.py")]:
        rel = init.parent.relative_to(ROOT).as_posix().replace("/", ".")
        found.add("lakecat." + rel if rel.startswith("commands") else rel)
    return found


def test_the_wheel_and_sdist_hold_every_package_the_jars_and_py_typed(dist):
    wheel = zipfile.ZipFile(next(dist.glob(f"lakecat-{VERSION}-py3-none-any.whl")))
    names = set(wheel.namelist())
    packages = {n.rsplit("/", 1)[0].replace("/", ".") for n in names if n.endswith("/__init__.py")}
    assert _source_packages() - packages - {"lakecat.catalog_conf"} == set()
    assert {"lakecat/py.typed", "lakecat/java/lakecat-spark.jar", "lakecat/java/lakecat-rest.jar",
            "lakecat/catalog_conf/local.toml", "lakecat/log4j2.properties"} <= names  # fmt: skip
    assert not any(n.startswith(("tests/", "benchmarks/", "commands/")) for n in names)
    lab = [n for n in names if any(word in n.lower() for word in ("bench", "soak", "baseline", "experiment"))]
    assert not lab, f"the lab in the wheel: {lab}"
    for jar in ("lakecat-spark.jar", "lakecat-rest.jar"):
        with zipfile.ZipFile(wheel.open(f"lakecat/java/{jar}")) as inner:
            assert any(n.endswith(".class") for n in inner.namelist())
    with tarfile.open(next(dist.glob(f"lakecat-{VERSION}.tar.gz"))) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"setup.py", "pyproject.toml", "lakecat/java/LakecatExtensions.java", "lakecat/py.typed",
            "lakecat/java/LoopbackRESTCatalogServer.java", "commands/main.py", "catalog_conf/local.toml"} <= members  # fmt: skip
    assert not any(m.endswith(".jar") for m in members)


def _jre_without_compiler(into: Path) -> Path:
    """A Java home that runs Java and has no ``javac``: the JDK's ``java`` launcher copied (it finds its home from its
    own path) beside links to the JDK's runtime files, without the JDK's tools."""
    home = Path(os.path.realpath(java_executable())).parent.parent
    (into / "bin").mkdir(parents=True)
    shutil.copy2(home / "bin" / "java", into / "bin" / "java")
    for entry in home.iterdir():
        if entry.name not in ("bin", "jmods", "include"):
            (into / entry.name).symlink_to(entry)
    return into


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory) -> dict[str, object]:
    """A fresh virtualenv with the wheel installed (not editable), and the environment of a machine without javac."""
    base = tmp_path_factory.mktemp("user")
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", venv], timeout=300)
    wheel = next(dist.glob("lakecat-*.whl"))
    _run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel], timeout=1800)
    jre = _jre_without_compiler(base / "jre")
    shim = base / "shim"
    shim.mkdir()
    calls = base / "javac-calls"
    (shim / "javac").write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 1\n')
    (shim / "javac").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKECAT_", "PYTHON", "VIRTUAL_ENV", "SPARK_"))}
    env.update({
        "PATH": os.pathsep.join([str(shim), str(jre / "bin"), str(venv / "bin"), "/usr/bin", "/bin"]),
        "JAVA_HOME": str(jre), "LAKECAT_HOME": str(base / "home"), "CI": "true", "NO_COLOR": "1",
        # the suite's one jar cache (the engine's jars are downloaded once per run), the suite's small Spark
        "LAKECAT_JARS_CACHE": os.environ.get("LAKECAT_JARS_CACHE", ""), "LAKECAT_SPARK_MASTER": "local[2]",
        "SPARK_DRIVER_MEMORY": "960m",
    })  # fmt: skip
    if not env["LAKECAT_JARS_CACHE"]:
        env.pop("LAKECAT_JARS_CACHE")
    cwd = base / "empty"
    cwd.mkdir()
    return {"venv": venv, "env": env, "cwd": cwd, "calls": calls, "base": base}


def _user(installed, *args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return _run([*args], env=installed["env"], cwd=installed["cwd"], timeout=timeout)


def test_the_installed_wheel_imports_and_answers_without_the_checkout(installed):
    venv = installed["venv"]
    where = _user(
        installed, venv / "bin" / "python", "-c", "import lakecat, lakecat.commands.main; print(lakecat.__file__)"
    )
    assert where.stdout.strip().startswith(str(venv)) and str(ROOT) not in where.stdout
    assert "create" in _user(installed, "lakecat", "--help").stdout
    assert f"lakecat {VERSION}" in _user(installed, "lakecat", "--version").stdout
    typed = _user(
        installed,
        venv / "bin" / "python",
        "-c",
        "import importlib.resources as r; print(r.files('lakecat').joinpath('py.typed').is_file())",
    )
    assert typed.stdout.strip() == "True"


def test_spark_on_both_formats_from_the_wheel_with_the_extension_and_no_javac(installed, tmp_path):
    """create / upsert / timetravel through Spark on both formats, the extension in the session and used."""
    venv, calls = installed["venv"], installed["calls"]
    smoke = _user(installed, venv / "bin" / "python", ROOT / "tests" / "wheel_smoke.py", tmp_path, timeout=900)
    result = json.loads(smoke.stdout.strip().splitlines()[-1])
    assert result["lakecat"].startswith(str(venv)) and result["problem"] is None
    assert result["extension_jar"].startswith(str(venv)) and result["extension_in_session"] is True
    assert result["parsed_by_extension"] == 7
    for fmt in ("iceberg", "delta"):
        assert result[fmt]["spark_at_first"] == [[1, "a"], [2, "b"]], fmt
        assert result[fmt]["reader_now"] == [[1, "a"], [2, "B"], [3, "c"]], fmt
    # the CLI reads the same version through Spark
    first = result["delta"]["first_version"]
    read = _user(installed, "lakecat", "timetravel", "smoke.t_delta", "--version", first, "--engine", "spark", "--json")
    document = json.loads(read.stdout)
    assert sorted((r["id"], r["v"]) for r in document["rows"]) == [(1, "a"), (2, "b")] and document["engine"] == "spark"
    assert not calls.exists(), calls.read_text()  # nothing called javac


def test_local_rest_server_from_the_wheel_listens_on_loopback(installed):
    port, data_dir = free_port(), installed["base"] / "rest"
    started = _user(
        installed, "lakecat", "local", "rest", "start", "--port", str(port), "--data-dir", data_dir, "--json"
    )
    try:
        assert json.loads(started.stdout)["host"] == "127.0.0.1"
        assert listening_on(port) == {ipaddress.ip_address("127.0.0.1")}
    finally:
        _user(installed, "lakecat", "local", "rest", "stop", "--data-dir", data_dir)
    assert not installed["calls"].exists()


def test_the_version_is_one_number():
    """pyproject.toml's version is the one ``lakecat.__version__`` reports from a checkout that is not installed."""
    import lakecat

    assert lakecat.__version__ == VERSION
