"""Tables that change shape: schema evolution, partition evolution and named versions, for every format.

This module is format-neutral: it parses and validates what the caller asks against the table's current
metadata (light path), checks the format can do every part of it before anything changes, and then asks
the adapter for one commit per change (``TableFormat.add_column``, ``rename_column``, ``drop_column``,
``widen_column``, ``set_column_comment``, ``evolve_partitioning``, ``create_tag`` ...). A change that needs
the table to enable something first (Delta's column mapping) is refused unless the caller confirmed it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from .errors import InvalidArgumentError, RefExistsError, VersionNotFoundError, invalid
from .identifiers import validate_part
from .partitioning import parse_partition_spec, source_column
from .results import AlterResult, TagResult, TagsResult
from .schema import Column, SchemaChange, parse_column_def, parse_type, widening_allowed
from .units import format_duration, parse_duration
from .versions import _check_int, find_ref, resolve_version

if TYPE_CHECKING:
    from .protocols import TableLike

_REF_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}\Z")
_CAPABILITY = {"add": "add_column", "rename": "rename_column", "drop": "drop_column", "widen": "widen_column",
               "comment": "comment_column"}  # fmt: skip
_WHAT = {"add": "alter(add_columns)", "rename": "alter(rename_columns)", "drop": "alter(drop_columns)",
         "widen": "alter(widen)", "comment": "alter(comments)"}  # fmt: skip


def _pairs(items: Mapping[str, str] | Iterable[str] | None, option: str) -> list[tuple[str, str]]:
    if isinstance(items, Mapping):
        return [(str(k).strip(), str(v).strip()) for k, v in items.items()]
    out = []
    for item in items or []:
        if "=" not in item:
            python = {"--rename-column": "rename_columns", "--widen": "widen", "--set-comment": "comments"}[option]
            raise invalid(f"invalid {python} item {item!r}: give a mapping "
                          + ("{'old': 'new'}" if python == "rename_columns" else "{'column': 'value'}"),
                          f"invalid {option} {item!r}: use {'old=new' if 'rename' in option else 'column=value'}")  # fmt: skip
        k, v = item.split("=", 1)
        out.append((k.strip(), v.strip()))
    return out


def schema_changes(
    *,
    add_columns: Iterable[str] = (),
    rename_columns: Mapping[str, str] | Iterable[str] = (),
    drop_columns: Iterable[str] = (),
    widen: Mapping[str, str] | Iterable[str] = (),
    comments: Mapping[str, str] | Iterable[str] = (),
) -> list[SchemaChange]:
    """Schema changes from ``"c INT AFTER x"`` column definitions, column names and mappings (``{"old": "new"}``,
    ``{"c": "BIGINT"}``, ``{"c": "text"}``; the older ``"old=new"`` strings are read too)."""
    changes: list[SchemaChange] = []
    for text in add_columns or []:
        col, position = parse_column_def(text)
        changes.append(
            SchemaChange("add", col.name, type=col.type, nullable=col.nullable, comment=col.comment, position=position)
        )
    for old, new in _pairs(rename_columns, "--rename-column"):
        changes.append(
            SchemaChange(
                "rename", validate_part(old, what="column name"), new_name=validate_part(new, what="column name")
            )
        )
    for name in drop_columns or []:
        changes.append(SchemaChange("drop", validate_part(name.strip(), what="column name")))
    for name, type_text in _pairs(widen, "--widen"):
        changes.append(SchemaChange("widen", validate_part(name, what="column name"), type=parse_type(type_text)))
    for name, text in _pairs(comments, "--set-comment"):
        changes.append(SchemaChange("comment", validate_part(name, what="column name"), comment=text.strip("'\"")))
    return changes


def _check(changes: list[SchemaChange], columns: list[Column], partitioning: list[str], records: int | None) -> None:
    """Refuse (exit 2) what cannot be right whatever the format: the schema is simulated change by change."""
    cols = {c.name.lower(): c for c in columns}
    sources = {source_column(w).lower() for w in partitioning}
    for ch in changes:
        key = ch.column.lower()
        if ch.kind == "add":
            if key in cols:
                raise InvalidArgumentError(
                    f"alter(add_columns) {ch.column}: the table has a column {cols[key].name} already"
                )
            if ch.position and ch.position.startswith("AFTER ") and ch.position[6:].lower() not in cols:
                raise InvalidArgumentError(
                    f"alter(add_columns) {ch.column} {ch.position}: no column {ch.position[6:]!r}"
                )
            if not ch.nullable and records != 0:
                raise InvalidArgumentError(f"alter(add_columns) {ch.column} NOT NULL: the table has rows, which would have "
                                           "no value for it; add it nullable")  # fmt: skip
            cols[key] = Column(ch.column, ch.type or "", ch.nullable, ch.comment)
            continue
        if key not in cols:
            raise InvalidArgumentError(
                f"alter: no column {ch.column!r} in the table (columns: {', '.join(c.name for c in cols.values())})"
            )
        if ch.kind == "rename":
            new = (ch.new_name or "").lower()
            if new in cols and new != key:
                raise InvalidArgumentError(f"alter(rename_columns) {ch.column}={ch.new_name}: the table has a column "
                                           f"{cols[new].name} already")  # fmt: skip
            old = cols.pop(key)
            cols[new] = Column(ch.new_name or "", old.type, old.nullable, old.comment)
            if key in sources:
                sources = (sources - {key}) | {new}
        elif ch.kind == "drop":
            if key in sources:
                raise InvalidArgumentError(f"alter(drop_columns) {ch.column}: the table is partitioned by it "
                                           f"({', '.join(partitioning)}); change the partitioning first")  # fmt: skip
            if len(cols) == 1:
                raise InvalidArgumentError(f"alter(drop_columns) {ch.column}: it is the table's only column")
            cols.pop(key)
        elif ch.kind == "widen":
            old_type = cols[key].type
            if old_type == ch.type:
                raise InvalidArgumentError(f"alter(widen) {ch.column}={ch.type}: the column is {old_type} already")
            if not widening_allowed(old_type, ch.type or ""):
                raise InvalidArgumentError(
                    f"alter(widen) {ch.column}={ch.type}: {old_type} -> {ch.type} is not a widening (allowed: INT -> BIGINT, "
                    "FLOAT -> DOUBLE, DECIMAL(p,s) -> DECIMAL(p2,s) with p2 > p); a narrowing or another type change "
                    "would make existing values unreadable"
                )
            cols[key] = Column(cols[key].name, ch.type or "", cols[key].nullable, cols[key].comment)


def alter(
    table: TableLike,
    *,
    changes: list[SchemaChange] | None = None,
    partition_by: str | list[str] | None = None,
    rewrite: bool = False,
    dry_run: bool = False,
    confirm: bool = False,
) -> AlterResult:
    """Evolve the table's schema (one commit per change) and/or its partitioning. See ``Table.alter``."""
    changes = list(changes or [])
    if not changes and partition_by is None:
        raise invalid("nothing to change: give add_columns, rename_columns, drop_columns, widen, comments or "
                      "partition_by", "nothing to change: give --add-column, --rename-column, --drop-column, --widen, "
                      "--set-comment or --partition-by")  # fmt: skip
    adapter = table.adapter
    for ch in changes:  # every part is possible before anything changes
        adapter.require(_CAPABILITY[ch.kind], _WHAT[ch.kind])
    if partition_by is not None:
        adapter.require("partition_evolution", "alter(partition_by)")
    desc = table.describe()
    columns = [Column(c.name, c.type, c.nullable, c.comment) for c in desc.schema]
    _check(changes, columns, desc.partitioning, desc.records)
    fields = None
    if partition_by is not None:
        final = {c.name.lower(): c for c in columns}
        for ch in changes:
            if ch.kind == "add":
                final[ch.column.lower()] = Column(ch.column, ch.type or "", ch.nullable)
            elif ch.kind == "rename":
                old = final.pop(ch.column.lower())
                final[(ch.new_name or "").lower()] = Column(ch.new_name or "", old.type, old.nullable)
            elif ch.kind == "drop":
                final.pop(ch.column.lower())
        fields = parse_partition_spec(partition_by, [c for c in final.values() if not _generated(desc, c.name)])
        adapter.check_partitioning(fields, list(final.values()))
    if rewrite and fields is None and not any(ch.kind == "widen" for ch in changes):
        raise InvalidArgumentError("rewrite=True applies with partition_by= or widen=; nothing changed")
    widens = {ch.column: ch.type or "" for ch in changes if ch.kind == "widen"} if rewrite else {}
    if widens and not adapter.supports("widen_by_rewrite"):
        raise InvalidArgumentError(f"alter(widen, rewrite=True): {table.format} tables widen in place and every reader "
                                   "reads the old files with the wider type, so there is nothing to rewrite; drop "
                                   "rewrite=True")  # fmt: skip
    upgrades: list[tuple[str, str]] = []
    for kind in dict.fromkeys(ch.kind for ch in changes if not (widens and ch.kind == "widen")):  # a rewrite needs none
        note = adapter.schema_upgrade(table, kind)
        if note and note not in (n for _, n in upgrades):  # one upgrade serves every change that needs it
            upgrades.append((kind, note))
    if upgrades and not confirm and not dry_run:
        raise InvalidArgumentError(
            f"alter {table.name}: {upgrades[0][1]} — pass confirm=True to enable it; nothing changed"
        ).with_cli_terms({"confirm=True": "--yes"})
    rewrite_files = rewrite_bytes = 0
    if widens:  # planned (or refused: generated columns ...) before anything changes
        rewrite_files, rewrite_bytes = adapter.widen_by_rewrite(table, widens, True)
    if fields is not None:  # the new partitioning planned (or refused) before anything changes
        files, size = adapter.evolve_partitioning(table, fields, rewrite, True)
        if dry_run:
            rewrite_files, rewrite_bytes = rewrite_files + files, rewrite_bytes + size
    if dry_run:
        return _result(table, [str(c) for c in changes] + ([f"partition by {', '.join(map(str, fields))}"] if fields is not None else []),
                       [n for _, n in upgrades], dry_run=True, files=rewrite_files, size=rewrite_bytes)  # fmt: skip
    done: list[str] = []
    for kind, _note in upgrades:
        adapter.apply_schema_upgrade(table, kind)
        table.refresh()
    pending = widens  # every widening in one rewrite, at the first one's place
    for ch in changes:
        if ch.kind == "widen" and widens:
            if pending:
                rewrite_files, rewrite_bytes, pending = *adapter.widen_by_rewrite(table, pending, False), {}
            done.append(f"{ch} (rewritten)")
        else:
            _apply(table, ch)
            done.append(str(ch))
        table.refresh()
    if fields is not None:
        files, size = adapter.evolve_partitioning(table, fields, rewrite, False)
        rewrite_files, rewrite_bytes = rewrite_files + files, rewrite_bytes + size
        table.refresh()
        done.append(f"partition by {', '.join(map(str, fields))}" + (" (rewritten)" if files else ""))
    return _result(table, done, [n for _, n in upgrades], files=rewrite_files, size=rewrite_bytes)


