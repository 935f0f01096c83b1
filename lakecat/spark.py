"""The Spark session factory: one session with Delta and Iceberg side by side.

``spark_catalog`` is Delta's catalog; each lakecat catalog's Iceberg tables live in a Spark catalog
of the same name (type jdbc over the metastore). Jars come from lakecat's own resolver (``lakecat.jars``):
resolved once into lakecat's jar cache, then every start passes the exact files as ``spark.jars`` — no
``spark.jars.packages``, so Spark never runs Ivy (and never meets a used ``~/.m2``). The JVM's own output
goes to ``$LAKECAT_HOME/logs/spark.log`` so that stdout stays clean for ``--json``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import interrupt
from .config import CatalogConfig, S3Settings, lakecat_home, store_buckets
from .engine import first_line, is_connect
from .errors import ConfigError, EnvironmentProblemError
from .extras import CONNECT_CLIENT, require
from .formats import all_formats
from .jar_sets import config_spark_set
from .jars import jar_paths, java_executable
from .jvm import EXTENSION_CLASS, extension_jar
from .processes import pid_alive
from .sizing import SparkSizing

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_lock = threading.RLock()
_session: SparkSession | None = None
_catalogs: dict[str, dict[str, str]] = {}
_storage: dict[str, str] | None = None  # the session's S3A settings; None: started without the S3 jars
_buckets: dict[str, S3Settings] = {}  # the buckets whose S3A settings the in-process session has (reach_buckets)
log = logging.getLogger(__name__)


def catalog_spark_conf(config: CatalogConfig) -> dict[str, str]:
    """Settings that register ``config``'s tables in a running session, from every format's adapter."""
    conf: dict[str, str] = {}
    for adapter in all_formats():
        conf.update(adapter.spark_catalog_conf(config))
    return conf


def session_spark_conf(config: CatalogConfig) -> dict[str, str]:
    """Settings fixed at session start: every format's SQL extension (one comma-separated value) and conf."""
    adapters = all_formats()
    extensions = [a.spark_extension for a in adapters if a.spark_extension]
    if extension_jar() is not None:  # lakecat's own (lakecat.jvm): its jar is among engine_jars
        extensions.append(EXTENSION_CLASS)
    conf = {"spark.sql.extensions": ",".join(extensions)}
    for adapter in adapters:
        conf.update(adapter.spark_session_conf(config))
    return conf


def storage_spark_conf(config: CatalogConfig) -> dict[str, str]:
    """Hadoop S3A settings (Delta's and Spark's own file access) a session for ``config`` starts with.

    The warehouse's bucket gets its store's per-bucket settings (``fs.s3a.bucket.<bucket>.*``), so a second catalog's
    bucket in the same session reaches its own store (``reach_buckets`` adds each bucket a catalog claims); the
    catalog's store is also the session's default for a bucket no catalog claimed. Credentials are not among them
    (Spark passes its settings on a command line and shows them in its UI): ``[storage]`` credentials are set on the
    running session (``reach_buckets``), else S3A's default chain reads ``AWS_ACCESS_KEY_ID`` /
    ``AWS_SECRET_ACCESS_KEY`` from the environment (or the machine's role), like Iceberg's S3FileIO.
    """
    s3 = config.s3()
    if s3 is None:
        return {}
    conf = {
        # s3:// warehouses too (Hadoop maps only s3a:// to S3A by itself).
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.endpoint.region": s3.region,
        "spark.hadoop.fs.s3a.path.style.access": str(s3.path_style).lower(),
    }
    if s3.endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = s3.endpoint
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(not s3.allow_http).lower()
    bucket = urlsplit(config.warehouse_uri).netloc
    conf.update({f"spark.hadoop.{k}": v for k, v in s3.hadoop_bucket_conf(bucket, credentials=False).items()})
    return conf


def reach_buckets() -> None:
    """Give the running in-process session the S3A settings (credentials included) of every bucket a catalog of this
    process claimed (``lakecat.config.use_store``): each reaches its own store. A Spark Connect engine keeps the
    settings it started with."""
    with _lock:
        spark = _session
        if spark is None or _storage is None or is_connect(spark):
            return
        hadoop = None
        for bucket, s3 in store_buckets().items():
            if _buckets.get(bucket) == s3:
                continue
            if bucket in _buckets:  # S3A keeps a bucket's filesystem once opened: only new ones see the change
                log.warning("bucket %s changes its object store in a running Spark session", bucket)
            hadoop = hadoop or spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
            for k, v in s3.hadoop_bucket_conf(bucket).items():
                hadoop.set(k, v)
            _buckets[bucket] = s3


