"""Semantic Scholar's Graph API as a :class:`~paperfeed.domain.paper_graph.CitationSource`.

For a list of arXiv papers: one ``POST {api}/paper/batch`` per 500 papers (ids ``arXiv:<id>``; the
answer lists a paper or ``null`` per id, in order), then for each known paper its references
(``GET {api}/paper/{paperId}/references``, all of them) and citations (``…/citations``, up to the
harvest's limit), each paged by ``offset``/``limit`` and the answer's ``next``. Edges carry S2's
``contexts`` (the citing sentences), ``intents`` (background / methodology / result) and
``isInfluential``.

Keys: a work's key is :func:`~paperfeed.domain.paper_graph.work_key` of its ``externalIds.ArXiv``,
``externalIds.DOI`` and ``paperId``; the paper asked about is keyed by its store id. An entry with none of
them (S2's unresolved references: ``paperId: null``, a title parsed from a reference string, often noise
like "References IV") cannot be an edge; it is counted in ``PaperLinks.unkeyed`` and not stored.

Politeness: every request goes through the shared :class:`~.http.PoliteClient` (1 request/s to S2's host
by default: the limit without a key and the rate S2 grants new keys), which retries 429 and 5xx,
honouring ``Retry-After`` or backing off exponentially when it is absent (S2's 429s carry none). The
optional API key travels as ``x-api-key``. HTTP 400 is a :class:`SourceAnswerError` with S2's message
(so is a 404 of the batch endpoint: a wrong base URL); 401/403 a :class:`SourceUnavailable` (the key or the
service refuses us: nothing can be harvested). A 404 on a paper's references or citations ("Paper with id
… not found") means S2 does not know the paper: ``PaperLinks(work=None)``, as the port asks, so one such
paper cannot stop every later harvest at the same place.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from paperfeed.domain.errors import SourceAnswerError, SourceUnavailable
from paperfeed.domain.paper_graph import Citation, PaperLinks, WorkRef, work_key
from paperfeed.domain.wording import count

from .http import PoliteClient
from .scholarly import arxiv_of, as_date, as_int, as_str, json_body, refusal

__all__ = ["S2", "SemanticScholarSource"]

S2 = "s2"
BATCH_MAX = 500  # S2's limit for /paper/batch
PAGE_MAX = 1000  # S2's limit for one /references or /citations page
MAX_PAGES = 100  # bounds a server that keeps answering with a ``next``
_WORK_FIELDS = "paperId,externalIds,title,year,publicationDate,citationCount,referenceCount"
_EDGE_FIELDS = f"contexts,intents,isInfluential,{_WORK_FIELDS}"
_REFUSED = frozenset({400, 401, 403, 404})


class _NotFound(SourceAnswerError):
    """S2 answered 404: on a paper's list, S2 no longer knows the paper the batch lookup found."""


def _work(raw: object, *, key: str | None = None) -> WorkRef | None:
    """A work of S2's paper object; ``None`` when it has no usable id (and no ``key`` is imposed)."""
    if not isinstance(raw, dict):
        return None
    ext = raw.get("externalIds")
    ext = ext if isinstance(ext, dict) else {}
    arxiv = arxiv_of(ext.get("ArXiv"))
    doi = as_str(ext.get("DOI"))
    s2_id = as_str(raw.get("paperId"))
    key = key or work_key(arxiv_id=arxiv, doi=doi, s2_id=s2_id)
    if key is None:
        return None
    return WorkRef(
        key=key,
        title=as_str(raw.get("title")),
        year=as_int(raw.get("year")),
        published=as_date(raw.get("publicationDate")),
        arxiv_id=arxiv,
        doi=doi.lower() if doi else None,
        s2_id=s2_id,
        citation_count=as_int(raw.get("citationCount")),
        reference_count=as_int(raw.get("referenceCount")),
    )


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(dict.fromkeys(s.strip() for s in value if isinstance(s, str) and s.strip()))