def _apply(table: TableLike, ch: SchemaChange) -> None:
    """One schema change, one commit, in place."""
    adapter = table.adapter
    if ch.kind == "add":
        adapter.add_column(table, Column(ch.column, ch.type or "", ch.nullable, ch.comment), ch.position)
    elif ch.kind == "rename":
        adapter.rename_column(table, ch.column, ch.new_name or "")
    elif ch.kind == "drop":
        adapter.drop_column(table, ch.column)
    elif ch.kind == "widen":
        adapter.widen_column(table, ch.column, ch.type or "")
    else:
        adapter.set_column_comment(table, ch.column, ch.comment or "")


def _generated(desc, name: str) -> bool:  # type: ignore[no-untyped-def]
    return any(c.name == name and c.generated for c in desc.schema)


def _result(table: TableLike, changes: list[str], upgrades: list[str], *, dry_run: bool = False, files: int = 0,
            size: int = 0) -> AlterResult:  # fmt: skip
    desc = table.describe()
    return AlterResult(table.name, table.format, changes, upgrades, desc.schema, desc.partitioning, dict(desc.properties),
                       desc.column_mapping, dry_run, files, size, desc.current_version)  # fmt: skip


# --- named versions ----------------------------------------------------------------------------
def validate_ref_name(name: str, what: str = "tag") -> str:
    if not isinstance(name, str) or not _REF_NAME.match(name):
        raise InvalidArgumentError(f"invalid {what} name {name!r}: use letters, digits, '_', '.', '-' (up to 100), "
                                   "starting with a letter or digit")  # fmt: skip
    return name


