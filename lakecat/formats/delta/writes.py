"""Plain writes and deletes of Delta tables: delta-rs where it writes the table as Spark would, else Spark.

delta-rs (no JVM) appends, overwrites (with a predicate: Delta's replaceWhere, every new row checked against it) and
deletes (copy-on-write, with the change data feed's ``_change_data`` files) tables whose writer features it writes.
A table with deletion vectors, liquid clustering, generated columns, column mapping or a feature outside that list is
written by Spark (``check_light_write`` says why), so that its deletes keep marking rows and its layout holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...config import delta_storage_options
from ...engine import first_line, spark_errors, with_retries
from ...errors import CommitConflictError, InvalidArgumentError, LakecatError, NotExactError
from ...predicate import quote_ident, sql_literal
from ...records import GENERATED_KEY
from .maintenance import spark_path
from .versions import OPERATION_KEY

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from ...predicate import FilterNode
    from ..base import TableHandle

#: The writer features of the legacy protocol versions (before table features, writer version 7).
_LEGACY_WRITER = {
    1: set(), 2: {"appendOnly", "invariants"}, 3: {"appendOnly", "invariants", "checkConstraints"},
    4: {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"},
    5: {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"},
    6: {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping",
        "identityColumns"},
}  # fmt: skip
#: Writer features delta-rs writes as Spark does (generatedColumns and columnMapping only while no column uses them).
_LIGHT_FEATURES = frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "timestampNtz",
                             "generatedColumns", "columnMapping"})  # fmt: skip
_FEATURE_WORDS = {"deletionVectors": "deletion vectors", "clustering": "liquid clustering",
                  "identityColumns": "identity columns", "rowTracking": "row tracking", "typeWidening": "type widening",
                  "domainMetadata": "domain metadata", "v2Checkpoint": "v2 checkpoints"}  # fmt: skip


def datafusion_sql(node: FilterNode) -> str:
    """A row filter (``lakecat.predicate.row_filter``) as the SQL delta-rs reads (DataFusion): identifiers quoted,
    literals rendered from their values; no NOT, every comparison guarded by its column's IS NOT NULL."""
    kind = node[0]
    if kind in ("and", "or"):
        parts = [datafusion_sql(n) for n in node[1]]
        if not parts:
            return "TRUE" if kind == "and" else "FALSE"
        return "(" + f" {kind.upper()} ".join(parts) + ")"
    if kind == "true":
        return "TRUE"
    if kind == "false":
        return "FALSE"
    col = quote_ident(node[1])
    if kind == "null":
        return f"({col} IS NULL)"
    if kind == "not_null":
        return f"({col} IS NOT NULL)"
    if kind == "cmp":
        return f"({col} {node[2]} {_literal(node[3])})"
    word = "IN" if kind == "in" else "NOT IN"
    return f"({col} {word} ({', '.join(_literal(v) for v in node[2])}))"


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return sql_literal(value)
    return f"CAST({sql_literal(value.isoformat())} AS DATE)"


