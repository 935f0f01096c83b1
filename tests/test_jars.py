"""lakecat's own jar resolution: a used ~/.m2 changes nothing, a mirror replaces Maven Central, offline works.

The network is blocked for the process under test with a new network namespace that has only loopback
(``unshare -n``, as root). Where that is not permitted, the JVM gets a proxy pointing nowhere
(``-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=9``) — Python's side of lakecat never downloads — and the
test says which it used. The mirror is a static HTTP server over a Maven-layout directory started inside the
same namespace; the directory is filled from the run's jar cache (Ivy keeps every module's POM and jars there), or,
when the run has not fetched the sets yet, once by a caching proxy to Maven Central (the only outside traffic).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from functools import cache
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lakecat import jar_sets, jars
from lakecat.config import load_config_file, resolve_config
from lakecat.errors import ConfigError
from lakecat.formats.delta.adapter import delta_coordinate
from lakecat.processes import free_port

LAKECAT = [sys.executable, "-m", "lakecat.commands.main"]
CENTRAL = "https://repo1.maven.org/maven2/"


# --- the repository setting (no network) -------------------------------------------------------------
def test_repository_setting_and_credentials(tmp_path, monkeypatch):
    monkeypatch.delenv(jars.REPOSITORY_ENV, raising=False)
    assert jars.repository().url == CENTRAL
    conf = tmp_path / "corp.toml"
    conf.write_text(f'name = "corp"\nwarehouse = "{tmp_path}/wh"\nmetastore = "sqlite:///{tmp_path}/c.db"\n'
                    '[spark]\nmaven-repository = "https://${CORP_USER}:${CORP_TOKEN}@artifactory.corp/maven-remote"\n')  # fmt: skip
    config = load_config_file(conf)  # the credentials need not be set to read the config (light commands)
    repo = jars.repository(config)
    assert repo.url == "https://artifactory.corp/maven-remote/" and (repo.user_env, repo.password_env) == (
        "CORP_USER",
        "CORP_TOKEN",
    )
    with pytest.raises(ConfigError, match="CORP_USER is not set"):
        repo.credentials()
    monkeypatch.setenv("CORP_USER", "u")
    monkeypatch.setenv("CORP_TOKEN", "s3cret")
    assert repo.credentials() == ("u", "s3cret")
    settings = jars.ivy_settings_xml(repo, tmp_path / "ivy")
    assert (
        "s3cret" not in settings
        and "${env.CORP_TOKEN}" in settings
        and 'root="https://artifactory.corp/maven-remote/"' in settings
    )
    monkeypatch.setenv(jars.REPOSITORY_ENV, "http://127.0.0.1:1/m2")  # the environment wins over the file
    assert jars.repository(config).url == "http://127.0.0.1:1/m2/"
    for literal in (
        "https://user:s3cret@repo.corp/m2",
        "https://user@repo.corp/m2",
        "https://${U}:s3cret@repo.corp/m2",
    ):
        with pytest.raises(ConfigError, match=r"must be \$\{ENV\} references"):
            jars.parse_repository(literal, source="test")
    with pytest.raises(ConfigError, match="not a repository URL"):
        jars.parse_repository("repo.corp/m2", source="test")


def test_sets_and_their_pins():
    config = resolve_config()
    spark = jar_sets.config_spark_set(config)
    coords = spark.coordinates
    assert delta_coordinate() == "io.delta:delta-spark_4.1_2.13:4.4.0"  # one source: delta's helper
    # every format's jars come from its adapter (TableFormat.spark_packages), the Delta one among them
    assert delta_coordinate() in coords and any(
        c.startswith("org.apache.iceberg:iceberg-spark-runtime") for c in coords
    )
    assert "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.0" in coords
    kafka_sql = next(a for a in spark.artifacts if a.name.startswith("spark-sql-kafka"))
    assert kafka_sql.excludes == ("org.apache.spark:spark-token-provider-kafka-0-10_2.13",)
    assert "org.apache.spark:spark-core_2.13" in spark.excludes  # what the pyspark wheel has is never fetched again
    assert (
        spark.key == jar_sets.config_spark_set(config).key and spark.key != jar_sets.spark_set(object_storage=True).key
    )
    names = [s.name for s in jar_sets.sets_for(config, ["kafka", "rest", "s3", "postgres"])]
    assert names == ["spark", "spark-s3", "kafka", "rest"]
    rest = jar_sets.rest_set()
    assert {a.coordinate for a in rest.artifacts} >= {"org.apache.iceberg:iceberg-open-api:1.11.0:test-fixtures",
                                                      "org.apache.iceberg:iceberg-core:1.11.0:tests"}  # fmt: skip
    xml = jars.ivy_module_xml(rest)
    assert 'm:classifier="test-fixtures"' in xml and '<exclude org="org.eclipse.jetty" module="*"/>' in xml
    # iceberg-core and its tests jar: one dependency naming both jars (two would be merged by Ivy, the last one winning)
    assert xml.count('name="iceberg-core" rev=') == 1
    assert (
        '<artifact name="iceberg-core" type="jar" ext="jar"/><artifact name="iceberg-core" type="jar" ext="jar" m:classifier="tests"/>'
        in xml
    )
    from lakecat.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="unknown jar set nope"):
        jar_sets.sets_for(config, ["nope"])


# --- helpers: a blocked network, a mirror --------------------------------------------------------------
@cache
def _can_unshare() -> bool:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    return subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True).returncode == 0


NO_ROUTE = "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=9 -Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=9 -Dhttp.nonProxyHosts=localhost|127.0.0.1"

# Runs inside the blocked network: optionally serves a Maven-layout directory (basic auth) on loopback, then runs
# the commands in turn; prints {"results": [...], "served": N, "isolation": ...}.
SANDBOX = r"""
import base64, functools, http.server, json, subprocess, sys, threading
spec = json.loads(sys.argv[1])
served = []
if spec.get("mirror"):
    token = "Basic " + base64.b64encode(spec["auth"].encode()).decode()
    class Mirror(http.server.SimpleHTTPRequestHandler):
        def _auth(self):
            if self.headers.get("Authorization") == token:
                return True
            self.send_response(401); self.send_header("WWW-Authenticate", 'Basic realm="lakecat test mirror"')
            self.send_header("Content-Length", "0"); self.end_headers(); return False
        def do_GET(self):
            if self._auth():
                served.append(self.path); super().do_GET()
        def do_HEAD(self):
            if self._auth():
                super().do_HEAD()
        def log_message(self, *a): pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", spec["port"]), functools.partial(Mirror, directory=spec["mirror"]))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
