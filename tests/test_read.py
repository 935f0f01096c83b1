"""Reads of a table as it is now: ``Table.read`` / ``Table.to_pandas`` and ``lakecat read``, on both formats.

The rows are checked against what pyiceberg / delta-rs read directly; the light path is checked to start no JVM.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import light_tables, read_arrow, read_branch_ids

from lakecat.errors import InvalidArgumentError

pytestmark = pytest.mark.spark

_PROBE = (
    "import sys; from lakecat.commands.main import main\n"
    "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    "assert 'pyspark' not in sys.modules and 'py4j' not in sys.modules, 'a JVM path was imported'\n"
    "sys.exit(code)\n"
)


def _fresh(lakecat_home, *args: str) -> tuple[int, dict, str]:
    """`lakecat ARGS --json` in a fresh process that fails when it imported the Spark path."""
    env = {**os.environ, "LAKECAT_HOME": str(lakecat_home)}
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args, "--json"], env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def _bag(rows: list[dict]) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in rows)


def test_read_gives_what_the_format_reader_reads(catalog, spark, ns, table_format, cli):
    name = f"{ns}.now"
    t = catalog.create_table(name, schema="id BIGINT NOT NULL, region STRING, amount DOUBLE", format=table_format)
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'eu', 1.5), (2, 'us', NULL), (3, 'eu', 3.0), (4, NULL, 4.0)")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (5, 'eu', 5.5), (6, 'us', 6.0)")
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 2")
    direct = read_arrow(catalog, name)
    expected = direct.to_pylist()
    assert len(expected) == 5

    got = t.read()
    assert got.column_names == direct.column_names == ["id", "region", "amount"]
    assert _bag(got.to_pylist()) == _bag(expected)
    assert len(t.to_pandas()) == 5

    eu = [{"amount": r["amount"], "id": r["id"]} for r in expected if r["region"] == "eu"]
    got = t.read(where="region = 'eu'", columns=["amount", "ID"])  # Spark resolves names case-insensitively
    assert got.column_names == ["amount", "id"] and _bag(got.to_pylist()) == _bag(eu)
    assert t.read(limit=2).num_rows == 2
    assert _bag(t.read(engine="spark", where="region = 'eu'", columns="amount,id").to_pylist()) == _bag(eu)

    r = t.current().read(where="region = 'eu'", count=True)
    assert (r.count, r.engine, r.version) == (3, "light", t.history().current_version)
    # a predicate outside the light path's allow-list: Spark answers, the same rows
    r = t.current().read(where="id % 2 = 0", columns=["id"], limit=0)
    assert r.engine == "spark" and sorted(x["id"] for x in r.rows) == [4, 6] and r.columns == ["id"]

    # the CLI: timetravel's JSON shape, at the current version
    code, out, err = cli("read", name, "--where", "amount > 2", "--columns", "id,region", "--limit", "2", "--json")
    doc = json.loads(out)
    assert code == 0, err
    assert doc["version"] == t.history().current_version and doc["engine"] == "light"
    assert doc["columns"] == ["id", "region"] and doc["returned"] == 2 and doc["truncated"] is True
    code, out, _ = cli("read", name, "--count", "--json")
    assert code == 0 and json.loads(out)["count"] == 5
    code, out, _ = cli("read", name, "--columns", "id", "--limit", "0")
    assert code == 0 and "5 rows" in out

    with pytest.raises(InvalidArgumentError, match="nope"):
        t.read(columns=["id", "nope"])


def test_read_starts_no_jvm_where_the_light_path_answers(catalog, ns, lakecat_home):
    for name in light_tables(catalog, ns, 2, commits=2):  # one Iceberg, one Delta table, 20 rows each
        expected = read_arrow(catalog, name).to_pylist()
        code, doc, err = _fresh(lakecat_home, "read", name, "--limit", "0")
        assert code == 0, err
        assert doc["engine"] == "light" and doc["columns"] == ["id", "region"]
        assert _bag(doc["rows"]) == _bag(expected)
        code, doc, err = _fresh(lakecat_home, "read", name, "--where", "region = 'eu'", "--count")
        assert code == 0, err
        assert (doc["count"], doc["engine"]) == (sum(r["region"] == "eu" for r in expected), "light")
        # a column the table lacks: one line, exit 2, before any JVM (even where Spark would answer the predicate)
        code, doc, err = _fresh(lakecat_home, "read", name, "--columns", "id,nope", "--where", "id % 2 = 0")
        assert code == 2, err
        assert "nope" in doc["error"]["message"] and "\n" not in doc["error"]["message"]


def test_an_empty_table_reads_as_no_rows_with_its_columns(catalog, ns, table_format, lakecat_home):
    name = f"{ns}.empty"
    t = catalog.create_table(name, schema="id BIGINT NOT NULL, v STRING", format=table_format)
    got = t.read()
    assert got.num_rows == 0 and got.column_names == ["id", "v"]
    assert t.read(columns=["v"]).column_names == ["v"]
    code, doc, err = _fresh(lakecat_home, "read", name)
    assert code == 0, err
    assert (doc["rows"], doc["columns"], doc["engine"]) == ([], ["id", "v"], "light")
    code, doc, err = _fresh(lakecat_home, "read", name, "--count")
    assert code == 0 and doc["count"] == 0, err


@pytest.mark.iceberg
def test_read_on_a_branch_reads_its_head(catalog, spark, ns):
    t = catalog.create_table(f"{ns}.br", schema="id BIGINT NOT NULL, v STRING", format="iceberg")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'main')")
    t.branch("audit")
    spark.sql(f"INSERT INTO {t.on_branch('audit').spark_name} VALUES (2, 'audit')")
    assert read_branch_ids(catalog, t.name, "audit") == [1, 2]
    assert sorted(t.on_branch("audit").read().column("id").to_pylist()) == [1, 2]
    assert sorted(t.on_branch("audit").read(engine="spark").column("id").to_pylist()) == [1, 2]
    assert t.read().column("id").to_pylist() == [1]
