"""Plain writes and deletes of Iceberg tables: pyiceberg where it writes the table as Spark would, else Spark.

pyiceberg (no JVM) appends, overwrites and deletes copy-on-write, on format version 2 tables. A table whose deletes,
updates and merges are merge-on-read (position deletes, deletion vectors), that has delete files already, a sort order
or z-order keys, or is of format version 3 is written by Spark (``check_light_write`` says why), so that it keeps the
delete mode and the layout it was given.
"""

from __future__ import annotations

import uuid
from functools import reduce
from typing import TYPE_CHECKING, Any

from ...engine import spark_errors, to_int, with_retries
from ...errors import NotExactError
from ...identifiers import quote
from .evolution import ZORDER_PROPERTY

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from ...predicate import FilterNode
    from ..base import TableHandle

_DELETE_MODE = "write.delete.mode"


def iceberg_expression(node: FilterNode) -> Any:
    """A row filter (``lakecat.predicate.row_filter``) as a pyiceberg expression: no ``Not`` (pyiceberg's delete adds
    its own null handling to one), every comparison guarded by its column's ``NotNull``."""
    from pyiceberg import expressions as E

    kind = node[0]
    if kind in ("and", "or"):
        parts = [iceberg_expression(n) for n in node[1]]
        if not parts:
            return E.AlwaysTrue() if kind == "and" else E.AlwaysFalse()
        return reduce(E.And if kind == "and" else E.Or, parts)
    if kind == "true":
        return E.AlwaysTrue()
    if kind == "false":
        return E.AlwaysFalse()
    name = node[1]
    if kind == "null":
        return E.IsNull(term=name)
    if kind == "not_null":
        return E.NotNull(term=name)
    if kind in ("in", "not_in"):
        values = {_value(v) for v in node[2]}
        return E.In(name, values) if kind == "in" else E.NotIn(name, values)  # type: ignore[call-arg, arg-type]
    ops = {"=": E.EqualTo, "<>": E.NotEqualTo, "<": E.LessThan, "<=": E.LessThanOrEqual, ">": E.GreaterThan,
           ">=": E.GreaterThanOrEqual}  # fmt: skip
    return ops[node[2]](name, _value(node[3]))


def _value(value: Any) -> Any:
    # a date as its ISO text: pyiceberg binds a string literal to a date column
    return value if isinstance(value, (bool, int, str)) else value.isoformat()


class IcebergWrites:
    """The writes half of the Iceberg adapter (mixed into ``IcebergFormat``)."""

    def write_schema(self, table: TableHandle) -> pa.Schema:
        import pyarrow as pa

        schema = self.load(table).schema().as_arrow()  # type: ignore[attr-defined]
        return pa.schema([f.remove_metadata() for f in schema])

    def check_light_write(self, table: TableHandle, operation: str) -> None:
        doc = self.metadata_doc(table)  # type: ignore[attr-defined]
        version = int(doc.get("format-version", 1))
        if version >= 3:
            raise NotExactError(f"the table is of format version {version}, which pyiceberg does not write")
        layout = self._layout(doc, {})  # type: ignore[attr-defined]
        props = {str(k): str(v) for k, v in (doc.get("properties") or {}).items()}
        if layout.clustering:
            raise NotExactError("the table has a sort order, which pyiceberg does not write by")
        if props.get(ZORDER_PROPERTY):
            raise NotExactError("the table is z-ordered, which pyiceberg does not write by")
        if operation in ("delete", "overwrite_where"):
            if props.get(_DELETE_MODE, "copy-on-write") == "merge-on-read":
                raise NotExactError(f"its deletes are merge-on-read ({layout.delete_mode}), and pyiceberg deletes by "
                                    "rewriting files")  # fmt: skip
            if self._delete_files(table):
                raise NotExactError("the table has delete files, which lakecat rewrites through Spark")

    def _delete_files(self, table: TableHandle) -> bool:
        tbl = self.load(table)  # type: ignore[attr-defined]
        snap = tbl.metadata.current_snapshot()
        props = snap.summary.additional_properties if snap is not None and snap.summary else {}
        return bool(to_int(props.get("total-delete-files")))

    def _light_commit(self, table: TableHandle, what: str, fn: Any) -> None:
        self._commit(table, what, fn)  # type: ignore[attr-defined]

    def write_light(self, table: TableHandle, data: pa.Table, mode: str, where: FilterNode | None) -> None:
        branch = table.branch_name or "main"

        def fn(tbl: Any) -> None:
            if mode == "append":
                tbl.append(data, branch=branch)
            elif where is None:
                tbl.overwrite(data, branch=branch)
            else:
                tbl.overwrite(data, overwrite_filter=iceberg_expression(where), branch=branch)

        self._light_commit(table, mode, fn)

    def delete_light(self, table: TableHandle, where: FilterNode) -> int | None:
        branch = table.branch_name or "main"
        self._light_commit(table, "delete", lambda tbl: tbl.delete(delete_filter=iceberg_expression(where),
                                                                    branch=branch))  # fmt: skip
        return None

    def write_spark(self, table: TableHandle, df: DataFrame, mode: str, where: str | None) -> None:
        from pyspark.sql import functions as F

        def write() -> None:
            with spark_errors(mode, table.entry.ident):
                spark = self.refreshed_session(table)  # type: ignore[attr-defined]
                if where is None:
                    writer = df.writeTo(table.spark_name)
                    writer.append() if mode == "append" else writer.overwrite(F.lit(True))
                    return
                # Iceberg's overwrite by filter drops whole files only; a MERGE that matches nothing inserts every new
                # row and deletes the old rows ``where`` selects, row by row, in one commit of the table's delete mode
                view = f"lakecat_overwrite_{uuid.uuid4().hex[:12]}"
                df.createOrReplaceTempView(view)
                try:
                    # ``where`` is one Spark SQL expression, checked as such (lakecat.maintenance.validate_predicate)
                    spark.sql(f"MERGE INTO {table.spark_name} USING {quote(view)} ON FALSE WHEN NOT MATCHED THEN "
                              f"INSERT * WHEN NOT MATCHED BY SOURCE AND ({where}) THEN DELETE")  # fmt: skip
                finally:
                    spark.catalog.dropTempView(view)

        with_retries(write, what=f"{mode} {table.name}")

    def delete_spark(self, table: TableHandle, where: str) -> int | None:
        def run() -> None:
            with spark_errors("delete", table.entry.ident):
                spark = self.refreshed_session(table)  # type: ignore[attr-defined]
                # ``where`` is one Spark SQL expression, checked as such (lakecat.maintenance.validate_predicate)
                spark.sql(f"DELETE FROM {table.spark_name} WHERE {where}")

        with_retries(run, what=f"delete {table.name}")
        return None  # Iceberg's DELETE returns no count: the snapshot summary says it
