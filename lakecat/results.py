"""Result dataclasses: every API call returns one, every one has ``to_dict()`` (the JSON contract)."""

from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass, field
from typing import Any


class Result:
    """Base of all results: ``to_dict()`` for JSON, ``_repr_html_`` for notebooks."""

    def to_dict(self) -> Any:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    def _repr_html_(self) -> str:
        data = self.to_dict()
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in (data.items() if isinstance(data, dict) else enumerate(data))
        )
        return f"<table>{rows}</table>"


@dataclass
class TableInfo(Result):
    """One row of ``list``."""

    name: str
    format: str
    location: str


@dataclass
class TableList(Result):
    tables: list[TableInfo]

    def to_dict(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [t.to_dict() for t in self.tables]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.tables)


@dataclass
class ColumnInfo(Result):
    name: str
    type: str
    nullable: bool
    comment: str | None = None
    generated: str | None = None


@dataclass
class TableDescription(Result):
    """What ``describe`` answers."""

    name: str
    format: str
    location: str
    schema: list[ColumnInfo]
    partitioning: list[str]
    properties: dict[str, str]
    current_version: int | None
    files: int
    size_bytes: int
    records: int | None = None
    last_updated: str | None = None
    capabilities: dict[str, bool] = field(default_factory=dict)


@dataclass
class DropResult(Result):
    name: str
    format: str
    location: str
    purged: bool


@dataclass
class CatalogInfo(Result):
    name: str
    source: str
    active: bool
