"""Time travel and change reads without a JVM (pyiceberg / delta-rs + DuckDB), proven against Spark.

The differential test builds one table per format through Spark — appends, a delete, a MERGE, an added column,
an UPDATE; partitions, nulls, decimals, timestamps, dates — and reads every version, every change range and a
set of ``--where`` predicates through both engines, comparing the answers row for row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal

import pytest

from lakecat.errors import InvalidArgumentError, NotExactError
from lakecat.predicate import to_duckdb

pytestmark = pytest.mark.spark

SCHEMA = "id BIGINT NOT NULL, region STRING, amount DECIMAL(10,2), ts TIMESTAMP, d DATE, score DOUBLE"

# Predicates the light path evaluates itself (and must answer as Spark does).
LIGHT_PREDICATES = [
    "id > 3",
    "id = 2 OR id >= 7",
    "region IN ('eu', 'us')",
    "region NOT IN ('eu')",
    "region LIKE 'e%'",
    "region NOT LIKE '_s'",
    "region IS NULL",
    "amount IS NOT NULL AND NOT (amount < 10.5)",
    "amount BETWEEN 1 AND 20.25",
    "d >= DATE '2024-01-02'",
    "ts < TIMESTAMP '2024-01-02 12:00:00'",
    "upper(region) = 'EU' OR lower(region) = 'us'",
    "length(region) = 2 AND abs(score) > 1",
    "coalesce(region, 'none') = 'none'",
    "year(ts) = 2024 AND month(d) = 1 AND day(d) <> 3",
    "`score` <= -0.5 OR score IS NULL",
]
# Predicates outside the allow-list: they go to Spark, never to a different answer.
SPARK_PREDICATES = [
    "id + 1 > 3",
    "cast(amount AS INT) = 10",
    "region RLIKE '^e'",
    'region = "eu"',
    "amount > '10'",
]


def _build(catalog, spark, name: str, table_format: str):
    """The differential table: its versions (oldest first, after create) are the ones to read."""
    t = catalog.create_table(name, schema=SCHEMA, format=table_format, partition_by=["region"])
    sql = spark.sql
    sql(f"""INSERT INTO {t.spark_name} VALUES
        (1, 'eu', 10.50, TIMESTAMP '2024-01-01 10:00:00', DATE '2024-01-01', 1.5),
        (2, 'us', NULL, TIMESTAMP '2024-01-02 11:30:00', DATE '2024-01-02', -2.25),
        (3, NULL, 20.25, NULL, DATE '2024-01-03', NULL),
        (4, 'eu', 0.01, TIMESTAMP '2024-01-03 00:00:00', NULL, 0.0)""")
    sql(f"""INSERT INTO {t.spark_name} VALUES
        (5, 'apac', 99999999.99, TIMESTAMP '2023-12-31 23:59:59.999999', DATE '2023-12-31', 1e10),
        (6, 'us', -3.00, TIMESTAMP '2024-01-02 12:00:00', DATE '2024-01-02', -0.5)""")
    sql(f"DELETE FROM {t.spark_name} WHERE id = 2")
    sql(f"""MERGE INTO {t.spark_name} AS t USING (SELECT * FROM VALUES
            (4, 'eu', CAST(4.44 AS DECIMAL(10,2)), TIMESTAMP '2024-01-04 04:04:04', DATE '2024-01-04', 4.0),
            (7, 'eu', CAST(7.00 AS DECIMAL(10,2)), TIMESTAMP '2024-01-07 07:00:00', DATE '2024-01-07', 7.0)
            AS s(id, region, amount, ts, d, score)) AS s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    sql(f"ALTER TABLE {t.spark_name} ADD COLUMNS (note STRING)")
    sql(f"""INSERT INTO {t.spark_name} VALUES
        (8, 'us', 8.00, TIMESTAMP '2024-01-08 08:00:00', DATE '2024-01-08', 8.0, 'eight'),
        (9, 'eu', NULL, NULL, NULL, NULL, NULL)""")
    sql(f"UPDATE {t.spark_name} SET note = 'changed', amount = amount + 1 WHERE id = 6")
    versions = [e.version for e in reversed(t.history().entries) if e.operation != "create"]
    return t, versions


def _key(row: dict) -> str:
    return repr(sorted(row.items()))


