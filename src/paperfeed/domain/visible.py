"""What a reader may see of a paper: the port of the one visible-papers lookup (``services/visible.py``).

Two rules hold wherever papers are shown: a paper an administrator hid is left out as if it were not
here, and the counts shown are the imported ones plus this instance's readers' votes and comments
(:func:`~paperfeed.domain.community.with_local_counts`). The store applies both in the same SQL for
its feed listings (they page and rank by the counts) and for papers read by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .models import Paper

__all__ = ["VisibleReads"]


class VisibleReads(Protocol):
    """Papers by id as a reader may see them (the SQL store's feed queries; on SQLite, the stdlib reader)."""

    def visible_papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        """The papers among ``paper_ids`` an administrator did not hide, with the shown counts, by id."""
        ...

    def hidden_paper_ids(self) -> frozenset[str]:
        """The ids of the papers an administrator hid (a small table, read whole)."""
        ...
