"""The light engine of expiry, orphan cleanup and metadata upkeep (pyiceberg / delta-rs, no JVM) against Spark's.

Light Iceberg expiry is held against Iceberg's own ``expire_snapshots`` procedure on the same history built twice;
orphan cleanup against ``remove_orphan_files``; every result, dry run and maintenance log row says which engine ran
and why; ``maintain --auto`` from a script over small plain tables of both formats never imports the Spark path.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers import light_tables, read_rows

pytestmark = pytest.mark.spark

OLD = time.time() - 10 * 86400  # older than every format's orphan window and safety floor


def _root(t) -> Path:
    return Path(t.location.replace("file://", "").replace("file:", ""))


def _disk(t) -> set[str]:
    """Every file under the table's directory but Hadoop's checksum sidecars."""
    return {str(p) for p in _root(t).rglob("*") if p.is_file() and not p.name.endswith(".crc")}


def _plain(path: str) -> str:
    return path.replace("file://", "").replace("file:", "")


def _age_everything(t) -> None:
    for p in _root(t).rglob("*"):
        if p.is_file():
            os.utime(p, (OLD, OLD))


def _history(catalog, spark, name):
    """s1..s6 on main (s3 carries a stream marker, s4 deletes s3's row: copy-on-write), a tag at s2, a branch forked
    at s4 with one commit of its own."""
    from lakecat.engine import spark_conf

    t = catalog.create_table(name, schema="id BIGINT NOT NULL, v STRING", format="iceberg",
                             properties={"write.delete.mode": "copy-on-write"})  # fmt: skip

    def insert(values: str) -> None:
        spark.sql(f"INSERT INTO {t.spark_name} VALUES {values}")

    insert("(1, 'a')")
    insert("(2, 'b')")
    t.tag("old")
    with spark_conf(spark, t.adapter.merge_marker_conf("app-1", 7)):
        insert("(3, 'c')")
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 3")
    t.branch("audit")
    spark.sql(f"INSERT INTO {t.on_branch('audit').spark_name} VALUES (9, 'z')")
    insert("(4, 'd')")
    insert("(5, 'e')")
    return t


def _snapshots(t) -> list[int]:
    """Snapshot ids in commit order."""
    meta = t.adapter.load(t).metadata
    return [s.snapshot_id for s in sorted(meta.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number))]


def _kinds(paths: set[str], rows: dict[str, list[int]]) -> dict[str, object]:
    """Deleted files by kind: data files by the rows they held, manifests and manifest lists counted."""
    data = sorted(tuple(rows[p]) for p in paths if p.endswith(".parquet"))
    lists = sum(Path(p).name.startswith("snap-") for p in paths)
    manifests = sum(p.endswith(".avro") and not Path(p).name.startswith("snap-") for p in paths)
    return {
        "data": data,
        "manifest_lists": lists,
        "manifests": manifests,
        "other": len(paths) - len(data) - lists - manifests,
    }


def test_iceberg_light_expire_does_what_spark_expire_does(catalog, spark, ns):
    tables = {engine: _history(catalog, spark, f"{ns}.{engine}") for engine in ("light", "spark")}
    outcome = {}
    for engine, t in tables.items():
        order = _snapshots(t)
        rows = {p: sorted(pq.read_table(p).column("id").to_pylist()) for p in _disk(t) if p.endswith(".parquet")}
        before = _disk(t)
        plan = t.expire(older_than="0s", retain_last=2, force=True, dry_run=True, engine=engine)
        assert plan.engine == engine and plan.engine_reason == f"engine={engine} was asked for"
        assert _disk(t) == before  # the dry run changed nothing
        res = t.expire(older_than="0s", retain_last=2, force=True, engine=engine)
        assert res.engine == engine
        assert sorted(res.expired_versions) == sorted(plan.expired_versions)
        gone = before - _disk(t)
        outcome[engine] = {
            "remaining": sorted(order.index(s) for s in _snapshots(t)),
            "expired": sorted(order.index(s) for s in res.expired_versions),
            "deleted": _kinds(gone, rows),
        }
        if engine == "light":  # what the result says went is what went
            assert {_plain(p) for p in res.files} == gone and res.deleted_files == len(gone)
    assert outcome["light"] == outcome["spark"]
    # s1 and s3 go: s2 is tagged, s4 is where the unpublished branch forked, s5 and s6 are the newest two
    assert outcome["light"]["expired"] == [0, 2] and outcome["light"]["remaining"] == [1, 3, 4, 5, 6]
    assert outcome["light"]["deleted"] == {"data": [(3,)], "manifest_lists": 2, "manifests": 1, "other": 0}

    t = tables["light"]
    assert t.adapter.committed_batch(t, "app-1") == 7  # the stream marker of an expired snapshot was saved
    assert sorted(r["id"] for r in read_rows(catalog, t)) == [1, 2, 4, 5]  # pyiceberg
    assert sorted(r.id for r in t.to_spark().collect()) == [1, 2, 4, 5]  # Spark
    assert sorted(r.id for r in spark.sql(f"SELECT id FROM {t.spark_name} VERSION AS OF 'old'").collect()) == [1, 2]
    assert sorted(r.id for r in t.on_branch("audit").to_spark().collect()) == [1, 2, 9]
    assert set(t.adapter.load(t).metadata.refs) == {"main", "old", "audit"}


def test_iceberg_light_expire_of_a_table_pyiceberg_wrote(catalog, ns):
    import pyarrow as pa

    t = catalog.create_table(f"{ns}.py", schema="id BIGINT NOT NULL, v STRING", format="iceberg")
    tbl = t.adapter.sql_catalog(catalog).load_table((ns, "py"))
    schema = tbl.schema().as_arrow()
    for i in range(4):
        tbl.append(pa.table({"id": [i], "v": [f"v{i}"]}, schema=schema))
    tbl.overwrite(pa.table({"id": [10], "v": ["x"]}, schema=schema))
    before = _disk(t)
    res = t.expire(older_than="0s", retain_last=1, force=True)
    assert res.engine == "light" and "lakecat.maintain.light-max-bytes" in res.engine_reason
    assert len(res.expired_versions) == 5 and len(_snapshots(t)) == 1
    assert {_plain(p) for p in res.files} == before - _disk(t)
    assert sum(p.endswith(".parquet") for p in before - _disk(t)) == 4  # the appended files the overwrite replaced
    assert [r["id"] for r in read_rows(catalog, t)] == [10]
    assert [r.id for r in t.to_spark().collect()] == [10]


@pytest.mark.parametrize("table_format", ["iceberg", "delta"])
def test_orphan_cleanup_on_both_engines_keeps_what_it_must(catalog, spark, ns, table_format):
    t = catalog.create_table(f"{ns}.o", schema="id BIGINT NOT NULL, v STRING", format=table_format,
                             properties={"write.delete.mode": "copy-on-write"} if table_format == "iceberg" else None)  # fmt: skip
    for i in range(3):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES ({i}, 'v{i}')")
    first = {p for p in _disk(t) if p.endswith(".parquet")}
    spark.sql(f"DELETE FROM {t.spark_name} WHERE id = 0")  # a file only the older versions read now
    only_old = [p for p in first if 0 in pq.read_table(p).column("id").to_pylist()]
    assert len(only_old) == 1
    data = _root(t) / "data" if table_format == "iceberg" else _root(t)
    data.mkdir(exist_ok=True)
    (data / "orphan-old.parquet").write_bytes(b"x" * 100)
    _age_everything(t)  # metadata, the log, every data file: old enough to be looked at
    (data / "orphan-new.parquet").write_bytes(b"y" * 100)  # inside the window: may be a commit in flight
    kept = _disk(t) - {str(data / "orphan-old.parquet")}

    found = {}
    for engine in ("light", "spark") if table_format == "iceberg" else ("light",):
        res = t.clean_orphans(dry_run=True, engine=engine)
        assert res.engine == engine
        found[engine] = sorted(_plain(p) for p in res.orphan_files)
    assert found["light"] == [str(data / "orphan-old.parquet")]
    assert found.get("spark", found["light"]) == found["light"]  # Iceberg's remove_orphan_files agrees

    res = t.clean_orphans()
    assert res.engine == "light" and res.deleted_files == 1 and res.deleted_bytes == 100
    assert _disk(t) == kept  # the young orphan, the old version's file, metadata and log all stay
    assert sorted(r["id"] for r in read_rows(catalog, t)) == [1, 2]
    assert t.to_spark().count() == 2

    (data / "orphan-again.parquet").write_bytes(b"z" * 10)
    os.utime(data / "orphan-again.parquet", (OLD, OLD))
    res = t.clean_orphans(engine="spark")
    if table_format == "iceberg":
        assert res.engine == "spark" and res.engine_reason == "engine=spark was asked for"
    else:  # Delta's cleanup is lakecat's own: no Spark step exists for it, and the result says so
        assert res.engine == "light" and "no Spark step" in res.engine_reason
    assert res.deleted_files == 1 and _disk(t) == kept


def test_iceberg_orphan_paths_compare_as_delete_orphan_files_does():
    """Iceberg's ``DeleteOrphanFiles`` rules: a location without a scheme or authority matches any, s3a and s3n are
    s3, %-escapes are decoded; the same path under another scheme or authority fails closed (nothing is deleted)."""
    from lakecat.errors import LakecatError
    from lakecat.formats.iceberg.maintenance import _orphans_of, _uri_parts

    assert (
        _uri_parts("file:/a/b%20c") == _uri_parts("/a/b c") == _uri_parts("file:///a/b%20c") == (None, None, "/a/b c")
    )
    assert _uri_parts("s3a://bkt/k") == ("s3", "bkt", "/k") == _uri_parts("s3://bkt/k") == _uri_parts("s3n://bkt/k")
    valid = {"file:/t/data/a.parquet", "s3://bkt/t/data/b.parquet", "/t/metadata/v1.metadata.json"}
    found = ["/t/data/a.parquet", "s3a://bkt/t/data/b.parquet", "/t/metadata/v1.metadata.json", "/t/data/c.parquet"]
    assert _orphans_of(found, valid, "ns.t") == ["/t/data/c.parquet"]
    with pytest.raises(LakecatError, match="prefix-mismatch") as info:
        _orphans_of(["s3://other/t/data/b.parquet"], valid, "ns.t")
    assert "nothing is deleted" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(LakecatError, match="prefix-mismatch"):
        _orphans_of(["gs://bkt/t/data/b.parquet"], valid, "ns.t")


def test_engine_forcing_and_refusals(cli, catalog, spark, ns):
    ice = catalog.create_table(f"{ns}.i", schema="id BIGINT NOT NULL", format="iceberg")
    delta = catalog.create_table(f"{ns}.d", schema="id BIGINT NOT NULL", format="delta")
    for t in (ice, delta):
        spark.sql(f"INSERT INTO {t.spark_name} VALUES (1)")

    def run(*args):
        code, out, err = cli(*args, "--json")
        return code, json.loads(out) if out.strip() else None, err

    code, doc, _ = run("expire", ice.name, "--dry-run")
    assert code == 0 and doc["engine"] == "light" and "light-max-bytes" in doc["engine_reason"]
    code, out, _ = cli("expire", ice.name, "--dry-run")  # the human line says it too
    assert code == 0 and "engine: light — " in out and "lakecat.maintain.light-max-bytes" in out
    code, doc, _ = run("expire", ice.name, "--dry-run", "--engine", "spark")
    assert code == 0 and doc["engine"] == "spark" and doc["engine_reason"] == "engine=spark was asked for"
    code, doc, _ = run("clean-orphans", ice.name, "--dry-run", "--engine", "light")
    assert code == 0 and doc["engine"] == "light" and doc["engine_reason"] == "engine=light was asked for"
    code, doc, _ = run("expire", delta.name, "--dry-run", "--engine", "spark")
    assert code == 0 and doc["engine"] == "light" and "no Spark step" in doc["engine_reason"]
    code, doc, err = run("expire", ice.name, "--dry-run", "--engine", "warp")
    assert code == 2 and "spark or auto" in (doc or {}).get("error", {}).get("message", err)

    # over the light engine's limit: Spark, and the reason names the key
    ice.set_properties({"lakecat.maintain.light-max-bytes": "1B"})
    code, doc, _ = run("expire", ice.name, "--dry-run")
    assert code == 0 and doc["engine"] == "spark" and "lakecat.maintain.light-max-bytes" in doc["engine_reason"]

    # manifests are merged by Spark (pyiceberg has none); Delta's checkpoint is delta-rs's
    plan = ice.rewrite_metadata(dry_run=True)
    assert plan.engine == "spark" and "pyiceberg has no manifest rewrite" in plan.engine_reason
    assert delta.rewrite_metadata(dry_run=True).engine == "light"

    # a table the light library cannot expire exactly: a forced light run is refused in one line, nothing written
    ice.set_properties({"gc.enabled": "false"})
    before = _disk(ice)
    code, doc, err = run("expire", ice.name, "--older-than", "0s", "--force", "--engine", "light")
    message = doc["error"]["message"]
    assert code == 3 and "cannot run without Spark" in message and "gc.enabled" in message and "\n" not in message
    assert _disk(ice) == before
    code, doc, _ = run("expire", ice.name, "--dry-run")  # left to choose, lakecat sends it to Spark and says why
    assert code == 0 and doc["engine"] == "spark" and "gc.enabled" in doc["engine_reason"]


def test_maintain_auto_from_a_script_starts_no_java(catalog, ns, light_cli, tmp_path):
    """Item: ``CI=true lakecat maintain --auto 'ns.*'`` over small plain tables of both formats (written by pyiceberg
    and delta-rs) whose health calls for expiry and orphan cleanup, and two more of twelve small appends each whose
    health calls for compaction, runs all of it without importing the Spark path."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from lakecat.maintenance import data_files

    ice = catalog.create_table(f"{ns}.ice", schema="id BIGINT NOT NULL, v STRING", format="iceberg")
    delta = catalog.create_table(f"{ns}.dl", schema="id BIGINT NOT NULL, v STRING", format="delta")
    tbl = ice.adapter.sql_catalog(catalog).load_table((ns, "ice"))
    schema = tbl.schema().as_arrow()
    for i in range(4):
        batch = pa.table({"id": [i], "v": [f"v{i}"]}, schema=schema)
        tbl.append(batch)
        write_deltalake(delta.location, batch, mode="append")
    last = pa.table({"id": [9], "v": ["x"]}, schema=schema)
    tbl.overwrite(last)  # a rewrite: health then asks for orphan cleanup too
    write_deltalake(delta.location, last, mode="overwrite")
    orphans = []
    for t in (ice, delta):
        (_root(t) / "data").mkdir(exist_ok=True)
        orphan = _root(t) / "data" / "orphan.parquet"
        orphan.write_bytes(b"o" * 64)
        os.utime(orphan, (OLD, OLD))
        orphans.append(orphan)
    plan = tmp_path / "plan.toml"
    plan.write_text('[defaults]\nforce = true\nexpire.older-than = "0s"\nexpire.retain-last = 1\n'
                    'orphans.older-than = "0s"\n')  # fmt: skip

    small = light_tables(catalog, ns, 2, commits=12)  # t000 Iceberg, t001 Delta (partitioned): 12 files a partition
    before = {
        n: (sorted(r["id"] for r in read_rows(catalog, n)), len(data_files(catalog.load_table(n)))) for n in small
    }

    env = {"CI": "true"}
    doc = light_cli("maintain", "--auto", f"{ns}.*", "--plan", plan, env=env)
    assert doc["failed"] == 0 and len(doc["tables"]) == 4
    for report in doc["tables"]:
        done = {a["action"]: a for a in report["actions"] if a["status"] == "done"}
        if report["name"] in small:
            assert "compact" in done, report
            assert all(a["result"]["engine"] == "light" for a in done.values()), report
            continue
        assert set(done) == {"expire", "clean-orphans"}, report
        for action in done.values():
            assert action["result"]["engine"] == "light" and action["reason"].startswith("light engine: ")
        assert done["clean-orphans"]["result"]["deleted_files"] >= 1
    assert not any(o.exists() for o in orphans)
    assert [r["id"] for r in read_rows(catalog, ice)] == [9] and [r["id"] for r in read_rows(catalog, delta)] == [9]
    for n in small:  # the same rows (pyiceberg / delta-rs read them back) in fewer files
        ids, files = before[n]
        assert sorted(r["id"] for r in read_rows(catalog, n)) == ids and len(data_files(catalog.load_table(n))) < files

    runs = light_cli("maintenance-log", f"{ns}.*", env=env)
    engines = {(r["table"], r["action"]): r["engine"] for r in runs}
    assert {k: v for k, v in engines.items() if k[0] not in small} == {
        (t.name, a): "light" for t in (ice, delta) for a in ("expire", "clean-orphans")
    }
    assert all(engines[(n, "compact")] == "light" for n in small)
    assert all(r["engine_reason"] for r in runs)


def test_maintain_engine_forced_and_logged(cli, catalog, spark, ns, tmp_path):
    ice = catalog.create_table(f"{ns}.i", schema="id BIGINT NOT NULL", format="iceberg")
    delta = catalog.create_table(f"{ns}.d", schema="id BIGINT NOT NULL", format="delta")
    for t in (ice, delta):
        for i in range(3):
            spark.sql(f"INSERT INTO {t.spark_name} VALUES ({i})")
    plan = tmp_path / "plan.toml"
    plan.write_text('[defaults]\nforce = true\nexpire.older-than = "0s"\nexpire.retain-last = 1\n')

    def maintain(*args):
        code, out, err = cli("maintain", f"{ns}.*", "--plan", plan, *args, "--json")
        return code, json.loads(out), err

    code, doc, err = maintain("--engine", "spark", "--dry-run")
    assert code == 0, err
    planned = {r["name"]: {a["action"]: a for a in r["actions"]} for r in doc["tables"]}
    assert planned[ice.name]["expire"]["status"] == "would-run"
    assert "spark engine: engine=spark was asked for" in planned[ice.name]["expire"]["reason"]
    assert "light engine: " in planned[delta.name]["expire"]["reason"]
    assert "no Spark step" in planned[delta.name]["expire"]["result"]["engine_reason"]

    code, doc, err = maintain("--engine", "spark")
    assert code == 0, err
    runs = {(r["table"], r["action"]): r for r in json.loads(cli("maintenance-log", f"{ns}.*", "--json")[1])}
    assert runs[(ice.name, "expire")]["engine"] == "spark"
    assert runs[(ice.name, "expire")]["engine_reason"] == "engine=spark was asked for"
    assert runs[(delta.name, "expire")]["engine"] == "light" and runs[(ice.name, "expire")]["outcome"] == "ok"
    assert len(_snapshots(ice)) == 1 and sorted(r["id"] for r in read_rows(catalog, ice)) == [0, 1, 2]

    # forced light on a table it cannot do exactly: that table fails in one line, the others still run
    spark.sql(f"INSERT INTO {ice.spark_name} VALUES (3)")
    ice.set_properties({"gc.enabled": "false"})
    before = _disk(ice)
    code, doc, err = maintain("--engine", "light")
    assert code == 1
    failed = {r["name"]: r for r in doc["tables"] if r["status"] == "failed"}
    assert set(failed) == {ice.name} and "cannot run without Spark: gc.enabled is false" in failed[ice.name]["error"]
    assert _disk(ice) == before
