"""Comments are Markdown, shown to everyone: rendered by markdown-it-py, then sanitised by nh3 (ammonia).

Two layers, so that one bug is not enough for a comment to run script in a reader's browser:

1. markdown-it runs with raw HTML off (``<script>``, ``<img onerror=…>`` in a comment become visible
   text) and refuses ``javascript:``, ``vbscript:``, ``file:`` and ``data:`` link targets;
2. nh3 keeps only an allowlist of tags and attributes, URLs with ``http``, ``https`` or ``mailto`` only,
   drops comments, and gives every link ``rel="nofollow noopener ugc"`` (user-generated content: search
   engines are told not to trust it; a new tab gets no handle on this page). Relative link targets are
   dropped too: a comment cannot dress up a link to one of this site's own pages.

Images are not allowed: a comment must not make every reader's browser fetch another site.

Rendering is slow (markdown-it is pure Python: about 0.1–0.6 s for a 10,000-character comment), so pages
and the API render through :class:`CommentRenderer`, a bounded LRU keyed by a hash of the source that
the web app makes once per process (``create_app``). A text is rendered once, when it is
posted or edited, and again only after the cache evicted it. A cache rather than stored HTML: no
migration or backfill, and a change of the sanitiser rules applies to every comment at the next start.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

__all__ = ["LINK_REL", "CommentRenderer", "only_absolute_links", "render_comment"]

LINK_REL = "nofollow noopener ugc"
_TAGS = {
    "p", "br", "hr", "em", "strong", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a",
    "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}
_SCHEMES = {"http", "https", "mailto"}
_ABSOLUTE = ("http://", "https://", "mailto:")


def only_absolute_links(tag: str, attribute: str, value: str) -> str | None:
    """nh3 attribute filter: drop link targets that are not absolute http(s)/mailto URLs.

    nh3's ``url_schemes`` alone lets relative targets through (``/admin``, ``//other.host/``).
    """
    if tag == "a" and attribute == "href" and not value.lower().startswith(_ABSOLUTE):
        return None
    return value


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")  # ![x](http://tracker/) would otherwise become an <img> before nh3 drops it
    return md


def render_comment(source: str) -> Markup:
    """Safe HTML for a comment's Markdown ``source``."""
    html = _markdown().render(source)
    # Headings are demoted (a comment's "# Title" must not outrank the page's own headings).
    for level in (1, 2):
        html = html.replace(f"<h{level}>", "<h3>").replace(f"</h{level}>", "</h3>")
    clean = nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_SCHEMES,
        attribute_filter=only_absolute_links,
        link_rel=LINK_REL,
        strip_comments=True,
    )
    return Markup(clean)


class CommentRenderer:
    """``render`` behind a thread-safe LRU of at most ``max_entries`` texts and ``max_chars`` of HTML.

    Keys are BLAKE2b digests of the source, so the cache holds no comment text twice and a lookup costs
    one hash of at most a comment's length.
    """

    def __init__(
        self,
        render: Callable[[str], Markup] = render_comment,
        *,
        max_entries: int = 4096,
        max_chars: int = 32_000_000,
    ) -> None:
        self._render = render
        self._max_entries = max_entries
        self._max_chars = max_chars
        self._chars = 0
        self._cache: OrderedDict[bytes, Markup] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cache)

    def __call__(self, source: str) -> Markup:
        key = hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=20).digest()
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
        html = self._render(source)  # outside the lock: other requests are not held up
        with self._lock:
            if key not in self._cache:
                self._cache[key] = html
                self._chars += len(html)
            while self._cache and (len(self._cache) > self._max_entries or self._chars > self._max_chars):
                _, evicted = self._cache.popitem(last=False)
                self._chars -= len(evicted)
        return html
