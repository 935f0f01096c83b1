"""Guards of the architecture (README "Layout"): the format contract is the only place formats differ.

- no format name as a literal, and so no branch on the format, in ``lakecat/`` outside ``lakecat/formats/``;
- the lab beside the product: nothing under ``lakecat/`` imports ``benchmarks/`` (the suite, the soak, each format's
  hand-written baseline), and the wheel holds none of it;
- no circle of modules importing each other in the library and its CLI, imports inside functions and
  ``TYPE_CHECKING`` blocks included: operations take the protocols of ``lakecat/protocols.py``, the façade
  (``catalog.py``, ``table.py``) imports the operations, never the other way round;
- an import inside a function only defers a heavy library (or a lakecat module that loads one when imported);
- the ingest pipeline holds only the source interface (no dispatch on a source's class);
- nothing in the library writes object-store settings (or any ``AWS_*`` variable) into the process environment: each
  catalog hands its own to the engines it opens;
- every catch-all ``except`` in the library and its CLI says why any error is safe there (or is narrowed);
- a third format that implements only create/describe/history gets exit 3 with a sentence from every
  other command, never Iceberg's or Delta's code.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "lakecat"
BUILTIN = ("iceberg", "delta")


def _modules() -> list[Path]:
    return list(PACKAGE.rglob("*.py"))


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                ids.add(id(first.value))
    return ids


def test_no_format_literal_above_the_adapters():
    found = []
    for path in _modules():
        rel = path.relative_to(ROOT)
        if rel.parts[:2] == ("lakecat", "formats"):
            continue
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if node.value.strip().lower() in BUILTIN:
                    found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert not found, "format names above lakecat/formats/ (ask the adapter instead):\n" + "\n".join(found)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path, modules: set[str]) -> set[str]:
    """Modules of lakecat that ``path`` imports when it runs (module level or inside functions)."""
    tree = ast.parse(path.read_text())
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    skip: set[int] = set()
    for node in ast.walk(tree):  # if TYPE_CHECKING: ... is for the type checker only
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join([*up, base]) if base else ".".join(up)
            # `from pkg import mod` depends on pkg.mod only; `from mod import name` on mod
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for t in targets:
            while t and t not in modules:  # `from .formats import base` names a module; `import a.b.c` imports a.b
                t = t.rsplit(".", 1)[0] if "." in t else ""
            if t and t != name:
                out.add(t)
    return out


# Libraries slow to import or absent from a light install; a function may import them where it needs them.
HEAVY = {"pyspark", "py4j", "delta", "pyiceberg", "deltalake", "duckdb", "confluent_kafka", "pyarrow", "pandas",
         "sqlalchemy", "prometheus_client", "grpc", "requests"}  # fmt: skip
# The CLI builds only the command a command line names (commands/main.py), and its commands import the library and
# rich (the human renderer; ``--json`` never loads it) inside themselves, so that ``lakecat --help`` stays fast.
CLI_DEFERS = {"lakecat", "rich"}


def _all_modules() -> dict[str, Path]:
    """Every module of the library and of its CLI (``commands/`` installs as ``lakecat.commands``)."""
    out = {}
    for path in [*_modules(), *(ROOT / "commands").rglob("*.py")]:
        name = _module_name(path)
        out["lakecat." + name if name.startswith("commands") else name] = path
    return out


def _imports(name: str, path: Path, modules: set[str]) -> list[tuple[ast.Import | ast.ImportFrom, str, set[str]]]:
    """Every import statement of ``path``: the statement, where it sits (``top``, ``typing`` for a ``TYPE_CHECKING``
    block, ``local`` inside a function) and the modules of ``modules`` it names."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    local = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(f) if n is not f}  # fmt: skip
    typing = {id(n) for i in ast.walk(tree) if isinstance(i, ast.If) and "TYPE_CHECKING" in ast.unparse(i.test)
              for n in ast.walk(i)}  # fmt: skip
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join([*up, base]) if base else ".".join(up)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        found = set()
        for t in targets:
            while t and t not in modules:
                t = t.rsplit(".", 1)[0] if "." in t else ""
            if t and t != name:
                found.add(t)
        out.append((node, "local" if id(node) in local else "typing" if id(node) in typing else "top", found))
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (``a -> b -> ... -> a``), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph.get(v, ())):
            if state.get(w) == 1:
                return [*path[path.index(w) :], w]
            if w not in state and (found := visit(w)):
                return found
        state[v] = 2
        path.pop()
        return None

    for v in sorted(graph):
        if v not in state and (found := visit(v)):
            return found
    return None


