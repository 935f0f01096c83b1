"""Iceberg tables behind an Iceberg REST catalog: ``[iceberg] type = "rest"`` in a catalog config.

(The same code serves ``type = "hive"`` and ``type = "glue"`` — Iceberg's HiveCatalog and GlueCatalog, whose
properties Spark and pyiceberg take as given; documented, untested here.)

The light path talks to the catalog through pyiceberg's ``RestCatalog`` (no JVM), the Spark path through
Iceberg's ``RESTCatalog`` (``spark.sql.catalog.<name>.type=rest``); both get the same properties, which
Iceberg spells the same way in Java and Python (``uri``, ``warehouse``, ``token``, ``credential``, ``scope``,
``oauth2-server-uri``, ``header.*``, ...). Secrets (``token``, ``credential``) come from the environment only.
A REST error reaches the user as one line (exit 1); a bad ``[iceberg]`` section is exit 2.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from ...errors import (
    InvalidArgumentError,
    InvalidConfigError,
    LakecatError,
    MissingDependencyError,
    TableNotFoundError,
)
from ...identifiers import TableIdent
from ...metastore import TableEntry, normalize_location
from .spark import SECTION

if TYPE_CHECKING:
    from ...config import CatalogConfig

REST = "rest"
JDBC = "jdbc"
#: Catalogs Iceberg's Spark runtime and pyiceberg both know by a ``type``; ``jdbc`` is lakecat's own metastore.
KINDS = (JDBC, REST, "hive", "glue")
#: Keys whose value is a secret: a ``${VAR}`` reference in the file, never the value itself.
SECRET_KEYS = ("token", "credential")
_ENV_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(:-)?\}")
_catalogs: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}


def options(config: CatalogConfig) -> dict[str, str]:
    """The config's ``[iceberg]`` section, without keys left empty (``${VAR:-}`` of an unset variable)."""
    return {k: v for k, v in config.format_options.get(SECTION, {}).items() if v != ""}


def kind(config: CatalogConfig) -> str:
    return options(config).get("type", JDBC).strip().lower()


def is_rest(config: CatalogConfig) -> bool:
    return kind(config) == REST


def is_external(config: CatalogConfig) -> bool:
    """Whether the config's Iceberg tables live in a catalog of their own (REST, Hive, Glue), not the metastore."""
    return kind(config) != JDBC


def check(config: CatalogConfig) -> None:
    """Refuse an ``[iceberg]`` section lakecat cannot use (exit 2), before anything connects."""
    where = f"catalog config {config.source}: [{SECTION}]"
    found = kind(config)
    if found not in KINDS:
        raise InvalidConfigError(
            f"{where} type must be one of {', '.join(KINDS)} ({JDBC}: lakecat's metastore), not {found!r}"
        )
    raw = config.format_options_raw.get(SECTION, {})
    for key in SECRET_KEYS:
        if key in raw and not _ENV_REF.fullmatch(raw[key].strip()):
            raise InvalidConfigError(f"{where} {key} must be an environment reference like ${{ICEBERG_REST_{key.upper()}}}: "
                                     "secrets never live in the file")  # fmt: skip
    if found != REST:
        return
    uri = options(config).get("uri", "")
    parsed = urlparse(uri)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise InvalidConfigError(f"{where} type = {REST!r} needs uri = \"http(s)://host:port[/path]\" (the REST endpoint), "
                                 f"not {uri!r}")  # fmt: skip


def client_properties(config: CatalogConfig) -> dict[str, str]:
    """Properties of pyiceberg's RestCatalog (the same names Iceberg's Java RESTCatalog reads)."""
    props = {k: v for k, v in options(config).items() if k != "type"}
    return {**config.pyiceberg_properties(), **props}


def describe_uri(config: CatalogConfig) -> str:
    return options(config).get("uri", "?")


