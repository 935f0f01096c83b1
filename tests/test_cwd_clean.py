"""Spark-path commands leave nothing in the directory they run from (no spark-warehouse/, derby.log, metastore_db/,
checkpoint/): lakecat keeps everything under the catalog's own locations and LAKECAT_HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lakecat.commands.main import run_cli

pytestmark = pytest.mark.spark


def _ok(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code = run_cli([*argv, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_spark_warehouse_dir_is_under_lakecat_home(spark, lakecat_home):
    """The session may have started from any directory (the repo root, for an earlier test): the setting is absolute."""
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    path = Path(warehouse.removeprefix("file:"))
    assert path.is_absolute(), warehouse
    assert path.resolve().is_relative_to(lakecat_home.resolve()), warehouse


def test_every_spark_command_leaves_the_current_directory_empty(catalog, ns, table_format, tmp_path, monkeypatch,
                                                                 capsys):  # fmt: skip
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_text("".join(json.dumps({"id": i, "v": f"x{i}"}) + "\n" for i in range(10)))
    fixes = tmp_path / "fixes.json"
    fixes.write_text(json.dumps({"id": 1, "v": "fixed"}) + "\n")
    monkeypatch.chdir(scratch)
    name = f"{ns}.cwd_{table_format}"
    cat = ("--catalog", "local")

    _ok(capsys, "create", name, "--format", table_format, "--schema", "id BIGINT, v STRING", *cat)
    _ok(capsys, "ingest", name, "--files", str(landing), *cat)
    _ok(capsys, "upsert", name, "--from", str(fixes), "--key", "id", *cat)
    versions = [e["version"] for e in _ok(capsys, "history", name, *cat)]  # newest first
    _ok(capsys, "timetravel", name, "--version", str(versions[1]), "--engine", "spark", *cat)
    _ok(capsys, "changes", name, "--since", str(versions[-1]), "--engine", "spark", *cat)
    _ok(capsys, "rollback", name, "--version", str(versions[1]), "--yes", "--force", *cat)
    _ok(capsys, "alter", name, "--add-column", "note STRING", *cat)
    _ok(capsys, "compact", name, *cat)
    _ok(capsys, "expire", name, "--older-than", "0s", "--retain-last", "3", "--force", *cat)
    _ok(capsys, "clean-orphans", name, "--older-than", "0s", "--force", *cat)

    assert sorted(p.name for p in scratch.iterdir()) == []
