"""Helpers shared by the test modules: independent readers (pyiceberg, delta-rs) that prove a table is a
real, spec-valid table of its format, without lakecat's own code paths or Spark."""

from __future__ import annotations

import ipaddress
import uuid
from pathlib import Path
from typing import Any


def pyiceberg_catalog(catalog) -> Any:
    """pyiceberg's own SqlCatalog over lakecat's metastore (same catalog name as Spark's JdbcCatalog), or its
    RestCatalog when the config's Iceberg tables live behind a REST catalog."""
    from pyiceberg.catalog.sql import SqlCatalog

    section = catalog.config.format_options.get("iceberg", {})
    if section.get("type") == "rest":
        from pyiceberg.catalog.rest import RestCatalog

        return RestCatalog("independent", **{k: v for k, v in section.items() if k != "type" and v})

    return SqlCatalog(catalog.name, uri=catalog.config.metastore.sqlalchemy_url, warehouse=catalog.config.warehouse_uri,
                      **catalog.config.pyiceberg_properties())  # fmt: skip


def _iceberg_table(catalog, entry) -> Any:
    return pyiceberg_catalog(catalog).load_table((entry.ident.namespace, entry.ident.name))


def read_arrow(catalog, name_or_table) -> Any:
    """The table's current rows as Arrow, read by pyiceberg or delta-rs."""
    entry = catalog.entry(name_or_table if isinstance(name_or_table, str) else name_or_table.name)
    if entry.format == "iceberg":
        return _iceberg_table(catalog, entry).scan().to_arrow()
    return delta_arrow(entry.location)


def read_branch_ids(catalog, name: str, branch: str) -> list[int]:
    """The ``id`` column at the head of a branch, read by pyiceberg (only Iceberg has branches), sorted."""
    entry = catalog.entry(name)
    tbl = _iceberg_table(catalog, entry)
    head = tbl.metadata.refs[branch].snapshot_id
    return sorted(tbl.scan(snapshot_id=head).to_arrow().column("id").to_pylist())


def delta_arrow(location: str, version: int | None = None) -> Any:
    """A Delta table's rows read by delta-rs: its pyarrow reader, or its DataFusion reader for a table with column
    mapping (which the pyarrow-dataset path refuses)."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    dt = DeltaTable(location, version=version)
    if dt.metadata().configuration.get("delta.columnMapping.mode", "none") == "none":
        return dt.to_pyarrow_table()
    return pa.table(QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all())


def read_rows(catalog, name_or_table) -> list[dict]:
    return read_arrow(catalog, name_or_table).to_pylist()


def committed_versions(catalog, name: str) -> int:
    """How many commits the independent reader sees (Iceberg snapshots; Delta's current version)."""
    entry = catalog.entry(name)
    if entry.format == "iceberg":
        return len(_iceberg_table(catalog, entry).metadata.snapshots)
    from deltalake import DeltaTable

    return DeltaTable(entry.location).version()


def version_ids(catalog, name: str) -> list[int]:
    """Every version the independent reader still knows, sorted as numbers (Iceberg's snapshot ids are random:
    this is not commit order; take that from the table's history)."""
    entry = catalog.entry(name)
    if entry.format == "iceberg":
        return sorted(s.snapshot_id for s in _iceberg_table(catalog, entry).metadata.snapshots)
    from deltalake import DeltaTable

    return sorted(h["version"] for h in DeltaTable(entry.location).history())


def new_topic(bootstrap: str, partitions: int = 3) -> str:
    from lakecat.kafka_local import create_topic

    name = "t" + uuid.uuid4().hex[:10]
    create_topic(bootstrap, name, partitions=partitions)
    return name


def light_tables(catalog, namespace: str, count: int, *, commits: int = 3) -> list[str]:
    """Small tables of both formats written without Spark (pyiceberg; delta-rs then lakecat's Delta registry):
    ``commits`` appends of 10 rows each, Delta's partitioned by region. Returns their names."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from lakecat.identifiers import TableIdent
    from lakecat.metastore import Registry

    catalog.metastore.ready()  # the metastore's tables exist (lakecat's schema, before pyiceberg makes its own)
    sql = pyiceberg_catalog(catalog)
    sql.create_namespace_if_not_exists(namespace)
    registry = Registry(catalog.metastore, "lakecat_delta_tables", "delta")
    names = []
    for i in range(count):
        data = pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()), "region": ["eu", "us"] * 5})
        name = f"t{i:03d}"
        if i % 2 == 0:
            tbl = sql.create_table((namespace, name), schema=data.schema)
            for _ in range(commits):
                tbl.append(data)
        else:
            location = f"{catalog.config.warehouse_uri.rstrip('/')}/{namespace}/{name}"
            for _ in range(commits):
                write_deltalake(location, data, mode="append", partition_by=["region"])
            registry.register(TableIdent(namespace, name), location, {})
        names.append(f"{namespace}.{name}")
    return names


def service_until_first_pass(cmd: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Start a ``maintain --auto --every`` process, wait for its first pass, stop it with SIGTERM; its exit code,
    stdout and stderr (the rest after the first pass's line)."""
    import signal
    import subprocess

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        seen: list[str] = []
        while "pass 1:" not in (line := proc.stderr.readline()):
            assert line, "the service ended before its first pass:\n" + "".join(seen[-20:])
            seen.append(line)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    return proc.returncode, out, err


def listening_on(port: int) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The local addresses of the sockets in state LISTEN (0A) on ``port``, from the kernel's own tables (a JVM's
    IPv6 socket bound to 127.0.0.1 shows as ::ffff:127.0.0.1 in tcp6: given here as 127.0.0.1)."""
    found: set[ipaddress.IPv4Address | ipaddress.IPv6Address] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, _, state = line.split()[1:4]
            address, _, hex_port = local.partition(":")
            if state != "0A" or int(hex_port, 16) != port:
                continue
            raw = bytes.fromhex(address)  # 32-bit words in the host's byte order
            packed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            ip = ipaddress.ip_address(packed)
            found.add(ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else ip)
    return found
