"""lakecat's own Spark SQL extension (``lakecat/java/LakecatExtensions.java``), shipped prebuilt in the package.

The extension adds two functions. ``lakecat_from_json`` is Spark's ``from_json`` in PERMISSIVE mode (the same
``JacksonParser``, options and failure handling) that hands Jackson each record's UTF-8 bytes instead of a
``java.io.InputStreamReader`` over them: Spark's reader path allocates a decoder buffer per record, which dominates
the parse of small events. A record whose first bytes would make
Jackson guess another encoding takes Spark's own path, so every valid UTF-8 record parses to exactly what
``from_json`` gives (a record that is not valid UTF-8 is a dead letter either way). ``lakecat_json_object_keys`` is
Spark's ``json_object_keys`` over the same parser (ingest's unknown-field check).

The jar is compiled when the package is built (``setup.py``), against the Spark that ``pyproject.toml`` pins, and lives
beside its source (``lakecat/java/lakecat-spark.jar``): running lakecat needs a Java runtime, no compiler. Without
the jar (``LAKECAT_NO_EXTENSION=1``, or a source tree that was never installed) there is no extension and ingest
parses with ``from_json``: same results, the slower parse; ``lakecat doctor`` says so. A Spark Connect engine lakecat
did not start may lack it too: ingest asks the session (``available``).
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .jars import env_flag

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXTENSION_CLASS = "lakecat.spark.LakecatExtensions"
FROM_JSON = "lakecat_from_json"
OBJECT_KEYS = "lakecat_json_object_keys"
JAVA_DIR = Path(__file__).with_name("java")  # lakecat's Java sources and the jars built from them
EXTENSION_JAR = JAVA_DIR / "lakecat-spark.jar"
REST_LAUNCHER_JAR = JAVA_DIR / "lakecat-rest.jar"  # lakecat.formats.iceberg.rest_server's launcher
DISABLE_ENV = "LAKECAT_NO_EXTENSION"  # "1": no extension jar (ingest parses with Spark's from_json)

_problem: str | None = None
_available: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def packaged_jar(jar: Path) -> Path | None:
    """``jar`` (one of lakecat's prebuilt jars) when this installation has it: a wheel always does; a source tree only
    once ``pip install -e .`` built it."""
    return jar if jar.is_file() else None


MISSING_JAR = "is not in this installation of lakecat (a source tree never installed?): run `pip install -e .`"


def disabled() -> bool:
    """``LAKECAT_NO_EXTENSION`` is set (to anything but empty, 0, false or no)."""
    return env_flag(DISABLE_ENV)


def extension_jar() -> Path | None:
    """The extension's jar; None (``problem()`` says why) when it is turned off or missing. Never raises: the
    extension is optional, and Spark starts without it."""
    global _problem
    if disabled():
        _problem = f"{DISABLE_ENV} is set"
        return None
    jar = packaged_jar(EXTENSION_JAR)
    _problem = None if jar else f"{EXTENSION_JAR.name} {MISSING_JAR}: ingest parses JSON with Spark's from_json"
    return jar


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
