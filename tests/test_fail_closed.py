"""Fail closed: a gate or a maintenance job that selects no table fails (exit 1) instead of passing having checked
nothing; a malformed input file is one line naming it; Ctrl-C during a Spark command is exit 130 and one line."""

from __future__ import annotations

import json
import threading

import pytest
from helpers import light_tables

FORMAT_OF = {0: "iceberg", 1: "delta"}


@pytest.mark.parametrize("index", [0, 1], ids=["iceberg", "delta"])
def test_a_pattern_that_matches_no_table_fails_the_gate_and_maintenance(cli, catalog, ns, index):
    from lakecat.errors import NoTableMatchesError
    from lakecat.service import serve

    name = light_tables(catalog, ns, 2, commits=1)[index]
    typo = name[:-1] + "x"  # one letter off: the CI pattern a gate must not silently pass on
    for argv in (["health", typo, "--fail-on", "any"], ["maintain", typo, "--dry-run"],
                 ["maintain", typo, "--auto", "--dry-run"], ["maintain", typo, "--auto", "--every", "1s"]):  # fmt: skip
        code, out, err = cli(*argv)
        errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert code == 1 and len(errors) == 1, (argv, code, err)
        assert errors[0].startswith(f"error: no table matches {typo!r} (--allow-empty accepts that); did you mean ")
        assert repr(name) in errors[0]
        code, out, err = cli(*argv, "--json")
        assert code == 1 and json.loads(out)["error"]["type"] == "NoTableMatchesError", (argv, out)

    # --allow-empty: a script that means "whatever matches, possibly nothing"
    for argv in (["health", typo, "--fail-on", "any"], ["maintain", typo, "--dry-run"],
                 ["maintain", typo, "--auto", "--dry-run"]):  # fmt: skip
        code, out, err = cli(*argv, "--allow-empty", "--json")
        assert code == 0 and json.loads(out)["tables"] == [], (argv, code, err)

    # a plain listing is a question, and "none" is its answer: exit 0, an empty result
    code, out, err = cli("health", typo, "--json")
    assert code == 0 and json.loads(out)["tables"] == [], err
    code, out, err = cli("health", typo)
    assert code == 0 and f"no table matches {typo}" in out, err

    # the same pattern spelt right judges the table (of either format)
    code, out, err = cli("health", name, "--fail-on", "compact", "--json")
    assert [h["name"] for h in json.loads(out)["tables"]] == [name], err

    # the API refuses the same way, and says yes to allow_empty=True
    with pytest.raises(NoTableMatchesError, match="no table matches"):
        catalog.health(typo)
    with pytest.raises(NoTableMatchesError):
        catalog.maintain(typo, dry_run=True)
    with pytest.raises(NoTableMatchesError):
        catalog.maintain(typo, dry_run=True, auto=True)
    stop = threading.Event()
    stop.set()  # one look at the catalog, no pass
    with pytest.raises(NoTableMatchesError):
        serve(catalog, typo, every="1s", stop=stop)
    assert catalog.health(typo, allow_empty=True).tables == []
    assert catalog.maintain(typo, dry_run=True, allow_empty=True).tables == []
    assert serve(catalog, typo, every="1s", stop=stop, allow_empty=True).passes == 0
