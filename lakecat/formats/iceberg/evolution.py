"""Iceberg evolution: schema changes by field id, partition spec evolution and refs (tags, branches), through
pyiceberg's own metadata commits (no JVM, no data rewritten); publishing a branch runs Iceberg's ``fast_forward``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ...engine import first_line, spark_errors, sql_string, with_retries
from ...errors import CommitConflictError, InvalidArgumentError, LakecatError
from ...identifiers import quote
from ...partitioning import Clustering
from ...results import RefInfo
from ...schema import split_type_arguments
from ...units import format_duration, from_millis, iso

if TYPE_CHECKING:
    from ...partitioning import PartitionField
    from ...schema import Column
    from ..base import TableHandle

#: The table property that keeps a z-order clustering (``zorder(a, b)``): Iceberg's sort order cannot say z-order.
ZORDER_PROPERTY = "lakecat.clustering"


def zorder_keys(text: str, names: list[str] | None = None) -> tuple[str, ...]:
    """The z-order keys a ``ZORDER_PROPERTY`` value names, in its order; with ``names`` (the schema's columns) only
    those still in the schema. Read leniently: the value holds names, and another engine may have renamed or dropped
    a key since."""
    inner = text.strip()
    if inner.lower().startswith("zorder(") and inner.endswith(")"):
        inner = inner[len("zorder(") : -1]
    keys = [k.strip() for k in inner.split(",") if k.strip()]
    if names is not None:
        by_name = {n.lower(): n for n in names}
        keys = [by_name[k.lower()] for k in keys if k.lower() in by_name]
    return tuple(dict.fromkeys(keys))


_PRIMITIVES = {
    "BOOLEAN": "BooleanType", "TINYINT": "IntegerType", "SMALLINT": "IntegerType", "INT": "IntegerType",
    "BIGINT": "LongType", "FLOAT": "FloatType", "DOUBLE": "DoubleType", "STRING": "StringType",
    "BINARY": "BinaryType", "DATE": "DateType", "TIMESTAMP": "TimestamptzType", "TIMESTAMP_NTZ": "TimestampType",
}  # fmt: skip


def iceberg_type(sql: str, ids: Iterator[int] | None = None) -> Any:
    """lakecat's normalised SQL type (``DECIMAL(12,2)``, ``ARRAY<STRING>``, ``STRUCT<`a`: INT>``) as a pyiceberg type.

    Nested ids are placeholders (from ``ids``, else from 1): pyiceberg assigns fresh ids when the column is added.
    """
    from pyiceberg import types as it

    counter = ids if ids is not None else iter(range(1, 10_000))

    def parse(text: str) -> Any:
        text = text.strip()
        upper = text.upper()
        if upper in _PRIMITIVES:
            return getattr(it, _PRIMITIVES[upper])()
        m = re.fullmatch(r"DECIMAL\((\d+),\s*(\d+)\)", upper)
        if m:
            return it.DecimalType(int(m.group(1)), int(m.group(2)))
        inner = text[text.index("<") + 1 : text.rindex(">")] if "<" in text else ""
        if upper.startswith("ARRAY<"):
            return it.ListType(next(counter), parse(inner), element_required=False)
        if upper.startswith("MAP<"):
            key, value = split_type_arguments(inner)
            return it.MapType(next(counter), parse(key), next(counter), parse(value), value_required=False)
        if upper.startswith("STRUCT<"):
            fields = []
            for part in split_type_arguments(inner):
                name, _, ftype = part.partition(":")
                fields.append(it.NestedField(next(counter), name.strip().strip("`"), parse(ftype), required=False))
            return it.StructType(*fields)
        raise InvalidArgumentError(f"type {text}: no Iceberg equivalent")

    return parse(sql)


def iceberg_transform_word(transform: str, source: str) -> str:
    """pyiceberg's transform spelling (``day``, ``bucket[16]``) to lakecat's (``days(ts)``, ``bucket(16, id)``)."""
    t = transform.lower()
    simple = {"identity": source, "year": f"years({source})", "month": f"months({source})",
              "day": f"days({source})", "hour": f"hours({source})", "void": f"void({source})"}  # fmt: skip
    if t in simple:
        return simple[t]
    m = re.match(r"(bucket|truncate)\[(\d+)\]", t)
    if m:
        return f"{m.group(1)}({m.group(2)}, {source})"
    return f"{t}({source})"


def _transform(field: PartitionField) -> Any:
    from pyiceberg import transforms as tr

    simple = {"identity": tr.IdentityTransform, "years": tr.YearTransform, "months": tr.MonthTransform,
              "days": tr.DayTransform, "hours": tr.HourTransform}  # fmt: skip
    if field.transform in simple:
        return simple[field.transform]()
    if field.transform == "bucket":
        return tr.BucketTransform(int(field.param or 0))
    return tr.TruncateTransform(int(field.param or 0))


def iceberg_schema(columns: list[Column]) -> Any:
    """A new table's columns as a pyiceberg schema with unique placeholder ids (top-level columns first, 1..n, as
    Spark numbers them); pyiceberg's create assigns the fresh ids, in the same order as Iceberg's Java library."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField

    nested = iter(range(len(columns) + 1, 1_000_000))
    return Schema(*(NestedField(i, c.name, iceberg_type(c.type, nested), required=not c.nullable, doc=c.comment)
                    for i, c in enumerate(columns, start=1)))  # fmt: skip


