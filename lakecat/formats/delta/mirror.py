"""A Delta table also readable as an Iceberg table: Iceberg metadata over the Delta table's own Parquet files.

delta-rs reads the Delta log; pyiceberg writes the Iceberg metadata and commits it to the catalog's Iceberg side under
the table's own name. Each Delta version becomes one Iceberg snapshot whose summary names it
(``lakecat.delta-version``), built from that version's adds and removes; a version the mirror cannot express exactly
(deletion vectors, a reader feature it does not know, a schema change Iceberg cannot make) is refused with exit 3, so
the mirror is behind, never wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ...config import delta_storage_options
from ...errors import UnsupportedOperationError
from ...files import fs_for
from .log import arrow, commit_actions, log_entries

if TYPE_CHECKING:
    pass

#: The snapshot summary key that names the Delta version an Iceberg snapshot mirrors.
VERSION_KEY = "lakecat.delta-version"
#: The catalog entry's property listing the formats a table is mirrored as.
MIRRORS_KEY = "mirrors"
#: Where the Iceberg metadata lives: under the table, in a folder Delta's VACUUM leaves alone (names starting with _).
METADATA_DIR = "_lakecat_iceberg/metadata"
#: Reader features whose tables the mirror reads exactly (deletion vectors are checked per file).
_KNOWN_READER_FEATURES = {"columnMapping", "timestampNtz", "deletionVectors", "v2Checkpoint", "vacuumProtocolCheck",
                          "typeWidening", "typeWidening-preview"}  # fmt: skip
_INT_TYPES = {"byte", "short", "integer", "long"}
#: Delta types whose file statistics are exact bounds in Iceberg's sense (timestamps are cut to milliseconds and
#: strings to a prefix in Delta's statistics: those bounds are left out rather than made wrong).
_BOUND_TYPES = _INT_TYPES | {"date"}
_PARTITION_TYPES = _INT_TYPES | {"string", "date", "boolean"}
#: Columns Delta writes into data files that are not the table's (a MERGE with the change data feed on), and the
#: configuration keys naming row tracking's materialized columns; the name mapping gives them ids from _HIDDEN_ID on.
_DELTA_FILE_COLUMNS = ("_change_type", "__is_cdc", "_commit_version", "_commit_timestamp")
_MATERIALIZED = (
    "delta.rowTracking.materializedRowIdColumnName",
    "delta.rowTracking.materializedRowCommitVersionColumnName",
)
_HIDDEN_ID = 1_000_000_000
_PURGE_HINT = "mirror(as_format='iceberg', purge_deletes=True) rewrites them away first (REORG ... APPLY (PURGE))"


def mirror_terms(name: str) -> dict[str, str]:
    """How the command line says the mirror calls a message about table ``name`` names."""
    return {"mirror(as_format='iceberg', purge_deletes=True)": f"`lakecat mirror {name} --as iceberg --purge-deletes`",
            "drop_mirrors(as_format='iceberg')": f"`lakecat mirror {name} --drop`",
            "mirror(as_format='iceberg') makes it": f"`lakecat mirror {name} --as iceberg` makes it"}  # fmt: skip


def _unsupported(what: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(what)


# --- schema ------------------------------------------------------------------------------------
@dataclass
class _Column:
    name: str
    physical: str
    kind: str
    field_id: int


def _physical(f: dict[str, Any]) -> str:
    return str((f.get("metadata") or {}).get("delta.columnMapping.physicalName") or f["name"])


def _iceberg_type(t: Any, where: str, next_id: list[int], known: dict[str, int]) -> Any:
    from pyiceberg import types as it

    if isinstance(t, dict):
        if t.get("type") != "struct":
            raise _unsupported(f"mirror(as_format='iceberg'): column {where} is a {t.get('type')}, which the mirror cannot "
                               "express yet (arrays and maps)")  # fmt: skip
        return it.StructType(*_fields(t["fields"], next_id, known, f"{where}."))
    simple = {"string": it.StringType(), "long": it.LongType(), "integer": it.IntegerType(), "short": it.IntegerType(),
              "byte": it.IntegerType(), "double": it.DoubleType(), "float": it.FloatType(), "boolean": it.BooleanType(),
              "date": it.DateType(), "timestamp": it.TimestamptzType(), "timestamp_ntz": it.TimestampType(),
              "binary": it.BinaryType()}  # fmt: skip
    if t in simple:
        return simple[t]
    if str(t).startswith("decimal("):
        p, s = str(t)[len("decimal(") : -1].split(",")
        return it.DecimalType(int(p), int(s))
    raise _unsupported(f"mirror(as_format='iceberg'): column {where} has the type {t}, which Iceberg has no type for")


def _fields(fields: list[dict[str, Any]], next_id: list[int], known: dict[str, int], prefix: str = "") -> list[Any]:
    """Iceberg fields of Delta's schema fields: the field ids are Delta's column mapping ids where it has them (Parquet
    files written under column mapping carry them), else the mirror's id of the column of that name (``known``: full
    name -> id), else the next free one."""
    from pyiceberg.types import NestedField

    out = []
    for f in fields:
        meta = f.get("metadata") or {}
        full = prefix + f["name"]
        if "delta.columnMapping.id" in meta:
            fid = int(meta["delta.columnMapping.id"])
        else:
            fid = known[full] if full in known else _take(next_id)
        kind = _iceberg_type(f["type"], full, next_id, known)
        out.append(NestedField(fid, f["name"], kind, required=not f.get("nullable", True), doc=meta.get("comment")))
    return out


def _take(next_id: list[int]) -> int:
    next_id[0] += 1
    return next_id[0]


def _max_id(fields: list[dict[str, Any]]) -> int:
    top = 0
    for f in fields:
        top = max(top, int((f.get("metadata") or {}).get("delta.columnMapping.id", 0)))
        if isinstance(f["type"], dict) and f["type"].get("type") == "struct":
            top = max(top, _max_id(f["type"]["fields"]))
    return top


def iceberg_schema(delta_schema: dict[str, Any], *, existing: Any = None, last_id: int = 0) -> Any:
    """Delta's schema as an Iceberg schema; ``existing``: the mirror's schema so far (its ids stay with their columns),
    ``last_id``: the highest id the mirror ever gave."""
    from pyiceberg.schema import Schema

    known: dict[str, int] = {}
    if existing is not None:
        known = dict(existing._name_to_id)  # noqa: SLF001 - full column name -> id, as pyiceberg keeps it
    next_id = [max(_max_id(delta_schema["fields"]), last_id, *known.values(), 0)]
    return Schema(*_fields(delta_schema["fields"], next_id, known))


def name_mapping(delta_schema: dict[str, Any], schema: Any, configuration: dict[str, str]) -> str:
    """Iceberg's name mapping (field id -> the column's name in the Parquet files: the physical name under Delta's
    column mapping) as the JSON of ``schema.name-mapping.default``.

    Columns Delta writes into data files besides the table's (the change data feed's, row tracking's) get ids no
    column has, so that an Iceberg reader that wants every file column mapped reads past them."""

    def mapped(fields: list[dict[str, Any]], struct: Any) -> list[dict[str, Any]]:
        out = []
        by_name = {nf.name: nf for nf in struct.fields}
        for f in fields:
            nf = by_name[f["name"]]
            entry: dict[str, Any] = {"field-id": nf.field_id, "names": sorted({_physical(f), f["name"]})}
            if isinstance(f["type"], dict):
                entry["fields"] = mapped(f["type"]["fields"], nf.field_type)
            out.append(entry)
        return out

    extra = [*_DELTA_FILE_COLUMNS, *(configuration[k] for k in _MATERIALIZED if configuration.get(k))]
    hidden = [{"field-id": _HIDDEN_ID + i, "names": [n]} for i, n in enumerate(extra)]
    return json.dumps(mapped(delta_schema["fields"], schema.as_struct()) + hidden)


def _columns(delta_schema: dict[str, Any], schema: Any) -> dict[str, _Column]:
    """Top-level columns by name, with their physical names, Delta types and Iceberg field ids."""
    out = {}
    by_name = {nf.name: nf for nf in schema.fields}
    for f in delta_schema["fields"]:
        kind = f["type"] if isinstance(f["type"], str) else "struct"
        out[f["name"]] = _Column(f["name"], _physical(f), kind, by_name[f["name"]].field_id)
    return out


# --- the Delta log, one version at a time ----------------------------------------------------------
@dataclass
class DeltaState:
    """What the mirror needs of the Delta table at one version."""

    version: int
    schema: dict[str, Any]
    partition_columns: list[str]
    reader_features: list[str]
    configuration: dict[str, str] = field(default_factory=dict)


@dataclass
class VersionChange:
    """One Delta commit as the mirror applies it."""

    version: int
    adds: list[dict[str, Any]] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    protocol: dict[str, Any] | None = None


def _delta_table(location: str, version: int | None = None) -> Any:
    from deltalake import DeltaTable

    return DeltaTable(location, version=version, storage_options=delta_storage_options(location))


def delta_state(dt: Any) -> DeltaState:
    meta = dt.metadata()
    return DeltaState(int(dt.version()), json.loads(dt.schema().to_json()), list(meta.partition_columns),
                      list(dt.protocol().reader_features or []), dict(meta.configuration or {}))  # fmt: skip


def version_changes(location: str, name: str, first: int, last: int) -> list[VersionChange] | None:
    """The commits ``first..last`` from the log's commit files; None when one of them is gone (a checkpoint replaced
    it): the mirror then rebuilds from the current state instead."""
    entries = log_entries(location, name)
    have = {e.version for e in entries if e.name == f"{e.version:020d}.json"}
    if any(v not in have for v in range(first, last + 1)):
        return None
    out = {v: VersionChange(v) for v in range(first, last + 1)}
    for e in entries:
        if not first <= e.version <= last or e.name != f"{e.version:020d}.json":
            continue
        change = out[e.version]
        for kind, action in commit_actions(
            location, [e], e.version, e.version, ("add", "remove", "metaData", "protocol")
        ):
            if kind == "add":
                change.adds.append(action)
            elif kind == "remove":
                change.removes.append(action["path"])
            elif kind == "metaData":
                change.metadata = action
            else:
                change.protocol = action
    return [out[v] for v in sorted(out)]


def _file_path(location: str, path: str) -> str:
    """A log path (URI-encoded, relative to the table or absolute) as the data file's location."""
    return path if "://" in path else f"{location.rstrip('/')}/{unquote(path)}"


