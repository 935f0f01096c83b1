"""The metastore: one database per catalog, shared by every table format.

This module is format-neutral: it opens the database (SQLite in WAL mode, or PostgreSQL), and offers a
``Registry`` — a name -> location table for formats whose catalog is lakecat's own. Each format adapter
declares the tables it keeps here (``TableFormat.prepare_metastore``): Iceberg's JDBC catalog tables,
shared with Spark's JdbcCatalog and pyiceberg's SqlCatalog, and lakecat's registry of Delta tables.
Everything is plain SQL: no JVM. Writes go through SQLAlchemy; a lookup (``Metastore.find``) on SQLite reads
with the standard library, because importing SQLAlchemy costs ~0.4 s — a third of a light-path read.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .config import CatalogConfig
from .errors import ConfigError, TableAlreadyExistsError
from .extras import require
from .identifiers import TableIdent

if TYPE_CHECKING:
    from collections.abc import Callable

    import sqlalchemy as sa


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
        return "file://" + location[len("file:") :]
    if location.startswith("/"):
        return "file://" + location
    return location


def add_missing_columns(engine: sa.engine.Engine, t: sa.Table) -> None:
    """Add to one of lakecat's own tables the nullable columns a newer lakecat declares and an older one did not
    create (the rows it wrote read NULL there)."""
    import sqlalchemy as sa

    present = {c["name"] for c in sa.inspect(engine).get_columns(t.name)}
    missing = [c for c in t.columns if c.name not in present and c.nullable]
    if not missing:
        return
    with engine.begin() as con:
        for column in missing:
            kind = column.type.compile(dialect=engine.dialect)
            con.execute(sa.text(f"ALTER TABLE {_sql_name(t.name)} ADD COLUMN {_sql_name(column.name)} {kind}"))


class Metastore:
    """Thin access to the catalog database for one lakecat catalog.

    ``prepare`` declares (and creates when missing) the tables the formats keep here; it runs the first time
    SQLAlchemy is needed (``engine``, ``ready``). Lookups (``find``) on SQLite do not need it.
    """

    def __init__(self, config: CatalogConfig, prepare: Callable[[Metastore], None] | None = None) -> None:
        self.config = config
        self.catalog_name = config.name
        self._prepare = prepare
        self._engine: sa.engine.Engine | None = None
        self._meta: sa.MetaData | None = None
        self._ready: set[str] = set()
        self._lock = threading.RLock()
        self.sqlite_path = config.metastore.sqlite_path
        if self.sqlite_path is not None:
            try:
                self.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
                with sqlite3.connect(self.sqlite_path, timeout=30) as con:  # WAL is a property of the file
                    con.execute("PRAGMA journal_mode=WAL")
            except (OSError, sqlite3.Error) as e:
                raise ConfigError(
                    f"cannot open the metastore {self.sqlite_path}: {e} (is LAKECAT_HOME writable?)"
                ) from None
        else:
            self.ready()  # a server that cannot be reached is exit 2 at once

    @property
    def engine(self) -> sa.engine.Engine:
        """SQLAlchemy's engine over the database, with the formats' tables declared and present."""
        return self.ready()._engine  # type: ignore[return-value]

    @property
    def meta(self) -> sa.MetaData:
        self.ready()
        return self._meta  # type: ignore[return-value]

    def ready(self) -> Metastore:
        """Open SQLAlchemy's engine and run the formats' ``prepare`` (once)."""
        with self._lock:
            if self._engine is not None:
                return self
            require("sqlalchemy", extra=None, feature="the metastore")
            self.config.metastore.require_driver()  # psycopg2: one line naming the extra, not SQLAlchemy's trace
            import sqlalchemy as sa

            if self.sqlite_path is not None:
                engine = sa.create_engine(self.config.metastore.sqlalchemy_url, connect_args={"timeout": 30})
            else:
                engine = sa.create_engine(self.config.metastore.sqlalchemy_url, pool_pre_ping=True)
                try:
                    with engine.connect():
                        pass
                except sa.exc.SQLAlchemyError as e:
                    raise ConfigError(f"cannot reach the metastore {self.config.to_dict()['metastore']}: "
                                      f"{e.__class__.__name__}: {str(e).splitlines()[0]}") from None  # fmt: skip
            self._engine, self._meta = engine, sa.MetaData()
            if self._prepare is not None:
                self._prepare(self)
        return self

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()

    def table(self, name: str, *columns: sa.Column) -> sa.Table:
        """A table of the metastore, created when missing (its columns as given, the first time)."""
        import sqlalchemy as sa

        with self._lock:
            self.ready()
            assert self._meta is not None and self._engine is not None
            existing = self._meta.tables.get(name)
            t = existing if existing is not None else sa.Table(name, self._meta, *columns)
            if name not in self._ready:
                try:
                    t.create(self._engine, checkfirst=True)
                except sa.exc.SQLAlchemyError as e:
                    raise ConfigError(
                        f"cannot create {name} in the metastore: {e.__class__.__name__}: {str(e).splitlines()[0]}"
                    ) from None
                self._ready.add(name)
        return t

    def find(self, table: str, where: dict[str, str], order_by: str | None = None) -> list[dict[str, Any]]:
        """Rows of the metastore table ``table`` whose columns equal ``where`` (none when the table is not there yet).

        ``table`` and the column names are lakecat's own; the values are bound parameters. On SQLite the read
        takes the standard library's driver: no SQLAlchemy import, no table creation.
        """
        if self.sqlite_path is not None:
            cond = " AND ".join(f"{_sql_name(k)} = ?" for k in where)
            sql = f"SELECT * FROM {_sql_name(table)}" + (f" WHERE {cond}" if cond else "")
            sql += f" ORDER BY {_sql_name(order_by)}" if order_by else ""
            try:
                con = sqlite3.connect(self.sqlite_path, timeout=30)
                try:
                    con.row_factory = sqlite3.Row
                    return [dict(r) for r in con.execute(sql, tuple(where.values()))]
                finally:
                    con.close()
            except sqlite3.OperationalError as e:
                if str(e).startswith("no such table"):
                    return []
                raise ConfigError(f"cannot read {table} of the metastore {self.sqlite_path}: {e}") from None
        t = self.meta.tables[table]
        q = t.select().where(*[t.c[k] == v for k, v in where.items()])
        if order_by:
            q = q.order_by(t.c[order_by])
        with self.engine.connect() as sa_con:
            return [dict(r._mapping) for r in sa_con.execute(q)]


def _sql_name(name: str) -> str:
    """A metastore table or column name (lakecat's own, never user text) as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def table_key_columns() -> list[sa.Column]:
    """The primary-key columns that name a table of a catalog (fresh objects: one set per SQL table)."""
    import sqlalchemy as sa

    return [sa.Column("catalog_name", sa.String(255), primary_key=True),
            sa.Column("table_namespace", sa.String(255), primary_key=True),
            sa.Column("table_name", sa.String(255), primary_key=True)]  # fmt: skip


def catalog_filter(metastore: Metastore, namespace: str | None = None) -> dict[str, str]:
    """The key columns' values selecting every table of ``metastore``'s catalog (or of one namespace of it)."""
    return {"catalog_name": metastore.catalog_name, **({"table_namespace": namespace} if namespace else {})}


def key_of(metastore: Metastore, ident: TableIdent) -> dict[str, str]:
    """The key columns' values naming ``ident`` of ``metastore``'s catalog (see ``table_key_columns``)."""
    return {"catalog_name": metastore.catalog_name, "table_namespace": ident.namespace, "table_name": ident.name}


def where_table(metastore: Metastore, t: sa.Table, ident: TableIdent) -> list[Any]:
    """Conditions selecting ``ident`` of ``metastore``'s catalog in a table keyed by ``table_key_columns``."""
    return [t.c[column] == value for column, value in key_of(metastore, ident).items()]


class Registry:
    """A name -> location registry of one format's tables, in the metastore (lakecat's own catalog)."""

    def __init__(self, metastore: Metastore, table_name: str, format_name: str) -> None:
        self.metastore = metastore
        self.table_name = table_name
        self.format = format_name

    @cached_property
    def t(self) -> sa.Table:
        """The registry's SQL table (declared, and created when missing)."""
        import sqlalchemy as sa

        return self.metastore.table(
            self.table_name,
            *table_key_columns(),
            sa.Column("location", sa.String(1000), nullable=False),
            sa.Column("created_at", sa.String(64), nullable=False),
            sa.Column("properties", sa.Text, nullable=False, default="{}"),
        )

    def _entry(self, row: dict[str, Any]) -> TableEntry:
        return TableEntry(TableIdent(row["table_namespace"], row["table_name"]), self.format, row["location"],
                          properties=json.loads(row["properties"] or "{}"))  # fmt: skip

    def list(self, namespace: str | None = None) -> list[TableEntry]:
        return [
            self._entry(row) for row in self.metastore.find(self.table_name, catalog_filter(self.metastore, namespace))
        ]

    def get(self, ident: TableIdent) -> TableEntry | None:
        rows = self.metastore.find(self.table_name, key_of(self.metastore, ident))
        return self._entry(rows[0]) if rows else None

    def register(self, ident: TableIdent, location: str, properties: dict[str, Any]) -> TableEntry:
        import sqlalchemy as sa

        now = datetime.now(UTC).isoformat(timespec="seconds")
        t = self.t
        try:
            with self.metastore.engine.begin() as con:
                con.execute(t.insert().values(
                    **key_of(self.metastore, ident),
                    location=location, created_at=now, properties=json.dumps(properties, sort_keys=True),
                ))  # fmt: skip
        except sa.exc.IntegrityError:
            raise TableAlreadyExistsError(f"table {ident} already exists") from None
        return TableEntry(ident, self.format, location, properties=properties)

    def update_properties(self, ident: TableIdent, properties: dict[str, Any]) -> None:
        t = self.t
        with self.metastore.engine.begin() as con:
            con.execute(
                t.update()
                .where(*where_table(self.metastore, t, ident))
                .values(properties=json.dumps(properties, sort_keys=True))
            )

    def rename(self, ident: TableIdent, new: TableIdent) -> None:
        """The entry of ``ident`` takes the name ``new`` (its location and properties stay)."""
        t = self.t
        with self.metastore.engine.begin() as con:
            con.execute(t.update().where(*where_table(self.metastore, t, ident))
                        .values(table_namespace=new.namespace, table_name=new.name))  # fmt: skip

    def unregister(self, ident: TableIdent) -> bool:
        t = self.t
        with self.metastore.engine.begin() as con:
            result = con.execute(t.delete().where(*where_table(self.metastore, t, ident)))
        return bool(result.rowcount)


class MaintenanceLog:
    """When lakecat last ran each maintenance action on a table, in the metastore.

    Expiry and orphan cleanup leave no commit in a table's history (Iceberg's expire_snapshots writes no
    snapshot; lakecat runs VACUUM without its log entries), so ``health`` reads their last run from here.
    """

    TABLE = "lakecat_maintenance_runs"

    def __init__(self, metastore: Metastore) -> None:
        import sqlalchemy as sa

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
        rows = self.metastore.find(self.TABLE, catalog_filter(self.metastore))
        return {(r["table_name"], r["action"]): int(r["finished_ms"]) for r in rows}


class ScopedPolicies:
    """Maintenance policies set for a namespace or the whole catalog (scope ``*``), one row per (scope, key).

    A table's own policy is its ``lakecat.*`` table properties, kept in its metadata; what holds for many tables
    lives here, where every tool that reaches the catalog sees it.
    """

    TABLE = "lakecat_policies"
    CATALOG_SCOPE = "*"

    def __init__(self, metastore: Metastore) -> None:
        self.metastore = metastore

    @cached_property
    def t(self) -> sa.Table:
        import sqlalchemy as sa

        return self.metastore.table(
            self.TABLE,
            sa.Column("catalog_name", sa.String(255), primary_key=True),
            sa.Column("scope", sa.String(255), primary_key=True),
            sa.Column("key", sa.String(255), primary_key=True),
            sa.Column("value", sa.Text, nullable=False),
        )

    def all(self) -> dict[str, dict[str, str]]:
        """scope -> {key: value} for the whole catalog, in one read (no SQLAlchemy on SQLite)."""
        if self.metastore.sqlite_path is None:
            self.t  # noqa: B018 - declared before SQLAlchemy reads it
        out: dict[str, dict[str, str]] = {}
        for row in self.metastore.find(self.TABLE, {"catalog_name": self.metastore.catalog_name}):
            out.setdefault(row["scope"], {})[row["key"]] = row["value"]
        return out

    def set(self, scope: str, values: dict[str, str], unset: list[str] | tuple[str, ...] = ()) -> dict[str, str]:
        """Set ``values`` and remove ``unset`` at ``scope`` in one transaction; returns the scope's policy after."""
        t, c = self.t, self.t.c
        mine = [c.catalog_name == self.metastore.catalog_name, c.scope == scope]
        with self.metastore.engine.begin() as con:
            for key in [*values, *unset]:
                con.execute(t.delete().where(*mine, c.key == key))
            for key, value in values.items():
                con.execute(t.insert().values(catalog_name=self.metastore.catalog_name, scope=scope, key=key,
                                              value=value))  # fmt: skip
        return self.all().get(scope, {})
