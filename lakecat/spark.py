"""The Spark session factory: one session with Delta and Iceberg side by side.

``spark_catalog`` is Delta's catalog; each lakecat catalog's Iceberg tables live in a Spark catalog
of the same name (type jdbc over the metastore). Jars come from Maven Central through
``configure_spark_with_delta_pip(..., extra_packages=...)``. The JVM's own output goes to
``$LAKECAT_HOME/logs/spark.log`` so that stdout stays clean for ``--json``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .config import CatalogConfig, lakecat_home
from .errors import ConfigError, EnvironmentProblemError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ICEBERG_RUNTIME = "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0"
KAFKA_SQL = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1"
# Maven Central has no spark-token-provider-kafka 4.1.x (nor 4.0.1); 4.0.0's classes are what
# spark-sql-kafka 4.1.1 links against, so it is excluded from the resolution and pinned here.
KAFKA_TOKEN_PROVIDER = "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.0"
KAFKA_TOKEN_PROVIDER_EXCLUDE = "org.apache.spark:spark-token-provider-kafka-0-10_2.13"
# The exclude drops every version of it from Ivy's resolution, 4.0.0 included: the jar comes in through spark.jars.
KAFKA_TOKEN_PROVIDER_JAR = "org/apache/spark/spark-token-provider-kafka-0-10_2.13/4.0.0/spark-token-provider-kafka-0-10_2.13-4.0.0.jar"


# Object storage (only when the warehouse is s3:// or s3a://, so local users download nothing more).
# hadoop-aws must match the Hadoop that pyspark 4.1.1 bundles (pyspark/jars/hadoop-client-api-3.4.2.jar);
# it serves Delta (and Spark's own file reads) on s3a://. Iceberg writes through its S3FileIO.
HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.4.2"
# Iceberg's S3FileIO plus AWS SDK v2 2.44.4 under its own package names: hadoop-aws links against the
# same SDK classes, so the 600 MB software.amazon.awssdk:bundle that hadoop-aws asks for is excluded,
# and so is analyticsaccelerator-s3, which iceberg-aws-bundle carries as well.
ICEBERG_AWS_BUNDLE = "org.apache.iceberg:iceberg-aws-bundle:1.11.0"
S3_EXCLUDES = ("software.amazon.awssdk:bundle", "software.amazon.s3.analyticsaccelerator:analyticsaccelerator-s3")
# The one SDK module hadoop-aws needs that iceberg-aws-bundle lacks (S3A copies and uploads through it),
# at the bundle's SDK version. Taken as a single jar: its Maven dependencies are all inside the bundle.
S3_TRANSFER_MANAGER_JAR = "software/amazon/awssdk/s3-transfer-manager/2.44.4/s3-transfer-manager-2.44.4.jar"


def _direct_jar(maven_path: str) -> str:
    """One jar (no dependencies) from Maven Central, downloaded once into lakecat's jar cache."""
    local = Path.home() / ".m2" / "repository" / maven_path
    if local.exists():
        return local.as_uri()
    from .kafka_local import jars_cache_dir

    cached = jars_cache_dir() / Path(maven_path).name
    if not cached.exists():
        import urllib.request

        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".part")
        try:
            with urllib.request.urlopen(f"https://repo1.maven.org/maven2/{maven_path}", timeout=60) as r:
                tmp.write_bytes(r.read())
        except OSError as e:
            raise EnvironmentProblemError(
                f"Spark could not download its jars from Maven Central (first start needs the network to repo1.maven.org): {e}"
            ) from e
        tmp.replace(cached)
    return cached.as_uri()


def _token_provider_jar() -> str:
    """The Kafka token provider jar, downloaded once from Maven Central into lakecat's jar cache."""
    return _direct_jar(KAFKA_TOKEN_PROVIDER_JAR)


SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.53.0.0"  # the version Iceberg 1.11.0 builds with
POSTGRES_JDBC = "org.postgresql:postgresql:42.7.8"

