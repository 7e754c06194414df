"""Where a field's text holds TeX math: ``$…$`` and ``$$…$$`` runs, split out by Pandoc's rules.

Pure text work, shared by the pages (which render the math as MathML) and BibTeX (which keeps it as
TeX and escapes only the prose around it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Segment", "segments"]

_MAX_MATH = 400  # longer "$…$" runs are almost certainly two prices or stray dollars, not math
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of a field's text: ``tex`` is set for a math run (``text`` keeps its ``$`` delimiters)."""

    start: int
    end: int
    text: str
    tex: str | None = None
    display: bool = False


def _closing(text: str, start: int, delim: str) -> int:
    """Index of the ``delim`` closing math opened at ``start``, or -1 when this is no math.

    Pandoc's rules, made stricter: the opener has a non-space on its right; the *next* unescaped
    ``delim`` must close it, with a non-space on its left and no digit on its right. So in "costs $5
    and $10" neither dollar opens math, and a stray ``$`` never swallows the text up to a later one.
    """
    inner = start + len(delim)
    if inner >= len(text) or text[inner].isspace():
        return -1
    i = inner
    while True:
        i = text.find(delim, i)
        if i < 0 or i - inner > _MAX_MATH:
            return -1
        if text[i - 1] == "\\":  # an escaped \$ inside math
            i += 1
            continue
        after = i + len(delim)
        if i == inner or text[i - 1].isspace() or (after < len(text) and text[after].isdigit()):
            return -1
        if _HTML_TAG.search(text, inner, i):
            return -1  # "$<b>…</b>$" is markup someone pasted, not TeX: show it as text
        return i


def segments(text: str) -> list[Segment]:
    """Split ``text`` into plain and ``$…$`` / ``$$…$$`` math runs; unbalanced ``$`` stays plain."""
    out: list[Segment] = []
    plain_from = 0
    n = len(text)
    i = text.find("$")  # jump from dollar to dollar: most titles and abstracts have none (pages call this
    while i >= 0:  # a few times for each card, and a loop over every character was a tenth of a search page)
        if i > 0 and text[i - 1] == "\\":
            i = text.find("$", i + 1)
            continue
        delim = "$$" if text.startswith("$$", i) else "$"
        end = _closing(text, i, delim)
        if end < 0:
            i = text.find("$", i + len(delim))
            continue
        if plain_from < i:
            out.append(Segment(plain_from, i, text[plain_from:i]))
        stop = end + len(delim)
        out.append(Segment(i, stop, text[i:stop], text[i + len(delim) : end], delim == "$$"))
        plain_from = stop
        i = text.find("$", stop)
    if plain_from < n:
        out.append(Segment(plain_from, n, text[plain_from:]))
    return out
