"""Catalog configuration: which metastore, which warehouse, which Spark.

Resolution order (like pyiceberg's): an explicit ``connect(catalog)`` argument, else the
``LAKECAT_CATALOG`` environment variable, else the embedded default ``local`` (everything under
``$LAKECAT_HOME``, default ``~/.lakecat``). A catalog is named (looked up as ``NAME.toml`` in
``$LAKECAT_CONF_DIR``, ``$LAKECAT_HOME/catalogs`` and lakecat's bundled ``catalog_conf/``) or given
as a path to a TOML file. ``${VAR}`` and ``${VAR:-default}`` are expanded; secrets belong in the
environment, never in the file.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from .errors import ConfigError, InvalidConfigError, MissingDependencyError, did_you_mean
from .extras import install_hint, require
from .identifiers import validate_part
from .sizing import SparkSizing, this_machine, this_master

DEFAULT_CATALOG = "local"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def lakecat_home() -> Path:
    return Path(os.environ.get("LAKECAT_HOME") or "~/.lakecat").expanduser()


def bundled_conf_dir() -> Path:
    """Where the catalog configs shipped with lakecat live (source tree or installed wheel)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "catalog_conf", here.parent / "catalog_conf"):
        if (candidate / "local.toml").is_file():
            return candidate
    raise ConfigError("lakecat's bundled catalog_conf/local.toml is missing: reinstall lakecat")


