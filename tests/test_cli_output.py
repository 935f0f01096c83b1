"""Human output without warts, on both formats: counts agree with their nouns, `history --limit` says "N of M",
nothing wraps off a terminal, describe says what column mapping means, `--version`, usage lines with metavars,
"did you mean", refusals in each face's own terms. Tables are written without Spark (pyiceberg, delta-rs) and every
command here stays on the light path, so no JVM starts."""

from __future__ import annotations

import json
import platform
import re
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest
from helpers import light_tables

from lakecat.jars import java_executable

FORMAT_OF = {0: "iceberg", 1: "delta"}  # light_tables: even tables are Iceberg, odd ones Delta


def newest(lakecat, name: str) -> int:
    return json.loads(lakecat("history", name, "--json")[1])[0]["version"]


@pytest.fixture
def one_commit(catalog, ns):
    """An Iceberg and a Delta table, one commit each: {format: name}."""
    names = light_tables(catalog, ns, 2, commits=1)
    return {FORMAT_OF[i]: n for i, n in enumerate(names)}


@pytest.fixture
def two_commits(catalog, ns):
    names = light_tables(catalog, ns, 2, commits=2)
    return {FORMAT_OF[i]: n for i, n in enumerate(names)}


def test_plural():
    from lakecat.units import plural

    assert [plural(n, "batch", "batches") for n in (0, 1, 2, 1204)] == ["0 batches", "1 batch", "2 batches",
                                                                       "1,204 batches"]  # fmt: skip
    assert plural(1, "file") == "1 file" and plural(3, "version") == "3 versions"


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_singular_counts(lakecat, one_commit, ns, fmt):
    name = one_commit[fmt]
    code, out, err = lakecat("history", name)
    assert code == 0, err
    assert "1 commit;" in out and "1 commits" not in out
    code, out, _ = lakecat("list", ns, "--format", fmt)
    assert code == 0 and out.rstrip().endswith("\n1 table"), out
    code, out, err = lakecat("timetravel", name, "--version", newest(lakecat, name), "--limit", "1")
    assert code == 0 and "\n1 row" in out and "1 rows" not in out, (out, err)
    code, out, _ = lakecat("describe", name)
    assert code == 0 and "10 records in" in out and " 1 files" not in out, out


def test_expire_dry_run_says_one_version(lakecat, two_commits):
    """Delta's expiry is planned from its log (no JVM): two commits, the newest kept -> one version to expire."""
    code, out, err = lakecat("expire", two_commits["delta"], "--older-than", "0s", "--retain-last", "1", "--force",
                             "--dry-run")  # fmt: skip
    assert code == 0, err
    assert "would expire 1 version," in out and "1 version kept" in out, out


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_history_limit_says_n_of_m(lakecat, two_commits, fmt):
    code, out, _ = lakecat("history", two_commits[fmt], "--limit", "1")
    assert code == 0 and "1 of 2 commits;" in out, out
    code, out, _ = lakecat("history", two_commits[fmt])
    assert code == 0 and "2 commits;" in out and " of " not in out.splitlines()[-1], out
    doc = json.loads(lakecat("history", two_commits[fmt], "--limit", "1", "--json")[1])
    assert len(doc) == 1  # the JSON stays the list of entries


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_no_wrapping_off_a_terminal(lakecat, one_commit, fmt):
    """COLUMNS=40 and stdout a pipe: a table's long title stays one line (rich wrapped it to the table's width)."""
    name = one_commit[fmt]
    code, out, _ = lakecat(
        "timetravel", name, "--version", newest(lakecat, name), "--limit", "1", env={"COLUMNS": "40"}
    )
    assert code == 0
    title = next(line for line in out.splitlines() if line.startswith(f"{name} at version"))
    assert "(committed" in title and title.endswith("UTC)"), out
    code, out, _ = lakecat("history", name, env={"COLUMNS": "40"})
    assert code == 0 and f"{name} ({fmt})" in out.splitlines()[0], out


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_describe_says_what_column_mapping_means(lakecat, one_commit, fmt):
    code, out, _ = lakecat("describe", one_commit[fmt])
    line = next(line for line in out.splitlines() if "column mapping:" in line)
    mode = {"iceberg": "id", "delta": "none"}[fmt]
    assert code == 0 and f"column mapping: {mode} (columns in data files are matched by" in line, line
    assert "columns by:" not in out


VERSION_KEYS = ["lakecat", "spark", "iceberg", "pyiceberg", "delta", "deltalake", "java", "java_home", "python"]


def _java_said(java: str) -> str:
    """The version the Java binary itself prints (``openjdk version "17.0.15" ...``)."""
    proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    return re.search(r'version "([^"]+)"', proc.stderr + proc.stdout).group(1)


