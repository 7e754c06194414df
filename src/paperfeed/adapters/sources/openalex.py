"""OpenAlex as a :class:`~paperfeed.domain.paper_graph.CitationSource`.

For a list of arXiv papers: ``GET {api}/works?filter=doi:10.48550/arxiv.A|10.48550/arxiv.B…`` (50 papers
a request; arXiv's DataCite DOIs are how OpenAlex names arXiv preprints) finds the works and their
``referenced_works`` (OpenAlex ids), which are resolved to titles, dates and DOIs 50 at a time with
``filter=openalex:W1|W2…``; a referenced id OpenAlex does not resolve is still an edge, keyed
``openalex:W…``. Citations come from ``filter=cites:W…`` with cursor paging (``cursor=*``, then each
answer's ``meta.next_cursor`` until a page is empty or the cursor is null), up to the harvest's limit.
A citing work is kept only when its own ``referenced_works`` lists the paper (``cites:`` is defined by
that list, so this guards against an answer meant for another filter).

Keys: :func:`~paperfeed.domain.paper_graph.work_key` of the arXiv id (from an arXiv DOI or an
``arxiv.org/abs`` location), the DOI and the OpenAlex id. OpenAlex has no contexts, intents or
influence flags.

Politeness: the shared :class:`~.http.PoliteClient` (spacing, retries on 429/5xx with ``Retry-After``);
``mailto`` joins OpenAlex's polite pool, ``api_key`` is sent when configured. 400 is a
:class:`SourceAnswerError` with OpenAlex's message, 401/403 a :class:`SourceUnavailable` (the key), and
a 404 (OpenAlex sends an HTML page for an unknown path) a :class:`SourceAnswerError` naming the URL.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from paperfeed.domain.errors import SourceAnswerError, SourceUnavailable
from paperfeed.domain.paper_graph import Citation, PaperLinks, WorkRef, work_key

from .http import PoliteClient
from .scholarly import arxiv_of, as_date, as_int, as_str, json_body, refusal

__all__ = ["OPENALEX", "OpenAlexSource"]

OPENALEX = "openalex"
FILTER_MAX = 50  # ids OR-ed in one filter (OpenAlex allows 100; 50 keeps URLs short)
PAGE_MAX = 200  # OpenAlex's largest per-page
MAX_PAGES = 100
_SELECT = (
    "id,doi,ids,title,display_name,publication_year,publication_date,cited_by_count,"
    "referenced_works_count,referenced_works,locations"
)
_REFUSED = frozenset({400, 401, 403, 404})


def _wid(value: object) -> str | None:
    """``W123`` of an OpenAlex id or URL."""
    text = as_str(value)
    if text is None:
        return None
    w = text.rsplit("/", 1)[-1]
    return w if w[:1] == "W" and w[1:].isdigit() else None


def _arxiv(raw: dict[str, Any]) -> str | None:
    doi = as_str(raw.get("doi")) or ""
    tail = doi.lower().removeprefix("https://doi.org/")
    if tail.startswith("10.48550/arxiv."):
        found = arxiv_of(tail.removeprefix("10.48550/arxiv."))
        if found:
            return found
    locations = raw.get("locations")
    for loc in locations if isinstance(locations, list) else ():
        if isinstance(loc, dict):
            found = arxiv_of(loc.get("landing_page_url"))
            if found:
                return found
    return None


def _work(raw: object) -> WorkRef | None:
    if not isinstance(raw, dict):
        return None
    arxiv = _arxiv(raw)
    doi = as_str(raw.get("doi"))
    doi = doi.lower().removeprefix("https://doi.org/") if doi else None
    wid = _wid(raw.get("id"))
    key = work_key(arxiv_id=arxiv, doi=doi, openalex_id=wid)
    if key is None:
        return None
    refs = raw.get("referenced_works")
    return WorkRef(
        key=key,
        title=as_str(raw.get("title")) or as_str(raw.get("display_name")),
        year=as_int(raw.get("publication_year")),
        published=as_date(raw.get("publication_date")),
        arxiv_id=arxiv,
        doi=doi,
        openalex_id=wid,
        citation_count=as_int(raw.get("cited_by_count")),
        reference_count=as_int(raw.get("referenced_works_count"))
        if "referenced_works_count" in raw
        else (len(refs) if isinstance(refs, list) else None),
    )


def _referenced(raw: dict[str, Any]) -> list[str]:
    refs = raw.get("referenced_works")
    ids = (_wid(r) for r in refs) if isinstance(refs, list) else ()
    return list(dict.fromkeys(w for w in ids if w))


@dataclass
class OpenAlexSource:
    """References and citations of arXiv papers from OpenAlex."""

    client: PoliteClient
    api_url: str  # PAPERFEED_OPENALEX_API_URL
    mailto: str | None  # PAPERFEED_OPENALEX_MAILTO, else PAPERFEED_CONTACT_EMAIL
    api_key: str | None  # PAPERFEED_OPENALEX_API_KEY
    filter_size: int = FILTER_MAX
    page_size: int = PAGE_MAX

    def __post_init__(self) -> None:
        if not 1 <= self.filter_size <= 100:
            raise ValueError(f"filter_size must be 1..100, got {self.filter_size}")
        if not 1 <= self.page_size <= PAGE_MAX:
            raise ValueError(f"page_size must be 1..{PAGE_MAX}, got {self.page_size}")

    @property
    def name(self) -> str:
        return OPENALEX

    def _get(self, params: dict[str, str]) -> dict[str, Any]:
        url = f"{self.api_url.rstrip('/')}/works"
        params = dict(params)
        if self.mailto:
            params["mailto"] = self.mailto
        if self.api_key:
            params["api_key"] = self.api_key
        response = self.client.get(url, params, ok_statuses=_REFUSED)
        status = response.status_code
        where = response.request.url
        if status in (401, 403):
            raise SourceUnavailable(
                f"OpenAlex refused GET {where}: HTTP {status} ({refusal(response)}); "
                "check PAPERFEED_OPENALEX_API_KEY"
            )
        if status in (400, 404):
            hint = "; check PAPERFEED_OPENALEX_API_URL" if status == 404 else ""
            raise SourceAnswerError(
                f"OpenAlex answered HTTP {status} for GET {where}: {refusal(response)}{hint}"
            )
        body = json_body(response, "OpenAlex")
        if not isinstance(body, dict) or not isinstance(body.get("results"), list):
            raise SourceAnswerError(f"OpenAlex answered without a 'results' list for GET {where}")
        return body

    def works(self, filter_: str, *, limit: int | None = None) -> tuple[list[dict[str, Any]], bool]:
        """Works matching ``filter_``, cursor-paged, at most ``limit``; and whether that is all of them."""
        items: list[dict[str, Any]] = []
        cursor = "*"
        for _ in range(MAX_PAGES):
            want = self.page_size if limit is None else min(self.page_size, limit - len(items))
            if want <= 0:
                return items, False
            body = self._get({"filter": filter_, "select": _SELECT, "per-page": str(want), "cursor": cursor})
            results = [r for r in body["results"] if isinstance(r, dict)]
            items.extend(results[:want])
            meta = body.get("meta")
            nxt = as_str(meta.get("next_cursor")) if isinstance(meta, dict) else None
            if not results or nxt is None:
                return items, len(results) <= want
            if nxt == cursor:
                raise SourceAnswerError(f"OpenAlex repeats cursor {cursor!r} for filter {filter_!r}")
            cursor = nxt
        return items, False

    def resolve(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """OpenAlex's work objects for the ids ``W…`` it knows, 50 ids a request."""
        found: dict[str, dict[str, Any]] = {}
        for first in range(0, len(ids), self.filter_size):
            chunk = ids[first : first + self.filter_size]
            results, _ = self.works("openalex:" + "|".join(chunk))
            for raw in results:
                wid = _wid(raw.get("id"))
                if wid is not None and wid in chunk:
                    found[wid] = raw
        return found

    def paper_links(self, paper_id: str, raw: dict[str, Any], *, max_citations: int) -> PaperLinks:
        found = _work(raw)
        assert found is not None
        own = WorkRef(
            key=paper_id,
            title=found.title,
            year=found.year,
            published=found.published,
            arxiv_id=paper_id,
            doi=found.doi,
            openalex_id=found.openalex_id,
            citation_count=found.citation_count,
            reference_count=found.reference_count,
        )
        wid = own.openalex_id
        works: dict[str, WorkRef] = {paper_id: own}
        edges: dict[tuple[str, str], Citation] = {}
        refs = _referenced(raw)
        resolved = self.resolve(refs)
        for ref in refs:
            work = _work(resolved.get(ref)) or WorkRef(key=f"openalex:{ref}", openalex_id=ref)
            works.setdefault(work.key, work)
            if work.key != paper_id:
                edges[(paper_id, work.key)] = Citation(paper_id, work.key, OPENALEX)
        complete = True
        if wid is not None and max_citations > 0:
            citing, complete = self.works(f"cites:{wid}", limit=max_citations)
            for item in citing:
                citer = _work(item)
                if citer is None or wid not in _referenced(item) or citer.key == paper_id:
                    continue
                works.setdefault(citer.key, citer)
                edges[(citer.key, paper_id)] = Citation(citer.key, paper_id, OPENALEX)
        elif max_citations <= 0:
            complete = own.citation_count == 0
        return PaperLinks(
            paper_id,
            OPENALEX,
            own,
            works=tuple(works.values()),
            edges=tuple(edges.values()),
            citations_complete=complete,
        )

    def links(self, paper_ids: Sequence[str], *, max_citations: int) -> Iterator[PaperLinks]:
        """See :class:`~paperfeed.domain.paper_graph.CitationSource`; unknown papers: ``work=None``."""
        ids = list(paper_ids)
        for first in range(0, len(ids), self.filter_size):
            chunk = ids[first : first + self.filter_size]
            results, _ = self.works("doi:" + "|".join(f"10.48550/arxiv.{p}" for p in chunk))
            by_arxiv: dict[str, dict[str, Any]] = {}
            for raw in results:
                arxiv = _arxiv(raw)
                if arxiv is not None:
                    by_arxiv.setdefault(arxiv, raw)
            for paper_id in chunk:
                hit = by_arxiv.get(paper_id)
                if hit is None:
                    yield PaperLinks(paper_id, OPENALEX, None)
                else:
                    yield self.paper_links(paper_id, hit, max_citations=max_citations)