def expand_env(value: Any, *, source: str = "config") -> Any:
    """Expand ``${VAR}`` / ``${VAR:-default}`` in every string of a parsed TOML document."""
    if isinstance(value, dict):
        return {k: expand_env(v, source=source) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, source=source) for v in value]
    if not isinstance(value, str):
        return value

    def repl(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name == "LAKECAT_HOME" and not os.environ.get(name):
            return str(lakecat_home())
        val = os.environ.get(name)
        if val is None or (val == "" and default is not None):
            if default is None:
                raise ConfigError(f"{source}: environment variable {name} is not set (referenced as ${{{name}}})")
            return default
        return val

    return _VAR.sub(repl, value)


@dataclass
class Metastore:
    """Where the Iceberg JDBC catalog tables and lakecat's Delta registry live."""

    url: str

    @property
    def kind(self) -> str:
        return urlparse(self.url).scheme.split("+")[0]

    @property
    def sqlite_path(self) -> Path | None:
        if self.kind != "sqlite":
            return None
        return Path(unquote(self.url.split("sqlite:///", 1)[1]))

    @property
    def sqlalchemy_url(self) -> str:
        if self.kind == "postgresql" and "+" not in urlparse(self.url).scheme:
            return "postgresql+psycopg2://" + self.url.split("://", 1)[1]
        return self.url

    def require_driver(self) -> None:
        """Import the Python driver SQLAlchemy opens this metastore with, or fail with one line naming the extra.

        Raises:
            MissingDependencyError: psycopg2 (the ``postgres`` extra) or the driver the URL names is not installed.
        """
        if self.kind != "postgresql":
            return  # SQLite: the standard library's driver
        driver = urlparse(self.sqlalchemy_url).scheme.partition("+")[2]
        if driver == "psycopg2":
            require("psycopg2", extra="postgres", feature="the PostgreSQL metastore")
        else:
            require(driver, extra=None, feature=f"the PostgreSQL metastore (postgresql+{driver})")

    def jdbc(self) -> tuple[str, dict[str, str]]:
        """JDBC URI and connection properties for Iceberg's JdbcCatalog."""
        if self.kind == "sqlite":
            return f"jdbc:sqlite:{self.sqlite_path}", {}
        if self.kind == "postgresql":
            u = urlparse(self.url)
            props = {}
            if u.username:
                props["user"] = unquote(u.username)
            if u.password:
                props["password"] = unquote(u.password)
            port = f":{u.port}" if u.port else ""
            query = f"?{u.query}" if u.query else ""
            return f"jdbc:postgresql://{u.hostname}{port}{u.path}{query}", props
        raise ConfigError(f"unsupported metastore {self.url!r}: use sqlite:///PATH or postgresql://...")


OBJECT_STORAGE_SCHEMES = ("s3", "s3a")
# What [storage] may say. Credentials are not among them: they come from the environment
# (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN) or the machine's role, never from a file.
STORAGE_KEYS = ("endpoint", "region", "path-style-access")


@dataclass(frozen=True)
class S3Settings:
    """Where an S3-compatible warehouse lives, resolved from ``[storage]`` and the ``AWS_*`` environment."""

    endpoint: str | None
    region: str
    path_style: bool

    @property
    def allow_http(self) -> bool:
        return bool(self.endpoint) and self.endpoint.lower().startswith("http://")  # type: ignore[union-attr]


def pyiceberg_io_properties(location: str | None) -> dict[str, str]:
    """pyiceberg FileIO properties for a table in object storage, from the ``AWS_*`` environment.

    pyarrow's S3 filesystem reads credentials from the environment but no endpoint, so a table opened
    without a catalog (``StaticTable``) needs the endpoint spelled out. ``Catalog`` exports its
    ``[storage]`` settings to the environment first (``export_storage_env``), so this agrees with it.
    """
    if not location or urlparse(location).scheme.lower() not in OBJECT_STORAGE_SCHEMES:
        return {}
    props = {"s3.region": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"}
    if os.environ.get("AWS_ENDPOINT_URL"):
        props["s3.endpoint"] = os.environ["AWS_ENDPOINT_URL"]
    if os.environ.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "").lower() == "true":
        props["s3.force-virtual-addressing"] = "true"
    return props


def pyarrow_filesystem(uri: str) -> tuple[Any, str]:
    """A pyarrow filesystem and the path inside it for a non-local URI.

    ``s3://`` and ``s3a://`` (which pyarrow does not know by name) get an S3 filesystem with the endpoint
    and region of the ``AWS_*`` environment (pyarrow reads credentials from it, but no endpoint).
    """
    from pyarrow import fs

    u = urlparse(uri)
    if u.scheme.lower() not in OBJECT_STORAGE_SCHEMES:
        return fs.FileSystem.from_uri(uri)
    try:
        s3_filesystem = fs.S3FileSystem
    except ImportError as e:  # a pyarrow built without S3 (some conda and source builds; PyPI's wheels have it)
        raise MissingDependencyError(
            f"object storage needs pyarrow with S3 support ({e}): {install_hint('pyarrow', extra=None)} from PyPI"
        ) from None
    props = pyiceberg_io_properties(uri)
    s3 = s3_filesystem(
        region=props["s3.region"],
        endpoint_override=props.get("s3.endpoint"),
        force_virtual_addressing=props.get("s3.force-virtual-addressing") == "true",
    )
    return s3, f"{u.netloc}{u.path}".rstrip("/")


@dataclass
class CatalogConfig:
    """A resolved catalog configuration."""

    name: str
    warehouse: str
    metastore: Metastore
    source: str = "<built-in>"
    #: Per-format settings: every other top-level table of the file (``[iceberg]`` -> ``{"iceberg": {...}}``);
    #: each format's adapter reads its own.
    format_options: dict[str, dict[str, str]] = field(default_factory=dict)
    #: The same sections as written (``${ENV}`` references unexpanded): an adapter checks that its secrets are references.
    format_options_raw: dict[str, dict[str, str]] = field(default_factory=dict)
    #: ``[spark] master`` as written; None: ``LAKECAT_SPARK_MASTER``, else ``local[N]`` for the cores this process may
    #: use (``sizing()`` says which)
    spark_master: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    spark_packages: list[str] = field(default_factory=list)
    #: ``[spark] engine``: ``auto`` (the warm local engine at an interactive terminal, else in process),
    #: ``in-process``, ``local`` (the warm local engine, started when none runs), or a Spark Connect endpoint
    #: (``sc://host:15002``, ``[spark] token`` appended as its token: every Spark-path command runs there and the
    #: lakecat process starts no JVM); None: not set (``auto``)
    spark_engine: str | None = None
    #: ``[spark] engine-idle``: how long an idle local engine that lakecat started by itself keeps running (a
    #: duration such as ``15m``; ``0``: until stopped); None: not set
    engine_idle: str | None = None
    storage: dict[str, str] = field(default_factory=dict)
    #: ``[spark] maven-repository`` as written (``${ENV}`` references unexpanded: lakecat.jars checks that
    #: credentials in it are references and hands them to the resolver as such)
    maven_repository: str | None = None
    #: ``[kafka] bootstrap``: the Kafka cluster this catalog's streams read (what ``lakecat doctor`` checks)
    kafka_bootstrap: str | None = None
    #: ``[tables] format-version``: the Iceberg format version ``create`` uses when not told (None: 2)
    default_format_version: int | None = None
    #: ``[tables] deletion-vectors``: whether ``create`` turns deletion vectors on when not told (None: off)
    default_deletion_vectors: bool | None = None

    @property
    def warehouse_uri(self) -> str:
        """The warehouse as a URI (``file:///...`` for local paths)."""
        if "://" in self.warehouse:
            return self.warehouse
        return Path(self.warehouse).expanduser().resolve().as_uri()

    @property
    def warehouse_path(self) -> Path | None:
        """The warehouse as a local path, when it is one."""
        if "://" not in self.warehouse:
            return Path(self.warehouse).expanduser().resolve()
        if self.warehouse.startswith("file://"):
            return Path(unquote(urlparse(self.warehouse).path))
        return None

    @property
    def object_storage(self) -> bool:
        """True when the warehouse is in S3-compatible object storage (``s3://`` or ``s3a://``)."""
        return urlparse(self.warehouse).scheme.lower() in OBJECT_STORAGE_SCHEMES

    def s3(self) -> S3Settings | None:
        """The warehouse's S3 settings, or None for a warehouse on a filesystem.

        The endpoint is ``AWS_ENDPOINT_URL`` (the variable boto3, the AWS CLI and delta-rs read), else
        ``[storage] endpoint``, else AWS itself; the region ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else
        ``[storage] region``, else ``us-east-1``. Addressing is path style (``bucket`` in the path, what
        MinIO, Ceph and most S3-compatible servers want) whenever an endpoint is set, unless
        ``[storage] path-style-access = false``.
        """
        if not self.object_storage:
            return None
        endpoint = os.environ.get("AWS_ENDPOINT_URL") or self.storage.get("endpoint") or None
        env_region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        region = env_region or self.storage.get("region") or "us-east-1"
        path_style = self.storage.get("path-style-access", "true" if endpoint else "false").strip().lower()
        if path_style not in ("true", "false"):
            raise ConfigError(
                f"catalog config {self.source}: [storage] path-style-access must be true or false, not {path_style!r}"
            )
        return S3Settings(endpoint=endpoint, region=region, path_style=path_style == "true")

    def pyiceberg_properties(self) -> dict[str, str]:
        """FileIO properties for pyiceberg (light path); credentials stay with the environment."""
        s3 = self.s3()
        if s3 is None:
            return {}
        props = {"s3.region": s3.region}
        if s3.endpoint:
            props["s3.endpoint"] = s3.endpoint
        if not s3.path_style:
            props["s3.force-virtual-addressing"] = "true"
        return props

    def delta_storage_options(self) -> dict[str, str]:
        """delta-rs storage options (light path) for the same store; credentials stay with the environment."""
        s3 = self.s3()
        if s3 is None:
            return {}
        opts = {"AWS_REGION": s3.region, "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": str(not s3.path_style).lower()}
        if s3.endpoint:
            opts["AWS_ENDPOINT_URL"] = s3.endpoint
        if s3.allow_http:
            opts["AWS_ALLOW_HTTP"] = "true"
        return opts

    def export_storage_env(self) -> None:
        """Fill in the ``AWS_*`` variables delta-rs reads, where the environment leaves them unset.

        Every ``DeltaTable(location)`` of the light path then reaches the same store as Spark and
        pyiceberg, without passing options around; a variable the user set is never overwritten.
        """
        for k, v in self.delta_storage_options().items():
            os.environ.setdefault(k, v)

    def sizing(self) -> SparkSizing:
        """The Spark driver lakecat starts for this catalog on this machine, now (``lakecat.sizing``)."""
        return this_machine(master=self.spark_master, conf=self.spark_conf)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "warehouse": self.warehouse_uri,
            "metastore": _redact(self.metastore.url),
            "spark_master": this_master(self.spark_master),
        }


