"""lakecat's own Spark SQL extension (``lakecat/java/LakecatExtensions.java``), compiled on first use.

The extension adds two functions. ``lakecat_from_json`` is Spark's ``from_json`` in PERMISSIVE mode (the same
``JacksonParser``, options and failure handling) that hands Jackson each record's UTF-8 bytes instead of a
``java.io.InputStreamReader`` over them: Spark's reader path allocates a decoder buffer per record, which dominates
the parse of small events. A record whose first bytes would make
Jackson guess another encoding takes Spark's own path, so every valid UTF-8 record parses to exactly what
``from_json`` gives (a record that is not valid UTF-8 is a dead letter either way). ``lakecat_json_object_keys`` is
Spark's ``json_object_keys`` over the same parser (ingest's unknown-field check).

The jar is built once per source and Spark version with the JDK's ``javac`` against the pyspark wheel's jars, into
lakecat's jar cache (``<cache>/lakecat-spark/``); ``build_jar`` compiles lakecat's other Java sources the same way. Without a ``javac`` (a JRE only) or when the build fails, there
is no extension and ingest parses with ``from_json``: same results, the slower parse; ``lakecat doctor`` says so.
A Spark Connect engine lakecat did not start may lack it too: ingest asks the session (``available``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import weakref
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import EnvironmentProblemError
from .jars import _locked, cache_dir, env_flag, java_executable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXTENSION_CLASS = "lakecat.spark.LakecatExtensions"
FROM_JSON = "lakecat_from_json"
OBJECT_KEYS = "lakecat_json_object_keys"
JAVA_DIR = Path(__file__).with_name("java")  # lakecat's Java sources (shipped as package data)
SOURCE = JAVA_DIR / "LakecatExtensions.java"
JAVA_RELEASE = "17"
DISABLE_ENV = "LAKECAT_NO_EXTENSION"  # "1": no extension jar (ingest parses with Spark's from_json)

_problem: str | None = None
_failed: dict[Path, str] = {}  # a build that failed in this process, by jar path: not run again at the next start
_available: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _javac() -> str | None:
    """The ``javac`` of the JDK whose ``java`` runs Spark (``jars.java_executable``: they share a bin directory), else
    the one on ``PATH``."""
    try:
        beside = Path(os.path.realpath(java_executable())).parent / "javac"
    except EnvironmentProblemError:  # no java at all
        beside = None
    return str(beside) if beside is not None and beside.exists() else shutil.which("javac")


class JavaBuildError(Exception):
    """A jar of lakecat's Java sources cannot be built: the message is the first line ``javac`` printed."""


class JavacNotFoundError(JavaBuildError):
    """There is no ``javac`` (a JRE only)."""


def cached_jar(name: str, source: Path, *salt: str) -> Path:
    """Where the jar ``name`` built from ``source`` lives in lakecat's jar cache (whether built yet or not): its file
    name carries a hash of the source, ``salt`` (what it is compiled against) and the Java release."""
    key = hashlib.sha256(source.read_bytes() + "".join(f"|{s}" for s in (*salt, JAVA_RELEASE)).encode()).hexdigest()
    return cache_dir() / name / f"{name}-{key[:16]}.jar"


