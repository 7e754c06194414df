"""The one visible-papers lookup: papers by id as a reader may see them.

Hidden papers are left out as if they were not here, and the counts are those every page shows (the
imported ones plus this instance's votes and comments). Search, similar papers, recommendations,
digests, the paper graph, the library, the API and MCP read papers through it, so neither rule is
applied twice or forgotten (issue #32); the store applies them in one SQL statement
(:mod:`paperfeed.domain.visible`), the same its feed listings use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from paperfeed.domain.models import Paper
from paperfeed.domain.visible import VisibleReads

__all__ = ["VisiblePapers"]


@dataclass(frozen=True)
class VisiblePapers:
    """Over the store's :class:`VisibleReads` (on a SQLite store read without SQLAlchemy, as by
    ``paperfeed search``, the stdlib reader)."""

    reads: VisibleReads

    def hidden(self) -> frozenset[str]:
        """The ids of the papers an administrator hid, for filtering ranked ids before reading papers."""
        return self.reads.hidden_paper_ids()

    def get(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        """The visible papers among ``paper_ids``, as shown, by id (an unknown or hidden id is absent)."""
        return self.reads.visible_papers(paper_ids) if paper_ids else {}

    def paper(self, paper_id: str) -> Paper | None:
        """The paper ``paper_id`` (a canonical id) as shown; None when it is unknown or hidden."""
        return self.get([paper_id]).get(paper_id)
