"""Fuzzed bad input (Hypothesis): whatever a user types, lakecat answers with one line and a documented exit code
(1 failed, 2 usage, 3 unsupported — never 4, never a Python or Java stack trace), and the table is untouched.

CI runs a bounded number of examples per property (``FUZZ_EXAMPLES``, default 8); the full form on demand:
``FUZZ_EXAMPLES=500 python -m pytest -q tests/test_fuzz.py``. A failure prints the falsifying example and the
blob to reproduce it (``@reproduce_failure``); ``--hypothesis-seed=N`` replays a run.
"""

from __future__ import annotations

import json
import os
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.spark, pytest.mark.slow]

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip

# text a user (or an attacker) might type: SQL punctuation, quotes, comments, unicode, control characters
NASTY = st.sampled_from(["'", '"', "`", ";", "--", "/*", "*/", "\\", "%", "_", "\n", "\t", "\x00", "é", "表", "🦆",
                         " OR 1=1", "DROP TABLE x", "${HOME}", "$(id)", "..", "/", "=", ",", "(", ")"])  # fmt: skip
TEXT = st.lists(st.one_of(NASTY, st.text(alphabet=string.printable, max_size=6), st.text(max_size=4)), max_size=6).map(
    "".join
)


COMMAND_WORDS = {
    "describe",
    "history",
    "compact",
    "expire",
    "drop",
    "timetravel",
    "upsert",
    "clean-orphans",
    "alter",
    "create",
    "list",
}


@pytest.fixture(scope="module")
def victim(request, tmp_path_factory):
    """One table per format with data, fuzzed by every property; its version and files must never change."""
    import lakecat

    cat = lakecat.connect()
    spark = cat.session()
    ns = "fuzz_" + os.urandom(4).hex()
    tables = {}
    for fmt in ("iceberg", "delta"):
        t = cat.create_table(f"{ns}.v_{fmt}", schema="id BIGINT NOT NULL, ts TIMESTAMP, v STRING", format=fmt,
                             partition_by="days(ts)")  # fmt: skip
        for i in range(3):
            spark.sql(
                f"INSERT INTO {t.spark_name} (id, ts, v) VALUES ({i}, TIMESTAMP'2026-01-0{i + 1} 10:00:00', 'x{i}')"
            )
        tables[fmt] = t
        tables[f"scratch_{fmt}"] = cat.create_table(f"{ns}.s_{fmt}", schema="id BIGINT", format=fmt)
    return tables


def _state(t) -> tuple:
    d = t.describe()
    return d.current_version, d.files, d.size_bytes, tuple(sorted(d.properties.items()))


def _run(argv: list[str]) -> tuple[int, str, str]:
    """The command line as the ``lakecat`` entry point runs it (usage errors included), in-process."""
    import contextlib
    import io

    from lakecat.commands.main import run_cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_cli(argv)
    return code, out.getvalue(), err.getvalue()


def _check(cli, args: list[str]) -> int:
    """Run ``lakecat WORDS --json REST`` (``--json`` before the fuzzed text, which may hold ``--`` or ``-x``)."""
    words = [a for a in args[:2] if a in COMMAND_WORDS]
    code, out, err = _run([*words, "--json", *args[len(words) :]])
    assert code in (0, 1, 2, 3), (args, code, out, err)
    text = out + err
    assert "Traceback" not in text and "\tat org." not in text and "java.lang." not in text.split("error", 1)[0], (
        args,
        text,
    )
    if code:
        assert len(err.strip().splitlines()) <= 1, (args, err)
        doc = json.loads(out)
        assert doc["error"]["type"] and doc["error"]["message"], (args, out)
    return code


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_fuzzed_identifiers_never_touch_another_table(cli, victim, fmt):
    t = victim[fmt]
    before = _state(t)

    @FUZZ
    @given(name=TEXT)
    def run(name: str) -> None:
        for command in (["describe"], ["history"], ["compact", "--dry-run"], ["expire", "--dry-run"], ["drop"]):
            code = _check(cli, [*command, name])
            assert code != 0 or name == t.name, (command, name)

    run()
    assert _state(t) == before


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_fuzzed_predicates(cli, victim, fmt):
    t = victim[fmt]
    before = _state(t)

    @FUZZ
    @given(
        pred=st.one_of(
            TEXT, st.builds(lambda a, b: f"v = '{a}'{b}", TEXT, TEXT), st.builds(lambda a: f"id > 0 {a}", TEXT)
        )
    )
    def run(pred: str) -> None:
        _check(cli, ["timetravel", t.name, "--version", str(t.describe().current_version), "--where", pred, "--count"])
        _check(cli, ["compact", t.name, "--where", pred, "--dry-run"])
        _check(cli, ["upsert", t.name, "--from", "/nonexistent", "--key", "id", "--delete-when", pred])

    run()
    assert _state(t) == before


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_fuzzed_durations_sizes_timestamps_properties(cli, victim, fmt):
    t = victim[fmt]
    before = _state(t)
    unit = st.one_of(
        TEXT,
        st.builds(
            lambda n, u: f"{n}{u}",
            st.integers(-(10**12), 10**12),
            st.sampled_from(["", "s", "m", "h", "d", "w", "x", "MB", "GiB", "KB", "TB", "µs"]),
        ),
    )

    @FUZZ
    @given(value=unit, key=TEXT)
    def run(value: str, key: str) -> None:
        _check(cli, ["expire", t.name, "--older-than", value, "--dry-run"])
        _check(cli, ["clean-orphans", t.name, "--older-than", value, "--dry-run"])
        _check(cli, ["compact", t.name, "--target-file-size", value, "--dry-run"])
        _check(cli, ["timetravel", t.name, "--as-of", value, "--count"])
        _check(cli, ["timetravel", t.name, "--version", value, "--count"])
        scratch = victim[f"scratch_{fmt}"]  # a valid property is a real change: alter a table of its own
        scratch_before = _state(scratch)
        if _check(cli, ["alter", scratch.name, "--property", f"lakecat.{key}={value}"]):
            assert _state(scratch) == scratch_before, (key, value)  # refused: nothing changed

    run()
    assert _state(t) == before


@FUZZ
@given(spec=TEXT, schema=TEXT)
def test_fuzzed_create_arguments(cli, spec, schema):
    code = _check(cli, ["create", "fuzz.c_" + os.urandom(3).hex(), "--format", "iceberg", "--schema", schema or "x",
                        "--partition-by", spec or "("])  # fmt: skip
    assert code != 0


@FUZZ
@given(
    body=st.one_of(
        TEXT,
        st.builds(
            lambda k, v: f'name = "x"\nwarehouse = "@DIR@/w"\nmetastore = "sqlite:///@DIR@/m.db"\n{k} = "{v}"\n',
            TEXT,
            TEXT,
        ),
        st.builds(lambda v: f'name = "x"\nwarehouse = "${{{v}}}"\nmetastore = "sqlite:///@DIR@/m.db"\n', TEXT),
    )
)
def test_fuzzed_catalog_config_files(cli, tmp_path_factory, body):
    # Every path a fuzzed config names is inside this test's own directory (an absolute one: sqlite:/// + /abs).
    folder = tmp_path_factory.mktemp("conf")
    path = folder / "fuzz.toml"
    path.write_text(body.replace("@DIR@", str(folder)))
    _check(cli, ["list", "--catalog", str(path)])