def _bag(rows: list[dict]) -> list[str]:
    return sorted(map(_key, rows))


def _spark_rows(frames: list) -> list[list[dict]]:
    """Spark's rows of several DataFrames, read in ONE job (a tagged union): one test, not dozens of Spark jobs."""
    from functools import reduce

    from pyspark.sql import functions as F

    tagged = [df.withColumn("_part", F.lit(i)) for i, df in enumerate(frames)]
    union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), tagged)
    out: list[list[dict]] = [[] for _ in frames]
    for row in union.toArrow().to_pylist():
        part = row.pop("_part")
        out[part].append({k: row[k] for k in frames[part].columns})
    return out


def test_light_answers_as_spark_does(catalog, spark, ns, table_format):
    t, versions = _build(catalog, spark, f"{ns}.diff", table_format)
    assert len(versions) >= 6
    last = versions[-1]

    # every version: all rows (and their columns, in order) and the count
    views = [t.as_of(version=v, engine="spark") for v in versions]
    frames = [v.to_spark() for v in views]
    for v, df, expected in zip(versions, frames, _spark_rows(frames), strict=True):
        light = t.as_of(version=v, engine="light").read(limit=0)
        assert light.engine == "light" and light.columns == df.columns
        assert _bag(light.rows) == _bag(expected), v
        assert t.as_of(version=v, engine="light").count() == len(expected)

    # --where: Spark evaluates every predicate in one pass; the light path must keep exactly the same rows
    for v in (versions[2], last):
        df = t.as_of(version=v, engine="spark").to_spark()
        flags = df.selectExpr("*", *[f"coalesce(({p}), false) AS _p{i}" for i, p in enumerate(LIGHT_PREDICATES)])
        spark_rows = flags.toArrow().to_pylist()
        for i, pred in enumerate(LIGHT_PREDICATES):
            expected = [{c: r[c] for c in df.columns} for r in spark_rows if r[f"_p{i}"]]
            light = t.as_of(version=v, engine="light").read(where=pred, limit=0)
            assert light.engine == "light"
            assert _bag(light.rows) == _bag(expected), pred
            assert t.as_of(version=v, engine="light").count(where=pred) == len(expected), pred
    assert any(t.as_of(version=last, engine="light").count(where=p) for p in LIGHT_PREDICATES)
    auto = t.as_of(version=last).read(where=SPARK_PREDICATES[0], limit=0)
    heavy = t.as_of(version=last).to_spark(where=SPARK_PREDICATES[0]).toArrow().to_pylist()
    assert auto.engine == "spark" and auto.engine_reason and _bag(auto.rows) == _bag(heavy)
    for pred in SPARK_PREDICATES:  # outside the allow-list: never the light path
        with pytest.raises(NotExactError):
            t.as_of(version=last, engine="light").read(where=pred)

    # every change range (since exclusive, until inclusive): Spark reads them all in one job, the light path one by one
    starts = [-1, *versions]
    ranges = [(since, until) for i, since in enumerate(starts) for until in versions[max(i - 1, 0) :]]
    changes = [t.changes(since=s, until=u, engine="spark") for s, u in ranges]
    frames = [c.to_spark() for c in changes]
    light_ranges = []
    for (since, until), df, expected in zip(ranges, frames, _spark_rows(frames), strict=True):
        try:
            light = t.changes(since=since, until=until, engine="light").read(limit=0)
        except NotExactError:
            assert table_format == "iceberg", (since, until)  # Delta's change data feed answers every range
            continue
        light_ranges.append((since, until))
        assert light.engine == "light" and light.columns == df.columns
        assert light.columns[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]
        assert _bag(light.rows) == _bag(expected), (since, until)
        assert t.changes(since=since, until=until, engine="light").read(count=True).count == len(expected)
        order = [starts.index(r["_commit_version"]) for r in light.rows]  # commit order, as Spark's path orders them
        assert order == sorted(order)
    assert len(light_ranges) == len(ranges) if table_format == "delta" else len(light_ranges) >= 4
    if table_format == "iceberg":  # a range with a delete / MERGE goes to Spark, and says why
        ch = t.changes(since=versions[0], until=versions[3]).read(count=True)
        assert ch.engine == "spark" and "only append-only ranges" in (ch.engine_reason or "")
    else:  # update images come through the change data feed
        rows = t.changes(since=versions[-2], until=versions[-1], engine="light").read(limit=0).rows
        assert sorted((r["id"], r["_change_type"], r["amount"]) for r in rows) == [
            (6, "update_postimage", Decimal("-2.00")), (6, "update_preimage", Decimal("-3.00"))]  # fmt: skip

    # limits: the first rows in commit order, a truncated flag
    light = t.changes(since=-1, until=versions[1], engine="light").read(limit=3)
    assert light.truncated is True and len(light.rows) == 3 and light.engine == "light"
    assert {r["_commit_version"] for r in light.rows} == {versions[0]}
    tt = t.as_of(version=last, engine="light").read(limit=2, where="id > 1")
    assert tt.truncated is True and len(tt.rows) == 2 and all(r["id"] > 1 for r in tt.rows)
    # the Python twins
    assert t.as_of(version=last, engine="light").to_arrow(where="id < 5").num_rows == 3
    assert len(t.changes(since=versions[0], until=versions[1], engine="light").to_pandas()) == 2