def catalog_credentials_conf(config: CatalogConfig) -> dict[str, str]:
    """The ``[storage]`` credentials of ``config``'s Iceberg catalog in a session: set on the running session only,
    never among the settings a JVM starts with."""
    s3 = config.s3()
    if s3 is None or not s3.access_key_id:
        return {}
    prefix = f"spark.sql.catalog.{config.name}"
    props = s3.pyiceberg_properties()
    return {f"{prefix}.{k}": props[k] for k in ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")
            if k in props}  # fmt: skip


def _packages(config: CatalogConfig) -> list[str]:
    """The Maven coordinates of the session's jar set (resolved by lakecat.jars, never by Spark)."""
    return config_spark_set(config).coordinates


def _excludes(config: CatalogConfig) -> list[str]:
    jar_set = config_spark_set(config)
    return [*(e for a in jar_set.artifacts for e in a.excludes), *jar_set.excludes]


def engine_jars(config: CatalogConfig) -> list[str]:
    """The exact jar files of lakecat's Spark driver, in process or the local engine (resolved first when not cached yet)."""
    own = extension_jar()
    return [str(p) for p in jar_paths(config_spark_set(config), config=config)] + ([str(own)] if own else [])


def _check_java() -> None:
    java_executable()


@contextlib.contextmanager
def _jvm_output_to(log_path: Path) -> Iterator[None]:
    """Point fds 1 and 2 at the log file while the JVM starts, so it inherits them for good."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (*saved, fd):
            os.close(f)


def _log_tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


def get_spark(config: CatalogConfig, before_local_start: Callable[[], object] | None = None, *,
              remote: Callable[[CatalogConfig], str | None] | None = None) -> SparkSession:  # fmt: skip
    """The process's Spark session, with ``config``'s Iceberg catalog registered in it.

    When no session exists yet, ``remote(config)`` says where it runs: a Spark Connect URL, or None (and without
    ``remote``) in process (``lakecat.engine_local.engine_url`` makes that choice for a catalog).
    ``before_local_start`` runs before an in-process session starts (not for a Spark Connect one).
    """
    global _session
    with _lock:
        if _session is None:
            _session = _start(config, before_local_start, None if remote is None else remote(config))
            for k, v in catalog_credentials_conf(config).items():
                _session.conf.set(k, v)
        _register_catalog(_session, config)
        reach_buckets()
        return _session


def active_session() -> SparkSession | None:
    return _session


def adopt_session(spark: SparkSession, config: CatalogConfig) -> None:
    """Use ``spark`` as this process's session: a Spark Connect engine's Python worker is handed the session of
    the ``lakecat`` process that started the stream (its catalog already registered there by that process)."""
    global _session, _storage
    with _lock:
        _session = spark
        _catalogs[config.name] = catalog_spark_conf(config)
        _storage = storage_spark_conf(config) or None


class _ConnectProgress:
    """A Spark Connect progress handler: the running stages' tasks of the last operation that reported."""

    def __init__(self) -> None:
        self.tasks: tuple[int, int] | None = None

    def __call__(self, stages: Any = None, inflight_tasks: int = 0, operation_id: str | None = None, done: bool = False,
                 **_: Any) -> None:  # fmt: skip
        running = [s for s in (stages or []) if not s.done]
        total = sum(s.num_tasks for s in running)
        self.tasks = None if done or not total else (sum(s.num_completed_tasks for s in running), total)


_connect_progress = _ConnectProgress()


def running_tasks() -> tuple[int, int] | None:
    """(done, total) tasks of the Spark stages running now; None when Spark is idle or was never started."""
    session = _session
    if session is None:
        return None
    if is_connect(session):
        return _connect_progress.tasks
    try:
        tracker = session.sparkContext.statusTracker()
        stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
    except Exception:  # noqa: BLE001 - a progress bar must never fail the command (e.g. the session stopping)
        return None
    done = sum(s.numCompletedTasks for s in stages if s is not None)
    total = sum(s.numTasks for s in stages if s is not None)
    return (done, total) if total else None


