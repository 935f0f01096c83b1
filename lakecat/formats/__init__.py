"""Per-format adapters, loaded lazily by name (the way pyiceberg loads catalog backends)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..errors import InvalidArgumentError

if TYPE_CHECKING:
    from .base import TableFormat

FORMATS = {
    "iceberg": ("lakecat.formats.iceberg", "IcebergFormat"),
    "delta": ("lakecat.formats.delta", "DeltaFormat"),
}
_loaded: dict[str, TableFormat] = {}


def get_format(name: str) -> TableFormat:
    """The adapter for ``iceberg`` or ``delta``."""
    key = str(name).lower()
    if key not in FORMATS:
        raise InvalidArgumentError(f"unknown format {name!r}: use iceberg or delta")
    if key not in _loaded:
        module, cls = FORMATS[key]
        _loaded[key] = getattr(importlib.import_module(module), cls)()
    return _loaded[key]