def test_engine_choice_and_no_jvm_in_the_process(catalog, spark, ns, lakecat_home, cli, table_format):
    name = f"{ns}.eng"
    t = catalog.create_table(name, schema="id BIGINT NOT NULL, v STRING", format=table_format)
    for i in range(3):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({2 * i + 1}, 'a{i}'), ({2 * i + 2}, NULL)")
    versions = [e.version for e in reversed(t.history().entries) if e.operation != "create"]

    def fresh(*args: str) -> tuple[int, dict, str]:
        """A fresh lakecat process; it must not import pyspark (the light path starts no JVM)."""
        probe = ("import sys; from lakecat.commands.main import main\n"
                 "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
                 "assert 'pyspark' not in sys.modules and 'py4j' not in sys.modules, 'pyspark was imported'\n"
                 # the table's catalog row is read with the standard library's sqlite3 (SQLAlchemy's import is ~0.4 s)
                 "assert 'sqlalchemy' not in sys.modules, 'SQLAlchemy was imported for a lookup'\n"
                 # a JSON answer needs neither rich (an error line does) nor typer's pydantic layer (typer >= 0.29)
                 "assert code or 'rich' not in sys.modules, 'rich was imported'\n"
                 "assert 'typer._adapters' not in sys.modules, 'typer._adapters was imported'\n"
                 "sys.exit(code)\n")  # fmt: skip
        env = {**os.environ, "LAKECAT_HOME": str(lakecat_home)}
        proc = subprocess.run([sys.executable, "-c", probe, *args, "--json"], env=env, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr

    code, doc, err = fresh("timetravel", name, "--version", str(versions[1]), "--count")
    assert code == 0, err
    assert (doc["count"], doc["engine"]) == (4, "light")
    code, doc, err = fresh("changes", name, "--since", str(versions[0]), "--count")
    assert code == 0, err
    assert (doc["count"], doc["engine"]) == (4, "light")
    code, doc, err = fresh("timetravel", name, "--version", str(versions[2]), "--where", "v IS NULL AND id > 2",
                           "--limit", "10")  # fmt: skip
    assert code == 0, err
    assert sorted(r["id"] for r in doc["rows"]) == [4, 6] and doc["engine"] == "light" and doc["columns"] == ["id", "v"]
    code, doc, err = fresh("changes", name, "--since", "-1", "--limit", "1", "--engine", "light")
    assert code == 0, err
    assert doc["returned"] == 1 and doc["truncated"] is True and doc["rows"][0]["_commit_version"] == versions[0]
    # the light path asked for where it cannot be exact: exit 3 and why, before any JVM
    code, doc, err = fresh(
        "timetravel", name, "--version", str(versions[2]), "--where", "id % 2 = 0", "--engine", "light"
    )
    assert code == 3 and doc["error"]["type"] == "NotExactError" and "--engine spark" in doc["error"]["message"]
    # a column that does not exist is the caller's mistake, on either path
    code, doc, _ = fresh("timetravel", name, "--version", str(versions[2]), "--where", "nope = 1")
    assert code == 2 and "nope" in doc["error"]["message"]

    # in-process: --engine spark and the automatic fall-back, said with --verbose
    code, out, err = cli("timetravel", name, "--version", versions[2], "--where", "id % 2 = 0", "--count", "--json")
    doc = json.loads(out)
    assert code == 0 and (doc["count"], doc["engine"]) == (3, "spark") and doc["engine_reason"]
    code, out, err = cli("timetravel", name, "--version", versions[2], "--where", "id % 2 = 0", "--count", "--verbose")
    assert code == 0 and "answered by spark" in err
    code, out, err = cli("changes", name, "--since", versions[0], "--engine", "spark", "--json")
    assert code == 0 and json.loads(out)["engine"] == "spark"
    code, out, err = cli("changes", name, "--since", versions[0], "--engine", "jvm")
    assert code == 2 and "light" in err


@pytest.mark.delta
def test_delta_deletion_vectors_read_light(catalog, spark, ns):
    t = catalog.create_table(f"{ns}.dv", schema="id BIGINT, v STRING", format="delta",
                             properties={"delta.enableDeletionVectors": "true"})  # fmt: skip
    spark.sql(f"INSERT INTO {t.spark_name} SELECT id, CAST(id AS STRING) FROM range(20)")
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id % 3 = 0")
    last = t.history(limit=1)[0].version
    auto = t.as_of(version=last).read(count=True)
    assert auto.count == 13 and auto.engine == "light"  # delta-rs's query engine applies the deletion vectors
    light = t.as_of(version=last, engine="light").read(limit=0).rows
    on_spark = t.as_of(version=last, engine="spark").read(limit=0).rows
    assert sorted(r["id"] for r in light) == sorted(r["id"] for r in on_spark) == [i for i in range(20) if i % 3]


def test_predicate_allow_list():
    import pyarrow as pa

    schema = pa.schema(
        [("id", pa.int64()), ("Region", pa.string()), ("d", pa.date32()), ("m", pa.map_(pa.string(), pa.int32()))]
    )
    # identifiers resolve case-insensitively (as Spark does) and are quoted; literals are re-rendered
    assert to_duckdb("region = 'eu' AND ID IN (1, -2)", schema) == """(("Region" = 'eu') AND ("id" IN (1, -2)))"""
    assert to_duckdb("d >= DATE '2024-02-29'", schema) == """("d" >= DATE '2024-02-29')"""
    for text in ["id = 1; DROP TABLE x", "id = 1 --", "region = 'a' || 'b'", "region = 'it''s'", "id = '1'",
                 "region LIKE 'a\\_b'", "m IS NULL", "id", "foo(id) = 1", "d = '2024-01-01'", "id = 1e3"]:  # fmt: skip
        with pytest.raises(NotExactError):
            to_duckdb(text, schema)
    with pytest.raises(InvalidArgumentError, match="no column 'nope'"):
        to_duckdb("nope = 1", schema)
    with pytest.raises(InvalidArgumentError, match="no such date"):
        to_duckdb("d = DATE '2024-02-30'", schema)


def test_a_limit_that_stops_a_many_file_scan_exits_cleanly(lakecat_home, tmp_path):
    """A limit stops the scan of a Delta table of many files early; the process must still exit 0 (DuckDB left
    Arrow's scan threads running and the process aborted at exit). A table written by delta-rs, no JVM."""
    import pyarrow as pa
    from deltalake import write_deltalake

    location = tmp_path / "many"
    for i in range(20):
        ids = list(range(i * 50, (i + 1) * 50))
        write_deltalake(str(location), pa.table({"id": pa.array(ids, pa.int64()),
                                                 "region": [("eu", "us", "apac")[x % 3] for x in ids]}), mode="append")  # fmt: skip
    env = {**os.environ, "LAKECAT_HOME": str(lakecat_home)}
    lakecat = [sys.executable, "-m", "lakecat.commands.main"]
    name = f"light_{tmp_path.name[-8:].replace('-', '_')}.many"
    subprocess.run([*lakecat, "register", name, "--location", str(location)], env=env, check=True, capture_output=True)
    for extra in (["--where", "region = 'eu' AND id > 10", "--limit", "10"], ["--limit", "3"]):
        proc = subprocess.run([*lakecat, "timetravel", name, "--version", "15", *extra, "--json"], env=env,
                              capture_output=True, text=True)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-1000:]
        doc = json.loads(proc.stdout)
        assert doc["engine"] == "light" and len(doc["rows"]) == int(extra[-1])
