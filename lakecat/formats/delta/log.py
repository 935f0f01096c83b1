"""Reading a Delta table's ``_delta_log`` directly (commit files, checkpoints, their times and actions)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import LakecatError
from ...files import fs_for, norm_path

_LOG_FILE = re.compile(r"(\d{20})\.(json|crc|checkpoint(?:\.\d+\.\d+)?(?:\.[0-9a-f-]+)?\.parquet)\Z")
_COMPACTED = re.compile(r"(\d{20})\.(\d{20})\.compacted\.json\Z")


def arrow(data: Any) -> Any:
    """A delta-rs answer (an arro3 table: ``get_add_actions``, ``deletion_vectors``) as a pyarrow ``Table``, through the
    Arrow C stream. Not ``pyarrow.table(data)``: it asks pandas whether ``data`` is a DataFrame, and that imports pandas
    (slow, and memory a process that has no use for pandas keeps)."""
    import pyarrow as pa

    return pa.RecordBatchReader.from_stream(data).read_all()


def add_actions(dt: Any) -> Any:
    """The current files of a delta-rs ``DeltaTable`` as a pyarrow ``Table`` of the columns lakecat reads: ``path``,
    ``size_bytes``, ``num_records`` (when the log has stats) and ``partition.<column>`` (none of the per-column stats)."""
    table = arrow(dt.get_add_actions(flatten=True))
    keep = ("path", "size_bytes", "num_records")
    return table.select([c for c in table.column_names if c in keep or c.startswith("partition.")])


def live_files(dt: Any, location: str) -> list[tuple[str, int, str, int | None]]:
    """(full path, bytes, ``col=value/...`` partition, records or None) of each current file of a delta-rs
    ``DeltaTable`` at ``location`` (log paths relative to it are joined to it)."""
    base = location.rstrip("/")
    out = []
    for r in add_actions(dt).to_pylist():
        part = "/".join(f"{k[len('partition.') :]}={v}" for k, v in r.items() if k.startswith("partition."))
        path = str(r["path"])
        out.append((path if "://" in path else f"{base}/{path}", int(r["size_bytes"]), part, r.get("num_records")))
    return out


@dataclass
class LogEntry:
    version: int
    name: str
    path: str
    mtime_ms: int


def log_entries(location: str, name: str) -> list[LogEntry]:
    """The files of the table's log (commits, checksums, checkpoints, compacted ranges)."""
    from pyarrow import fs

    filesystem, base = fs_for(location.rstrip("/") + "/_delta_log")
    try:
        infos = filesystem.get_file_info(fs.FileSelector(base, recursive=False))
    except FileNotFoundError as e:
        raise LakecatError(f"table {name}: no Delta log at {location}") from e
    out = []
    for info in infos:
        base_name = info.base_name.lstrip(".")
        m = _LOG_FILE.match(base_name) or _COMPACTED.match(base_name)
        if not m:  # an entry of a log file's name that is not a file is kept: reading it fails, rather than the
            continue  # version looking absent (a version absent from the log protects none of its files)
        version = int(m.group(2)) if _COMPACTED.match(base_name) else int(m.group(1))  # compacted: its last version
        mtime = int(info.mtime.timestamp() * 1000) if info.mtime else 0
        out.append(LogEntry(version, info.base_name, info.path, mtime))
    return out


def log_start(entries: list[LogEntry]) -> int | None:
    """The oldest version the log can be read from: 0 while its commit is there, else the oldest checkpoint's (a
    version before it is gone from the log); None when the log has neither."""
    starts = [e.version for e in entries if ".checkpoint" in e.name or (e.version == 0 and e.name == f"{0:020d}.json")]
    return min(starts) if starts else None


_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def deletion_vector_file(dv: dict[str, Any] | None) -> str | None:
    """The file a deletion vector descriptor names, as the protocol spells it: a path relative to the table
    (storage ``u``: an optional directory prefix, then the file's UUID in Z85), an absolute one (``p``), or None
    (``i``: inline in the log)."""
    if not dv:
        return None
    kind, value = dv.get("storageType"), str(dv.get("pathOrInlineDv") or "")
    if kind == "p":
        return value or None
    if kind != "u" or len(value) < 20:
        return None
    prefix, encoded = value[:-20], value[-20:]
    raw = b""
    for i in range(0, 20, 5):
        n = 0
        for ch in encoded[i : i + 5]:
            n = n * 85 + _Z85.index(ch)
        raw += n.to_bytes(4, "big")
    name = f"deletion_vector_{uuid.UUID(bytes=raw)}.bin"
    return f"{prefix}/{name}" if prefix else name


def commit_times(entries: list[LogEntry]) -> dict[int, int]:
    """version -> commit time (ms): the commit file's modification time, made monotonic like Delta does."""
    times: dict[int, int] = {}
    for e in sorted(entries, key=lambda e: e.version):
        if e.name == f"{e.version:020d}.json":
            times[e.version] = e.mtime_ms
    last = -1
    for v in sorted(times):
        times[v] = last = max(times[v], last + 1)
    return times


def commit_actions(
    location: str, entries: list[LogEntry], first: int, last: int, kinds: tuple[str, ...]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(kind, action) of every action of the ``kinds`` in the commits ``first..last`` (inclusive) still in the log."""
    filesystem, _ = fs_for(location)
    for e in entries:
        if not first <= e.version <= last or e.name != f"{e.version:020d}.json":
            continue
        with filesystem.open_input_stream(e.path) as fh:
            for line in fh.read().decode("utf-8").splitlines():
                if not any(f'"{kind}"' in line for kind in kinds):
                    continue
                action = json.loads(line)
                for kind in kinds:
                    if isinstance(action.get(kind), dict):
                        yield kind, action[kind]


def log_actions(
    location: str, entries: list[LogEntry], first: int, last: int, kinds: tuple[str, ...] = ("add", "remove")
) -> tuple[set[str], ...]:
    """Normalized paths of the ``kinds`` of file actions (``add``, ``remove``, ``cdc``) of the commits
    ``first..last`` (inclusive) still in the log, one set per kind."""
    base = location.rstrip("/")
    found: dict[str, set[str]] = {kind: set() for kind in kinds}
    for kind, action in commit_actions(location, entries, first, last, kinds):
        path = action["path"]
        found[kind].add(norm_path(path if "://" in path else f"{base}/{path}"))
    return tuple(found[kind] for kind in kinds)


def log_transactions(location: str, entries: list[LogEntry], first: int, last: int) -> list[str]:
    """The application ids of the transactions (``txn`` actions: ingest batches) of the commits ``first..last``."""
    return sorted(
        {str(txn["appId"]) for _, txn in commit_actions(location, entries, first, last, ("txn",)) if txn.get("appId")}
    )


def last_checkpoint(location: str) -> int | None:
    filesystem, base = fs_for(location.rstrip("/") + "/_delta_log/_last_checkpoint")
    try:
        with filesystem.open_input_stream(base) as fh:
            return int(json.loads(fh.read().decode("utf-8"))["version"])
    except (FileNotFoundError, KeyError, ValueError, OSError):
        return None
