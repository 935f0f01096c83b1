"""Per-format adapters, loaded lazily by name (the way pyiceberg loads catalog backends).

A format is registered as ``name -> "module:Class"``; the built-in ones below are registered the same
way a third-party (or test) format is, through :func:`register_format`. Nothing outside this package
asks which format a table has: it asks the adapter (see ``lakecat.formats.base.TableFormat``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..errors import InvalidArgumentError, UnsupportedOperationError

if TYPE_CHECKING:
    from .base import LocalServerFactory, TableFormat

_REGISTRY: dict[str, str] = {}
_BUILTIN: list[str] = []
_loaded: dict[str, TableFormat] = {}


def register_format(name: str, target: str, *, builtin: bool = False) -> None:
    """Make the adapter class at ``target`` (``"package.module:ClassName"``) the format ``name``."""
    key = str(name).lower()
    _REGISTRY[key] = target
    _loaded.pop(key, None)
    if builtin and key not in _BUILTIN:
        _BUILTIN.append(key)


def unregister_format(name: str) -> None:
    key = str(name).lower()
    if key in _BUILTIN:
        raise InvalidArgumentError(f"format {name!r} is built in")
    _REGISTRY.pop(key, None)
    _loaded.pop(key, None)


register_format("iceberg", "lakecat.formats.iceberg:IcebergFormat", builtin=True)
register_format("delta", "lakecat.formats.delta:DeltaFormat", builtin=True)


def format_names(*, builtin_only: bool = False) -> list[str]:
    """Registered format names, built-in ones first."""
    return list(_BUILTIN) if builtin_only else [*_BUILTIN, *(n for n in _REGISTRY if n not in _BUILTIN)]


def get_format(name: str) -> TableFormat:
    """The adapter registered as ``name``."""
    key = str(name).lower()
    if key not in _REGISTRY:
        raise InvalidArgumentError(f"unknown format {name!r}: use {' or '.join(format_names())}")
    if key not in _loaded:
        module, _, cls = _REGISTRY[key].partition(":")
        _loaded[key] = getattr(importlib.import_module(module), cls)()
    return _loaded[key]


def all_formats() -> list[TableFormat]:
    return [get_format(n) for n in format_names()]


def local_server(name: str) -> LocalServerFactory:
    """The development server ``name`` (``lakecat local <name>``) of the format that ships it."""
    for adapter in all_formats():
        servers = adapter.local_servers()
        if name in servers:
            return servers[name]
    raise UnsupportedOperationError(f"local {name}: no table format ships such a server")
