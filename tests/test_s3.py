"""lakecat with its warehouse in S3-compatible object storage (a local moto server, S3 API over HTTP).

The driver runs in a subprocess (the object-storage jars and S3A settings are fixed when its JVM starts):
create → ingest (available-now, landed files) → compact → time travel for an Iceberg and a Delta table
whose data lives under ``s3a://<bucket>/warehouse``. Credentials and the endpoint reach every engine
through the ``AWS_*`` environment only. Then the light path (describe/history, no JVM) and independent
readers (pyiceberg, deltalake, boto3) check what landed in the bucket.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lakecat.processes import free_port

pytestmark = [pytest.mark.s3]

BUCKET = "lakecat-test"
ROWS = [
    {"id": f * 100 + i, "ts": f"2026-02-0{1 + i % 3}T10:00:00", "page": f"/p{i}"} for f in range(3) for i in range(20)
]


@pytest.fixture(scope="module")
def s3_env():
    """A moto S3 server on a free port with one bucket; the AWS_* variables an engine needs to reach it."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per S3 request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_ACCESS_KEY_ID": "lakecat-test-key",
        "AWS_SECRET_ACCESS_KEY": "lakecat-test-secret",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    try:
        import boto3

        boto3.client("s3", region_name=env["AWS_REGION"], endpoint_url=env["AWS_ENDPOINT_URL"],
                     aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
                     ).create_bucket(Bucket=BUCKET)  # fmt: skip
        yield env
    finally:
        server.stop()


DRIVER = textwrap.dedent(
    """
    import json, sys, time, lakecat
    started = time.monotonic()
    cat = lakecat.connect(sys.argv[1])
    files = sys.argv[2]
    cat.session()
    out = {"spark_start_s": round(time.monotonic() - started, 1)}
    for fmt in ("iceberg", "delta"):
        began = time.monotonic()
        t = cat.create_table(f"s3.events_{fmt}", schema="id BIGINT, ts TIMESTAMP, page STRING", format=fmt, partition_by="days(ts)")
        report = cat.ingest(t.name, lakecat.FileSource(files, format="json"), trigger="available-now", max_files_per_batch=1)
        after_ingest = t.describe().current_version
        first = t.history()[-1].version
        compact = t.compact()
        out[fmt] = {"location": t.describe().location, "rows_written": report.rows_written, "batches": report.batches,
                    "files_before": compact.files_before, "files_after": compact.files_after,
                    "count_after_ingest": t.as_of(version=after_ingest).count(),
                    "count_first_version": t.as_of(version=first).count(),
                    "current_version": t.describe().current_version,
                    "count_now": t.as_of(version=t.describe().current_version).count(),
                    "ids_now": sorted(r["id"] for r in t.as_of(version=t.describe().current_version).to_pandas().to_dict("records"))}
        # Maintenance that lists and deletes files in the bucket: expiry (the files compaction replaced go),
        # orphan search, drop --purge.
        expired = t.expire(older_than="0s", retain_last=1, force=True)
        out[fmt].update(expired_versions=len(expired.expired_versions), expire_deleted_files=expired.deleted_files,
                        orphans=len(t.clean_orphans(dry_run=True).orphan_files), count_after_expire=t.to_spark().count())
        scratch = cat.create_table(f"s3.scratch_{fmt}", schema="id BIGINT", format=fmt)
        out[fmt]["scratch"] = scratch.location
        cat.drop_table(scratch.name, purge=True)
        out[fmt]["duration_s"] = round(time.monotonic() - began, 1)
    print(json.dumps(out))
    """
)


def _aws_free_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}