def test_no_import_circle():
    """Not even one held apart by a ``TYPE_CHECKING`` block or an import inside a function."""
    modules = _all_modules()
    graph = {
        name: set().union(*(t for _, _, t in _imports(name, path, set(modules)))) for name, path in modules.items()
    }
    cycle = _cycle(graph)
    assert cycle is None, "modules importing each other: " + " -> ".join(cycle or [])


def test_local_imports_only_defer_heavy_libraries():
    """A function imports inside itself only a heavy library, or a lakecat module that loads one at import (say
    ``kafka_local``: confluent_kafka); anything else is imported at the top of the module."""
    modules = _all_modules()
    names = set(modules)
    imports = {name: _imports(name, path, names) for name, path in modules.items()}

    def heavy_libraries(node: ast.Import | ast.ImportFrom, allowed: set[str] = HEAVY) -> bool:
        roots = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        return not getattr(node, "level", 0) and all(r.split(".")[0] in allowed for r in roots)

    loads_heavy: set[str] = set()  # lakecat modules whose import (at module level, transitively) loads a heavy library
    changed = True
    while changed:
        changed = False
        for name, found in imports.items():
            if name not in loads_heavy and any(
                where == "top" and (heavy_libraries(node) or t & loads_heavy) for node, where, t in found
            ):
                loads_heavy.add(name)
                changed = True
    bad = [
        f"{modules[name].relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}"
        for name, found in imports.items()
        for node, where, t in found
        if where == "local"
        and not heavy_libraries(node, HEAVY | CLI_DEFERS if name.startswith("lakecat.commands.") else HEAVY)
        and not (t and t <= loads_heavy)
    ]
    assert not bad, "imports inside functions that defer no heavy library (import them at the top):\n" + "\n".join(bad)


def test_adapters_do_not_import_the_layers_above():
    modules = {_module_name(p) for p in _modules()}
    for path in (PACKAGE / "formats").rglob("*.py"):
        above = {m for m in _runtime_imports(path, modules) if m in ("lakecat.catalog", "lakecat.table", "lakecat.ingest",
                                                                      "lakecat.cdc", "lakecat.versions", "lakecat.maintenance")}  # fmt: skip
        assert not above, f"{path.relative_to(ROOT)} imports {above}"


