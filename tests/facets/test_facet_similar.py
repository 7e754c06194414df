"""Similar papers by facet through the real composition (store, vector index, sentence indexer) with the
fake embedder and roles by place (tests/facets/support.py says which paper each facet must put first)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from paperfeed.bootstrap import App
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.sentences import Facet
from paperfeed.services.facets import FacetPage
from tests.facets.support import ME, METHOD, NO_RESULT, PAPERS, RESULT, TOPIC, facet_app


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[App]:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    # the match weighs as much as the overall order: on five papers the default's lighter weight (0.2 at
    # k 10, chosen on the proxies' lists of 20) rarely moves one, and the rule is what is tested here
    app = facet_app(tmp_path, url, similar_facet_weight=1.0, similar_facet_rrf_k=10.0)
    try:
        yield app
    finally:
        app.close()


def facet_page(app: App, paper_id: str, facet: Facet, limit: int) -> FacetPage:
    """The facet's list of ``paper_id`` as the surfaces ask for it (an unknown paper has none)."""
    page = app.search.facets.of_id(paper_id, facet, limit)
    return FacetPage(facet, facet, []) if page is None else page


def ids(page: object) -> list[str]:
    return [h.paper.id for h in page.hits]  # type: ignore[attr-defined]


def overall_ids(app: App, paper_id: str, limit: int) -> list[str]:
    found = app.search.similar.of_id(paper_id, limit)
    assert found is not None
    return [h.paper.id for h in found]


def test_each_facet_raises_the_paper_that_shares_that_part(app: App) -> None:
    overall = facet_page(app, ME, "overall", 5)
    assert overall.facet == "overall"
    assert overall.note is None
    assert overall.matched == {}
    assert ids(overall)[0] == TOPIC
    assert ids(overall) == overall_ids(app, ME, 5)  # overall is the similar list every surface shows
    assert ids(facet_page(app, ME, "background", 5))[0] == TOPIC
    method = facet_page(app, ME, "method", 5)
    assert method.facet == "method"
    assert method.note is None
    assert ids(method).index(METHOD) < ids(overall).index(METHOD)  # the same method climbs
    assert method.matched[METHOD] == "We use graph neural networks."
    result = facet_page(app, ME, "result", 5)
    assert ids(result).index(RESULT) < ids(overall).index(RESULT)
    assert result.matched[RESULT] == "Accuracy improves by twelve percent."
    assert ME not in ids(method) + ids(result)
    assert sorted(ids(method)) == sorted(ids(result)) == sorted(ids(overall))  # re-ranked, not redrawn


def test_with_the_defaults_a_facet_reorders_the_overall_papers_and_keeps_its_first(tmp_path: Path) -> None:
    app = facet_app(tmp_path)
    try:
        overall = overall_ids(app, ME, 5)
        for facet in ("background", "method", "result"):
            found = ids(facet_page(app, ME, facet, 5))
            assert sorted(found) == sorted(overall)
            assert found[0] == overall[0] == TOPIC  # a light touch: the topic's paper stays first
    finally:
        app.close()


def test_a_strong_facet_weight_puts_the_match_first(tmp_path: Path) -> None:
    app = facet_app(tmp_path, similar_facet_weight=4.0, similar_facet_rrf_k=1.0)
    try:
        assert ids(facet_page(app, ME, "method", 5))[0] == METHOD
        assert ids(facet_page(app, ME, "result", 5))[0] == RESULT
    finally:
        app.close()


def test_the_facet_never_reaches_past_the_overall_list_s_first_candidates(tmp_path: Path) -> None:
    app = facet_app(tmp_path, similar_facet_candidates=2, similar_facet_weight=4.0, similar_facet_rrf_k=1.0)
    try:
        overall = overall_ids(app, ME, 5)
        assert overall.index(RESULT) >= 2  # the finding's paper is not among the first two overall
        result = ids(facet_page(app, ME, "result", 5))
        assert sorted(result[:2]) == sorted(overall[:2])
        assert result[2:] == overall[2:]  # so it stays where the overall list has it
    finally:
        app.close()


def test_a_paper_without_a_sentence_of_the_facet_gets_the_overall_list_and_says_so(app: App) -> None:
    page = facet_page(app, NO_RESULT, "result", 5)
    assert page.asked == "result"
    assert page.facet == "overall"
    assert page.note is not None
    assert "No sentence of this paper's abstract states its result" in page.note
    assert ids(page) == overall_ids(app, NO_RESULT, 5)


def test_sentences_not_indexed_yet_fall_back_and_say_so(tmp_path: Path) -> None:
    app = facet_app(tmp_path, sentences=False)
    try:
        page = facet_page(app, ME, "method", 5)
        assert page.facet == "overall"
        assert page.note is not None
        assert "not indexed yet" in page.note
        assert ids(page) == overall_ids(app, ME, 5)
    finally:
        app.close()


def test_hidden_papers_and_unknown_ids_and_limits(app: App) -> None:
    from datetime import UTC, datetime

    from sqlalchemy import insert

    from paperfeed.adapters.store.schema_accounts import hidden_papers

    with app.core.store.engine.begin() as conn:
        conn.execute(
            insert(hidden_papers).values(paper_id=METHOD, reason="test", hidden_at=datetime.now(UTC))
        )
    assert METHOD not in ids(facet_page(app, ME, "method", 5))
    assert facet_page(app, "2599.99999", "method", 5).hits == []
    assert facet_page(app, ME, "method", 0).hits == []
    assert len(facet_page(app, ME, "method", 2).hits) == 2


def test_a_candidate_without_sentences_yet_is_no_error_and_the_list_is_filled(app: App) -> None:
    late = Paper(id="2501.00009", title="Protein folding, late", abstract="Protein folding again. More.")
    result = app.core.store.apply_batch(Batch(papers=[late]))
    app.indexes.keyword.on_papers_changed(result)
    app.indexes.indexer.current().run()  # its vector, not its sentences
    page = facet_page(app, ME, "method", 10)
    assert "2501.00009" in ids(page)  # kept, by its overall place alone
    assert len(ids(page)) == len(set(ids(page))) == len(PAPERS)  # the overall list filled the rest