@dataclass
class SemanticScholarSource:
    """References and citations of arXiv papers from the Semantic Scholar Graph API."""

    client: PoliteClient
    api_url: str  # PAPERFEED_S2_API_URL
    api_key: str | None  # PAPERFEED_S2_API_KEY
    batch_size: int = BATCH_MAX
    page_size: int = PAGE_MAX

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= BATCH_MAX:
            raise ValueError(f"batch_size must be 1..{BATCH_MAX}, got {self.batch_size}")
        if not 1 <= self.page_size <= PAGE_MAX:
            raise ValueError(f"page_size must be 1..{PAGE_MAX}, got {self.page_size}")

    @property
    def name(self) -> str:
        return S2

    def _call(self, method: str, path: str, params: dict[str, str], payload: object = None) -> Any:
        url = f"{self.api_url.rstrip('/')}{path}"
        headers = {"x-api-key": self.api_key} if self.api_key else None
        response = self.client.request(
            method, url, params, json=payload, ok_statuses=_REFUSED, headers=headers
        )
        status = response.status_code
        if status in (401, 403):
            hint = "check PAPERFEED_S2_API_KEY" if self.api_key else "S2 may be refusing key-less requests"
            raise SourceUnavailable(
                f"Semantic Scholar refused {method} {response.request.url}: HTTP {status} "
                f"({refusal(response)}); {hint}"
            )
        if status in (400, 404):
            error = _NotFound if status == 404 else SourceAnswerError
            raise error(
                f"Semantic Scholar answered HTTP {status} for {method} {response.request.url}: "
                f"{refusal(response)}"
            )
        return json_body(response, "Semantic Scholar")

    def lookup(self, paper_ids: Sequence[str]) -> list[dict[str, Any] | None]:
        """S2's paper object (or ``None``) for each arXiv id, in order: one request per 500 ids."""
        found: list[dict[str, Any] | None] = []
        for first in range(0, len(paper_ids), self.batch_size):
            chunk = paper_ids[first : first + self.batch_size]
            body = self._call(
                "POST", "/paper/batch", {"fields": _WORK_FIELDS}, {"ids": [f"arXiv:{p}" for p in chunk]}
            )
            if not isinstance(body, list) or len(body) != len(chunk):
                what = f"a list of {len(body)}" if isinstance(body, list) else f"a JSON {type(body).__name__}"
                raise SourceAnswerError(
                    f"Semantic Scholar answered {what} for a batch of {count(len(chunk), 'id')} "
                    f"(POST {self.api_url.rstrip('/')}/paper/batch); expected one entry per id"
                )
            found.extend(p if isinstance(p, dict) else None for p in body)
        return found

    def pages(self, path: str, limit: int | None) -> tuple[list[dict[str, Any]], bool]:
        """The items of a paged list (``/references`` or ``/citations``), at most ``limit``; and whether
        that is the whole list."""
        items: list[dict[str, Any]] = []
        offset = 0
        for _ in range(MAX_PAGES):
            want = self.page_size if limit is None else min(self.page_size, limit - len(items))
            if want <= 0:
                return items, False
            params = {"fields": _EDGE_FIELDS, "offset": str(offset), "limit": str(want)}
            body = self._call("GET", path, params)
            data = body.get("data") if isinstance(body, dict) else None
            if not isinstance(data, list):
                raise SourceAnswerError(
                    f"Semantic Scholar answered without a 'data' list for GET {self.api_url.rstrip('/')}"
                    f"{path}?offset={offset}"
                )
            items.extend(d for d in data[:want] if isinstance(d, dict))  # never more than asked
            nxt = as_int(body.get("next"))
            if nxt is None:
                return items, len(data) <= want
            if nxt <= offset:
                raise SourceAnswerError(
                    f"Semantic Scholar's 'next' ({nxt}) does not move past offset {offset} "
                    f"for GET {self.api_url.rstrip('/')}{path}"
                )
            offset = nxt
        return items, False

    def paper_links(self, paper_id: str, paper: dict[str, Any], *, max_citations: int) -> PaperLinks:
        """References and citations of one paper S2 knows (``paper``: its batch entry)."""
        own = _work(paper, key=paper_id)
        assert own is not None  # a key is imposed
        own = replace(own, arxiv_id=paper_id)
        s2_id = own.s2_id
        if s2_id is None:
            return PaperLinks(paper_id, S2, own, works=(own,))
        try:
            refs, refs_complete = self.pages(f"/paper/{s2_id}/references", None)
            if max_citations > 0:
                cites, cites_complete = self.pages(f"/paper/{s2_id}/citations", max_citations)
            else:
                cites, cites_complete = [], own.citation_count == 0
        except _NotFound:  # found by the batch, gone from its lists: S2 does not know it (after all)
            return PaperLinks(paper_id, S2, None)
        works: dict[str, WorkRef] = {paper_id: own}
        edges: dict[tuple[str, str], Citation] = {}
        unkeyed = 0
        for side, items in (("citedPaper", refs), ("citingPaper", cites)):
            for item in items:
                work = _work(item.get(side))
                if work is None:
                    unkeyed += 1
                    continue
                works.setdefault(work.key, work)
                pair = (paper_id, work.key) if side == "citedPaper" else (work.key, paper_id)
                if pair[0] == pair[1]:
                    continue  # a self-citation (S2 lists some): not an edge
                flag = item.get("isInfluential")
                edge = Citation(
                    citing=pair[0],
                    cited=pair[1],
                    source=S2,
                    is_influential=flag if isinstance(flag, bool) else None,
                    contexts=_strings(item.get("contexts")),
                    intents=_strings(item.get("intents")),
                )
                old = edges.get(pair)
                if old is not None:  # the same work listed twice: one edge, everything either said
                    edge = Citation(
                        edge.citing,
                        edge.cited,
                        S2,
                        bool(old.is_influential or edge.is_influential),
                        tuple(dict.fromkeys(old.contexts + edge.contexts)),
                        tuple(dict.fromkeys(old.intents + edge.intents)),
                    )
                edges[pair] = edge
        return PaperLinks(
            paper_id,
            S2,
            own,
            works=tuple(works.values()),
            edges=tuple(edges.values()),
            references_complete=refs_complete,
            citations_complete=cites_complete,
            unkeyed=unkeyed,
        )

    def links(self, paper_ids: Sequence[str], *, max_citations: int) -> Iterator[PaperLinks]:
        """See :class:`~paperfeed.domain.paper_graph.CitationSource`; unknown papers: ``work=None``."""
        ids = list(paper_ids)
        for first in range(0, len(ids), self.batch_size):
            chunk = ids[first : first + self.batch_size]
            for paper_id, paper in zip(chunk, self.lookup(chunk), strict=True):
                if paper is None:
                    yield PaperLinks(paper_id, S2, None)
                else:
                    yield self.paper_links(paper_id, paper, max_citations=max_citations)
