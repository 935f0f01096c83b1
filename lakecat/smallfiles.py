"""What a "small" file is and which partitions a bin-pack compaction merges: one rule for the planners of both
engines (Spark's procedures and the light libraries).

A file is small below ``SMALL_FILE_RATIO`` of the target file size (``lakecat.compact.target-file-size``): Iceberg's
``min-file-size-bytes`` default, and the ``minFileSize`` lakecat gives Delta's OPTIMIZE. A partition is merged when at
least two of its files are small.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

DEFAULT_TARGET_FILE_SIZE = 128 * 1000**2
SMALL_FILE_RATIO = 0.75  # a file below 75% of the target is "small" (Iceberg's min-file-size-bytes default)


class _Sized(Protocol):
    @property
    def size(self) -> int: ...

    @property
    def partition(self) -> str: ...


F = TypeVar("F", bound=_Sized)


def small_file_bytes(target: int) -> int:
    """The size under which a file is small for a compaction to ``target`` bytes."""
    return int(target * SMALL_FILE_RATIO)


def small_groups(files: Iterable[F], target: int) -> dict[str, list[F]]:
    """The small files of each partition that has two or more of them (partition text -> files): what a bin-pack
    compaction to ``target`` merges."""
    limit = small_file_bytes(target)
    by_part: dict[str, list[F]] = {}
    for f in files:
        if f.size < limit:
            by_part.setdefault(f.partition, []).append(f)
    return {p: group for p, group in by_part.items() if len(group) >= 2}
