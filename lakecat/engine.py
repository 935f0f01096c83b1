"""Talking to the engines, format-neutral: SQL literals, error translation, scoped settings, retries.

Everything here is shared by the format adapters (``lakecat.formats``) and the operations above them.
Nothing here knows which table format it serves.
"""

from __future__ import annotations

import contextlib
import logging
import random
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import (
    CommitConflictError,
    InvalidArgumentError,
    LakecatError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from .identifiers import TableIdent

if TYPE_CHECKING:
    from pyspark.sql import Row, SparkSession

log = logging.getLogger(__name__)
T = TypeVar("T")
RETRY_ATTEMPTS = 6
_PROPERTY_KEY = re.compile(r"[A-Za-z0-9_.\-]+\Z")


def sql_string(value: str) -> str:
    """A Spark SQL string literal."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_timestamp(dt: datetime) -> str:
    """A Spark TIMESTAMP literal (the session time zone is UTC)."""
    return "TIMESTAMP " + sql_string(dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3])


def validate_properties(properties: dict[str, str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in (properties or {}).items():
        if not _PROPERTY_KEY.match(str(k)):
            raise InvalidArgumentError(f"invalid property key {k!r}: use letters, digits, '.', '_' and '-'")
        out[str(k)] = str(v)
    return out


def tblproperties(properties: dict[str, str]) -> str:
    if not properties:
        return ""
    items = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in sorted(properties.items()))
    return f" TBLPROPERTIES ({items})"


_PY4J_CALL = re.compile(r"An error occurred while calling [\w.$]+\.?$")


def first_line(text: str) -> str:
    """The line of an engine error worth showing: the cause raised inside a foreachBatch function when
    Spark wraps it (its first line is only "Traceback ..."), else the first non-empty line."""
    text = str(text)
    if "FOREACH_BATCH_USER_FUNCTION_ERROR" in text or "Python Proxy" in text:
        causes = re.findall(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$", text, flags=re.MULTILINE)
        causes = [(n, m) for n, m in causes if n not in ("Py4JJavaError", "Py4JException", "StreamingQueryException")]
        if causes:
            return f"{causes[-1][0]}: {causes[-1][1].strip()}"[:400]
    for line in text.strip().splitlines():
        line = line.strip().removeprefix(": ").strip()
        if line and not _PY4J_CALL.match(line):  # Py4J's "An error occurred while calling o42.sql." names no cause
            return line[:400]
    return "unknown error"


def java_message(e: BaseException) -> str:
    """The Java exception's own message when there is one (Py4J), else the Python text; one line."""
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            return first_line(str(java.getMessage()))
        except Exception:  # noqa: BLE001 - fall back to the Python text
            pass
    return first_line(str(e))


# Iceberg's validations of a commit against the ones since it planned (a rewrite beside a MERGE or a DELETE, and back)
# are conflicts too: planned again on top of the other commit, the operation succeeds.
_CONFLICT_MARKERS = ("CommitFailedException", "ConcurrentAppendException", "ConcurrentDeleteReadException",
                     "ConcurrentDeleteDeleteException", "ConcurrentTransactionException", "MetadataChangedException",
                     "ProtocolChangedException", "ValidationException: Found conflicting files",
                     "ConcurrentWriteException", "Found new conflicting delete files", "Cannot commit, found new",
                     "Cannot commit, missing data files", "Missing required files to delete")  # fmt: skip

# A Delta log file the operation had listed, gone when it read it (an expiry truncated the log in between).
_LOG_GONE_MARKERS = ("FILE_NOT_EXIST", "FileNotFoundException")

# Spark error classes that mean the user's text (a predicate, a column list) is wrong: exit 2.
_USAGE_MARKERS = ("PARSE_SYNTAX_ERROR", "UNRESOLVED_COLUMN", "DATATYPE_MISMATCH", "UNRESOLVED_ROUTINE",
                  "WRONG_NUM_ARGS", "INVALID_WHERE_CONDITION")  # fmt: skip

_ENGINE_ERRORS = ("AnalysisException", "Py4JJavaError", "IllegalArgumentException", "ParseException",
                  "StreamingQueryException", "SparkRuntimeException", "UnsupportedOperationException",
                  "NumberFormatException", "ArithmeticException", "PySparkException",
                  "SparkUpgradeException", "DateTimeException", "QueryExecutionException",
                  "Py4JError", "PySparkRuntimeError", "PySparkValueError", "SparkNoSuchElementException",
                  "SparkConnectGrpcException", "TempTableAlreadyExistsException", "PythonException")  # fmt: skip


@contextlib.contextmanager
def spark_errors(what: str, ident: TableIdent | None = None) -> Iterator[None]:
    """Translate Spark / Py4J exceptions into lakecat errors at the point they enter lakecat."""
    try:
        yield
    except LakecatError:
        raise
    except Exception as e:  # noqa: BLE001 - we re-raise everything, typed
        name = type(e).__name__
        # table formats raise their own Python classes (ConcurrentAppendException, subclasses of PySparkException)
        # whose text does not carry the class name: judge by both
        text, haystack = str(e), f"{name}: {e}"
        if not any(cls.__name__ in _ENGINE_ERRORS for cls in type(e).__mro__):  # e.g. subclasses of PySparkException
            raise
        label = f"{what} {ident}" if ident else what
        if "TABLE_OR_VIEW_ALREADY_EXISTS" in text or "AlreadyExistsException" in text:
            raise TableAlreadyExistsError(f"table {ident} already exists") from e
        if "TABLE_OR_VIEW_NOT_FOUND" in text or "NoSuchTableException" in text:
            raise TableNotFoundError(f"table {ident} not found") from e
        if any(marker in haystack for marker in _CONFLICT_MARKERS):
            raise CommitConflictError(f"{label}: commit conflict with a concurrent writer: {first_line(text)}") from e
        if "_delta_log/" in text and any(marker in text for marker in _LOG_GONE_MARKERS):
            # an expiry truncated the Delta log between this operation's listing of it and its read: nothing was
            # committed, and planned again on the log as it is now, the operation succeeds
            raise CommitConflictError(f"{label}: the table's log was truncated under it by a concurrent expiry: "
                                      f"{first_line(text)}") from e  # fmt: skip
        if name in ("ParseException",) or any(m in text for m in _USAGE_MARKERS):
            raise InvalidArgumentError(f"{label}: {first_line(text)}") from e
        raise LakecatError(f"{label} failed: {first_line(text)}") from e


@contextlib.contextmanager
def spark_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Set session confs for one call and put the previous values back afterwards."""
    saved: dict[str, str | None] = {k: spark.conf.get(k, None) for k in settings}
    try:
        for k, v in settings.items():
            spark.conf.set(k, v)
        yield
    finally:
        for k, old in saved.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


def with_retries(
    fn: Callable[[], T], *, what: str, attempts: int = RETRY_ATTEMPTS, base_delay: float = 0.5
) -> tuple[T, int]:
    """Run ``fn``; on a commit conflict wait (exponential backoff with jitter) and try again.

    Returns ``(result, retries)``. Maintenance rewrites are idempotent, so a retry is always safe:
    the retried call plans again on top of the concurrent writer's commit.
    """
    retries = 0
    while True:
        try:
            return fn(), retries
        except CommitConflictError as e:
            if retries + 1 >= attempts:
                raise CommitConflictError(f"{e} (gave up after {retries} retries)") from e
            retries += 1
            delay = base_delay * 2 ** (retries - 1) * (1 + random.random() / 2)
            log.info("%s: commit conflict, retry %d in %.1fs", what, retries, delay)
            time.sleep(delay)


def is_connect(spark: SparkSession) -> bool:
    """True when ``spark`` is a Spark Connect session (no JVM in this process: no py4j, no SparkContext)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def command_row(spark: SparkSession, statement: str) -> Row | None:
    """The one result row of a SQL command (a ``CALL``, ``OPTIMIZE``), None when it returns none: ``collect()`` of
    the command's own result, not ``first()``, which plans a ``LIMIT`` over it (~4 ms a call)."""
    rows = spark.sql(statement).collect()
    return rows[0] if rows else None


def default_parallelism(spark: SparkSession) -> int:
    """Spark's default parallelism: the SparkContext's in process, the engine's setting through Spark Connect."""
    if is_connect(spark):
        return to_int(spark.conf.get("spark.default.parallelism", None)) or 2
    return int(spark.sparkContext.defaultParallelism)


def parse_expression(spark: SparkSession, text: str) -> None:
    """Parse ``text`` as exactly one Spark SQL expression (nothing is resolved or run); raises the parser's error."""
    if is_connect(spark):
        from pyspark.errors import AnalysisException, ParseException

        try:
            spark.range(0).selectExpr(text).schema  # noqa: B018 - the engine parses the expression first
        except ParseException:
            raise
        except AnalysisException:
            return  # it parsed; its columns are resolved against a table later
        return
    spark._jsparkSession.sessionState().sqlParser().parseExpression(text)


def now() -> datetime:
    return datetime.now(UTC)


def to_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