@pytest.mark.spark
@pytest.mark.slow
def test_iceberg_and_delta_on_s3(s3_env, tmp_path):
    landing = tmp_path / "landing"
    landing.mkdir()
    for f in range(3):  # three landed files -> three batches -> several small files to compact
        rows = [r for r in ROWS if r["id"] // 100 == f]
        (landing / f"part-{f}.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    home = tmp_path / "home"
    conf = tmp_path / "lake.toml"
    conf.write_text(
        f'name = "lake"\nwarehouse = "s3a://{BUCKET}/warehouse"\nmetastore = "sqlite:///{home}/catalog.db"\n'
        '[spark]\nmaster = "local[2]"\n'
    )
    env = {**_aws_free_env(), **s3_env, "LAKECAT_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(conf), str(landing)], env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:] + "\n--- spark.log ---\n" + _tail(home / "logs" / "spark.log")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"spark start {out['spark_start_s']} s, iceberg {out['iceberg']['duration_s']} s, delta {out['delta']['duration_s']} s"
    )
    expected_ids = sorted(r["id"] for r in ROWS)
    for fmt in ("iceberg", "delta"):
        res = out[fmt]
        assert res["location"].startswith(f"s3a://{BUCKET}/warehouse/"), res["location"]
        assert res["rows_written"] == len(ROWS) and res["batches"] == 3
        assert res["files_after"] < res["files_before"]
        assert res["count_after_ingest"] == res["count_now"] == len(ROWS)
        # The oldest version: Delta's empty table as created; Iceberg's first snapshot, the first landed file.
        assert res["count_first_version"] == {"delta": 0, "iceberg": 20}[fmt]
        assert res["ids_now"] == expected_ids
        assert (
            res["expired_versions"] >= 3 and res["expire_deleted_files"] >= 3 and res["count_after_expire"] == len(ROWS)
        )
        assert res["orphans"] == 0

    # The light path (no JVM) reaches the same bucket with the same environment only.
    for fmt in ("iceberg", "delta"):
        for cmd in ("describe", "history"):
            light = subprocess.run([sys.executable, "-m", "lakecat.commands.main", cmd, f"s3.events_{fmt}", "--json"],
                                   env={**env, "LAKECAT_CATALOG": str(conf)}, capture_output=True, text=True, timeout=300)  # fmt: skip
            assert light.returncode == 0, light.stderr[-2000:]
            doc = json.loads(light.stdout)
            if cmd == "describe":
                assert doc["format"] == fmt and doc["location"] == out[fmt]["location"]
                assert doc["files"] == out[fmt]["files_after"] and doc["size_bytes"] > 0
            else:  # expiry left the current version only (Delta's log keeps the expired entries an hour for readers)
                listed = [h["version"] for h in doc]
                assert listed[0] == out[fmt]["current_version"] and doc[0]["operation"]
                assert (
                    listed == [out[fmt]["current_version"]]
                    if fmt == "iceberg"
                    else listed == sorted(listed, reverse=True)
                )

    # Independent readers against the same moto endpoint.
    import boto3
    from deltalake import DeltaTable
    from pyiceberg.catalog.sql import SqlCatalog

    pc = SqlCatalog("lake", uri=f"sqlite:///{home}/catalog.db", warehouse=f"s3a://{BUCKET}/warehouse",
                    **{"s3.endpoint": s3_env["AWS_ENDPOINT_URL"], "s3.region": s3_env["AWS_REGION"],
                       "s3.access-key-id": s3_env["AWS_ACCESS_KEY_ID"], "s3.secret-access-key": s3_env["AWS_SECRET_ACCESS_KEY"]})  # fmt: skip
    ice = pc.load_table(("s3", "events_iceberg"))
    assert sorted(ice.scan().to_arrow().column("id").to_pylist()) == expected_ids
    assert ice.metadata_location.startswith(f"s3a://{BUCKET}/warehouse/")
    delta = DeltaTable(out["delta"]["location"], storage_options={
        "AWS_ENDPOINT_URL": s3_env["AWS_ENDPOINT_URL"], "AWS_REGION": s3_env["AWS_REGION"], "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": s3_env["AWS_ACCESS_KEY_ID"], "AWS_SECRET_ACCESS_KEY": s3_env["AWS_SECRET_ACCESS_KEY"]})  # fmt: skip
    assert sorted(delta.to_pyarrow_table().column("id").to_pylist()) == expected_ids
    assert delta.metadata().configuration.get("delta.enableChangeDataFeed") == "true"
    s3 = boto3.client("s3", region_name=s3_env["AWS_REGION"], endpoint_url=s3_env["AWS_ENDPOINT_URL"],
                      aws_access_key_id=s3_env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=s3_env["AWS_SECRET_ACCESS_KEY"])  # fmt: skip
    keys = [
        o["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        for o in page.get("Contents", [])
    ]
    for fmt in ("iceberg", "delta"):
        assert any(k.startswith(f"warehouse/s3/events_{fmt}/") and k.endswith(".parquet") for k in keys), fmt
    assert any(
        k.startswith("warehouse/_lakecat/checkpoints/") for k in keys
    )  # ingest checkpoints live in the bucket too
    assert not any(k.startswith("warehouse/s3/scratch_") for k in keys)  # drop --purge emptied the table directories
    assert not (home / "warehouse").exists()  # nothing fell back to a local directory


TWO_STORES_DRIVER = textwrap.dedent(
    """
    import json, os, sys, lakecat
    from lakecat.formats import all_formats
    all_formats()  # the formats load first: Delta's sets delta-rs's allocator (lakecat.formats.delta), not a store
    before = dict(os.environ)
    cats = {"a": lakecat.connect(sys.argv[1]), "b": lakecat.connect(sys.argv[2])}
    landing = sys.argv[3]
    out = {"connect_changed_env": sorted(set(os.environ.items()) ^ set(before.items()))}
    for key, cat in cats.items():
        for fmt in ("iceberg", "delta"):
            t = cat.create_table(f"s.ev_{fmt}", schema="id BIGINT, who STRING", format=fmt)
            report = cat.ingest(t.name, lakecat.FileSource(f"{landing}/{key}", format="json"), trigger="available-now")
            out[f"{key}_{fmt}"] = {"location": t.location, "rows_written": report.rows_written,
                                   "light": sorted(t.read(engine="light").column("id").to_pylist()),
                                   "light_who": sorted(set(t.read(engine="light").column("who").to_pylist())),
                                   "files": t.describe().files, "versions": len(t.history())}
    # the other catalog's tables again, after both exist: each still through its own store; Spark reads all four in
    # the one session (each bucket with its own S3A settings)
    for key, cat in cats.items():
        for fmt in ("iceberg", "delta"):
            t = cat.load_table(f"s.ev_{fmt}")
            out[f"{key}_{fmt}"].update(light_again=sorted(t.read(engine="light").column("id").to_pylist()),
                                       spark=sorted(r["id"] for r in t.to_spark().collect()))
    out["changed_env"] = sorted(k for k in set(os.environ) | set(before) if os.environ.get(k) != before.get(k))
    print(json.dumps(out))
    """
)


def _moto_process(port: int) -> subprocess.Popen:
    """A moto S3 server in a process of its own: moto keeps its buckets per process, so two servers in one process
    would share them (and a read through the wrong endpoint would still find its bucket)."""
    return subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip


@pytest.fixture(scope="module")
def two_stores():
    """Two S3 servers (separate moto processes), each with its own bucket and credentials."""
    import socket
    import time

    stores, procs = {}, []
    try:
        for key in ("a", "b"):
            port = free_port()
            procs.append(_moto_process(port))
            stores[key] = {"endpoint": f"http://127.0.0.1:{port}", "bucket": f"lakecat-store-{key}",
                           "key": f"key-{key}", "secret": f"secret-{key}"}  # fmt: skip
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert procs[-1].poll() is None and time.monotonic() < deadline, "moto server did not start"
                    time.sleep(0.2)
            _s3_client(stores[key]).create_bucket(Bucket=stores[key]["bucket"])
        yield stores
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)


def _s3_client(store):
    import boto3

    return boto3.client("s3", region_name="us-east-1", endpoint_url=store["endpoint"],
                        aws_access_key_id=store["key"], aws_secret_access_key=store["secret"])  # fmt: skip


@pytest.mark.spark
@pytest.mark.slow
def test_two_catalogs_on_two_stores_in_one_process(two_stores, tmp_path):
    """Each catalog carries its own object store (endpoint, credentials) to every engine it opens: two catalogs on
    two S3 servers, in one process, each create, ingest and read (light path and Spark, one session) their own tables
    of both formats, with no AWS_* variable set and the process environment unchanged. Each server then holds its own
    catalog's files and nothing of the other's (independent readers: boto3, pyiceberg, deltalake)."""
    confs, env = {}, {**_aws_free_env(), "LAKECAT_HOME": str(tmp_path / "home"), "PYSPARK_PYTHON": sys.executable,
                      "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
    rows = {"a": list(range(10)), "b": list(range(100, 105))}
    for key, store in two_stores.items():
        (tmp_path / "landing" / key).mkdir(parents=True)
        (tmp_path / "landing" / key / "part-0.json").write_text(
            "\n".join(json.dumps({"id": i, "who": key}) for i in rows[key]) + "\n"
        )
        env[f"LAKE_{key.upper()}_KEY"], env[f"LAKE_{key.upper()}_SECRET"] = store["key"], store["secret"]
        confs[key] = tmp_path / f"{key}.toml"
        confs[key].write_text(
            f'name = "lake_{key}"\nwarehouse = "s3a://{store["bucket"]}/wh"\n'
            f'metastore = "sqlite:///{tmp_path}/{key}.db"\n[spark]\nmaster = "local[2]"\n'
            f'[storage]\nendpoint = "{store["endpoint"]}"\n'
            f'access-key-id = "${{LAKE_{key.upper()}_KEY}}"\nsecret-access-key = "${{LAKE_{key.upper()}_SECRET}}"\n'
        )
    proc = subprocess.run([sys.executable, "-c", TWO_STORES_DRIVER, str(confs["a"]), str(confs["b"]), str(tmp_path / "landing")],
                          env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:] + "\n--- spark.log ---\n" + _tail(tmp_path / "home/logs/spark.log")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # Connecting writes nothing to the environment; using both, only what pyspark sets for its own Python workers.
    assert out["connect_changed_env"] == []
    assert set(out["changed_env"]) <= {"SPARK_AUTH_SOCKET_TIMEOUT", "SPARK_BUFFER_SIZE"}, out["changed_env"]
    for key, store in two_stores.items():
        for fmt in ("iceberg", "delta"):
            res = out[f"{key}_{fmt}"]
            assert res["location"].startswith(f"s3a://{store['bucket']}/wh/"), res["location"]
            assert res["rows_written"] == len(rows[key]) and res["light_who"] == [key]
            assert res["light"] == res["light_again"] == res["spark"] == rows[key]
            assert res["files"] >= 1 and res["versions"] >= 1

    # Independent readers, each told one server's endpoint and credentials.
    from deltalake import DeltaTable
    from pyiceberg.catalog.sql import SqlCatalog

    for key, store in two_stores.items():
        other = two_stores["b" if key == "a" else "a"]
        keys = [o["Key"] for o in _s3_client(store).list_objects_v2(Bucket=store["bucket"]).get("Contents", [])]
        assert any(k.startswith("wh/s/ev_delta/") for k in keys) and any(k.startswith("wh/s/ev_iceberg/") for k in keys)
        assert any(k.startswith("wh/_lakecat/checkpoints/") for k in keys)  # the ingest's checkpoints too
        buckets = {b["Name"] for b in _s3_client(store).list_buckets()["Buckets"]}
        assert buckets == {store["bucket"]}, buckets  # nothing of the other catalog reached this server
        assert other["bucket"] not in buckets
        pc = SqlCatalog(f"lake_{key}", uri=f"sqlite:///{tmp_path}/{key}.db", warehouse=f"s3a://{store['bucket']}/wh",
                        **{"s3.endpoint": store["endpoint"], "s3.region": "us-east-1",
                           "s3.access-key-id": store["key"], "s3.secret-access-key": store["secret"]})  # fmt: skip
        ice = pc.load_table(("s", "ev_iceberg"))
        assert sorted(ice.scan().to_arrow().column("id").to_pylist()) == rows[key]
        delta = DeltaTable(out[f"{key}_delta"]["location"], storage_options={
            "AWS_ENDPOINT_URL": store["endpoint"], "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": store["key"], "AWS_SECRET_ACCESS_KEY": store["secret"]})  # fmt: skip
        assert sorted(delta.to_pyarrow_table().column("id").to_pylist()) == rows[key]


def test_object_storage_config_resolution(monkeypatch, tmp_path):
    """How a warehouse on s3a:// turns into Spark, pyiceberg and delta-rs settings (no JVM, no server)."""
    from lakecat.config import load_config_file
    from lakecat.errors import ConfigError
    from lakecat.jar_sets import S3_EXCLUDES
    from lakecat.spark import _excludes, _packages, storage_spark_conf
    from lakecat.spark import catalog_spark_conf as iceberg_catalog_conf

    for var in ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(var, raising=False)
    conf = tmp_path / "lake.toml"
    conf.write_text(
        'name = "lake"\nwarehouse = "s3a://b/wh"\nmetastore = "sqlite:////tmp/x.db"\n[storage]\nendpoint = "http://minio:9000"\n'
    )
    cfg = load_config_file(conf)
    assert cfg.object_storage and cfg.s3().path_style and cfg.s3().region == "us-east-1"
    spark_conf = storage_spark_conf(cfg)
    assert spark_conf["spark.hadoop.fs.s3a.endpoint"] == "http://minio:9000"
    assert spark_conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    ice = iceberg_catalog_conf(cfg)
    assert ice["spark.sql.catalog.lake.io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert ice["spark.sql.catalog.lake.s3.endpoint"] == "http://minio:9000"
    assert cfg.pyiceberg_properties() == {"s3.region": "us-east-1", "s3.endpoint": "http://minio:9000"}
    assert cfg.delta_storage_options()["AWS_ALLOW_HTTP"] == "true"
    assert not any(
        k.lower().endswith(("key", "secret", "token")) for k in {**spark_conf, **ice, **cfg.delta_storage_options()}
    )
    assert {p.split(":")[1] for p in _packages(cfg)} >= {"hadoop-aws", "iceberg-aws-bundle"}
    assert set(S3_EXCLUDES) <= set(_excludes(cfg))
    # Per bucket too: a second catalog's bucket in the same session reaches its own store.
    assert spark_conf["spark.hadoop.fs.s3a.bucket.b.endpoint"] == "http://minio:9000"
    assert spark_conf["spark.hadoop.fs.s3a.bucket.b.path.style.access"] == "true"
    # The file wins over the environment, which fills in what the file leaves unset; a local warehouse pays for nothing.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://s3.example.com")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert load_config_file(conf).s3().endpoint == "http://minio:9000"
    assert load_config_file(conf).s3().region == "eu-west-1"
    unset = tmp_path / "env.toml"
    unset.write_text('name = "env"\nwarehouse = "s3a://b/wh"\nmetastore = "sqlite:////tmp/x.db"\n')
    assert load_config_file(unset).s3().endpoint == "https://s3.example.com"
    assert storage_spark_conf(load_config_file(unset))["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "true"
    local = tmp_path / "local.toml"
    local.write_text('name = "l"\nwarehouse = "/tmp/wh"\nmetastore = "sqlite:////tmp/x.db"\n')
    lcfg = load_config_file(local)
    assert lcfg.s3() is None and storage_spark_conf(lcfg) == {} and lcfg.pyiceberg_properties() == {}
    assert not any("aws" in p for p in _packages(lcfg)) and not set(S3_EXCLUDES) & set(_excludes(lcfg))
    # Secrets never come from the file: a catalog's own credentials are environment references, handed to each engine
    # as options (never on a JVM's command line: Spark gets them on the running session).
    conf.write_text(
        'name = "lake"\nwarehouse = "s3a://b/wh"\nmetastore = "sqlite:////tmp/x.db"\n[storage]\nsecret-access-key = "x"\n'
    )
    with pytest.raises(ConfigError, match="AWS_SECRET_ACCESS_KEY"):
        load_config_file(conf)
    monkeypatch.setenv("LAKE_KEY", "key-1")
    monkeypatch.setenv("LAKE_SECRET", "secret-1")
    conf.write_text('name = "lake"\nwarehouse = "s3a://b/wh"\nmetastore = "sqlite:////tmp/x.db"\n[storage]\n'
                    'access-key-id = "${LAKE_KEY}"\nsecret-access-key = "${LAKE_SECRET}"\n')  # fmt: skip
    cfg = load_config_file(conf)
    assert "secret-1" not in repr(cfg.s3())
    assert cfg.pyiceberg_properties()["s3.secret-access-key"] == "secret-1"
    assert cfg.delta_storage_options()["AWS_ACCESS_KEY_ID"] == "key-1"
    assert not any("secret-1" in v for v in {**storage_spark_conf(cfg), **iceberg_catalog_conf(cfg)}.values())
    assert cfg.s3().hadoop_bucket_conf("b")["fs.s3a.bucket.b.secret.key"] == "secret-1"


def test_hadoop_aws_matches_pyspark_hadoop():
    """hadoop-aws must be the Hadoop version pyspark bundles, or S3A fails with linkage errors."""
    import pyspark

    from lakecat.jar_sets import HADOOP_AWS

    bundled = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    assert bundled, "pyspark ships no hadoop-client-api jar"
    assert HADOOP_AWS.rsplit(":", 1)[1] == bundled[0].name.removeprefix("hadoop-client-api-").removesuffix(".jar")


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
