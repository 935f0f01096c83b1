"""`ingest --metrics-port`: once the run has ended, /metrics stays up until a scrape has read the final figures.

A batch job that exits right after its last batch loses whatever its last scrape did not read; the exporter lingers
until a scrape that began after the final update has been answered, at most `--metrics-linger`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from helpers import new_topic

N = 2_000  # records: a few batches of 500, so the last one lands after earlier scrapes


def _samples(text: str) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}  # fmt: skip


def _scrape(port: int) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            return _samples(resp.read().decode("utf-8"))
    except OSError:
        return None


# --- the exporter alone: no Spark ------------------------------------------------------------
@pytest.fixture
def exporter():
    from lakecat.metrics import IngestExporter
    from lakecat.processes import free_port

    e = IngestExporter("ns.t", "iceberg", free_port(), addr="127.0.0.1")
    yield e
    e.close()


def test_linger_ends_at_the_first_scrape_after_the_final_update(exporter):
    assert _scrape(exporter.port)[("lakecat_ingest_running", (("format", "iceberg"), ("table", "ns.t")))] == 1
    exporter.finish({}, None)
    seen: dict = {}

    def scrape_later() -> None:
        time.sleep(0.5)
        seen.update(_scrape(exporter.port) or {})

    scraper = threading.Thread(target=scrape_later)
    started = time.monotonic()
    scraper.start()
    assert exporter.linger(20)
    took = time.monotonic() - started
    scraper.join()
    assert 0.4 < took < 5, took
    assert seen[("lakecat_ingest_running", (("format", "iceberg"), ("table", "ns.t")))] == 0


def test_linger_without_a_scrape_ends_at_its_bound_and_a_stop_ends_it_at_once(exporter):
    _scrape(exporter.port)  # a scrape before the final update does not count
    exporter.finish({}, None)
    started = time.monotonic()
    assert not exporter.linger(1.5)
    assert 1.5 <= time.monotonic() - started < 4
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    started = time.monotonic()
    assert not exporter.linger(20, stop)
    assert time.monotonic() - started < 3


def test_metrics_linger_option():
    from lakecat.errors import InvalidArgumentError
    from lakecat.ingest import IngestOptions

    assert IngestOptions(metrics_port=9464).metrics_linger_s == 30
    assert IngestOptions(metrics_port=9464, metrics_linger="0").metrics_linger_s == 0
    assert IngestOptions(metrics_port=9464, metrics_linger="2m").metrics_linger_s == 120
    assert IngestOptions(metrics_port=9464, metrics_linger=1.5).metrics_linger_s == 1.5
    with pytest.raises(InvalidArgumentError, match="applies with metrics_port="):
        IngestOptions(metrics_linger="10s")
    with pytest.raises(InvalidArgumentError, match="negative"):
        IngestOptions(metrics_port=9464, metrics_linger=-1)


# --- a real ingest ---------------------------------------------------------------------------
def _ingest_in_thread(catalog, name: str, source, port: int, linger: float) -> tuple[threading.Thread, dict]:
    """Run the ingest in a thread; ``box`` gets its report, when it returned and when it began to linger."""
    box: dict = {}

    def on_progress(handle, progress) -> None:  # noqa: ARG001
        if handle.metrics_linger is not None:
            box["linger_at"] = time.monotonic()

    def run() -> None:
        try:
            box["report"] = catalog.ingest(name, source, trigger="available-now", max_records_per_batch=500,
                                           metrics_port=port, metrics_linger=linger, on_progress=on_progress)  # fmt: skip
        except BaseException as e:  # noqa: BLE001 - reported by the assertions
            box["error"] = e
        box["returned_at"] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def _kafka_table(catalog, ns: str, kafka_bootstrap: str):
    import lakecat
    from lakecat.kafka_local import produce

    topic = new_topic(kafka_bootstrap, partitions=2)
    produce(kafka_bootstrap, topic, [json.dumps({"id": i, "v": f"x{i}"}).encode() for i in range(N)])
    t = catalog.create_table(f"{ns}.events", schema="id BIGINT NOT NULL, v STRING", format="iceberg")
    return t, lakecat.KafkaSource(kafka_bootstrap, topic)


@pytest.mark.spark
@pytest.mark.kafka
def test_a_scraper_reads_the_final_figures_and_the_run_returns_after_that_scrape(catalog, ns, kafka_bootstrap):
    from lakecat.processes import free_port

    t, source = _kafka_table(catalog, ns, kafka_bootstrap)
    port = free_port()
    thread, box = _ingest_in_thread(catalog, t.name, source, port, linger=60)
    labels = (("format", "iceberg"), ("table", t.name))
    scrapes: list[tuple[float, dict]] = []  # (asked at, samples) of each answered scrape
    deadline = time.monotonic() + 240
    for _ in range(300):  # about one scrape a second, as a Prometheus would
        if not thread.is_alive() or time.monotonic() > deadline:
            break
        asked_at = time.monotonic()  # the run may return before this thread reads the answer's end
        samples = _scrape(port)
        if samples is not None:
            scrapes.append((asked_at, samples))
        time.sleep(1)
    thread.join(timeout=60)
    assert "error" not in box, box.get("error")
    assert box["report"].rows_written == N
    asked_at, last = scrapes[-1]
    assert last[("lakecat_ingest_rows_total", labels)] == N
    assert last[("lakecat_ingest_running", labels)] == 0
    assert asked_at <= box["returned_at"]
    assert box["returned_at"] - box["linger_at"] < 15  # after the scrape, not after the 60s bound
    assert _scrape(port) is None  # and then the endpoint is gone


@pytest.mark.spark
def test_without_a_scraper_the_run_ends_after_the_bound(cli, catalog, ns, tmp_path):
    from lakecat.processes import free_port

    landing = tmp_path / "in"
    landing.mkdir()
    (landing / "a.json").write_text("\n".join(json.dumps({"id": i, "v": "x"}) for i in range(10)) + "\n")
    name = f"{ns}.files"
    catalog.create_table(name, schema="id BIGINT NOT NULL, v STRING", format="iceberg")
    port = free_port()
    started = time.monotonic()
    code, out, err = cli("ingest", name, "--files", landing, "--metrics-port", port, "--metrics-linger", "3s")
    took = time.monotonic() - started
    assert code == 0, err
    assert f"serving final metrics on :{port} until scraped (at most 3s)" in err
    assert f"10 rows written to {name}" in out
    assert took >= 3
    assert _scrape(port) is None


# --- a real Prometheus -----------------------------------------------------------------------
def _prometheus(tmp_path: Path, target_port: int) -> tuple[subprocess.Popen, int]:
    """Prometheus on loopback scraping ``target_port`` every second; returns it once it is ready, and its port."""
    from lakecat.processes import free_port

    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        f"scrape_configs:\n  - job_name: lakecat\n    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
    )
    port = free_port()
    proc = subprocess.Popen(
        [shutil.which("prometheus") or "prometheus", f"--config.file={config}", f"--web.listen-address=127.0.0.1:{port}",
         f"--storage.tsdb.path={tmp_path / 'tsdb'}"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2):
                return proc, port
        except OSError:
            time.sleep(0.3)
    proc.kill()
    pytest.fail("Prometheus did not become ready within 60s")


def _query(port: int, expr: str) -> float | None:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as resp:
        result = json.load(resp)["data"]["result"]
    return float(result[0]["value"][1]) if result else None


@pytest.mark.spark
@pytest.mark.kafka
def test_a_real_prometheus_records_the_final_figures(catalog, ns, kafka_bootstrap, tmp_path):
    if shutil.which("prometheus") is None:
        pytest.skip("no prometheus binary (.ci/run installs Debian's prometheus package)")
    from lakecat.processes import free_port

    t, source = _kafka_table(catalog, ns, kafka_bootstrap)
    port = free_port()
    prometheus, api = _prometheus(tmp_path, port)
    try:
        thread, box = _ingest_in_thread(catalog, t.name, source, port, linger=30)
        thread.join(timeout=240)
        assert "error" not in box, box.get("error")
        assert box["report"].rows_written == N
        assert box["returned_at"] - box["linger_at"] < 15  # Prometheus's scrape ended the linger
        selector = f'{{table="{t.name}"}}'
        rows = running = None
        for _ in range(20):  # the scrape is answered, then stored: give the store a moment
            rows, running = (
                _query(api, "lakecat_ingest_rows_total" + selector),
                _query(api, "lakecat_ingest_running" + selector),
            )
            if rows == N and running == 0:
                break
            time.sleep(0.5)
        assert (rows, running) == (N, 0)
    finally:
        prometheus.terminate()
        prometheus.wait(timeout=30)
