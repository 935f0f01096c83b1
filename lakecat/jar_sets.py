"""The jar sets lakecat needs: each a list of Maven coordinates (with excludes) that one program resolves together.

The Spark session's set (every format's packages from its adapter, the Kafka source, the JDBC drivers, and the S3
jars for an object-storage warehouse), the local Kafka broker's, the local Iceberg REST catalog server's. What is
in a set lives here; resolving a set into lakecat's jar cache is ``lakecat.jars``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, InvalidArgumentError
from .formats import all_formats

if TYPE_CHECKING:
    from .config import CatalogConfig


# --- what a set is -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Artifact:
    """One Maven coordinate; ``transitive=False`` takes the jar alone, ``excludes`` are ``group:name`` (``*`` for any)."""

    group: str
    name: str
    version: str
    classifier: str | None = None
    transitive: bool = True
    excludes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, coordinate: str, **kwargs: Any) -> Artifact:
        """``group:name:version`` or ``group:name:version:classifier`` (Spark's ``--packages`` form)."""
        parts = coordinate.strip().split(":")
        if len(parts) not in (3, 4) or not all(parts):
            raise ConfigError(f"invalid Maven coordinate {coordinate!r}: use group:artifact:version")
        return cls(*parts, **kwargs)  # type: ignore[arg-type]

    @property
    def coordinate(self) -> str:
        return ":".join([self.group, self.name, self.version] + ([self.classifier] if self.classifier else []))

    def to_dict(self) -> dict[str, Any]:
        return {"coordinate": self.coordinate, "transitive": self.transitive, "excludes": list(self.excludes)}


@dataclass(frozen=True)
class JarSet:
    """The jars one program needs: resolved together (one conflict resolution), cached under one manifest."""

    name: str
    artifacts: tuple[Artifact, ...]
    excludes: tuple[str, ...] = ()
    description: str = ""

    @property
    def key(self) -> str:
        """Stable across machines and repositories: the same coordinates give the same jars anywhere."""
        spec = json.dumps([[a.to_dict() for a in self.artifacts], sorted(self.excludes)], sort_keys=True)
        return hashlib.sha1(spec.encode()).hexdigest()[:12]

    @property
    def coordinates(self) -> list[str]:
        return [a.coordinate for a in self.artifacts]


# --- coordinates ------------------------------------------------------------------------------
#: Newest 4.x ``org.apache.kafka:kafka_2.13`` whose whole dependency tree is on Maven
#: Central (4.4.0 is listed, but e.g. ``kafka-tools-api:4.4.0`` is not published).
KAFKA_VERSION = "4.3.1"
#: Log4j 2 version matching the ``log4j-core`` that Kafka itself depends on.
LOG4J_VERSION = "2.25.4"

KAFKA_SQL = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1"
# Maven Central has no spark-token-provider-kafka 4.1.x (nor 4.0.1); 4.0.0's classes are what
# spark-sql-kafka 4.1.1 links against, so it is excluded from the resolution and pinned here.
KAFKA_TOKEN_PROVIDER = "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.0"
KAFKA_TOKEN_PROVIDER_EXCLUDE = "org.apache.spark:spark-token-provider-kafka-0-10_2.13"
# The exclude sits on spark-sql-kafka's dependency only (spark_set), so the pinned 4.0.0 is resolved
# on its own, without its dependencies (spark-sql-kafka brings those).


# Object storage (only when the warehouse is s3:// or s3a://, so local users download nothing more).
# hadoop-aws must match the Hadoop that pyspark 4.1.1 bundles (pyspark/jars/hadoop-client-api-3.4.2.jar);
# it serves Delta (and Spark's own file reads) on s3a://. Iceberg writes through its S3FileIO.
HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.4.2"
# The object-storage jars of each format come from its adapter (TableFormat.spark_packages); the SDK bundle
# hadoop-aws asks for is excluded (600 MB; the formats' own bundle carries the same SDK classes).
S3_EXCLUDES = ("software.amazon.awssdk:bundle", "software.amazon.s3.analyticsaccelerator:analyticsaccelerator-s3")
# The one SDK module hadoop-aws needs that iceberg-aws-bundle lacks (S3A copies and uploads through it),
# at the bundle's SDK version. Taken as a single jar (not transitive): its Maven dependencies are all inside the bundle.
S3_TRANSFER_MANAGER = "software.amazon.awssdk:s3-transfer-manager:2.44.4"


SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.53.0.0"  # the version Iceberg 1.11.0 builds with
POSTGRES_JDBC = "org.postgresql:postgresql:42.7.8"


def spark_set(*, object_storage: bool = False, extra_packages: Iterable[str] = ()) -> JarSet:
    """The Spark session's jars: every format's, the Kafka source, both JDBC drivers (S3 jars on request)."""
    formats = [Artifact.parse(c) for adapter in all_formats() for c in adapter.spark_packages(_Storage(object_storage))]  # type: ignore[arg-type]
    artifacts = [
        *formats,
        # spark-sql-kafka's own token provider 4.1.1 is not on Maven Central: excluded here, 4.0.0 pinned below.
        Artifact.parse(KAFKA_SQL, excludes=(KAFKA_TOKEN_PROVIDER_EXCLUDE,)),
        Artifact.parse(KAFKA_TOKEN_PROVIDER, transitive=False),
        Artifact.parse(SQLITE_JDBC),
        Artifact.parse(POSTGRES_JDBC),
    ]
    excludes = pyspark_provided()
    if object_storage:
        artifacts += [Artifact.parse(HADOOP_AWS), Artifact.parse(S3_TRANSFER_MANAGER, transitive=False)]
        excludes += S3_EXCLUDES
    known = {(a.group, a.name) for a in artifacts}
    for p in extra_packages:
        a = Artifact.parse(p)
        if (a.group, a.name) not in known:
            artifacts.append(a)
            known.add((a.group, a.name))
    what = "Spark session (the table formats, Kafka source, JDBC drivers" + (", S3)" if object_storage else ")")
    return JarSet("spark-s3" if object_storage else "spark", tuple(artifacts), excludes, what)


def pyspark_provided() -> tuple[str, ...]:
    """What the pyspark wheel already has on the classpath (Spark's own modules, Scala): never a second copy.

    Spark's own ``--packages`` resolution drops these the same way (SparkSubmitUtils' default excludes).
    """
    import pyspark

    names = {m.group(1) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")
             if (m := re.fullmatch(r"(spark-[\w.-]+_2\.13)-[\d.]+\.jar", p.name))}  # fmt: skip
    return ("org.scala-lang:scala-library", *(f"org.apache.spark:{n}" for n in sorted(names)))


def kafka_set() -> JarSet:
    """The local Kafka broker (KRaft) and a log4j binding for its SLF4J logging."""
    return JarSet("kafka", (Artifact("org.apache.kafka", "kafka_2.13", KAFKA_VERSION),
                            Artifact("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION)),
                  description=f"local Kafka broker {KAFKA_VERSION}")  # fmt: skip


# Iceberg's REST catalog server (RESTCatalogServer, in iceberg-open-api's test fixtures): a set that starts and serves
# (tests/test_rest_catalog.py runs it). Hadoop's Jetty 9 breaks the server's Jetty 12 (NoClassDefFoundError:
# org/eclipse/jetty/server/Handler$Singleton), so Hadoop comes without its Jetty and servlet API.
REST_ICEBERG_VERSION = "1.11.0"
_JETTY = "12.1.8"


def rest_set() -> JarSet:
    """The local Iceberg REST catalog server (development only)."""
    v = REST_ICEBERG_VERSION
    return JarSet("rest", (
        Artifact("org.apache.iceberg", "iceberg-open-api", v, classifier="test-fixtures", transitive=False),
        Artifact("org.apache.iceberg", "iceberg-core", v),
        Artifact("org.apache.iceberg", "iceberg-core", v, classifier="tests", transitive=False),
        Artifact("org.apache.hadoop", "hadoop-common", "3.4.3",
                 excludes=("org.eclipse.jetty:*", "org.eclipse.jetty.websocket:*", "javax.servlet:*")),
        Artifact("org.eclipse.jetty.ee10", "jetty-ee10-servlet", _JETTY),
        Artifact("org.eclipse.jetty.compression", "jetty-compression-server", _JETTY),
        Artifact("org.eclipse.jetty.compression", "jetty-compression-gzip", _JETTY),
        Artifact("org.xerial", "sqlite-jdbc", "3.53.0.0"),
        Artifact("org.slf4j", "slf4j-simple", "2.0.17"),
    ), description=f"local Iceberg REST catalog server {v}")  # fmt: skip


#: ``lakecat jars fetch --with NAME``: what each name adds to the config's own Spark set.
EXTRAS = ("kafka", "rest", "s3", "postgres")


def sets_for(config: CatalogConfig, extras: Iterable[str] = ()) -> list[JarSet]:
    """The sets a catalog config needs (its Spark set), plus the named extras.

    ``postgres``: the PostgreSQL JDBC driver is always part of the Spark set (a process may open catalogs of
    either metastore kind), so the name is accepted and adds nothing.
    """
    extras = [e.strip().lower() for e in extras if e.strip()]
    unknown = [e for e in extras if e not in EXTRAS]
    if unknown:
        raise InvalidArgumentError(f"unknown jar set {', '.join(unknown)}: choose from {', '.join(EXTRAS)}")
    sets = [config_spark_set(config)]
    if "s3" in extras and not config.object_storage:
        sets.append(spark_set(object_storage=True, extra_packages=config.spark_packages))
    if "kafka" in extras:
        sets.append(kafka_set())
    if "rest" in extras:
        sets.append(rest_set())
    return sets


def config_spark_set(config: CatalogConfig) -> JarSet:
    return spark_set(object_storage=config.object_storage, extra_packages=config.spark_packages)


@dataclass(frozen=True)
class _Storage:
    """What ``TableFormat.spark_packages`` reads of a catalog config when a jar set is computed without one."""

    object_storage: bool
