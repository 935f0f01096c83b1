"""Every command ships documented, and the docs site builds and renders.

- every command of the Typer app has help text and a section on a page under ``docs/commands/`` with its generated
  reference (``<!-- cli: WORDS -->``) and an example invocation (a new command can't ship without);
- ``mkdocs build --strict`` passes (no broken link or anchor, no page missing from the nav), with the notebook, the
  Python API reference and the generated Performance block in the site;
- two built pages render in headless Chromium with their navigation and without console errors.
"""

from __future__ import annotations

import base64
import fcntl
import functools
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import typer
from lakecat.commands._common import leaf_commands
from lakecat.commands.main import app
from typer.main import get_command

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
COMMAND_PAGES = sorted((DOCS / "commands").glob("*.md"))
MARKER = re.compile(r"^<!-- cli: ([a-z][a-z0-9 -]*?) -->[ \t]*$", re.MULTILINE)
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _examples(page_text: str) -> list[str]:
    """The command lines in a page's code blocks (``$ `` prompts and continuation lines joined)."""
    lines = []
    for block in FENCE.findall(page_text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("lakecat "):
                lines.append(line)
    return lines


def test_every_command_has_help_and_a_docs_page():
    root = get_command(app)
    commands = list(leaf_commands(root))
    assert len(commands) >= 6
    pages = {page: page.read_text() for page in COMMAND_PAGES}
    markers = {tuple(m.split()): page for page, text in pages.items() for m in MARKER.findall(text)}
    for path, _ in commands:
        for n in range(1, len(path)):  # the groups on the way: `lakecat local`, `lakecat local kafka`
            group = root
            for word in path[:n]:
                group = group.commands[word]
            assert group.help, f"group `lakecat {' '.join(path[:n])}` has no help text"
    for path, cmd in commands:
        words = " ".join(path)
        assert (cmd.help or "").strip(), f"`lakecat {words}` has no help text"
        option_names = [o for p in cmd.params for o in getattr(p, "opts", []) if o.startswith("--")]
        assert "--json" in option_names, f"`lakecat {words}` lacks --json"
        page = markers.get(path)
        assert page is not None, (
            f"`lakecat {words}` has no docs page: add '<!-- cli: {words} -->' and an example to a page under docs/commands/ "
            "(see docs/contributing.md, 'Documenting a new command')"
        )
        example = re.compile(rf"^lakecat {re.escape(words)}(\s|$)")
        assert any(example.match(line) for line in _examples(pages[page])), (
            f"{page.relative_to(ROOT)} has no example of `lakecat {words}` in a code block"
        )
    known = {path for path, _ in commands}
    for path, page in markers.items():
        assert path in known, f"{page.relative_to(ROOT)}: <!-- cli: {' '.join(path)} --> names no command"


def test_every_command_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in COMMAND_PAGES:
        assert f"commands/{page.name}" in nav, f"docs/commands/{page.name} is not in mkdocs.yml's nav"


def test_help_runs_for_every_command(cli):
    for path, _ in leaf_commands(get_command(app)):
        code, out, _ = cli(*path, "--help")
        assert code == 0 and "Usage" in out, path


def test_exit_codes_are_documented():
    text = (DOCS / "commands" / "index.md").read_text()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |"):
        assert code in text


def test_readme_is_short_and_points_into_the_docs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150, "the README is two or three screens; the manual lives in docs/"
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && lakecat quickstart" in readme
    assert "```bash\npython -m pytest -q\n```" in readme
    assert "mkdocs serve" in readme
    for link in re.findall(r"\]\(((?:docs/)?[^)#\s]+)(?:#[^)]*)?\)", readme):
        if not link.startswith("http"):
            assert (ROOT / link).exists(), f"README links to {link}, which does not exist"
    for target in ("docs/cookbook/kafka-exactly-once.md", "docs/cookbook/ci-maintenance.md",
                   "docs/commands/maintenance.md#lakecat-compact"):  # fmt: skip
        assert f"]({target})" in readme, f"README does not link to {target}"


CONCEPTS = ROOT / "docs" / "concepts.md"
# The concepts a newcomer needs, each a heading of docs/concepts.md (and in its table of contents).
CONCEPT_HEADINGS = (
    "Versions and snapshot ids",
    "Reading what changed: `--since` and `--until`",
    "Safety floors and `--force`",
    "Exit codes",
    "Catalog configs and how one is chosen",
    "Exactly-once ingest",
    "Dead-letter tables",
    "Delta generated partition columns",
)


def test_concepts_page_covers_every_concept():
    assert CONCEPTS.is_file(), "docs/concepts.md is missing"
    text = CONCEPTS.read_text()
    headings = re.findall(r"^## (.+)$", text, re.M)
    for heading in CONCEPT_HEADINGS:
        assert heading in headings, f"docs/concepts.md has no '## {heading}' section"
        anchor = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        assert f"](#{anchor})" in text, f"docs/concepts.md's contents do not link to '{heading}' (#{anchor})"
    exit_codes = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in range(5):
        assert re.search(rf"^\| {code} \| \S.* \| .*`", exit_codes, re.M), (
            f"exit code {code} lacks a row with an example"
        )
    for term in (
        "exclusive",
        "inclusive",
        "--since -1",
        "until_version",
        "7 days",
        "24 hours",
        "--force",
        "LAKECAT_CATALOG",
        "${VAR:-default}",
        "txnAppId",
        "lakecat.batch-id",
        "_dlq",
        "GENERATED ALWAYS AS",
    ):
        assert term in text, f"docs/concepts.md does not mention {term}"


# --- the site --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site() -> Iterator[Path]:
    """``mkdocs build --strict`` of the repository into a temp dir (offline: no plugin fetches anything)."""
    pytest.importorskip("mkdocs", reason='the docs extra is not installed (pip install -e ".[docs]")')
    out = Path(tempfile.mkdtemp(prefix="lakecat-site-"))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, f"mkdocs build --strict failed:\n{res.stderr[-4000:]}"
    yield out
    shutil.rmtree(out, ignore_errors=True)


@pytest.mark.slow
def test_site_builds_strict_with_every_page(site):
    for page in ("index.html", "getting-started/index.html", "concepts/index.html", "commands/maintenance/index.html",
                 "python-api/catalog/index.html", "catalogs/index.html", "cluster/index.html",
                 "object-storage/index.html", "cookbook/ci-maintenance/index.html", "cookbook/debezium/index.html",
                 "cookbook/kafka-exactly-once/index.html", "cookbook/adopting-tables/index.html",
                 "performance/index.html", "reliability/index.html", "changelog/index.html", "tour/index.html"):  # fmt: skip
        assert (site / page).is_file(), f"{page} is not in the site"
    compact = (site / "commands/maintenance/index.html").read_text()
    assert 'class="cli-reference"' in compact and "<code>--target-file-size" in compact  # generated from --help
    assert "files_before" in compact and "estimated_output_files" in compact  # the hand-written JSON keys
    notebook = (site / "tour/index.html").read_text()
    assert "jp-Notebook" in notebook and "lakecat.connect" in notebook  # the example notebook, rendered
    api = (site / "python-api/catalog/index.html").read_text()
    assert "create_table" in api and "Tables of every format" in api  # from the docstrings
    perf = (site / "performance/index.html").read_text()
    assert "Ingest, Kafka → table" in perf and "What profiling found" in perf
    changelog = (site / "changelog/index.html").read_text()
    assert "Unreleased" in changelog
    for html in site.rglob("*.html"):  # offline: no stylesheet or script from a CDN
        text = html.read_text()
        assert not re.search(r'<(?:script|link)[^>]+(?:src|href)="https?://', text), f"{html} loads from the internet"


# --- headless Chromium -----------------------------------------------------------------------------------------
def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome", "chromium-headless-shell"):
        if found := shutil.which(name):
            return found
    return None


class DevTools:
    """Chromium over the DevTools protocol on a pipe (``--remote-debugging-pipe``: fd 3 in, fd 4 out) — no
    websocket client needed."""

    def __init__(self, binary: str, profile: Path) -> None:
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()
        high = (fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10), fcntl.fcntl(res_w, fcntl.F_DUPFD, 10))

        def wire_pipes() -> None:  # in the child, before exec: fd 3 = commands, fd 4 = results
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
                f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]  # fmt: skip
        self.proc = subprocess.Popen(args, pass_fds=(3, 4), preexec_fn=wire_pipes, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)  # fmt: skip
        for fd in (cmd_r, res_w, *high):
            os.close(fd)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._res_r, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium exited: {self.proc.stderr.read().decode(errors='replace')[-2000:]}")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 60) -> dict[str, Any]:  # fmt: skip
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method and event.get("sessionId") == session:
                return event
        while True:
            event = self._read(deadline)
            self.events.append(event)
            if event.get("method") == method and event.get("sessionId") == session:
                return event

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._cmd_w, self._res_r):
            os.close(fd)


