"""Durations, sizes and timestamps as users type them and as lakecat shows them (a public module: ``lakecat.units``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from .errors import InvalidArgumentError

__all__ = ["exact_size", "format_duration", "from_millis", "human_size", "iso", "parse_duration", "parse_size", "parse_timestamp",
           "plural"]  # fmt: skip

_DURATION = re.compile(r"\s*(\d+)\s*(s|m|h|d|w)\s*\Z", re.IGNORECASE)
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?\s*\Z", re.IGNORECASE)
_SIZE_UNITS = {
    "b": 1,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}  # fmt: skip


MAX_DURATION_S = 1000 * 366 * 86400


def parse_duration(text: str | timedelta) -> timedelta:
    """Parse ``30m``, ``12h``, ``7d``, ``2w`` (also ``45s``) into a timedelta."""
    if isinstance(text, timedelta):
        return text
    m = _DURATION.match(str(text))
    if not m:
        raise InvalidArgumentError(f"invalid duration {text!r}: use e.g. 30m, 12h, 7d or 2w")
    seconds = int(m.group(1)) * _DURATION_UNITS[m.group(2).lower()]
    if seconds > MAX_DURATION_S:  # a window reaching before year 1 cannot be computed (and is surely a typo)
        raise InvalidArgumentError(f"invalid duration {text!r}: longer than 1000 years")
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """The shortest exact spelling of a duration in lakecat's units."""
    secs = int(delta.total_seconds())
    for unit in ("w", "d", "h", "m"):
        if secs and secs % _DURATION_UNITS[unit] == 0:
            return f"{secs // _DURATION_UNITS[unit]}{unit}"
    return f"{secs}s"


def parse_size(text: str | int) -> int:
    """Parse ``128MB``, ``1GiB`` or a plain byte count into bytes (MB = 10^6, MiB = 2^20)."""
    if isinstance(text, int):
        return text
    m = _SIZE.match(str(text))
    if not m:
        raise InvalidArgumentError(f"invalid size {text!r}: use e.g. 128MB or 1GiB")
    value = float(m.group(1)) * _SIZE_UNITS[(m.group(2) or "b").lower()]
    if value < 1:
        raise InvalidArgumentError(f"invalid size {text!r}: must be at least one byte")
    return int(value)


def human_size(n: int | float | None) -> str:
    """Bytes in binary units, one decimal: ``human_size(1536)`` is ``1.5 KiB``; None is ``-``."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value} B"  # pragma: no cover


def exact_size(n: int | None) -> str:
    """A size setting as it is spelled (``128MB``, ``1GiB``) when it is a whole number of such units, else ``human_size``."""
    if n:
        for unit, size in (("TB", 1000**4), ("TiB", 1024**4), ("GB", 1000**3), ("GiB", 1024**3), ("MB", 1000**2),
                           ("MiB", 1024**2), ("KB", 1000), ("KiB", 1024)):  # fmt: skip
            if n % size == 0:
                return f"{n // size}{unit}"
    return human_size(n)


def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    """A count and its noun, agreeing: ``plural(1, "batch", "batches")`` is ``1 batch``, ``plural(1204, "file")``
    is ``1,204 files`` (the plural defaults to the singular plus ``s``)."""
    return f"{n:,} {singular if n == 1 else (plural_form or singular + 's')}"


def parse_timestamp(text: str | datetime) -> datetime:
    """Parse an ISO 8601 timestamp; a naive one means UTC. Returns an aware UTC datetime."""
    if isinstance(text, datetime):
        dt = text
    else:
        raw = str(text).strip()
        if raw.endswith(("Z", "z")):
            raw = raw[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(raw)
        except ValueError:
            raise InvalidArgumentError(
                f"invalid timestamp {text!r}: use ISO 8601, e.g. 2026-01-31T12:00:00 (naive means UTC)"
            ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def iso(dt: datetime | None) -> str | None:
    """ISO 8601 in UTC with a trailing Z, millisecond precision."""
    if dt is None:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def from_millis(ms: int) -> datetime:
    """Milliseconds since the epoch (a commit's timestamp) as an aware UTC datetime."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
