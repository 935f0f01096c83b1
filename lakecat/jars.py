"""Every jar lakecat needs, resolved by lakecat itself: one repository, one cache, no Maven.

A *jar set* (``lakecat.jar_sets``) is a list of Maven coordinates (with excludes) that one program needs: the
Spark session's packages (Delta, Iceberg runtime, Kafka source, JDBC drivers, and the S3 jars for an
object-storage warehouse), the local Kafka broker, the local Iceberg REST catalog server. Each set is resolved
once, with the Ivy jar that ships inside the pyspark wheel (``pyspark/jars/ivy-2.5.3.jar``) run as a plain Java
program with settings lakecat writes itself:

- one resolver, the configured repository: ``LAKECAT_MAVEN_REPOSITORY``, else ``[spark] maven-repository``
  of the catalog config, else Maven Central. Credentials only as ``${ENV}`` references in its URL
  (``https://${USER}:${TOKEN}@host/path``); they reach Ivy as environment references, never written to disk.
- one cache: ``$LAKECAT_JARS_CACHE`` (default ``~/.cache/lakecat/jars``). ``~/.m2/repository`` and
  ``~/.ivy2*`` are never read or written (a used ``~/.m2`` is what breaks Spark's own resolution).

A resolved set leaves a manifest (``sets/<name>-<key>.json``: coordinates, excludes, repository, and every
jar with its size and SHA-1, which Ivy checked against the repository's ``.sha1``). A later start reads the
manifest and hands the exact files to the JVM: no resolution, no network. ``LAKECAT_OFFLINE=1`` never
touches the network; a set that is not cached is then one error line naming it and ``lakecat jars fetch``.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from .config import expand_env
from .errors import ConfigError, EnvironmentProblemError
from .jar_sets import Artifact, JarSet, config_spark_set, sets_for
from .units import plural

if TYPE_CHECKING:
    from .config import CatalogConfig

MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
REPOSITORY_ENV = "LAKECAT_MAVEN_REPOSITORY"
OFFLINE_ENV = "LAKECAT_OFFLINE"
CACHE_ENV = "LAKECAT_JARS_CACHE"
FETCH_HINT = "run `lakecat jars fetch` where the repository is reachable"
_MANIFEST_VERSION = 1
_IVY_JAR = "ivy-2.5.3.jar"


class JarResolutionError(EnvironmentProblemError):
    """A jar could not be fetched (or, offline, is not in lakecat's jar cache)."""


# --- where: the cache, the repository ----------------------------------------------------------
def cache_dir() -> Path:
    """``$LAKECAT_JARS_CACHE`` or ``~/.cache/lakecat/jars``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "lakecat" / "jars"


def env_flag(name: str) -> bool:
    """Whether the environment variable ``name`` is set to something other than empty, 0, false or no."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def offline() -> bool:
    return env_flag(OFFLINE_ENV)


_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Repository:
    """A Maven-layout repository root; credentials are names of environment variables, never values."""

    url: str  # without credentials, ends with "/"
    user_env: str | None = None
    password_env: str | None = None
    source: str = "Maven Central"

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    def credentials(self) -> tuple[str, str] | None:
        if not self.user_env:
            return None
        missing = [v for v in (self.user_env, self.password_env) if v and v not in os.environ]
        if missing:
            raise ConfigError(
                f"{self.source}: environment variable {missing[0]} is not set (referenced as ${{{missing[0]}}})"
            )
        return os.environ[self.user_env], os.environ.get(self.password_env or "", "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "source": self.source,
            "credentials_from": [v for v in (self.user_env, self.password_env) if v],
        }


def repository(config: CatalogConfig | None = None) -> Repository:
    """``LAKECAT_MAVEN_REPOSITORY``, else the catalog config's ``[spark] maven-repository``, else Maven Central."""
    raw, source = os.environ.get(REPOSITORY_ENV, "").strip(), REPOSITORY_ENV
    if not raw and config is not None and config.maven_repository:
        raw, source = config.maven_repository.strip(), f"{config.source} [spark] maven-repository"
    if not raw:
        return Repository(MAVEN_CENTRAL)
    return parse_repository(raw, source=source)


def parse_repository(raw: str, *, source: str) -> Repository:
    """A repository URL whose credentials, if any, are ``${ENV}`` references: ``https://${U}:${P}@host/path``."""
    userinfo, at, rest = (
        raw.rpartition("@") if "://" in raw and "@" in raw.split("://", 1)[1].split("/", 1)[0] else ("", "", raw)
    )
    user_env = password_env = None
    if at:
        scheme, _, userinfo = userinfo.partition("://")
        rest = f"{scheme}://{rest}"
        user, _, password = userinfo.partition(":")
        refs = [_REF.fullmatch(p) for p in (user, password) if p]
        if not refs or not all(refs):
            raise ConfigError(f"{source}: credentials in the repository URL must be ${{ENV}} references "
                              "(https://${USER_VAR}:${TOKEN_VAR}@host/path), never literal values")  # fmt: skip
        user_env = refs[0].group(1)  # type: ignore[union-attr]
        password_env = refs[1].group(1) if len(refs) > 1 else None  # type: ignore[union-attr]
    if _REF.search(rest):  # ${VAR} elsewhere (host, path): expanded, not secret
        rest = expand_env(rest, source=source)
    parts = urlsplit(rest)
    if parts.scheme not in ("http", "https", "file") or (parts.scheme != "file" and not parts.hostname):
        raise ConfigError(
            f"{source}: {rest!r} is not a repository URL (https://host/path/ of a Maven-layout repository)"
        )
    url = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/"))
    return Repository(url, user_env, password_env, source)


# --- manifests ---------------------------------------------------------------------------------
def _manifest_path(jar_set: JarSet) -> Path:
    return cache_dir() / "sets" / f"{jar_set.name}-{jar_set.key}.json"


@dataclass
class ResolvedSet:
    """A cached jar set: its manifest, with the jar files' absolute paths."""

    name: str
    key: str
    coordinates: list[str]
    excludes: list[str]
    repository: str
    resolved_at: str
    jars: list[dict[str, Any]]  # {"coordinate", "file" (relative to the cache), "size", "sha1"}
    description: str = ""
    manifest: str = ""
    fetched: bool = False  # resolved by this call (not read from the cache)
    seconds: float | None = None

    def paths(self) -> list[Path]:
        root = cache_dir()
        return [root / j["file"] for j in self.jars]

    @property
    def size(self) -> int:
        return sum(int(j["size"]) for j in self.jars)

    def missing(self) -> list[dict[str, Any]]:
        root = cache_dir()
        return [j for j in self.jars if not (root / j["file"]).is_file()]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "key": self.key, "description": self.description, "coordinates": self.coordinates,
                "excludes": self.excludes, "repository": self.repository, "resolved_at": self.resolved_at,
                "manifest": self.manifest, "jars": len(self.jars), "size_bytes": self.size, "fetched": self.fetched,
                "seconds": self.seconds}  # fmt: skip


