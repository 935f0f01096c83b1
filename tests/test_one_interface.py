"""One interface over both formats: `history` names operations in lakecat's words (the engine's own word kept beside
them), `changes` of an upsert shows update pre- and post-images, and no output carries Spark's expression ids."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pytest
from helpers import pyiceberg_catalog

from lakecat.formats.base import OPERATIONS
from lakecat.formats.delta import versions as delta_versions
from lakecat.formats.iceberg import versions as iceberg_versions

SCHEMA = "id BIGINT NOT NULL, v STRING"
EXPRESSION_ID = re.compile(r"#\d+")


def run_json(cli, *args):
    code, out, err = cli(*args, "--json")
    assert code == 0, (args, err)
    return json.loads(out)


def data_ops(doc: list[dict]) -> list[str]:
    """The operations oldest first, without Delta's CREATE (an Iceberg table's creation is no snapshot)."""
    return [e["operation"] for e in reversed(doc) if e["operation"] != "create"]


def sorted_rows(doc: dict) -> list[str]:
    """Change rows in one order (within a commit, the order of the rows of one kind is the reader's)."""
    return sorted(json.dumps(r, sort_keys=True) for r in doc["rows"])


def assert_no_expression_ids(cli, name: str) -> None:
    for args in (("history", name), ("history", name, "--json")):
        code, out, err = cli(*args)
        assert code == 0, err
        assert not EXPRESSION_ID.search(out), out


# --- the mapping, without Spark -----------------------------------------------------------------
def test_every_engine_word_maps_into_the_vocabulary():
    assert set(delta_versions._OPERATIONS.values()) <= set(OPERATIONS)
    assert set(iceberg_versions._OPERATIONS.values()) <= set(OPERATIONS)


def delta_commit(operation: str, **params):
    return delta_versions._commit({"version": 3, "timestamp": 1, "operation": operation, "operationParameters": params})


def test_delta_commits_carry_no_expression_ids():
    merge = delta_commit("MERGE", predicate='["(id#757L = id#31L)"]')
    assert (merge.operation, merge.summary["engine_operation"]) == ("merge", "MERGE")
    assert "predicate" not in merge.summary  # Spark's join condition without its ids reads "(id = id)"
    delete = delta_commit("DELETE", predicate='["(id#4440L = 1)", "(v#12 = \'a#1\')"]')
    assert (delete.operation, delete.summary["predicate"]) == ("delete", "(id = 1) AND (v = 'a')")
    assert "predicate" not in delta_commit("OPTIMIZE", predicate="[]").summary
    assert delta_commit("DELETE", predicate="id = 3").summary["predicate"] == "id = 3"  # delta-rs: plain text
    assert delta_commit("MERGE", predicate="t.id = s.id").summary["predicate"] == "t.id = s.id"
    assert delta_commit("WRITE", mode="Overwrite").operation == "overwrite"
    odd = delta_commit("SOMETHING NEW")
    assert (odd.operation, odd.summary["engine_operation"]) == ("other", "SOMETHING NEW")


def iceberg_snapshot(sid: int, operation: str, **props: str) -> dict:
    return {"snapshot-id": sid, "timestamp-ms": sid, "sequence-number": sid,
            "summary": {"operation": operation, **props}}  # fmt: skip


def test_iceberg_snapshots_in_lakecat_words():
    doc = {"current-snapshot-id": 5, "snapshots": [
        iceberg_snapshot(1, "append", **{"added-records": "2"}),
        iceberg_snapshot(2, "overwrite", **{"added-records": "2", "deleted-records": "1", "lakecat.merge-key": "id,v"}),
        iceberg_snapshot(3, "overwrite", **{"added-records": "1", "deleted-records": "2"}),
        iceberg_snapshot(4, "overwrite", **{"added-records": "2", "deleted-records": "2"}),
        iceberg_snapshot(5, "replace"),
    ]}  # fmt: skip
    commits = iceberg_versions._commits(iceberg_versions.snapshot_view(doc))
    assert [c.operation for c in commits] == ["append", "merge", "delete", "overwrite", "compact"]
    assert [c.summary["engine_operation"] for c in commits] == ["append", "overwrite", "overwrite", "overwrite",
                                                                "replace"]  # fmt: skip
    assert commits[1].summary["merge_key"] == ["id", "v"] and "merge_key" not in commits[3].summary


# --- lakecat's own commits, on both formats -----------------------------------------------------
def iceberg_rows(catalog, ns: str, name: str, snapshot: int) -> dict[int, str]:
    tbl = pyiceberg_catalog(catalog).load_table((ns, name))
    return {r["id"]: r["v"] for r in tbl.scan(snapshot_id=snapshot).to_arrow().to_pylist()}


@pytest.mark.spark
def test_upsert_and_compact_read_the_same_on_both_formats(cli, catalog, spark, ns, table_format, tmp_path):
    name = f"{ns}.one"
    t = catalog.create_table(name, schema=SCHEMA, format=table_format)
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (3, 'c')")
    fixes = tmp_path / "fixes.json"
    fixes.write_text('{"id": 2, "v": "B"}\n{"id": 3, "v": "C"}\n{"id": 4, "v": "d"}\n')
    code, _, err = cli("upsert", name, "--from", str(fixes), "--key", "id")
    assert code == 0, err
    code, _, err = cli("compact", name)
    assert code == 0, err

    doc = run_json(cli, "history", name)
    assert data_ops(doc) == ["append", "append", "merge", "compact"], doc
    merge = next(e for e in doc if e["operation"] == "merge")
    if table_format == "iceberg":
        assert merge["summary"]["engine_operation"] == "overwrite" and merge["summary"]["merge_key"] == ["id"]
    else:
        assert merge["summary"]["engine_operation"] == "MERGE"
    assert all(e["summary"]["engine_operation"] for e in doc)
    code, out, _ = cli("history", name)
    assert code == 0
    assert ("overwrite; key id" if table_format == "iceberg" else "MERGE") in out, out  # the detail column
    assert_no_expression_ids(cli, name)

    before = [e["version"] for e in doc if e["operation"] == "append"][0]  # the newest append
    changes = run_json(cli, "changes", name, "--since", before, "--until", merge["version"])
    got = sorted((r["_change_type"], r["id"], r["v"]) for r in changes["rows"])
    expected = sorted([("update_preimage", 2, "b"), ("update_postimage", 2, "B"), ("update_preimage", 3, "c"),
                       ("update_postimage", 3, "C"), ("insert", 4, "d")])  # fmt: skip
    assert got == expected
    assert {r["_commit_version"] for r in changes["rows"]} == {merge["version"]}
    spark_read = run_json(cli, "changes", name, "--since", before, "--until", merge["version"], "--engine", "spark")
    assert sorted_rows(spark_read) == sorted_rows(changes)  # the light path (Delta's change feed) agrees with Spark's
    # the same answer from the format's own library, without lakecat's reads
    if table_format == "iceberg":
        old = iceberg_rows(catalog, ns, "one", before)
        new = iceberg_rows(catalog, ns, "one", merge["version"])
        independent = [("update_preimage", k, old[k]) for k in old if k in new and new[k] != old[k]]
        independent += [("update_postimage", k, new[k]) for k in new if k in old and new[k] != old[k]]
        independent += [("insert", k, new[k]) for k in new if k not in old]
    else:
        from deltalake import DeltaTable

        feed = pa.table(DeltaTable(t.location).load_cdf(starting_version=merge["version"],
                                                        ending_version=merge["version"]).read_all())  # fmt: skip
        independent = [(r["_change_type"], r["id"], r["v"]) for r in feed.to_pylist()]
    assert sorted(independent) == expected

    # a CDC batch is a merge too
    landing = tmp_path / "cdc"
    landing.mkdir()
    event = {"before": None, "after": {"id": 5, "v": "e"}, "op": "c", "ts_ms": 1000}
    (landing / "a.json").write_text(json.dumps(event) + "\n")
    code, _, err = cli("ingest", name, "--files", str(landing), "--cdc", "debezium", "--key", "id")
    assert code == 0, err
    assert data_ops(run_json(cli, "history", name))[-1] == "merge"


@pytest.mark.spark
def test_commits_of_other_engines_map_to_lakecat_words(cli, catalog, spark, ns, table_format):
    name = f"{ns}.other"
    t = catalog.create_table(name, schema=SCHEMA, format=table_format)
    batches = [pa.table({"id": pa.array(ids, pa.int64()), "v": [f"x{i}" for i in ids]}) for ids in ([1, 2], [3, 4])]
    if table_format == "iceberg":
        ptbl = pyiceberg_catalog(catalog).load_table((ns, "other"))
        for b in batches:
            ptbl.append(b.cast(ptbl.schema().as_arrow()))
        ptbl.delete("id = 3")
        expected = ["append", "append", "delete"]
    else:
        from deltalake import DeltaTable, write_deltalake

        for b in batches:
            write_deltalake(t.location, b, mode="append")
        fix = pa.table({"id": pa.array([2, 9], pa.int64()), "v": ["y2", "y9"]})
        (DeltaTable(t.location).merge(fix, predicate="t.id = s.id", source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())  # fmt: skip
        DeltaTable(t.location).optimize.compact()
        DeltaTable(t.location).delete("id = 3")
        expected = ["append", "append", "merge", "compact", "delete"]
    doc = run_json(cli, "history", name)
    assert data_ops(doc) == expected, doc
    assert all(e["summary"]["engine_operation"] for e in doc)
    if table_format == "delta":
        assert doc[0]["summary"]["predicate"] == "id = 3"
    assert_no_expression_ids(cli, name)
