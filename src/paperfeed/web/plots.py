"""Small SVG plots rendered on the server: no script, no CDN, nothing the CSP has to allow.

Only SVG elements and presentation attributes (``fill``, ``stroke``): no ``style`` attribute, which the
Content-Security-Policy (``style-src 'self'``) would block. Every number is formatted here and every text
is escaped, so the markup is safe to mark as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from markupsafe import Markup, escape

__all__ = ["share_bars", "sparkline", "trend_plot"]

_INK = "#3b6ea8"
_AREA = "#3b6ea833"
_GRID = "#8884"
_PAST = "#3b6ea866"
_UPVOTES = "#c0672b"


def _points(values: Sequence[float], width: float, height: float, pad: float) -> list[tuple[float, float]]:
    top = max(max(values, default=0), 1)
    step = (width - 2 * pad) / max(len(values) - 1, 1)
    return [(pad + i * step, height - pad - (v / top) * (height - 2 * pad)) for i, v in enumerate(values)]


def _path(points: Sequence[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


def sparkline(values: Sequence[int], *, width: int = 120, height: int = 28, label: str = "") -> Markup:
    """A line of weekly counts, oldest left, with its area shaded; ``label`` is its accessible name."""
    points = _points(values or [0], width, height, 2)
    area = [(points[0][0], height - 2.0), *points, (points[-1][0], height - 2.0)]
    return Markup(
        f'<svg class="sparkline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>"
        f'<polygon points="{_path(area)}" fill="{_AREA}" stroke="none"/>'
        f'<polyline points="{_path(points)}" fill="none" stroke="{_INK}" stroke-width="1.5"/>'
        "</svg>"
    )


def _panel(
    parts: list[str],
    weeks: Sequence[date],
    values: Sequence[int],
    *,
    top: float,
    height: float,
    left: int,
    width: float,
    colour: str,
    css: str,
    name: str,
) -> None:
    """One panel of bars: its y axis (0 and the maximum), its name, one bar per week with a tooltip."""
    axis = 'font-size="12" fill="currentColor"'
    peak = max(max(values, default=0), 1)
    bar = width / max(len(values), 1)
    base_y = top + height
    parts += [
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base_y}" stroke="{_GRID}"/>',
        f'<line x1="{left}" y1="{base_y}" x2="{left + width}" y2="{base_y}" stroke="{_GRID}"/>',
        f'<text x="{left - 4}" y="{top + 8}" text-anchor="end" {axis}>{peak}</text>',
        f'<text x="{left - 4}" y="{base_y}" text-anchor="end" {axis}>0</text>',
        f'<text class="panel-name" x="{left + 4}" y="{top + 9}" {axis}>{escape(name)}</text>',
    ]
    for i, (week, count) in enumerate(zip(weeks, values, strict=True)):
        h = count / peak * height
        x = left + i * bar
        parts.append(
            f'<rect class="{css}" x="{x + bar * 0.1:.1f}" y="{base_y - h:.1f}" width="{bar * 0.8:.1f}" '
            f'height="{h:.1f}" fill="{colour}"><title>week of {week.isoformat()}: {count} '
            f"{escape(name)}</title></rect>"
        )


def trend_plot(
    weeks: Sequence[date],
    papers: Sequence[int],
    upvotes: Sequence[int] | None = None,
    *,
    width: int = 640,
    height: int = 200,
    label: str = "Papers per week",
) -> Markup:
    """Bars of papers per week and, when ``upvotes`` is given, a second panel below of upvotes per week
    on the same weeks (two panels rather than two axes on one: the counts differ by orders of magnitude).
    Each panel has its y axis (0 and the maximum) and its name; the first and last week are labelled."""
    left, bottom, top_pad, right, gap = 36, 22, 8, 8, 10
    panels = 1 if upvotes is None else 2
    if upvotes is not None:
        height = max(height, 260)
    plot_w = width - left - right
    panel_h = (height - bottom - top_pad - gap * (panels - 1)) / panels
    parts = [
        f'<svg class="trend-plot" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">',
        f"<title>{escape(label)}</title>",
    ]
    _panel(
        parts, weeks, papers, top=top_pad, height=panel_h, left=left, width=plot_w,
        colour=_INK, css="bar", name="papers",
    )  # fmt: skip
    if upvotes is not None:
        _panel(
            parts, weeks, upvotes, top=top_pad + panel_h + gap, height=panel_h, left=left, width=plot_w,
            colour=_UPVOTES, css="bar-upvotes", name="upvotes",
        )  # fmt: skip
    if weeks:
        axis = 'font-size="12" fill="currentColor"'
        y = height - 6
        parts.append(f'<text x="{left}" y="{y}" {axis}>{weeks[0].isoformat()}</text>')
        parts.append(
            f'<text x="{left + plot_w}" y="{y}" text-anchor="end" {axis}>{weeks[-1].isoformat()}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def share_bars(values: Sequence[float], *, width: int = 120, height: int = 32, label: str = "") -> Markup:
    """Small bars of weekly shares, oldest left, the last (this week) in full ink: "Rising this week"."""
    pad = 2.0
    base = height - pad
    shown = list(values) or [0.0]
    peak = max(max(shown), 1e-12)
    slot = (width - 2 * pad) / len(shown)
    parts = [
        f'<svg class="share-bars" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">',
        f"<title>{escape(label)}</title>",
        f'<line x1="0" y1="{base:.1f}" x2="{width}" y2="{base:.1f}" stroke="{_GRID}"/>',
    ]
    for i, v in enumerate(shown):
        h = max(v, 0.0) / peak * (height - 2 * pad - 1)
        fill = _INK if i == len(shown) - 1 else _PAST
        parts.append(
            f'<rect class="bar" x="{pad + i * slot + slot * 0.15:.1f}" y="{base - h:.1f}" '
            f'width="{slot * 0.7:.1f}" height="{h:.1f}" fill="{fill}"/>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