def build_jar(*, source: Path, classpath: str, jar: Path) -> Path:
    """Compile ``source`` with the JDK's ``javac`` against ``classpath`` into ``jar``, unless it is there already
    (its name says what it was built from, see ``cached_jar``). Processes building the same jar wait for each other.

    Raises:
        JavacNotFoundError: No ``javac``.
        JavaBuildError: ``javac`` failed.
        OSError, subprocess.SubprocessError: The cache cannot be written, or ``javac`` hangs.
    """
    if jar.is_file():
        return jar
    javac = _javac()
    if javac is None:
        raise JavacNotFoundError("no javac (a JDK's compiler) found")
    with _locked(jar.with_suffix(".lock")):
        if jar.is_file():  # another process built it while we waited
            return jar
        with tempfile.TemporaryDirectory(prefix="lakecat-javac-") as tmp:
            classes = Path(tmp) / "classes"
            classes.mkdir()
            run = subprocess.run(
                [javac, "--release", JAVA_RELEASE, "-nowarn", "-encoding", "UTF-8", "-d", str(classes),
                 "-cp", classpath, str(source)],
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            if run.returncode != 0:
                first = next((line for line in (run.stderr or run.stdout).splitlines() if line.strip()), "no output")
                raise JavaBuildError(first.strip())
            partial = jar.with_suffix(".jar.partial")
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
                out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: lakecat\n")
                for f in sorted(classes.rglob("*.class")):
                    out.write(f, f.relative_to(classes).as_posix())
            partial.replace(jar)
    return jar


def jar_path() -> Path:
    """Where the extension's jar of this source and this pyspark lives (whether built yet or not)."""
    import pyspark

    return cached_jar("lakecat-spark", SOURCE, pyspark.__version__)


def disabled() -> bool:
    """``LAKECAT_NO_EXTENSION`` is set (to anything but empty, 0, false or no)."""
    return env_flag(DISABLE_ENV)


def extension_jar() -> Path | None:
    """The extension's jar, built now when it is not yet; None (``problem()`` says why) when it cannot be. Never
    raises: the extension is optional, and Spark starts without it. A build that failed is not tried again in this
    process (a Spark start asks twice: for the jars and for the extensions)."""
    global _problem
    if disabled():
        _problem = f"{DISABLE_ENV} is set"
        return None
    path: Path | None = None
    try:
        path = jar_path()
        if path in _failed:
            _problem = _failed[path]
            return None
        built = _build(path)
    except (OSError, subprocess.SubprocessError) as e:  # an unwritable cache, a missing source, a javac that hangs
        _problem = f"building lakecat's Spark extension failed ({type(e).__name__}: {e}): ingest parses JSON with Spark's from_json"
        built = None
    if built is None and path is not None and _problem is not None:
        _failed[path] = _problem
    return built


def _build(path: Path) -> Path | None:
    global _problem
    try:
        build_jar(source=SOURCE, classpath=str(_spark_jars() / "*"), jar=path)
    except JavacNotFoundError:
        _problem = "no javac (a JDK's compiler) found: ingest parses JSON with Spark's from_json"
        return None
    except JavaBuildError as e:
        _problem = f"building lakecat's Spark extension failed ({e}): ingest parses JSON with Spark's from_json"
        return None
    _problem = None
    return path


def problem() -> str | None:
    """Why the last ``extension_jar()`` gave no jar (None when it gave one)."""
    return _problem


def available(spark: SparkSession) -> bool:
    """Whether ``spark`` has ``lakecat_from_json`` (asked once per session: a Spark Connect engine may lack it)."""
    try:
        return _available[spark]
    except (KeyError, TypeError):
        pass
    try:
        found = bool(spark.catalog.functionExists(FROM_JSON))
    except Exception:  # an engine that cannot answer: parse with Spark's own function
        found = False
    try:
        _available[spark] = found
    except TypeError:
        pass
    return found


def from_json(text: Any, schema: Any, corrupt: str, *, fast: bool) -> Any:
    """``from_json(text, schema)`` in PERMISSIVE mode with the corrupt-record field ``corrupt`` (a STRING field of
    ``schema``): through ``lakecat_from_json`` when ``fast`` (the session has it), else Spark's own."""
    from pyspark.sql import functions as F

    if fast:
        return F.call_function(FROM_JSON, text, F.lit(schema.json()), F.lit(corrupt))
    return F.from_json(text, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": corrupt})


def json_object_keys(text: Any, *, fast: bool) -> Any:
    """``json_object_keys(text)``: through ``lakecat_json_object_keys`` when ``fast``, else Spark's own."""
    from pyspark.sql import functions as F

    return F.call_function(OBJECT_KEYS, text) if fast else F.json_object_keys(text)
