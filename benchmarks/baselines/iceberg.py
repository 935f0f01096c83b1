"""Iceberg written by hand, as a user would without lakecat (see ``benchmarks.baselines``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_TABLE = ("from pyiceberg.catalog.sql import SqlCatalog; "
          "t = SqlCatalog({catalog!r}, uri={uri!r}, warehouse={warehouse!r}).load_table({ident!r}); ")  # fmt: skip


class IcebergBaseline:
    # pyiceberg's one-liners (a fresh process each); pyiceberg has no change scan: the nearest one-liner for an
    # append-only range counts both ends
    light_one_liners = {
        "timetravel_count": _TABLE + "print(t.scan(snapshot_id={version}).count())",
        "changes_count": _TABLE + "print(t.scan(snapshot_id={until}).count() - t.scan(snapshot_id={since}).count())",
        "where_limit": _TABLE + "print(len(t.scan(snapshot_id={version}, row_filter={where!r}, limit=10).to_arrow()))",
    }
    # a build of many small files: without these Iceberg shuffles by partition before writing (distribution-mode hash)
    many_files_properties = {"write.distribution-mode": "none", "write.spark.fanout.enabled": "true"}

    def stream_to(self, writer: Any, catalog: Any, table: Any) -> Any:
        return writer.format("iceberg").toTable(f"{catalog.name}.{table.entry.ident}")

    def read(self, spark: Any, table: Any) -> Any:
        return spark.table(table.spark_name)

    def append(self, data: Any, table: Any) -> None:
        data.writeTo(table.spark_name).append()

    def append_small_files(self, spark: Any, data: Any, table: Any, rows_per_file: int) -> None:
        # a 1-byte target: each task rolls to a new file at Iceberg's size check, every 1,000 rows
        data.writeTo(table.spark_name).option("target-file-size-bytes", "1").option(
            "distribution-mode", "none"
        ).append()

    def compact(self, spark: Any, catalog: Any, table: Any, target_bytes: int) -> Callable[[], Any]:
        sql = (f"CALL {catalog.name}.system.rewrite_data_files(table => '{table.entry.ident}', "
               f"options => map('target-file-size-bytes', '{target_bytes}', 'min-input-files', '2'))")  # fmt: skip
        return lambda: spark.sql(sql).collect()

    def row_count_poll(self, table: Any) -> Callable[[], int]:
        def rows() -> int:
            snap = table.adapter.load(table).current_snapshot()
            return int(snap.summary.get("total-records") or 0) if snap is not None and snap.summary else 0

        return rows

    def read_rows(self, catalog: Any, entry: Any) -> list[dict[str, Any]]:
        from pyiceberg.catalog.sql import SqlCatalog

        sql = SqlCatalog(catalog.name, uri=catalog.config.metastore.sqlalchemy_url, warehouse=catalog.config.warehouse_uri,
                         **catalog.config.pyiceberg_properties())  # fmt: skip
        return sql.load_table((entry.ident.namespace, entry.ident.name)).scan().to_arrow().to_pylist()  # type: ignore[no-any-return]
