"""Related work read from the stored graph (``App.paper_graph.related``) on SQLite and PostgreSQL: the
numbers in each reason are recomputed here from the edges handed to ``save_links`` (the oracle), so the
store's overlaps and the domain's ranking are checked together; a hidden paper is no longer shown as a
paper of the instance."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.related_work import RelatedKind, UnknownPaper
from paperfeed.settings import Settings
from tests.conftest import BACKENDS
from tests.support.citation_graph import (
    CITER,
    EARLIER,
    ME,
    PRIOR,
    THIRD,
    graph_links,
    graph_settings,
    prior_counts,
)


@pytest.fixture(scope="module", params=BACKENDS)
def settings(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    pg = request.getfixturevalue("pg_server") if request.param != "sqlite" else None
    with graph_settings(request.param, tmp_path_factory.mktemp("graph-related"), pg) as s:
        yield s


@pytest.fixture
def app(settings: Settings) -> Iterator[App]:
    container = build_app(settings)
    yield container
    container.close()


def _cites() -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for links in graph_links():
        for edge in links.edges:
            out[edge.citing].add(edge.cited)
    return out


def test_shared_reference_counts_match_the_edges(app: App) -> None:
    cites = _cites()
    mine = cites[ME]
    related = app.catalogue.paper_graph.related(ME, per_list=50)
    by_key = {e.key: e for e in related.related.all()}
    for other in (CITER, EARLIER, THIRD):
        assert by_key[other].shared_references == len(cites[other] & mine), other
    assert by_key[CITER].kind is RelatedKind.DERIVATIVE
    assert by_key[CITER].cites_paper
    assert by_key[EARLIER].kind is by_key[THIRD].kind is RelatedKind.COUPLING
    assert by_key[CITER].in_store
    assert related.papers[CITER].id == CITER


def test_prior_works_are_references_counted_by_the_references_they_are_co_cited_with(app: App) -> None:
    counts = prior_counts()
    expected = max(counts.values())
    prior = app.catalogue.paper_graph.related(ME, per_list=50).related.prior
    assert prior[0].key in {r for r, n in counts.items() if n == expected}
    assert prior[0].co_cited_with_references == expected == 11
    assert prior[0].reason.startswith(f"co-cited with {expected} of this paper's references")
    assert {e.key: e.co_cited_with_references for e in prior} == {r: n for r, n in counts.items() if n >= 2}
    assert PRIOR not in {e.key for e in prior}  # co-cited with 12 of them, but not a reference of ME


def test_lists_are_ranked_and_capped(app: App) -> None:
    related = app.catalogue.paper_graph.related(ME, per_list=1).related
    assert [e.key for e in related.coupling] == [THIRD]  # 12 shared references beat 9
    assert all(len(group) <= 1 for group in (related.prior, related.derivative, related.coupling))
    with pytest.raises(ValueError, match="per_list"):
        app.catalogue.paper_graph.related(ME, per_list=0)


def test_a_hidden_paper_is_shown_as_an_outside_work(app: App) -> None:
    assert app.readers.accounts.store.hide_paper(CITER, None, "spam", datetime.now(UTC))
    try:
        related = app.catalogue.paper_graph.related(ME)
        assert CITER not in related.papers
        page = app.catalogue.paper_graph.citations(ME, in_store_only=True, limit=100)
        assert CITER not in {e.paper.id for e in page.entries if e.paper is not None}
    finally:
        app.readers.accounts.store.unhide_paper(CITER)


def test_unknown_paper(app: App) -> None:
    with pytest.raises(UnknownPaper, match=r"2401\.09999"):
        app.catalogue.paper_graph.related("2401.09999")