_lock = threading.RLock()
_session: SparkSession | None = None
_catalogs: dict[str, dict[str, str]] = {}
_storage: dict[str, str] | None = None  # the session's S3A settings; None: started without the S3 jars


def iceberg_catalog_conf(config: CatalogConfig) -> dict[str, str]:
    """Spark settings for the config's Iceberg catalog (named like the lakecat catalog)."""
    prefix = f"spark.sql.catalog.{config.name}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.warehouse": config.warehouse_uri,
        # Other engines (pyiceberg, other lakecat processes) commit too: always read the current metadata.
        f"{prefix}.cache-enabled": "false",
    }
    s3 = config.s3()
    if s3 is not None:
        conf[f"{prefix}.io-impl"] = "org.apache.iceberg.aws.s3.S3FileIO"
        conf[f"{prefix}.client.region"] = s3.region
        conf[f"{prefix}.s3.path-style-access"] = str(s3.path_style).lower()
        if s3.endpoint:
            conf[f"{prefix}.s3.endpoint"] = s3.endpoint
    options = config.format_options.get("iceberg", {})
    kind = options.get("type", "jdbc")
    if kind == "jdbc":
        uri, props = config.metastore.jdbc()
        conf[f"{prefix}.type"] = "jdbc"
        conf[f"{prefix}.uri"] = uri
        for k, v in props.items():
            conf[f"{prefix}.jdbc.{k}"] = v
    for k, v in options.items():
        conf[f"{prefix}.{k}"] = v
    return conf


