"""Delta evolution: schema changes through ALTER TABLE (rename and drop need column mapping, an in-place widening
needs type widening), widening and partitioning by a rewrite, and tags kept in lakecat's metastore (``tags.py``)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ...engine import now, spark_errors, sql_string, with_retries
from ...files import no_cyclic_gc
from ...identifiers import quote
from ...records import GENERATED_KEY
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
TYPE_WIDENING = "delta.enableTypeWidening"
TYPE_WIDENING_NOTE = (
    "widening a column of a Delta table in place needs type widening (delta.enableTypeWidening = true), a protocol "
    "upgrade to the typeWidening reader-writer feature (reader version 3, writer version 7): readers without that "
    "feature — Delta Lake before 3.3 (3.2 knew only its preview), delta-rs (the deltalake package neither reads nor "
    "writes such a table), any engine that does not list typeWidening among its reader features — can no longer read "
    "the table; Spark with Delta 3.3+ can. rewrite=True widens by rewriting the data instead, and every reader keeps "
    "working"
)
_UPGRADES = {"rename": (COLUMN_MAPPING, "name"), "drop": (COLUMN_MAPPING, "name"), "widen": (TYPE_WIDENING, "true")}


def _mentions(expression: str, column: str) -> bool:
    """Whether a generation expression may use ``column`` (a word match: a false hit refuses, never a miss)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(column)}(?![A-Za-z0-9_])", expression, re.IGNORECASE) is not None


