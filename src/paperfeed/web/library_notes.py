"""Private notes: Markdown rendered by markdown-it-py, then sanitised by nh3 (ammonia).

Two layers, so one bug is not enough: markdown-it runs with raw HTML off (``<script>`` in a note becomes
text) and refuses ``javascript:``-style links; nh3 then keeps only an allowlist of tags and attributes,
absolute ``http``/``https``/``mailto`` link targets (relative ones are dropped, as in comments), and adds
``rel="nofollow noopener noreferrer"`` to links. Images are not allowed (a note must not make the
reader's browser fetch other sites).
"""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

from .comment_markup import only_absolute_links

__all__ = ["render_note"]

_TAGS = {
    "p", "br", "hr", "em", "strong", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}
_SCHEMES = {"http", "https", "mailto"}


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
        ["table", "strikethrough"]
    )


def render_note(source: str) -> Markup:
    """Safe HTML for a note's Markdown ``source``."""
    html = _markdown().render(source)
    clean = nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_SCHEMES,
        attribute_filter=only_absolute_links,
        link_rel="nofollow noopener noreferrer",
        strip_comments=True,
    )
    return Markup(clean)
