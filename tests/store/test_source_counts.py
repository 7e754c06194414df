"""``stats``' papers per source stay equal to a recount of ``papers.sources`` whatever writes the papers.

On SQLite the counts are kept by triggers in ``source_counts`` (migration 0014); on PostgreSQL they are
counted by one query. Either way they must agree with a count made here, in Python, from the papers
themselves: after imports, after a paper is seen by a second source (a merge), after papers are deleted,
and after a batch that failed (nothing half-written, the counts included).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from paperfeed.adapters.store import SqlPaperStore, migrate, open_store
from paperfeed.adapters.store.schema import papers
from paperfeed.adapters.store.sql_store import _to_row
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper
from tests.support.papers import paper as make_paper


def p(pid: str, **sources: str) -> Paper:
    return make_paper(pid, f"Title {pid}", abstract="Abstract", authors=("A B",), sources=sources)


def recount(store: SqlPaperStore) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for page in store.iter_papers():
        for paper in page:
            counts.update(paper.sources.keys())
    return dict(sorted(counts.items()))


def by_source(store: SqlPaperStore) -> dict[str, int]:
    return store.stats().by_source


def test_imports_and_merges_are_counted(store: SqlPaperStore) -> None:
    store.apply_batch(
        Batch(papers=[p(f"2503.{i:05d}", **{"file:a.jsonl": "2025-03-01"}) for i in range(1, 6)])
    )
    assert by_source(store) == {"file:a.jsonl": 5}
    # a second source sees two of them (a merge: the paper's sources gain a name) and one new paper
    store.apply_batch(
        Batch(
            papers=[
                p("2503.00001", **{"hf-daily": "2025-03-02"}),
                p("2503.00002", **{"hf-daily": "2025-03-02"}),
                p("2503.00009", **{"hf-daily": "2025-03-02"}),
            ]
        )
    )
    assert by_source(store) == {"file:a.jsonl": 5, "hf-daily": 3} == recount(store)
    # seen again, earlier: a new first-seen time for names it has already changes no count
    store.apply_batch(
        Batch(papers=[p("2503.00001", **{"hf-daily": "2025-01-01", "file:a.jsonl": "2025-01-01"})])
    )
    stored = store.get_paper("2503.00001")
    assert stored is not None
    assert stored.sources["hf-daily"] == "2025-01-01"
    assert by_source(store) == {"file:a.jsonl": 5, "hf-daily": 3} == recount(store)
    # re-importing the same batch changes nothing
    store.apply_batch(
        Batch(papers=[p(f"2503.{i:05d}", **{"file:a.jsonl": "2025-03-01"}) for i in range(1, 6)])
    )
    assert by_source(store) == recount(store)


def test_deleted_papers_are_no_longer_counted(store: SqlPaperStore) -> None:
    store.apply_batch(
        Batch(
            papers=[
                p("2503.00001", a="1", b="1"),
                p("2503.00002", a="1"),
                p("2503.00003", b="1"),
            ]
        )
    )
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM papers WHERE id IN ('2503.00001', '2503.00003')"))
    assert by_source(store) == {"a": 1} == recount(store)  # "b" has no papers left: not listed
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM papers"))
    assert by_source(store) == {}
    store.apply_batch(Batch(papers=[p("2503.00003", b="2")]))  # a name counted again from zero
    assert by_source(store) == {"b": 1} == recount(store)


def test_a_failed_batch_leaves_the_counts_as_they_were(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=[p("2503.00001", a="1")]))
    before = by_source(store)
    bad = Batch(
        papers=[p("2503.00001", b="2"), p("2503.00002", b="2")],  # a merge and a new paper...
        listings=[Listing(date(2025, 3, 1), "2503.99999", "hf-daily")],  # ...then a listing that fails
    )
    with pytest.raises(Exception, match=r"(?i)foreign key"):
        store.apply_batch(bad)
    assert by_source(store) == before == recount(store) == {"a": 1}

    def refuse(papers: Sequence[Paper], _at: datetime) -> None:
        raise RuntimeError("the keyword index refused the batch")

    with pytest.raises(RuntimeError, match="refused"):
        store.apply_batch(Batch(papers=[p("2503.00003", c="3")]), before_write=refuse)
    assert by_source(store) == {"a": 1} == recount(store)


def test_many_batches_agree_with_a_recount(store: SqlPaperStore) -> None:
    """Batches from several sources over overlapping ids, in an order where every kind of change
    (new paper, new name on a paper, earlier time for a name it has) happens many times."""
    names = ["file:x", "hf-daily", "arxiv-api", "arxiv-oai"]
    for step in range(12):
        source = names[step % len(names)]
        papers = [
            p(f"2503.{i:05d}", **{source: f"2025-03-{28 - step:02d}"}) for i in range(step, step + 20, 2)
        ]
        store.apply_batch(Batch(papers=papers))
    assert by_source(store) == recount(store)
    names_seen = sum(len(paper.sources) for page in store.iter_papers() for paper in page)
    assert sum(by_source(store).values()) == names_seen


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+pysqlite:///{tmp_path / 'paperfeed.db'}"


def test_the_migration_counts_the_papers_already_stored(sqlite_url: str) -> None:
    """A store of papers written before 0014 gets its counts from them when it migrates."""
    store = open_store(sqlite_url)
    try:
        migrate.downgrade(store.engine, "0012_topic_levels_picks")
        # rows as the store wrote them then: today's store reads columns (0018's summary) not there yet
        now = datetime.now(UTC)
        rows = [
            {**_to_row(x, now), "created_at": now}
            for x in (p("2503.00001", a="1", b="1"), p("2503.00002", a="1"))
        ]
        with store.engine.begin() as conn:
            conn.execute(papers.insert(), rows)
        with store.engine.connect() as conn:
            tables = {r[0] for r in conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'"))}
        assert "source_counts" not in tables
        migrate.upgrade(store.engine)
        assert by_source(store) == {"a": 2, "b": 1}
        store.apply_batch(Batch(papers=[p("2503.00002", b="2")]))  # and the triggers keep them from then on
        assert by_source(store) == {"a": 2, "b": 2} == recount(store)
    finally:
        store.close()
