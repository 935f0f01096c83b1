"""Delta has no tags: lakecat keeps them in its metastore, next to its registry of Delta tables.

The Delta adapter's expiry and orphan cleanup honour them: a tagged version keeps its data files and the
log it needs to be read (a guarantee Delta's own VACUUM and log cleanup do not give).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ...identifiers import TableIdent
from ...metastore import Metastore, key_of, table_key_columns, where_table
from ...results import RefInfo
from ...units import format_duration, iso

if TYPE_CHECKING:
    import sqlalchemy as sa

TAGS_TABLE = "lakecat_delta_tags"


class TagStore:
    """Tags of Delta tables: (catalog, namespace, table, tag) -> version, created, retention."""

    def __init__(self, metastore: Metastore) -> None:
        self.metastore = metastore

    @cached_property
    def t(self) -> sa.Table:
        """The tags' SQL table (declared, and created when missing)."""
        import sqlalchemy as sa

        return self.metastore.table(
            TAGS_TABLE,
            *table_key_columns(),
            sa.Column("tag_name", sa.String(255), primary_key=True),
            sa.Column("version", sa.BigInteger, nullable=False),
            sa.Column("created_ms", sa.BigInteger, nullable=False),
            sa.Column("retain_ms", sa.BigInteger, nullable=True),
        )

    def _where(self, ident: TableIdent) -> list[Any]:
        return where_table(self.metastore, self.t, ident)

    def tags(self, ident: TableIdent) -> list[RefInfo]:
        out = []
        for r in self.metastore.find(TAGS_TABLE, key_of(self.metastore, ident), order_by="tag_name"):
            created = datetime.fromtimestamp(r["created_ms"] / 1000, UTC)
            retain = timedelta(milliseconds=r["retain_ms"]) if r["retain_ms"] else None
            out.append(RefInfo(r["tag_name"], "tag", int(r["version"]), format_duration(retain) if retain else None,
                               iso(created + retain) if retain else None, iso(created)))  # fmt: skip
        return out

    def live(self, ident: TableIdent, now: datetime) -> list[RefInfo]:
        """Tags whose retention has not run out."""
        return [
            r
            for r in self.tags(ident)
            if r.expires is None or datetime.fromisoformat(r.expires.replace("Z", "+00:00")) > now
        ]

    def add(self, ident: TableIdent, name: str, version: int, retain: timedelta | None) -> None:
        now_ms = int(datetime.now(UTC).timestamp() * 1000)
        with self.metastore.engine.begin() as con:
            con.execute(self.t.insert().values(
                catalog_name=self.metastore.catalog_name, table_namespace=ident.namespace, table_name=ident.name,
                tag_name=name, version=int(version), created_ms=now_ms,
                retain_ms=int(retain.total_seconds() * 1000) if retain is not None else None,
            ))  # fmt: skip

    def rename(self, ident: TableIdent, new: TableIdent) -> None:
        """The tags of ``ident`` follow the table to its new name."""
        with self.metastore.engine.begin() as con:
            con.execute(self.t.update().where(*self._where(ident))
                        .values(table_namespace=new.namespace, table_name=new.name))  # fmt: skip

    def remove(self, ident: TableIdent, name: str | None = None) -> int:
        where = self._where(ident) + ([self.t.c.tag_name == name] if name is not None else [])
        with self.metastore.engine.begin() as con:
            return int(con.execute(self.t.delete().where(*where)).rowcount or 0)
