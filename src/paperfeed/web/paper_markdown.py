"""A paper page as Markdown (``GET /papers/{id}.md``, what ``HfApi.read_paper`` fetches).

Plain, predictable Markdown for people and LLM agents: a title, a list of facts, the abstract, then
HF's AI summary and keywords when known. Text from sources is escaped so a title cannot inject links,
HTML or headings; abstracts keep their LaTeX (``$...$``) since readers want it verbatim.
"""

from __future__ import annotations

import re

from paperfeed.domain.feed import PaperDetail

__all__ = ["paper_markdown"]

_INLINE = re.compile(r"([\\`*_\[\]<>#|])")


def _inline(text: str) -> str:
    """Escape Markdown/HTML syntax in a one-line field and fold its whitespace."""
    return _INLINE.sub(r"\\\1", " ".join(text.split()))


def _block(text: str) -> str:
    """A paragraph of source text: no raw HTML, no line that starts a heading or list by accident."""
    text = text.replace("<", "&lt;").replace(">", "&gt;")
    lines = [re.sub(r"^(\s*)([#>+\-*]|\d+[.)])(\s)", r"\1\\\2\3", line) for line in text.splitlines()]
    return "\n".join(lines).strip()


def _link(label: str, url: str) -> str:
    safe = url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    return f"[{_inline(label)}]({safe})" if safe.startswith(("https://", "http://")) else _inline(url)


def paper_markdown(detail: PaperDetail, page_url: str) -> str:
    """Render ``detail`` as Markdown; ``page_url`` is the paper's HTML page on this instance."""
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
        stars = f" ({p.github_stars:,} stars)" if p.github_stars is not None else ""
        facts.append(f"- **Code:** {_link(p.github_repo, p.github_repo)}{stars}")
    if p.project_page:
        facts.append(f"- **Project page:** {_link(p.project_page, p.project_page)}")
    if p.organization:
        facts.append(f"- **Organization:** {_inline(p.organization)}")
    if p.upvotes is not None:
        facts.append(f"- **Upvotes:** {p.upvotes:,}")
    if p.num_comments:
        facts.append(f"- **Comments:** {p.num_comments:,}")
    if detail.listed_on:
        facts.append(f"- **On the daily feed:** {', '.join(d.isoformat() for d in detail.listed_on)}")
    for label, value in (("Journal reference", p.journal_ref), ("DOI", p.doi), ("Comment", p.comment)):
        if value:
            facts.append(f"- **{label}:** {_inline(value)}")
    facts.append(f"- **Page:** {_link(page_url, page_url)}")
    parts = [f"# {_inline(p.title)}", "\n".join(facts)]
    if p.abstract:
        parts.append(f"## Abstract\n\n{_block(p.abstract)}")
    if p.ai_summary:
        parts.append(f"## AI summary\n\n{_block(p.ai_summary)}")
    if p.ai_keywords:
        parts.append("## Keywords\n\n" + ", ".join(_inline(k) for k in p.ai_keywords))
    return "\n\n".join(parts) + "\n"