def cached(jar_set: JarSet) -> ResolvedSet | None:
    """The set's manifest, if it was resolved before (its files are not checked here)."""
    path = _manifest_path(jar_set)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if doc.get("version") != _MANIFEST_VERSION:
        return None
    return ResolvedSet(doc["name"], doc["key"], doc["coordinates"], doc["excludes"], doc["repository"], doc["resolved_at"],
                       doc["jars"], doc.get("description", ""), str(path))  # fmt: skip


def all_cached() -> list[ResolvedSet]:
    out = []
    for path in sorted((cache_dir() / "sets").glob("*.json")):
        with contextlib.suppress(OSError, ValueError, KeyError):
            doc = json.loads(path.read_text())
            if doc.get("version") == _MANIFEST_VERSION:
                out.append(ResolvedSet(doc["name"], doc["key"], doc["coordinates"], doc["excludes"], doc["repository"],
                                       doc["resolved_at"], doc["jars"], doc.get("description", ""), str(path)))  # fmt: skip
    return out


def jar_paths(jar_set: JarSet, *, config: CatalogConfig | None = None) -> list[Path]:
    """The set's jar files, resolving it first unless it is cached (the only call a start needs)."""
    found = cached(jar_set)
    if found is not None:
        missing = found.missing()
        if not missing:
            return found.paths()
        if offline():
            raise JarResolutionError(f"{missing[0]['coordinate']} ({missing[0]['file']}) is missing from the jar cache "
                                     f"{cache_dir()} and {OFFLINE_ENV} is set: {FETCH_HINT}")  # fmt: skip
    return resolve(jar_set, config=config).paths()