# --- values -------------------------------------------------------------------------------------------
def _partition_value(raw: Any, kind: str) -> Any:
    """A partition value (the log's string, or delta-rs's typed value) in Iceberg's internal form."""
    if raw is None:
        return None
    if kind in _INT_TYPES:
        return int(raw)
    if kind == "date":
        d = raw if isinstance(raw, date) else date.fromisoformat(str(raw))
        return (d - date(1970, 1, 1)).days
    if kind == "boolean":
        return raw if isinstance(raw, bool) else str(raw).lower() == "true"
    return str(raw)


def _bound(value: Any, kind: str) -> bytes | None:
    from pyiceberg import types as it
    from pyiceberg.conversions import to_bytes

    if value is None or kind not in _BOUND_TYPES:
        return None
    if kind == "date":
        d = value if isinstance(value, date) else date.fromisoformat(str(value))
        return to_bytes(it.DateType(), (d - date(1970, 1, 1)).days)
    return to_bytes(it.LongType() if kind == "long" else it.IntegerType(), int(value))


def _records(path: str) -> int:
    """A file's row count from its Parquet footer, for a log entry written without statistics."""
    import pyarrow.parquet as pq

    filesystem, p = fs_for(path)
    with filesystem.open_input_file(p) as fh:
        return int(pq.ParquetFile(fh).metadata.num_rows)


