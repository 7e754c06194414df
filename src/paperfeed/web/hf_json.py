"""Papers in the JSON shapes of Hugging Face's papers API, so ``huggingface_hub.HfApi`` reads ours.

Shapes follow real ``api/daily_papers`` responses (``/work/shared/fixtures/hf_daily_api``): a *daily item*
is ``{"paper": {...}, "publishedAt", "title", "summary", "numComments", "organization"?}`` where the
item's ``publishedAt`` is when it reached the daily page and ``paper.publishedAt`` is the arXiv time.
Fields paperfeed does not know (``discussionId``, ``submittedBy``, ``thumbnail``, avatars, ...) are
omitted, as HF omits fields a paper lacks (e.g. ``githubRepo``). Times are ISO-8601 UTC with
milliseconds and ``Z``, as HF writes them.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from paperfeed.domain.models import Paper
from paperfeed.domain.search import Span

__all__ = ["daily_item", "hf_time", "highlight", "paper_object"]


def hf_time(value: datetime | date) -> str:
    """``2025-03-13T17:55:45.000Z``; a date becomes midnight UTC of that day."""
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day, tzinfo=UTC)
    value = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return f"{value:%Y-%m-%dT%H:%M:%S}.{value.microsecond // 1000:03d}Z"


def _organization(name: str) -> dict[str, str]:
    # We keep an organisation's display name only; HF's "name" is a handle we do not know.
    return {"name": name, "fullname": name}


def paper_object(
    paper: Paper, *, upvotes: int | None = None, listed_on: date | None = None
) -> dict[str, Any]:
    """HF's ``paper`` object (also the whole body of ``GET /api/papers/{id}``)."""
    out: dict[str, Any] = {
        "id": paper.id,
        "authors": [{"name": name, "hidden": False} for name in paper.authors],
    }
    if paper.published is not None:
        out["publishedAt"] = hf_time(paper.published)
    if listed_on is not None:
        out["submittedOnDailyAt"] = hf_time(listed_on)
    out["title"] = paper.title
    out["summary"] = paper.abstract
    out["upvotes"] = upvotes if upvotes is not None else (paper.upvotes or 0)
    if paper.project_page:
        out["projectPage"] = paper.project_page
    if paper.github_repo:
        out["githubRepo"] = paper.github_repo
    if paper.ai_summary:
        out["ai_summary"] = paper.ai_summary
    if paper.ai_keywords:
        out["ai_keywords"] = list(paper.ai_keywords)
    line = paper.one_line  # paperfeed's: HF's ai_summary, else the abstract's sentence extracted as one
    if line is not None:
        out["oneLineSummary"] = {"text": line.text, "source": line.source}
    if paper.github_stars is not None:
        out["githubStars"] = paper.github_stars
    if paper.organization:
        out["organization"] = _organization(paper.organization)
    return out


def daily_item(paper: Paper, *, upvotes: int | None = None, listed_on: date | None = None) -> dict[str, Any]:
    """One element of ``GET /api/daily_papers`` (and of search results)."""
    shown = listed_on if listed_on is not None else paper.published
    out: dict[str, Any] = {"paper": paper_object(paper, upvotes=upvotes, listed_on=listed_on)}
    if shown is not None:
        out["publishedAt"] = hf_time(shown)
    out["title"] = paper.title
    out["summary"] = paper.abstract
    out["numComments"] = paper.num_comments or 0
    if paper.organization:
        out["organization"] = _organization(paper.organization)
    return out


def highlight(text: str, spans: Sequence[Span]) -> str:
    """``text`` HTML-escaped with each span wrapped in ``<mark>…</mark>`` (overlaps merged).

    Escaping makes the field safe to insert as HTML, which is what a highlighted field is for.
    """
    merged: list[list[int]] = []
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        start, end = max(0, span.start), min(len(text), span.end)
        if start >= end:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    parts: list[str] = []
    pos = 0
    for start, end in merged:
        parts.append(html.escape(text[pos:start], quote=False))
        parts.append(f"<mark>{html.escape(text[start:end], quote=False)}</mark>")
        pos = end
    parts.append(html.escape(text[pos:], quote=False))
    return "".join(parts)
