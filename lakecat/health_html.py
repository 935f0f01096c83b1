"""``lakecat health --html FILE``: one self-contained page (inline CSS and SVG, nothing fetched at view time).

Per table: the verdict and its reason, a file-size histogram, the retained versions over time coloured by
operation, and the figures behind the verdict; then the recent maintenance runs of those tables.
"""

from __future__ import annotations

import html
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .units import human_size, parse_timestamp

if TYPE_CHECKING:
    from .maintenance_log import MaintenanceRun
    from .results import HealthResult, TableHealth

_COLOURS = {"healthy": "#2e7d32", "compact": "#ef6c00", "expire": "#f9a825", "clean": "#0277bd", "failed": "#c62828"}
_OPS = {"append": "#1565c0", "compact": "#ef6c00", "delete": "#c62828", "overwrite": "#6a1b9a", "merge": "#00838f",
        "update": "#00838f", "create": "#555555"}  # fmt: skip
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px} .sub{color:#666;margin-bottom:20px}
.card{background:#fff;border:1px solid #ddd;border-radius:8px;padding:16px;margin:0 0 16px}
.card h2{font-size:17px;margin:0 0 6px} .verdict{color:#fff;border-radius:4px;padding:2px 8px;font-size:13px;margin-left:8px}
.reason{margin:4px 0 12px} .charts{display:flex;flex-wrap:wrap;gap:24px} .chart h3{font-size:13px;margin:0 0 4px;color:#444}
table.figs{border-collapse:collapse;font-size:13px;margin-top:8px} table.figs td{padding:2px 12px 2px 0}
table.figs td:first-child{color:#666} svg text{font-size:10px;fill:#444} .legend span{margin-right:10px;font-size:12px}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _bucket_label(le: int | None, prev: int | None) -> str:
    if le is None:
        return f">{human_size(prev)}" if prev else "more"
    return f"≤{human_size(le)}"


def histogram_svg(h: TableHealth, width: int = 440, height: int = 170) -> str:
    """Bars of file counts per size bucket; the small-file threshold marked."""
    buckets = h.file_sizes
    top = max([b.files for b in buckets] + [1])
    left, bottom, bar_w = 30, 40, (width - 30) / max(1, len(buckets))
    out = [f'<svg class="histogram" role="img" aria-label="file sizes of {_e(h.name)}" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']  # fmt: skip
    prev = None
    for i, b in enumerate(buckets):
        bar_h = (height - bottom - 10) * b.files / top
        x = left + i * bar_w
        small = b.le is not None and b.le <= h.small_file_bytes
        colour = "#ef6c00" if small and b.files else "#1565c0"
        out.append(f'<rect class="bar" x="{x + 2:.1f}" y="{height - bottom - bar_h:.1f}" width="{bar_w - 4:.1f}" '
                   f'height="{bar_h:.1f}" fill="{colour}"><title>{_e(_bucket_label(b.le, prev))}: {b.files} files</title></rect>')  # fmt: skip
        if b.files:
            out.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{height - bottom - bar_h - 2:.1f}" text-anchor="middle">{b.files}</text>'
            )
        out.append(f'<text x="{x + bar_w / 2:.1f}" y="{height - bottom + 12}" text-anchor="end" '
                   f'transform="rotate(-40 {x + bar_w / 2:.1f} {height - bottom + 12})">{_e(_bucket_label(b.le, prev))}</text>')  # fmt: skip
        prev = b.le
    out.append(f'<line x1="{left}" y1="{height - bottom}" x2="{width}" y2="{height - bottom}" stroke="#999"/>')
    out.append("</svg>")
    return "".join(out)


def timeline_svg(h: TableHealth, width: int = 440, height: int = 170) -> str:
    """One dot per retained version along time, coloured by operation, the version count rising."""
    points = h.timeline
    out = [f'<svg class="timeline" role="img" aria-label="versions of {_e(h.name)}" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']  # fmt: skip
    left, bottom = 30, 30
    out.append(f'<line x1="{left}" y1="{height - bottom}" x2="{width}" y2="{height - bottom}" stroke="#999"/>')
    if points:
        times = [parse_timestamp(p.timestamp).timestamp() for p in points]
        t0, t1 = min(times), max(times)
        span = (t1 - t0) or 1.0
        for i, (p, t) in enumerate(zip(points, times, strict=True)):
            x = left + 8 + (width - left - 16) * ((t - t0) / span if t1 > t0 else i / max(1, len(points) - 1))
            y = height - bottom - 8 - (height - bottom - 20) * (i / max(1, len(points) - 1))
            colour = _OPS.get(p.operation, "#777777")
            out.append(f'<circle class="version" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}">'
                       f"<title>version {_e(p.version)} · {_e(p.operation)} · {_e(p.timestamp)}</title></circle>")  # fmt: skip
        for t, anchor, x in ((t0, "start", left), (t1, "end", width)):
            label = datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M")
            out.append(f'<text x="{x}" y="{height - bottom + 14}" text-anchor="{anchor}">{label}</text>')
    out.append("</svg>")
    return "".join(out)


def _figures(h: TableHealth) -> str:
    rows = [
        ("data files", f"{h.data_files:,} ({human_size(h.data_bytes)}), median {human_size(h.median_file_bytes)}"),
        ("small files", f"{h.small_files:,} under {human_size(h.small_file_bytes)} ({h.compactable_small_files:,} sharing a partition)"),
        ("deletes", f"{h.delete_files:,} {h.delete_kind or 'delete files'}, hiding {h.deleted_rows:,} rows ({h.deleted_rows_ratio:.1%})"),
        ("versions", f"{h.versions:,}, oldest {h.oldest_version_at or '-'}; {h.expirable_versions:,} past the expiry policy"),
        ("old versions hold", f"{h.old_version_files:,} files, {human_size(h.old_version_bytes)}"),
        ("partitions", f"{h.partitions:,}, largest {human_size(h.largest_partition_bytes)}, skew {h.partition_skew or '-'}"),
        ("last compaction / expiry / orphan cleanup", f"{h.last_compaction or '-'} / {h.last_expiry or '-'} / {h.last_orphan_cleanup or '-'}"),
        ("stream's last commit", h.stream_last_commit or "-"),
    ]  # fmt: skip
    return '<table class="figs">' + "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows) + "</table>"


_OUTCOMES = {"ok": "#2e7d32", "failed": "#c62828", "skipped": "#f9a825"}


def runs_section(runs: list[MaintenanceRun]) -> str:
    """The recent maintenance runs (``lakecat maintenance-log``) as one table, newest first."""
    if not runs:
        return '<section class="card runs"><h2>recent maintenance runs</h2><p>none recorded yet</p></section>'
    head = "".join(f"<th>{_e(h)}</th>" for h in ("started (UTC)", "table", "action", "outcome", "seconds", "files",
                                                  "bytes", "detail"))  # fmt: skip
    rows = []
    for r in runs:
        files = (
            f"{r.files_before:,} → {r.files_after:,}"
            if r.files_before is not None and r.files_after is not None
            else ""
        )
        size = (f"{human_size(r.bytes_before)} → {human_size(r.bytes_after)}" if r.bytes_before is not None
                and r.bytes_after is not None else "")  # fmt: skip
        detail = r.error or (f"{r.snapshots_removed} versions removed" if r.snapshots_removed else "")
        action = r.action + (f" ({r.tier})" if r.tier else "")
        rows.append(f'<tr class="run" data-outcome="{_e(r.outcome)}"><td>{_e(r.started.replace("T", " ").rstrip("Z"))}</td>'
                    f"<td>{_e(r.table)}</td><td>{_e(action)}</td>"
                    f'<td style="color:{_OUTCOMES.get(r.outcome, "#555555")}">{_e(r.outcome)}</td><td>{r.seconds:.1f}</td>'
                    f"<td>{_e(files)}</td><td>{_e(size)}</td><td>{_e(detail)}</td></tr>")  # fmt: skip
    return (f'<section class="card runs"><h2>recent maintenance runs</h2><table class="figs"><tr>{head}</tr>'
            + "".join(rows) + "</table></section>")  # fmt: skip


def render(result: HealthResult, runs: list[MaintenanceRun] | None = None) -> str:
    """The page as a string; with ``runs``, a section of recent maintenance runs after the tables."""
    legend = "".join(f'<span style="color:{c}">● {_e(op)}</span>' for op, c in _OPS.items())
    cards = []
    for h in result.tables:
        colour = _COLOURS.get(h.verdict, "#555555")
        body = f'<p class="reason">{_e(h.reason)}</p>'
        if h.verdict != "failed":
            body += (f'<div class="charts"><div class="chart"><h3>file sizes (orange: small)</h3>{histogram_svg(h)}</div>'
                     f'<div class="chart"><h3>versions over time</h3>{timeline_svg(h)}<div class="legend">{legend}</div></div></div>'
                     + _figures(h))  # fmt: skip
        cards.append(f'<section class="card" data-table="{_e(h.name)}" data-verdict="{_e(h.verdict)}"><h2>{_e(h.name)} '
                     f'<small>({_e(h.format)})</small><span class="verdict" style="background:{colour}">{_e(h.verdict)}</span></h2>'
                     f"{body}</section>")  # fmt: skip
    counts = ", ".join(f"{n} {_e(v)}" for v, n in sorted(result.verdicts.items())) or "no tables"
    generated = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>lakecat table health</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_CSS}</style></head><body>'
            f'<h1>lakecat table health</h1><div class="sub">{len(result.tables)} tables: {counts} · generated {_e(generated)}</div>'
            + "".join(cards) + (runs_section(runs) if runs is not None else "") + "</body></html>\n")  # fmt: skip


def write_html(result: HealthResult, path: str | Path, runs: list[MaintenanceRun] | None = None) -> Path:
    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(result, runs), encoding="utf-8")
    return target
