"""``lakecat doctor``: is this machine ready for lakecat? One check per line, each with its fix.

Anchors: ``dbt debug`` (connection and config checks, one per line) and ``flutter doctor`` (✔/✘ with the
command that fixes it). Every check is cheap and bounded by a short timeout; none starts a JVM for Spark.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from . import jars, jvm
from .about import versions_info
from .config import CatalogConfig, _redact, lakecat_home
from .engine import first_line
from .errors import EnvironmentProblemError, LakecatError
from .formats import all_formats
from .processes import is_loopback
from .spark import JAVA_OPTIONS_KEY, MIN_JAVA, driver_java_options, java_version

MIN_FREE_BYTES = 1 << 30  # 1 GiB: a Spark set is ~160 MB, the broker ~45 MB, plus room for data


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix}


@dataclass
class DoctorReport:
    catalog: str
    checks: list[Check] = field(default_factory=list)
    #: The Spark driver lakecat starts on this machine (``spark_sizing``); None when the config's values are invalid.
    spark: dict[str, Any] | None = None
    #: What lakecat runs on (``lakecat.versions_info()``, the document of ``lakecat --version --json``).
    versions: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"catalog": self.catalog, "ok": self.ok, "failed": sum(not c.ok for c in self.checks),
                "checks": [c.to_dict() for c in self.checks], "spark": self.spark, "versions": self.versions}  # fmt: skip


def _guard(name: str, fn: Any) -> list[Check]:
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - a check that breaks is a failed check, never a crashed doctor
        return [
            Check(
                name, False, f"{type(e).__name__}: {e}"[:300], "rerun with --verbose and report it if it is lakecat's"
            )
        ]
    return out if isinstance(out, list) else [out]


def run_doctor(config: CatalogConfig) -> DoctorReport:
    """Run every check against ``config``; never raises for a failing check."""
    report = DoctorReport(config.name)
    report.checks += _guard("versions", lambda: _versions(report))
    for name, fn in (("python", _python), ("lakecat", _lakecat), ("java", _java), ("jars", lambda: _jars(config)),
                     ("metastore", lambda: _metastore(config)), ("warehouse", lambda: _warehouse(config)),
                     ("kafka", lambda: _kafka(config)), ("services", _services), ("disk", lambda: _disk(config)),
                     ("extension", _extension)):  # fmt: skip
        report.checks += _guard(name, fn)
    try:
        report.spark = spark_sizing(config)
    except LakecatError as e:  # e.g. a spark.driver.memory Spark could not read either
        report.checks.append(Check("spark", False, str(e), "fix the value in the catalog config or the environment"))
    return report


def _versions(report: DoctorReport) -> list[Check]:
    """Not a check of its own (the python, lakecat and java checks judge these): what the report shows."""
    report.versions = versions_info().to_dict()
    return []


def spark_sizing(config: CatalogConfig) -> dict[str, Any]:
    """The Spark driver lakecat starts for ``config`` on this machine and where each value came from (``sources``:
    machine, default, config or environment), read the way a start reads it, without starting a JVM."""
    sizing = config.sizing()
    java = shlex.split(driver_java_options(config, sizing))
    java_source = (
        "config" if config.spark_conf.get(JAVA_OPTIONS_KEY) else "machine" if sizing.java_options else "default"
    )
    return {
        "master": sizing.master,
        "cores": sizing.cores,
        "driver_memory": sizing.driver_memory,
        "driver_memory_bytes": sizing.driver_memory_bytes,
        "shuffle_partitions": sizing.shuffle_partitions,
        "java_options": java,
        "sources": {**sizing.sources, "java_options": java_source},
    }


def _python() -> Check:
    v = sys.version_info
    ok = v >= (3, 11)
    return Check("python", ok, f"Python {platform.python_version()} ({sys.executable})",
                 None if ok else "install Python 3.11 or newer and recreate the virtualenv")  # fmt: skip


def _lakecat() -> Check:
    try:
        version = metadata.version("lakecat")
    except metadata.PackageNotFoundError:
        version = "not installed (source tree)"
    deps = []
    for dist in ("pyspark", "delta-spark", "pyiceberg", "deltalake"):
        try:
            deps.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            return Check(
                "lakecat",
                False,
                f"lakecat {version}; {dist} is not installed",
                "pip install -e . (or pip install lakecat)",
            )
    return Check("lakecat", True, f"lakecat {version} ({', '.join(deps)})")


def _java() -> Check:
    java_home = os.environ.get("JAVA_HOME") or "unset"
    fix = f"install Java {MIN_JAVA}+ (e.g. apt-get install openjdk-17-jdk-headless) and set JAVA_HOME"
    try:
        java = jars.java_executable()
    except EnvironmentProblemError:
        return Check("java", False, f"no Java found (JAVA_HOME={java_home}, none on PATH)", fix)
    major, first = java_version(java)
    ok = major is not None and major >= MIN_JAVA
    return Check("java", ok, f"Java {major if major is not None else '?'} at {java} ({first}; JAVA_HOME={java_home})",
                 None if ok else fix)  # fmt: skip


def _jars(config: CatalogConfig) -> Check:
    complete, detail = jars.status(config)
    if complete:
        return Check("jars", True, detail)
    fetch = f"run `lakecat jars fetch{'' if config.name == 'local' else ' --catalog ' + config.name}`"
    if jars.offline():
        return Check(
            "jars", False, f"{detail}; {jars.OFFLINE_ENV} is set", f"{fetch} where the repository is reachable"
        )
    repo = jars.repository(config)
    reachable, why = repository_reachable(repo)
    if reachable:
        return Check("jars", True, f"{detail}; repository {repo.url} reachable (the first Spark start fetches them)",
                     None)  # fmt: skip
    return Check("jars", False, f"{detail}, and repository {repo.url} is not reachable ({why})",
                 f"set {jars.REPOSITORY_ENV} (or [spark] maven-repository) to a reachable mirror, or {fetch} elsewhere "
                 f"and copy {jars.cache_dir()}")  # fmt: skip


def _extension() -> Check:
    """lakecat's Spark extension (``lakecat.jvm``, prebuilt in the package): optional, so never a failing check."""
    jar = jvm.extension_jar()
    if jar is not None:
        return Check("extension", True, f"lakecat's Spark extension (the JSON parse of ingest) at {jar}")
    return Check(
        "extension",
        True,
        f"no lakecat Spark extension: {jvm.problem()}",
        None if jvm.disabled() else "reinstall lakecat (its wheel carries the jar) for the faster JSON parse",
    )