def _redact(url: str) -> str:
    return re.sub(r"(://[^:/@]+:)[^@]+@", r"\1***@", url)


_CORE_SECTIONS = ("spark", "storage", "kafka", "tables")
TABLES_KEYS = ("format-version", "deletion-vectors")


def load_config_file(path: Path) -> CatalogConfig:
    """Read one catalog TOML file."""
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"catalog config {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"catalog config {path} is not valid TOML: {e}") from None
    # expanded when jars are resolved, not here: a light command must not need the repository's credentials
    maven_repository = (
        raw.get("spark", {}).pop("maven-repository", None) if isinstance(raw.get("spark"), dict) else None
    )
    data = expand_env(raw, source=str(path))
    try:
        name = validate_part(str(data["name"]), what="catalog name")
        warehouse = str(data["warehouse"])
        metastore = Metastore(str(data["metastore"]))
    except KeyError as e:
        raise ConfigError(f"catalog config {path} lacks the key {e.args[0]!r}") from None
    if metastore.kind not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"catalog config {path}: unsupported metastore {metastore.url!r}; use sqlite:///PATH or postgresql://..."
        )
    spark = data.get("spark", {})
    storage = data.get("storage", {})
    unknown = sorted(set(storage) - set(STORAGE_KEYS))
    if unknown:
        raise ConfigError(
            f"catalog config {path}: unknown [storage] key(s) {', '.join(unknown)}; allowed: {', '.join(STORAGE_KEYS)} "
            "(credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in the environment, never from the file)"
        )
    return CatalogConfig(
        name=name,
        warehouse=warehouse,
        metastore=metastore,
        source=str(path),
        format_options={
            str(section): {str(k): str(v) for k, v in body.items()}
            for section, body in data.items()
            if isinstance(body, dict) and section not in _CORE_SECTIONS
        },
        format_options_raw={
            str(section): {str(k): str(v) for k, v in body.items()}
            for section, body in raw.items()
            if isinstance(body, dict) and section not in _CORE_SECTIONS
        },
        spark_master=str(spark["master"]) if spark.get("master") else None,
        spark_conf={str(k): str(v) for k, v in spark.get("conf", {}).items()},
        spark_packages=[str(p) for p in spark.get("packages", [])],
        spark_engine=_engine(spark, path),
        engine_idle=str(spark["engine-idle"]).strip() if "engine-idle" in spark else None,
        storage={str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in storage.items()},
        maven_repository=str(maven_repository) if maven_repository is not None else None,
        kafka_bootstrap=str(data["kafka"]["bootstrap"]) if "bootstrap" in data.get("kafka", {}) else None,
        **_table_defaults(data.get("tables", {}), path),
    )


