"""Where a paper lives: its path on this site, and a work's page outside it. Pages, the API's Markdown,
MCP and mail all link papers the same way."""

from __future__ import annotations

from urllib.parse import quote

from .ids import InvalidPaperId, parse_arxiv_id
from .paper_graph import WorkRef

__all__ = ["arxiv_of", "external_link", "paper_url"]


def paper_url(paper_id: str) -> str:
    """Site path of a paper page; old-style ids keep their slash (``/papers/hep-th/9901001``)."""
    return "/papers/" + quote(paper_id, safe="/:")


def arxiv_of(work: WorkRef) -> str | None:
    """The work's arXiv id (version-less), when it has one."""
    for candidate in (work.arxiv_id, work.key):
        if candidate:
            try:
                return parse_arxiv_id(candidate).base
            except InvalidPaperId:
                continue
    return None


def external_link(work: WorkRef) -> tuple[str, str] | None:
    """(URL, site name) of a work outside this instance, from the best id it has."""
    arxiv = arxiv_of(work)
    if arxiv:
        return f"https://arxiv.org/abs/{arxiv}", "arXiv"
    doi = work.doi or (work.key[4:] if work.key.startswith("doi:") else None)
    if doi:
        return "https://doi.org/" + quote(doi, safe="/"), "DOI"
    s2 = work.s2_id or (work.key[3:] if work.key.startswith("s2:") else None)
    if s2:
        return "https://www.semanticscholar.org/paper/" + quote(s2, safe=""), "Semantic Scholar"
    openalex = work.openalex_id or (work.key[9:] if work.key.startswith("openalex:") else None)
    if openalex:
        return "https://openalex.org/" + quote(openalex.rsplit("/", 1)[-1], safe=""), "OpenAlex"
    return None
