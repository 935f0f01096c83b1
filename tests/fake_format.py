"""A third table format, for tests only: it can create, describe, list, drop and show history — nothing else.

It keeps each table as a JSON document under the warehouse (its schema and commits) and registers its
tables in the metastore like Delta does. Registered through the same loader as the real formats
(``lakecat.formats.register_format``). Every other command on its tables must answer exit 3 with a
sentence — never run Iceberg's or Delta's code.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from lakecat.files import local_path
from lakecat.formats.base import Commit, TableFormat
from lakecat.metastore import Registry
from lakecat.results import ColumnInfo, DescribeResult

NAME = "jsonlog"


class JsonLogFormat(TableFormat):
    name = NAME

    def _registry(self, metastore):
        return Registry(metastore, "lakecat_test_jsonlog_tables", self.name)

    def prepare_metastore(self, metastore):
        self._registry(metastore)

    def list_entries(self, ctx, namespace=None):
        return self._registry(ctx.metastore).list(namespace)

    def get_entry(self, ctx, ident):
        return self._registry(ctx.metastore).get(ident)

    def _doc_path(self, location: str) -> Path:
        path = local_path(location)
        assert path is not None, "jsonlog tables live on the local disk"
        return path / "table.json"

    def create(self, ctx, ident, columns, partitioning, properties, *, layout=None):
        location = self.default_location(ctx, ident)
        path = self._doc_path(location)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"columns": [[c.name, c.type, c.nullable] for c in columns], "properties": properties,
               "commits": [{"version": 0, "timestamp_ms": int(time.time() * 1000), "operation": "create"}]}  # fmt: skip
        path.write_text(json.dumps(doc))
        return self._registry(ctx.metastore).register(ident, location, {})

    def _doc(self, table) -> dict:
        return json.loads(self._doc_path(table.entry.location).read_text())

    def describe(self, table):
        doc = self._doc(table)
        return DescribeResult(name=table.name, format=self.name, location=table.entry.location,
                              schema=[ColumnInfo(n, t, nullable) for n, t, nullable in doc["columns"]], partitioning=[],
                              properties=doc["properties"], current_version=doc["commits"][-1]["version"], files=0,
                              size_bytes=0, records=0, capabilities=self.capabilities)  # fmt: skip

    def drop(self, ctx, entry):
        self._registry(ctx.metastore).unregister(entry.ident)

    def commits(self, table):
        return [Commit(c["version"], c["timestamp_ms"], c["operation"], {}, c["version"] - 1 if c["version"] else None)
                for c in self._doc(table)["commits"]]  # fmt: skip

    def current_version(self, table):
        return self._doc(table)["commits"][-1]["version"]
