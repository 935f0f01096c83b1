"""Batch-report files: how a batch written in a Spark Connect engine's worker tells the ``lakecat`` process its counts.

Each report is ``<directory>/<batch id>.json`` in this run's own directory beside the checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from dataclasses import asdict
from typing import Any

from ..config import pyarrow_filesystem
from .state import BatchStats


def write_batch_report(directory: str, stats: BatchStats, unknown_names: list[str], added_columns: list[str]) -> None:
    """``<directory>/<batch id>.json``, written whole or not at all (a temporary name, then a rename)."""
    doc: dict[str, Any] = {"stats": asdict(stats), "unknown_names": unknown_names, "added_columns": added_columns}
    fs, path = pyarrow_filesystem(directory)
    fs.create_dir(path, recursive=True)
    tmp = f"{path}/.{stats.batch_id}.{uuid.uuid4().hex[:8]}.tmp"
    with fs.open_output_stream(tmp) as out:
        out.write(json.dumps(doc).encode())
    fs.move(tmp, f"{path}/{stats.batch_id}.json")


def read_batch_reports(directory: str, skip: set[int]) -> list[tuple[BatchStats, list[str], list[str]]]:
    """The batch reports in ``directory`` whose batch id is not in ``skip``, in batch order: each batch's counters,
    the unknown field names its records carried and the columns the stream had added by then."""
    from pyarrow import fs as pafs

    fs, path = pyarrow_filesystem(directory)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except OSError:
        return []
    out: list[tuple[BatchStats, list[str], list[str]]] = []
    for info in infos:
        name = info.base_name
        if not (name.endswith(".json") and name[:-5].isdigit()) or int(name[:-5]) in skip:
            continue
        with fs.open_input_stream(info.path) as fh:
            doc = json.loads(fh.read())
        out.append(
            (BatchStats(**doc["stats"]), list(doc.get("unknown_names") or []), list(doc.get("added_columns") or []))
        )
    return sorted(out, key=lambda item: item[0].batch_id)


def remove_dir(directory: str) -> None:
    with contextlib.suppress(OSError):
        fs, path = pyarrow_filesystem(directory)
        fs.delete_dir(path)