def _register_catalog(spark: SparkSession, config: CatalogConfig) -> None:
    conf = catalog_spark_conf(config)
    known = _catalogs.get(config.name)
    if known == conf:
        return
    if known is not None:
        raise ConfigError(
            f"this process already uses a catalog named {config.name!r} with other settings; "
            "two catalogs in one process need different names"
        )
    storage = storage_spark_conf(config)
    if storage and (_storage is None or (storage != _storage and is_connect(spark))):
        # Jars are fixed when the JVM starts, and a Spark Connect engine's S3A settings with them; an in-process
        # session takes each catalog's buckets' settings (reach_buckets).
        raise ConfigError(
            f"catalog {config.name!r} keeps its data in object storage ({config.warehouse_uri}), but this process's Spark "
            "session was started "
            + ("without the object-storage jars" if _storage is None else "in an engine for another object store")
            + ": use it from a new process"
        )
    for k, v in {**conf, **catalog_credentials_conf(config)}.items():
        spark.conf.set(k, v)
    _catalogs[config.name] = conf


#: JVM options lakecat adds to ``spark.driver.extraJavaOptions`` (after its log4j setting) whatever the heap's size;
#: those that size memory come from the driver's sizing (``lakecat.sizing``, relative to the heap) and are left out
#: when the user sizes the heap. A catalog config's own ``spark.driver.extraJavaOptions`` is appended and replaces any
#: of lakecat's that it sets again (``-XX:Name``, ``-Dname``; one ``-XX:+Use...GC`` replaces lakecat's collector choice
#: and its tuning, ``_COLLECTOR_TUNING``), so a user overrides one flag at a time.
JAVA_GC_OPTIONS = (
    # The throughput collector: a lakecat process runs jobs and ends, so it needs no concurrent marking and no
    # remembered sets (a smaller heap at the peak, more of a small machine's cores left to the job).
    "-XX:+UseParallelGC",
    "-XX:MaxHeapFreeRatio=30",  # a collection gives heap back when it leaves much of it free
    # ... also an explicit System.gc(): without this the parallel collector resizes its generations (and so honours
    # MaxHeapFreeRatio) only after a collection an allocation failed into, and a heap a large job grew stays
    # committed for the rest of the process
    "-XX:+UseAdaptiveSizePolicyWithSystemGC",
    "-XX:MinHeapFreeRatio=10",
    "-Djdk.nio.maxCachedBufferSize=1048576",  # no per-thread cache of the largest direct buffer a thread ever used
)
#: The collector of ``lakecat local engine`` instead (it replaces the one above): a server idles between commands,
#: and G1 gives the heap a collection left free back to the OS, also after a minute without one.
ENGINE_GC_OPTIONS = ("-XX:+UseG1GC", "-XX:G1PeriodicGCInterval=60000")
#: Options that tune lakecat's collector and go with it when a catalog config (or the engine) chooses another one.
_COLLECTOR_TUNING = frozenset({"young", "UseAdaptiveSizePolicyWithSystemGC"})
JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"
#: Environment variables lakecat's Spark driver JVM starts with (the in-process session and ``lakecat local engine``),
#: unless the user's environment sets them. glibc gives each thread that allocates native memory an arena of its own
#: (up to 8 per core) and keeps what it freed there; Spark's driver runs dozens of threads, so 2 arenas keep its
#: native memory from growing with the thread count.
JVM_ENVIRONMENT = {"MALLOC_ARENA_MAX": "2"}
#: With Spark's UI off (lakecat's default) nothing reads the finished jobs, stages and SQL executions Spark's status
#: store keeps for it (1,000 of each by default; the store runs with the UI off too), and their plan descriptions stay
#: live in the old generation next to a --dedupe-key run's keys. The running ones are kept whatever the limit.
STATUS_RETENTION = {
    "spark.ui.retainedJobs": "50",
    "spark.ui.retainedStages": "50",
    "spark.sql.ui.retainedExecutions": "50",
}


#: Where a driver on a local master listens (its RPC, block-manager and UI ports, and the local engine's Spark Connect
#: port): this machine only. Spark's default is the machine's network address, open to anyone who can reach it.
LOOPBACK = "127.0.0.1"
#: The settings that say where a driver listens: when a catalog config sets one of them, lakecat sets none of them.
NETWORK_CONF = ("spark.driver.host", "spark.driver.bindAddress")
#: ... and the same said by the environment (Spark's own variables).
NETWORK_ENV = ("SPARK_LOCAL_IP", "SPARK_LOCAL_HOSTNAME")