@contextlib.contextmanager
def rest_errors(config: CatalogConfig, what: str) -> Iterator[None]:
    """Turn what the REST catalog or the network answers into one line (exit 1)."""
    import requests
    from pyiceberg import exceptions as pe

    uri = describe_uri(config)
    try:
        yield
    except LakecatError:
        raise
    except (pe.UnauthorizedError, pe.OAuthError, pe.AuthorizationExpiredError) as e:
        raise LakecatError(f"{what}: the Iceberg REST catalog {uri} refused the credentials (401 unauthorized): "
                           f"check [{SECTION}] token / credential — {_first(e)}") from e  # fmt: skip
    except pe.ForbiddenError as e:
        raise LakecatError(f"{what}: the Iceberg REST catalog {uri} denied access (403 forbidden) — {_first(e)}") from e
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as e:
        raise LakecatError(f"{what}: the Iceberg REST catalog {uri} is unreachable ({type(e).__name__}); "
                           "is the server running? (`lakecat local rest start` runs one for development)") from e  # fmt: skip
    except (pe.RESTError, requests.exceptions.RequestException) as e:
        raise LakecatError(f"{what}: the Iceberg REST catalog {uri} answered an error — {_first(e)}") from e


def _first(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__


def catalog(config: CatalogConfig) -> Any:
    """pyiceberg's catalog for the config: RestCatalog (its first call fetches /v1/config), HiveCatalog or GlueCatalog.

    One per process and settings.
    """
    props = client_properties(config)
    key = (config.name, tuple(sorted(props.items())))
    if key not in _catalogs:
        logging.getLogger("pyiceberg.catalog.rest").setLevel(logging.ERROR)
        from pyiceberg.catalog import AVAILABLE_CATALOGS, CatalogType
        from pyiceberg.exceptions import NotInstalledError

        with rest_errors(config, f"catalog {config.name}"):
            try:
                _catalogs[key] = AVAILABLE_CATALOGS[CatalogType(kind(config))](config.name, props)
            except NotInstalledError as e:  # pyiceberg's own extra (hive, glue): its message names the pip install
                raise MissingDependencyError(f"catalog {config.name}: {_first(e)}") from e
    return _catalogs[key]


def load_table(config: CatalogConfig, ident: TableIdent) -> Any:
    """The table as the REST catalog hands it out (fresh metadata), or TableNotFoundError."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    with rest_errors(config, f"table {ident}"):
        try:
            return catalog(config).load_table((ident.namespace, ident.name))
        except (NoSuchTableError, NoSuchNamespaceError):
            raise TableNotFoundError(f"table {ident} not found in catalog {config.name!r}") from None


def entry_of(fmt: str, ident: TableIdent, tbl: Any) -> TableEntry:
    return TableEntry(ident, fmt, normalize_location(tbl.metadata.location), metadata_location=tbl.metadata_location)


def get_entry(fmt: str, config: CatalogConfig, ident: TableIdent) -> TableEntry | None:
    try:
        return entry_of(fmt, ident, load_table(config, ident))
    except TableNotFoundError:
        return None


def list_entries(fmt: str, config: CatalogConfig, namespace: str | None) -> list[TableEntry]:
    """Every table of the REST catalog lakecat can name (``namespace.table``: one namespace level)."""
    from pyiceberg.exceptions import NoSuchNamespaceError

    with rest_errors(config, f"list catalog {config.name}"):
        cat = catalog(config)
        namespaces = [namespace] if namespace else [ns[0] for ns in cat.list_namespaces() if len(ns) == 1]
        out = []
        for ns in namespaces:
            try:
                names = cat.list_tables(ns)
            except NoSuchNamespaceError:
                continue
            for parts in names:
                try:
                    ident = TableIdent.parse(f"{ns}.{parts[-1]}")
                except InvalidArgumentError:
                    continue  # a name lakecat cannot spell (other engines allow more)
                entry = get_entry(fmt, config, ident)
                if entry is not None:
                    out.append(entry)
        return out
