"""The paper and listing records every part of paperfeed speaks in."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date, datetime

from .summaries import OneLine, one_line

__all__ = ["Listing", "Paper", "content_hash"]


def content_hash(title: str, abstract: str) -> str:
    """Hash of the text that is embedded and indexed: unchanged hash means no re-embedding."""
    return hashlib.blake2b(f"{title}\n{abstract}".encode(), digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class Paper:
    """One paper, keyed by its version-less arXiv id (or a source-prefixed id such as ``scifact:4983``).

    A source hands over an observation of a paper in this shape; the store keeps the merge of all
    observations (see :mod:`paperfeed.domain.merge`). ``None`` always means "unknown", never "erase".
    """

    id: str
    title: str
    abstract: str = ""
    authors: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()  # primary first
    version: int | None = None  # latest version number known
    published: datetime | None = None  # first version (v1) time, UTC
    updated: datetime | None = None  # latest version / metadata update time, UTC
    comment: str | None = None
    journal_ref: str | None = None
    doi: str | None = None
    license: str | None = None
    github_repo: str | None = None
    github_stars: int | None = None
    project_page: str | None = None
    upvotes: int | None = None
    num_comments: int | None = None
    organization: str | None = None
    ai_summary: str | None = None
    ai_keywords: tuple[str, ...] = ()
    # source name -> first time that source saw the paper (ISO-8601 string, UTC)
    sources: dict[str, str] = field(default_factory=dict, hash=False, compare=True)
    # the abstract's sentence chosen as its one-line summary by the indexer's sentence pass (stored beside
    # the paper, never merged from a source); None until chosen, or when the abstract has no sentence
    extracted_summary: str | None = None

    @property
    def primary_category(self) -> str | None:
        return self.categories[0] if self.categories else None

    @property
    def content_hash(self) -> str:
        return content_hash(self.title, self.abstract)

    @property
    def one_line(self) -> OneLine | None:
        """The one-line summary to show: Hugging Face's own, else the one extracted from the abstract."""
        return one_line(self.ai_summary, self.extracted_summary)


@dataclass(frozen=True, slots=True)
class Listing:
    """A paper shown on a source's page for one day, so that day's feed can be rebuilt."""

    day: date
    paper_id: str
    source: str  # e.g. "hf-daily", "arxiv-listing"
    upvotes: int | None = None  # at the time of the listing
    rank: int | None = None  # 0-based position on that day's page, when the source gives one
