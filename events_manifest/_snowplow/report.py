"""A self-contained HTML page for a shred run: the summary and a plot of events per event id."""

from __future__ import annotations

import math
from html import escape

from events_manifest._snowplow.summary import BUCKETS, ShredSummary

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#222;max-width:60rem}
table{border-collapse:collapse;margin:1rem 0}td,th{padding:.25rem .75rem;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
.ok{color:#1a7f37}.bad{color:#cf222e}svg text{font-size:12px;fill:#222}
"""


def _plot(distribution: dict[str, int]) -> str:
    """Bars of event ids per bucket, on a log scale so the long tail stays visible."""
    width, height, left, bottom = 560, 260, 60, 40
    top = max(distribution.values(), default=0)
    scale = math.log10(top + 1) or 1.0
    bar = (width - left - 20) / len(BUCKETS)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        'aria-label="event ids per number of events">',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="#888"/>',
    ]
    for i, name in enumerate(BUCKETS):
        count = distribution.get(name, 0)
        h = (height - bottom - 30) * math.log10(count + 1) / scale
        x = left + i * bar + bar * 0.15
        y = height - bottom - h
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar * 0.7:.1f}" height="{h:.1f}" fill="#4a7fd4"/>')
        parts.append(f'<text x="{x + bar * 0.35:.1f}" y="{y - 4:.1f}" text-anchor="middle">{count:,}</text>')
        label_y = height - bottom + 16
        parts.append(f'<text x="{x + bar * 0.35:.1f}" y="{label_y}" text-anchor="middle">{escape(name)}</text>')
    parts.append(
        f'<text x="{width / 2:.0f}" y="{height - 6}" text-anchor="middle">events per event id (log scale)</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def render_report(summary: ShredSummary) -> str:
    counts = "".join(f"<tr><td>{escape(n.strip())}</td><td class=n>{v:,}</td></tr>" for n, v in summary.counts())
    entities = "".join(
        f"<tr><td>{escape(n)}</td><td class=n>{v:,}</td></tr>" for n, v in sorted(summary.entities.items())
    )
    check = (
        '<p class="ok">Every input line is accounted for: input = kept + bad + dropped duplicates.</p>'
        if summary.balanced
        else '<p class="bad">Lines are unaccounted for.</p>'
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shred run {escape(summary.etl_time or "")}</title>
<style>{_STYLE}</style></head><body>
<h1>Shred run</h1>
<p>{escape(summary.input_path)} &rarr; {escape(summary.output_path)}<br>
etl time {escape(summary.etl_time or "-")}; manifest {escape(summary.manifest or "none")};
{summary.seconds:.1f} s</p>
<table><tr><th>lines</th><th>count</th></tr>{counts}</table>{check}
<h2>Events per event id</h2>{_plot(summary.events_per_event_id)}
<h2>Entities per shredded type</h2><table><tr><th>type</th><th>entities</th></tr>{entities}</table>
</body></html>
"""
