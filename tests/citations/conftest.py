"""The stored paper graph on both backends: a real SQLite file, then a real PostgreSQL database (the
root conftest's ``store`` fixture runs each test on both), with a few papers of the store."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.citations import SqlCitationRecords
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import Citation, PaperLinks, WorkRef
from tests.support.papers import paper as make_paper

HARVESTED = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)


def paper(paper_id: str, day: str) -> Paper:
    return make_paper(
        paper_id,
        day=day,
        updated=True,
        source=day,
        abstract="A synthetic abstract.",
        authors=("Ada Lovelace",),
        categories=("cs.LG",),
    )


STORE_PAPERS = [
    paper("2401.00001", "2024-01-02"),
    paper("2402.00002", "2024-02-03"),
    paper("2403.00003", "2024-03-05"),
    paper("2404.00004", "2024-04-06"),
]


def work(key: str, day: str | None = None, **kw: object) -> WorkRef:
    published = date.fromisoformat(day) if day else None
    return WorkRef(key=key, title=f"Work {key}", published=published, **kw)  # type: ignore[arg-type]


def cite(citing: str, cited: str, source: str = "s2", **kw: object) -> Citation:
    return Citation(citing=citing, cited=cited, source=source, **kw)  # type: ignore[arg-type]


def links(
    paper_id: str,
    edges: list[Citation],
    *,
    source: str = "s2",
    works: list[WorkRef] | None = None,
    me: WorkRef | None = None,
) -> PaperLinks:
    """What ``source`` says about ``paper_id``: the edges and a description of every key in them."""
    described = {w.key: w for w in works or []}
    for e in edges:
        for key in (e.citing, e.cited):
            described.setdefault(key, WorkRef(key=key))
    return PaperLinks(
        paper_id=paper_id,
        source=source,
        work=me or WorkRef(key=paper_id, title=f"Paper {paper_id}"),
        works=tuple(described.values()),
        edges=tuple(edges),
    )


@pytest.fixture
def records(store: SqlPaperStore) -> SqlCitationRecords:
    store.apply_batch(Batch(papers=list(STORE_PAPERS)))
    return SqlCitationRecords(store.engine)