def spec_field_name(field: PartitionField) -> str:
    """The name Spark's CREATE TABLE gives a partition field (``ts_day``, ``id_bucket``, ``region_trunc``)."""
    suffix = {
        "years": "year",
        "months": "month",
        "days": "day",
        "hours": "hour",
        "bucket": "bucket",
        "truncate": "trunc",
    }
    return field.column if field.transform == "identity" else f"{field.column}_{suffix[field.transform]}"


def _field_name(field: PartitionField) -> str:
    """Spark's names for partition fields (``ts_day``, ``id_bucket_16``), so both engines agree."""
    suffix = {"years": "year", "months": "month", "days": "day", "hours": "hour"}
    if field.transform == "identity":
        return field.column
    if field.transform in suffix:
        return f"{field.column}_{suffix[field.transform]}"
    return f"{field.column}_{field.transform}_{field.param}"


def _field_sql(field: PartitionField) -> str:
    """A partition field in Spark's Iceberg DDL (``days(`ts`)``, ``bucket(16, `id`)``)."""
    if field.transform == "identity":
        return quote(field.column)
    width = f"{field.param}, " if field.param is not None else ""
    return f"{field.transform}({width}{quote(field.column)})"


class IcebergEvolution:
    """The evolution half of the Iceberg adapter (mixed into ``IcebergFormat``)."""

    def writes_through_spark(self, table: TableHandle) -> bool:
        """Whether metadata commits go through Spark: pyiceberg reads format version 3 but does not write it."""
        return int(self.metadata_doc(table).get("format-version", 1)) >= 3  # type: ignore[attr-defined]

    def _spark_sql(self, table: TableHandle, what: str, statements: Callable[[], list[str]]) -> None:
        """Run ``statements()`` through Spark, retried on a conflict; each try computes them anew from the current
        metadata, so a retry after a partly committed list does not repeat what already went in."""
        spark = table.catalog.session()

        def run() -> None:
            with spark_errors(what, table.entry.ident):
                spark.sql(f"REFRESH TABLE {self._name(table)}")  # another engine (pyiceberg) may have committed since
                for statement in statements():
                    spark.sql(statement)

        with_retries(run, what=f"{what} {table.name}")

    def _name(self, table: TableHandle) -> str:
        return str(self.spark_name(table.catalog, table.entry))  # type: ignore[attr-defined]

    def _commit(self, table: TableHandle, what: str, fn: Callable[[Any], None],
                sql: Callable[[], list[str]] | None = None) -> None:  # fmt: skip
        """One metadata commit through pyiceberg's catalog, retried on a conflict; pyiceberg's refusals are one line.
        On a format version 3 table the same change as Spark SQL (``sql``) instead."""
        from pyiceberg.exceptions import CommitFailedException

        if self.writes_through_spark(table):
            if sql is None:
                raise self.unsupported(f"{what} on a format version 3 table",  # type: ignore[attr-defined]
                                       "pyiceberg does not write version 3 metadata yet")  # fmt: skip
            self._spark_sql(table, what, sql)
            return

        def commit() -> None:
            tbl = self.sql_catalog(table.catalog).load_table((table.entry.ident.namespace, table.entry.ident.name))  # type: ignore[attr-defined]
            try:
                fn(tbl)
            except CommitFailedException as e:
                raise CommitConflictError(f"{what} {table.name}: commit conflict: {first_line(str(e))}") from e
            except (ValueError, KeyError) as e:
                raise InvalidArgumentError(f"{what} {table.name}: {first_line(str(e))}") from e

        with_retries(commit, what=f"{what} {table.name}")

    def _schema(self, table: TableHandle, what: str, change: Callable[[Any], None], sql: str, *,
                incompatible: bool = False) -> None:  # fmt: skip
        def fn(tbl: Any) -> None:
            with tbl.update_schema(allow_incompatible_changes=incompatible) as update:
                change(update)

        self._commit(table, what, fn, lambda: [f"ALTER TABLE {self._name(table)} {sql}"])

    # --- schema ---------------------------------------------------------------------------------
    def add_column(self, table: TableHandle, column: Column, position: str | None) -> None:
        def change(u: Any) -> None:
            u.add_column(column.name, iceberg_type(column.type), doc=column.comment, required=not column.nullable)
            if position == "FIRST":
                u.move_first(column.name)
            elif position:
                u.move_after(column.name, position.split(" ", 1)[1])

        where = " FIRST" if position == "FIRST" else (f" AFTER {quote(position.split(' ', 1)[1])}" if position else "")
        # a required column is only accepted on a table without rows (checked above the adapter)
        self._schema(table, "alter(add_columns)", change, f"ADD COLUMN {column.ddl()}{where}",
                     incompatible=not column.nullable)  # fmt: skip

    def rename_column(self, table: TableHandle, old: str, new: str) -> None:
        self._schema(table, "alter(rename_columns)", lambda u: u.rename_column(old, new),
                     f"RENAME COLUMN {quote(old)} TO {quote(new)}")  # fmt: skip
        self._follow_zorder(table, old, new)

    def drop_column(self, table: TableHandle, name: str) -> None:
        """Drop the column; a sort-order key on it leaves the order in the same commit (Iceberg refuses to drop a
        column its sort order uses), and a z-order key leaves the z-order property after it."""

        def fn(tbl: Any) -> None:
            schema, order = tbl.schema(), tbl.sort_order()
            kept = [f for f in order.fields if f.source_id != schema.find_field(name).field_id]
            with tbl.transaction() as tx:
                if len(kept) != len(order.fields):
                    with tx.update_sort_order() as update:
                        for f in kept:
                            add = update.asc if str(f.direction) == "ASC" else update.desc
                            add(schema.find_column_name(f.source_id), f.transform, f.null_order)
                with tx.update_schema() as update:
                    update.delete_column(name)

        def sql() -> list[str]:
            tbl = self.load(table)  # type: ignore[attr-defined]
            schema, order, spark_name = tbl.schema(), tbl.sort_order(), self._name(table)
            kept = [f for f in order.fields if f.source_id != schema.find_field(name).field_id]
            drop = [f"ALTER TABLE {spark_name} DROP COLUMN {quote(name)}"]
            if len(kept) == len(order.fields):
                return drop
            words = ", ".join(f"{iceberg_transform_word(str(f.transform), quote(schema.find_column_name(f.source_id)))} "
                              f"{f.direction} {f.null_order}" for f in kept)  # fmt: skip
            return [f"ALTER TABLE {spark_name} WRITE " + (f"ORDERED BY {words}" if words else "UNORDERED"), *drop]

        self._commit(table, "alter(drop_columns)", fn, sql)
        self._follow_zorder(table, name, None)

    def _follow_zorder(self, table: TableHandle, old: str, new: str | None) -> None:
        """Keep the z-order property in step with a rename (``new``) or a drop (None) of one of its keys: Iceberg's
        own sort order holds field ids and follows by itself, the property holds names. A drop leaving one key
        turns the z-order into a sort by that key (z-order interleaves two or more columns)."""
        text = self.properties(table).get(ZORDER_PROPERTY)  # type: ignore[attr-defined]
        if not text:
            return
        named = zorder_keys(text)
        if new is None:
            keys = tuple(k for k in named if k.lower() != old.lower())
        else:
            keys = tuple(new if k.lower() == old.lower() else k for k in named)
        if keys == named:
            return
        if len(keys) >= 2:
            self.set_properties(table, {ZORDER_PROPERTY: str(Clustering(keys, zorder=True))}, [])  # type: ignore[attr-defined]
        else:
            self.set_clustering(table, Clustering(keys))  # type: ignore[attr-defined]

    def widen_column(self, table: TableHandle, name: str, new_type: str) -> None:
        self._schema(table, "alter(widen)", lambda u: u.update_column(name, field_type=iceberg_type(new_type)),
                     f"ALTER COLUMN {quote(name)} TYPE {new_type}")  # fmt: skip

    def set_column_comment(self, table: TableHandle, name: str, comment: str) -> None:
        self._schema(table, "alter(comments)", lambda u: u.update_column(name, doc=comment),
                     f"ALTER COLUMN {quote(name)} COMMENT {sql_string(comment)}")  # fmt: skip

    # --- partitioning ---------------------------------------------------------------------------
    def evolve_partitioning(
        self, table: TableHandle, fields: list[PartitionField], rewrite: bool, dry_run: bool
    ) -> tuple[int, int]:
        """A new spec for new data; files written before keep their spec (nothing to rewrite: ``rewrite`` is refused)."""
        if rewrite:
            raise InvalidArgumentError(
                "alter(partition_by, rewrite=True): Iceberg changes partitioning in place (new data takes the new spec, "
                "files written before keep theirs), so there is nothing to rewrite; drop rewrite=True"
            )
        if dry_run:
            return 0, 0

        def fn(tbl: Any) -> None:
            schema = tbl.schema()
            current = {(pf.source_id, str(pf.transform)): pf.name for pf in tbl.spec().fields}
            wanted = {(schema.find_field(f.column).field_id, str(_transform(f))): f for f in fields}
            with tbl.update_spec() as update:
                for key, name in current.items():
                    if key not in wanted:
                        update.remove_field(name)
                for key, f in wanted.items():
                    if key not in current:
                        update.add_field(f.column, _transform(f), _field_name(f))

        def sql() -> list[str]:
            tbl = self.load(table)  # type: ignore[attr-defined]
            schema, name = tbl.schema(), self._name(table)
            current = {(pf.source_id, str(pf.transform)): pf.name for pf in tbl.spec().fields}
            wanted = {(schema.find_field(f.column).field_id, str(_transform(f))): f for f in fields}
            return [f"ALTER TABLE {name} DROP PARTITION FIELD {quote(n)}" for k, n in current.items() if k not in wanted] + [
                f"ALTER TABLE {name} ADD PARTITION FIELD {_field_sql(f)} AS {quote(_field_name(f))}"
                for k, f in wanted.items() if k not in current]  # fmt: skip

        self._commit(table, "alter(partition_by)", fn, sql)
        return 0, 0

    # --- refs -----------------------------------------------------------------------------------
    def ref_infos(self, meta: Any) -> list[RefInfo]:
        by_id = {s.snapshot_id: s for s in meta.snapshots}
        out = []
        for name, ref in sorted((meta.refs or {}).items()):
            kind = str(getattr(ref.snapshot_ref_type, "value", ref.snapshot_ref_type)).lower()
            if name == "main" and kind == "branch":
                continue
            age = ref.max_ref_age_ms
            snap = by_id.get(ref.snapshot_id)
            expires = iso(from_millis(snap.timestamp_ms + age)) if age and snap is not None else None
            out.append(
                RefInfo(
                    name, kind, ref.snapshot_id, format_duration(timedelta(milliseconds=age)) if age else None, expires
                )
            )
        return out

    def refs(self, table: TableHandle) -> list[RefInfo]:
        return self.ref_infos(self.snapshot_metadata(table))  # type: ignore[attr-defined]  # the file alone where it can

    def create_tag(self, table: TableHandle, name: str, version: int, retain: timedelta | None) -> None:
        age = int(retain.total_seconds() * 1000) if retain is not None else None
        retain_sql = f" RETAIN {-(-age // 60_000)} MINUTES" if age else ""
        self._commit(
            table, "tag", lambda tbl: tbl.manage_snapshots().create_tag(version, name, max_ref_age_ms=age).commit(),
            lambda: [f"ALTER TABLE {self._name(table)} CREATE TAG {quote(name)} AS OF VERSION {version}{retain_sql}"],
        )  # fmt: skip

    def drop_tag(self, table: TableHandle, name: str) -> None:
        self._commit(table, "untag", lambda tbl: tbl.manage_snapshots().remove_tag(name).commit(),
                     lambda: [f"ALTER TABLE {self._name(table)} DROP TAG {quote(name)}"])  # fmt: skip

    def create_branch(self, table: TableHandle, name: str, version: int | None) -> None:
        def fn(tbl: Any) -> None:
            snap = version if version is not None else tbl.metadata.current_snapshot_id
            if snap is None:
                raise LakecatError(f"branch {table.name}: the table has no snapshot to branch from yet")
            tbl.manage_snapshots().create_branch(snap, name).commit()

        def sql() -> list[str]:
            snap = version if version is not None else self.current_version(table)  # type: ignore[attr-defined]
            if snap is None:
                raise LakecatError(f"branch {table.name}: the table has no snapshot to branch from yet")
            return [f"ALTER TABLE {self._name(table)} CREATE BRANCH {quote(name)} AS OF VERSION {snap}"]

        self._commit(table, "branch", fn, sql)

    def branch_spark_name(self, spark_name: str, branch: str) -> str:
        return f"{spark_name}.{quote('branch_' + branch)}"

    def publish(self, table: TableHandle, branch: str) -> int | None:
        spark = table.catalog.session()
        with spark_errors("publish", table.entry.ident):
            spark.sql(f"CALL {quote(table.catalog.name)}.system.fast_forward(table => {sql_string(table.entry.ident.quoted)}, "
                      f"branch => 'main', to => {sql_string(branch)})").collect()  # fmt: skip
        return self.current_version(table)  # type: ignore[attr-defined, no-any-return]