def refs(table: TableLike) -> TagsResult:
    """The table's tags and branches (light path)."""
    table.adapter.require("tags", "tags")
    table.refresh()
    found = table.adapter.refs(table)
    return TagsResult(
        table.name, table.format, [r for r in found if r.kind == "tag"], [r for r in found if r.kind == "branch"]
    )


def tag(table: TableLike, name: str, *, version: int | None = None, timestamp: str | None = None,
        retain: str | None = None) -> TagResult:  # fmt: skip
    """Name a version (default: the current one), optionally for ``retain`` only (e.g. ``30d``)."""
    table.adapter.require("tags", "tag")
    validate_ref_name(name)
    window = parse_duration(retain) if retain is not None else None
    if window is not None and window.total_seconds() <= 0:
        raise InvalidArgumentError("invalid retain=: must be positive")
    table.refresh()
    if any(r.name == name for r in table.adapter.refs(table)):
        raise RefExistsError(
            f"{table.name} has a tag or branch {name!r} already; `lakecat untag {table.name} {name}` first"
        )
    if version is None and timestamp is None:
        current = table.adapter.current_version(table)
        if current is None:
            raise VersionNotFoundError(f"{table.name} has no versions yet: nothing to tag")
        version = current
    target = resolve_version(table, version=version, timestamp=timestamp)
    table.adapter.create_tag(table, name, target.version, window)
    table.refresh()
    return TagResult(table.name, table.format, "tagged", name, "tag", target.version,
                     format_duration(window) if window is not None else None, table.adapter.current_version(table))  # fmt: skip


