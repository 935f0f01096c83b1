"""The metastore: Iceberg's JDBC catalog tables and lakecat's registry of Delta tables, in one database.

``iceberg_tables`` / ``iceberg_namespace_properties`` are shared by Spark's JdbcCatalog and
pyiceberg's SqlCatalog (same catalog name on both sides). ``lakecat_delta_tables`` maps Delta table
names to locations. Everything here is plain SQL through SQLAlchemy: no JVM.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from .config import CatalogConfig
from .errors import ConfigError, TableAlreadyExistsError
from .identifiers import TableIdent

_meta = sa.MetaData()
delta_tables = sa.Table(
    "lakecat_delta_tables",
    _meta,
    sa.Column("catalog_name", sa.String(255), primary_key=True),
    sa.Column("table_namespace", sa.String(255), primary_key=True),
    sa.Column("table_name", sa.String(255), primary_key=True),
    sa.Column("location", sa.String(1000), nullable=False),
    sa.Column("created_at", sa.String(64), nullable=False),
    sa.Column("properties", sa.Text, nullable=False, default="{}"),
)
# Iceberg's JdbcCatalog schema (v0), created here only when neither engine has created it yet.
iceberg_tables = sa.Table(
    "iceberg_tables",
    _meta,
    sa.Column("catalog_name", sa.String(255), primary_key=True),
    sa.Column("table_namespace", sa.String(255), primary_key=True),
    sa.Column("table_name", sa.String(255), primary_key=True),
    sa.Column("metadata_location", sa.String(1000)),
    sa.Column("previous_metadata_location", sa.String(1000)),
)
iceberg_namespace_properties = sa.Table(
    "iceberg_namespace_properties",
    _meta,
    sa.Column("catalog_name", sa.String(255), primary_key=True),
    sa.Column("namespace", sa.String(255), primary_key=True),
    sa.Column("property_key", sa.String(255), primary_key=True),
    sa.Column("property_value", sa.String(1000)),
)


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


def _iceberg_location(metadata_location: str | None) -> str:
    if not metadata_location:
        return ""
    return normalize_location(metadata_location.rsplit("/metadata/", 1)[0])


class Metastore:
    """Thin access to the catalog database for one lakecat catalog."""

    def __init__(self, config: CatalogConfig) -> None:
        self.config = config
        self.catalog_name = config.name
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
            _meta.create_all(self.engine, checkfirst=True)
        except sa.exc.SQLAlchemyError as e:
            raise ConfigError(f"cannot reach the metastore {config.to_dict()['metastore']}: {e.__class__.__name__}: {str(e).splitlines()[0]}") from None

    def close(self) -> None:
        self.engine.dispose()

    # --- reads -------------------------------------------------------------------------------
    def list_entries(self, namespace: str | None = None, fmt: str | None = None) -> list[TableEntry]:
        entries: list[TableEntry] = []
        with self.engine.connect() as con:
            if fmt in (None, "iceberg"):
                q = sa.select(iceberg_tables).where(iceberg_tables.c.catalog_name == self.catalog_name)
                if namespace:
                    q = q.where(iceberg_tables.c.table_namespace == namespace)
                for row in con.execute(q):
                    entries.append(self._iceberg_entry(row))
            if fmt in (None, "delta"):
                q = sa.select(delta_tables).where(delta_tables.c.catalog_name == self.catalog_name)
                if namespace:
                    q = q.where(delta_tables.c.table_namespace == namespace)
                for row in con.execute(q):
                    entries.append(self._delta_entry(row))
        return sorted(entries, key=lambda e: (e.ident.namespace, e.ident.name))

    def _iceberg_entry(self, row: Any) -> TableEntry:
        return TableEntry(
            TableIdent(row.table_namespace, row.table_name),
            "iceberg",
            _iceberg_location(row.metadata_location),
            metadata_location=row.metadata_location,
        )

    @staticmethod
    def _delta_entry(row: Any) -> TableEntry:
        return TableEntry(
            TableIdent(row.table_namespace, row.table_name),
            "delta",
            row.location,
            properties=json.loads(row.properties or "{}"),
        )

    def get(self, ident: TableIdent) -> TableEntry | None:
        with self.engine.connect() as con:
            row = con.execute(
                sa.select(iceberg_tables).where(
                    iceberg_tables.c.catalog_name == self.catalog_name,
                    iceberg_tables.c.table_namespace == ident.namespace,
                    iceberg_tables.c.table_name == ident.name,
                )
            ).first()
            if row is not None:
                return self._iceberg_entry(row)
            row = con.execute(
                sa.select(delta_tables).where(
                    delta_tables.c.catalog_name == self.catalog_name,
                    delta_tables.c.table_namespace == ident.namespace,
                    delta_tables.c.table_name == ident.name,
                )
            ).first()
            return self._delta_entry(row) if row is not None else None

    # --- Delta registry writes -----------------------------------------------------------------
    def register_delta(self, ident: TableIdent, location: str, properties: dict[str, Any]) -> TableEntry:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            with self.engine.begin() as con:
                con.execute(
                    delta_tables.insert().values(
                        catalog_name=self.catalog_name,
                        table_namespace=ident.namespace,
                        table_name=ident.name,
                        location=location,
                        created_at=now,
                        properties=json.dumps(properties, sort_keys=True),
                    )
                )
        except sa.exc.IntegrityError:
            raise TableAlreadyExistsError(f"table {ident} already exists") from None
        return TableEntry(ident, "delta", location, properties=properties)

    def update_delta_properties(self, ident: TableIdent, properties: dict[str, Any]) -> None:
        with self.engine.begin() as con:
            con.execute(
                delta_tables.update()
                .where(
                    delta_tables.c.catalog_name == self.catalog_name,
                    delta_tables.c.table_namespace == ident.namespace,
                    delta_tables.c.table_name == ident.name,
                )
                .values(properties=json.dumps(properties, sort_keys=True))
            )

    def unregister_delta(self, ident: TableIdent) -> bool:
        with self.engine.begin() as con:
            result = con.execute(
                delta_tables.delete().where(
                    delta_tables.c.catalog_name == self.catalog_name,
                    delta_tables.c.table_namespace == ident.namespace,
                    delta_tables.c.table_name == ident.name,
                )
            )
        return bool(result.rowcount)
