"""A paper's place on a small map, as SVG written by the server (no script; see :mod:`.plots`).

Each sample of dots is one ``<path>`` of zero-length segments drawn with round caps: about 12 bytes a dot
instead of a ``<circle>`` element's 40, so the 1,500 dots of a backdrop stay near 20 KB of a page.
Presentation attributes only (no ``style``), every number formatted and every text escaped here.
"""

from __future__ import annotations

from collections.abc import Iterable

from markupsafe import Markup, escape

from paperfeed.domain.topic_map import PaperPlace

__all__ = ["place_map"]

_BACKDROP = "#8888"
_TOPIC = "#3b6ea8"
_MARK = "#d9480f"


def place_map(place: PaperPlace, *, width: int = 320, label: str = "") -> Markup:
    """The backdrop in grey, the paper's topic tinted, the paper as a ringed dot; ``label`` names it."""
    x0, y0, x1, y1 = place.bounds
    span_x, span_y = max(x1 - x0, 1e-9), max(y1 - y0, 1e-9)
    pad = 6.0
    height = int(min(max(width * span_y / span_x, width * 0.5), width * 1.0))
    scale = min((width - 2 * pad) / span_x, (height - 2 * pad) / span_y)
    off_x = (width - span_x * scale) / 2
    off_y = (height - span_y * scale) / 2

    def at(x: float, y: float) -> tuple[float, float]:  # y grows upwards on the map, downwards in SVG
        x = min(max(x, x0), x1)
        y = min(max(y, y0), y1)
        return off_x + (x - x0) * scale, height - off_y - (y - y0) * scale

    def dots(points: Iterable[tuple[float, float]]) -> str:
        return "".join("M{:.1f} {:.1f}h0".format(*at(x, y)) for x, y in points)

    px, py = at(place.x, place.y)
    text = escape(label)
    return Markup(
        f'<svg class="place-map" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{text}"><title>{text}</title>'
        f'<path class="backdrop" d="{dots(place.backdrop)}" stroke="{_BACKDROP}" stroke-width="2" '
        'stroke-linecap="round" fill="none"/>'
        f'<path class="topic" d="{dots(place.neighbours)}" stroke="{_TOPIC}" stroke-width="2.5" '
        'stroke-linecap="round" fill="none"/>'
        f'<circle class="paper" cx="{px:.1f}" cy="{py:.1f}" r="4" fill="{_MARK}" stroke="#fff" '
        'stroke-width="1.5"/>'
        f'<circle cx="{px:.1f}" cy="{py:.1f}" r="9" fill="none" stroke="{_MARK}" stroke-width="1.5"/>'
        "</svg>"
    )
