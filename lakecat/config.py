"""Catalog configuration: which metastore, which warehouse, which Spark.

Resolution order (like pyiceberg's): an explicit ``connect(catalog)`` argument, else the
``LAKECAT_CATALOG`` environment variable, else the embedded default ``local`` (everything under
``$LAKECAT_HOME``, default ``~/.lakecat``). A catalog is named (looked up as ``NAME.toml`` in
``$LAKECAT_CONF_DIR``, ``$LAKECAT_HOME/catalogs`` and lakecat's bundled ``catalog_conf/``) or given
as a path to a TOML file. ``${VAR}`` and ``${VAR:-default}`` are expanded; secrets belong in the
environment, never in the file.
"""

from __future__ import annotations

import logging
import os
import re
import threading
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
#: What [storage] may say. The credentials only as ``${VAR}`` references (never the values in the file); without
#: them every engine reads the environment (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``)
#: or the machine's role.
STORAGE_CREDENTIAL_KEYS = ("access-key-id", "secret-access-key", "session-token")
STORAGE_KEYS = ("endpoint", "region", "path-style-access", *STORAGE_CREDENTIAL_KEYS)
_ENV_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class S3Settings:
    """Where an S3-compatible store is and how to sign in: a catalog's ``[storage]``, or the ``AWS_*`` environment.

    Each catalog hands its own to every engine it opens (``pyiceberg_properties``, ``delta_options``,
    ``filesystem``, Spark's per-bucket S3A settings); nothing is written to the process environment.
    Credentials left None are the engines' to find (the environment, the machine's role).
    """

    endpoint: str | None
    region: str
    path_style: bool
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_environment(cls) -> S3Settings:
        """The store of the ``AWS_*`` environment (what boto3, the AWS CLI and delta-rs read by themselves)."""
        endpoint = os.environ.get("AWS_ENDPOINT_URL") or None
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        virtual = os.environ.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "").strip().lower() == "true"
        return cls(endpoint=endpoint, region=region, path_style=not virtual)

    @property
    def allow_http(self) -> bool:
        return bool(self.endpoint) and self.endpoint.lower().startswith("http://")  # type: ignore[union-attr]

    def pyiceberg_properties(self) -> dict[str, str]:
        """pyiceberg FileIO properties (catalog or table properties)."""
        props = {"s3.region": self.region}
        if self.endpoint:
            props["s3.endpoint"] = self.endpoint
        if not self.path_style:
            props["s3.force-virtual-addressing"] = "true"
        for key, value in (("s3.access-key-id", self.access_key_id), ("s3.secret-access-key", self.secret_access_key),
                           ("s3.session-token", self.session_token)):  # fmt: skip
            if value:
                props[key] = value
        return props

    def delta_options(self) -> dict[str, str]:
        """delta-rs ``storage_options``."""
        opts = {"AWS_REGION": self.region, "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": str(not self.path_style).lower()}
        if self.endpoint:
            opts["AWS_ENDPOINT_URL"] = self.endpoint
        if self.allow_http:
            opts["AWS_ALLOW_HTTP"] = "true"
        for key, value in (("AWS_ACCESS_KEY_ID", self.access_key_id), ("AWS_SECRET_ACCESS_KEY", self.secret_access_key),
                           ("AWS_SESSION_TOKEN", self.session_token)):  # fmt: skip
            if value:
                opts[key] = value
        return opts

    def filesystem(self) -> Any:
        """A pyarrow S3 filesystem for this store."""
        from pyarrow import fs

        try:
            s3_filesystem = fs.S3FileSystem
        except ImportError as e:  # a pyarrow built without S3 (some conda and source builds; PyPI's wheels have it)
            raise MissingDependencyError(
                f"object storage needs pyarrow with S3 support ({e}): {install_hint('pyarrow', extra=None)} from PyPI"
            ) from None
        credentials: dict[str, Any] = {}
        if self.access_key_id and self.secret_access_key:
            credentials = {"access_key": self.access_key_id, "secret_key": self.secret_access_key,
                           "session_token": self.session_token}  # fmt: skip
        return s3_filesystem(region=self.region, endpoint_override=self.endpoint,
                             force_virtual_addressing=not self.path_style, **credentials)  # fmt: skip

    def hadoop_bucket_conf(self, bucket: str, *, credentials: bool = True) -> dict[str, str]:
        """Hadoop S3A's settings for one bucket (``fs.s3a.bucket.<bucket>.*``, without ``spark.hadoop.``): each
        bucket of a Spark session reaches its own store."""
        prefix = f"fs.s3a.bucket.{bucket}."
        conf = {f"{prefix}endpoint.region": self.region, f"{prefix}path.style.access": str(self.path_style).lower()}
        if self.endpoint:
            conf[f"{prefix}endpoint"] = self.endpoint
            conf[f"{prefix}connection.ssl.enabled"] = str(not self.allow_http).lower()
        if credentials and self.access_key_id and self.secret_access_key:
            conf[f"{prefix}access.key"] = self.access_key_id
            conf[f"{prefix}secret.key"] = self.secret_access_key
            if self.session_token:
                conf[f"{prefix}session.token"] = self.session_token
                conf[f"{prefix}aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        return conf


def is_object_storage(location: str | None) -> bool:
    return bool(location) and urlparse(str(location)).scheme.lower() in OBJECT_STORAGE_SCHEMES


def _bucket_and_path(location: str) -> tuple[str, str]:
    u = urlparse(location)
    return u.netloc, unquote(u.path).strip("/")


#: The store of each location a catalog of this process reached: (bucket, path prefix) -> settings. Filled by each
#: ``Catalog`` with its warehouse and its tables' locations (``use_store``); read by every light-path engine a location
#: is opened with (``store_for``).
_stores: dict[tuple[str, str], S3Settings] = {}
_stores_lock = threading.Lock()


def use_store(location: str, s3: S3Settings, *, unless_known: bool = False) -> bool:
    """Reach object storage at and under ``location`` through ``s3`` in this process (a catalog's own warehouse, a
    table of it elsewhere). With ``unless_known``, only when no other prefix of this bucket knows the location yet.
    True when this changed what the location reaches."""
    if not is_object_storage(location):
        return False
    key = _bucket_and_path(location)
    with _stores_lock:
        if unless_known and _registered(location) is not None:
            return False
        old = _stores.get(key)
        _stores[key] = s3
    if old is not None and old != s3:
        log.warning("s3://%s/%s was reached through another object store in this process until now", *key)
    return old != s3


def _registered(location: str) -> S3Settings | None:
    bucket, path = _bucket_and_path(location)
    best: tuple[int, S3Settings] | None = None
    for (b, prefix), s3 in _stores.items():
        if b == bucket and (not prefix or path == prefix or path.startswith(prefix + "/")):
            if best is None or len(prefix) >= best[0]:
                best = (len(prefix), s3)
    return None if best is None else best[1]


def store_for(location: str) -> S3Settings:
    """The object store ``location`` lives in: the settings of the catalog that claimed its longest prefix, else the
    one store every catalog of this process uses, else the ``AWS_*`` environment."""
    with _stores_lock:
        found = _registered(location)
        distinct = set(_stores.values())
    if found is not None:
        return found
    if len(distinct) == 1:
        return next(iter(distinct))
    return S3Settings.from_environment()


def store_buckets() -> dict[str, S3Settings]:
    """Each bucket a catalog of this process claimed, and its store (the bucket's broadest claim)."""
    with _stores_lock:
        out: dict[str, tuple[int, S3Settings]] = {}
        for (bucket, prefix), s3 in _stores.items():
            if bucket not in out or len(prefix) < out[bucket][0]:
                out[bucket] = (len(prefix), s3)
    return {b: s3 for b, (_, s3) in out.items()}


def pyiceberg_io_properties(location: str | None) -> dict[str, str]:
    """pyiceberg FileIO properties for a table opened without a catalog (``StaticTable``), from its location's store
    (``store_for``); none for a table on a filesystem."""
    if not location or not is_object_storage(location):
        return {}
    return store_for(location).pyiceberg_properties()


def delta_storage_options(location: str | None) -> dict[str, str]:
    """delta-rs ``storage_options`` for a table at ``location``, from its store (``store_for``); none for a table on a
    filesystem. Every ``DeltaTable(...)`` of lakecat takes them."""
    if not location or not is_object_storage(location):
        return {}
    return store_for(location).delta_options()


def pyarrow_filesystem(uri: str) -> tuple[Any, str]:
    """A pyarrow filesystem and the path inside it for a non-local URI.

    ``s3://`` and ``s3a://`` (which pyarrow does not know by name) get an S3 filesystem for the location's store
    (``store_for``).
    """
    from pyarrow import fs

    u = urlparse(uri)
    if u.scheme.lower() not in OBJECT_STORAGE_SCHEMES:
        return fs.FileSystem.from_uri(uri)
    return store_for(uri).filesystem(), f"{u.netloc}{u.path}".rstrip("/")


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

        Each setting is the catalog's own first, the environment's only where ``[storage]`` leaves it unset: the
        endpoint ``[storage] endpoint``, else ``AWS_ENDPOINT_URL``, else AWS itself; the region ``[storage] region``,
        else ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else ``us-east-1``; the credentials ``[storage]
        access-key-id`` / ``secret-access-key`` / ``session-token`` (``${VAR}`` references), else whatever each engine
        finds (the ``AWS_*`` variables, the machine's role). Addressing is path style (``bucket`` in the path, what
        MinIO, Ceph and most S3-compatible servers want) whenever an endpoint is set, unless
        ``[storage] path-style-access = false``.
        """
        if not self.object_storage:
            return None
        endpoint = self.storage.get("endpoint") or os.environ.get("AWS_ENDPOINT_URL") or None
        env_region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        region = self.storage.get("region") or env_region or "us-east-1"
        path_style = self.storage.get("path-style-access", "true" if endpoint else "false").strip().lower()
        if path_style not in ("true", "false"):
            raise ConfigError(
                f"catalog config {self.source}: [storage] path-style-access must be true or false, not {path_style!r}"
            )
        key, secret, token = (self.storage.get(k) or None for k in STORAGE_CREDENTIAL_KEYS)
        if bool(key) != bool(secret):
            raise ConfigError(
                f"catalog config {self.source}: [storage] access-key-id and secret-access-key go together"
            )
        return S3Settings(endpoint=endpoint, region=region, path_style=path_style == "true", access_key_id=key,
                          secret_access_key=secret, session_token=token)  # fmt: skip

    def pyiceberg_properties(self) -> dict[str, str]:
        """FileIO properties for pyiceberg's catalogs (light path): the warehouse's store."""
        s3 = self.s3()
        return {} if s3 is None else s3.pyiceberg_properties()

    def delta_storage_options(self) -> dict[str, str]:
        """delta-rs storage options (light path) for the warehouse's store."""
        s3 = self.s3()
        return {} if s3 is None else s3.delta_options()

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
            f"catalog config {path}: unknown [storage] key(s) {', '.join(unknown)}; allowed: {', '.join(STORAGE_KEYS)}"
        )
    raw_storage = raw.get("storage", {}) if isinstance(raw.get("storage"), dict) else {}
    for key in STORAGE_CREDENTIAL_KEYS:
        if key in raw_storage and not _ENV_REF.fullmatch(str(raw_storage[key]).strip()):
            variable = "AWS_" + key.upper().replace("-", "_")
            raise ConfigError(f"catalog config {path}: [storage] {key} must be an environment reference like "
                              f"${{{variable}}}: credentials never live in the file")  # fmt: skip
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
