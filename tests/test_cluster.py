"""lakecat unchanged on a real Spark standalone cluster (master + worker from pyspark's own distribution).

The driver runs in a subprocess whose catalog config names `spark://...` as master; create → ingest
(available-now, files) → compact → time travel go through lakecat there, and independent readers
check the tables here.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lakecat.processes import free_port

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.cluster]


def _wait_port(port: int, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise TimeoutError(f"nothing listens on {port}")


@pytest.fixture(scope="module")
def standalone_master(tmp_path_factory):
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    work = tmp_path_factory.mktemp("standalone")
    env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(work / "worker"),
           "SPARK_LOG_DIR": str(work), "PYSPARK_PYTHON": sys.executable}  # fmt: skip
    port = free_port()
    spark_class = str(spark_home / "bin" / "spark-class")
    master = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())],
        env=env, stdout=open(work / "master.log", "w"), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"spark://127.0.0.1:{port}"
    worker = None
    try:
        _wait_port(port)
        worker = subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()), url],
            env=env, stdout=open(work / "worker.log", "w"), stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.time() + 60
        while "Successfully registered with master" not in (work / "worker.log").read_text() and time.time() < deadline:
            time.sleep(0.5)
        yield url
    finally:
        for proc in (worker, master):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()


DRIVER = textwrap.dedent(
    """
    import json, sys, lakecat
    cat = lakecat.connect(sys.argv[1])
    files = sys.argv[2]
    out = {"master": cat.session().sparkContext.master}
    for fmt in ("iceberg", "delta"):
        t = cat.create_table(f"cl.events_{fmt}", schema="id BIGINT, ts TIMESTAMP, page STRING", format=fmt, partition_by="days(ts)")
        report = cat.ingest(t.name, lakecat.FileSource(files, format="json"), trigger="available-now", max_files_per_batch=1)
        compact = t.compact()
        out[fmt] = {"rows_written": report.rows_written, "batches": report.batches,
                    "files_after": compact.files_after, "count_now": t.as_of(version=t.describe().current_version).count()}
    print(json.dumps(out))
    """
)


def test_create_ingest_compact_timetravel_on_standalone_cluster(standalone_master, tmp_path):
    files = tmp_path / "landing"
    files.mkdir()
    for f in range(4):  # four landed files -> four batches -> several small files to compact
        (files / f"part-{f}.json").write_text(
            "\n".join(
                json.dumps({"id": f * 100 + i, "ts": f"2026-02-0{1 + i % 3}T10:00:00", "page": f"/p{i}"})
                for i in range(25)
            )
            + "\n"
        )
    home = tmp_path / "home"
    conf = tmp_path / "cluster.toml"
    conf.write_text(
        f'name = "cluster"\nwarehouse = "{tmp_path}/warehouse"\nmetastore = "sqlite:///{home}/catalog.db"\n'
        f'[spark]\nmaster = "{standalone_master}"\n'
        '[spark.conf]\n"spark.executor.memory" = "512m"\n"spark.cores.max" = "1"\n"spark.driver.host" = "127.0.0.1"\n'
    )
    env = {**os.environ, "LAKECAT_HOME": str(home), "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(conf), str(files)], env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["master"] == standalone_master
    for fmt in ("iceberg", "delta"):
        assert out[fmt]["rows_written"] == 100 and out[fmt]["count_now"] == 100
        assert out[fmt]["files_after"] < out[fmt]["batches"] * 3
    # Independent readers agree with what the cluster wrote.
    from deltalake import DeltaTable
    from pyiceberg.catalog.sql import SqlCatalog

    pc = SqlCatalog("cluster", uri=f"sqlite:///{home}/catalog.db", warehouse=(tmp_path / "warehouse").as_uri())
    assert sorted(pc.load_table(("cl", "events_iceberg")).scan().to_arrow().column("id").to_pylist()) == sorted(
        f * 100 + i for f in range(4) for i in range(25)
    )
    assert DeltaTable(str(tmp_path / "warehouse" / "cl" / "events_delta")).to_pyarrow_table().num_rows == 100