@dataclass
class FileFacts:
    """One data file of the Delta log, format-neutral: where it is, its partition and what its statistics say."""

    path: str
    size: int
    partition: dict[str, Any]
    records: int | None
    nulls: dict[str, int] = field(default_factory=dict)
    mins: dict[str, Any] = field(default_factory=dict)
    maxs: dict[str, Any] = field(default_factory=dict)


def facts_of_add(location: str, add: dict[str, Any]) -> FileFacts:
    stats = json.loads(add.get("stats") or "{}")
    return FileFacts(_file_path(location, add["path"]), int(add["size"]), dict(add.get("partitionValues") or {}),
                     stats.get("numRecords"), dict(stats.get("nullCount") or {}), dict(stats.get("minValues") or {}),
                     dict(stats.get("maxValues") or {}))  # fmt: skip


def facts_of_table(location: str, dt: Any) -> list[FileFacts]:
    """The current files of a delta-rs table (checkpoints included) with their flattened statistics."""
    out = []
    for r in arrow(dt.get_add_actions(flatten=True)).to_pylist():
        part: dict[str, Any] = {}
        nulls: dict[str, Any] = {}
        mins: dict[str, Any] = {}
        maxs: dict[str, Any] = {}
        for k, v in r.items():
            head, _, col = k.partition(".")
            target = {"partition": part, "null_count": nulls, "min": mins, "max": maxs}.get(head)
            if target is not None and col:
                target[col] = v
        out.append(FileFacts(_file_path(location, str(r["path"])), int(r["size_bytes"]), part, r.get("num_records"),
                             nulls, mins, maxs))  # fmt: skip
    return out


def data_file(facts: FileFacts, columns: dict[str, _Column], partition_columns: list[str], spec_id: int) -> Any:
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    values = []
    for name in partition_columns:
        col = columns[name]
        raw = facts.partition.get(col.physical, facts.partition.get(name))
        values.append(_partition_value(raw, col.kind))
    records = facts.records if facts.records is not None else _records(facts.path)
    nulls, lower, upper = {}, {}, {}
    for col in columns.values():
        if col.name in partition_columns:
            continue
        key = col.physical if col.physical in facts.mins or col.physical in facts.nulls else col.name
        if isinstance(facts.nulls.get(key), int):
            nulls[col.field_id] = int(facts.nulls[key])
        if (lo := _bound(facts.mins.get(key), col.kind)) is not None:
            lower[col.field_id] = lo
        if (hi := _bound(facts.maxs.get(key), col.kind)) is not None:
            upper[col.field_id] = hi
    df = DataFile.from_args(
        content=DataFileContent.DATA, file_path=facts.path, file_format=FileFormat.PARQUET, partition=Record(*values),
        record_count=int(records), file_size_in_bytes=facts.size, column_sizes={}, value_counts={},
        null_value_counts=nulls, nan_value_counts={}, lower_bounds=lower, upper_bounds=upper, key_metadata=None,
        split_offsets=None, equality_ids=None, sort_order_id=None,
    )  # fmt: skip
    df.spec_id = spec_id
    return df