def test_version_prints_what_lakecat_runs_on(lakecat):
    """`--version`'s first line stays `lakecat X`; then Spark, each format's runtime, Java and Python; `--json` (before
    or after it) one document with the same values, each from its own source: the distributions' metadata, the jar
    coordinates the Spark session resolves, the Java binary lakecat starts."""
    from lakecat.formats.delta.adapter import delta_coordinate
    from lakecat.jar_sets import spark_set
    from lakecat.jars import java_executable

    for flags in (["--version", "--json"], ["--json", "--version"], ["-V", "--json"]):
        code, out, _ = lakecat(*flags)
        assert code == 0, out
        doc = json.loads(out)
        assert list(doc) == VERSION_KEYS, doc
    iceberg_runtime = next(c for c in spark_set().coordinates if ":iceberg-spark-runtime-" in c)
    assert doc["lakecat"] == version("lakecat") and doc["spark"] == version("pyspark")
    assert doc["iceberg"] == iceberg_runtime.rsplit(":", 1)[1] and doc["pyiceberg"] == version("pyiceberg")
    assert doc["delta"] == version("delta-spark") == delta_coordinate().rsplit(":", 1)[1]
    assert doc["deltalake"] == version("deltalake") and doc["python"] == platform.python_version()
    java = java_executable()
    assert doc["java"] == _java_said(java) and doc["java_home"] == str(Path(java).resolve().parent.parent)

    for flag in ("--version", "-V"):
        code, out, _ = lakecat(flag)
        lines = out.splitlines()
        assert code == 0 and lines[0] == f"lakecat {version('lakecat')}", out
        shown = dict(line.split(None, 1) for line in lines[1:])
        assert list(shown) == [k for k in VERSION_KEYS if k not in ("lakecat", "java_home")]
        assert shown["java"] == f"{doc['java']} ({doc['java_home']})"
        assert all(shown[k] == doc[k] for k in shown if k != "java"), out


def test_version_starts_no_java_and_reads_its_release_file(light_cli, tmp_path):
    """`--version` imports no Spark (light_cli) and runs no Java: it reads the Java home's `release` file. A `java`
    that notes each run and then runs the real one says so; without a `release` file it is asked (`-version`)."""
    real_java = Path(java_executable()).resolve()
    if not (real_java.parent.parent / "release").is_file():
        pytest.skip(f"{real_java.parent.parent} has no release file")
    home, ran = tmp_path / "jdk", tmp_path / "java-ran"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text(f'#!/bin/sh\necho "$@" >> "{ran}"\nexec "{real_java}" "$@"\n')
    (home / "bin" / "java").chmod(0o755)
    (home / "release").symlink_to(real_java.parent.parent / "release")
    expected = _java_said(str(real_java))

    doc = light_cli("--version", env={"JAVA_HOME": str(home)})
    assert doc["java"] == expected and doc["java_home"] == str(home)
    assert not ran.exists(), ran.read_text()

    (home / "release").unlink()
    doc = light_cli("--version", env={"JAVA_HOME": str(home)})
    assert doc["java"] == expected and ran.read_text().split() == ["-version"]


def test_version_without_java_says_not_found(lakecat, tmp_path):
    no_java = {"JAVA_HOME": str(tmp_path / "none"), "PATH": str(tmp_path)}
    code, out, _ = lakecat("--version", "--json", env=no_java)
    doc = json.loads(out)
    assert code == 0 and doc["java"] is None and doc["java_home"] is None and doc["spark"] == version("pyspark")
    code, out, _ = lakecat("--version", env=no_java)
    assert code == 0 and "\n  java       not found\n" in out, out


def test_root_json_without_version_is_a_usage_error(lakecat):
    code, out, err = lakecat("--json", "list")
    assert code == 2 and json.loads(out)["error"]["type"] == "UsageError"
    assert "lakecat COMMAND --json" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    ("command", "usage"),
    [("create", "lakecat create [OPTIONS] TABLE"), ("describe", "lakecat describe [OPTIONS] TABLE"),
     ("history", "lakecat history [OPTIONS] TABLE"), ("maintain", "lakecat maintain [OPTIONS] [PATTERN]"),
     ("tag", "lakecat tag [OPTIONS] TABLE TAG"), ("list", "lakecat list [OPTIONS] [NAMESPACE]")],
)  # fmt: skip
def test_usage_lines_name_arguments(lakecat, command, usage):
    code, out, _ = lakecat(command, "-h", env={"COLUMNS": "120"})
    assert code == 0 and usage in out and "{name}" not in out, out
    if command == "maintain":
        assert "catalog_conf/" not in out  # a path that exists only in a checkout


def test_did_you_mean(lakecat, one_commit):
    name = one_commit["iceberg"]
    code, _, err = lakecat("describe", name[:-1] + "O")
    assert code == 1 and "; did you mean " in err and f"'{name}'" in err and len(err.strip().splitlines()) == 1, err
    code, _, err = lakecat("list", "--catalog", "locl")
    assert code == 1 and "did you mean 'local'?" in err, err
    code, _, err = lakecat("histroy", name)
    assert code == 2 and "Did you mean 'history'" in err and len(err.strip().splitlines()) == 1, err


def test_rows_per_second_is_never_zero():
    from lakecat.commands.ingest import _rate

    assert _rate(0.0) == "" and _rate(0.4) == "" and _rate(1234.4) == ", 1,234 rows/s"


def test_catalogs_apart_from_examples(lakecat):
    code, out, _ = lakecat("catalogs")
    assert code == 0
    rows, examples = out.split("examples shipped with lakecat")
    assert "local" in rows and "team-postgres" not in rows and "not usable" not in rows, out
    assert "team-postgres" in examples
    doc = {c["name"]: c for c in json.loads(lakecat("catalogs", "--json")[1])}
    assert doc["team-postgres"]["example"] and not doc["local"]["example"]


def test_refusals_speak_each_face(lakecat, two_commits, catalog):
    from lakecat.errors import InvalidArgumentError

    name = two_commits["delta"]
    code, _, err = lakecat("expire", name, "--older-than", "1h")
    assert code == 2 and "pass --force if" in err and "force=True" not in err, err
    with pytest.raises(InvalidArgumentError, match="pass force=True if") as e:
        catalog.load_table(name).expire(older_than="1h")
    assert "--force" not in str(e.value)


def test_expire_help_says_what_delta_expiry_does(lakecat):
    code, out, _ = lakecat("expire", "-h", env={"COLUMNS": "200"})
    assert code == 0 and "Delta VACUUM" not in out and "not VACUUM" in out, out