# --- resolving ---------------------------------------------------------------------------------
def ivy_jar() -> Path:
    import pyspark

    path = Path(pyspark.__file__).parent / "jars" / _IVY_JAR
    if not path.is_file():
        found = sorted((Path(pyspark.__file__).parent / "jars").glob("ivy-*.jar"))
        if not found:
            raise EnvironmentProblemError("pyspark's Ivy jar (pyspark/jars/ivy-*.jar) is missing: reinstall pyspark")
        path = found[-1]
    return path


def java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise EnvironmentProblemError(
            "no Java found: lakecat's Spark path needs Java 17 (install e.g. 'apt-get install openjdk-17-jre-headless' "
            "or set JAVA_HOME); list/describe/history work without it"
        )
    return java


def _exclude_xml(spec: str) -> str:
    org, _, module = spec.partition(":")
    return f'<exclude org="{html.escape(org)}" module="{html.escape(module or "*")}"/>'


def ivy_module_xml(jar_set: JarSet) -> str:
    """One Ivy module whose dependencies are the set's artifacts.

    Artifacts of one module (``iceberg-core`` and its ``tests`` jar) become one dependency that names each jar: two
    dependencies on one module would be merged by Ivy, the second replacing the first.
    """
    modules: dict[tuple[str, str, str], list[Artifact]] = {}
    for a in jar_set.artifacts:
        modules.setdefault((a.group, a.name, a.version), []).append(a)
    deps = []
    for (group, name, version), arts in modules.items():
        transitive = any(a.transitive for a in arts)
        attrs = f'org="{html.escape(group)}" name="{html.escape(name)}" rev="{html.escape(version)}"'
        attrs += ' conf="default->default"' if transitive else ' conf="default->master" transitive="false"'
        inner = "".join(_exclude_xml(e) for e in dict.fromkeys(e for a in arts for e in a.excludes))
        if len(arts) > 1 or arts[0].classifier:
            for a in arts:
                classifier = f' m:classifier="{html.escape(a.classifier)}"' if a.classifier else ""
                inner += f'<artifact name="{html.escape(name)}" type="jar" ext="jar"{classifier}/>'
        deps.append(f"<dependency {attrs}>{inner}</dependency>" if inner else f"<dependency {attrs}/>")
    excludes = "".join(_exclude_xml(e) for e in jar_set.excludes)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<ivy-module version="2.0" xmlns:m="http://ant.apache.org/ivy/maven">\n'
            f'<info organisation="lakecat" module="{jar_set.name}-{jar_set.key}" revision="1"/>\n'
            '<configurations><conf name="default"/></configurations>\n'
            f"<dependencies>\n{chr(10).join(deps)}\n{excludes}\n</dependencies>\n</ivy-module>\n")  # fmt: skip


PROBE_PATH = "org/apache/ivy/ivy/2.5.3/ivy-2.5.3.pom"  # small, and on every mirror of Central


def probe(repo: Repository, *, timeout: float = 5.0, credentials: bool = True) -> tuple[int | None, str]:
    """GET one small file of the repository: (HTTP status or None, the server's auth realm or the network error)."""
    request = urllib.request.Request(repo.url + PROBE_PATH, method="HEAD")
    creds = repo.credentials() if credentials else None
    if creds:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, ""
    except urllib.error.HTTPError as e:
        m = re.search(r'realm="([^"]*)"', e.headers.get("WWW-Authenticate", "") or "")
        return e.code, m.group(1) if m else ""
    except (OSError, ValueError) as e:
        return None, str(getattr(e, "reason", e))[:160]


