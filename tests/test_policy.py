"""policy set / show: policies for the catalog, a namespace and a table, inherited in that order; the opt-out.

No JVM: the tables are written by pyiceberg and delta-rs, the commands run in a process that must not load Spark.
"""

from __future__ import annotations

import json

from helpers import light_tables


def test_policy_inherits_catalog_namespace_table_without_a_jvm(catalog, light_cli, lakecat, ns):
    iceberg, delta = light_tables(catalog, ns, 2, commits=1)  # t000 Iceberg, t001 Delta

    def policy(*args):
        code, out, err = lakecat("policy", *args, "--json")
        assert code == 0, err
        return json.loads(out)

    try:
        assert policy("set", "*", "expire.retain-last=3", "orphans.older-than=9d") == {
            "scope": "catalog", "target": "*",
            "policy": {"lakecat.expire.retain-last": "3", "lakecat.orphans.older-than": "9d"},
            "engine": None, "engine_reason": None,  # the metastore's: no engine
        }  # fmt: skip
        # in a process that must not load Spark: a namespace's policy, an Iceberg table's (a property, by pyiceberg)
        doc = light_cli("policy", "set", f"{ns}.*", "lakecat.expire.retain-last=5", "compact.target-file-size=64MB",
                        forbid=("pyspark", "py4j"))  # fmt: skip
        assert doc["scope"] == "namespace" and doc["target"] == ns
        doc = light_cli("policy", "set", iceberg, "compact.target-file-size=32MB")
        assert doc == {"scope": "table", "target": iceberg, "policy": {"lakecat.compact.target-file-size": "32MB"},
                       "engine": "light", "engine_reason": None}  # fmt: skip

        shown = light_cli("policy", "show", iceberg)
        p = shown["policy"]
        assert shown["enabled"] is True and shown["table"] == iceberg
        assert p["lakecat.compact.target-file-size"] == {"value": "32MB", "source": "table property"}
        assert p["lakecat.expire.retain-last"] == {"value": "5", "source": f"namespace {ns}"}
        assert p["lakecat.orphans.older-than"] == {"value": "9d", "source": "catalog"}
        assert p["lakecat.compact.strategy"] == {"value": "binpack", "source": "default"}
        p = policy("show", delta)["policy"]
        assert p["lakecat.compact.target-file-size"] == {"value": "64MB", "source": f"namespace {ns}"}

        # unset at the namespace: the catalog's value shows through
        assert policy("set", f"{ns}.*", "--unset", "expire.retain-last")["policy"] == {
            "lakecat.compact.target-file-size": "64MB"
        }
        assert policy("show", delta)["policy"]["lakecat.expire.retain-last"]["source"] == "catalog"
    finally:  # the catalog's policy reaches every later test's tables
        policy("set", "*", "--unset", "expire.retain-last", "--unset", "orphans.older-than")

    # the opt-out, for the namespace: maintain (and the service) skip the tables, and say why
    policy("set", f"{ns}.*", "maintain.enabled=false")
    assert policy("show", delta)["enabled"] is False
    code, out, err = lakecat("maintain", f"{ns}.*", "--auto", "--dry-run", "--json")
    assert code == 0, err
    assert [(t["status"], t["actions"][0]["reason"]) for t in json.loads(out)["tables"]] == [
        ("skipped", "lakecat.maintain.enabled=false")
    ] * 2
    policy("set", f"{ns}.*", "--unset", "maintain.enabled", "--unset", "compact.target-file-size")
    assert light_cli("maintenance-log", f"{ns}.*", forbid=("pyspark", "py4j")) == []  # nothing ran


def test_policy_refusals_are_usage_errors(lakecat, catalog, ns):
    light_tables(catalog, ns, 1, commits=1)
    for args, message in [
        (("policy", "set", f"{ns}.t000", "nonsense=1"), "unknown policy key 'nonsense'"),
        (("policy", "set", f"{ns}.*", "expire.retain-last=0"), "invalid value '0' for lakecat.expire.retain-last"),
        (("policy", "set", "sal*", "expire.retain-last=3"), "invalid policy scope 'sal*'"),
        (("policy", "set", f"{ns}.*", "expire.retain-last"), "use KEY=VALUE"),
        (("policy", "set", f"{ns}.*"), "nothing to change"),
        (("maintenance-log", "--since", "soon"), "invalid duration 'soon'"),
        (("maintain", "--every", "10m"), "--every needs --auto"),
        (("maintain", "--auto", "--every", "10m", "--dry-run"), "--dry-run goes with one pass"),
        (("maintain", "--max-minutes", "5"), "go with --every"),
    ]:
        code, out, err = lakecat(*args, "--json")
        assert code == 2, (args, err)
        assert message in json.loads(out)["error"]["message"], (args, out)
        assert err.count("\n") == 1, err  # one line
    code, out, _ = lakecat("policy", "show", f"{ns}.nope", "--json")
    assert code == 1 and json.loads(out)["error"]["type"] == "TableNotFoundError"
