"""Delta evolution: schema changes through ALTER TABLE (rename and drop need column mapping), partitioning by
rewrite only, and tags kept in lakecat's metastore (``tags.py``)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from ...engine import now, spark_errors, sql_string, with_retries
from ...files import no_cyclic_gc
from ...identifiers import quote
from ...results import RefInfo
from .maintenance import spark_path
from .tags import TagStore

if TYPE_CHECKING:
    from ...partitioning import PartitionField
    from ...schema import Column
    from ..base import TableHandle

COLUMN_MAPPING = "delta.columnMapping.mode"
COLUMN_MAPPING_NOTE = (
    "renaming or dropping a column of a Delta table needs column mapping (delta.columnMapping.mode = name), a "
    "one-way protocol upgrade (reader version 2, writer version 5 or table features): readers without column "
    "mapping — Delta Lake before 1.2, delta-rs' pyarrow-dataset reader, some older Trino/Presto/Athena engines — can "
    "no longer read the table; Spark with Delta 1.2+, delta-rs' DataFusion reader and current engines can"
)


class DeltaEvolution:
    """The evolution half of the Delta adapter (mixed into ``DeltaFormat``)."""

    def _alter(self, table: TableHandle, what: str, sql: str) -> None:
        spark = table.catalog.session()

        def run() -> None:
            with spark_errors(what, table.entry.ident):
                spark.sql(sql)

        with_retries(run, what=f"{what} {table.name}")

    def column_mapping(self, table: TableHandle) -> str:
        return str(self.properties(table).get(COLUMN_MAPPING, "none"))  # type: ignore[attr-defined]

    # --- schema ---------------------------------------------------------------------------------
    def schema_upgrade(self, table: TableHandle, kind: str) -> str | None:
        if kind in ("rename", "drop") and self.column_mapping(table) == "none":
            return COLUMN_MAPPING_NOTE
        return None

    def apply_schema_upgrade(self, table: TableHandle, kind: str) -> None:
        # Delta raises the protocol in the same commit (explicit min versions would add an UPGRADE PROTOCOL commit)
        self._alter(table, "enable column mapping on",
                    f"ALTER TABLE {spark_path(table.location)} SET TBLPROPERTIES ({sql_string(COLUMN_MAPPING)} = 'name')")  # fmt: skip

    def add_column(self, table: TableHandle, column: Column, position: str | None) -> None:
        if not column.nullable:
            raise self.unsupported(  # type: ignore[attr-defined]
                f"alter --add-column {column.name} NOT NULL",
                "Delta's ALTER TABLE ADD COLUMNS takes nullable columns only; add it nullable, fill it, then add a "
                "CHECK constraint",
            )
        ddl = column.ddl()
        if position == "FIRST":
            ddl += " FIRST"
        elif position:
            ddl += f" AFTER {quote(position.split(' ', 1)[1])}"
        self._alter(table, "alter --add-column", f"ALTER TABLE {spark_path(table.location)} ADD COLUMNS ({ddl})")

    def rename_column(self, table: TableHandle, old: str, new: str) -> None:
        self._alter(
            table,
            "alter --rename-column",
            f"ALTER TABLE {spark_path(table.location)} RENAME COLUMN {quote(old)} TO {quote(new)}",
        )

    def drop_column(self, table: TableHandle, name: str) -> None:
        self._alter(table, "alter --drop-column", f"ALTER TABLE {spark_path(table.location)} DROP COLUMN {quote(name)}")

    def set_column_comment(self, table: TableHandle, name: str, comment: str) -> None:
        self._alter(table, "alter --set-comment",
                    f"ALTER TABLE {spark_path(table.location)} ALTER COLUMN {quote(name)} COMMENT {sql_string(comment)}")  # fmt: skip

    # --- partitioning ---------------------------------------------------------------------------
    def evolve_partitioning(
        self, table: TableHandle, fields: list[PartitionField], rewrite: bool, dry_run: bool
    ) -> tuple[int, int]:
        """Delta fixes partition columns at creation: only a rewrite of every file (one commit) changes them."""
        if not rewrite:
            raise self.unsupported(  # type: ignore[attr-defined]
                "alter --partition-by",
                "Delta cannot change a table's partitioning in place; --rewrite rewrites every file into the new "
                "layout in one commit (see what it rewrites with --dry-run)",
            )
        generated = self.generated_columns(table)  # type: ignore[attr-defined]
        if generated or any(f.transform != "identity" for f in fields):
            raise self.unsupported(  # type: ignore[attr-defined]
                "alter --partition-by --rewrite with generated partition columns",
                "an overwrite cannot carry Delta generated columns (days(ts), ...) in one commit; partition by plain "
                "columns, or create a new table and copy the rows",
            )
        with no_cyclic_gc():  # as compaction's plan reads it
            files = self.data_files(table)  # type: ignore[attr-defined]
        planned = (len(files), sum(f.size for f in files))
        if dry_run:
            return planned
        spark = table.catalog.session()
        with spark_errors("alter --partition-by --rewrite", table.entry.ident):
            df = spark.read.format("delta").load(table.location)
            (df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
             .partitionBy(*[f.column for f in fields]).save(table.location))  # fmt: skip
        return planned

    # --- tags -----------------------------------------------------------------------------------
    def tag_store(self, table: TableHandle) -> TagStore:
        return TagStore(table.catalog.metastore)

    def refs(self, table: TableHandle) -> list[RefInfo]:
        return self.tag_store(table).tags(table.entry.ident)

    def protected_versions(self, table: TableHandle) -> set[int]:
        """Versions a live tag names: expiry and orphan cleanup keep what reading them needs."""
        return {r.version for r in self.tag_store(table).live(table.entry.ident, now())}

    def create_tag(self, table: TableHandle, name: str, version: int, retain: timedelta | None) -> None:
        self.tag_store(table).add(table.entry.ident, name, version, retain)

    def drop_tag(self, table: TableHandle, name: str) -> None:
        self.tag_store(table).remove(table.entry.ident, name)
