"""A paper page as Markdown (``GET /papers/{id}.md``, what ``HfApi.read_paper`` fetches).

Plain, predictable Markdown for people and LLM agents: a title, a list of facts, the abstract, then
HF's AI summary and keywords when known, then the citation graph (counts, related work with its reasons,
the reference list) when the paper has any. Text from sources is escaped so a title cannot inject links,
HTML or headings, and an abstract or summary cannot make a link or an image (a ``javascript:`` link, or
a remote image that tracks or exfiltrates when an assistant's viewer loads it); abstracts keep their
LaTeX (``$...$``) since readers want it verbatim. Only the links this module writes are links.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from paperfeed.domain.feed import PaperDetail
from paperfeed.domain.links import external_link, paper_url
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import LinkCounts, WorkRef
from paperfeed.domain.wording import count
from paperfeed.services.paper_graph import GraphListing, RelatedListing
from paperfeed.services.topic_picks import PaperTopic

__all__ = ["GraphMarkdown", "paper_markdown"]


@dataclass(frozen=True, slots=True)
class GraphMarkdown:
    """The graph's part of the Markdown: counts, the first page of references, related work."""

    counts: LinkCounts
    references: GraphListing
    related: RelatedListing
    base_url: str  # this instance's public URL, for links to its own paper pages


_INLINE = re.compile(r"([\\`*_\[\]<>#|])")


def _inline(text: str) -> str:
    """Escape Markdown/HTML syntax in a one-line field and fold its whitespace."""
    return _INLINE.sub(r"\\\1", " ".join(text.split()))


# ``](`` makes an inline link or image, ``][`` a reference one, ``]:`` a link definition: a space after
# the ``]`` makes each plain text (CommonMark, GFM, the original Markdown), and LaTeX ignores it.
_LINK_SYNTAX = re.compile(r"\](?=[(\[:])")


def _block(text: str) -> str:
    """A paragraph of source text (an abstract, an AI summary: written by authors or a model, not by us):
    no raw HTML or autolink, no link or image — so no ``javascript:`` link to click and no remote image an
    assistant or viewer loads by itself — and no line that starts a heading or list by accident. The text
    reads as written, LaTeX and brackets included."""
    text = text.replace("<", "&lt;").replace(">", "&gt;")
    text = _LINK_SYNTAX.sub("] ", text)
    lines = [re.sub(r"^(\s*)([#>+\-*]|\d+[.)])(\s)", r"\1\\\2\3", line) for line in text.splitlines()]
    return "\n".join(lines).strip()


def _link(label: str, url: str) -> str:
    safe = url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    return f"[{_inline(label)}]({safe})" if safe.startswith(("https://", "http://")) else _inline(url)


def _work_line(work: WorkRef, paper: Paper | None, base_url: str, extra: str) -> str:
    if paper is not None:
        title, url = paper.title, base_url + paper_url(paper.id)
    else:
        link = external_link(work)
        title, url = work.title or work.key, link[0] if link else ""
    year = paper.published.year if paper is not None and paper.published else work.year
    text = _link(title, url) if url else _inline(title)
    bits = [b for b in (str(year) if year else "", extra) if b]
    return f"- {text}" + (f" ({'; '.join(bits)})" if bits else "")


def _graph_parts(graph: GraphMarkdown) -> list[str]:
    c = graph.counts
    parts = [
        "## Citations\n\n"
        f"- **References:** {c.references:,}\n"
        f"- **Cited by:** {c.citations:,} ({c.citations_last_12_months:,} in the last 12 months)"
    ]
    rel = graph.related.related
    sections = []
    for title, entries in (
        ("Prior works", rel.prior),
        ("Derivative works", rel.derivative),
        ("Shares references", rel.coupling),
    ):
        if entries:
            lines = [
                _work_line(e.work, graph.related.papers.get(e.key), graph.base_url, _inline(e.reason))
                for e in entries
            ]
            sections.append(f"### {title}\n\n" + "\n".join(lines))
    if sections:
        parts.append("## Related work\n\n" + "\n\n".join(sections))
    refs = graph.references
    if refs.entries:
        lines = [
            _work_line(
                e.row.work,
                e.paper,
                graph.base_url,
                f"cited by {e.row.citation_count:,}" if e.row.citation_count else "",
            )
            for e in refs.entries
        ]
        more = refs.total - len(refs.entries)
        if more > 0:
            lines.append(f"\n{more:,} more in the API: /api/papers/{refs.paper.id}/references")
        parts.append("## References\n\n" + "\n".join(lines))
    return parts


def paper_markdown(
    detail: PaperDetail,
    page_url: str,
    graph: GraphMarkdown | None = None,
    topic: PaperTopic | None = None,
    base_url: str = "",
) -> str:
    """Render ``detail`` as Markdown; ``page_url`` is the paper's HTML page on this instance; ``graph``
    its citation graph when it has any; ``topic`` its topic (linked on ``base_url``) when it has one."""
    p = detail.paper
    facts: list[str] = []
    if p.authors:
        facts.append(f"- **Authors:** {_inline(', '.join(p.authors))}")
    if p.published:
        facts.append(f"- **Published:** {p.published:%Y-%m-%d}")
    if detail.arxiv_url:
        pdf = detail.arxiv_url.replace("/abs/", "/pdf/")
        facts.append(f"- **arXiv:** {_link(p.id, detail.arxiv_url)} ({_link('PDF', pdf)})")
    if p.categories:
        facts.append(f"- **Categories:** {_inline(', '.join(p.categories))}")
    if p.github_repo:
        stars = f" ({count(p.github_stars, 'star')})" if p.github_stars is not None else ""
        facts.append(f"- **Code:** {_link(p.github_repo, p.github_repo)}{stars}")
    if p.project_page:
        facts.append(f"- **Project page:** {_link(p.project_page, p.project_page)}")
    if p.organization:
        facts.append(f"- **Organization:** {_inline(p.organization)}")
    if p.upvotes is not None:
        facts.append(f"- **Upvotes:** {p.upvotes:,}")
    if p.num_comments:
        facts.append(f"- **Comments:** {p.num_comments:,}")
    if topic is not None:
        t, parent = topic.topic, topic.parent
        line = f"- **Topic:** {_link(t.label, f'{base_url}/topics/{t.id}')}"
        if parent is not None:
            line += f" (part of {_link(parent.label, f'{base_url}/topics/{parent.id}')})"
        facts.append(line)
    if detail.listed_on:
        facts.append(f"- **On the daily feed:** {', '.join(d.isoformat() for d in detail.listed_on)}")
    for label, value in (("Journal reference", p.journal_ref), ("DOI", p.doi), ("Comment", p.comment)):
        if value:
            facts.append(f"- **{label}:** {_inline(value)}")
    facts.append(f"- **Page:** {_link(page_url, page_url)}")
    parts = [f"# {_inline(p.title)}", "\n".join(facts)]
    if p.abstract:
        parts.append(f"## Abstract\n\n{_block(p.abstract)}")
    one = p.one_line
    if one is not None and one.source == "extracted":
        parts.append(f"## In one line\n\n{_block(one.text)}\n\n*Extracted from the abstract, not generated.*")
    if p.ai_summary:
        parts.append(f"## AI summary\n\n{_block(p.ai_summary)}")
    if p.ai_keywords:
        parts.append("## Keywords\n\n" + ", ".join(_inline(k) for k in p.ai_keywords))
    if graph is not None:
        parts.extend(_graph_parts(graph))
    return "\n\n".join(parts) + "\n"