def ivy_settings_xml(repo: Repository, ivy_cache: Path, realm: str = "") -> str:
    creds = ""
    if repo.user_env:
        # Ivy reads the values from the environment itself (${env.NAME}): no secret on disk or on a command line.
        # Ivy answers a server's challenge only for the realm it names, so the realm is asked of the server first.
        password = f"${{env.{repo.password_env}}}" if repo.password_env else ""
        creds = (f'<credentials host="{html.escape(repo.host)}" realm="{html.escape(realm)}" '
                 f'username="${{env.{repo.user_env}}}" passwd="{password}"/>')  # fmt: skip
    return f"""<ivysettings>
<properties environment="env"/>
<property name="ivy.checksums" value="sha1,md5"/>
<settings defaultResolver="lakecat"/>
{creds}
<caches defaultCacheDir="{html.escape(str(ivy_cache))}" useOrigin="false" resolutionCacheDir="{html.escape(str(ivy_cache))}/resolution"/>
<resolvers><ibiblio name="lakecat" m2compatible="true" usepoms="true" root="{html.escape(repo.url)}"/></resolvers>
</ivysettings>
"""


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another lakecat process may be resolving the same set right now
        yield


def resolve(jar_set: JarSet, *, config: CatalogConfig | None = None, timeout: float = 1800.0) -> ResolvedSet:
    """Resolve a set from the configured repository into the cache and write its manifest.

    Raises:
        JarResolutionError: Offline, or an artifact could not be fetched (the message names it and the repository).
    """
    if offline():
        raise JarResolutionError(f"jar set '{jar_set.name}' ({jar_set.description or ', '.join(jar_set.coordinates[:2])}) "
                                 f"is not in the jar cache {cache_dir()} and {OFFLINE_ENV} is set: {FETCH_HINT}")  # fmt: skip
    repo = repository(config)
    realm = ""
    if repo.user_env:
        repo.credentials()  # a missing variable is a config error, before Java starts
        code, realm = probe(repo, credentials=False)
        realm = realm if code == 401 else ""
    root = cache_dir()
    with _locked(root / "locks" / f"{jar_set.name}-{jar_set.key}.lock"):
        again = cached(jar_set)
        if again is not None and not again.missing():
            return again
        started = time.monotonic()
        ivy_cache = root / "ivy"
        with tempfile.TemporaryDirectory(prefix="lakecat-ivy-") as tmp:
            work = Path(tmp)
            (work / "ivysettings.xml").write_text(ivy_settings_xml(repo, ivy_cache, realm))
            (work / "ivy.xml").write_text(ivy_module_xml(jar_set))
            cmd = [java_executable(),
                   # Ivy's own defaults live under user.home (~/.ivy2): point them into lakecat's cache.
                   f"-Divy.default.ivy.user.dir={root / 'ivy-home'}", f"-Divy.cache.dir={ivy_cache}",
                   "-cp", str(ivy_jar()), "org.apache.ivy.Main", "-settings", str(work / "ivysettings.xml"),
                   "-cache", str(ivy_cache), "-ivy", str(work / "ivy.xml"), "-confs", "default",
                   "-cachepath", str(work / "classpath.txt")]  # fmt: skip
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=work, check=False)
            except subprocess.TimeoutExpired as e:
                raise JarResolutionError(f"resolving jar set '{jar_set.name}' from {repo.url} took longer than "
                                         f"{timeout:.0f}s; check the network or set {REPOSITORY_ENV} to a closer mirror") from e  # fmt: skip
            output = proc.stdout + proc.stderr
            if proc.returncode != 0 or "UNRESOLVED DEPENDENCIES" in output or "FAILED DOWNLOADS" in output:
                raise JarResolutionError(_failure_line(jar_set, repo, output))
            report = ivy_cache / "resolution" / f"lakecat-{jar_set.name}-{jar_set.key}-default.xml"
            jars = _jars_from_report(report, root)
        resolved = ResolvedSet(jar_set.name, jar_set.key, jar_set.coordinates, list(jar_set.excludes), repo.url,
                               datetime.now(UTC).isoformat(timespec="seconds"), jars, jar_set.description,
                               str(_manifest_path(jar_set)), fetched=True, seconds=round(time.monotonic() - started, 1))  # fmt: skip
        doc = {"version": _MANIFEST_VERSION, "name": resolved.name, "key": resolved.key, "description": resolved.description,
               "coordinates": resolved.coordinates, "excludes": resolved.excludes,
               "artifacts": [a.to_dict() for a in jar_set.artifacts], "repository": resolved.repository,
               "resolved_at": resolved.resolved_at, "jars": jars}  # fmt: skip
        path = _manifest_path(jar_set)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp_path = path.with_suffix(".part")
        tmp_path.write_text(json.dumps(doc, indent=1))
        tmp_path.replace(path)
        return resolved


