"""A PostgreSQL metastore: same behaviour as the SQLite default, and safe under concurrent writers.

A private PostgreSQL cluster is started for the module (Debian's packages; `.ci/run` installs them).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest

from lakecat.processes import free_port

pytestmark = [pytest.mark.spark, pytest.mark.postgres]


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


@pytest.fixture(scope="module")
def postgres_url():
    pg_bin = _pg_bin()
    if pg_bin is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed; .ci/run should have installed it")
        pytest.skip("PostgreSQL server binaries not installed (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="lakecat-pg-"))
    data, port = root / "data", free_port()
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_pg:
        shutil.chown(root, "postgres")
    subprocess.run(
        [*as_pg, str(pg_bin / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [*as_pg, str(pg_bin / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-o",
         f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        subprocess.run(
            [str(pg_bin / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "lakecat"], check=True
        )
        yield f"postgresql://postgres:unused@127.0.0.1:{port}/lakecat"
    finally:
        subprocess.run([*as_pg, str(pg_bin / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_config(postgres_url, tmp_path_factory):
    path = tmp_path_factory.mktemp("pgconf") / "pgcat.toml"
    warehouse = tmp_path_factory.mktemp("pgwarehouse")
    path.write_text(f'name = "pgcat"\nwarehouse = "{warehouse}"\nmetastore = "{postgres_url}"\n')
    return path


def test_postgres_metastore(pg_config, cli, spark, table_format):
    from helpers import read_rows

    import lakecat

    cat = lakecat.connect(str(pg_config))
    assert cat.config.metastore.kind == "postgresql"
    ns = "pg_" + uuid.uuid4().hex[:8]
    t = cat.create_table(f"{ns}.t", schema="id BIGINT, ts TIMESTAMP", format=table_format, partition_by="days(ts)")
    cat.session().sql(
        f"INSERT INTO {t.spark_name} (id, ts) VALUES (1, TIMESTAMP'2026-01-01 00:00:00'), (2, TIMESTAMP'2026-01-02 00:00:00')"
    )
    code, out, err = cli("list", ns, "--catalog", str(pg_config), "--json")
    assert code == 0, err
    assert [(t["name"], t["format"]) for t in json.loads(out)] == [(f"{ns}.t", table_format)]
    code, out, err = cli("describe", f"{ns}.t", "--catalog", str(pg_config), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["records"] == 2 and doc["partitioning"] == ["days(ts)"]
    # The independent reader (pyiceberg's SqlCatalog over the same PostgreSQL database, or delta-rs) sees Spark's rows.
    assert sorted(r["id"] for r in read_rows(cat, t)) == [1, 2]


WORKER = textwrap.dedent(
    """
    import sys, lakecat
    cat = lakecat.connect(sys.argv[1]); ns, worker = sys.argv[2], sys.argv[3]
    spark = cat.session()
    for i in range(3):
        fmt = "iceberg" if i % 2 == 0 else "delta"
        cat.create_table(f"{ns}.w{worker}_{i}", schema="id BIGINT", format=fmt)
    shared = cat.load_table(f"{ns}.shared")
    for i in range(5):
        spark.sql(f"INSERT INTO {shared.spark_name} VALUES ({int(worker) * 100 + i})")
    """
)


@pytest.mark.slow
def test_two_processes_commit_concurrently(pg_config, lakecat_home):
    import lakecat

    cat = lakecat.connect(str(pg_config))
    ns = "pgc_" + uuid.uuid4().hex[:8]
    cat.create_table(f"{ns}.shared", schema="id BIGINT", format="iceberg")
    env = {
        **os.environ,
        "LAKECAT_HOME": str(lakecat_home),
        "LAKECAT_SPARK_LOG": str(lakecat_home / "logs" / "worker.log"),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(pg_config), ns, str(w)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in (1, 2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]
    names = {t.name for t in cat.list_tables(ns)}
    assert names == {f"{ns}.shared"} | {f"{ns}.w{w}_{i}" for w in (1, 2) for i in range(3)}
    from pyiceberg.catalog.sql import SqlCatalog

    pc = SqlCatalog("pgcat", uri=cat.config.metastore.sqlalchemy_url, warehouse=cat.config.warehouse_uri)
    ids = sorted(pc.load_table((ns, "shared")).scan().to_arrow().column("id").to_pylist())
    assert ids == sorted([100 + i for i in range(5)] + [200 + i for i in range(5)])  # no commit lost, none doubled
    for t in cat.list_tables(ns):
        assert cat.load_table(t.name).describe().format == t.format  # every table's metadata intact
