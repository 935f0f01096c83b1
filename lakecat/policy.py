"""What a table's maintenance policy is: the policy keys and their checks, plan files, and the layers a table
inherits its policy from.

A policy is a set of ``lakecat.*`` keys. A table's own are its table properties (in its metadata, where Spark,
pyiceberg and delta-rs all see them); a namespace's and the catalog's live in the metastore (``ScopedPolicies``);
a plan file (``maintain --plan``) adds defaults and per-pattern overrides. Reads are metadata only (no JVM).
"""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .engine import validate_properties
from .errors import InvalidArgumentError
from .identifiers import parse_columns
from .metastore import ScopedPolicies
from .units import parse_duration, parse_size

if TYPE_CHECKING:
    from .protocols import TableLike

STRATEGIES = ("binpack", "sort", "zorder")
POLICY_KEYS = {
    "lakecat.compact.target-file-size": "size",
    "lakecat.compact.strategy": "strategy",
    "lakecat.compact.by": "columns",
    "lakecat.compact.min-input-files": "int",
    "lakecat.compact.major-every": "duration",
    "lakecat.expire.older-than": "duration",
    "lakecat.expire.retain-last": "int",
    "lakecat.orphans.older-than": "duration",
    "lakecat.maintain.enabled": "bool",
    "lakecat.maintain.light-max-bytes": "size",
    "lakecat.health.small-files": "int",
    "lakecat.health.deleted-rows-percent": "int",
    "lakecat.health.clustering-depth": "int",
}


def validate_policy(properties: dict[str, str]) -> dict[str, str]:
    """Check the values of ``lakecat.*`` policy properties (other keys pass through)."""
    props = validate_properties(properties)
    for k, v in props.items():
        kind = POLICY_KEYS.get(k)
        if kind is None:
            if k.startswith(
                ("lakecat.compact.", "lakecat.expire.", "lakecat.orphans.", "lakecat.maintain.", "lakecat.health.")
            ):
                raise InvalidArgumentError(f"unknown maintenance property {k!r}: use one of {', '.join(POLICY_KEYS)}")
            continue
        try:
            if kind == "size":
                parse_size(v)
            elif kind == "duration":
                parse_duration(v)
            elif kind == "strategy" and v.lower() not in STRATEGIES:
                raise InvalidArgumentError(f"use {', '.join(STRATEGIES)}")
            elif kind == "columns":
                parse_columns(v)
            elif kind == "int" and (not str(v).strip().isdigit() or int(v) < 1):
                raise InvalidArgumentError("use a positive integer")
            elif kind == "bool" and str(v).lower() not in ("true", "false"):
                raise InvalidArgumentError("use true or false")
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"invalid value {v!r} for {k}: {e}") from None
    return props


def table_policy(table: TableLike) -> dict[str, str]:
    """The ``lakecat.*`` properties of a table, from metadata (no JVM)."""
    table.refresh()
    return {k: v for k, v in table.adapter.properties(table).items() if k.startswith("lakecat.")}


def load_plan(path: str | Path | dict[str, Any] | None) -> dict[str, Any]:
    """Read a maintenance plan (TOML): ``[defaults]`` and ``[[tables]]`` entries with ``match``."""
    if path is None:
        return {}
    if isinstance(path, dict):
        raw = path
    else:
        try:
            raw = tomllib.loads(Path(path).read_text())
        except FileNotFoundError:
            raise InvalidArgumentError(f"plan file {path} not found") from None
        except tomllib.TOMLDecodeError as e:
            raise InvalidArgumentError(f"plan file {path} is not valid TOML: {e}") from None
    plan: dict[str, Any] = {"defaults": _flat_policy(raw.get("defaults", {}), "[defaults]"), "tables": []}
    for i, item in enumerate(raw.get("tables", [])):
        if not isinstance(item, dict) or not isinstance(item.get("match"), str):
            raise InvalidArgumentError(f'plan file: [[tables]] entry {i + 1} needs match = "namespace.pattern"')
        body = {k: v for k, v in item.items() if k != "match"}
        plan["tables"].append((item["match"], _flat_policy(body, f"[[tables]] {item['match']}")))
    unknown = set(raw) - {"defaults", "tables"}
    if unknown:
        raise InvalidArgumentError(
            f"plan file: unknown section(s) {', '.join(sorted(unknown))}: use [defaults] and [[tables]]"
        )
    return plan


def _flat_policy(body: Any, where: str) -> dict[str, str]:
    if not isinstance(body, dict):
        raise InvalidArgumentError(f"plan file: {where} must be a table of settings")
    flat: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, list):
            flat[prefix] = ",".join(str(v) for v in value)
        elif isinstance(value, bool):
            flat[prefix] = "true" if value else "false"
        else:
            flat[prefix] = str(value)

    walk("", body)
    out: dict[str, str] = {}
    for k, v in flat.items():
        if k == "force":
            out["force"] = v
            continue
        key = k if k.startswith("lakecat.") else f"lakecat.{k}"
        if key not in POLICY_KEYS:
            raise InvalidArgumentError(f"plan file: unknown setting {k!r} in {where}")
        out[key] = v
    forced = out.pop("force", None)
    validate_policy(out)
    if forced is not None:
        out["force"] = forced
    return out


def explain_policy(
    table: TableLike, plan: dict[str, Any] | None = None, *, scoped: dict[str, dict[str, str]] | None = None
) -> dict[str, tuple[str, str]]:
    """key -> (value, where it is set), each layer overriding the one before: plan [defaults] < catalog policy <
    namespace policy < table properties < plan [[tables]] entries that match. Keys set nowhere take the built-in
    defaults. ``scoped`` is ``ScopedPolicies.all()`` when the caller has read it already (one read per pass)."""
    plan = plan or {}
    if scoped is None:
        scoped = ScopedPolicies(table.catalog.metastore).all()
    namespace = table.name.rsplit(".", 1)[0]
    out = {k: (v, "plan [defaults]") for k, v in plan.get("defaults", {}).items()}
    out.update({k: (v, "catalog") for k, v in scoped.get(ScopedPolicies.CATALOG_SCOPE, {}).items()})
    out.update({k: (v, f"namespace {namespace}") for k, v in scoped.get(namespace, {}).items()})
    out.update({k: (v, "table property") for k, v in table_policy(table).items()})
    for pattern, body in plan.get("tables", []):
        if fnmatch.fnmatchcase(table.name, pattern):
            out.update({k: (v, f"plan [[tables]] {pattern}") for k, v in body.items()})
    return out


def resolve_policy(
    table: TableLike, plan: dict[str, Any], *, scoped: dict[str, dict[str, str]] | None = None
) -> dict[str, str]:
    """The table's effective policy (see ``explain_policy`` for the order of the layers)."""
    return {k: v for k, (v, _) in explain_policy(table, plan, scoped=scoped).items()}
