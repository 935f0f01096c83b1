"""The stream's checkpoint: where it lives by default, and the repair of a first batch a kill left half-logged."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..config import pyarrow_filesystem

if TYPE_CHECKING:
    from ..config import CatalogConfig
    from ..identifiers import TableIdent
    from ..sources import Source

log = logging.getLogger(__name__)


def default_checkpoint(config: CatalogConfig, ident: TableIdent, source: Source, branch: str | None = None) -> str:
    """``<warehouse>/_lakecat/checkpoints/<ns>.<table>/<source fingerprint>`` (``…/<ns>.<table>@<branch>/…`` for a
    stream into a branch: another stream, with its own offsets)."""
    target = f"{ident}@{branch}" if branch else str(ident)
    return f"{config.warehouse_uri.rstrip('/')}/_lakecat/checkpoints/{target}/{source.fingerprint()}"


def clear_unfinished_first_batch(checkpoint: str) -> list[str]:
    """Remove what a process killed while Spark wrote a checkpoint's first offset-log entry left behind.

    Spark writes each log entry under a hidden temporary name, then renames it. A ``kill -9`` between the two leaves
    ``offsets/.0.<uuid>.tmp`` (and its ``.crc``) and no entry ``0``; Spark 4 then refuses batch 0 on every restart
    (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY, "offsets should be empty on batch 0"). With no entry in the log, the
    stream has committed nothing anywhere, so only such hidden temporary files are removed, and only then.
    """
    from pyarrow import fs as pafs

    try:
        fs, path = pyarrow_filesystem(checkpoint)
        infos = fs.get_file_info(pafs.FileSelector(f"{path.rstrip('/')}/offsets", allow_not_found=True))
    except (OSError, ValueError):
        return []
    if any(i.base_name.isdigit() for i in infos):
        return []
    removed = []
    for info in infos:
        if info.type == pafs.FileType.File and info.base_name.startswith(".") and ".tmp" in info.base_name:
            fs.delete_file(info.path)
            removed.append(info.path)
    if removed:
        log.warning("checkpoint %s: removed %d temporary file(s) of a first batch that was never logged",
                    checkpoint, len(removed))  # fmt: skip
    return removed