def _console_errors(events: list[dict[str, Any]], session: str) -> list[str]:
    errors = []
    for e in events:
        if e.get("sessionId") != session:
            continue
        params = e.get("params", {})
        if e.get("method") == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            errors.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
        elif e.get("method") == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append(
                "console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in params.get("args", []))
            )
        elif e.get("method") == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            errors.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}")
    return errors


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", png[16:24])


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


WIDTH, HEIGHT = 1280, 900
# Two pages a reader lands on: the home page and a command page with its generated reference.
PAGES = {"home": "", "compact": "commands/maintenance/#lakecat-compact"}


@pytest.mark.slow
def test_two_pages_render_in_headless_chromium(site, tmp_path):
    binary = _chromium()
    if binary is None:
        pytest.skip("Chromium not installed (apt-get install chromium)")
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)  # a free loopback port, chosen by the OS
    browser = DevTools(binary, tmp_path / "profile")  # started before the server thread (preexec_fn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    shots = Path(os.environ.get("DOCS_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    try:
        for name, path in PAGES.items():
            target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                browser.send(f"{domain}.enable", session=session)
            browser.send("Emulation.setDeviceMetricsOverride",
                         {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False}, session=session)  # fmt: skip
            browser.send("Page.navigate", {"url": base + path}, session=session)
            browser.wait_for("Page.loadEventFired", session)
            time.sleep(1.0)  # let the theme's scripts run (search index, navigation)
            browser.send("Runtime.evaluate", {"expression": "1"}, session=session)  # collect events so far
            facts = browser.send("Runtime.evaluate", {"returnByValue": True, "expression": """JSON.stringify({
                title: document.title,
                h1: (document.querySelector("article h1") || {}).textContent || "",
                nav: Array.from(document.querySelectorAll("nav.md-nav--primary .md-nav__link")).map(a => a.textContent.trim()),
                header: !!document.querySelector("header.md-header"),
                search: !!document.querySelector(".md-search"),
                text: document.body.innerText.length,
            })"""}, session=session)  # fmt: skip
            dom = json.loads(facts["result"]["value"])
            png = base64.b64decode(browser.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"])
            (shots / f"{name}.png").write_bytes(png)

            assert _png_size(png) == (WIDTH, HEIGHT), name
            assert len(png) > 20_000, f"{name}: the screenshot is (nearly) blank"
            assert dom["header"] and dom["search"] and dom["text"] > 500, (name, dom)
            for entry in ("Getting started", "Concepts", "Commands", "Python API", "Cookbook", "Performance",
                          "Reliability", "Changelog"):  # fmt: skip
                assert any(entry in link for link in dom["nav"]), (
                    f"{name}: no '{entry}' in the navigation: {dom['nav']}"
                )
            assert "lakecat" in dom["title"], dom["title"]
            errors = _console_errors(browser.events, session)
            assert not errors, f"{name}: console errors: {errors}"
            browser.send("Target.closeTarget", {"targetId": target})
    finally:
        browser.close()
        server.shutdown()
        server.server_close()


assert isinstance(app, typer.Typer)
