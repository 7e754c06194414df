"""Untrusted paper text → safe HTML: escaping, search-match ``<mark>``s and TeX math as MathML.

Titles and abstracts come from outside (arXiv, Hugging Face, files) and may hold anything: ``<script>``,
entities, stray ``$``. Everything is escaped first; the only markup added is ours: ``<mark>`` around
highlight spans and MathML for ``$…$`` math. The MathML from latex2mathml is re-parsed and rebuilt
through an element/attribute allowlist, so even a converter bug cannot smuggle markup through; TeX it
cannot convert faithfully is shown as its source text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from latex2mathml.converter import convert as _latex_to_mathml
from lxml import etree
from markupsafe import Markup, escape

from paperfeed.domain.search import Span
from paperfeed.domain.tex import Segment, segments

__all__ = ["Segment", "code_spans", "plain_text", "render_text", "segments", "snippet"]

_MATHML_NS = "http://www.w3.org/1998/Math/MathML"

# MathML Core elements (plus menclose, which latex2mathml emits for \boxed) and their harmless attributes.
_ELEMENTS = frozenset(
    [
        "math",
        "mrow",
        "mi",
        "mn",
        "mo",
        "ms",
        "mtext",
        "mspace",
        "msup",
        "msub",
        "msubsup",
        "mfrac",
        "msqrt",
        "mroot",
        "mover",
        "munder",
        "munderover",
        "mtable",
        "mtr",
        "mtd",
        "mstyle",
        "mpadded",
        "mphantom",
        "menclose",
        "semantics",
        "annotation",
        "merror",
    ]
)
_ATTRIBUTES = frozenset(
    [
        "display",
        "mathvariant",
        "stretchy",
        "fence",
        "separator",
        "lspace",
        "rspace",
        "minsize",
        "maxsize",
        "movablelimits",
        "accent",
        "accentunder",
        "linethickness",
        "scriptlevel",
        "displaystyle",
        "columnalign",
        "rowalign",
        "columnspan",
        "rowspan",
        "width",
        "height",
        "depth",
        "form",
        "largeop",
        "symmetric",
        "mathsize",
        "notation",
        "columnlines",
        "rowlines",
        "frame",
        "columnspacing",
        "rowspacing",
        "voffset",
    ]
)
_SAFE_VALUE = re.compile(r"[A-Za-z0-9 .%#+\-]{0,40}")


def _clean(node: etree._Element) -> etree._Element | None:
    """A copy of ``node`` with only allowlisted MathML, or None when anything else is inside."""
    if not isinstance(node.tag, str):
        return None
    local = etree.QName(node).localname
    if local not in _ELEMENTS or etree.QName(node).namespace not in (None, _MATHML_NS):
        return None
    text = node.text or ""
    if local in ("mi", "mo", "mtext") and text.startswith("\\") and len(text) > 1:
        return None  # a command the converter did not know, e.g. \foo: show the source instead
    copy = etree.Element(local)
    for name, value in node.attrib.items():
        key, text_value = str(name), str(value)
        if key in _ATTRIBUTES and _SAFE_VALUE.fullmatch(text_value):
            copy.set(key, text_value)
    copy.text = node.text
    for child in node:
        cleaned = _clean(child)
        if cleaned is None:
            return None
        copy.append(cleaned)
        cleaned.tail = child.tail
    return copy


@lru_cache(maxsize=4096)
def _mathml(tex: str, display: bool) -> tuple[str, str] | None:
    """(MathML markup, readable plain text) for ``tex``, or None when it cannot be converted cleanly."""
    try:
        raw = _latex_to_mathml(tex, display="block" if display else "inline")
        root = etree.fromstring(raw.encode(), parser=etree.XMLParser(resolve_entities=False, no_network=True))
    except Exception:  # latex2mathml raises many error types for malformed TeX: all mean "show source"
        return None
    clean = _clean(root)
    if clean is None or not _has_content(clean):
        return None
    clean.set("alttext", tex)
    return etree.tostring(clean, encoding="unicode", method="html"), _readable(clean)


def _has_content(node: etree._Element) -> bool:
    return bool("".join(str(t) for t in node.itertext()).strip())


def _readable(node: etree._Element) -> str:
    """Plain text for a MathML tree: x^2 stays ``x^2``, fractions read ``a/b``."""
    local = etree.QName(node).localname
    parts = [_readable(child) for child in node]
    if local in ("msup", "msub") and len(parts) == 2:
        op = "^" if local == "msup" else "_"
        return f"{parts[0]}{op}{parts[1]}"
    if local == "msubsup" and len(parts) == 3:
        return f"{parts[0]}_{parts[1]}^{parts[2]}"
    if local == "mfrac" and len(parts) == 2:
        return f"{parts[0]}/{parts[1]}"
    if local == "msqrt":
        return f"√({''.join(parts)})"
    return (node.text or "") + "".join(parts)


def _marked(text: str, offset: int, spans: Sequence[Span]) -> str:
    """Escape ``text`` (which starts at ``offset`` in its field) with spans wrapped in ``<mark>``."""
    out: list[str] = []
    pos = 0
    end_of = len(text)
    for span in spans:
        start = max(span.start - offset, pos)
        stop = min(span.end - offset, end_of)
        if stop <= start:
            continue
        out.append(str(escape(text[pos:start])))
        out.append(f"<mark>{escape(text[start:stop])}</mark>")
        pos = stop
    out.append(str(escape(text[pos:])))
    return "".join(out)


def _normal_spans(spans: Sequence[Span], length: int) -> list[Span]:
    """Spans sorted, clipped to the text and merged where they overlap; bad ones dropped."""
    good = sorted(
        (Span(max(0, s.start), min(length, s.end)) for s in spans if s.end > s.start),
        key=lambda s: (s.start, s.end),
    )
    merged: list[Span] = []
    for span in good:
        if span.end <= span.start:
            continue
        if merged and span.start <= merged[-1].end:
            last = merged.pop()
            merged.append(Span(last.start, max(last.end, span.end)))
        else:
            merged.append(span)
    return merged


def render_text(text: str, spans: Sequence[Span] = (), *, math: bool = True) -> Markup:
    """Safe HTML for a title or abstract: escaped, spans in ``<mark>``, ``$…$`` as MathML."""
    spans = _normal_spans(spans, len(text))
    parts: list[str] = []
    for seg in segments(text) if math else [Segment(0, len(text), text)]:
        inside = [s for s in spans if s.start < seg.end and s.end > seg.start]
        if seg.tex is None:
            parts.append(_marked(seg.text, seg.start, inside))
            continue
        converted = _mathml(seg.tex, seg.display)
        html = (
            f'<span class="math">{converted[0]}</span>'
            if converted
            else f'<span class="tex">{escape(seg.text)}</span>'
        )
        parts.append(f"<mark>{html}</mark>" if inside else html)
    return Markup("".join(parts))


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def code_spans(text: object) -> Markup:
    """A service's note or message as a page shows it: escaped text whose `backticked` parts (commands,
    settings: ``run `paperfeed index` ``) are ``<code>``, instead of raw backticks (#40 item 8)."""
    return Markup(_CODE_SPAN.sub(r"<code>\1</code>", str(escape(str(text)))))


def plain_text(text: str) -> str:
    """Text for ``<title>``, meta tags and feeds: math read out (``$\\times$`` → ×), no markup."""
    out: list[str] = []
    for seg in segments(text):
        converted = _mathml(seg.tex, False) if seg.tex is not None else None
        out.append(converted[1] if converted else seg.text)
    return "".join(out)


def snippet(text: str, spans: Sequence[Span] = (), *, width: int = 320) -> tuple[str, tuple[Span, ...]]:
    """A window of about ``width`` characters around the first highlight, never cutting math or words.

    Returns the window's text (with "…" where it was cut) and the spans moved into its coordinates.
    """
    if len(text) <= width:
        return text, tuple(spans)
    spans = _normal_spans(spans, len(text))
    first = spans[0].start if spans else 0
    start = max(0, min(first - width // 4, len(text) - width))
    stop = min(len(text), start + width)
    if start > 0:  # back to the start of the word
        start = text.rfind(" ", 0, start) + 1
    if stop < len(text):  # on to the end of the word
        space = text.find(" ", stop)
        stop = len(text) if space < 0 else space
    for seg in segments(text):  # never cut a math run
        if seg.tex is not None and seg.start < start < seg.end:
            start = seg.start
        if seg.tex is not None and seg.start < stop < seg.end:
            stop = seg.end
    prefix = "… " if start > 0 else ""
    suffix = " …" if stop < len(text) else ""
    shift = len(prefix) - start
    moved = tuple(
        Span(max(s.start, start) + shift, min(s.end, stop) + shift)
        for s in spans
        if s.end > start and s.start < stop
    )
    return f"{prefix}{text[start:stop]}{suffix}", moved
