"""Similar papers by facet through the real composition (store, vector index, sentence indexer) with the
fake embedder and roles by place (tests/facets/support.py says which paper each facet must put first)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from paperfeed.bootstrap import App
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from tests.facets.support import ME, METHOD, NO_RESULT, PAPERS, RESULT, TOPIC, facet_app


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[App]:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    app = facet_app(tmp_path, url)
    try:
        yield app
    finally:
        app.close()


def ids(page: object) -> list[str]:
    return [h.paper.id for h in page.hits]  # type: ignore[attr-defined]


def test_each_facet_puts_first_the_paper_that_shares_that_part(app: App) -> None:
    overall = app.facets.similar(ME, "overall", 5)
    assert overall.facet == "overall"
    assert overall.note is None
    assert overall.matched == {}
    assert ids(overall)[0] == TOPIC
    assert ids(overall) == [h.paper.id for h in app.search.similar(ME, 5)]  # overall is the search's own
    assert ids(app.facets.similar(ME, "background", 5))[0] == TOPIC
    method = app.facets.similar(ME, "method", 5)
    assert method.facet == "method"
    assert method.note is None
    assert ids(method)[0] == METHOD
    assert method.matched[METHOD] == "We use graph neural networks."
    result = app.facets.similar(ME, "result", 5)
    assert ids(result)[0] == RESULT
    assert result.matched[RESULT] == "Accuracy improves by twelve percent."
    assert ME not in ids(method) + ids(result)


def test_a_paper_without_a_sentence_of_the_facet_gets_the_overall_list_and_says_so(app: App) -> None:
    page = app.facets.similar(NO_RESULT, "result", 5)
    assert page.asked == "result"
    assert page.facet == "overall"
    assert page.note is not None
    assert "No sentence of this paper's abstract states its result" in page.note
    assert ids(page) == [h.paper.id for h in app.search.similar(NO_RESULT, 5)]


def test_sentences_not_indexed_yet_fall_back_and_say_so(tmp_path: Path) -> None:
    app = facet_app(tmp_path, sentences=False)
    try:
        page = app.facets.similar(ME, "method", 5)
        assert page.facet == "overall"
        assert page.note is not None
        assert "not indexed yet" in page.note
        assert ids(page) == [h.paper.id for h in app.search.similar(ME, 5)]
    finally:
        app.close()


def test_hidden_papers_and_unknown_ids_and_limits(app: App) -> None:
    from datetime import UTC, datetime

    from sqlalchemy import insert

    from paperfeed.adapters.store.schema_accounts import hidden_papers

    with app.store.engine.begin() as conn:
        conn.execute(
            insert(hidden_papers).values(paper_id=METHOD, reason="test", hidden_at=datetime.now(UTC))
        )
    assert METHOD not in ids(app.facets.similar(ME, "method", 5))
    assert app.facets.similar("2599.99999", "method", 5).hits == []
    assert app.facets.similar(ME, "method", 0).hits == []
    assert len(app.facets.similar(ME, "method", 2).hits) == 2


def test_a_candidate_without_sentences_yet_is_no_error_and_the_list_is_filled(app: App) -> None:
    late = Paper(id="2501.00009", title="Protein folding, late", abstract="Protein folding again. More.")
    result = app.store.apply_batch(Batch(papers=[late]))
    app.keyword_index.on_papers_changed(result)
    app.indexing.run()  # its vector, not its sentences
    page = app.facets.similar(ME, "method", 10)
    assert ids(page)[0] == METHOD
    assert len(ids(page)) == len(set(ids(page))) == len(PAPERS)  # the overall list filled the rest
