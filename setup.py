"""lakecat's build: the packages found in the source tree, and lakecat's Java helpers compiled into jars in the package.

Everything else about the package is in ``pyproject.toml``. Two small Java sources ship as jars built here, so that a
user's machine needs only a Java runtime:

- ``lakecat/java/LakecatExtensions.java`` -> ``lakecat/java/lakecat-spark.jar``: the Spark SQL extension (ingest's JSON
  parse), compiled against Spark 4.1.1's own jars (pinned with pyspark in ``pyproject.toml``);
- ``lakecat/java/LoopbackRESTCatalogServer.java`` -> ``lakecat/java/lakecat-rest.jar``: the launcher that runs Iceberg's
  REST catalog server on one address, compiled against Iceberg 1.11.0's REST server and Jetty 12.

Building needs a JDK 17+ (``javac``, found beside ``$JAVA_HOME/bin/java`` or on ``PATH``). The compile-time jars come
from the installed pyspark when the build environment has one (``--no-build-isolation``), else from the Maven
repository ``LAKECAT_MAVEN_REPOSITORY`` (default Maven Central), checked against the repository's SHA-1 and kept in
``$LAKECAT_BUILD_CACHE`` (default ``~/.cache/lakecat/build``). An editable install (``pip install -e .``) writes the
jars into the source tree; install again after changing a Java source.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
JAVA_SOURCES = ROOT / "lakecat" / "java"
JAVA_RELEASE = "17"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"

SPARK = "4.1.1"
SCALA = "2.13.17"
# What LakecatExtensions.java compiles against: Spark's SQL modules and what their signatures name.
SPARK_COMPILE = [
    f"org.apache.spark:spark-sql_2.13:{SPARK}",
    f"org.apache.spark:spark-catalyst_2.13:{SPARK}",
    f"org.apache.spark:spark-sql-api_2.13:{SPARK}",
    f"org.apache.spark:spark-unsafe_2.13:{SPARK}",
    f"org.apache.spark:spark-common-utils_2.13:{SPARK}",
    f"org.scala-lang:scala-library:{SCALA}",
    f"org.scala-lang:scala-reflect:{SCALA}",
    "com.fasterxml.jackson.core:jackson-core:2.20.0",
    "com.esotericsoftware:kryo-shaded:4.0.3",
]
ICEBERG = "1.11.0"
JETTY = "12.1.8"
# What LoopbackRESTCatalogServer.java compiles against: the REST server's classes (iceberg-open-api's test fixtures,
# iceberg-core's tests jar), Iceberg's core, and the Jetty 12 handlers it wires (the versions lakecat runs it with).
REST_COMPILE = [
    f"org.apache.iceberg:iceberg-open-api:{ICEBERG}:test-fixtures",
    f"org.apache.iceberg:iceberg-core:{ICEBERG}",
    f"org.apache.iceberg:iceberg-core:{ICEBERG}:tests",
    f"org.eclipse.jetty:jetty-server:{JETTY}",
    f"org.eclipse.jetty:jetty-util:{JETTY}",
    f"org.eclipse.jetty.ee10:jetty-ee10-servlet:{JETTY}",
    f"org.eclipse.jetty.compression:jetty-compression-gzip:{JETTY}",
    f"org.eclipse.jetty.compression:jetty-compression-server:{JETTY}",
    f"org.eclipse.jetty.compression:jetty-compression-common:{JETTY}",
    "jakarta.servlet:jakarta.servlet-api:6.0.0",
]
JARS = {  # jar in lakecat/java/ -> (its source, what it compiles against)
    "lakecat-spark.jar": ("LakecatExtensions.java", SPARK_COMPILE),
    "lakecat-rest.jar": ("LoopbackRESTCatalogServer.java", REST_COMPILE),
}


class JavaBuildError(RuntimeError):
    pass


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    beside = Path(home) / "bin" / "javac" if home else None
    java = shutil.which("java")
    if beside is None and java is not None:
        beside = Path(os.path.realpath(java)).parent / "javac"
    found = str(beside) if beside is not None and beside.exists() else shutil.which("javac")
    if found is None:
        raise JavaBuildError("building lakecat needs a JDK 17+ (javac): none found on JAVA_HOME or PATH")
    return found


def _maven_path(coordinate: str) -> str:
    group, name, version, *classifier = coordinate.split(":")
    file = f"{name}-{version}" + (f"-{classifier[0]}" if classifier else "") + ".jar"
    return f"{group.replace('.', '/')}/{name}/{version}/{file}"


def _from_pyspark(coordinate: str) -> Path | None:
    """The same jar from an installed pyspark (a build without isolation, or an editable install)."""
    try:
        import pyspark
    except ImportError:
        return None
    jar = Path(pyspark.__file__).parent / "jars" / Path(_maven_path(coordinate)).name
    return jar if jar.is_file() else None


def _download(coordinate: str) -> Path:
    repo = os.path.expandvars(os.environ.get("LAKECAT_MAVEN_REPOSITORY", "").strip() or MAVEN_CENTRAL)
    cache = Path(os.environ.get("LAKECAT_BUILD_CACHE") or Path.home() / ".cache" / "lakecat" / "build")
    relative = _maven_path(coordinate)
    target = cache / relative
    if target.is_file():
        return target
    url = repo.rstrip("/") + "/" + relative
    try:
        with urllib.request.urlopen(url + ".sha1", timeout=60) as r:  # noqa: S310 - the configured Maven repository
            expected = r.read().decode().split()[0].strip().lower()
        with urllib.request.urlopen(url, timeout=300) as r:  # noqa: S310
            data = r.read()
    except OSError as e:
        raise JavaBuildError(f"cannot download {coordinate} from {repo} ({e}): set LAKECAT_MAVEN_REPOSITORY") from e
    if hashlib.sha1(data).hexdigest() != expected:  # noqa: S324 - Maven repositories publish SHA-1
        raise JavaBuildError(f"{url}: checksum differs from the repository's .sha1")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def compile_jar(source: Path, classpath: list[Path], jar: Path) -> None:
    """``javac --release 17`` ``source`` against ``classpath`` into the jar ``jar`` (its classes only)."""
    with tempfile.TemporaryDirectory(prefix="lakecat-javac-") as tmp:
        classes = Path(tmp)
        run = subprocess.run(
            [_javac(), "--release", JAVA_RELEASE, "-nowarn", "-encoding", "UTF-8", "-d", str(classes),
             "-cp", os.pathsep.join(map(str, classpath)), str(source)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if run.returncode != 0:
            raise JavaBuildError(f"javac {source.name} failed:\n{run.stderr or run.stdout}")
        jar.parent.mkdir(parents=True, exist_ok=True)
        partial = jar.with_suffix(".jar.partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: lakecat's setup.py\n")
            for f in sorted(classes.rglob("*.class")):
                info = zipfile.ZipInfo(f.relative_to(classes).as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
                out.writestr(info, f.read_bytes(), zipfile.ZIP_DEFLATED)  # fixed times: the same source, the same jar
        partial.replace(jar)


def build_jars(target: Path) -> list[Path]:
    """Compile every jar of ``JARS`` into the directory ``target``."""
    built = []
    for jar, (source, coordinates) in JARS.items():
        classpath = [_from_pyspark(c) or _download(c) for c in coordinates]
        compile_jar(JAVA_SOURCES / source, classpath, target / jar)
        built.append(target / jar)
    return built


class BuildPyWithJava(build_py):
    """``build_py`` that also compiles lakecat's Java sources into jars in the package (in the source tree for an
    editable install, which imports the package from there)."""

    def run(self) -> None:
        super().run()
        target = JAVA_SOURCES if self.editable_mode else Path(self.build_lib) / "lakecat" / "java"
        build_jars(target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        java = JAVA_SOURCES if self.editable_mode else Path(self.build_lib) / "lakecat" / "java"
        return [*super().get_outputs(include_bytecode), *(str(java / jar) for jar in JARS)]


def _packages() -> tuple[list[str], dict[str, str]]:
    """Every package of the source tree: ``lakecat/`` as is, ``commands/`` and ``catalog_conf/`` (kept at the top of the
    repository) inside it, so the wheel adds one top-level import name."""
    skip = ["*__pycache__*"]
    mapped = {"lakecat.commands": "commands", "lakecat.catalog_conf": "catalog_conf"}
    packages = ["lakecat", *(f"lakecat.{p}" for p in find_namespace_packages("lakecat", exclude=skip))]
    for name, folder in mapped.items():
        packages += [name, *(f"{name}.{p}" for p in find_namespace_packages(folder, exclude=skip))]
    return packages, {"lakecat": "lakecat", **mapped}


packages, package_dir = _packages()
setup(packages=packages, package_dir=package_dir, cmdclass={"build_py": BuildPyWithJava})
