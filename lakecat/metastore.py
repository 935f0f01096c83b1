"""The metastore: one database per catalog, shared by every table format.

This module is format-neutral: it opens the database (SQLite in WAL mode, or PostgreSQL), and offers a
``Registry`` — a name -> location table for formats whose catalog is lakecat's own. Each format adapter
declares the tables it keeps here (``TableFormat.prepare_metastore``): Iceberg's JDBC catalog tables,
shared with Spark's JdbcCatalog and pyiceberg's SqlCatalog, and lakecat's registry of Delta tables.
Everything is plain SQL through SQLAlchemy: no JVM.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from .config import CatalogConfig
from .errors import ConfigError, TableAlreadyExistsError
from .identifiers import TableIdent


@dataclass(frozen=True)
class TableEntry:
    """What the metastore knows of a table without opening it."""

    ident: TableIdent
    format: str
    location: str
    metadata_location: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)


def normalize_location(location: str) -> str:
    """Spell local locations one way (``file:///x``), whichever engine wrote them (Hadoop writes ``file:/x``)."""
    if location.startswith("file:/") and not location.startswith("file://"):
        return "file://" + location[len("file:"):]
    if location.startswith("/"):
        return "file://" + location
    return location


class Metastore:
    """Thin access to the catalog database for one lakecat catalog."""

    def __init__(self, config: CatalogConfig) -> None:
        self.config = config
        self.catalog_name = config.name
        self.meta = sa.MetaData()
        self._ready: set[str] = set()
        self._lock = threading.Lock()
        path = config.metastore.sqlite_path
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with sqlite3.connect(path, timeout=30) as con:  # WAL is a property of the file
                    con.execute("PRAGMA journal_mode=WAL")
            except (OSError, sqlite3.Error) as e:
                raise ConfigError(f"cannot open the metastore {path}: {e} (is LAKECAT_HOME writable?)") from None
            self.engine = sa.create_engine(config.metastore.sqlalchemy_url, connect_args={"timeout": 30})
        else:
            self.engine = sa.create_engine(config.metastore.sqlalchemy_url, pool_pre_ping=True)
        try:
            with self.engine.connect():
                pass
        except sa.exc.SQLAlchemyError as e:
            raise ConfigError(f"cannot reach the metastore {config.to_dict()['metastore']}: {e.__class__.__name__}: {str(e).splitlines()[0]}") from None

    def close(self) -> None:
        self.engine.dispose()

    def table(self, name: str, *columns: sa.Column) -> sa.Table:
        """A table of the metastore, created when missing (its columns as given, the first time)."""
        with self._lock:
            existing = self.meta.tables.get(name)
            t = existing if existing is not None else sa.Table(name, self.meta, *columns)
            if name not in self._ready:
                try:
                    t.create(self.engine, checkfirst=True)
                except sa.exc.SQLAlchemyError as e:
                    raise ConfigError(f"cannot create {name} in the metastore: {e.__class__.__name__}: {str(e).splitlines()[0]}") from None
                self._ready.add(name)
        return t


def table_key_columns() -> list[sa.Column]:
    """The primary-key columns that name a table of a catalog (fresh objects: one set per SQL table)."""
    return [sa.Column("catalog_name", sa.String(255), primary_key=True),
            sa.Column("table_namespace", sa.String(255), primary_key=True),
            sa.Column("table_name", sa.String(255), primary_key=True)]  # fmt: skip


def where_table(metastore: Metastore, t: sa.Table, ident: TableIdent) -> list[Any]:
    """Conditions selecting ``ident`` of ``metastore``'s catalog in a table keyed by ``table_key_columns``."""
    c = t.c
    return [c.catalog_name == metastore.catalog_name, c.table_namespace == ident.namespace, c.table_name == ident.name]


class Registry:
    """A name -> location registry of one format's tables, in the metastore (lakecat's own catalog)."""

    def __init__(self, metastore: Metastore, table_name: str, format_name: str) -> None:
        self.metastore = metastore
        self.format = format_name
        self.t = metastore.table(
            table_name,
            *table_key_columns(),
            sa.Column("location", sa.String(1000), nullable=False),
            sa.Column("created_at", sa.String(64), nullable=False),
            sa.Column("properties", sa.Text, nullable=False, default="{}"),
        )

    def _entry(self, row: Any) -> TableEntry:
        return TableEntry(TableIdent(row.table_namespace, row.table_name), self.format, row.location,
                          properties=json.loads(row.properties or "{}"))  # fmt: skip

    def _where(self, ident: TableIdent) -> list[Any]:
        return where_table(self.metastore, self.t, ident)

    def list(self, namespace: str | None = None) -> list[TableEntry]:
        q = sa.select(self.t).where(self.t.c.catalog_name == self.metastore.catalog_name)
        if namespace:
            q = q.where(self.t.c.table_namespace == namespace)
        with self.metastore.engine.connect() as con:
            return [self._entry(row) for row in con.execute(q)]

    def get(self, ident: TableIdent) -> TableEntry | None:
        with self.metastore.engine.connect() as con:
            row = con.execute(sa.select(self.t).where(*self._where(ident))).first()
        return self._entry(row) if row is not None else None

    def register(self, ident: TableIdent, location: str, properties: dict[str, Any]) -> TableEntry:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            with self.metastore.engine.begin() as con:
                con.execute(self.t.insert().values(
                    catalog_name=self.metastore.catalog_name, table_namespace=ident.namespace, table_name=ident.name,
                    location=location, created_at=now, properties=json.dumps(properties, sort_keys=True),
                ))  # fmt: skip
        except sa.exc.IntegrityError:
            raise TableAlreadyExistsError(f"table {ident} already exists") from None
        return TableEntry(ident, self.format, location, properties=properties)

    def update_properties(self, ident: TableIdent, properties: dict[str, Any]) -> None:
        with self.metastore.engine.begin() as con:
            con.execute(self.t.update().where(*self._where(ident)).values(properties=json.dumps(properties, sort_keys=True)))

    def unregister(self, ident: TableIdent) -> bool:
        with self.metastore.engine.begin() as con:
            result = con.execute(self.t.delete().where(*self._where(ident)))
        return bool(result.rowcount)


class MaintenanceLog:
    """When lakecat last ran each maintenance action on a table, in the metastore.

    Expiry and orphan cleanup leave no commit in a table's history (Iceberg's expire_snapshots writes no
    snapshot; lakecat runs VACUUM without its log entries), so ``health`` reads their last run from here.
    """

    TABLE = "lakecat_maintenance_runs"

    def __init__(self, metastore: Metastore) -> None:
        self.metastore = metastore
        self.t = metastore.table(
            self.TABLE,
            sa.Column("catalog_name", sa.String(255), primary_key=True),
            sa.Column("table_name", sa.String(511), primary_key=True),
            sa.Column("action", sa.String(64), primary_key=True),
            sa.Column("finished_ms", sa.BigInteger, nullable=False),
        )

    def record(self, table: str, action: str, finished_ms: int) -> None:
        c = self.t.c
        where = [c.catalog_name == self.metastore.catalog_name, c.table_name == table, c.action == action]
        with self.metastore.engine.begin() as con:
            if not con.execute(self.t.update().where(*where).values(finished_ms=finished_ms)).rowcount:
                con.execute(self.t.insert().values(catalog_name=self.metastore.catalog_name, table_name=table,
                                                   action=action, finished_ms=finished_ms))  # fmt: skip

    def last_runs(self) -> dict[tuple[str, str], int]:
        """(table, action) -> when it last finished (ms), for every table of the catalog."""
        q = sa.select(self.t).where(self.t.c.catalog_name == self.metastore.catalog_name)
        with self.metastore.engine.connect() as con:
            return {(r.table_name, r.action): int(r.finished_ms) for r in con.execute(q)}
