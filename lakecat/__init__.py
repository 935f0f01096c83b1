"""lakecat: one catalog and maintenance toolkit over Apache Iceberg and Delta Lake.

Example:
    >>> import lakecat
    >>> cat = lakecat.connect()
    >>> t = cat.create_table("sales.orders", schema="id BIGINT, ts TIMESTAMP", format="iceberg",
    ...                      partition_by=["days(ts)"])
    >>> t.describe().to_dict()
"""

from .about import VersionsInfo, versions_info
from .about import __version__ as __version__  # the number lives beside the code that reports it
from .catalog import Catalog, connect, list_catalogs
from .config import DEFAULT_CATALOG, CatalogConfig, resolve_config
from .errors import (
    CommitConflictError,
    ConfigError,
    InvalidArgumentError,
    InvalidConfigError,
    LakecatError,
    MissingDependencyError,
    NoTableMatchesError,
    RefExistsError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
    VersionNotFoundError,
)
from .ingest import IngestOptions
from .service import abandon_current_step
from .sources import FileSource, KafkaSource, Source
from .table import Table

__all__ = [
    "DEFAULT_CATALOG",
    "Catalog",
    "CatalogConfig",
    "CommitConflictError",
    "ConfigError",
    "FileSource",
    "IngestOptions",
    "InvalidArgumentError",
    "InvalidConfigError",
    "KafkaSource",
    "LakecatError",
    "MissingDependencyError",
    "NoTableMatchesError",
    "RefExistsError",
    "Source",
    "Table",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "UnsupportedOperationError",
    "VersionNotFoundError",
    "VersionsInfo",
    "abandon_current_step",
    "connect",
    "list_catalogs",
    "resolve_config",
    "versions_info",
]
