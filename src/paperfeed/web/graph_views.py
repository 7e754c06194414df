"""The paper graph as the surfaces show it: where an entry links, its labels, and the JSON item shape.

One place decides how a work is linked, so the page, the API and the Markdown agree: a paper of this
instance links inside paperfeed; any other work to arXiv, else its DOI, else Semantic Scholar, else
OpenAlex (the first id it has), or nowhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from paperfeed.domain.links import arxiv_of, external_link
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import GraphRow, WorkRef
from paperfeed.domain.related_work import RelatedEntry
from paperfeed.services.paper_graph import GraphEntry

from .hf_json import daily_item, hf_time
from .views import clip, count_label, paper_url

__all__ = [
    "GraphEntryView",
    "RelatedEntryView",
    "entry_view",
    "external_link",
    "graph_item",
    "related_item",
    "related_view",
]

CONTEXT_CHARS = 280


@dataclass(frozen=True, slots=True)
class GraphEntryView:
    """One line of a References / Cited by / Related work list."""

    title: str
    url: str | None
    internal: bool  # links inside paperfeed
    site: str | None  # where an external link goes ("arXiv", "DOI", …)
    authors: tuple[str, ...]
    year: int | None
    citations_label: str | None
    influential: bool
    context: str | None
    intents: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RelatedEntryView:
    entry: GraphEntryView
    reason: str


def _year(work: WorkRef, paper: Paper | None) -> int | None:
    if paper is not None and paper.published is not None:
        return paper.published.year
    if work.published is not None:
        return work.published.year
    return work.year


def _view(
    work: WorkRef,
    paper: Paper | None,
    citations: int | None,
    influential: bool | None = None,
    contexts: tuple[str, ...] = (),
    intents: tuple[str, ...] = (),
) -> GraphEntryView:
    if paper is not None:
        url: str | None = paper_url(paper.id)
        site: str | None = None
        title = paper.title
    else:
        link = external_link(work)
        url, site = link if link else (None, None)
        title = work.title or work.key
    label = None
    if citations:
        label = f"cited by {count_label(citations)}"
    return GraphEntryView(
        title=clip(title, 300),
        url=url,
        internal=paper is not None,
        site=site,
        authors=paper.authors if paper is not None else (),
        year=_year(work, paper),
        citations_label=label,
        influential=bool(influential),
        context=clip(contexts[0], CONTEXT_CHARS) if contexts else None,
        intents=intents,
    )


def entry_view(entry: GraphEntry) -> GraphEntryView:
    row = entry.row
    return _view(row.work, entry.paper, row.citation_count, row.is_influential, row.contexts, row.intents)


def related_view(entry: RelatedEntry, paper: Paper | None) -> RelatedEntryView:
    return RelatedEntryView(_view(entry.work, paper, entry.work.citation_count), entry.reason)


# -- JSON ------------------------------------------------------------------------------------------------


def _work_object(work: WorkRef, in_instance: bool) -> dict[str, Any]:
    """The minimal shape of a work (every item carries it; works outside the store have only this)."""
    ids = {
        "arXiv": arxiv_of(work),
        "DOI": work.doi or (work.key[4:] if work.key.startswith("doi:") else None),
        "S2": work.s2_id,
        "OpenAlex": work.openalex_id,
    }
    link = external_link(work)
    out: dict[str, Any] = {
        "key": work.key,
        "title": work.title,
        "year": work.year if work.year is not None else (work.published.year if work.published else None),
        "externalIds": {name: value for name, value in ids.items() if value},
        "url": link[0] if link else None,
        "inInstance": in_instance,
    }
    if work.published is not None:
        out["publishedAt"] = hf_time(work.published)
    return out


def _with_paper(work: WorkRef, paper: Paper | None) -> dict[str, Any]:
    """A paper of the store in HF's daily-item shape plus the work fields; any other work minimal."""
    base = _work_object(work, paper is not None)
    if paper is None:
        return base
    item = daily_item(paper)
    for name in ("key", "year", "externalIds", "inInstance"):
        item[name] = base[name]
    item["url"] = base["url"]
    return item


def graph_item(row: GraphRow, paper: Paper | None) -> dict[str, Any]:
    """One entry of ``/api/papers/{id}/references`` or ``/citations``."""
    item = _with_paper(row.work, paper)
    item["citationCount"] = row.citation_count
    item["isInfluential"] = row.is_influential
    item["contexts"] = list(row.contexts)
    item["intents"] = list(row.intents)
    item["sources"] = list(row.sources)
    return item


def related_item(entry: RelatedEntry, paper: Paper | None) -> dict[str, Any]:
    """One entry of ``/api/papers/{id}/related``: the work, why it is related, and the numbers."""
    item = _with_paper(entry.work, paper)
    item["reason"] = entry.reason
    item["score"] = entry.score
    numbers: Mapping[str, int | bool] = {
        "sharedReferences": entry.shared_references,
        "coCitedWithReferences": entry.co_cited_with_references,
        "coCitations": entry.co_citations,
        "citesPaper": entry.cites_paper,
    }
    item.update(numbers)
    return item