def loopback_only(config: CatalogConfig, master: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether lakecat's Spark driver for ``config`` listens on ``LOOPBACK`` only: on a local master (a cluster's
    executors must reach the driver), unless the catalog config or the environment says where it listens."""
    env = os.environ if environ is None else environ
    return (master.strip().startswith("local") and not any(k in config.spark_conf for k in NETWORK_CONF)
            and not any(env.get(k) for k in NETWORK_ENV))  # fmt: skip


def loopback_spark_conf() -> dict[str, str]:
    """The driver's settings for ``loopback_only``: its RPC and block-manager ports bind to, and say, ``LOOPBACK``.
    (Its UI binds to ``SPARK_LOCAL_IP``, set in the JVM's environment: ``jvm_environment``.)"""
    return {"spark.driver.bindAddress": LOOPBACK, "spark.driver.host": LOOPBACK}


def _own_environment(loopback: bool) -> dict[str, str]:
    return {**JVM_ENVIRONMENT, **({"SPARK_LOCAL_IP": LOOPBACK} if loopback else {})}


def jvm_environment(base: Mapping[str, str], *, loopback: bool = False) -> dict[str, str]:
    """``base`` (an environment) with lakecat's ``JVM_ENVIRONMENT`` (and, with ``loopback``, ``SPARK_LOCAL_IP``) for
    the variables it does not set."""
    return {**_own_environment(loopback), **base}


@contextlib.contextmanager
def _jvm_environment(*, loopback: bool = False) -> Iterator[None]:
    """``jvm_environment``'s variables in ``os.environ`` while the JVM starts (pyspark starts it with a copy), then
    gone again."""
    added = {k: v for k, v in _own_environment(loopback).items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def _java_option_key(option: str) -> str:
    """What a JVM option sets: ``gc`` for a collector choice, ``young`` for the young generation's size (a ratio or
    a size: one replaces the other), the flag name of ``-XX:``, the property of ``-D``."""
    if re.fullmatch(r"-XX:[+-]Use(?:Serial|Parallel|ParallelOld|G1|Z|Shenandoah|Epsilon|ConcMarkSweep)GC", option):
        return "gc"
    if re.match(r"-XX:(?:NewRatio|MaxNewSize|NewSize)=", option) or option.startswith("-Xmn"):
        return "young"
    m = re.match(r"-XX:[+-]?(\w+)", option) or re.match(r"-D([^=]+)", option) or re.match(r"(-X(?:ms|mx|ss))", option)
    return m.group(1) if m else option


def merge_java_options(ours: list[str] | tuple[str, ...], theirs: str) -> str:
    """lakecat's JVM options followed by the user's, minus those of ours that the user's set again."""
    user = shlex.split(theirs)
    taken = {_java_option_key(o) for o in user}
    if "gc" in taken:  # another collector: lakecat's tuning of its own goes too
        taken |= _COLLECTOR_TUNING
    return shlex.join([o for o in ours if _java_option_key(o) not in taken] + user)


def java_memory_options(sizing: SparkSizing, *, server: bool = False) -> list[str]:
    """lakecat's JVM memory options: ``JAVA_GC_OPTIONS`` and the sizing's, with ``ENGINE_GC_OPTIONS``' collector for
    a server."""
    ours = [*JAVA_GC_OPTIONS, *sizing.java_options]
    return shlex.split(merge_java_options(ours, shlex.join(ENGINE_GC_OPTIONS))) if server else ours


def driver_java_options(config: CatalogConfig, sizing: SparkSizing, *, server: bool = False) -> str:
    """``spark.driver.extraJavaOptions`` of lakecat's Spark driver: lakecat's log4j setting and memory options merged
    with the catalog config's own."""
    log4j = Path(__file__).with_name("log4j2.properties")
    ours = [f"-Dlog4j2.configurationFile={log4j.as_uri()}", *java_memory_options(sizing, server=server)]
    return merge_java_options(ours, config.spark_conf.get(JAVA_OPTIONS_KEY, ""))


def engine_spark_conf(
    config: CatalogConfig, *, server: bool = False, sizing: SparkSizing | None = None
) -> dict[str, str]:
    """Every setting of lakecat's Spark driver except its jars and master: the in-process session's and, with
    ``server``, the local engine's (``lakecat local engine``), so that both run the same Spark. They differ in the
    collector only (``ENGINE_GC_OPTIONS``). ``sizing``: the driver's (default: ``config.sizing()``, read now)."""
    sizing = sizing or config.sizing()
    user = dict(config.spark_conf)
    java = driver_java_options(config, sizing, server=server)
    user.pop(JAVA_OPTIONS_KEY, None)
    ui_off = user.get("spark.ui.enabled", "false").strip().lower() != "true"  # a user's UI keeps Spark's history
    return {
        **sizing.spark_conf(),  # memory, partitions and adaptive execution for this machine
        JAVA_OPTIONS_KEY: java,
        "spark.ui.enabled": "false",
        **(STATUS_RETENTION if ui_off else {}),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stopGracefullyOnShutdown": "true",
        # Spark's default is ./spark-warehouse, made in whatever directory the user runs lakecat from
        "spark.sql.warehouse.dir": str((lakecat_home() / "spark-warehouse").resolve()),
        **session_spark_conf(config),
        **storage_spark_conf(config),
        **(loopback_spark_conf() if loopback_only(config, sizing.master) else {}),
        **user,
        **catalog_spark_conf(config),
    }


def _start(config: CatalogConfig, before_local_start: Callable[[], object] | None, remote: str | None) -> SparkSession:
    if remote is not None:
        return _connect(config, remote)
    if before_local_start is not None:
        before_local_start()
    global _storage
    _check_java()
    from pyspark.sql import SparkSession

    home = lakecat_home()
    log_path = Path(os.environ.get("LAKECAT_SPARK_LOG") or home / "logs" / "spark.log")
    # Jars: lakecat's own resolved set (lakecat.jars), never spark.jars.packages (an Ivy run at every start).
    jars = engine_jars(config)
    sizing = config.sizing()
    builder = SparkSession.builder.master(sizing.master).appName("lakecat").config("spark.jars", ",".join(jars))
    for k, v in engine_spark_conf(config, sizing=sizing).items():
        builder = builder.config(k, v)
    try:
        with (
            _jvm_output_to(log_path),
            _jvm_environment(loopback=loopback_only(config, sizing.master)),
            interrupt.jvm_starting(),
        ):
            spark = builder.getOrCreate()
    except Exception as e:  # the JVM died before talking to us: say why in one line
        raise _start_failure(e, log_path) from e
    spark.sparkContext.setLogLevel("ERROR")
    _quiet_python_loggers()
    _catalogs[config.name] = catalog_spark_conf(config)
    _storage = storage_spark_conf(config) or None
    if _storage and "hadoop-aws" not in (spark.sparkContext._jvm.java.lang.System.getProperty("spark.jars") or ""):  # type: ignore[union-attr]
        # pyspark reuses a stopped session's JVM, whose jars were fixed at its first start.
        spark.stop()
        raise ConfigError(
            f"catalog {config.name!r} keeps its data in object storage, but this process's JVM was started without the "
            "object-storage jars: use the catalog from a new process"
        )
    return spark


#: Where Spark-path commands run (``lakecat.engine_local.choose_engine``): ``auto``, ``in-process``, ``local`` or
#: ``sc://host:port``.
ENGINE_ENV = "LAKECAT_ENGINE"
ENGINE_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
ENGINE_STATE_FILE = "engine-state.json"


def engine_dir() -> Path:
    """Where the local engine (``lakecat local engine``, lakecat.engine_local) records its pid, port and catalog."""
    return lakecat_home() / "engine"


def engine_state(data_dir: Path, *, running: bool = True) -> dict[str, Any] | None:
    """The local engine's recorded state; with ``running``, only while its process runs."""
    try:
        state = json.loads((data_dir / ENGINE_STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    if running and not (isinstance(state.get("pid"), int) and pid_alive(state["pid"], ENGINE_SERVER_CLASS)):
        return None
    return state


def _reachable(url: str, timeout: float = 5.0) -> None:
    """Fail fast on an endpoint that does not accept connections (the Connect client retries for minutes)."""
    parts = urlsplit(url.replace("sc://", "http://", 1))
    try:
        socket.create_connection((parts.hostname or "localhost", parts.port or 15002), timeout=timeout).close()
    except OSError as e:
        raise EnvironmentProblemError(
            f"the Spark Connect engine {url} does not accept connections ({e.strerror or e}): start it "
            f"(lakecat local engine start) or point [spark] engine / {ENGINE_ENV} elsewhere (in-process: no engine)"
        ) from None


def _connect(config: CatalogConfig, url: str) -> SparkSession:
    """A Spark Connect session: no JVM in this process; the engine holds lakecat's jars and extensions."""
    global _storage
    from pyspark.sql import SparkSession

    shown = url.split(";", 1)[0].rstrip("/")
    for module in CONNECT_CLIENT:  # pyspark[connect]: named in one line before pyspark fails on one of them
        require(module, extra=None, feature="the Spark Connect client")
    _reachable(shown)
    try:
        settings = {"spark.sql.session.timeZone": "UTC", **catalog_spark_conf(config)}
        spark = SparkSession.builder.remote(url).getOrCreate()
        set_all = getattr(spark.conf, "_set_all", None)  # pyspark's Connect client: one round trip for them all
        if set_all is not None:
            set_all(settings, silent=False)
        else:
            for k, v in settings.items():
                spark.conf.set(k, v)
    except Exception as e:  # noqa: BLE001 - unreachable, refused, or not a Spark Connect server
        raise EnvironmentProblemError(f"Spark Connect engine {shown} did not answer: {first_line(str(e))}") from e
    spark.registerProgressHandler(_connect_progress)
    _quiet_python_loggers()
    _catalogs[config.name] = catalog_spark_conf(config)
    _storage = storage_spark_conf(config) or None
    return spark


MIN_JAVA = 17
_NO_MEMORY = ("Could not reserve enough space", "Cannot allocate memory", "Invalid maximum heap size",
              "Invalid initial heap size", "larger value than the maximum heap size", "OutOfMemoryError",
              "insufficient memory for the Java Runtime")  # fmt: skip


def java_version(java: str | None = None) -> tuple[int | None, str]:
    """The major version of ``java`` (default: the one lakecat would start) and its ``-version`` first line."""
    try:
        proc = subprocess.run([java or java_executable(), "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)
    text = (proc.stderr + proc.stdout).strip()
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        return None, text.splitlines()[0] if text else "no output"
    major = int(m.group(1))
    if major == 1 and m.group(2):  # 1.8 -> 8
        major = int(m.group(2))
    return major, text.splitlines()[0]


def _start_failure(error: Exception, log_path: Path) -> EnvironmentProblemError:
    """The cause of a JVM that did not start, in one line: Java too old, no memory, else the log's last word."""
    tail = _log_tail(log_path, 60)
    java_home = os.environ.get("JAVA_HOME") or "unset"
    if any(marker in tail for marker in _NO_MEMORY):
        line = next((ln.strip() for ln in reversed(tail.split(" | ")) if any(m in ln for m in _NO_MEMORY)), "")
        return EnvironmentProblemError(
            f"the Spark JVM could not get its memory ({line[:160]}): lower spark.driver.memory in the catalog config's "
            f"[spark.conf] (or free memory); see {log_path}"
        )
    major, first = java_version()
    if major is not None and major < MIN_JAVA or "UnsupportedClassVersionError" in tail:
        return EnvironmentProblemError(
            f"Java {major if major is not None else '?'} is too old ({first}; JAVA_HOME={java_home}): lakecat's Spark path "
            f"needs Java {MIN_JAVA} or newer — install it (e.g. 'apt-get install openjdk-17-jre-headless') and point "
            "JAVA_HOME at it"
        )
    message = str(error)
    if "JAVA_GATEWAY_EXITED" in message or "Java gateway process exited" in message:
        lines = [ln for ln in tail.split(" | ") if ln and not ln.startswith(("\tat ", "at "))]
        message = f"the JVM exited ({lines[-1][:200]})" if lines else "the JVM exited"
    return EnvironmentProblemError(f"Spark failed to start: {message}; see {log_path}")


def _quiet_python_loggers() -> None:
    # pyspark logs every analysis error with its full Java stack trace to stderr; lakecat reports one line.
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def stop_spark() -> None:
    global _session, _storage
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None
            _catalogs.clear()
            _buckets.clear()
            _storage = None