def untag(table: TableLike, name: str) -> TagResult:
    """Remove the tag ``name`` (the version stays until expiry removes it)."""
    found = find_ref(table, name, "tag")
    table.adapter.drop_tag(table, name)
    table.refresh()
    return TagResult(table.name, table.format, "untagged", name, "tag", found.version, found.retain,
                     table.adapter.current_version(table))  # fmt: skip


def branch(table: TableLike, name: str, *, version: int | None = None) -> TagResult:
    """Create a branch at ``version`` (default: the current one) for write-audit-publish."""
    table.adapter.require("branches", "branch")
    validate_ref_name(name, "branch")
    table.refresh()
    if name == "main" or any(r.name == name for r in table.adapter.refs(table)):
        raise RefExistsError(f"{table.name} has a tag or branch {name!r} already")
    table.adapter.create_branch(table, name, None if version is None else _check_int(version, "version"))
    table.refresh()
    found = find_ref(table, name, "branch")
    return TagResult(table.name, table.format, "branched", name, "branch", found.version, None,
                     table.adapter.current_version(table))  # fmt: skip


def publish(table: TableLike, branch_name: str) -> TagResult:
    """Fast-forward the table's main line to the branch ``branch_name``."""
    table.adapter.require("branches", "publish")
    found = find_ref(table, branch_name, "branch")
    after = table.adapter.publish(table, branch_name)
    table.refresh()
    return TagResult(table.name, table.format, "published", branch_name, "branch", found.version, None, after)
