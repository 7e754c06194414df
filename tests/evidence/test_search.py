"""Evidence search through the real composition on SQLite (tantivy) and PostgreSQL (its full-text
search): the ranking's prior, roles, filters, hidden papers, phrases, stale sentences and the indexes'
consistency with the stored sentences."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from paperfeed.bootstrap import App
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.search import SearchFilters
from tests.evidence.support import (
    ANSWER,
    ANSWER_RESULT,
    HIDDEN,
    HOPPER,
    LONE,
    PAPERS,
    QUESTION,
    evidence_app,
)


@pytest.fixture
def app(tmp_path: Path, db_url: str) -> Iterator[App]:
    url = None if db_url.startswith("sqlite") else db_url
    found = evidence_app(tmp_path, url)
    try:
        yield found
    finally:
        found.close()


def test_the_sentence_answering_the_question_comes_first_with_its_context(app: App) -> None:
    page = app.search.evidence.search(QUESTION, limit=20)  # every sentence of the fixture: LONE's too
    assert page.notes == ()
    first = page.hits[0]
    assert (first.paper_id, first.text, first.role) == (ANSWER, ANSWER_RESULT, "result")
    assert first.before is not None
    assert first.before.startswith("We compare layer normalization")
    assert first.after is None  # the last sentence of its abstract
    marked = " ".join(first.text[s.start : s.end].lower() for s in first.spans)
    assert {"layer", "normalization", "small", "batches"} <= set(marked.split())
    assert "train" not in marked.split()  # only the query's words
    groups = [g.paper.id for g in page.groups]
    assert groups[0] == ANSWER
    assert len({*groups}) == len(groups)  # one group per paper, its sentences under it
    lone = [h for h in page.hits if h.paper_id == LONE]
    answer = [h for h in page.hits if h.paper_id == ANSWER]
    assert lone
    assert answer
    # "small batches" alone, in a paper on radar, ranks below every sentence of the paper on the question
    assert min(h.rank for h in lone) > max(h.rank for h in answer)


def test_roles_filter_the_sentences_before_ranking(app: App) -> None:
    results = app.search.evidence.search(QUESTION, roles=frozenset({"result"}), limit=20)
    assert results.hits
    assert {h.role for h in results.hits} == {"result"}
    methods = app.search.evidence.search(QUESTION, roles=frozenset({"method"}), limit=20)
    assert methods.hits
    assert {h.role for h in methods.hits} == {"method"}
    assert any(h.paper_id == ANSWER and h.text.startswith("We compare layer") for h in methods.hits[:3])


def test_dates_categories_and_authors_as_search_has_them(app: App) -> None:
    old = app.search.evidence.search(QUESTION, SearchFilters(date_to=date(2022, 1, 1)), limit=20)
    assert {h.paper_id for h in old.hits} == {HOPPER}
    cl = app.search.evidence.search(QUESTION, SearchFilters(categories=("cs.CL",)), limit=20)
    assert {h.paper_id for h in cl.hits} <= {HOPPER, "2501.00016"}
    assert cl.hits
    by = app.search.evidence.search('author:"Grace Hopper" layer normalization', limit=20)
    assert {h.paper_id for h in by.hits} == {HOPPER}
    in_query = app.search.evidence.search("layer normalization cat:cs.CL year:2021", limit=20)
    assert {h.paper_id for h in in_query.hits} == {HOPPER}


def test_a_phrase_and_an_excluded_word_apply_to_the_sentence(app: App) -> None:
    page = app.search.evidence.search('"radar echoes" small batches', limit=20)
    assert page.hits
    assert all("radar echoes" in h.text.lower() for h in page.hits)
    page = app.search.evidence.search("layer normalization small batches -quokka -hidden", limit=30)
    assert page.hits
    assert all("quokka" not in h.text.lower() for h in page.hits)


def test_hidden_papers_are_left_out(app: App) -> None:
    assert HIDDEN in {h.paper_id for h in app.search.evidence.search(QUESTION, limit=30).hits}
    assert app.readers.accounts.hide_paper(HIDDEN, reason="test")
    assert HIDDEN not in {h.paper_id for h in app.search.evidence.search(QUESTION, limit=30).hits}


def test_a_changed_abstract_shows_no_old_sentence_and_its_new_ones_once_redone(app: App) -> None:
    old = next(p for p in PAPERS if p.id == ANSWER)
    new = Paper(
        id=ANSWER,
        title=old.title,
        abstract="We revisit the question. Group normalization is used. Small batches suffer without it.",
        authors=old.authors,
        categories=old.categories,
        published=old.published,
        version=2,  # a fresher version: the store takes its abstract
    )
    app.indexes.keyword.on_papers_changed(app.core.store.apply_batch(Batch(papers=[new])))
    app.indexes.keyword.flush()
    texts = {h.text for h in app.search.evidence.search(QUESTION, limit=30).hits}
    assert ANSWER_RESULT not in texts  # stale sentences are never quoted
    app.indexes.indexer.current().run()
    app.indexes.sentence_indexer.current().run()
    app.indexes.evidence.flush()
    texts = {h.text for h in app.search.evidence.search("small batches suffer", limit=30).hits}
    assert "Small batches suffer without it." in texts
    assert all(check.consistent for check in app.indexes.evidence.check())


def test_both_indexes_hold_every_stored_sentence_once(app: App) -> None:
    checks = app.indexes.evidence.check()
    assert [c.consistent for c in checks] == [True, True], checks
    stored = sum(3 for _ in PAPERS)
    assert [c.indexed for c in checks] == [stored, stored]
    assert app.indexes.evidence.rebuild() == (len(PAPERS), len(PAPERS))
    assert all(c.consistent for c in app.indexes.evidence.check())


def test_the_api_answers_and_refuses_on_this_backend(app: App) -> None:
    from fastapi.testclient import TestClient

    from paperfeed.bootstrap import build_app
    from paperfeed.web import create_app

    with TestClient(create_app(lambda: build_app(app.settings))) as client:
        got = client.get("/api/evidence", params={"q": QUESTION, "role": "result", "limit": 3})
        assert got.status_code == 200
        first = got.json()["papers"][0]
        assert (first["id"], first["sentences"][0]["text"]) == (ANSWER, ANSWER_RESULT)
        bad = client.get("/api/evidence", params={"q": QUESTION, "to": "2025-13-40"})
        assert bad.status_code == 400
        assert bad.json()["errors"][0]["param"] == "to"