def storage_spark_conf(config: CatalogConfig) -> dict[str, str]:
    """Hadoop S3A settings (Delta's and Spark's own file access) for an object-storage warehouse.

    Credentials are not among them: S3A's default chain reads ``AWS_ACCESS_KEY_ID`` /
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
    return conf


def _packages(config: CatalogConfig) -> list[str]:
    # Both JDBC drivers always: catalogs of either metastore kind can join the running session later.
    packages = [ICEBERG_RUNTIME, KAFKA_SQL, KAFKA_TOKEN_PROVIDER, SQLITE_JDBC, POSTGRES_JDBC]
    if config.object_storage:
        packages += [HADOOP_AWS, ICEBERG_AWS_BUNDLE]
    return packages + [p for p in config.spark_packages if p not in packages]


def _direct_jars(config: CatalogConfig) -> list[str]:
    jars = [_token_provider_jar()]
    if config.object_storage:
        jars.append(_direct_jar(S3_TRANSFER_MANAGER_JAR))
    return jars


def _excludes(config: CatalogConfig) -> list[str]:
    return [KAFKA_TOKEN_PROVIDER_EXCLUDE, *(S3_EXCLUDES if config.object_storage else ())]


def _check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return
    if shutil.which("java") is None:
        raise EnvironmentProblemError(
            "no Java found: lakecat's Spark path needs Java 17 (install e.g. 'apt-get install openjdk-17-jdk-headless' "
            "or set JAVA_HOME); list/describe/history work without it"
        )


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


def get_spark(config: CatalogConfig) -> SparkSession:
    """The process's Spark session, with ``config``'s Iceberg catalog registered in it."""
    global _session
    with _lock:
        if _session is None:
            _session = _start(config)
        _register_catalog(_session, config)
        return _session


def active_session() -> SparkSession | None:
    return _session


def _register_catalog(spark: SparkSession, config: CatalogConfig) -> None:
    conf = iceberg_catalog_conf(config)
    known = _catalogs.get(config.name)
    if known == conf:
        return
    if known is not None:
        raise ConfigError(
            f"this process already uses a catalog named {config.name!r} with other settings; "
            "two catalogs in one process need different names"
        )
    storage = storage_spark_conf(config)
    if storage and storage != _storage:
        # Jars and Hadoop's S3A settings are fixed when the JVM starts.
        raise ConfigError(
            f"catalog {config.name!r} keeps its data in object storage ({config.warehouse_uri}), but this process's Spark "
            "session was started "
            + ("without the object-storage jars" if _storage is None else "for another object store")
            + ": use it from a new process"
        )
    for k, v in conf.items():
        spark.conf.set(k, v)
    _catalogs[config.name] = conf


def _start(config: CatalogConfig) -> SparkSession:
    global _storage
    _check_java()
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    home = lakecat_home()
    log_path = Path(os.environ.get("LAKECAT_SPARK_LOG") or home / "logs" / "spark.log")
    log4j = Path(__file__).with_name("log4j2.properties")
    builder = (
        SparkSession.builder.master(config.spark_master)
        .appName("lakecat")
        .config(
            "spark.sql.extensions",
            "io.delta.sql.DeltaSparkSessionExtension,org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        )
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.jars.excludes", ",".join(_excludes(config)))
        .config("spark.jars", ",".join(_direct_jars(config)))
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j.as_uri()}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.sql.streaming.stopGracefullyOnShutdown", "true")
    )
    for k, v in storage_spark_conf(config).items():
        builder = builder.config(k, v)
    for k, v in config.spark_conf.items():
        builder = builder.config(k, v)
    for k, v in iceberg_catalog_conf(config).items():
        builder = builder.config(k, v)
    builder = configure_spark_with_delta_pip(builder, extra_packages=_packages(config))
    try:
        with _jvm_output_to(log_path):
            spark = builder.getOrCreate()
    except Exception as e:  # the JVM died before talking to us: say why in one line
        tail = _log_tail(log_path, 40)
        if "unresolved dependency" in tail or "not found" in tail and "central" in tail:
            raise EnvironmentProblemError(
                "Spark could not download its jars from Maven Central (first start needs the network to "
                f"repo1.maven.org, later starts use the Ivy cache); see {log_path}"
            ) from e
        raise EnvironmentProblemError(f"Spark failed to start: {e}; see {log_path}") from e
    spark.sparkContext.setLogLevel("ERROR")
    _ship_resolved_jars(spark)
    _quiet_python_loggers()
    _catalogs[config.name] = iceberg_catalog_conf(config)
    _storage = storage_spark_conf(config) or None
    if _storage and "hadoop-aws" not in (spark.sparkContext._jvm.java.lang.System.getProperty("spark.jars") or ""):  # type: ignore[union-attr]
        # pyspark reuses a stopped session's JVM, whose jars were fixed at its first start.
        spark.stop()
        raise ConfigError(
            f"catalog {config.name!r} keeps its data in object storage, but this process's JVM was started without the "
            "object-storage jars: use the catalog from a new process"
        )
    return spark


def _ship_resolved_jars(spark: SparkSession) -> None:
    """Give executors every jar the driver has, not just the ones lakecat names in ``spark.jars``.

    spark-submit resolves ``spark.jars.packages`` (Delta, Iceberg, Kafka, JDBC drivers) and merges those
    jars with ``spark.jars`` into a JVM system property; pyspark then sets ``spark.jars`` once more from
    the builder's options, so the SparkContext registers only lakecat's directly named jars. The driver
    has everything on its classpath either way (local mode never notices), but executors of a real
    cluster would deserialize tasks without Delta's and Iceberg's classes. Registering the merged list
    before the first job is what spark-submit would have done; local mode shares the driver's classpath
    and skips the copies.
    """
    sc = spark.sparkContext
    if sc.master.startswith("local"):
        return
    jvm = sc._jvm
    jsc = sc._jsc.sc()  # type: ignore[union-attr]
    merged = jvm.java.lang.System.getProperty("spark.jars") or ""  # type: ignore[union-attr]
    listed = getattr(jvm, "scala.jdk.javaapi.CollectionConverters").asJava(jsc.listJars())
    known = {_jar_name(u) for u in listed}
    for jar in (j.strip() for j in merged.split(",")):
        if jar and _jar_name(jar) not in known:
            jsc.addJar(jar)
            known.add(_jar_name(jar))


def _jar_name(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[-1]


def _quiet_python_loggers() -> None:
    # pyspark logs every analysis error with its full Java stack trace to stderr; lakecat reports one line.
    import logging

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
            _storage = None