def _jars_from_report(report: Path, root: Path) -> list[dict[str, Any]]:
    """Every jar of Ivy's resolve report (evicted modules left out), with size and SHA-1."""
    try:
        tree = ET.parse(report)
    except (OSError, ET.ParseError) as e:
        raise EnvironmentProblemError(f"Ivy left no readable resolve report ({report}): {e}") from e
    jars: list[dict[str, Any]] = []
    seen: set[str] = set()
    for module in tree.getroot().iter("module"):
        org, name = module.get("organisation"), module.get("name")
        for rev in module.iter("revision"):
            if rev.get("evicted"):
                continue
            for art in rev.iter("artifact"):
                location = art.get("location")
                if not location or art.get("ext") != "jar" or location in seen:
                    continue
                seen.add(location)
                path = Path(location)
                coordinate = f"{org}:{name}:{rev.get('name')}"
                classifier = next((v for k, v in art.attrib.items() if k.endswith("classifier")), None)
                if classifier:
                    coordinate += f":{classifier}"
                jars.append({"coordinate": coordinate, "file": str(path.relative_to(root)) if path.is_relative_to(root) else str(path),
                             "size": path.stat().st_size, "sha1": sha1_of(path)})  # fmt: skip
    if not jars:
        raise EnvironmentProblemError(f"Ivy's resolve report {report} lists no jar")
    return jars


def sha1_of(path: Path) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_FAILED = re.compile(r"::\s+([\w.\-]+)#([\w.\-]+);([\w.\-+]+)(?:!([\w.\-+]+))?")
_CAUSES = (
    (re.compile(r"UnknownHostException:?\s*([\w.\-]*)"), "unknown host"),
    (re.compile(r"ConnectException[^\n]*?(Connection refused|Network is unreachable|timed out)?"), "cannot connect"),
    (re.compile(r"SocketTimeoutException"), "timed out"),
    (re.compile(r"SSL\w*Exception|PKIX path building failed"), "TLS error (a proxy's certificate?)"),
    (
        re.compile(r"HTTP response status: (401|403)|status code (401|403)|: (401|403)\b"),
        "access denied (credentials?)",
    ),
    (re.compile(r"invalid sha1|wrong sha1|invalid md5"), "checksum mismatch"),
)


def _failure_line(jar_set: JarSet, repo: Repository, output: str) -> str:
    """One line: which artifact, from where, why, and what to do."""
    what = None
    for marker in ("FAILED DOWNLOADS", "UNRESOLVED DEPENDENCIES"):
        if marker in output:
            m = _FAILED.search(output.split(marker, 1)[1])
            if m:
                org, name, rev, file = m.groups()
                what = f"{org}:{name}:{rev}" + (f" ({file})" if file else "")
                break
    cause = next((label for pattern, label in _CAUSES if pattern.search(output)), None)
    if cause is None and "not found" in output:
        cause = "not found there"
        code, _ = probe(repo) if repo.user_env else (None, "")
        if code in (401, 403):  # Ivy reports a refused download as "not found"
            cause = f"access denied: HTTP {code} with the credentials from {' and '.join(filter(None, (repo.user_env, repo.password_env)))}"
    hint = (f"set {REPOSITORY_ENV} (or [spark] maven-repository) to a reachable Maven mirror, or {FETCH_HINT} "
            f"and copy {cache_dir()}; `lakecat doctor` checks both")  # fmt: skip
    if what is None:
        last = next((ln.strip() for ln in reversed(output.splitlines()) if ln.strip()), "no output")
        return f"could not resolve jar set '{jar_set.name}' from {repo.url}: {last[:300]}; {hint}"
    return f"could not fetch {what} from {repo.url}" + (f" ({cause})" if cause else "") + f"; {hint}"


