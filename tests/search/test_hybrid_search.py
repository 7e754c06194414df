"""The hybrid search service end to end on a real SQLite store, keyword engine and vector index.

The fake (hashing) embedder stands in for the model here: it is deterministic and makes texts that share
words similar, which is all these tests need; the real model is tested in tests/embed and measured in
bench/quality.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.search import SearchFilters
from paperfeed.settings import Settings
from tests.support.papers import paper as make_paper

CORPUS = [
    (
        "2401.00001",
        "Diffusion models for video generation",
        "We train a video diffusion model on clips.",
        ("Ada Lovelace",),
        ("cs.CV",),
        "2024-01-02",
        None,
    ),
    (
        "2401.00002",
        "Video synthesis with denoising",
        "Denoising diffusion synthesises video frames.",
        ("Alan Turing",),
        ("cs.CV", "cs.LG"),
        "2024-01-03",
        "https://github.com/x/y",
    ),
    (
        "2401.00003",
        "Protein folding with transformers",
        "Attention predicts protein structure.",
        ("Grace Hopper",),
        ("q-bio.BM",),
        "2024-01-04",
        None,
    ),
    (
        "2401.00004",
        "Graph neural networks for molecules",
        "Message passing over molecular graphs.",
        ("Ada Lovelace", "Edsger Dijkstra"),
        ("cs.LG",),
        "2024-02-01",
        "https://github.com/a/b",
    ),
    (
        "2401.00005",
        "Diffusion models for video generation",
        "We train a video diffusion model on clips.",
        ("Someone Else",),
        ("cs.CV",),
        "2024-03-01",
        None,
    ),  # an exact duplicate of 00001's text
    (
        "2401.00006",
        "Language models reason step by step",
        "Chain of thought prompting helps reasoning.",
        ("Alan Turing",),
        ("cs.CL",),
        "2024-03-05",
        None,
    ),
]


def _paper(row: tuple) -> Paper:  # type: ignore[type-arg]
    pid, title, abstract, authors, cats, day, repo = row
    return make_paper(
        pid, title, day=day, abstract=abstract, authors=authors, categories=cats, github_repo=repo
    )


@pytest.fixture(params=["fts5", "tantivy", pytest.param("postgres", marks=pytest.mark.postgres)])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[App]:
    """On SQLite with each keyword engine, and on PostgreSQL (full-text search + pgvector)."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=url,
        embedding_backend="fake",
        keyword_engine=request.param,
        search_min_dense_score=0.05,
    )
    app = build_app(settings)
    try:
        batch = Batch(papers=[_paper(r) for r in CORPUS])
        result = app.core.store.apply_batch(batch)
        app.indexes.keyword.on_papers_changed(result.changed_ids)
        app.indexes.indexer.current().run()
        yield app
    finally:
        app.close()


def ids(page_hits: object) -> list[str]:
    return [h.paper.id for h in page_hits]  # type: ignore[attr-defined]


def test_words_find_papers_by_keyword_and_meaning(app: App) -> None:
    page = app.search.hybrid.search("video diffusion")
    found = ids(page.hits)
    assert set(found[:3]) >= {"2401.00001", "2401.00002"}
    assert "2401.00003" not in found[:3]
    top = page.hits[0]
    assert top.keyword_rank is not None
    assert top.dense_rank is not None
    assert top.title_spans, "the title's matching words are highlighted"
    span = top.title_spans[0]
    assert top.paper.title[span.start : span.end].lower().startswith(("diffusion", "video"))


def test_filters_apply_before_ranking(app: App) -> None:
    page = app.search.hybrid.search("video diffusion", SearchFilters(has_code=True))
    assert ids(page.hits) == ["2401.00002"]
    page = app.search.hybrid.search("models", SearchFilters(date_from=date(2024, 3, 1)))
    assert set(ids(page.hits)) <= {"2401.00005", "2401.00006"}
    page = app.search.hybrid.search("cat:q-bio.BM protein")
    assert ids(page.hits) == ["2401.00003"]


def test_phrases_authors_and_exclusions_are_enforced(app: App) -> None:
    assert set(ids(app.search.hybrid.search('"message passing"').hits)) == {"2401.00004"}
    by_lovelace = ids(app.search.hybrid.search("author:Lovelace diffusion").hits)
    assert by_lovelace[0] == "2401.00001"
    assert set(by_lovelace) <= {"2401.00001", "2401.00004"}
    assert "2401.00002" not in ids(app.search.hybrid.search("video -denoising").hits)


def test_nonsense_returns_nothing_and_hostile_input_never_raises(app: App) -> None:
    assert app.search.hybrid.search("qwxzv plmokn").hits == ()
    for query in ['"unbalanced', "AND OR NOT", "(((", "*:*", "-", "🧪🧬", "x" * 10_000, "a:b:c", "\x00"]:
        app.search.hybrid.search(query)  # no exception is the assertion
    assert app.search.hybrid.search("").total == 0


def test_paging(app: App) -> None:
    first = app.search.hybrid.search("video diffusion models", limit=2)
    second = app.search.hybrid.search("video diffusion models", limit=2, offset=2)
    assert len(first.hits) == 2
    assert not set(ids(first.hits)) & set(ids(second.hits))
    assert first.total == second.total >= 3


def test_similar_excludes_itself_and_exact_duplicates(app: App) -> None:
    hits = app.search.hybrid.similar("2401.00001", limit=3)
    found = ids(hits)
    assert "2401.00001" not in found
    assert "2401.00005" not in found
    assert found[0] == "2401.00002"
    assert app.search.hybrid.similar("9999.99999") == []


def test_missing_vector_index_falls_back_to_keyword(tmp_path: Path) -> None:
    app = build_app(Settings(data_dir=tmp_path / "d", embedding_backend="fake", keyword_engine="fts5"))
    try:
        result = app.core.store.apply_batch(Batch(papers=[_paper(r) for r in CORPUS]))
        app.indexes.keyword.on_papers_changed(result.changed_ids)
        page = app.search.hybrid.search("protein")  # nothing embedded yet: no vector index
        assert ids(page.hits) == ["2401.00003"]
        assert page.hits[0].dense_rank is None
        similar = app.search.hybrid.similar(
            "2401.00001"
        )  # the keyword list alone (tests/search/test_similar.py)
        assert similar[0].paper.id == "2401.00002"
        assert all(h.dense_rank is None and h.similarity is None for h in similar)
    finally:
        app.close()


@pytest.mark.sqlite_only  # damages the faiss folder; pgvector lives in the database
def test_corrupt_vector_index_is_reported_and_keyword_results_still_come(app: App) -> None:
    manifest = app.indexes.vector_path / "manifest.json"
    manifest.write_bytes(b"{not json")
    fresh = build_app(app.settings)
    try:
        page = fresh.search.hybrid.search("protein")
        assert ids(page.hits) == ["2401.00003"]
        assert any("semantic search is unavailable" in note for note in page.notes)
    finally:
        fresh.close()
