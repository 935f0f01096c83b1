"""Delta written by hand, as a user would without lakecat (see ``benchmarks.baselines``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakecat.engine import spark_conf
from lakecat.formats.delta.log import add_actions  # lakecat's read of the add actions (no pandas import)


class DeltaBaseline:
    # delta-rs's one-liners (a fresh process each)
    light_one_liners = {
        "timetravel_count": "from deltalake import DeltaTable; print(DeltaTable({loc!r}, version={version}).to_pyarrow_dataset().count_rows())",
        "changes_count": ("import pyarrow as pa; from deltalake import DeltaTable; "
                          "print(pa.RecordBatchReader.from_stream(DeltaTable({loc!r}).load_cdf({start}, {until})).read_all().num_rows)"),
        "where_limit": ("import pyarrow as pa, pyarrow.dataset as ds; from decimal import Decimal; from deltalake import DeltaTable; "
                        "d = DeltaTable({loc!r}, version={version}).to_pyarrow_dataset(); "
                        "ten = pa.scalar(Decimal('10.00'), pa.decimal128(10, 2)); "
                        "print(d.scanner(filter=(ds.field('region') == 'eu') & (ds.field('amt') > ten), use_threads=False).head(10).num_rows)"),  # threaded head() aborts at exit (pyarrow)
    }  # fmt: skip
    many_files_properties: dict[str, str] = {}

    def stream_to(self, writer: Any, catalog: Any, table: Any) -> Any:
        return writer.format("delta").start(table.location)

    def read(self, spark: Any, table: Any) -> Any:
        return spark.read.format("delta").load(table.location)

    def append(self, data: Any, table: Any) -> None:
        data.write.format("delta").mode("append").save(table.location)

    def append_small_files(self, spark: Any, data: Any, table: Any, rows_per_file: int) -> None:
        with spark_conf(spark, {"spark.sql.files.maxRecordsPerFile": str(rows_per_file)}):
            data.write.format("delta").option("maxRecordsPerFile", str(rows_per_file)).mode("append").save(
                table.location
            )

    def compact(self, spark: Any, catalog: Any, table: Any, target_bytes: int) -> Callable[[], Any]:
        def optimize() -> Any:  # delta-spark's builder, as a user calls it
            from delta.tables import DeltaTable

            spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(target_bytes))
            try:
                return DeltaTable.forPath(spark, table.location).optimize().executeCompaction().collect()
            finally:
                spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")

        return optimize

    def row_count_poll(self, table: Any) -> Callable[[], int]:
        import pyarrow.compute as pc
        from deltalake import DeltaTable

        dt = DeltaTable(table.location)

        def rows() -> int:
            dt.update_incremental()
            return int(pc.sum(add_actions(dt)["num_records"]).as_py() or 0)

        return rows

    def read_rows(self, catalog: Any, entry: Any) -> list[dict[str, Any]]:
        from deltalake import DeltaTable

        return DeltaTable(entry.location).to_pyarrow_table().to_pylist()  # type: ignore[no-any-return]