results = []
for cmd in spec["commands"]:
    p = subprocess.run(cmd, env=spec["env"], capture_output=True, text=True, timeout=900)
    results.append({"cmd": cmd, "rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr})
print(json.dumps({"results": results, "served": len(served)}))
"""


def run_blocked(commands: list[list[str]], env: dict[str, str], *, mirror: Path | None = None, port: int = 0,
                auth: str = "") -> dict:  # fmt: skip
    """Run commands with no route to the internet (loopback only), optionally with the mirror on loopback."""
    env = dict(env)
    if _can_unshare():
        wrapper, isolation = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"], "network namespace"
    else:
        wrapper, isolation = [], "proxy to nowhere"
        env["JAVA_TOOL_OPTIONS"] = (env.get("JAVA_TOOL_OPTIONS", "") + " " + NO_ROUTE).strip()
    spec = {"mirror": str(mirror) if mirror else None, "port": port, "auth": auth, "commands": commands, "env": env}
    proc = subprocess.run(
        [*wrapper, sys.executable, "-c", SANDBOX, json.dumps(spec)], capture_output=True, text=True, timeout=3600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    doc["isolation"] = isolation
    return doc


class CachingProxy(SimpleHTTPRequestHandler):
    """GET/HEAD /path: the file under the directory, fetched from Maven Central the first time (a recording mirror)."""

    def _ensure(self) -> bool:
        rel = self.path.split("?", 1)[0].lstrip("/")
        if ".." in rel.split("/"):
            return False
        local = Path(self.directory) / rel
        if local.is_file():
            return True
        try:
            with urllib.request.urlopen(CENTRAL + rel, timeout=60) as r:
                data = r.read()
        except (urllib.error.URLError, OSError):
            return False
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp = local.with_name(local.name + ".part")
        tmp.write_bytes(data)
        tmp.replace(local)
        return True

    def do_GET(self):
        if self._ensure():
            super().do_GET()
        else:
            self.send_error(404)

    def do_HEAD(self):  # Ivy asks whether sources and javadoc jars exist: answer without fetching them
        rel = self.path.split("?", 1)[0].lstrip("/")
        if (Path(self.directory) / rel).is_file():
            return super().do_HEAD()
        try:
            with urllib.request.urlopen(urllib.request.Request(CENTRAL + rel, method="HEAD"), timeout=60) as r:
                length = r.headers.get("Content-Length", "0")
        except (urllib.error.URLError, OSError):
            return self.send_error(404)
        self.send_response(200)
        self.send_header("Content-Length", length)
        self.end_headers()

    def log_message(self, *args):
        pass


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECAT_") and k != "JAVA_TOOL_OPTIONS"}
    env.update({"NO_COLOR": "1", **extra})
    return env


def _lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.strip().splitlines() if ln.strip() and not ln.startswith("Picked up JAVA_TOOL_OPTIONS")]


# --- a mirror instead of Maven Central ------------------------------------------------------------------
def _mirror_from_the_jar_cache(mirror: Path) -> bool:
    """Fill ``mirror`` (a Maven layout: POMs, jars and their ``.sha1``) from this run's jar cache, when the cache holds
    the Spark set and the broker's set: Ivy keeps every module's original POM (``ivy-REV.xml.original``) and jars there,
    parents and evicted revisions included, so the mirror serves the same resolution again. False: not cached."""
    sets = jar_sets.sets_for(resolve_config(), ["kafka"])
    if any((found := jars.cached(s)) is None or found.missing() for s in sets):
        return False
    ivy = jars.cache_dir() / "ivy"
    for original in ivy.glob("*/*/ivy-*.xml.original"):
        module_dir = original.parent
        org, module = module_dir.parent.name, module_dir.name
        rev = original.name[len("ivy-") : -len(".xml.original")]
        target = mirror.joinpath(*org.split("."), module, rev)
        target.mkdir(parents=True, exist_ok=True)
        files = {target / f"{module}-{rev}.pom": original}
        for jar in [*module_dir.glob("jars/*.jar"), *module_dir.glob("bundles/*.jar")]:
            if jar.name.startswith((f"{module}-{rev}.", f"{module}-{rev}-")):
                files[target / jar.name] = jar
        for dest, src in files.items():
            shutil.copyfile(src, dest)
            dest.with_name(dest.name + ".sha1").write_text(jars.sha1_of(dest))
    return True


@pytest.mark.slow
@pytest.mark.spark
def test_mirror_replaces_maven_central(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    from functools import partial

    if not _mirror_from_the_jar_cache(mirror):  # a run that has not fetched them yet: through the recording proxy
        proxy = ThreadingHTTPServer(("127.0.0.1", 0), partial(CachingProxy, directory=str(mirror)))
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        try:  # fill the mirror: everything the Spark set and the broker need
            fill = subprocess.run([*LAKECAT, "jars", "fetch", "--with", "kafka", "--json"], capture_output=True, text=True, timeout=1800,
                                  env=_env(LAKECAT_JARS_CACHE=str(tmp_path / "fill-cache"), LAKECAT_HOME=str(tmp_path / "fill-home"),
                                           LAKECAT_MAVEN_REPOSITORY=f"http://127.0.0.1:{proxy.server_address[1]}/"))  # fmt: skip
        finally:
            proxy.shutdown()
        assert fill.returncode == 0, fill.stderr
    assert (mirror / "io" / "delta").is_dir() and (mirror / "org" / "apache" / "kafka").is_dir()

    port = free_port()
    home, conf = tmp_path / "home", tmp_path / "corp.toml"
    conf.write_text(f'name = "corp"\nwarehouse = "{home}/warehouse"\nmetastore = "sqlite:///{home}/catalog.db"\n'
                    f'[spark]\nmaven-repository = "http://${{MIRROR_USER}}:${{MIRROR_TOKEN}}@127.0.0.1:{port}/"\n')  # fmt: skip
    env = _env(
        LAKECAT_HOME=str(home), LAKECAT_JARS_CACHE=str(tmp_path / "cache"), MIRROR_USER="ci", MIRROR_TOKEN="t0ken"
    )
    bad = {**env, "MIRROR_TOKEN": "wrong", "LAKECAT_JARS_CACHE": str(tmp_path / "bad-cache")}
    c = ["--catalog", str(conf)]
    doc = run_blocked([
        [*LAKECAT, "doctor", *c, "--json"],  # before the fetch: the cache is empty, the mirror reachable
        [*LAKECAT, "jars", "fetch", "--with", "kafka", *c, "--json"],  # Spark set + broker, through the mirror only
        [*LAKECAT, "create", "m.t", "--format", "delta", "--schema", "id INT", "--engine", "spark", *c, "--json"],  # Spark starts from them
        [*LAKECAT, "jars", "list", "--json"],
    ], env, mirror=mirror, port=port, auth="ci:t0ken")  # fmt: skip
    r = doc["results"]
    doctor = json.loads(r[0]["stdout"])
    jars_check = next(ch for ch in doctor["checks"] if ch["name"] == "jars")
    assert jars_check["ok"] and "reachable" in jars_check["detail"], jars_check
    assert r[1]["rc"] == 0, (doc["isolation"], r[1]["stderr"])
    fetched = json.loads(r[1]["stdout"])
    assert fetched["repository"]["url"] == f"http://127.0.0.1:{port}/"
    assert fetched["repository"]["credentials_from"] == ["MIRROR_USER", "MIRROR_TOKEN"]
    assert [s["name"] for s in fetched["sets"]] == ["spark", "kafka"] and all(s["fetched"] for s in fetched["sets"])
    assert r[2]["rc"] == 0, r[2]["stderr"]
    assert json.loads(r[2]["stdout"])["name"] == "m.t"
    listing = json.loads(r[3]["stdout"])
    assert listing["ok"] and all(j["sha1_ok"] for j in listing["jars"]) and len(listing["jars"]) > 50
    assert doc["served"] > 50, doc["served"]

    denied = run_blocked([[*LAKECAT, "jars", "fetch", *c, "--json"]], bad, mirror=mirror, port=port, auth="ci:t0ken")[
        "results"
    ][0]
    assert denied["rc"] == 1
    lines = _lines(denied["stderr"])
    assert len(lines) == 1 and lines[0].startswith("error: could not fetch "), denied["stderr"]
    assert f"from http://127.0.0.1:{port}/" in lines[0] and "LAKECAT_MAVEN_REPOSITORY" in lines[0]
    assert "access denied: HTTP 401 with the credentials from MIRROR_USER and MIRROR_TOKEN" in lines[0]
    assert json.loads(denied["stdout"])["error"]["type"] == "JarResolutionError"


# --- a home where Maven was used -------------------------------------------------------------------------
def _used_maven_home(home: Path) -> None:
    """What Maven and an earlier Spark leave: commons-logging 1.3.0's pom without its jar, and Ivy remembering it."""
    m2 = home / ".m2" / "repository" / "commons-logging" / "commons-logging" / "1.3.0"
    m2.mkdir(parents=True)
    (m2 / "commons-logging-1.3.0.pom").write_text(
        '<?xml version="1.0"?><project><modelVersion>4.0.0</modelVersion><groupId>commons-logging</groupId>'
        "<artifactId>commons-logging</artifactId><version>1.3.0</version></project>\n"
    )
    ivy = home / ".ivy2.5.2" / "cache" / "commons-logging" / "commons-logging"
    ivy.mkdir(parents=True)
    pom = (m2 / "commons-logging-1.3.0.pom").as_uri().replace(":", "\\:")
    (ivy / "ivydata-1.3.0.properties").write_text(
        "resolver=local-m2-cache\nartifact.resolver=local-m2-cache\n"
        f"artifact\\:ivy\\#ivy\\#xml\\#82694863.location={pom}\nartifact\\:ivy\\#ivy\\#xml\\#82694863.is-local=true\n"
    )


def _tree(path: Path) -> dict[str, float]:
    return {str(p.relative_to(path)): p.stat().st_mtime for p in sorted(path.rglob("*"))}


@pytest.mark.slow
@pytest.mark.spark
def test_used_maven_home_changes_nothing(tmp_path):
    home = tmp_path / "fakehome"
    _used_maven_home(home)
    env = _env(HOME=str(home), JAVA_TOOL_OPTIONS=f"-Duser.home={home}", LAKECAT_HOME=str(tmp_path / "lakecat"))
    # The trap is real in this home: Spark's own resolution of the same artifact fails.
    trap = ("from pyspark.sql import SparkSession\n"
            "SparkSession.builder.master('local[1]').config('spark.jars.packages', 'commons-logging:commons-logging:1.3.0')"
            ".getOrCreate()\n")  # fmt: skip
    control = subprocess.run([sys.executable, "-c", trap], env=env, capture_output=True, text=True, timeout=600)
    assert control.returncode != 0 and "commons-logging" in control.stderr, control.stderr[-2000:]
    before = _tree(home)

    # lakecat resolves its Spark set afresh in that home (Ivy's downloads reused from the run's cache, so no
    # second download: the resolution itself runs) and starts Spark from it.
    shared = jars.cache_dir()
    ivy = shared / "ivy"
    if not ivy.is_dir():
        subprocess.run([*LAKECAT, "jars", "fetch"], env=_env(LAKECAT_JARS_CACHE=str(shared)), check=True, timeout=1800,
                       capture_output=True)  # fmt: skip
    cache = tmp_path / "cache"
    shutil.copytree(ivy, cache / "ivy", symlinks=True)
    env["LAKECAT_JARS_CACHE"] = str(cache)
    for args in (
        ["jars", "fetch", "--json"],
        ["create", "h.t", "--format", "iceberg", "--schema", "id INT", "--engine", "spark", "--json"],
    ):
        proc = subprocess.run([*LAKECAT, *args], env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-2000:]
    fetched = json.loads(
        subprocess.run([*LAKECAT, "jars", "list", "--json"], env=env, capture_output=True, text=True).stdout
    )
    assert any(j["coordinate"] == "commons-logging:commons-logging:1.3.0" and j["sha1_ok"] for j in fetched["jars"])
    assert _tree(home) == before, "lakecat wrote into ~/.m2 or ~/.ivy2*"
    assert not list(home.glob(".ivy2*/jars")) and not (home / ".cache").exists()


# --- offline ------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.kafka
def test_offline_after_fetch(tmp_path):
    cache = str(jars.cache_dir())
    home = tmp_path / "home"
    fetched = subprocess.run([*LAKECAT, "jars", "fetch", "--with", "kafka", "--json"], capture_output=True, text=True, timeout=1800,
                             env=_env(LAKECAT_JARS_CACHE=cache, LAKECAT_HOME=str(home)))  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    landing = tmp_path / "landing"
    landing.mkdir()
    for f in range(3):
        (landing / f"{f}.json").write_text(
            "\n".join(json.dumps({"id": f * 10 + i, "v": f"x{i}"}) for i in range(10)) + "\n"
        )
    port = free_port()
    kafka = ["--port", str(port), "--data-dir", str(tmp_path / "kafka"), "--json"]
    env = _env(LAKECAT_JARS_CACHE=cache, LAKECAT_HOME=str(home), LAKECAT_OFFLINE="1")
    empty = {**env, "LAKECAT_JARS_CACHE": str(tmp_path / "empty-cache")}
    doc = run_blocked([
        [*LAKECAT, "create", "off.t", "--format", "delta", "--schema", "id BIGINT, v STRING", "--json"],
        [*LAKECAT, "ingest", "off.t", "--files", str(landing), "--file-format", "json", "--max-files-per-batch", "1", "--json"],
        [*LAKECAT, "compact", "off.t", "--json"],
        [*LAKECAT, "local", "kafka", "start", *kafka],
        [*LAKECAT, "local", "kafka", "stop", *kafka],
        [*LAKECAT, "doctor", "--json"],
    ], env)  # fmt: skip
    r = doc["results"]
    for res in r[:5]:
        assert res["rc"] == 0, (doc["isolation"], res["cmd"], res["stderr"][-2000:])
    assert json.loads(r[1]["stdout"])["rows_written"] == 30
    compact = json.loads(r[2]["stdout"])
    assert compact["files_after"] < compact["files_before"]
    assert json.loads(r[3]["stdout"])["running"] is True and json.loads(r[4]["stdout"])["stopped"] is True
    doctor = json.loads(r[5]["stdout"])
    assert next(c for c in doctor["checks"] if c["name"] == "jars")["ok"], doctor

    # offline and not cached: one line naming what is missing and the command that fetches it
    doc = run_blocked([[*LAKECAT, "create", "off.u", "--format", "delta", "--schema", "id INT", "--engine", "spark", "--json"],
                       [*LAKECAT, "local", "kafka", "start", *kafka], [*LAKECAT, "doctor", "--json"]], empty)  # fmt: skip
    for res in doc["results"][:2]:
        assert res["rc"] == 1, res
        lines = _lines(res["stderr"])
        assert len(lines) == 1 and "LAKECAT_OFFLINE is set" in lines[0] and "lakecat jars fetch" in lines[0], res[
            "stderr"
        ]
    assert "jar set 'spark'" in doc["results"][0]["stderr"] and "jar set 'kafka'" in doc["results"][1]["stderr"]
    doctor = doc["results"][2]
    assert doctor["rc"] == 1
    check = next(c for c in json.loads(doctor["stdout"])["checks"] if c["name"] == "jars")
    assert not check["ok"] and "lakecat jars fetch" in check["fix"]

    # a cached set that lost a file: the one line names that jar
    partial_cache = tmp_path / "partial-cache"
    (partial_cache / "sets").mkdir(parents=True)
    manifest = jars.cached(jar_sets.kafka_set())
    assert manifest is not None
    shutil.copy(manifest.manifest, partial_cache / "sets")
    proc = subprocess.run([*LAKECAT, "local", "kafka", "start", *kafka], capture_output=True, text=True, timeout=120,
                          env={**env, "LAKECAT_JARS_CACHE": str(partial_cache)})  # fmt: skip
    assert proc.returncode == 1
    line = _lines(proc.stderr)
    assert (
        len(line) == 1 and manifest.jars[0]["coordinate"] in line[0] and "is missing from the jar cache" in line[0]
    ), proc.stderr


# --- doctor ---------------------------------------------------------------------------------------------
def test_doctor(tmp_path):
    proc = subprocess.run([*LAKECAT, "doctor", "--json"], capture_output=True, text=True, timeout=300,
                          env=_env(LAKECAT_HOME=str(tmp_path / "home"), LAKECAT_JARS_CACHE=str(jars.cache_dir())))  # fmt: skip
    report = json.loads(proc.stdout)
    names = [c["name"] for c in report["checks"]]
    assert names[:5] == ["python", "lakecat", "java", "jars", "metastore"]
    assert {"warehouse", "kafka", "local kafka", "local rest", "disk (cache)"} <= set(names) and names[
        -1
    ] == "extension"
    assert proc.returncode == (0 if report["ok"] else 1)
    assert all(c["fix"] for c in report["checks"] if not c["ok"])
    shown = subprocess.run([*LAKECAT, "--version", "--json"], capture_output=True, text=True, timeout=60, env=_env())
    assert report["versions"] == json.loads(shown.stdout)  # what `lakecat --version` shows

    # a metastore that does not answer, a Kafka that is not there: ✘ with a fix each, exit 1
    conf = tmp_path / "broken.toml"
    conf.write_text(f'name = "broken"\nwarehouse = "{tmp_path}/wh"\nmetastore = "postgresql://u:pw@127.0.0.1:{free_port()}/db"\n'
                    f'[kafka]\nbootstrap = "127.0.0.1:{free_port()}"\n')  # fmt: skip
    env = _env(LAKECAT_HOME=str(tmp_path / "home"), LAKECAT_JARS_CACHE=str(jars.cache_dir()))
    proc = subprocess.run(
        [*LAKECAT, "doctor", "--catalog", str(conf), "--json"], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 1
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert not checks["metastore"]["ok"] and "pw" not in checks["metastore"]["detail"] and checks["metastore"]["fix"]
    assert not checks["kafka"]["ok"] and "lakecat local kafka start" in checks["kafka"]["fix"]
    human = subprocess.run(
        [*LAKECAT, "doctor", "--catalog", str(conf)], capture_output=True, text=True, timeout=300, env=env
    )
    assert human.returncode == 1
    lines = human.stdout.strip().splitlines()
    assert any(ln.startswith("✘ metastore: ") and " — fix: " in ln for ln in lines)
    assert any(ln.startswith("✔ python: ") for ln in lines) and lines[-1] == "2 checks failed"
    versions = subprocess.run([*LAKECAT, "--version"], capture_output=True, text=True, timeout=60, env=env).stdout
    assert lines[: len(versions.splitlines())] == versions.splitlines()  # first, what lakecat runs on