def repository_reachable(repo: Any, timeout: float = 5.0) -> tuple[bool, str]:
    """HEAD one small, always-present file (Ivy's own POM) of the repository, with its credentials."""
    code, why = jars.probe(repo, timeout=timeout)
    if code is None:
        return False, why
    return code < 400 or code == 404, f"HTTP {code}"


def _metastore(config: CatalogConfig) -> Check:
    """Reachable, and what each format keeps there (its adapter's ``metastore_status``)."""
    import sqlalchemy as sa

    ms = config.metastore
    if ms.kind == "sqlite" and ms.sqlite_path is not None and not ms.sqlite_path.exists():
        parent = next((p for p in ms.sqlite_path.parents if p.exists()), None)
        ok = parent is not None and os.access(parent, os.W_OK)
        return Check("metastore", ok, f"{ms.sqlite_path} not created yet (created on first use)",
                     None if ok else f"make {ms.sqlite_path.parent} writable")  # fmt: skip
    connect_args = {"connect_timeout": 5} if ms.kind == "postgresql" else {"timeout": 5}

    found: list[str] = []
    failed: list[str] = []
    try:
        engine = sa.create_engine(ms.sqlalchemy_url, connect_args=connect_args)
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            tables = set(inspector.get_table_names())

            def columns(table: str) -> set[str]:
                return {c["name"] for c in inspector.get_columns(table)}

            for fmt in all_formats():
                try:  # one format's failure is its own line, not "not reachable"
                    status = fmt.metastore_status(config, tables, columns)
                except Exception as e:  # noqa: BLE001 - any error is this format's failed line: the check fails
                    failed.append(
                        f"{fmt.name}: could not read what it keeps there: {first_line(str(e) or type(e).__name__)[:200]}"
                    )
                else:
                    if status is not None:
                        found.append(status)
        engine.dispose()
    except Exception as e:  # noqa: BLE001 - whatever the driver raises, the check fails with its first line
        return Check("metastore", False, f"{_redact(ms.url)} not reachable: {first_line(str(e) or type(e).__name__)[:200]}",
                     "check the metastore URL in the catalog config, the server and the credentials in the environment")  # fmt: skip
    detail = "; ".join([f"{_redact(ms.url)} reachable", *found, *failed])
    return Check("metastore", not failed, detail,
                 None if not failed else "check that the metastore's user may read the tables it holds")  # fmt: skip


