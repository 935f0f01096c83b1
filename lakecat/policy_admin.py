"""``lakecat policy set / show``: maintenance policies for a table, a namespace or the whole catalog.

What a policy is and how a table inherits it: ``lakecat.policy``.

A table's policy is its ``lakecat.*`` table properties (in the table's own metadata, where Spark, pyiceberg and
delta-rs see them). A namespace's (``sales.*``) or the catalog's (``*``) lives in the catalog's metastore
(``ScopedPolicies``). A table inherits catalog → namespace → table, the nearer scope winning key by key, as Apache
Polaris's policies inherit; ``maintain``, ``maintain --auto``, the maintenance service and ``health`` read the
result. Keys may be given without their ``lakecat.`` prefix (``expire.retain-last=10``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import display
from .errors import InvalidArgumentError, invalid
from .health import DEFAULT_DELETED_ROWS_PERCENT
from .identifiers import TableIdent, validate_part
from .maintenance import DEFAULT_EXPIRE_WINDOW, set_properties
from .metastore import ScopedPolicies
from .policy import POLICY_KEYS, explain_policy, load_plan, validate_policy
from .results import Result
from .smallfiles import DEFAULT_MIN_INPUT_FILES, DEFAULT_TARGET_FILE_SIZE
from .units import format_duration

if TYPE_CHECKING:
    from pathlib import Path

    from .protocols import CatalogLike, TableLike

DEFAULT_MAJOR_EVERY = "1d"


@dataclass(frozen=True)
class PolicyTarget:
    """Where a policy is set: ``catalog`` (``*``), a ``namespace`` (``sales.*``) or a ``table`` (``sales.orders``)."""

    kind: str
    name: str


@dataclass
class PolicySetResult(Result):
    """``policy set``: the scope and the policy set there afterwards (not inherited keys)."""

    scope: str  # catalog | namespace | table
    target: str  # * | the namespace | the table
    policy: dict[str, str] = field(default_factory=dict)
    #: For a table: the engine that committed its properties (``light``: no JVM, or ``spark``) and why Spark did; None
    #: for a namespace or the catalog (lakecat's metastore, no engine).
    engine: str | None = None
    engine_reason: str | None = None


@dataclass
class PolicyShowResult(Result):
    """``policy show``: each key's effective value and where it comes from (``default`` when set nowhere)."""

    table: str
    format: str
    enabled: bool
    policy: dict[str, dict[str, str]] = field(default_factory=dict)  # key -> {"value", "source"}

    def _repr_html_(self) -> str:
        return display.table(["key", "value", "from"], ([k, v["value"], v["source"]] for k, v in self.policy.items()),
                             title=f"{self.table} ({self.format}) policy"
                             + ("" if self.enabled else " — maintenance disabled"))  # fmt: skip


def parse_target(pattern: str) -> PolicyTarget:
    """``*``, ``ns.*`` or ``ns.table``; any other pattern is a usage error (a policy is set on one scope)."""
    text = str(pattern).strip()
    if text == ScopedPolicies.CATALOG_SCOPE:
        return PolicyTarget("catalog", text)
    if text.endswith(".*") and text.count(".") == 1:
        return PolicyTarget("namespace", validate_part(text[:-2], what="namespace"))
    if any(c in text for c in "*?["):
        raise InvalidArgumentError(
            f"invalid policy scope {pattern!r}: use a table (sales.orders), a namespace (sales.*) or the catalog (*)"
        )
    return PolicyTarget("table", str(TableIdent.parse(text)))


def policy_keys(values: dict[str, str] | list[str] | tuple[str, ...]) -> Any:
    """``values`` with every key spelled in full (``lakecat.`` prefixed); a key that is no policy is a usage error."""
    full = {k if str(k).startswith("lakecat.") else f"lakecat.{k}": k for k in values}
    unknown = [given for key, given in full.items() if key not in POLICY_KEYS]
    if unknown:
        short = ", ".join(k.removeprefix("lakecat.") for k in POLICY_KEYS)
        raise InvalidArgumentError(f"unknown policy key {unknown[0]!r}: use one of {short}")
    if isinstance(values, dict):
        return {key: str(values[given]).strip() for key, given in full.items()}
    return list(full)


def set_policy(
    catalog: CatalogLike,
    pattern: str,
    values: dict[str, str],
    *,
    unset: list[str] | tuple[str, ...] = (),
    engine: str | None = None,
) -> PolicySetResult:
    """Set (and unset) policy keys for a table (its properties), a namespace (``ns.*``) or the catalog (``*``).

    ``engine`` (a table only): as for ``Table.set_properties`` — no JVM where the light library commits exactly.

    Example:
        >>> set_policy(cat, "sales.*", {"expire.retain-last": "10"})  # doctest: +SKIP
    """
    target = parse_target(pattern)
    props, removed = validate_policy(policy_keys(values)), policy_keys(list(unset))
    if not props and not removed:
        raise invalid("nothing to change: give at least one policy key, or unset=[KEY]",
                      "nothing to change: give at least one KEY=VALUE or --unset KEY")  # fmt: skip
    if target.kind == "table":
        table = catalog.load_table(target.name)
        done = set_properties(table, props, unset=removed, engine=engine)
        return PolicySetResult("table", target.name, {k: v for k, v in done.properties.items() if k in POLICY_KEYS},
                               done.engine, done.engine_reason)  # fmt: skip
    if engine is not None:
        raise InvalidArgumentError(f"engine= applies to a table's policy (a property change); {target.kind} policies "
                                   "live in lakecat's catalog and need no engine")  # fmt: skip
    store = ScopedPolicies(catalog.metastore)
    return PolicySetResult(target.kind, target.name, store.set(target.name, props, removed))


def defaults(table: TableLike) -> dict[str, str]:
    """The built-in value of every policy key, for a table of this format."""
    return {
        "lakecat.compact.target-file-size": f"{DEFAULT_TARGET_FILE_SIZE // 1000**2}MB",
        "lakecat.compact.strategy": "binpack",
        "lakecat.compact.by": "",
        "lakecat.compact.min-input-files": str(DEFAULT_MIN_INPUT_FILES),
        "lakecat.compact.major-every": DEFAULT_MAJOR_EVERY,
        "lakecat.expire.older-than": format_duration(DEFAULT_EXPIRE_WINDOW),
        "lakecat.expire.retain-last": "1",
        "lakecat.orphans.older-than": format_duration(table.adapter.default_orphan_window),
        "lakecat.maintain.enabled": "true",
        "lakecat.health.small-files": "",  # the former name of lakecat.compact.min-input-files
        "lakecat.health.deleted-rows-percent": str(DEFAULT_DELETED_ROWS_PERCENT),
    }


def show_policy(catalog: CatalogLike, name: str, *, plan: str | Path | None = None) -> PolicyShowResult:
    """A table's effective policy, each key with the scope it comes from (metadata only, no JVM)."""
    table = catalog.load_table(name)
    explained = explain_policy(table, load_plan(plan))
    builtin = defaults(table)
    out = {k: {"value": builtin.get(k, ""), "source": "default"} for k in POLICY_KEYS}
    out.update({k: {"value": v, "source": src} for k, (v, src) in explained.items() if k in POLICY_KEYS})
    enabled = out["lakecat.maintain.enabled"]["value"].lower() != "false"
    return PolicyShowResult(table.name, table.format, enabled, dict(sorted(out.items())))
