"""Iceberg tables behind a REST catalog: Apache Iceberg's own REST catalog server (``lakecat local rest``), started
once for this module over a lakecat catalog's SQLite metastore, and a catalog config ``[iceberg] type = "rest"``.

Readers are independent: pyiceberg's RestCatalog (through the server) and pyiceberg's SqlCatalog (the server's
JDBC backend). The 401 case goes through a real HTTP proxy in front of the server that wants a bearer token.
"""

from __future__ import annotations

import http.server
import ipaddress
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from helpers import listening_on, read_rows

pytestmark = pytest.mark.slow

TOKEN = "sesame"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def rest_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("rest-catalog")


@pytest.fixture(scope="module")
def served(rest_home):
    """The lakecat catalog (JDBC over SQLite) the REST server serves."""
    import lakecat

    conf = _write(rest_home / "served.toml", f'name = "served"\nwarehouse = "{rest_home}/served-wh"\n'
                                             f'metastore = "sqlite:///{rest_home}/served.db"\n')  # fmt: skip
    return lakecat.connect(conf)


@pytest.fixture(scope="module")
def rest_server(served, rest_home):
    """Iceberg's REST catalog server over ``served``, one JVM for the module; yields its URI."""
    from lakecat.formats.iceberg.rest_server import LocalRestCatalog
    from lakecat.processes import free_port

    server = LocalRestCatalog(data_dir=rest_home / "server", port=free_port(), catalog=served)
    try:
        yield server.start(timeout=120)
    finally:
        server.stop()


def _rest_conf(path: Path, uri: str, *, name: str = "rc", extra: str = "") -> Path:
    return _write(path, f'name = "{name}"\nwarehouse = "{path.parent}/{name}-wh"\nmetastore = "sqlite:///{path.parent}/{name}.db"\n'
                        f'[iceberg]\ntype = "rest"\nuri = "{uri}"\n{extra}')  # fmt: skip


@pytest.fixture(scope="module")
def rc_conf(rest_server, rest_home) -> Path:
    return _rest_conf(rest_home / "rc.toml", rest_server)


@pytest.fixture(scope="module")
def rc(rc_conf):
    import lakecat

    return lakecat.connect(rc_conf)