def _nearest_existing(path: Path) -> Path | None:
    return next((p for p in (path, *path.parents) if p.exists()), None)


def _warehouse(config: CatalogConfig) -> Check:
    path = config.warehouse_path
    if path is None:
        return Check(
            "warehouse",
            True,
            f"{config.warehouse_uri} is object storage: not probed (credentials from [storage] or AWS_*)",
        )
    base = _nearest_existing(path)
    if base is None or not base.is_dir():
        return Check("warehouse", False, f"{path}: no directory to create it in", f"create {path.parent}")
    try:
        with tempfile.NamedTemporaryFile(dir=base, prefix=".lakecat-doctor-"):
            pass
    except OSError as e:
        return Check(
            "warehouse",
            False,
            f"{path} not writable ({e.strerror})",
            f"make {base} writable or choose another warehouse",
        )
    return Check(
        "warehouse", True, f"{path} writable" + ("" if base == path else f" (created on first use under {base})")
    )


def _kafka(config: CatalogConfig) -> Check:
    bootstrap = os.environ.get("LAKECAT_KAFKA_BOOTSTRAP") or config.kafka_bootstrap
    if not bootstrap:
        return Check(
            "kafka",
            True,
            "no Kafka broker configured, none to check (set [kafka] bootstrap or LAKECAT_KAFKA_BOOTSTRAP to have it checked)",
        )
    failures = []
    for server in bootstrap.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            socket.create_connection((host or "localhost", int(port)), timeout=3).close()
            return Check("kafka", True, f"{bootstrap} reachable ({server.strip()} accepts connections)")
        except (OSError, ValueError) as e:
            failures.append(f"{server.strip()}: {getattr(e, 'strerror', None) or e}")
    return Check("kafka", False, f"{bootstrap} not reachable ({'; '.join(failures)})",
                 "start the broker (`lakecat local kafka start` for a local one) or fix the bootstrap address")  # fmt: skip


def _services() -> list[Check]:
    from .kafka_local import LocalKafka  # loads confluent_kafka

    home = lakecat_home()
    kafka = LocalKafka(data_dir=home / "kafka").status()
    checks = [Check("local kafka", True, f"running on {kafka['bootstrap']} (pid {kafka['pid']})" if kafka["running"]
                    else "not running (`lakecat local kafka start` starts it)")]  # fmt: skip
    rest_state = home / "rest" / "rest-state.json"
    rest = "not running (`lakecat local rest start` serves this catalog's Iceberg tables over the REST protocol)"
    if rest_state.is_file():
        try:
            state = json.loads(rest_state.read_text())
            pid = state.get("pid")
            if isinstance(pid, int):
                os.kill(pid, 0)
                rest = _rest_exposure(str(state.get("host", "127.0.0.1")), state.get("port"), pid)
        except (OSError, ValueError):
            pass
    checks.append(Check("local rest", True, rest))
    return checks


def _rest_exposure(host: str, port: object, pid: int) -> str:
    """Where the local REST catalog server listens, and a warning when that is beyond loopback: it has no
    authentication."""
    where = f"running on http://{f'[{host}]' if ':' in host else host}:{port} (pid {pid})"
    if is_loopback(host):
        return f"{where}, loopback only"
    return (f"{where}, NOT loopback only and without authentication: whoever can reach this machine can create and "
            "drop the catalog's tables (development only; restart it without --host to listen on 127.0.0.1)")  # fmt: skip


def _disk(config: CatalogConfig) -> list[Check]:
    checks = []
    places = [("cache", jars.cache_dir())]
    if config.warehouse_path is not None:
        places.insert(0, ("warehouse", config.warehouse_path))
    for label, path in places:
        base = _nearest_existing(path)
        if base is None:
            continue
        free = shutil.disk_usage(base).free
        ok = free >= MIN_FREE_BYTES
        checks.append(Check(f"disk ({label})", ok, f"{free / 2**30:.1f} GiB free under {path}",
                            None if ok else f"free space under {base} (lakecat wants at least 1 GiB)"))  # fmt: skip
    return checks
