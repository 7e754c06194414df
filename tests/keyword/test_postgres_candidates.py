"""PostgreSQL full-text search ranks only candidates when a query mixes common and uncommon words.

Candidates: papers with an uncommon word (under ``COMMON_SHARE`` of the papers by ANALYZE's lexeme
frequencies) or with all the common ones. Each candidate keeps the score the full query gives it, and
when there are fewer candidates than asked for, the full query answers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from paperfeed.adapters.keyword import postgres_fts
from paperfeed.adapters.keyword.postgres_fts import PostgresKeywordIndex
from paperfeed.adapters.store import SqlPaperStore, open_store
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.query import parse_query

pytestmark = pytest.mark.postgres


def _papers() -> list[Paper]:
    """100 papers with "census" (a common word); 50 of them with "marsupial" too (common); 40 that say
    "census" over and over but nothing else of the query (the oldest); one quokka. One day apart each."""
    out = [Paper(id="q", title="Quokka sightings", abstract="A census of one island's quokkas.")]
    for i in range(50):
        out.append(Paper(id=f"m{i:02d}", title=f"Marsupial survey {i}", abstract="A census of marsupials."))
    for i in range(40):
        out.append(Paper(id=f"c{i:02d}", title="Census census census", abstract="Census " * (3 + i % 3)))
    for i in range(9):
        out.append(Paper(id=f"o{i}", title=f"Other census work {i}", abstract="Counting things."))
    day = datetime(2024, 1, 1, tzinfo=UTC)
    order = sorted(out, key=lambda p: (not p.id.startswith("c"), out.index(p)))  # census-only first
    return [dataclasses.replace(p, published=day + timedelta(days=n)) for n, p in enumerate(order)]


@pytest.fixture
def index(pg_url: str) -> Iterator[PostgresKeywordIndex]:
    store: SqlPaperStore = open_store(pg_url)
    store.apply_batch(Batch(papers=_papers()))
    with store.engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE papers"))
    try:
        yield PostgresKeywordIndex(store.engine)
    finally:
        store.close()


def full(index: PostgresKeywordIndex, q: str, k: int) -> dict[str, float]:
    built = postgres_fts.build_statement(parse_query(q), k, index.weights)
    return {hit.paper_id: hit.score for hit in index._run(built)}


def test_papers_with_only_common_words_are_not_ranked(index: PostgresKeywordIndex) -> None:
    query = parse_query("quokka census marsupial")
    assert index._candidates(query) == ([0], [1, 2])  # quokka is uncommon, the other two common
    hits = index.search(query, 10)
    assert len(hits) == 10
    assert {h.paper_id[0] for h in hits} <= {"q", "m"}  # a candidate: the quokka or census + marsupial
    every = full(index, "quokka census marsupial", 100)
    assert any(pid.startswith("c") for pid in every), "the full query matches census-only papers"
    # the top of the full ranking among candidates, each with the score the full query gives it
    assert [h.paper_id for h in hits] == [pid for pid in every if pid[0] in "qm"][:10]
    for hit in hits:
        assert hit.score == pytest.approx(every[hit.paper_id])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_fewer_candidates_than_asked_for_runs_the_full_query(index: PostgresKeywordIndex) -> None:
    hits = index.search(parse_query("quokka census marsupial"), 60)  # 51 candidates
    assert [h.paper_id for h in hits] == list(full(index, "quokka census marsupial", 60))


def test_queries_without_a_common_word_or_with_hard_parts_are_ranked_in_full(
    index: PostgresKeywordIndex,
) -> None:
    assert index._candidates(parse_query("quokka island")) is None  # nothing common to leave out
    assert index._candidates(parse_query('"marsupial survey" census quokka')) is None  # a phrase decides
    assert index._candidates(parse_query("census")) is None
    assert index._candidates(parse_query("census marsupial")) == ([], [0, 1])  # all common: both needed
    hits = index.search(parse_query("census marsupial"), 10)
    assert {h.paper_id[0] for h in hits} == {"m"}


def test_an_everyday_word_ranks_only_the_newest_matches(
    index: PostgresKeywordIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_fts, "RANKED_ROWS", 20)  # "census" is in all 100 papers
    newest = {p.id for p in sorted(_papers(), key=lambda p: p.published or datetime.min)[-20:]}
    every = full(index, "census", 100)
    assert set(list(every)[:10]) - newest, "ranking every match puts older papers in the top 10"
    hits = index.search(parse_query("census"), 10)
    assert len(hits) == 10
    assert {h.paper_id for h in hits} <= newest
    assert [h.paper_id for h in hits] == [pid for pid in every if pid in newest][:10]
    assert index.search(parse_query("census cat:cs.LG"), 10) == []  # a filter: every match ranked, none pass