class DeltaWrites:
    """The writes half of the Delta adapter (mixed into ``DeltaFormat``)."""

    def write_schema(self, table: TableHandle) -> pa.Schema:
        import pyarrow as pa

        dt = self.load(table)  # type: ignore[attr-defined]
        schema = pa.schema(dt.schema().to_arrow())
        generated = {f.name for f in dt.schema().fields if f.metadata.get(GENERATED_KEY)}
        return pa.schema([f for f in schema if f.name not in generated])

    def check_light_write(self, table: TableHandle, operation: str) -> None:
        dt = self.load(table)  # type: ignore[attr-defined]
        protocol = dt.protocol()
        version = int(protocol.min_writer_version)
        features = set(protocol.writer_features or ()) if version >= 7 else _LEGACY_WRITER.get(version, {"?"})
        others = sorted(features - _LIGHT_FEATURES)
        if others:
            words = ", ".join(_FEATURE_WORDS.get(f, f) for f in others)
            raise NotExactError(f"the table has {words}, which delta-rs does not write as Spark does")
        generated = [f.name for f in dt.schema().fields if f.metadata.get(GENERATED_KEY)]
        if generated:
            raise NotExactError(f"the table has generated columns ({', '.join(generated)}), which Spark computes")
        config = dt.metadata().configuration
        if str(config.get("delta.columnMapping.mode", "none")).lower() != "none":
            raise NotExactError("the table maps column names (column mapping), which delta-rs does not write")
        if operation in ("delete", "overwrite_where") and str(
                config.get("delta.enableDeletionVectors", "false")).lower() == "true":  # fmt: skip
            raise NotExactError("deletion vectors are on, and delta-rs deletes by rewriting files")

    def _light(self, table: TableHandle, what: str, fn: Any) -> Any:
        from deltalake.exceptions import CommitFailedError, DeltaProtocolError, SchemaMismatchError

        def run() -> Any:
            try:
                return fn()
            except CommitFailedError as e:
                raise CommitConflictError(f"{what} {table.name}: commit conflict: {first_line(str(e))}") from e
            except SchemaMismatchError as e:
                raise InvalidArgumentError(f"{what} {table.name}: {first_line(str(e))}") from e
            except DeltaProtocolError as e:
                raise LakecatError(f"{what} {table.name} failed: {first_line(str(e))}") from e

        try:
            return with_retries(run, what=f"{what} {table.name}")[0]
        except LakecatError:
            raise
        except Exception as e:  # noqa: BLE001 - delta-rs raises its own kinds: one line, typed as a failed operation
            raise LakecatError(f"{what} {table.name} failed: {first_line(str(e)) or type(e).__name__}") from e

    def write_light(self, table: TableHandle, data: pa.Table, mode: str, where: FilterNode | None) -> None:
        from deltalake import write_deltalake

        predicate = datafusion_sql(where) if where is not None else None
        opts = delta_storage_options(table.location)

        def write() -> None:
            if mode == "append":
                write_deltalake(table.location, data, mode="append", storage_options=opts)
            else:
                write_deltalake(table.location, data, mode="overwrite", predicate=predicate, storage_options=opts)

        self._light(table, mode, write)

    def delete_light(self, table: TableHandle, where: FilterNode) -> int | None:
        # An overwrite of the rows ``where`` selects with no rows, not ``DeltaTable.delete``: the delete's rewrite writes
        # Arrow's string_view type into the files' schema, which readers mixing them with other writers' files
        # (pyiceberg, through a mirror) refuse to combine; both write the change data feed's ``_change_data`` files.
        import pyarrow as pa
        from deltalake import CommitProperties, write_deltalake

        empty = pa.schema(self.load(table).schema().to_arrow()).empty_table()  # type: ignore[attr-defined]
        marked = CommitProperties(custom_metadata={OPERATION_KEY: "delete"})  # history names it a delete
        self._light(table, "delete", lambda: write_deltalake(table.location, empty, mode="overwrite",
                                                             predicate=datafusion_sql(where), commit_properties=marked,
                                                             storage_options=delta_storage_options(table.location)))  # fmt: skip
        return None

    def write_spark(self, table: TableHandle, df: DataFrame, mode: str, where: str | None) -> None:
        def write() -> None:
            with spark_errors(mode, table.entry.ident):
                writer = df.write.format("delta").mode(mode)
                if where is not None:
                    writer = writer.option("replaceWhere", where)
                writer.save(table.location)

        with_retries(write, what=f"{mode} {table.name}")

    def delete_spark(self, table: TableHandle, where: str) -> int | None:
        spark = table.catalog.session()

        def run() -> int | None:
            with spark_errors("delete", table.entry.ident):
                # ``where`` is one Spark SQL expression, checked as such (lakecat.maintenance.validate_predicate)
                row = spark.sql(f"DELETE FROM {spark_path(table.location)} WHERE {where}").first()
            return int(row[0]) if row is not None and row[0] is not None else None

        return with_retries(run, what=f"delete {table.name}")[0]