def _table_defaults(tables: dict[str, Any], path: Path) -> dict[str, Any]:
    """``[tables]``: the layout ``create`` gives a table when its flags do not say (``format-version`` for Iceberg,
    ``deletion-vectors`` for every format)."""
    unknown = sorted(set(tables) - set(TABLES_KEYS))
    if unknown:
        raise ConfigError(f"catalog config {path}: unknown [tables] key(s) {', '.join(unknown)}; allowed: "
                          f"{', '.join(TABLES_KEYS)}")  # fmt: skip
    out: dict[str, Any] = {}
    if "format-version" in tables:
        version = tables["format-version"]
        if str(version) not in ("2", "3"):
            raise ConfigError(f"catalog config {path}: [tables] format-version must be 2 or 3, not {version!r}")
        out["default_format_version"] = int(version)
    if "deletion-vectors" in tables:
        dv = tables["deletion-vectors"]
        if not isinstance(dv, bool):
            raise ConfigError(f"catalog config {path}: [tables] deletion-vectors must be true or false, not {dv!r}")
        out["default_deletion_vectors"] = dv
    return out


ENGINE_CHOICES = ("auto", "in-process", "local")


def _engine(spark: dict[str, Any], path: Path) -> str | None:
    """``[spark] engine``: one of ``ENGINE_CHOICES``, or a Spark Connect URL with ``[spark] token`` (a ``${ENV}``
    reference, expanded by now) as its token parameter; None when unset."""
    # Other unknown [spark] keys pass unread; a config naming a Spark Connect server this way would quietly run in
    # process instead.
    if "remote" in spark:
        raise InvalidConfigError(f'catalog config {path}: [spark] has no key remote; use engine = "sc://host:port"')
    engine = str(spark.get("engine") or "").strip()
    token = str(spark.get("token") or "").strip()
    if token and not engine.startswith("sc://"):
        raise ConfigError(f"catalog config {path}: [spark] token without a Spark Connect [spark] engine (sc://...)")
    if not engine:
        return None
    if engine.startswith("sc://"):
        if not token:
            return engine
        return f"{engine};token={token}" if "/;" in engine else f"{engine.rstrip('/')}/;token={token}"
    if engine.lower() not in ENGINE_CHOICES:
        raise ConfigError(f"catalog config {path}: [spark] engine must be auto, in-process, local or a Spark Connect "
                          f"URL like sc://host:15002, not {engine!r}")  # fmt: skip
    return engine.lower()


