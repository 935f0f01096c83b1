"""Options that do not combine are refused, never ignored: the library in its parameters' names, the command line in
its options', exit 2 in one line, with nothing changed (checked by pyiceberg / delta-rs, not by lakecat). The tables
are created and read without a JVM; nothing here starts Spark."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lakecat.errors import InvalidArgumentError
from tests.helpers import pyiceberg_catalog


def _properties(catalog, name: str, fmt: str) -> dict[str, str]:
    """The table's properties as its format's own library reads them."""
    if fmt == "iceberg":
        ns, table = name.split(".")
        return dict(pyiceberg_catalog(catalog).load_table((ns, table)).properties)
    from deltalake import DeltaTable

    return dict(DeltaTable(catalog.entry(name).location).metadata().configuration)


def _rows(catalog, name: str, fmt: str) -> int:
    """The table's row count as its format's own library reads it."""
    if fmt == "iceberg":
        ns, table = name.split(".")
        return len(pyiceberg_catalog(catalog).load_table((ns, table)).scan().to_arrow())
    from deltalake import DeltaTable

    return DeltaTable(catalog.entry(name).location).to_pyarrow_table().num_rows


def _refused(cli, *args: str) -> str:
    code, out, err = cli(*args, "--json")
    doc = json.loads(out)
    message = doc["error"]["message"]
    assert code == 2 and "\n" not in message, (args, code, out, err)
    return message


def test_a_property_dry_run_changes_nothing(catalog, ns, table_format, cli):
    name = f"{ns}.props"
    catalog.create_table(name, schema="id BIGINT, v STRING", format=table_format)
    before = _properties(catalog, name, table_format)
    code, out, err = cli("alter", name, "--property", "lakecat.expire.retain-last=7", "--dry-run", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["dry_run"] and doc["properties"]["lakecat.expire.retain-last"] == "7", (out, err)
    assert _properties(catalog, name, table_format) == before  # nothing committed
    result = catalog.load_table(name).set_properties({"lakecat.expire.retain-last": "7"}, dry_run=True)
    assert result.dry_run and result.engine is None and _properties(catalog, name, table_format) == before
    assert "--rewrite applies to schema and partition changes" in _refused(
        cli, "alter", name, "--property", "team=x", "--rewrite"
    )
    assert _properties(catalog, name, table_format) == before


def test_rewrite_needs_something_to_rewrite(catalog, ns, table_format, cli):
    name = f"{ns}.rw"
    t = catalog.create_table(name, schema="id BIGINT, v STRING", format=table_format)
    schema = [c.name for c in t.describe().schema]
    with pytest.raises(InvalidArgumentError, match=r"rewrite=True applies with partition_by= or widen="):
        t.alter(add_columns=["z INT"], rewrite=True)
    assert _refused(cli, "alter", name, "--add-column", "z INT", "--rewrite").startswith(
        "--rewrite applies with --partition-by or --widen"
    )
    message = _refused(cli, "alter", name, "--cluster-by", "id", "--rewrite")
    assert "--cluster-by / --deletion-vectors in an alter of their own" in message
    if table_format == "iceberg":  # partitioning changes in place: a rewrite would be ignored
        with pytest.raises(InvalidArgumentError, match=r"alter\(partition_by, rewrite=True\): Iceberg changes"):
            t.alter(add_columns=["z INT"], partition_by="v", rewrite=True)
        message = _refused(cli, "alter", name, "--add-column", "z INT", "--partition-by", "v", "--rewrite")
        assert message.startswith("alter --partition-by --rewrite: Iceberg changes partitioning in place")
        assert "drop --rewrite" in message
        assert pyiceberg_catalog(catalog).load_table((ns, "rw")).spec().fields == ()
    assert [c.name for c in catalog.load_table(name).describe().schema] == schema  # no column was added first


def test_a_count_takes_no_row_options(catalog, ns, table_format, cli):
    name = f"{ns}.cnt"
    t = catalog.create_table(name, schema="id BIGINT, v STRING", format=table_format)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    with pytest.raises(InvalidArgumentError, match=r"columns= applies to rows, not with count=True"):
        t.current().read(count=True, columns="id")
    assert _refused(cli, "read", name, "--count", "--columns", "id") == "--columns applies to rows, not with --count"
    assert _refused(cli, "read", name, "--count", "--limit", "1") == "--limit applies to rows, not with --count"
    code, out, _ = cli("read", name, "--count", "--json")
    assert code == 0 and json.loads(out)["count"] == 2


def test_each_source_refuses_the_others_options(catalog, ns, table_format, cli, tmp_path):
    name = f"{ns}.src"
    catalog.create_table(name, schema="id BIGINT", format=table_format)
    (tmp_path / "a.json").write_text('{"id": 1}\n')
    files = ("ingest", name, "--files", str(tmp_path))
    kafka = ("ingest", name, "--kafka", "127.0.0.1:1", "--topic", "t")  # refused before any connection
    for extra in (("--starting-offsets", "latest"), ("--kafka-option", "fetch.min.bytes=1")):
        assert "need --kafka" in _refused(cli, *files, *extra)
    assert _refused(cli, *kafka, "--file-format", "csv").startswith("--file-format applies to --files")
    message = _refused(cli, *files, "--max-records-per-batch", "5")
    assert (
        message.startswith("--max-records-per-batch does not apply to files") and "bounded by files or bytes" in message
    )
    message = _refused(cli, *kafka, "--max-files-per-batch", "1")
    assert message.startswith("--max-files-per-batch does not apply to kafka") and "bounded by records" in message
    message = _refused(cli, *files, "--event-time", "ts")
    assert message.startswith("--event-time applies with --dedupe-key and --watermark")
    assert _rows(catalog, name, table_format) == 0 and not catalog.table_exists(f"{name}_dlq")  # nothing ingested


def test_a_namespace_policy_takes_no_engine(catalog, ns, cli):
    catalog.create_table(f"{ns}.p", schema="id BIGINT", format="iceberg")
    with pytest.raises(InvalidArgumentError, match=r"engine= applies to a table's policy"):
        catalog.set_policy(f"{ns}.*", {"expire.retain-last": "3"}, engine="spark")
    assert _refused(cli, "policy", "set", f"{ns}.*", "expire.retain-last=3", "--engine", "spark").startswith(
        "--engine applies to a table's policy"
    )
    assert catalog.policy(f"{ns}.p").policy["lakecat.expire.retain-last"]["source"] == "default"
