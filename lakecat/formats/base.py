"""The contract every format adapter fulfils, and helpers they share."""

from __future__ import annotations

import contextlib
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import (
    CommitConflictError,
    InvalidArgumentError,
    LakecatError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from ..identifiers import TableIdent

if TYPE_CHECKING:
    from ..catalog import Catalog
    from ..metastore import TableEntry
    from ..partitioning import PartitionField
    from ..results import TableDescription
    from ..schema import Column

_PROPERTY_KEY = re.compile(r"[A-Za-z0-9_.\-]+\Z")


def sql_string(value: str) -> str:
    """A Spark SQL string literal."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


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


def first_line(text: str) -> str:
    """The line of an engine error worth showing: the cause raised inside a foreachBatch function when
    Spark wraps it (its first line is only "Traceback ..."), else the first non-empty line."""
    import re

    text = str(text)
    if "FOREACH_BATCH_USER_FUNCTION_ERROR" in text or "Python Proxy" in text:
        causes = re.findall(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$", text, flags=re.MULTILINE)
        causes = [(n, m) for n, m in causes if n not in ("Py4JJavaError", "Py4JException", "StreamingQueryException")]
        if causes:
            return f"{causes[-1][0]}: {causes[-1][1].strip()}"[:400]
    for line in text.strip().splitlines():
        line = line.strip()
        if line:
            return line[:400]
    return "unknown error"


_CONFLICT_MARKERS = ("CommitFailedException", "ConcurrentAppendException", "ConcurrentDeleteReadException",
                     "ConcurrentDeleteDeleteException", "ConcurrentTransactionException", "MetadataChangedException",
                     "ProtocolChangedException", "ValidationException: Found conflicting files",
                     "ConcurrentWriteException")  # fmt: skip


# Spark error classes that mean the user's text (a predicate, a column list) is wrong: exit 2.
_USAGE_MARKERS = ("PARSE_SYNTAX_ERROR", "UNRESOLVED_COLUMN", "DATATYPE_MISMATCH", "UNRESOLVED_ROUTINE",
                  "WRONG_NUM_ARGS", "INVALID_WHERE_CONDITION")  # fmt: skip


@contextlib.contextmanager
def spark_errors(what: str, ident: TableIdent | None = None) -> Iterator[None]:
    """Translate Spark / Py4J exceptions into lakecat errors at the point they enter lakecat."""
    try:
        yield
    except LakecatError:
        raise
    except Exception as e:  # noqa: BLE001 - we re-raise everything, typed
        name = type(e).__name__
        text = str(e)
        if name not in ("AnalysisException", "Py4JJavaError", "IllegalArgumentException", "ParseException",
                        "StreamingQueryException", "SparkRuntimeException", "UnsupportedOperationException",
                        "NumberFormatException", "ArithmeticException", "PySparkException",
                        "SparkUpgradeException", "DateTimeException", "QueryExecutionException",
                        "Py4JError", "PySparkRuntimeError", "PySparkValueError", "SparkNoSuchElementException",
                        "SparkConnectGrpcException", "TempTableAlreadyExistsException", "PythonException"):  # fmt: skip
            raise
        label = f"{what} {ident}" if ident else what
        if "TABLE_OR_VIEW_ALREADY_EXISTS" in text or "AlreadyExistsException" in text:
            raise TableAlreadyExistsError(f"table {ident} already exists") from e
        if "TABLE_OR_VIEW_NOT_FOUND" in text or "NoSuchTableException" in text:
            raise TableNotFoundError(f"table {ident} not found") from e
        if any(marker in text for marker in _CONFLICT_MARKERS):
            raise CommitConflictError(f"{label}: commit conflict with a concurrent writer: {first_line(text)}") from e
        if name in ("ParseException",) or any(m in text for m in _USAGE_MARKERS):
            raise InvalidArgumentError(f"{label}: {first_line(text)}") from e
        raise LakecatError(f"{label} failed: {first_line(text)}") from e


class TableFormat(ABC):
    """One table format: what lakecat can do with it and how."""

    name: str = ""
    capabilities: dict[str, bool] = {}

    def unsupported(self, what: str, why: str = "") -> UnsupportedOperationError:
        return UnsupportedOperationError(f"{what}: not supported for {self.name} tables" + (f" — {why}" if why else ""))

    @abstractmethod
    def create(
        self,
        catalog: Catalog,
        ident: TableIdent,
        columns: list[Column],
        partitioning: list[PartitionField],
        properties: dict[str, str],
    ) -> TableEntry:
        """Create the table (Spark path) and record it in the metastore."""

    @abstractmethod
    def describe(self, catalog: Catalog, entry: TableEntry) -> TableDescription:
        """Describe the table from its metadata alone (light path: no JVM)."""

    @abstractmethod
    def drop(self, catalog: Catalog, entry: TableEntry) -> None:
        """Remove the table from the catalog (light path); data files are left in place."""

    def spark_name(self, catalog: Catalog, entry: TableEntry) -> str:
        """How Spark SQL names this table (quoted)."""
        raise NotImplementedError

    def extra(self) -> dict[str, Any]:
        return {}
