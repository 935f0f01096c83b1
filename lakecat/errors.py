"""One exception root for everything lakecat raises on purpose.

Every error carries the process exit code the CLI uses for it, so the command line and the Python
API agree on what kind of failure happened.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import get_close_matches


class LakecatError(Exception):
    """Root of every error lakecat raises on purpose (exit code 1: the operation failed)."""

    exit_code = 1
    #: The command line's spelling of the Python terms the message uses (``{"force=True": "--force"}``)
    cli_terms: dict[str, str] = {}

    @property
    def type_name(self) -> str:
        return type(self).__name__

    def cli_message(self) -> str:
        """The message as the command line says it: each Python term (``force=True``) as its option (``--force``)."""
        text = str(self)
        for terms in (self.cli_terms, CLI_TERMS):  # the error's own first: they may spell a common term otherwise
            for python, cli in terms.items():
                text = text.replace(python, cli)
        return _OPTION_VALUE.sub(_option, _OPTION_FLAG.sub(_option, text))

    def with_cli_terms(self, terms: dict[str, str]) -> LakecatError:
        """Say how the command line spells the message's Python terms; returns the error, for ``raise``."""
        self.cli_terms = terms
        return self


#: Phrases any library message may use for a parameter, and how the command line says them (every error's
#: ``cli_message`` translates them, beside its own ``cli_terms``).
CLI_TERMS = {"invalid where predicate": "invalid --where predicate",
             "invalid delete_when predicate": "invalid --delete-when predicate",
             # an operation by the method and parameters that ask for it (longer first)
             "alter(widen, rewrite=True)": "alter --widen --rewrite",
             "alter(partition_by, rewrite=True)": "alter --partition-by --rewrite",
             "alter(add_columns)": "alter --add-column", "alter(rename_columns)": "alter --rename-column",
             "alter(drop_columns)": "alter --drop-column", "alter(widen)": "alter --widen",
             "alter(comments)": "alter --set-comment", "alter(partition_by)": "alter --partition-by",
             "alter(cluster_by)": "alter --cluster-by", "alter(deletion_vectors)": "alter --deletion-vectors",
             "compact(where)": "compact --where", "ingest(cdc)": "ingest --cdc", "mirror(purge_deletes=True)": "mirror --purge-deletes",
             "mirror(as_format='iceberg')": "mirror --as iceberg", "mirror(as_format='delta')": "mirror --as delta",
             "engine='spark'": "--engine spark", "engine='light'": "--engine light", "dlq=False": "--no-dlq", "confirm=True": "--yes", "format='iceberg'": "--format iceberg",
             "create with cluster_by=": "create --cluster-by",
             }  # fmt: skip


#: Parameters a library message may name in Python's spelling (``file_format='csv'``, ``full=True``, ``watermark=``); the
#: command line says each as its option (``--file-format 'csv'``, ``--full``, ``--watermark``). Only names no message uses
#: otherwise (``key=value`` is not an option).
OPTION_PARAMETERS = ("as_of", "by", "cdc", "cluster_by", "columns", "count", "dead_letter_every", "dry_run", "dedupe_key", "delete_when",
                     "engine", "event_time", "file_format", "format_version", "full", "limit", "max_bytes_per_batch",
                     "max_files_per_batch", "max_records_per_batch", "merge_schema", "metrics_linger", "metrics_port",
                     "older_than", "partition_by", "purge", "retain", "retain_last", "rewrite", "since", "since_tag", "strategy", "until", "version",
                     "watermark", "where", "widen", "with_kafka_metadata")  # fmt: skip
_NAMES = "|".join(OPTION_PARAMETERS)
_OPTION_FLAG = re.compile(rf"(?<![\w.-])({_NAMES})=True\b")
_OPTION_VALUE = re.compile(rf"(?<![\w.-])({_NAMES})=")


def _option(m: re.Match[str]) -> str:
    """``full=True`` -> ``--full``; ``where='a = 1'`` -> ``--where 'a = 1'``; ``watermark=`` (no value) -> ``--watermark``."""
    option = f"--{m[1].replace('_', '-')}"
    if m.re is _OPTION_FLAG:
        return option
    after = m.string[m.end() : m.end() + 1]
    return f"{option} " if after and not after.isspace() and after not in ",;:)" else option


class ConfigError(LakecatError):
    """A catalog configuration is missing, unreadable or inconsistent."""


class InvalidConfigError(ConfigError):
    """A catalog config says something lakecat cannot use: an unknown kind, a missing key, a secret in the file
    (exit code 2: a usage error, nothing was changed)."""

    exit_code = 2


class MissingDependencyError(ConfigError):
    """A feature needs a Python package that is not installed; the message names what to ``pip install``
    (exit code 2: nothing was changed)."""

    exit_code = 2


class TableNotFoundError(LakecatError):
    """The named table is not in the catalog."""


class NoTableMatchesError(TableNotFoundError):
    """A pattern (``health``, ``maintain``, the maintenance service) selects no table: a typo would otherwise turn a
    CI gate or a maintenance job off without a word (exit code 1; ``allow_empty=True`` / ``--allow-empty`` accepts it)."""


class TableAlreadyExistsError(LakecatError):
    """A table of that name exists already."""


class NamespaceNotEmptyError(LakecatError):
    """A namespace still holds tables."""


class CommitConflictError(LakecatError):
    """A commit lost a race with a concurrent writer, even after retries."""


class VersionNotFoundError(LakecatError):
    """The requested version or timestamp does not exist (or its files were expired)."""


class RefExistsError(LakecatError):
    """A tag or branch of that name exists already."""


class EnvironmentProblemError(LakecatError):
    """Something outside lakecat is missing or broken: Java, the network to Maven Central, a port."""


class EngineOutOfMemoryError(EnvironmentProblemError):
    """Spark ran out of memory (its driver's heap, or the memory its tasks may use); the message says what to set."""


class UnsupportedOperationError(LakecatError):
    """The operation exists, but not for this table's format (exit code 3)."""

    exit_code = 3


class NotExactError(UnsupportedOperationError):
    """The light path (no JVM) cannot give exactly the answer Spark gives (a predicate outside its allow-list, a
    table feature it does not read the same): the read goes to Spark, or, when the light path was asked for, fails
    with exit code 3 and this reason."""


class InvalidArgumentError(ValueError, LakecatError):
    """The caller passed something malformed: an identifier, a schema, a duration (exit code 2)."""

    exit_code = 2


class InternalError(LakecatError):
    """A bug in lakecat (exit code 4)."""

    exit_code = 4


def invalid(python: str, cli: str) -> InvalidArgumentError:
    """A usage error that says ``python`` to a caller of the library (``every=``, ``confirm=True``) and ``cli`` on the
    command line (``--every``, ``--yes``)."""
    error = InvalidArgumentError(python)
    error.with_cli_terms({python: cli})
    return error


EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNSUPPORTED = 3
EXIT_INTERNAL = 4


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'sales.orders'?"`` for the closest of ``choices`` to a misspelt ``word``, else ``""``."""
    close = get_close_matches(word, list(choices), n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def columns_note(names: Iterable[str], *, limit: int = 40) -> str:
    """``" (columns: id, ts, region)"``: what a refused column name could have been (the first ``limit`` of them)."""
    names = list(names)
    shown = ", ".join(names[:limit]) + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")
    return f" (columns: {shown or 'none'})"