def _search_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("LAKECAT_CONF_DIR"):
        dirs.append(Path(os.environ["LAKECAT_CONF_DIR"]).expanduser())
    dirs.append(lakecat_home() / "catalogs")
    dirs.append(bundled_conf_dir())
    return dirs


def resolve_config(catalog: str | Path | CatalogConfig | None = None) -> CatalogConfig:
    """Resolve a catalog argument (name, path, config or None) to a CatalogConfig."""
    if isinstance(catalog, CatalogConfig):
        return catalog
    choice = str(catalog) if catalog else (os.environ.get("LAKECAT_CATALOG") or DEFAULT_CATALOG)
    path = Path(choice).expanduser()
    if choice.endswith(".toml") or os.sep in choice:
        return load_config_file(path)
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", choice):
        raise ConfigError(f"invalid catalog {choice!r}: give a config name (e.g. local) or a path to a .toml file")
    for d in _search_dirs():
        candidate = d / f"{choice}.toml"
        if candidate.is_file():
            return load_config_file(candidate)
    nearest = did_you_mean(choice, (name for name, _ in available_catalogs()))
    raise ConfigError(
        f"unknown catalog {choice!r}: no {choice}.toml in {', '.join(str(d) for d in _search_dirs())}{nearest}"
    )


def _looks_like_catalog(path: Path) -> bool:
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
    return all(k in raw for k in ("name", "warehouse", "metastore"))


def available_catalogs() -> list[tuple[str, Path]]:
    """Every catalog config lakecat can find by name, first match wins."""
    found: dict[str, Path] = {}
    for d in _search_dirs():
        if d.is_dir():
            for p in sorted(d.glob("*.toml")):
                if _looks_like_catalog(p):  # not e.g. a maintenance plan lying beside the catalogs
                    found.setdefault(p.stem, p)
    return sorted(found.items())