class _GuardedProxy(http.server.BaseHTTPRequestHandler):
    """Forwards to the REST server only requests that carry ``Authorization: Bearer sesame``; ``Bearer nobody`` gets a
    403, any other request a 401."""

    upstream = ""

    def _forward(self) -> None:
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            code = 403 if self.headers.get("Authorization") == "Bearer nobody" else 401
            kind = "ForbiddenException" if code == 403 else "NotAuthorizedException"
            body = json.dumps({"error": {"message": f"{kind}: no", "type": kind, "code": code}}).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else None
        req = urllib.request.Request(self.upstream + self.path, data=data, method=self.command,
                                     headers={k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")})  # fmt: skip
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 - the local server
                status, headers, payload = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            status, headers, payload = e.code, e.headers, e.read()
        self.send_response(status)
        for k, v in headers.items():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = do_HEAD = _forward

    def log_message(self, *args) -> None:  # noqa: ARG002 - quiet
        pass


@pytest.fixture(scope="module")
def guarded_uri(rest_server):
    handler = type("Handler", (_GuardedProxy,), {"upstream": rest_server})
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}"
    finally:
        proxy.shutdown()
        proxy.server_close()


def _one_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- the metadata path (pyiceberg's RestCatalog, no JVM) ---------------------------------------------------
def test_pyiceberg_rest_catalog_reads_a_table_lakecat_wrote(served, rest_server, spark, ns):
    from pyiceberg.catalog.rest import RestCatalog

    t = served.create_table(
        f"{ns}.orders", schema="id BIGINT, region STRING", format="iceberg", partition_by=["region"]
    )
    # the served catalog's session (its Iceberg catalog is set up there; the create itself started no JVM)
    served.session().sql(f"INSERT INTO {t.spark_name} VALUES (1, 'eu'), (2, 'us'), (3, 'eu')")
    remote = RestCatalog("any-engine", uri=rest_server).load_table((ns, "orders"))
    assert sorted(remote.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert remote.metadata.current_snapshot_id == served.table(f"{ns}.orders").describe().current_version


def test_a_delta_tables_mirror_is_served_to_rest_clients(served, rest_server, ns, tmp_path):
    """A Delta table (written by delta-rs) mirrored as Iceberg is one more table of the REST server, under its name."""
    import deltalake
    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog

    location = str(tmp_path / "clicks")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "region": ["eu", "us", None]})
    deltalake.write_deltalake(location, rows, partition_by=["region"])
    served.register_table(f"{ns}.clicks", location=location)
    table = served.load_table(f"{ns}.clicks")
    table.mirror(as_format="iceberg")
    deltalake.write_deltalake(location, pa.table({"id": pa.array([4], pa.int64()), "region": ["eu"]}), mode="append")
    table.sync_mirrors()
    remote = RestCatalog("any-engine", uri=rest_server).load_table((ns, "clicks"))
    got = remote.scan().to_arrow()
    assert sorted(zip(got.column("id").to_pylist(), got.column("region").to_pylist(), strict=True)) == [
        (1, "eu"), (2, "us"), (3, None), (4, "eu")
    ]  # fmt: skip
    assert remote.scan(row_filter="region == 'eu'").to_arrow().num_rows == 2


def test_list_describe_history_through_rest(cli, served, rc_conf, rest_server, ns, light_cli):
    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog

    remote = RestCatalog("writer", uri=rest_server)  # another engine writes through the REST catalog
    remote.create_namespace(ns)
    tbl = remote.create_table((ns, "events"), schema=pa.schema([("id", pa.int64()), ("kind", pa.string())]))
    tbl.append(pa.table({"id": [1, 2], "kind": ["a", "b"]}))
    tbl.append(pa.table({"id": [3], "kind": ["c"]}))
    listed = light_cli("list", ns, "--catalog", rc_conf)
    assert listed == [{"name": f"{ns}.events", "format": "iceberg", "location": listed[0]["location"], "mirrors": []}]
    assert listed[0]["location"].endswith(f"/{ns}/events")
    described = light_cli("describe", f"{ns}.events", "--catalog", rc_conf)
    assert [c["name"] for c in described["schema"]] == ["id", "kind"]
    assert described["current_version"] == remote.load_table((ns, "events")).metadata.current_snapshot_id
    assert described["records"] == 3
    history = light_cli("history", f"{ns}.events", "--catalog", rc_conf)
    assert [h["operation"] for h in history] == ["append", "append"]
    # the same table, seen by the embedded catalog the server serves (JDBC)
    assert [e["name"] for e in json.loads(cli("list", ns, "--catalog", served.config.source, "--json")[1])] == [
        f"{ns}.events"
    ]


def test_catalogs_shows_the_kind_of_each_catalog(cli, rc_conf, monkeypatch):
    monkeypatch.setenv("LAKECAT_CONF_DIR", str(rc_conf.parent))
    code, out, _ = cli("catalogs", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["rc"]["kind"] == {"iceberg": "rest", "delta": "metastore"}
    assert rows["local"]["kind"] == {"iceberg": "metastore", "delta": "metastore"}
    code, out, _ = cli("catalogs")
    assert "iceberg: rest" in out


# --- the Spark path (Iceberg's RESTCatalog in the Spark session) -----------------------------------------
def test_spark_path_through_rest(cli, rc, rc_conf, served, spark, ns, tmp_path):
    """create, ingest, append, timetravel, compact, expire and clean-orphans on an Iceberg table of a REST catalog;
    a Delta table of the same catalog stays in lakecat's metastore."""
    from pyiceberg.catalog.sql import SqlCatalog

    name, c = f"{ns}.clicks", ["--catalog", str(rc_conf)]
    code, _, err = cli("create", name, "--format", "iceberg", "--schema", "id BIGINT, ts TIMESTAMP, page STRING",
                       "--partition-by", "days(ts)", *c)  # fmt: skip
    assert code == 0, err
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_text("".join(json.dumps({"id": i, "ts": f"2026-01-0{1 + i % 3}T10:00:00", "page": "p"}) + "\n"
                                            for i in range(30)))  # fmt: skip
    code, out, err = cli("ingest", name, "--files", landing, "--file-format", "json", "--json", *c)
    assert code == 0, err
    assert json.loads(out)["rows_written"] == 30
    rc.session().sql(f"INSERT INTO {rc.table(name).spark_name} VALUES (100, TIMESTAMP'2026-01-01 11:00:00', 'q')")
    history = json.loads(cli("history", name, "--json", *c)[1])
    assert len(history) == 2
    first = history[-1]["version"]
    code, out, err = cli("timetravel", name, "--version", first, "--count", "--json", *c)
    assert code == 0, err
    assert json.loads(out)["count"] == 30
    # the independent reader: pyiceberg's SqlCatalog over the JDBC catalog behind the server
    backend = SqlCatalog("served", uri=served.config.metastore.sqlalchemy_url, warehouse=served.config.warehouse_uri)
    assert len(backend.load_table((ns, "clicks")).scan().to_arrow()) == 31
    code, out, err = cli("compact", name, "--json", *c)
    assert code == 0, err
    compacted = json.loads(out)
    assert compacted["files_after"] < compacted["files_before"]
    assert sorted(r["id"] for r in read_rows(rc, name)) == [*range(30), 100]
    code, out, err = cli("expire", name, "--older-than", "0d", "--retain-last", "1", "--force", "--json", *c)
    assert code == 0, err
    assert len(json.loads(out)["expired_versions"]) >= 2
    assert len(backend.load_table((ns, "clicks")).metadata.snapshots) == 1
    code, out, err = cli("clean-orphans", name, "--dry-run", "--json", *c)
    assert code == 0, err
    # Delta in the same catalog: lakecat's own metastore, listed together
    code, _, err = cli("create", f"{ns}.d", "--format", "delta", "--schema", "id BIGINT", *c)
    assert code == 0, err
    listed = {r["name"]: r["format"] for r in json.loads(cli("list", ns, "--json", *c)[1])}
    assert listed == {name: "iceberg", f"{name}_dlq": "iceberg", f"{ns}.d": "delta"}


# --- errors: 401, unreachable, bad config ---------------------------------------------------------------
def test_token_from_the_environment_401_and_403(cli, rest_home, guarded_uri, monkeypatch):
    conf = _rest_conf(
        rest_home / "guarded.toml", guarded_uri, name="guarded", extra='token = "${LAKECAT_TEST_REST_TOKEN}"\n'
    )
    monkeypatch.setenv("LAKECAT_TEST_REST_TOKEN", TOKEN)
    code, _, err = cli("list", "--catalog", conf, "--json")
    assert code == 0, err
    monkeypatch.setenv("LAKECAT_TEST_REST_TOKEN", "wrong")
    code, out, err = cli("list", "--catalog", conf, "--json")
    assert code == 1
    assert "401" in _one_line(err) and guarded_uri in err
    assert json.loads(out)["error"]["type"] == "LakecatError"
    code, _, err = cli("describe", "x.y", "--catalog", conf)
    assert code == 1 and "401" in _one_line(err)
    monkeypatch.setenv("LAKECAT_TEST_REST_TOKEN", "nobody")
    code, _, err = cli("list", "--catalog", conf)
    assert code == 1 and "403" in _one_line(err)


def test_unreachable_endpoint_is_one_line(cli, tmp_path):
    from lakecat.processes import free_port

    conf = _rest_conf(tmp_path / "gone.toml", f"http://127.0.0.1:{free_port()}", name="gone")
    code, _, err = cli("list", "--catalog", conf)
    assert code == 1 and "unreachable" in _one_line(err)


@pytest.mark.parametrize(("section", "words"), [
    ('type = "nessie"\n', "type must be one of"),
    ('type = "rest"\n', "needs uri"),
    ('type = "rest"\nuri = "localhost:8181"\n', "needs uri"),
    ('type = "rest"\nuri = "http://localhost:8181"\ntoken = "s3cr3t"\n', "environment reference"),
    ('type = "rest"\nuri = "http://localhost:8181"\ncredential = "${ID:-id}:${SECRET:-x}"\n', "environment reference"),
])  # fmt: skip
def test_bad_rest_config_is_exit_2(cli, tmp_path, section, words):
    conf = _write(tmp_path / "bad.toml", f'name = "bad"\nwarehouse = "{tmp_path}/wh"\nmetastore = "sqlite:///{tmp_path}/m.db"\n'
                                         f"[iceberg]\n{section}")  # fmt: skip
    code, _, err = cli("list", "--catalog", conf)
    assert code == 2 and words in _one_line(err)
    assert not (tmp_path / "m.db").exists()  # refused before anything connects


# --- lakecat local rest ---------------------------------------------------------------------------------
def test_local_rest_commands(cli, served, rest_server, rest_home, tmp_path):
    from urllib.parse import urlparse

    port = str(urlparse(rest_server).port)
    data_dir = str(rest_home / "server")
    code, out, err = cli("local", "rest", "status", "--data-dir", data_dir, "--json")
    assert code == 0, err
    status = json.loads(out)
    assert status["running"] and status["uri"] == rest_server and status["catalog"] == "served"
    # a second start finds the running server
    code, out, err = cli(
        "local", "rest", "start", "--port", port, "--data-dir", data_dir, "--catalog", served.config.source, "--json"
    )
    assert code == 0, err
    assert json.loads(out)["pid"] == status["pid"]
    # another server on the same port is refused, one line
    code, _, err = cli(
        "local", "rest", "start", "--port", port, "--data-dir", tmp_path / "other", "--catalog", served.config.source
    )
    assert code == 1 and "already in use" in _one_line(err)
    # a catalog whose Iceberg tables are behind REST already cannot be served
    conf = _rest_conf(tmp_path / "r.toml", rest_server, name="r")
    from lakecat.processes import free_port

    code, _, err = cli("local", "rest", "start", "--port", free_port(), "--data-dir", tmp_path / "r", "--catalog", conf)
    assert code == 2 and "already" in _one_line(err)
    code, out, _ = cli("local", "rest", "stop", "--data-dir", tmp_path / "other")
    assert code == 0 and "not running" in out
    code, out, _ = cli("local", "rest", "stop", "--data-dir", tmp_path / "other", "--json")
    assert code == 0 and json.loads(out)["stopped"] is False


def _doctor_line(home: Path, data_dir: Path, monkeypatch) -> str:
    """``lakecat doctor``'s line about the local REST server whose state is in ``data_dir``."""
    from lakecat.doctor import _services

    monkeypatch.setenv("LAKECAT_HOME", str(home))  # doctor looks at $LAKECAT_HOME/rest
    (home / "rest").symlink_to(data_dir)
    return next(c.detail for c in _services() if c.name == "local rest")


def test_local_rest_listens_on_loopback_only(cli, rest_server, rest_home, tmp_path, monkeypatch):
    """Nothing but this machine reaches the server lakecat starts by default (it has no authentication)."""
    from urllib.parse import urlparse

    from pyiceberg.catalog.rest import RestCatalog

    port = urlparse(rest_server).port
    assert urlparse(rest_server).hostname == "127.0.0.1"
    assert listening_on(port) == {ipaddress.ip_address("127.0.0.1")}
    assert isinstance(RestCatalog("loopback", uri=rest_server).list_namespaces(), list)  # and it serves
    code, out, err = cli("local", "rest", "status", "--data-dir", rest_home / "server", "--json")
    assert code == 0 and json.loads(out)["host"] == "127.0.0.1", err
    line = _doctor_line(tmp_path, rest_home / "server", monkeypatch)
    assert line.startswith(f"running on {rest_server} ") and line.endswith("loopback only")


@pytest.mark.parametrize("launcher", [True, False], ids=["launcher", "no-launcher-jar"])
def test_local_rest_host_opts_in_to_every_interface_with_a_warning(cli, served, tmp_path, monkeypatch, launcher):
    """``--host 0.0.0.0`` listens on every interface and warns; without the launcher's jar (a source tree never
    installed) the default (loopback) is refused in one line, exit 2, and ``--host 0.0.0.0`` runs Iceberg's own
    server."""
    from pyiceberg.catalog.rest import RestCatalog

    from lakecat.formats.iceberg import rest_server as module
    from lakecat.processes import free_port

    if not launcher:
        monkeypatch.setattr(module, "REST_LAUNCHER_JAR", tmp_path / "lakecat-rest.jar")
        code, _, err = cli("local", "rest", "start", "--port", free_port(), "--data-dir", tmp_path / "refused",
                           "--catalog", served.config.source)  # fmt: skip
        assert code == 2 and "lakecat-rest.jar" in _one_line(err) and "pip install -e ." in err
    port, data_dir = free_port(), tmp_path / "everywhere"
    code, out, err = cli("local", "rest", "start", "--port", port, "--data-dir", data_dir, "--catalog",
                         served.config.source, "--host", "0.0.0.0", "--json")  # fmt: skip
    try:
        assert code == 0, err
        started = json.loads(out)
        assert started["uri"] == f"http://0.0.0.0:{port}" and started["host"] == "0.0.0.0"
        assert "no authentication" in _one_line(err) and "0.0.0.0" in err
        assert listening_on(port) and all(a.is_unspecified for a in listening_on(port))
        remote, ns = RestCatalog("everywhere", uri=f"http://127.0.0.1:{port}"), f"everywhere_{launcher}".lower()
        remote.create_namespace(ns)
        assert (ns,) in remote.list_namespaces()
        remote.drop_namespace(ns)
        line = _doctor_line(tmp_path, data_dir, monkeypatch)
        assert line.startswith(f"running on http://0.0.0.0:{port} ") and "NOT loopback only" in line
    finally:
        cli("local", "rest", "stop", "--data-dir", data_dir)