def _imported_names(path: Path) -> set[str]:
    """Every module ``path`` imports, type-only imports included (``from pkg import mod`` gives ``pkg.mod``)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join([*up, base]) if base else ".".join(up)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def test_only_the_registry_reaches_a_builtin_adapter():
    """Code above lakecat/formats/ (the CLI included) reaches a format through the registry and its hooks."""
    found = []
    for path in [*_modules(), *(ROOT / "commands").rglob("*.py")]:
        rel = path.relative_to(ROOT)
        if rel.parts[:2] == ("lakecat", "formats"):
            continue
        for imported in _imported_names(path):
            if any(imported == f"lakecat.formats.{f}" or imported.startswith(f"lakecat.formats.{f}.") for f in BUILTIN):
                found.append(f"{rel}: {imported}")
    assert not found, "imports of a built-in adapter above lakecat/formats/:\n" + "\n".join(found)


def test_the_pipeline_holds_only_the_source_interface():
    paths = [*sorted((PACKAGE / "ingest").glob("*.py")), PACKAGE / "cdc.py"]
    assert len(paths) > 2
    for path in paths:
        rel = path.relative_to(ROOT)
        tree = ast.parse(path.read_text())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}  # fmt: skip
        assert not names & {"KafkaSource", "FileSource"}, f"{rel} dispatches on source classes"


def test_nothing_in_lakecat_imports_the_benchmarks():
    """``benchmarks/`` sits beside the package: it imports lakecat, never the other way round (a lakecat module that
    imported it would fail in every installed copy, where the checkout's ``benchmarks`` is absent)."""
    found = [f"{path.relative_to(ROOT)}: {name}" for path in [*_modules(), *(ROOT / "commands").rglob("*.py")]
             for name in _imported_names(path) if name == "benchmarks" or name.startswith("benchmarks.")]  # fmt: skip
    assert not found, "imports of the benchmarks from the package:\n" + "\n".join(found)


def test_the_package_holds_no_benchmark_soak_or_experiment():
    """The lab stays beside the package (tests/test_wheel.py checks the built wheel the same way)."""
    assert not [p for p in PACKAGE.rglob("*") if p.name in ("bench", "soak", "benchmarks", "baseline.py")]


def _catches_everything(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(k is None or (isinstance(k, ast.Name) and k.id in ("Exception", "BaseException")) for k in kinds)


def _reason(comment: str) -> str:
    """A comment's text less the linter's code: what is left says why."""
    text = comment.lstrip("#").strip()
    for code in ("noqa: BLE001", "noqa:BLE001"):
        text = text.replace(code, "")
    return text.strip(" -:;,")


#: The library's only writes to ``os.environ``, and why each is not about object storage.
ENVIRON_WRITERS = {
    "formats/delta/__init__.py",  # delta-rs's allocator settings, before deltalake is imported
    "spark.py",  # the JVM's own variables while pyspark starts it (MALLOC_ARENA_MAX), removed afterwards
}


def test_nothing_writes_object_store_settings_into_the_environment():
    """Two catalogs on two object stores in one process: a catalog that exported its endpoint or credentials to
    ``os.environ`` would send the other one's reads there. Every write to the environment is listed, none names AWS."""
    writers: dict[str, list[str]] = {}
    for path in _modules():
        tree = ast.parse(path.read_text())
        lines = path.read_text().splitlines()
        for node in ast.walk(tree):
            target = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = ast.unparse(node.func.value)
                if owner == "os.environ" and node.func.attr in ("setdefault", "update", "pop", "__setitem__", "clear"):
                    target = node
                elif owner == "os" and node.func.attr in ("putenv", "unsetenv"):
                    target = node
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                if any(isinstance(t, ast.Subscript) and ast.unparse(t.value) == "os.environ" for t in targets):
                    target = node
            if target is not None:
                rel = path.relative_to(PACKAGE).as_posix()
                writers.setdefault(rel, []).append(lines[target.lineno - 1].strip())
    assert set(writers) <= set(ENVIRON_WRITERS), {k: v for k, v in writers.items() if k not in ENVIRON_WRITERS}
    assert not [line for lines in writers.values() for line in lines if re.search(r"aws|s3|storage", line, re.I)]
    assert writers  # the scan sees the writes it allows


def test_every_catch_all_says_why_any_error_is_safe_there():
    """An ``except Exception`` / ``except BaseException`` / bare ``except`` in the library or the CLI carries a comment
    on its line or the line above saying why swallowing (or translating) any error is safe there: on a path that
    decides what to delete or what to report as success, an unexpected error must fail the command, so a catch-all
    there is either narrowed or explained."""
    import io
    import tokenize

    found = []
    for path in [*_modules(), *(ROOT / "commands").rglob("*.py")]:
        source = path.read_text()
        comments: dict[int, str] = {}
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = tok.string
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.ExceptHandler) or not _catches_everything(node):
                continue
            above = node.lineno - 1
            said = _reason(comments.get(node.lineno, ""))
            if not said and above in comments and lines[above - 1].lstrip().startswith("#"):
                said = _reason(comments[above])
            if not said:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not found, "catch-alls without a reason (narrow them, or say why any error is safe):\n" + "\n".join(found)


# --- a third format -------------------------------------------------------------------------
@pytest.fixture
def jsonlog(catalog):
    from fake_format import NAME

    from lakecat.formats import register_format, unregister_format

    register_format(NAME, "fake_format:JsonLogFormat")
    catalog._metastore = None  # the new format's metastore table is prepared on next use
    try:
        yield NAME
    finally:
        unregister_format(NAME)
        catalog._metastore = None


def test_third_format_capabilities_come_from_what_it_implements(jsonlog):
    from lakecat.formats import get_format

    caps = get_format(jsonlog).capabilities
    assert not any(caps.values()), caps
    assert get_format("delta").capabilities["compact_sort"] is False
    assert get_format("iceberg").capabilities["compact_sort"] is True


def test_third_format_answers_exit_3_for_everything_it_lacks(cli, catalog, ns, jsonlog, tmp_path):
    name = f"{ns}.log"
    code, out, err = cli("create", name, "--format", jsonlog, "--schema", "id BIGINT NOT NULL, v STRING", "--json")
    assert code == 0, err
    assert json.loads(out)["format"] == jsonlog
    code, out, _ = cli("describe", name, "--json")
    assert code == 0 and json.loads(out)["capabilities"]["time_travel"] is False
    code, out, _ = cli("history", name, "--json")
    assert code == 0 and [e["operation"] for e in json.loads(out)] == ["create"]
    code, out, _ = cli("list", ns, "--json")
    assert code == 0 and json.loads(out)[0]["format"] == jsonlog

    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_text('{"id": 1, "v": "x"}\n')
    (tmp_path / "fix.json").write_text('{"id": 1, "v": "y"}\n')
    unsupported = [
        ("timetravel", name, "--version", "0"),
        ("timetravel", name, "--as-of", "2030-01-01T00:00:00"),
        ("changes", name, "--since", "-1"),
        ("rollback", name, "--version", "0", "--yes"),
        ("compact", name),
        ("compact", name, "--dry-run"),
        ("compact", name, "--strategy", "zorder", "--by", "v"),
        ("expire", name, "--dry-run"),
        ("clean-orphans", name, "--dry-run"),
        ("alter", name, "--property", "a=b"),
        ("alter", name, "--add-column", "z INT"),
        ("alter", name, "--rename-column", "v=w", "--yes"),
        ("alter", name, "--partition-by", "v"),
        ("tag", name, "t1"),
        ("tags", name),
        ("untag", name, "t1"),
        ("branch", name, "b1"),
        ("publish", name, "b1"),
        ("timetravel", name, "--tag", "t1"),
        ("ingest", name, "--files", str(landing), "--file-format", "json"),
        ("upsert", name, "--from", str(tmp_path / "fix.json"), "--key", "id"),
        ("append", name, "--from", str(tmp_path / "fix.json")),
        ("append", name, "--from", str(tmp_path / "fix.json"), "--overwrite"),
        ("delete", name, "--where", "id = 1"),
        ("delete", name, "--where", "id = 1", "--dry-run"),
    ]
    for args in unsupported:
        code, out, err = cli(*args, "--json")
        assert code == 3, (args, code, out, err)
        doc = json.loads(out)
        assert doc["error"]["type"] == "UnsupportedOperationError", (args, doc)
        assert f"not supported for {jsonlog} tables" in doc["error"]["message"], (args, doc)
        assert len(err.strip().splitlines()) == 1, (args, err)

    code, out, err = cli("maintain", f"{ns}.*", "--json")  # maintain runs what each format supports: nothing here
    assert code == 0, err
    actions = json.loads(out)["tables"][0]["actions"]
    assert {a["status"] for a in actions} == {"skipped"}
    assert all("not supported for jsonlog tables" in a["reason"] for a in actions)
    code, _, err = cli("drop", name, "--yes", "--json")
    assert code == 0, err
    assert not catalog.table_exists(name)


def test_doctor_asks_each_format_what_it_keeps_in_the_metastore(catalog, jsonlog, monkeypatch):
    """``lakecat doctor``'s metastore line is each format's own words (``metastore_status``), a third format's too;
    no format's table names above the adapters."""
    from fake_format import JsonLogFormat

    from lakecat.doctor import _metastore

    catalog.metastore.ready()  # every format's metastore tables created
    detail = _metastore(catalog.config).detail
    assert "Iceberg tables" in detail and "Delta tables registered" in detail, detail
    assert jsonlog not in detail  # a format with nothing to say adds nothing
    monkeypatch.setattr(JsonLogFormat, "metastore_status",
                        lambda self, config, tables, columns: f"{len(columns('iceberg_tables'))} columns there",
                        raising=False)  # fmt: skip
    check = _metastore(catalog.config)
    assert check.ok and check.detail.startswith(detail + "; ") and check.detail.endswith(" columns there"), check.detail
    assert "iceberg_tables" not in (ROOT / "lakecat/doctor.py").read_text()

    def broken(self, config, tables, columns):
        raise PermissionError("permission denied for table jsonlog_things\nDETAIL: more")

    monkeypatch.setattr(JsonLogFormat, "metastore_status", broken, raising=False)
    check = _metastore(catalog.config)  # the metastore is reachable: the format's failure is its own line
    assert not check.ok and "not reachable" not in check.detail, check.detail
    assert check.detail.startswith(detail + "; ") and check.detail.endswith(
        f"{JsonLogFormat.name}: could not read what it keeps there: permission denied for table jsonlog_things"
    ), check.detail
    assert check.fix

    def silent(self, config, tables, columns):
        raise PermissionError()

    monkeypatch.setattr(JsonLogFormat, "metastore_status", silent, raising=False)
    check = _metastore(catalog.config)  # an error without a message is named by its type
    assert not check.ok and check.detail.endswith(
        f"{JsonLogFormat.name}: could not read what it keeps there: PermissionError"
    )


def test_an_external_iceberg_catalog_is_named_in_the_metastore_line(tmp_path):
    from lakecat.config import load_config_file
    from lakecat.formats import get_format

    path = tmp_path / "rest.toml"
    path.write_text(f'name = "lake"\nwarehouse = "{tmp_path}/wh"\nmetastore = "sqlite:///{tmp_path}/c.db"\n'
                    '[iceberg]\ntype = "rest"\nuri = "http://127.0.0.1:1/api/catalog"\n')  # fmt: skip
    config = load_config_file(path)
    assert (
        get_format("iceberg").metastore_status(config, set(), lambda t: set()) == "Iceberg tables in the rest catalog"
    )
    assert get_format("delta").metastore_status(config, set(), lambda t: set()) == "no Delta tables yet"


# --- the CLI is a twin of the public API --------------------------------------------------------------------------
#: What ``commands/`` may import from lakecat (docs/architecture.md, "The public API"): the names of ``lakecat.__all__``
#: and these documented public modules (all their names, or those of their ``__all__``).
PUBLIC_MODULES = ("lakecat.errors", "lakecat.results", "lakecat.units", "lakecat.local")


def _public_names(module: str) -> set[str] | None:
    """The names ``module`` exports (its ``__all__``), or None when every name of it is public."""
    import importlib

    return set(getattr(importlib.import_module(module), "__all__", ())) or None


def test_commands_use_only_the_public_api():
    """Every lakecat import of the CLI names the package's public API: ``from lakecat import X`` with X in
    ``lakecat.__all__`` (or a public module), ``lakecat.X`` after ``import lakecat`` likewise, or a public module; a
    notebook can then do whatever a command does."""
    import lakecat

    top = set(lakecat.__all__) | {m.rsplit(".", 1)[1] for m in PUBLIC_MODULES}
    found = []
    for path in sorted((ROOT / "commands").rglob("*.py")):
        rel = path.relative_to(ROOT)
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "lakecat":
                module = node.module or ""
                if module == "lakecat":
                    bad = [a.name for a in node.names if a.name not in top]
                elif module in PUBLIC_MODULES:
                    public = _public_names(module)
                    bad = [a.name for a in node.names if public is not None and a.name not in public]
                else:
                    bad = [module]
                found += [f"{rel}:{node.lineno}: {ast.unparse(node)} ({b})" for b in bad]
            elif isinstance(node, ast.Import):
                found += [f"{rel}:{node.lineno}: {ast.unparse(node)}" for a in node.names
                          if a.name.split(".")[0] == "lakecat" and a.name not in ("lakecat", *PUBLIC_MODULES)]  # fmt: skip
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "lakecat":
                if node.attr not in top:
                    found.append(f"{rel}:{node.lineno}: lakecat.{node.attr}")
    assert not found, "the CLI reaches past the public API (export it, or keep it in commands/):\n" + "\n".join(found)


def test_the_public_api_is_importable_and_documented():
    """Every name the public API exports exists, and the Python API reference names each public module."""
    import importlib

    import lakecat

    for module in ("lakecat", *PUBLIC_MODULES):
        mod = importlib.import_module(module)
        for name in getattr(mod, "__all__", ()):
            assert getattr(mod, name, None) is not None, f"{module}.{name}"
    reference = "\n".join(p.read_text() for p in (ROOT / "docs" / "python-api").glob("*.md"))
    for module in PUBLIC_MODULES:
        assert module in reference, f"{module} is public: docs/python-api names it"
    rules = (ROOT / "docs/architecture.md").read_text() + (ROOT / "docs/contributing.md").read_text()
    assert all(m in rules for m in PUBLIC_MODULES), "docs/architecture.md and contributing.md state the rule"
    assert "commands" not in " ".join(lakecat.__all__)