class DeltaEvolution:
    """The evolution half of the Delta adapter (mixed into ``DeltaFormat``)."""

    def _alter(self, table: TableHandle, what: str, sql: str) -> None:
        spark = table.catalog.session()

        def run() -> None:
            with spark_errors(what, table.entry.ident):
                spark.sql(sql)

        with_retries(run, what=f"{what} {table.name}")

    def _rewrite_plan(self, table: TableHandle) -> tuple[int, int]:
        """The files and bytes a rewrite of the whole table reads (what ``--dry-run`` reports)."""
        with no_cyclic_gc():  # as compaction's plan reads it
            files = self.data_files(table)  # type: ignore[attr-defined]
        return len(files), sum(f.size for f in files)

    def _refuse_not_null(self, table: TableHandle, what: str, instead: str) -> None:
        """A whole-table overwrite would silently drop NOT NULL: Delta makes every column of a rewrite nullable and
        cannot make a column NOT NULL again."""
        not_null = [f.name for f in self.load(table).schema().fields if not f.nullable]  # type: ignore[attr-defined]
        if not_null:
            raise self.unsupported(  # type: ignore[attr-defined]
                f"{what} on a table with NOT NULL columns ({', '.join(not_null)})",
                f"Delta makes every column of a rewrite nullable and cannot set NOT NULL back; {instead}",
            )

    def column_mapping(self, table: TableHandle) -> str:
        return str(self.properties(table).get(COLUMN_MAPPING, "none"))  # type: ignore[attr-defined]

    # --- schema ---------------------------------------------------------------------------------
    def schema_upgrade(self, table: TableHandle, kind: str) -> str | None:
        if kind in ("rename", "drop") and self.column_mapping(table) == "none":
            return COLUMN_MAPPING_NOTE
        if kind == "widen" and not self._widens_in_place(table):
            return TYPE_WIDENING_NOTE
        return None

    def _widens_in_place(self, table: TableHandle) -> bool:
        """Whether the protocol has type widening already (then enabling the property locks nobody new out)."""
        if str(self.properties(table).get(TYPE_WIDENING, "false")).lower() == "true":  # type: ignore[attr-defined]
            return True
        return "typeWidening" in (self.load(table).protocol().reader_features or ())  # type: ignore[attr-defined]

    def apply_schema_upgrade(self, table: TableHandle, kind: str) -> None:
        # Delta raises the protocol in the same commit (explicit min versions would add an UPGRADE PROTOCOL commit)
        prop, value = _UPGRADES[kind]
        self._alter(table, f"enable {prop} on",
                    f"ALTER TABLE {spark_path(table.location)} SET TBLPROPERTIES ({sql_string(prop)} = '{value}')")  # fmt: skip

    def add_column(self, table: TableHandle, column: Column, position: str | None) -> None:
        if not column.nullable:
            raise self.unsupported(  # type: ignore[attr-defined]
                f"alter(add_columns) {column.name} NOT NULL",
                "Delta's ALTER TABLE ADD COLUMNS takes nullable columns only; add it nullable, fill it, then add a "
                "CHECK constraint",
            )
        ddl = column.ddl()
        if position == "FIRST":
            ddl += " FIRST"
        elif position:
            ddl += f" AFTER {quote(position.split(' ', 1)[1])}"
        self._alter(table, "alter(add_columns)", f"ALTER TABLE {spark_path(table.location)} ADD COLUMNS ({ddl})")

    def rename_column(self, table: TableHandle, old: str, new: str) -> None:
        self._alter(
            table,
            "alter(rename_columns)",
            f"ALTER TABLE {spark_path(table.location)} RENAME COLUMN {quote(old)} TO {quote(new)}",
        )

    def drop_column(self, table: TableHandle, name: str) -> None:
        self._alter(table, "alter(drop_columns)", f"ALTER TABLE {spark_path(table.location)} DROP COLUMN {quote(name)}")

    def widen_column(self, table: TableHandle, name: str, new_type: str) -> None:
        """In place, with type widening: old files keep their type and readers widen them (see ``schema_upgrade``)."""
        if str(self.properties(table).get(TYPE_WIDENING, "false")).lower() != "true":  # type: ignore[attr-defined]
            # the protocol has the feature already (schema_upgrade found it): turning the property on costs no reader
            self.apply_schema_upgrade(table, "widen")
        self._alter(table, "alter(widen)",
                    f"ALTER TABLE {spark_path(table.location)} ALTER COLUMN {quote(name)} TYPE {new_type}")  # fmt: skip

    def widen_by_rewrite(self, table: TableHandle, types: dict[str, str], dry_run: bool) -> tuple[int, int]:
        """Every file rewritten with the wider types in one commit (an overwrite with ``overwriteSchema``): the
        protocol stays as it is, so every reader keeps reading the table. The schema is kept otherwise (comments,
        generated columns, column ids; the properties stay), or the rewrite is refused."""
        wider = {k.lower(): v for k, v in types.items()}
        fields = self._log_fields(table)
        generated = {f["name"]: str(f["metadata"][GENERATED_KEY]) for f in fields if GENERATED_KEY in f["metadata"]}
        used = sorted(c for c, expr in generated.items()
                      for name in wider if c.lower() == name or _mentions(expr, name))  # fmt: skip
        if used:
            raise self.unsupported(  # type: ignore[attr-defined]
                "alter(widen, rewrite=True) of a column a generated column is or uses "
                f"({', '.join(f'{c} = {generated[c]}' for c in used)})",
                "the generation expression would no longer give the column's type; widen in place (type widening, "
                "see confirm=True)",
            )
        self._refuse_not_null(table, "alter(widen, rewrite=True)", "widen in place (type widening, see confirm=True)")
        self._refuse_identity(table, fields, "alter(widen, rewrite=True)")
        change_data = self.properties(table).get(self.change_data_property, "")  # type: ignore[attr-defined]
        if self.column_mapping(table) != "none" and str(change_data).lower() == "true":
            raise self.unsupported(  # type: ignore[attr-defined]
                "alter(widen, rewrite=True) on a table with column mapping and the change data feed",
                "Delta refuses to rewrite such a table under a new schema (DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION); "
                "widen in place (type widening, see confirm=True)",
            )
        planned = self._rewrite_plan(table)
        if dry_run:
            return planned
        partition_columns = list(self.load(table).metadata().partition_columns)  # type: ignore[attr-defined]
        self._overwrite(table, "alter(widen, rewrite=True)", fields, partition_columns, wider)
        return planned

    def _log_fields(self, table: TableHandle) -> list[dict[str, Any]]:
        """The schema's top-level fields as the Delta log has them (Spark's read schema drops generation
        expressions), each with its metadata."""
        fields = json.loads(self.load(table).schema().to_json())["fields"]  # type: ignore[attr-defined]
        return [{**f, "metadata": dict(f.get("metadata") or {})} for f in fields]

    def _refuse_identity(self, table: TableHandle, fields: list[dict[str, Any]], what: str) -> None:
        identity = [f["name"] for f in fields if any(k.startswith("delta.identity.") for k in f["metadata"])]
        if identity:
            raise self.unsupported(  # type: ignore[attr-defined]
                f"{what} on a table with identity columns ({', '.join(identity)})",
                "an overwrite cannot write the values Delta generates for them; create a new table and copy the rows",
            )

    def _overwrite(self, table: TableHandle, what: str, fields: list[dict[str, Any]], partition_columns: list[str],
                   types: dict[str, str] | None = None) -> None:  # fmt: skip
        """Rewrite every row in one commit under the table's own schema: each column carries its field metadata from
        the log (comments, generation expressions), so Delta writes it back as it was; column mapping keeps its ids
        and physical names and the table keeps its properties (an overwrite changes only schema and partitioning)."""
        from pyspark.sql import functions as F

        types = types or {}
        spark = table.catalog.session()
        with spark_errors(what, table.entry.ident):
            df = spark.read.format("delta").load(table.location)
            columns = []
            for f in fields:
                meta = {k: v for k, v in f["metadata"].items() if not k.startswith("delta.columnMapping.")}
                col = F.col(quote(f["name"]))
                if f["name"].lower() in types:
                    col = col.cast(types[f["name"].lower()])
                columns.append(col.alias(f["name"], metadata=meta))
            (df.select(*columns).write.format("delta").mode("overwrite").option("overwriteSchema", "true")
             .partitionBy(*partition_columns).save(table.location))  # fmt: skip

    def set_column_comment(self, table: TableHandle, name: str, comment: str) -> None:
        self._alter(table, "alter(comments)",
                    f"ALTER TABLE {spark_path(table.location)} ALTER COLUMN {quote(name)} COMMENT {sql_string(comment)}")  # fmt: skip

    # --- partitioning ---------------------------------------------------------------------------
    def evolve_partitioning(
        self, table: TableHandle, fields: list[PartitionField], rewrite: bool, dry_run: bool
    ) -> tuple[int, int]:
        """Delta fixes partition columns at creation: only a rewrite of every file (one commit) changes them."""
        if not rewrite:
            raise self.unsupported(  # type: ignore[attr-defined]
                "alter(partition_by)",
                "Delta cannot change a table's partitioning in place; rewrite=True rewrites every file into the new "
                "layout in one commit (see what it rewrites with dry_run=True)",
            )
        if any(f.transform != "identity" for f in fields):
            raise self.unsupported(  # type: ignore[attr-defined]
                f"alter(partition_by, rewrite=True) to {', '.join(map(str, fields))}",
                "partitioning a Delta table by a transform (days(ts), ...) needs a new generated column, which an "
                "overwrite cannot add; partition by plain columns, or create a new table and copy the rows",
            )
        self._refuse_not_null(table, "alter(partition_by, rewrite=True)", "create a table with the same schema "
                              "partitioned the new way (lakecat create) and copy the rows into it")  # fmt: skip
        log_fields = self._log_fields(table)
        self._refuse_identity(table, log_fields, "alter(partition_by, rewrite=True)")
        planned = self._rewrite_plan(table)
        if dry_run:
            return planned
        self._overwrite(table, "alter(partition_by, rewrite=True)", log_fields, [f.column for f in fields])
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
