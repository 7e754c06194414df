"""Tiny PNG bar plots for mail, drawn with Pillow.

Mail clients do not show SVG (Gmail, Outlook) and block remote images, so a digest's plot is a PNG inside
the message. Drawn at twice the size it is shown (crisp on high-density screens), in a 4-colour palette
with no metadata: a 9-bar plot is a few hundred bytes.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

__all__ = ["MAX_PNG_BYTES", "bar_png"]

MAX_PNG_BYTES = 8 * 1024  # a plot larger than this is left out of the mail (the words carry it)
_WHITE = (255, 255, 255)
_PAST = (176, 190, 214)
_NOW = (59, 110, 168)  # the site's plot ink (web/plots.py)
_BASE = (200, 204, 212)


def bar_png(values: Sequence[float], *, width: int = 120, height: int = 32, scale: int = 2) -> bytes:
    """Bars of ``values`` (oldest left), the last one in the strong colour; ``width``×``height`` is the
    size shown, the image is ``scale`` times larger."""
    from PIL import Image, ImageDraw

    w, h = width * scale, height * scale
    image = Image.new("P", (w, h), 0)
    image.putpalette([*_WHITE, *_PAST, *_NOW, *_BASE])
    draw = ImageDraw.Draw(image)
    pad = 2 * scale
    base = h - pad
    draw.line([(0, base), (w - 1, base)], fill=3, width=scale)
    shown = list(values) or [0.0]
    peak = max(max(shown), 1e-12)
    slot = (w - 2 * pad) / len(shown)
    for i, v in enumerate(shown):
        top = base - (max(v, 0.0) / peak) * (h - 2 * pad - scale)
        x0 = pad + i * slot + slot * 0.15
        x1 = pad + (i + 1) * slot - slot * 0.15
        if base - top >= 1:
            draw.rectangle(
                [round(x0), round(top), round(x1) - 1, base - 1], fill=2 if i == len(shown) - 1 else 1
            )
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True, bits=2)
    return out.getvalue()
