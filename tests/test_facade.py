"""The library is the product: what the CLI does, a notebook does through the public API, with Python names.

Namespaces and renames on both formats (read back by pyiceberg / delta-rs, a mirror following its table), notebook
rendering (the HTML parsed into rows and cells), the Python spellings of ``alter`` (and the deprecated ones), and
options that do not combine refused in the caller's own spelling.
"""

from __future__ import annotations

import json
import warnings
from html.parser import HTMLParser

import pytest
from helpers import pyiceberg_catalog, read_rows

import lakecat
from lakecat.display import MAX_ROWS, text
from lakecat.errors import InvalidArgumentError, TableAlreadyExistsError, TableNotFoundError

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")


class _Tables(HTMLParser):
    """Every ``<table>`` of an HTML fragment as rows of cell texts (the header row first), and the captions."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.texts: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):  # noqa: ARG002 - HTMLParser's signature
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        else:
            self.texts.append(data)


def tables_of(fragment: str) -> _Tables:
    parser = _Tables()
    parser.feed(fragment)
    assert parser.tables, fragment
    return parser


def _table_with_rows(catalog, spark, name: str, fmt: str, *, properties: dict[str, str] | None = None):
    t = catalog.create_table(name, schema="id BIGINT, v STRING COMMENT '<i>note</i> & more'", format=fmt,
                             properties=properties)  # fmt: skip
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (1, 'a'), (2, '<b>x</b>')")
    spark.sql(f"INSERT INTO {t.spark_name} VALUES (3, 'c')")
    return catalog.load_table(name)


# --- namespaces and renames -----------------------------------------------------------------------------------------
def test_rename_moves_the_catalog_entry_not_the_files(catalog, spark, ns, table_format, lakecat):
    name, new = f"{ns}.orders", f"{ns}_archive.orders_2025"
    t = _table_with_rows(catalog, spark, name, table_format)
    rows, location = sorted(read_rows(catalog, name), key=lambda r: r["id"]), t.location
    history = [e.version for e in t.history()]

    code, out, err = lakecat("namespaces", "--json")
    assert code == 0, err
    assert {"name": ns, "tables": 1, "formats": {table_format: 1}} in json.loads(out)

    code, out, err = lakecat("rename", name, new, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc == {"old_name": name, "name": new, "format": table_format, "location": location, "mirrors": []}, doc
    assert not catalog.table_exists(name) and catalog.table_exists(new)
    # an independent reader finds the same rows under the new name, at the same place, with the same history
    assert sorted(read_rows(catalog, new), key=lambda r: r["id"]) == rows
    assert catalog.load_table(new).location == location
    assert [e.version for e in catalog.load_table(new).history()] == history
    if table_format == "iceberg":
        names = pyiceberg_catalog(catalog).list_tables(f"{ns}_archive")
        assert (f"{ns}_archive", "orders_2025") in names
    else:
        assert sorted(deltalake.DeltaTable(location).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]
    assert catalog.list_namespaces().names().count(f"{ns}_archive") == 1
    assert ns not in catalog.list_namespaces().names()  # its only table left

    # a name that is taken (by a table of either format), and a table that is not there, are refused; nothing moves
    other, taken = "delta" if table_format == "iceberg" else "iceberg", f"{ns}.taken"
    catalog.create_table(taken, schema="id BIGINT", format=other)
    with pytest.raises(TableAlreadyExistsError, match=f"{taken} already exists"):
        catalog.rename_table(new, taken)
    code, out, _ = lakecat("rename", new, taken, "--json")
    assert code == 1 and json.loads(out)["error"]["type"] == "TableAlreadyExistsError"
    with pytest.raises(TableNotFoundError):
        catalog.rename_table(f"{ns}.missing", f"{ns}.other")
    assert catalog.entry(new).format == table_format and catalog.entry(taken).format == other
    assert sorted(read_rows(catalog, new), key=lambda r: r["id"]) == rows


def test_a_mirror_follows_its_table_when_renamed(catalog, ns, tmp_path):
    location = str(tmp_path / "events")
    deltalake.write_deltalake(location, pa.table({"id": [1, 2, 3], "v": ["a", "b", None]}))
    name, new = f"{ns}.events", f"{ns}.events_renamed"
    catalog.register_table(name, location=location)
    catalog.load_table(name).mirror(as_format="iceberg")

    result = catalog.rename_table(name, new)
    assert result.mirrors == ["iceberg"]
    independent = pyiceberg_catalog(catalog)
    assert (ns, "events") not in independent.list_tables(ns)
    mirrored = independent.load_table((ns, "events_renamed")).scan().to_arrow()
    assert sorted(mirrored.column("id").to_pylist()) == [1, 2, 3]
    assert [t.name for t in catalog.list_tables(ns)] == [new]  # still one table per name
    assert all(v.equal for v in catalog.load_table(new).verify_mirrors())
    deltalake.write_deltalake(location, pa.table({"id": [4], "v": ["d"]}), mode="append")
    assert catalog.load_table(new).sync_mirrors()[0].source_version == 1  # it keeps following, under the new name
    assert sorted(independent.load_table((ns, "events_renamed")).scan().to_arrow().column("id").to_pylist()) == [
        1,
        2,
        3,
        4,
    ]


# --- notebooks --------------------------------------------------------------------------------------------------------
def test_notebook_rendering_is_rows_and_columns_with_every_value_escaped(catalog, spark, ns, table_format):
    name = f"{ns}.shown"
    t = _table_with_rows(catalog, spark, name, table_format)
    first = t.history()[1].version  # the first insert (newest first; Delta also lists its create)

    page = tables_of(t._repr_html_())
    head, schema = page.tables
    assert head[0][:3] == ["table", "format", "version"] and head[1][:2] == [name, table_format]
    assert schema[0] == ["column", "type", "nullable", "comment"]
    assert schema[2] == ["v", "STRING", "yes", "<i>note</i> & more"]  # the text, not markup
    assert "<i>note" not in t._repr_html_() and "&lt;i&gt;note&lt;/i&gt; &amp; more" in t._repr_html_()

    history = tables_of(t.history()._repr_html_()).tables[0]
    assert history[0] == ["version", "timestamp", "operation", "summary"]
    assert [row[0] for row in history[1:]] == [str(e.version) for e in t.history()]
    assert all("{" not in cell for row in history for cell in row)  # a summary reads k=v, not as a dict

    listing = tables_of(catalog.list_tables(ns)._repr_html_()).tables[0]
    assert listing == [["table", "format", "location", "mirrors"], [name, table_format, t.location, ""]]
    spaces = catalog.list_namespaces()  # the shared catalog holds every earlier test's namespaces: the first 20 show
    assert next(i for i in spaces if i.name == ns).formats == {table_format: 1}
    namespaces = tables_of(spaces._repr_html_()).tables[0]
    assert namespaces[0] == ["namespace", "tables", "formats"]
    assert namespaces[1:] == [[i.name, str(i.tables), text(i.formats)] for i in spaces][:MAX_ROWS]

    health = tables_of(catalog.health(f"{ns}.*")._repr_html_()).tables[0]
    assert health[0][:3] == ["table", "format", "verdict"] and health[1][:2] == [name, table_format]

    view = tables_of(t.as_of(version=first)._repr_html_())
    assert view.tables[0][0] == ["id", "v"]
    assert sorted(row[1] for row in view.tables[0][1:]) == ["<b>x</b>", "a"]  # version 1's two rows, escaped text

    shown = tables_of(catalog._repr_html_())
    assert shown.tables[0][1][0] == catalog.name and shown.tables[1][0] == ["table", "format", "location", "mirrors"]

    catalog.maintain(f"{ns}.*", dry_run=True)
    log = tables_of(catalog.maintenance_log(f"{ns}.*")._repr_html_()).tables[0]
    assert log[0][:4] == ["started (UTC)", "table", "action", "outcome"]


def test_a_long_list_shows_its_first_rows_and_how_many_more():
    from lakecat.results import ListResult, TableInfo

    many = ListResult([TableInfo(f"ns.t{i}", "delta", f"/lake/t{i}", []) for i in range(45)])
    fragment = many._repr_html_()
    assert len(tables_of(fragment).tables[0]) == 1 + 20 and "… 25 more" in fragment


# --- Python names ----------------------------------------------------------------------------------------------------
def test_alter_takes_python_names_and_reads_the_old_spellings_with_a_warning(catalog, spark, ns, table_format, lakecat):
    name = f"{ns}.evolving"
    t = _table_with_rows(catalog, spark, name, table_format)
    if table_format == "delta":  # a rename needs column mapping first: refused in the caller's own words
        with pytest.raises(InvalidArgumentError, match=r"pass confirm=True to enable it; nothing changed"):
            t.alter(rename_columns={"v": "w"})
        code, _, err = lakecat("alter", name, "--rename-column", "v=w")
        assert code == 2 and "pass --yes to enable it" in err and "confirm" not in err, err
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the Python spellings warn about nothing
        result = t.alter(rename_columns={"v": "w"}, comments={"w": "renamed"}, confirm=True)
    assert [c.name for c in result.schema] == ["id", "w"] and result.schema[1].comment == "renamed"
    with pytest.warns(DeprecationWarning, match=r"rename_columns=\{'k': 'v'\}"):
        t.alter(rename_columns=["w=v2"], confirm=True)
    with pytest.warns(DeprecationWarning, match="confirm="):
        t.alter(comments={"v2": "back"}, yes=True)
    assert [(c.name, c.comment) for c in t.describe().schema] == [("id", None), ("v2", "back")]
    assert sorted(r["v2"] for r in read_rows(catalog, name)) == ["<b>x</b>", "a", "c"]


def test_options_that_do_not_combine_are_refused_in_the_callers_spelling(catalog, ns, lakecat):
    """Never ignored: the library names its parameters, the command line its options."""
    refusals = [
        (dict(max_minutes=5), "max_minutes, parallel, metrics_port", ("maintain", "--max-minutes", "5"),
         "--max-minutes, --parallel and --metrics-port go with --every"),
        (dict(every="10m"), "every= needs auto=True", ("maintain", "--every", "10m"), "--every needs --auto"),
        (dict(every="10m", auto=True, dry_run=True), "dry_run=True goes with one pass (maintain(auto=True))",
         ("maintain", "--auto", "--every", "10m", "--dry-run"), "--dry-run goes with one pass (maintain --auto)"),
        (dict(every="0s", auto=True), "invalid every: must be longer than 0s",
         ("maintain", "--auto", "--every", "0s"), "invalid --every: must be longer than 0s"),
    ]  # fmt: skip
    for kwargs, python, args, cli in refusals:
        with pytest.raises(InvalidArgumentError) as e:
            catalog.maintain(f"{ns}.*", allow_empty=True, **kwargs)
        assert python in str(e.value) and "--" not in str(e.value), e.value
        code, _, err = lakecat(*args, f"{ns}.*", "--allow-empty")
        assert code == 2 and cli in err, (args, err)
    with pytest.raises(InvalidArgumentError, match="invalid fail_on 'some'"):
        catalog.health(fail_on="some")
    with pytest.raises(InvalidArgumentError, match="invalid limit"):
        catalog.maintenance_log(limit=0)
    code, _, err = lakecat("maintenance-log", "--limit", "0")
    assert code == 2 and "invalid --limit" in err


def test_mirror_options_name_one_mirror_or_are_refused(catalog, ns, tmp_path, lakecat):
    location = str(tmp_path / "t")
    deltalake.write_deltalake(location, pa.table({"id": [1, 2]}))
    name = f"{ns}.t"
    catalog.register_table(name, location=location)
    t = catalog.load_table(name)
    with pytest.raises(InvalidArgumentError, match=r"no iceberg mirror; mirror\(as_format='iceberg'\) makes one"):
        t.sync_mirrors(as_format="iceberg")
    code, _, err = lakecat("mirror", name, "--sync", "--as", "iceberg")  # --as names the mirror, never ignored
    assert code == 2 and f"`lakecat mirror {name} --as iceberg` makes one" in err, err
    assert lakecat("mirror", name, "--as", "iceberg")[0] == 0
    code, out, err = lakecat("mirror", name, "--verify", "--as", "iceberg", "--json")
    assert code == 0 and json.loads(out)["equal"] is True, err
    code, out, err = lakecat("mirror", name, "--drop", "--as", "iceberg", "--json")
    assert code == 0 and json.loads(out)["dropped"] == ["iceberg"], err
    assert lakecat("mirror", name, "--sync", "--purge-deletes", "--verify")[0] == 2


def test_the_clis_machinery_is_public_api(catalog, ns):
    """Policies, the health gate and version resolution are calls a notebook makes too."""
    assert catalog.set_policy(f"{ns}.*", {"expire.retain-last": "4"}).policy == {"lakecat.expire.retain-last": "4"}
    assert isinstance(lakecat.list_catalogs().to_dict(), list)
    assert any(c.active for c in lakecat.list_catalogs())
    assert lakecat.resolve_config(None).name == catalog.name
