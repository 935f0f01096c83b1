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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import (
    CommitConflictError,
    EngineOutOfMemoryError,
    InvalidArgumentError,
    LakecatError,
    NotExactError,
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


@dataclass(frozen=True)
class EngineFacts:
    """What an engine exception says about itself by its structure, not its message: the error conditions, SQLSTATEs,
    message parameters, class names (with their superclasses) and top stack frames of it and of its causes.

    Spark's messages change between releases; its conditions (``getCondition()``), SQLSTATEs and exception classes
    are its contract. Gathered from PySpark's exceptions (in process, through Py4J, the Java throwable too; through
    Spark Connect, what the server sends) by ``engine_facts``.
    """

    conditions: tuple[str, ...] = ()
    sql_states: tuple[str, ...] = ()
    #: Fully qualified class names: the Java classes of the chain and their superclasses, the Python exception's MRO.
    classes: frozenset[str] = frozenset()
    #: ``class.method`` of the top frames of each Java exception of the chain (where it was thrown).
    frames: tuple[str, ...] = ()
    parameters: tuple[dict[str, str], ...] = ()
    #: The Java exceptions' messages, for the last-resort checks that name why they read one.
    messages: tuple[str, ...] = ()

    def has(self, *identities: str) -> bool:
        """Whether a condition (``DELTA_CONCURRENT_APPEND`` also matches its subclasses ``...APPEND.WITH_...``), a
        SQLSTATE or a class (fully qualified, or its simple name) of the chain is among ``identities``."""
        for identity in identities:
            if any(c == identity or c.startswith(identity + ".") for c in self.conditions):
                return True
            if identity in self.sql_states or identity in self.classes:
                return True
            if "." not in identity and any(c.rsplit(".", 1)[-1] == identity for c in self.classes):
                return True
        return False

    def thrown_in(self, *frames: str) -> bool:
        return any(f in self.frames for f in frames)

    def parameter(self, name: str) -> list[str]:
        return [p[name] for p in self.parameters if name in p]


_MAX_CHAIN = 16
_TOP_FRAMES = 12


def _java_facts(throwable: Any, facts: dict[str, list[Any]]) -> None:
    """Walk a Java throwable (a Py4J object) and its causes; every call is a round trip to the JVM, which may be
    gone (an out-of-memory error can end it): what could be read stays."""
    seen = 0
    try:
        while throwable is not None and seen < _MAX_CHAIN:
            seen += 1
            cls = throwable.getClass()
            while cls is not None:
                facts["classes"].append(str(cls.getName()))
                cls = cls.getSuperclass()
            facts["messages"].append(str(throwable.getMessage() or ""))
            for method, key in (("getCondition", "conditions"), ("getSqlState", "sql_states")):
                with contextlib.suppress(Exception):  # not a SparkThrowable: the method does not exist
                    value = getattr(throwable, method)()
                    if value:
                        facts[key].append(str(value))
            with contextlib.suppress(Exception):
                params = throwable.getMessageParameters()
                if params is not None:
                    facts["parameters"].append({str(k): str(params.get(k)) for k in params.keySet()})
            for element in list(throwable.getStackTrace())[:_TOP_FRAMES]:
                facts["frames"].append(f"{element.getClassName()}.{element.getMethodName()}")
            throwable = throwable.getCause()
    except Exception:  # noqa: BLE001 - the JVM stopped answering: classify by what was read
        return


# A Spark Connect server's stack trace as PySpark renders it: the root's class, then "Caused by: <class>: ...", and
# "\tat <class>.<method>(...)" frames; parsed for the causes' classes and frames, which the client keeps no other way.
_CONNECT_CAUSE = re.compile(r"^Caused by: ([\w.$]+)(?::|$)", re.MULTILINE)
_CONNECT_FRAME = re.compile(r"^\s*at ([\w.$<>]+)\.([\w$<>]+)\(", re.MULTILINE)


def engine_facts(e: BaseException) -> EngineFacts | None:
    """``e``'s ``EngineFacts``, or None when ``e`` did not come from Spark (PySpark or Py4J): a bug stays a bug."""
    mro = type(e).__mro__
    if not any(c.__module__.split(".")[0] in ("pyspark", "py4j") for c in mro):
        return None
    facts: dict[str, list[Any]] = {k: [] for k in ("conditions", "sql_states", "classes", "frames", "parameters",
                                                   "messages")}  # fmt: skip
    facts["classes"] += [f"{c.__module__}.{c.__qualname__}" for c in mro]
    for method, key in (("getCondition", "conditions"), ("getSqlState", "sql_states")):
        with contextlib.suppress(Exception):
            value = getattr(e, method)()
            if value:
                facts[key].append(str(value))
    with contextlib.suppress(Exception):
        params = e.getMessageParameters()  # type: ignore[attr-defined]
        if params:
            facts["parameters"].append({str(k): str(v) for k, v in params.items()})
    # In process: the Java throwable behind a Py4J or PySpark exception
    for attribute in ("java_exception", "_origin"):
        java = getattr(e, attribute, None)
        if java is not None and not isinstance(java, (str, BaseException)):
            _java_facts(java, facts)
            break
    server_trace = getattr(e, "_stacktrace", None)  # Spark Connect: the server's, when it sent one
    if isinstance(server_trace, str) and server_trace:
        first = server_trace.split("\n", 1)[0].strip()
        if re.fullmatch(r"[\w.$]+", first):
            facts["classes"].append(first)
        facts["classes"] += _CONNECT_CAUSE.findall(server_trace)
        facts["frames"] += [f"{c}.{m}" for c, m in _CONNECT_FRAME.findall(server_trace)]
    return EngineFacts(
        conditions=tuple(facts["conditions"]), sql_states=tuple(facts["sql_states"]),
        classes=frozenset(facts["classes"]), frames=tuple(facts["frames"]), parameters=tuple(facts["parameters"]),
        messages=tuple(facts["messages"]),
    )  # fmt: skip


# The identities (error conditions, SQLSTATEs, exception classes) of the engine errors lakecat translates. They are
# the engine's vocabulary (Spark's, and the Delta and Iceberg runtimes' inside it); nothing here asks a table's format.
_ALREADY_EXISTS = ("TABLE_OR_VIEW_ALREADY_EXISTS", "42P07", "org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException",
                   "org.apache.iceberg.exceptions.AlreadyExistsException")  # fmt: skip
_NOT_FOUND = ("TABLE_OR_VIEW_NOT_FOUND", "DELTA_TABLE_NOT_FOUND", "DELTA_MISSING_DELTA_TABLE", "42P01",
              "org.apache.spark.sql.catalyst.analysis.NoSuchTableException",
              "org.apache.iceberg.exceptions.NoSuchTableException")  # fmt: skip
#: Iceberg's catalogs look a name up as a view when no table has it; a JDBC catalog without view support then throws
#: a plain UnsupportedOperationException from its view lookup: a relation that is no table.
_VIEW_LOOKUP = ("org.apache.iceberg.spark.SparkCatalog.loadView",)
# Commit conflicts: Delta's (Java io.delta.exceptions.*, whose Python twins delta-spark raises without a condition),
# Iceberg's failed commit (its metadata moved on) and Iceberg's validation of a commit against the snapshots committed
# since it planned (a rewrite beside a MERGE or a DELETE, and back): planned again on top of the other commit, the
# operation succeeds.
_CONFLICT = ("DELTA_CONCURRENT_APPEND", "DELTA_CONCURRENT_DELETE_READ", "DELTA_CONCURRENT_DELETE_DELETE",
             "DELTA_CONCURRENT_TRANSACTION", "DELTA_CONCURRENT_WRITE", "DELTA_METADATA_CHANGED",
             "DELTA_PROTOCOL_CHANGED", "2D521", "io.delta.exceptions.DeltaConcurrentModificationException",
             *(f"delta.exceptions.base.{name}" for name in (  # delta-spark's Python classes share no base of theirs
                 "DeltaConcurrentModificationException", "ConcurrentWriteException", "MetadataChangedException",
                 "ProtocolChangedException", "ConcurrentAppendException", "ConcurrentDeleteReadException",
                 "ConcurrentDeleteDeleteException", "ConcurrentTransactionException")),
             "org.apache.iceberg.exceptions.CommitFailedException")  # fmt: skip
_VALIDATION = "org.apache.iceberg.exceptions.ValidationException"
#: Where Iceberg validates a snapshot against the ones committed since its base, and filters the files it deletes.
_COMMIT_VALIDATION = ("org.apache.iceberg.SnapshotProducer.apply", "org.apache.iceberg.SnapshotProducer.runValidations")
#: Last resort, for a ValidationException that arrived without its stack (a Spark Connect server that sends none): the
#: class is shared with every other validation, and only Iceberg's messages tell a conflict apart.
_CONFLICT_MESSAGES = ("Found conflicting files", "Found new conflicting delete files", "Cannot commit, found new",
                      "Cannot commit, missing data files", "Missing required files to delete")  # fmt: skip
# The user's text (a predicate, a column list) is wrong: exit 2.
_USAGE = ("PARSE_SYNTAX_ERROR", "UNRESOLVED_COLUMN", "DATATYPE_MISMATCH", "UNRESOLVED_ROUTINE", "WRONG_NUM_ARGS",
          "INVALID_WHERE_CONDITION", "42703", "ParseException")  # fmt: skip
_OUT_OF_MEMORY = ("java.lang.OutOfMemoryError", "org.apache.spark.memory.SparkOutOfMemoryError",
                  "UNABLE_TO_ACQUIRE_MEMORY", "53200")  # fmt: skip
#: A file the operation had listed, gone when it read it.
_FILE_GONE = ("FAILED_READ_FILE.FILE_NOT_EXIST", "java.io.FileNotFoundException")
_DELTA_LOG = "/_delta_log/"


def _log_truncated(facts: EngineFacts) -> bool:
    """A Delta log file the operation had listed, gone when it read it (an expiry truncated the log in between)."""
    if any(_DELTA_LOG in p for p in facts.parameter("path")):
        return facts.has("FAILED_READ_FILE")
    # java.io.FileNotFoundException carries its path in its message only
    return facts.has("java.io.FileNotFoundException") and any(_DELTA_LOG in m for m in facts.messages)


#: Python code Spark runs (a streaming query's foreachBatch function) that raised: its exception crosses the JVM as the
#: text of its traceback only, so the conflict classes it raised are found by their names in that text.
_PYTHON_RAISED = ("org.apache.spark.api.python.PythonException", "PythonException", "StreamingQueryException")
_CONFLICT_NAMES = re.compile(r"\b(" + "|".join(sorted({c.rsplit(".", 1)[-1] for c in _CONFLICT if "." in c})) + r")\b")


def is_commit_conflict(facts: EngineFacts, text: str) -> bool:
    if facts.has(*_CONFLICT):
        return True
    if facts.has(*_PYTHON_RAISED) and _CONFLICT_NAMES.search(text):
        return True
    if not facts.has(_VALIDATION):
        return False
    if facts.frames:
        return facts.thrown_in(*_COMMIT_VALIDATION)
    return any(m in text for m in _CONFLICT_MESSAGES)


@contextlib.contextmanager
def spark_errors(what: str, ident: TableIdent | None = None) -> Iterator[None]:
    """Translate Spark / Py4J exceptions into lakecat errors at the point they enter lakecat, by their error
    conditions, SQLSTATEs and exception classes (``EngineFacts``)."""
    try:
        yield
    except LakecatError:
        raise
    except Exception as e:  # noqa: BLE001 - we re-raise everything, typed
        facts = engine_facts(e)
        if facts is None:
            raise
        text = str(e)
        label = f"{what} {ident}" if ident else what
        if facts.has(*_ALREADY_EXISTS):
            raise TableAlreadyExistsError(f"table {ident} already exists") from e
        if facts.has(*_NOT_FOUND) or (facts.has("java.lang.UnsupportedOperationException")
                                      and facts.thrown_in(*_VIEW_LOOKUP)):  # fmt: skip
            raise TableNotFoundError(f"table {ident} not found" if ident else f"{what}: {first_line(text)}") from e
        if is_commit_conflict(facts, text):
            raise CommitConflictError(f"{label}: commit conflict with a concurrent writer: {first_line(text)}") from e
        if _log_truncated(facts):
            # nothing was committed, and planned again on the log as it is now, the operation succeeds
            raise CommitConflictError(f"{label}: the table's log was truncated under it by a concurrent expiry: "
                                      f"{first_line(text)}") from e  # fmt: skip
        if facts.has(*_USAGE):
            raise InvalidArgumentError(f"{label}: {first_line(text)}") from e
        if facts.has(*_OUT_OF_MEMORY):
            raise EngineOutOfMemoryError(
                f"{label}: Spark ran out of memory ({first_line(text)}); give its driver more: SPARK_DRIVER_MEMORY, "
                "or spark.driver.memory in the catalog config's [spark.conf]"
            ) from e
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


#: Keys Spark's CREATE TABLE / ALTER TABLE keep as the table's own (its comment, owner, location, provider), not as
#: properties: a light engine leaves them to Spark, which says what to use instead.
SPARK_RESERVED_PROPERTIES = frozenset({"comment", "owner", "location", "provider", "external", "is_managed_location"})

#: The engines an operation may be asked to run on (``engine=`` / ``--engine``).
ENGINES = ("light", "spark")


def check_engine(engine: str | None) -> str | None:
    """``engine`` checked and normalised (None: let the operation choose)."""
    if engine is None:
        return None
    value = str(engine).strip().lower()
    if value in ("", "auto"):
        return None
    if value not in ENGINES:
        raise InvalidArgumentError(f"invalid engine {engine!r}: use light (no JVM), spark or auto")
    return value


def light_or_spark(
    engine: str | None, what: str, light: Callable[[], T], spark: Callable[[], T]
) -> tuple[T, str, str | None]:
    """Run ``light()`` (no JVM) unless Spark was asked for; when it raises ``NotExactError`` (it must do so before it
    changes anything) run ``spark()`` instead, or, when the light engine was asked for, fail with exit 3 and the reason.

    Returns:
        (the result, the engine that ran: ``light`` or ``spark``, why Spark ran — None when light did)
    """
    wanted = check_engine(engine)
    reason = "asked for Spark (engine='spark')"
    if wanted != "spark":
        try:
            return light(), "light", None
        except NotExactError as e:
            if wanted == "light":
                raise NotExactError(f"{what} without a JVM: {e}; use engine='spark'") from None
            reason = str(e)
    return spark(), "spark", reason
