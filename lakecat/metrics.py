"""Prometheus metrics (``prometheus_client``): an ingest stream's ``/metrics`` and table health as a textfile.

- ``IngestExporter`` serves ``/metrics`` for the life of one ingest (``lakecat ingest ... --metrics-port N``):
  rows written, rows dead-lettered by reason, batches, batch and commit durations, source lag per
  partition, the last commit's time, whether the stream still runs — labelled by table and format. When the
  run ends it can linger until a scrape has read the final figures.
- ``ServiceExporter`` serves ``/metrics`` for the life of the maintenance service (``lakecat maintain --auto --every
  DUR --metrics-port N``): queue depth, runs by action and outcome, bytes rewritten, passes, tables by verdict.
- ``write_health_textfile`` writes ``lakecat health``'s figures as gauges in the text exposition format, for
  the node-exporter textfile collector (``lakecat health --prometheus FILE`` from CI or cron).

Names follow Prometheus conventions: a ``lakecat_`` prefix, base units (seconds, bytes) in the name,
``_total`` for counters.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import LakecatError
from .extras import require
from .units import parse_timestamp

if TYPE_CHECKING:
    from .results import HealthResult

# Batch and commit durations (seconds): a micro-batch takes from under a second to minutes.
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, float("inf"))
VERDICTS = ("healthy", "compact", "expire", "clean", "failed")


class IngestExporter:
    """``/metrics`` of one ingest stream on ``port`` (all interfaces), until ``close``.

    After the run, ``finish`` records the final figures and ``linger`` keeps serving them until a scrape that began
    afterwards has been answered: a process that exits at once loses whatever its last scrape did not read.
    """

    def __init__(self, table: str, fmt: str, port: int, *, addr: str = "0.0.0.0") -> None:
        require_client()
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

        self.labels = {"table": table, "format": fmt}
        self.port = int(port)
        names = list(self.labels)
        self.registry = registry = CollectorRegistry()
        self.rows = Counter("lakecat_ingest_rows", "Rows written to the table.", names, registry=registry)
        self.dead = Counter("lakecat_ingest_rows_dead_lettered", "Rows sent to the dead-letter table, by reason.",
                            [*names, "reason"], registry=registry)  # fmt: skip
        self.batches = Counter("lakecat_ingest_batches", "Micro-batches committed (replays skipped excluded).", names,
                               registry=registry)  # fmt: skip
        self.batch_duration = Histogram("lakecat_ingest_batch_duration_seconds", "Wall time of a micro-batch.", names,
                                        buckets=DURATION_BUCKETS, registry=registry)  # fmt: skip
        self.commit_duration = Histogram("lakecat_ingest_commit_duration_seconds",
                                         "Wall time of a micro-batch's write and commit to the table.", names,
                                         buckets=DURATION_BUCKETS, registry=registry)  # fmt: skip
        self.lag = Gauge("lakecat_ingest_lag_records", "Records at the source not yet read, per topic partition.",
                         [*names, "topic", "partition"], registry=registry)  # fmt: skip
        self.last_commit = Gauge("lakecat_ingest_last_commit_timestamp_seconds",
                                 "When the stream last committed rows to the table (Unix time).", names, registry=registry)  # fmt: skip
        self.started = Gauge("lakecat_ingest_start_timestamp_seconds", "When the stream started (Unix time).", names,
                             registry=registry)  # fmt: skip
        self.running = Gauge("lakecat_ingest_running", "1 while the stream runs, 0 once it has ended (final figures).",
                             names, registry=registry)  # fmt: skip
        self.started.labels(**self.labels).set(time.time())
        self.running.labels(**self.labels).set(1)
        self.rows.labels(**self.labels)  # every series exists from the first scrape, at 0
        self.batches.labels(**self.labels)
        self.seen: set[int] = set()
        self._answered = threading.Condition()
        self._last_scrape = float("-inf")  # when the latest answered scrape began (monotonic)
        self._final_at: float | None = None
        try:
            self.server, self.thread = start_http_server(self.port, addr=addr, registry=registry)
        except OSError as e:
            raise LakecatError(f"metrics_port={port}: cannot serve /metrics there ({e.strerror or e})") from None
        app = self.server.get_app()
        if app is not None:
            self.server.set_app(self._tracked(app))

    def _tracked(self, app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
        """``app`` that notes when each scrape began, once its whole answer has been written to the client."""

        def tracked(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            began = time.monotonic()
            scrape = environ.get("REQUEST_METHOD") == "GET" and environ.get("PATH_INFO") != "/favicon.ico"
            status: list[str] = []

            def start(code: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
                status.append(code)
                return start_response(code, headers, exc_info)

            def sent() -> None:
                if scrape and status[:1] == ["200 OK"]:
                    self._scraped(began)

            return _Answer(app(environ, start), sent)

        return tracked

    def _scraped(self, began: float) -> None:
        with self._answered:
            self._last_scrape = max(self._last_scrape, began)
            self._answered.notify_all()

    def observe(self, batches: dict[int, Any], lag: dict[tuple[str, int], int] | None) -> None:
        """Count the batches finished since the last call (``BatchStats`` by id) and set the lag gauges."""
        for bid, s in sorted(batches.items()):
            if bid in self.seen:
                continue
            self.seen.add(bid)
            if s.skipped:
                continue
            self.batches.labels(**self.labels).inc()
            self.rows.labels(**self.labels).inc(s.rows_written)
            for reason, n in (s.dead_letter_reasons or {}).items():
                if n:
                    self.dead.labels(**self.labels, reason=reason).inc(n)
            self.batch_duration.labels(**self.labels).observe(s.duration_s)
            if s.commit_duration_s is not None:
                self.commit_duration.labels(**self.labels).observe(s.commit_duration_s)
            if s.rows_written and s.finished_at:
                self.last_commit.labels(**self.labels).set(s.finished_at)
        for (topic, partition), n in (lag or {}).items():
            self.lag.labels(**self.labels, topic=topic, partition=str(partition)).set(n)

    def finish(self, batches: dict[int, Any], lag: dict[tuple[str, int], int] | None) -> None:
        """The run has ended: the last batches and lag (as ``observe``), and ``lakecat_ingest_running`` 0."""
        self.observe(batches, lag)
        self.running.labels(**self.labels).set(0)
        self._final_at = time.monotonic()

    def linger(self, seconds: float, stop: threading.Event | None = None) -> bool:
        """Serve until a scrape that began after ``finish`` has been answered, at most ``seconds`` and not past
        ``stop`` being set; True when such a scrape was answered."""
        final = self._final_at if self._final_at is not None else time.monotonic()
        deadline = time.monotonic() + seconds
        with self._answered:
            while self._last_scrape < final:
                left = deadline - time.monotonic()
                if left <= 0 or (stop is not None and stop.is_set()):
                    return False
                self._answered.wait(min(left, 0.2))  # short waits: a stop is seen at once
        return True

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Answer(list[bytes]):
    """A WSGI body that calls ``sent`` once the server has written all of it (a list, so the server still sends its
    Content-Length)."""

    def __init__(self, chunks: Iterable[bytes], sent: Callable[[], None]) -> None:
        super().__init__(chunks)
        self.sent = sent

    def __iter__(self) -> Iterator[bytes]:
        yield from super().__iter__()
        self.sent()  # the server asks for the next chunk only after writing the previous one


class ServiceExporter:
    """``/metrics`` of the maintenance service (``lakecat maintain --auto --every DUR --metrics-port N``), until
    ``close``: queue depth, runs by action and outcome, bytes rewritten, passes and the last one's time, tables by
    verdict at the last pass."""

    def __init__(self, port: int, *, addr: str = "0.0.0.0") -> None:
        require_client()
        from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

        self.registry = registry = CollectorRegistry()
        self.depth = Gauge("lakecat_maintenance_queue_depth", "Tables queued for maintenance and not yet started.",
                           registry=registry)  # fmt: skip
        self.runs = Counter("lakecat_maintenance_runs", "Maintenance actions run, by action and outcome "
                            "(ok, failed, skipped).", ["action", "outcome"], registry=registry)  # fmt: skip
        self.rewritten = Counter("lakecat_maintenance_rewritten_bytes", "Bytes of data files compaction rewrote.",
                                 registry=registry)  # fmt: skip
        self.passes = Counter("lakecat_maintenance_passes", "Passes over the catalog's tables.", registry=registry)
        self.pass_errors = Counter("lakecat_maintenance_pass_errors", "Passes that failed as a whole.",
                                   registry=registry)  # fmt: skip
        self.deferred = Counter("lakecat_maintenance_deferred_tables", "Queued tables a pass did not reach (budget "
                                "spent or stopped): they wait for the next pass.", registry=registry)  # fmt: skip
        self.last_pass = Gauge("lakecat_maintenance_last_pass_timestamp_seconds", "When the last pass ended (Unix "
                               "time).", registry=registry)  # fmt: skip
        self.last_pass_duration = Gauge("lakecat_maintenance_last_pass_duration_seconds", "Wall time of the last pass.",
                                        registry=registry)  # fmt: skip
        self.evaluated = Counter("lakecat_maintenance_tables_evaluated", "Table health computations: the table's "
                                 "commit pointer moved, a window came due, or its policy or runs changed.",
                                 registry=registry)  # fmt: skip
        self.unchanged = Counter("lakecat_maintenance_tables_unchanged", "Tables a pass found unchanged since their "
                                 "health was last computed (no metadata read).", registry=registry)  # fmt: skip
        self.tables = Gauge("lakecat_maintenance_tables", "Tables by health verdict at the last pass (disabled: "
                            "lakecat.maintain.enabled=false).", ["verdict"], registry=registry)  # fmt: skip
        for action in ("compact", "expire", "clean-orphans"):  # every series exists from the first scrape, at 0
            for outcome in ("ok", "failed", "skipped"):
                self.runs.labels(action=action, outcome=outcome)
        self.port = int(port)
        try:
            self.server, self.thread = start_http_server(self.port, addr=addr, registry=registry)
        except OSError as e:
            raise LakecatError(f"metrics_port={port}: cannot serve /metrics there ({e.strerror or e})") from None

    def queued(self, depth: int, verdicts: dict[str, int]) -> None:
        self.depth.set(depth)
        for verdict in {*VERDICTS, "disabled", *verdicts}:
            self.tables.labels(verdict=verdict).set(verdicts.get(verdict, 0))

    def queue_depth(self, depth: int) -> None:
        self.depth.set(max(0, depth))

    def ran(self, action: str, outcome: str, rewritten_bytes: int = 0) -> None:
        self.runs.labels(action=action, outcome=outcome).inc()
        if rewritten_bytes:
            self.rewritten.inc(rewritten_bytes)

    def pass_done(self, p: Any) -> None:
        """A pass has ended (``service.PassResult``)."""
        self.passes.inc()
        if p.error:
            self.pass_errors.inc()
        if p.deferred:
            self.deferred.inc(p.deferred)
        self.evaluated.inc(p.evaluated)
        self.unchanged.inc(p.unchanged)
        self.last_pass.set(time.time())
        self.last_pass_duration.set(p.seconds)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def require_client() -> None:
    """prometheus_client (lakecat's ``metrics`` extra) is installed, else one line naming the extra (exit 2); a
    command checks it before the work whose figures it exports."""
    require("prometheus_client", extra="metrics", feature="exporting Prometheus metrics")


def health_registry(result: HealthResult) -> Any:
    """The health figures of every table as gauges (and the file sizes as a histogram) in one registry."""
    require_client()
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily

    labels = ["table", "format"]
    gauges = {
        "data_files": ("lakecat_table_data_files", "Live data files of the current version."),
        "data_bytes": ("lakecat_table_data_bytes", "Bytes of the live data files."),
        "small_files": ("lakecat_table_small_files", "Live data files below 75% of the target file size."),
        "delete_files": ("lakecat_table_delete_files", "Delete files / files with a deletion vector."),
        "deleted_rows": ("lakecat_table_deleted_rows", "Rows hidden by delete files or deletion vectors."),
        "deleted_rows_ratio": ("lakecat_table_deleted_rows_ratio", "Share of rows hidden by deletes (0..1)."),
        "versions": ("lakecat_table_versions", "Versions (snapshots, log versions) retained."),
        "oldest_version_age_s": ("lakecat_table_oldest_version_age_seconds", "Age of the oldest retained version."),
        "expirable_versions": ("lakecat_table_expirable_versions", "Versions older than the expiry policy."),
        "old_version_bytes": (
            "lakecat_table_old_version_bytes",
            "Bytes only old versions reference (what expiry frees).",
        ),
        "partitions": ("lakecat_table_partitions", "Partitions with live data."),
        "partition_skew": ("lakecat_table_partition_skew_ratio", "Largest partition's bytes over the median's."),
    }
    stamps = {
        "last_compaction": ("lakecat_table_last_compaction_timestamp_seconds", "Last compaction (Unix time)."),
        "last_expiry": ("lakecat_table_last_expiry_timestamp_seconds", "Last expiry by lakecat (Unix time)."),
        "last_orphan_cleanup": (
            "lakecat_table_last_orphan_cleanup_timestamp_seconds",
            "Last orphan cleanup (Unix time).",
        ),
        "stream_last_commit": (
            "lakecat_table_stream_last_commit_timestamp_seconds",
            "Last commit of lakecat's ingest (Unix time).",
        ),
    }

    class _Collector:
        def collect(self):  # type: ignore[no-untyped-def]
            families = {k: GaugeMetricFamily(n, d, labels=labels) for k, (n, d) in {**gauges, **stamps}.items()}
            verdict = GaugeMetricFamily("lakecat_table_health_verdict", "1 for the table's verdict, 0 for the others.",
                                        labels=[*labels, "verdict"])  # fmt: skip
            sizes = HistogramMetricFamily(
                "lakecat_table_file_size_bytes", "Sizes of the live data files.", labels=labels
            )
            for h in result.tables:
                lv = [h.name, h.format]
                for v in VERDICTS:
                    verdict.add_metric([*lv, v], 1.0 if h.verdict == v else 0.0)
                if h.verdict == "failed":
                    continue
                for k in gauges:
                    value = getattr(h, k)
                    if value is not None:
                        families[k].add_metric(lv, float(value))
                for k in stamps:
                    value = getattr(h, k)
                    if value:
                        families[k].add_metric(lv, parse_timestamp(value).timestamp())
                cumulative, buckets = 0, []
                for b in h.file_sizes:
                    cumulative += b.files
                    buckets.append((str(float(b.le)) if b.le is not None else "+Inf", cumulative))
                sizes.add_metric(lv, buckets, sum_value=float(h.data_bytes))
            yield from families.values()
            yield verdict
            yield sizes

    registry = CollectorRegistry()
    registry.register(_Collector())  # type: ignore[arg-type]
    return registry


def health_exposition(result: HealthResult) -> str:
    from prometheus_client import generate_latest

    return generate_latest(health_registry(result)).decode("utf-8")


def write_health_textfile(result: HealthResult, path: str | Path) -> Path:
    """Write the health gauges for the node-exporter textfile collector (atomically: a temp file, then renamed)."""
    from prometheus_client import write_to_textfile

    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(target), health_registry(result))
    return target
