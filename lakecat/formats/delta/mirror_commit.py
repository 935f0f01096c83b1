"""Keeping a Delta table's Iceberg mirror in step: the first build, one Iceberg commit per Delta version, the checks
that refuse what the mirror cannot express, and the comparison of both sides (``mirror --verify``).

pyiceberg commits to the catalog's Iceberg side (the same SQL catalog Spark's Iceberg catalog reads, or the REST
catalog the config names); the Iceberg metadata files live under the table, beside ``_delta_log``.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ...engine import first_line, spark_errors
from ...errors import CommitConflictError, LakecatError, NotExactError, UnsupportedOperationError
from ...files import norm_path
from ...metastore import Registry, TableEntry
from ...results import MirrorCheck, MirrorResult, MirrorVerifyResult
from .. import get_format
from .log import arrow
from .maintenance import spark_path
from .mirror import (
    _KNOWN_READER_FEATURES,
    _PARTITION_TYPES,
    _PURGE_HINT,
    METADATA_DIR,
    MIRRORS_KEY,
    VERSION_KEY,
    DeltaState,
    VersionChange,
    _columns,
    _delta_table,
    data_file,
    delta_state,
    facts_of_add,
    facts_of_table,
    iceberg_schema,
    mirror_terms,
    name_mapping,
    version_changes,
)

if TYPE_CHECKING:
    from ...identifiers import TableIdent
    from ..base import CatalogContext, TableFormat, TableHandle

log = logging.getLogger(__name__)
_ICEBERG = "iceberg"
_RETRIES = 5
_NAME_MAPPING = "schema.name-mapping.default"


def _refuse(name: str, version: int, what: str, fix: str) -> UnsupportedOperationError:
    error = UnsupportedOperationError(
        f"mirror of {name} as iceberg stops before Delta version {version}: {what}; the mirror stays at the version "
        f"before, correct but behind. {fix}"
    )
    error.with_cli_terms(mirror_terms(name))
    return error


def check_state(name: str, state: DeltaState, version: int | None = None) -> None:
    """Refuse (exit 3) a table state the mirror cannot express exactly: unknown reader features, partition types."""
    v = state.version if version is None else version
    unknown = sorted(set(state.reader_features) - _KNOWN_READER_FEATURES)
    if unknown:
        raise _refuse(name, v, f"the table uses the Delta reader feature(s) {', '.join(unknown)}, which Iceberg readers "
                      "would not honour", "Mirror a table without them.")  # fmt: skip
    for f in state.schema["fields"]:
        for change in (f.get("metadata") or {}).get("delta.typeChanges") or []:
            if not _iceberg_reads_as(str(change.get("fromType")), str(change.get("toType"))):
                raise _refuse(name, v, f"Delta's type widening changed {f['name']} from {change.get('fromType')} to "
                              f"{change.get('toType')}, and the files written before keep the old type, which Iceberg "
                              "readers do not read as the new one", "The mirror cannot express this table.")  # fmt: skip
    kinds = {f["name"]: f["type"] for f in state.schema["fields"]}
    for col in state.partition_columns:
        if kinds.get(col) not in _PARTITION_TYPES:
            raise _refuse(name, v, f"the partition column {col} is a {kinds.get(col)}, whose partition values the "
                          "mirror does not translate", "Partition by a date, integer, string or boolean column.")  # fmt: skip


def _iceberg_reads_as(old: str, new: str) -> bool:
    """Whether Iceberg readers read a file column of Delta type ``old`` as ``new`` (Iceberg's type promotions)."""
    ints = ["byte", "short", "integer", "long"]
    if old in ints and new in ints:
        return ints.index(old) <= ints.index(new)
    if (old, new) == ("float", "double"):
        return True
    if old.startswith("decimal(") and new.startswith("decimal("):
        (p, s), (p2, s2) = (map(int, t[len("decimal(") : -1].split(",")) for t in (old, new))
        return s == s2 and p2 >= p
    return old == new


def _check_no_deletion_vectors(name: str, version: int, adds: list[dict[str, Any]] | Any) -> None:
    if any(a.get("deletionVector") for a in adds):
        raise _refuse(name, version, "it has deletion vectors (rows deleted without rewriting their files), which the "
                      "mirror does not express as Iceberg deletes", _PURGE_HINT)  # fmt: skip


class _DivergedError(LakecatError):
    """The mirror does not read what the Delta log says it read (someone changed the mirror itself)."""


class MirrorTarget:
    """The Iceberg side of one Delta table's mirror."""

    def __init__(self, table: TableHandle, target: TableFormat) -> None:
        if target.name != _ICEBERG:
            raise UnsupportedOperationError(f"mirror(as_format={target.name!r}): a Delta table mirrors as iceberg only")
        self.table = table
        self.catalog = target.library_catalog(table.catalog)
        self.ident = (table.entry.ident.namespace, table.entry.ident.name)
        self.location = table.location.rstrip("/")

    @property
    def name(self) -> str:
        return self.table.name

    def load(self) -> Any:
        from pyiceberg.exceptions import NoSuchTableError

        try:
            return self.catalog.load_table(self.ident)
        except NoSuchTableError:
            return None

    @staticmethod
    def mirrored_version(tbl: Any) -> int | None:
        snap = tbl.current_snapshot()
        value = snap.summary.additional_properties.get(VERSION_KEY) if snap is not None else None
        return int(value) if value is not None else None

    # --- the first build ------------------------------------------------------------------
    def create(self, state: DeltaState) -> Any:
        """Register an Iceberg table whose schema keeps Delta's column ids, with no snapshot yet."""
        from pyiceberg.partitioning import PartitionField, PartitionSpec
        from pyiceberg.serializers import ToOutputFile
        from pyiceberg.table.metadata import TableMetadataV2
        from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
        from pyiceberg.transforms import IdentityTransform

        schema = iceberg_schema(state.schema)
        ids = {f.name: f.field_id for f in schema.fields}
        spec = PartitionSpec(*(PartitionField(ids[c], 1000 + i, IdentityTransform(), c)
                               for i, c in enumerate(state.partition_columns)), spec_id=0)  # fmt: skip
        last_id = max(schema.highest_field_id, int(state.configuration.get("delta.columnMapping.maxColumnId", 0)))
        metadata = TableMetadataV2(  # type: ignore[call-arg]  # pydantic: the fields' own names
            location=self.location, schemas=[schema], current_schema_id=0, last_column_id=last_id,
            partition_specs=[spec], default_spec_id=0, sort_orders=[UNSORTED_SORT_ORDER], default_sort_order_id=0, last_partition_id=999 + len(state.partition_columns),
            properties=self._properties(state, schema), table_uuid=uuid.uuid4(),
        )  # fmt: skip
        path = f"{self.location}/{METADATA_DIR}/00000-{uuid.uuid4()}.metadata.json"
        io = self.catalog._load_file_io(location=path)  # noqa: SLF001 - the catalog's own file IO
        ToOutputFile.table_metadata(metadata, io.new_output(path))
        self.catalog.create_namespace_if_not_exists(self.ident[0])
        return self.catalog.register_table(self.ident, path)

    def _properties(self, state: DeltaState, schema: Any) -> dict[str, str]:
        return {
            _NAME_MAPPING: name_mapping(state.schema, schema, state.configuration),
            "write.metadata.path": f"{self.location}/{METADATA_DIR}",
            # the data files are the Delta table's: Iceberg engines must never delete them (expiry, orphans)
            "gc.enabled": "false",
            "lakecat.mirror-of": "delta",
            "format-version": "2",
        }

    # --- commits --------------------------------------------------------------------------
    def commit_full(self, tbl: Any, dt: Any, state: DeltaState) -> int:
        """One commit that makes the mirror read the Delta table's current files (the first build, or a rebuild when
        the log no longer holds the commits since the mirrored version). Returns the files it reads."""
        check_state(self.name, state)
        adds = facts_of_table(self.location, dt)
        _check_no_deletion_vectors(self.name, state.version, self._dv_rows(dt))
        tx = tbl.transaction()
        schema = self._evolve(tx, tbl, state, state.version)
        cols = _columns(state.schema, schema)
        spec_id = tbl.metadata.default_spec_id
        current = self._current_files(tbl)
        with tx.update_snapshot(snapshot_properties={VERSION_KEY: str(state.version)}).overwrite() as op:
            for f in current.values():
                op.delete_data_file(f)
            for facts in adds:
                op.append_data_file(data_file(facts, cols, state.partition_columns, spec_id))
        tx.commit_transaction()
        return len(adds)

    @staticmethod
    def _dv_rows(dt: Any) -> list[dict[str, Any]]:
        """The current files a deletion vector hides rows of (read only when the table has the feature)."""
        if "deletionVectors" not in (dt.protocol().reader_features or []):
            return []
        rows = arrow(dt.deletion_vectors()).to_pylist()
        return [{"deletionVector": r["filepath"]} for r in rows if not all(r["selection_vector"])]

    def commit_version(self, tbl: Any, change: VersionChange, state: DeltaState, known: dict[str, Any]) -> None:
        """The Iceberg commit of one Delta version: its removes and adds (``known``: the mirror's files by path)."""
        if change.protocol is not None:
            check_state(self.name, DeltaState(change.version, state.schema, state.partition_columns,
                                              list(change.protocol.get("readerFeatures") or [])))  # fmt: skip
        _check_no_deletion_vectors(self.name, change.version, change.adds)
        tx = tbl.transaction()
        schema = self._evolve(tx, tbl, state, change.version) if change.metadata is not None else tbl.schema()
        cols = _columns(state.schema, schema)
        spec_id = tbl.metadata.default_spec_id
        props = {VERSION_KEY: str(change.version)}
        added = [data_file(facts_of_add(self.location, a), cols, state.partition_columns, spec_id) for a in change.adds]
        if change.removes:
            with tx.update_snapshot(snapshot_properties=props).overwrite() as op:
                for path in change.removes:
                    key = facts_of_add(self.location, {"path": path, "size": 0}).path
                    if key not in known:
                        raise _DivergedError(f"Delta version {change.version} removes {key}, which the mirror did "
                                             "not read")  # fmt: skip
                    op.delete_data_file(known.pop(key))
                for f in added:
                    op.append_data_file(f)
        else:
            with tx.update_snapshot(snapshot_properties=props).fast_append() as op:
                for f in added:
                    op.append_data_file(f)
        tx.commit_transaction()
        known.update({f.file_path: f for f in added})

    @staticmethod
    def _current_files(tbl: Any) -> dict[str, Any]:
        snap = tbl.current_snapshot()
        if snap is None:
            return {}
        out = {}
        for manifest in snap.manifests(tbl.io):
            for entry in manifest.fetch_manifest_entry(tbl.io, discard_deleted=True):
                out[entry.data_file.file_path] = entry.data_file
        return out

    def _evolve(self, tx: Any, tbl: Any, state: DeltaState, version: int) -> Any:
        """Bring the Iceberg schema to the Delta schema of ``state`` (columns added, renamed, dropped or widened as
        Iceberg allows); refuse what it cannot express. Returns the schema the version's files are read with."""
        from pyiceberg.exceptions import ValidationError

        old = tbl.schema()
        new = iceberg_schema(state.schema, existing=old, last_id=tbl.metadata.last_column_id)
        spec_cols = [tbl.schema().find_column_name(f.source_id) for f in tbl.spec().fields]
        if spec_cols != state.partition_columns:
            raise _refuse(self.name, version, f"the partition columns changed ({', '.join(spec_cols) or 'none'} -> "
                          f"{', '.join(state.partition_columns) or 'none'})", "Drop the mirror "
                          "(drop_mirrors(as_format='iceberg')) and mirror the table again.")  # fmt: skip
        if {f.field_id: f for f in new.fields} == {f.field_id: f for f in old.fields}:
            return old
        old_by_id = {f.field_id: f for f in old.fields}
        old_ids = {f.name: f.field_id for f in old.fields}
        new_ids = {f.field_id for f in new.fields}
        moved = sorted(f.name for f in new.fields if old_ids.get(f.name, f.field_id) != f.field_id)
        if moved:  # Delta numbered its columns itself (column mapping turned on) otherwise than the mirror did
            raise _refuse(self.name, version, f"Delta's column ids of {', '.join(moved)} differ from the mirror's",
                          "Drop the mirror (drop_mirrors(as_format='iceberg')) and mirror the table again.")  # fmt: skip
        try:
            with tx.update_schema(allow_incompatible_changes=False) as upd:
                for f in new.fields:
                    was = old_by_id.get(f.field_id)
                    if was is None:
                        upd.add_column(f.name, f.field_type, doc=f.doc)
                        continue
                    if was.name != f.name:
                        upd.rename_column(was.name, f.name)
                    if was.field_type != f.field_type:
                        if not (f.field_type.is_primitive and was.field_type.is_primitive):
                            raise _refuse(self.name, version, f"the nested column {f.name} changed",
                                          "Mirror the table again after dropping the mirror.")  # fmt: skip
                        upd.update_column(was.name, field_type=f.field_type)
                for f in old.fields:
                    if f.field_id not in new_ids:
                        upd.delete_column(f.name)
        except ValidationError as e:  # a widening Delta allows and Iceberg does not (date -> timestamp_ntz, a scale)
            raise _refuse(self.name, version, f"a schema change Iceberg cannot express ({first_line(str(e))}), and "
                          "the files written before it keep the old type, which Iceberg readers do not read as the new "
                          "one", "The mirror cannot follow this table: drop_mirrors(as_format='iceberg') ends it.") from e  # fmt: skip
        evolved = tx.table_metadata.schema()
        if {(f.field_id, f.name) for f in evolved.fields} != {(f.field_id, f.name) for f in new.fields}:
            raise _refuse(self.name, version, "a column was added whose id Iceberg would number differently from "
                          "Delta's", "Drop the mirror and mirror the table again.")  # fmt: skip
        tx.set_properties({_NAME_MAPPING: name_mapping(state.schema, evolved, state.configuration)})
        return evolved

    # --- bringing it up to date -----------------------------------------------------------
    def sync(self, *, create: bool = False) -> MirrorResult:
        from pyiceberg.exceptions import CommitFailedException

        for attempt in range(_RETRIES):
            try:
                return self._sync_once(create=create)
            except CommitFailedException as e:  # another sync committed first: start again from where it left off
                if attempt == _RETRIES - 1:
                    raise CommitConflictError(f"mirror of {self.name}: {e}") from e
        raise AssertionError("unreachable")

    def _sync_once(self, *, create: bool) -> MirrorResult:
        dt = _delta_table(self.table.location)
        state = delta_state(dt)
        tbl = self.load()
        if tbl is None:
            if not create:
                raise LakecatError(
                    f"{self.name} has no iceberg mirror: mirror(as_format='iceberg') makes it"
                ).with_cli_terms(mirror_terms(self.name))
            check_state(self.name, state)
            tbl = self.create(state)
        mirrored = self.mirrored_version(tbl)
        result = MirrorResult(self.name, _ICEBERG, mirrored, None)
        if mirrored is None or mirrored > state.version:
            result.files = self.commit_full(tbl, dt, state)
            result.commits, result.rebuilt = 1, mirrored is not None
        elif mirrored < state.version:
            changes = version_changes(self.table.location, self.name, mirrored + 1, state.version)
            if changes is None:
                result.files = self.commit_full(tbl, dt, state)
                result.commits, result.rebuilt = 1, True
                result.notes.append("the log no longer holds every commit since the mirrored version: rebuilt from "
                                    f"version {state.version}")  # fmt: skip
            else:
                try:
                    result.commits = self._apply(tbl, changes, state, result)
                except _DivergedError as e:  # someone changed the mirror itself: read the current version whole
                    result.files = self.commit_full(self.load(), dt, state)
                    result.commits, result.rebuilt = result.commits + 1, True
                    result.notes.append(f"{e}: rebuilt from version {state.version}")
        tbl = self.load()
        result.source_version = self.mirrored_version(tbl)
        result.mirror_version = tbl.current_snapshot().snapshot_id if tbl.current_snapshot() else None
        result.behind = state.version - (result.source_version if result.source_version is not None else -1)
        return result

    def _apply(self, tbl: Any, changes: list[VersionChange], current: DeltaState, result: MirrorResult) -> int:
        """One Iceberg commit per Delta version, each read with the Delta schema of its own version.

        Versions that leave rows hidden by deletion vectors cannot be expressed: they are skipped up to the first
        version that hides none any more (a purge, a compaction, an overwrite), which the mirror reads whole in one
        commit; when no such version has come yet, the mirror stops before the first of them. Returns the commits."""
        known: dict[str, Any] | None = None
        state = current
        if any(c.metadata is not None for c in changes):  # a schema change on the way: start from the mirrored one
            state = delta_state(_delta_table(self.table.location, changes[0].version - 1))
        hidden: set[str] = set()  # files a deletion vector hides rows of (none at the mirrored version: it is exact)
        skipped: list[int] = []
        commits = 0
        for change in changes:
            if change.metadata is not None:
                state = current if change.version == current.version else delta_state(
                    _delta_table(self.table.location, change.version))  # fmt: skip
            else:
                state = replace(state, version=change.version)
            hidden.difference_update(change.removes)
            for add in change.adds:
                (hidden.add if add.get("deletionVector") else hidden.discard)(add["path"])
            if hidden or any(a.get("deletionVector") for a in change.adds):
                skipped.append(change.version)
                continue
            if skipped:  # the first version past them: read whole, as a rebuild would
                dt = _delta_table(self.table.location, change.version)
                state = delta_state(dt)
                result.files = self.commit_full(tbl, dt, state)
                result.notes.append(f"Delta version{'s' if len(skipped) > 1 else ''} {_span(skipped)} hid rows with "
                                    "deletion vectors, which the mirror does not express: skipped to version "
                                    f"{change.version}, read whole")  # fmt: skip
                skipped, known = [], None
            else:
                if change.removes and known is None:
                    known = self._current_files(tbl)
                self.commit_version(tbl, change, state, known if known is not None else {})
            commits += 1
            tbl = self.load()
        if skipped:
            _check_no_deletion_vectors(self.name, skipped[0], [{"deletionVector": True}])
        return commits


def _span(versions: list[int]) -> str:
    return str(versions[0]) if len(versions) == 1 else f"{versions[0]}-{versions[-1]}"


# --- the Delta adapter's side of the format contract ----------------------------------------------
class DeltaMirror:
    """Mixin of the Delta adapter: ``mirror``, ``sync_mirror``, ``verify_mirror``, ``mirrors``."""

    def _registry(self, metastore: Any) -> Registry:  # provided by the adapter
        raise NotImplementedError

    def mirrors(self, entry: TableEntry) -> list[str]:
        return [str(m) for m in entry.properties.get(MIRRORS_KEY) or []]

    def mirror_formats(self, entry: TableEntry) -> list[TableFormat]:
        return [get_format(m) for m in self.mirrors(entry)]

    def mirror(self, table: TableHandle, target: TableFormat, *, purge_deletes: bool = False) -> MirrorResult:
        side = MirrorTarget(table, target)
        if purge_deletes:
            self._purge_deletes(table)
        dt = _delta_table(table.location)
        check_state(table.name, delta_state(dt))  # refused before anything is registered
        _check_no_deletion_vectors(table.name, int(dt.version()), MirrorTarget._dv_rows(dt))
        entry = table.refresh()
        if target.name not in self.mirrors(entry):  # recorded first: the catalog never shows the mirror as a table
            props = {**entry.properties, MIRRORS_KEY: [*self.mirrors(entry), target.name]}
            self._registry(table.catalog.metastore).update_properties(entry.ident, props)
            table.refresh()
        return side.sync(create=True)

    def sync_mirror(self, table: TableHandle, target: TableFormat, *, purge_deletes: bool = False) -> MirrorResult:
        side = MirrorTarget(table, target)
        if purge_deletes:
            self._purge_deletes(table)
        return side.sync()

    @staticmethod
    def _purge_deletes(table: TableHandle) -> None:
        """Rewrite the files whose rows deletion vectors hide (one commit, Spark): the versions before it that the
        mirror cannot express are then skipped up to it."""
        spark = table.catalog.session()
        with spark_errors("mirror(purge_deletes=True)", table.entry.ident):
            spark.sql(f"REORG TABLE {spark_path(table.location)} APPLY (PURGE)")

    def mirrored_files(self, table: TableHandle) -> set[str]:
        """The data files the mirrors' current snapshots read. A mirror left behind (at a version before one it
        refused) still reads files the Delta table no longer does: Delta's expiry and clean-orphans keep them, so no
        Iceberg reader is sent to a deleted file."""
        out: set[str] = set()
        for name in self.mirrors(table.entry):
            side = MirrorTarget(table, get_format(name))
            try:
                tbl = side.load()
                files = MirrorTarget._current_files(tbl) if tbl is not None else {}
            except Exception as e:  # noqa: BLE001 - not knowing them, delete nothing
                raise LakecatError(f"{table.name}: the files its {name} mirror reads could not be read, so none are "
                                   f"deleted ({first_line(str(e))}); drop_mirrors(as_format={name!r}) ends the mirror"
                                   ).with_cli_terms({f"drop_mirrors(as_format={name!r})":
                                                     f"`lakecat mirror {table.name} --drop`"}) from e  # fmt: skip
            out |= {norm_path(quote(p, safe="/:")) for p in files}  # a location, not a log's %-escaped path
        return out

    def rename_mirrors(self, ctx: CatalogContext, entry: TableEntry, new: TableIdent) -> None:
        """A renamed table's mirrors follow it: each mirror's catalog entry takes the new name (no file moves)."""
        for name in self.mirrors(entry):
            catalog = get_format(name).library_catalog(ctx)
            catalog.create_namespace_if_not_exists(new.namespace)
            catalog.rename_table((entry.ident.namespace, entry.ident.name), (new.namespace, new.name))

    def drop_mirror(self, ctx: CatalogContext, entry: TableEntry, target: TableFormat) -> None:
        from pyiceberg.exceptions import NoSuchTableError

        try:  # the catalog entry only: the data files are the Delta table's
            target.library_catalog(ctx).drop_table((entry.ident.namespace, entry.ident.name))
        except NoSuchTableError:
            pass
        props = {k: v for k, v in entry.properties.items() if k != MIRRORS_KEY}
        rest = [m for m in self.mirrors(entry) if m != target.name]
        self._registry(ctx.metastore).update_properties(entry.ident, {**props, **({MIRRORS_KEY: rest} if rest else {})})

    def scan_version_light(self, table: TableHandle, version: int) -> Any:  # provided by the adapter
        raise NotImplementedError

    def read_version(self, table: TableHandle, version: int) -> Any:  # provided by the adapter
        raise NotImplementedError

    def _source_rows(self, table: TableHandle, version: int) -> Any:
        """The Delta side at ``version`` as an Arrow table: delta-rs where it reads exactly what Delta on Spark reads
        (deletion vectors applied), Spark otherwise (column mapping)."""
        try:
            rows = self.scan_version_light(table, version)
        except NotExactError:
            return self.read_version(table, version).toArrow()
        return rows.to_table() if hasattr(rows, "to_table") else rows.read_all()

    def verify_mirror(self, table: TableHandle, target: TableFormat) -> MirrorVerifyResult:
        side = MirrorTarget(table, target)
        tbl = side.load()
        version = side.mirrored_version(tbl) if tbl is not None else None
        if tbl is None or version is None:
            raise LakecatError(
                f"{table.name} has no iceberg mirror: mirror(as_format='iceberg') makes it"
            ).with_cli_terms(mirror_terms(table.name))
        snapshot = tbl.current_snapshot().snapshot_id
        source = self._source_rows(table, version)
        mirror = tbl.scan(snapshot_id=snapshot).to_arrow()
        checks = compare(source, mirror)
        return MirrorVerifyResult(table.name, target.name, version, snapshot, source.num_rows, checks,
                                  all(c.equal for c in checks))  # fmt: skip


def _normalized(table: Any) -> Any:
    """Arrow columns in one spelling per type (timestamps in microseconds, large strings as strings), so that a
    checksum depends on the values alone, not on which library read them."""
    import pyarrow as pa

    cols = []
    for f in table.schema:
        col = table.column(f.name)
        if pa.types.is_timestamp(f.type):
            col = col.cast(pa.timestamp("us", tz=f.type.tz))
        elif pa.types.is_large_string(f.type) or pa.types.is_string_view(f.type):
            col = col.cast(pa.string())
        elif pa.types.is_large_binary(f.type) or pa.types.is_binary_view(f.type):
            col = col.cast(pa.binary())
        elif pa.types.is_dictionary(f.type):
            col = col.cast(f.type.value_type)
        cols.append(col)
    return pa.table(cols, names=table.column_names)


def checksums(table: Any) -> dict[str, str]:
    """Row count and an order-independent checksum of every column (the sum of each value's hash)."""
    import duckdb

    con = duckdb.connect()
    try:
        con.register("t", _normalized(table))
        parts = ["count(*)::VARCHAR"] + [
            f'coalesce(sum(hash("{c.replace(chr(34), chr(34) * 2)}")::HUGEINT), 0)::VARCHAR' for c in table.column_names
        ]
        row = con.execute(f"SELECT {', '.join(parts)} FROM t").fetchone()
    finally:
        con.close()
    values = list(row or [])
    return {"rows": str(values[0]), **{c: str(v) for c, v in zip(table.column_names, values[1:], strict=True)}}


def compare(source: Any, mirror: Any) -> list[MirrorCheck]:
    a, b = checksums(source), checksums(mirror)
    return [MirrorCheck(k, a.get(k, "missing"), b.get(k, "missing"), a.get(k) == b.get(k)) for k in {**a, **b}]