# --- what is cached ----------------------------------------------------------------------------
@dataclass
class CachedJar:
    coordinate: str
    file: str
    size: int
    sha1: str
    status: str  # "ok" | "mismatch" | "missing"
    sets: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"coordinate": self.coordinate, "file": self.file, "size": self.size, "sha1": self.sha1,
                "sha1_ok": self.status == "ok", "status": self.status, "sets": self.sets}  # fmt: skip


@dataclass
class CacheListing:
    cache: str
    sets: list[ResolvedSet]
    jars: list[CachedJar]

    @property
    def ok(self) -> bool:
        return all(j.status == "ok" for j in self.jars)

    def to_dict(self) -> dict[str, Any]:
        return {"cache": self.cache, "ok": self.ok, "size_bytes": sum(j.size for j in self.jars),
                "sets": [s.to_dict() for s in self.sets], "jars": [j.to_dict() for j in self.jars]}  # fmt: skip


def list_cache() -> CacheListing:
    """Every cached set and jar; each jar's SHA-1 recomputed and checked against the repository's (kept at fetch)."""
    root = cache_dir()
    sets = all_cached()
    by_file: dict[str, CachedJar] = {}
    for s in sets:
        for j in s.jars:
            entry = by_file.get(j["file"])
            if entry is None:
                path = root / j["file"]
                if not path.is_file():
                    status = "missing"
                else:
                    status = "ok" if path.stat().st_size == j["size"] and sha1_of(path) == j["sha1"] else "mismatch"
                entry = by_file[j["file"]] = CachedJar(j["coordinate"], str(path), j["size"], j["sha1"], status)
            entry.sets.append(s.name)
    return CacheListing(str(root), sets, sorted(by_file.values(), key=lambda j: j.coordinate))


@dataclass
class FetchResult:
    cache: str
    repository: dict[str, Any]
    sets: list[ResolvedSet]

    def to_dict(self) -> dict[str, Any]:
        return {"cache": self.cache, "repository": self.repository, "sets": [s.to_dict() for s in self.sets],
                "jars": sum(len(s.jars) for s in self.sets), "size_bytes": sum(s.size for s in self.sets)}  # fmt: skip


def fetch(config: CatalogConfig, extras: Iterable[str] = ()) -> FetchResult:
    """Resolve every set the config needs (plus the named extras) into the cache, so later starts need no network."""
    out = []
    for s in sets_for(config, extras):
        found = cached(s)
        out.append(found if found is not None and not found.missing() else resolve(s, config=config))
    return FetchResult(str(cache_dir()), repository(config).to_dict(), out)


def status(config: CatalogConfig) -> tuple[bool, str]:
    """Whether the config's Spark set is cached and complete, and a sentence saying so."""
    s = config_spark_set(config)
    found = cached(s)
    if found is None:
        return False, f"jar set '{s.name}' not cached in {cache_dir()}"
    missing = found.missing()
    if missing:
        return (
            False,
            f"{len(missing)} jar(s) of set '{s.name}' missing from {cache_dir()}, e.g. {missing[0]['coordinate']}",
        )
    return True, (f"the jars Spark needs for this catalog (set '{s.name}') are cached: {plural(len(found.jars), 'jar')}, "
                  f"{found.size / 2**20:.0f} MiB in {cache_dir()}")  # fmt: skip
