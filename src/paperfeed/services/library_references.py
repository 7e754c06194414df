"""A library export with the papers' references (issue #16): "export a tag's papers with their
references as BibTeX".

The bibliography is the tag's papers first, then every work they cite, each once: a reference that is a
paper of the store is written from the store (authors, arXiv fields), any other from what the citation
source told about it (:func:`~paperfeed.domain.citation.work_bibtex`). References are deduplicated by
their work key (the same work cited by two papers, or a reference that is itself one of the tag's
papers); a reference no source could key (no arXiv id, DOI or source id) was never stored as an edge,
so it cannot appear.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from paperfeed.domain.citation import bibliography
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import CitationRecords, CitationSort, WorkRef, work_key
from paperfeed.domain.ports import PaperStore

__all__ = ["ReferenceBibliography"]

PAGE = 500


@dataclass
class ReferenceBibliography:
    """BibTeX of papers together with their references, from the stored citation graph."""

    records: CitationRecords
    store: PaperStore

    def references(self, papers: Sequence[Paper]) -> list[Paper | WorkRef]:
        """The works ``papers`` cite, each once, in the order first cited (a paper's references by date,
        newest first); works that are among ``papers`` are left out."""
        seen = {work_key(arxiv_id=p.id) or p.id for p in papers}
        found: list[tuple[str, WorkRef, bool]] = []
        for paper in papers:
            key = work_key(arxiv_id=paper.id)
            if key is None:
                continue
            offset = 0
            while True:
                page = self.records.references(
                    key, sort=CitationSort.DATE, in_store_only=False, offset=offset, limit=PAGE
                )
                for row in page.rows:
                    if row.work.key not in seen:
                        seen.add(row.work.key)
                        found.append((row.work.key, row.work, row.in_store))
                offset += len(page.rows)
                if not page.rows or offset >= page.total:
                    break
        stored = self.store.get_papers([k for k, _, in_store in found if in_store])
        return [stored.get(k, work) for k, work, _ in found]

    def bibtex(self, papers: Sequence[Paper]) -> list[str]:
        """One BibTeX entry per paper and per reference (keys unique across all of them)."""
        return bibliography([*papers, *self.references(papers)])
