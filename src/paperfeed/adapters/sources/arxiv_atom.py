"""Parsing arXiv API responses (Atom 1.0) into papers: pure, bytes in, papers and rejects out.

Handles both the classic feed (to 2024: opensearch elements declaring their own namespace,
``primary_category`` with a ``scheme``) and the 2025+ one (https feed ids, ``<arxiv:doi>`` next to a
``<link rel="related" title="doi">``). arXiv reports a bad request as a feed whose single entry has an
``.../api/errors#...`` id; that becomes :class:`ArxivApiError`, never a paper.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lxml import etree

from paperfeed.domain.errors import ArxivApiError, MalformedFeed
from paperfeed.domain.ids import InvalidPaperId, parse_arxiv_id
from paperfeed.domain.ingest import Reject
from paperfeed.domain.models import Paper
from paperfeed.domain.validation import InvalidRecord, build_paper

__all__ = [
    "SOURCE_NAME",
    "FeedPage",
    "parse_feed",
]

SOURCE_NAME = "arxiv-api"

_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"
# arXiv category codes (cs.AI, cond-mat.stat-mech, astro-ph, math-ph). The API also lists MSC and ACM
# classes ("14C20, 14M99", "I.2.7") as <category>; those are not categories and are dropped.
_ARXIV_CATEGORY = re.compile(r"[a-z]+(?:-[a-z]+)*(?:\.[A-Za-z]+(?:-[A-Za-z]+)*)?")
_DOI_URL = re.compile(r"^https?://(?:dx\.)?doi\.org/", re.IGNORECASE)
# One parser for every call: no DTDs, no entity expansion, no network access (untrusted input).
_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, remove_comments=True, huge_tree=False
)


@dataclass(slots=True)
class FeedPage:
    """One parsed response: its papers, the entries rejected, and the opensearch paging figures."""

    papers: list[Paper] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    total_results: int | None = None
    start_index: int | None = None
    items_per_page: int | None = None
    entries: int = 0  # <entry> elements seen, placeholders included
    placeholders: int = 0  # empty entries the old API sent for ids it did not have
    entry_ids: list[str] = field(default_factory=list)  # version-less ids of every readable entry


def _text(element: etree._Element | None) -> str | None:
    if element is None:
        return None
    text = "".join(t for t in element.itertext() if isinstance(t, str)).strip()
    return text or None


def _feed_int(feed: etree._Element, name: str, where: str) -> int | None:
    # Matched by local name: opensearch 1.1 and the older opensearchrss 1.0 namespace alike.
    text = _text(feed.find(f"{{*}}{name}"))
    if text is None:
        return None
    if not text.isdigit():
        raise MalformedFeed(f"{where}: opensearch:{name} is not a number: {text[:40]!r}")
    return int(text)


def _categories(entry: etree._Element) -> list[str]:
    primary = entry.find(f"{_ARXIV}primary_category")
    terms: list[str] = []
    if primary is not None and primary.get("term", "").strip():
        terms.append(primary.get("term", "").strip())
    for cat in entry.iterfind(f"{_ATOM}category"):
        term = cat.get("term", "").strip()
        if _ARXIV_CATEGORY.fullmatch(term) and term not in terms:
            terms.append(term)
    return terms


def _doi(entry: etree._Element) -> str | None:
    doi = _text(entry.find(f"{_ARXIV}doi"))
    if doi:
        return doi
    for link in entry.iterfind(f"{_ATOM}link"):
        if link.get("title") == "doi" and link.get("href"):
            return _DOI_URL.sub("", link.get("href", "").strip()) or None
    return None


def _license(entry: etree._Element) -> str | None:
    text = _text(entry.find(f"{_ARXIV}license"))
    if text:
        return text
    for link in entry.iterfind(f"{_ATOM}link"):
        if link.get("rel") == "license" and link.get("href"):
            return link.get("href", "").strip() or None
    return None


def entry_fields(entry: etree._Element) -> dict[str, Any]:
    """Raw :func:`~paperfeed.domain.validation.build_paper` fields of one ``<entry>``."""
    return {
        "id": _text(entry.find(f"{_ATOM}id")),
        "title": _text(entry.find(f"{_ATOM}title")),
        "abstract": _text(entry.find(f"{_ATOM}summary")),
        "authors": [_text(a.find(f"{_ATOM}name")) or "" for a in entry.iterfind(f"{_ATOM}author")],
        "categories": _categories(entry),
        "published": _text(entry.find(f"{_ATOM}published")),
        "updated": _text(entry.find(f"{_ATOM}updated")),
        "comment": _text(entry.find(f"{_ARXIV}comment")),
        "journal_ref": _text(entry.find(f"{_ARXIV}journal_ref")),
        "doi": _doi(entry),
        "license": _license(entry),
    }


def _is_error(entry_id: str | None) -> bool:
    return entry_id is not None and "/api/errors" in entry_id


def _is_placeholder(fields: dict[str, Any]) -> bool:
    """The old API answered an unknown id with an entry carrying no title and no abstract."""
    return not fields["title"] and not fields["abstract"]


def parse_feed(
    data: bytes, *, seen_at: datetime, source: str = SOURCE_NAME, where: str = "arXiv API response"
) -> FeedPage:
    """Parse one arXiv API response body.

    Raises :class:`ArxivApiError` for arXiv's error feed and :class:`MalformedFeed` for anything that is
    not an Atom feed; a bad entry becomes a :class:`Reject` naming the entry id and field, and the rest
    of the feed is still read. ``where`` names the response in error messages.
    """
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise MalformedFeed(f"{where}: not well-formed XML ({exc})") from None
    if root is None:
        raise MalformedFeed(f"{where}: empty response")
    if root.tag != f"{_ATOM}feed":
        tag = etree.QName(root).localname if isinstance(root.tag, str) else str(root.tag)
        raise MalformedFeed(f"{where}: not an Atom feed (root element <{tag}>)")
    entries = root.findall(f"{_ATOM}entry")
    for entry in entries:
        entry_id = _text(entry.find(f"{_ATOM}id"))
        if _is_error(entry_id):
            message = _text(entry.find(f"{_ATOM}summary")) or _text(entry.find(f"{_ATOM}title")) or "error"
            raise ArxivApiError(message, entry_id)
    page = FeedPage(
        total_results=_feed_int(root, "totalResults", where),
        start_index=_feed_int(root, "startIndex", where),
        items_per_page=_feed_int(root, "itemsPerPage", where),
        entries=len(entries),
    )
    for index, entry in enumerate(entries, 1):
        fields = entry_fields(entry)
        raw_id = fields["id"]
        label = raw_id or f"{where}: entry {index} (no id)"
        if _is_placeholder(fields):
            page.placeholders += 1
            continue
        if raw_id:
            with contextlib.suppress(InvalidPaperId):  # build_paper below rejects it, saying why
                page.entry_ids.append(parse_arxiv_id(raw_id).base)
        try:
            page.papers.append(build_paper(fields, source=source, seen_at=seen_at))
        except InvalidRecord as exc:
            page.rejects.append(Reject(label, exc.reason, exc.field))
    return page
