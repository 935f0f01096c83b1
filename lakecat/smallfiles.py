"""One small-file rule for ``health``, ``compact``, ``maintain`` (``--auto`` too) and both engines' planners.

- A file is **small** below ``SMALL_FILE_RATIO`` (75%) of the target file size (``lakecat.compact.target-file-size``,
  default 128 MB): Iceberg's ``min-file-size-bytes`` default, and the ``minFileSize`` lakecat gives Delta's OPTIMIZE.
- A partition is **due** for compaction once it holds ``lakecat.compact.min-input-files`` small files (default 5,
  Iceberg's own ``min-input-files``): ``health`` then says ``compact``, ``maintain`` (and ``--auto``) compacts, and
  ``compact`` marks the partition due. An explicit ``compact`` merges every partition with two or more small files.
- ``lakecat.health.small-files`` is the key's former name (a count over the whole table); set alone, it is read as
  ``lakecat.compact.min-input-files``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from .units import exact_size, parse_size

DEFAULT_TARGET_FILE_SIZE = 128 * 1000**2
SMALL_FILE_RATIO = 0.75  # a file below 75% of the target is "small" (Iceberg's min-file-size-bytes default)
DEFAULT_MIN_INPUT_FILES = 5  # a partition is due for compaction once it holds this many small files
TARGET_KEY = "lakecat.compact.target-file-size"
MIN_INPUT_FILES_KEY = "lakecat.compact.min-input-files"
LEGACY_SMALL_FILES_KEY = "lakecat.health.small-files"


class _Sized(Protocol):
    @property
    def size(self) -> int: ...

    @property
    def partition(self) -> str: ...


F = TypeVar("F", bound=_Sized)


def small_file_bytes(target: int) -> int:
    """The size under which a file is small for a compaction to ``target`` bytes."""
    return int(target * SMALL_FILE_RATIO)


@dataclass(frozen=True)
class SmallFileRule:
    """What is small (``small_bytes``) and when a partition is due (``min_files`` small files in it)."""

    target: int
    min_files: int

    @property
    def small_bytes(self) -> int:
        return small_file_bytes(self.target)

    def due(self, small_in_partition: int) -> bool:
        return small_in_partition >= self.min_files

    def describe(self) -> str:
        """The rule in the words every command's message uses."""
        return (f"{self.min_files} or more files under {exact_size(self.small_bytes)} (75% of the "
                f"{exact_size(self.target)} target)")  # fmt: skip


def small_file_rule(policy: dict[str, str], target: int | str | None = None) -> SmallFileRule:
    """The rule from a resolved policy (``target`` overrides the policy's target file size)."""
    if target is None:
        target = policy.get(TARGET_KEY) or DEFAULT_TARGET_FILE_SIZE
    minimum = policy.get(MIN_INPUT_FILES_KEY) or policy.get(LEGACY_SMALL_FILES_KEY) or DEFAULT_MIN_INPUT_FILES
    return SmallFileRule(parse_size(target), max(2, int(minimum)))


def small_groups(files: Iterable[F], target: int) -> dict[str, list[F]]:
    """The small files of each partition that has two or more of them (partition text -> files): what a bin-pack
    compaction to ``target`` merges."""
    limit = small_file_bytes(target)
    by_part: dict[str, list[F]] = {}
    for f in files:
        if f.size < limit:
            by_part.setdefault(f.partition, []).append(f)
    return {p: group for p, group in by_part.items() if len(group) >= 2}
