"""Search filtered by topic: the ``topic:`` query syntax, every engine honouring the topic's allow-list
(tantivy and SQLite FTS5, PostgreSQL full-text search; the faiss folder index and pgvector), the hybrid
service, ``GET /api/papers/search?topic=`` and the ``/search`` page, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import build_app
from paperfeed.domain.query import merge_filters, parse_query, with_filters
from paperfeed.domain.search import ParsedQuery, SearchFilters

from .ui_instance import HTML, Instance, client_of, database_url, populate, ui_settings

# -- the query syntax (pure) --------------------------------------------------------------------------------


def test_topic_in_the_query_syntax() -> None:
    parsed = parse_query("graph topic:12 networks")
    assert parsed.filters.topic == 12
    assert parsed.terms == ("graph", "networks")
    assert parsed.filters.paper_ids is None
    assert parsed.filters.active
    assert parse_query("Topic:7").filters.topic == 7  # keys are case-insensitive


@pytest.mark.parametrize("raw", ["topic:abc", "topic:²", "topic:-3", "topic:1.5", "topic:"])
def test_a_topic_that_is_not_a_number_is_text(raw: str) -> None:
    parsed = parse_query(raw)
    assert parsed.filters.topic is None
    assert parsed.filters.paper_ids is None
    assert "topic" in parsed.terms


def test_a_negated_topic_is_ignored_and_two_topics_match_nothing() -> None:
    assert parse_query("graph -topic:3").filters == SearchFilters()
    assert parse_query("graph -topic:3").terms == ("graph",)
    two = parse_query("graph topic:3 topic:4").filters
    assert two.topic == 3
    assert two.paper_ids == frozenset()
    same = parse_query("graph topic:3 topic:3").filters
    assert (same.topic, same.paper_ids) == (3, None)


def test_merging_filters_intersects_topics() -> None:
    a = SearchFilters(topic=3)
    assert merge_filters(a, SearchFilters(topic=3)) == SearchFilters(topic=3)
    assert merge_filters(a, SearchFilters(topic=4)).paper_ids == frozenset()
    assert merge_filters(a, SearchFilters()).topic == 3
    both = merge_filters(SearchFilters(paper_ids=frozenset("ab")), SearchFilters(paper_ids=frozenset("bc")))
    assert both.paper_ids == frozenset("b")


# -- engines, service, API and page on each backend -------------------------------------------------------

BACKENDS = [
    "sqlite",  # tantivy + the faiss folder index
    "sqlite-fts5",  # SQLite FTS5 + the faiss folder index
    pytest.param("postgresql", marks=pytest.mark.postgres),  # PostgreSQL FTS + pgvector
]


@pytest.fixture(scope="module", params=BACKENDS)
def inst(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Instance]:
    backend: str = request.param
    extra = {"keyword_engine": "fts5"} if backend == "sqlite-fts5" else {}
    with database_url(request, "postgresql" if backend == "postgresql" else "sqlite") as url:
        settings = ui_settings(tmp_path_factory.mktemp(f"topic-search-{backend}"), url, **extra)
        yield populate(settings, backend)


@pytest.fixture(scope="module")
def client(inst: Instance) -> Iterator[TestClient]:
    with client_of(inst.settings) as c:
        yield c


def test_the_instance_has_three_topics_on_the_expected_engines(inst: Instance) -> None:
    assert len(inst.members) == 3
    app = build_app(inst.settings)
    try:
        engine = type(app.indexes.keyword.opened()).__name__.lower()  # the engine's, not the lazy wrapper
        vectors = type(app.indexes.vectors.current()).__name__.lower()
    finally:
        app.close()
    expected = {"sqlite": "tantivy", "sqlite-fts5": "fts5", "postgresql": "postgres"}[inst.backend]
    assert expected in engine
    assert ("pgvector" in vectors) == (inst.backend == "postgresql")


def test_each_engine_applies_the_allow_list(inst: Instance) -> None:
    """Keyword and dense legs each restrict to the topic's papers inside the engine: a query about graphs
    within the protein topic still finds protein papers (no post-filter starvation)."""
    protein = inst.members[inst.topic_of_group("protein")]
    app = build_app(inst.settings)
    try:
        parsed = parse_query("graph study")
        everything = {s.paper_id for s in app.indexes.keyword.search(parsed, 200)}
        assert everything - protein  # unfiltered, other topics match
        within = parse_query("graph study topic:1")  # the topic id itself is resolved by the service ...
        only = SearchFilters(paper_ids=protein)  # ... into this allow-list, which is what engines see
        keyword = app.indexes.keyword.search(merge_parsed(within, only), 200)
        assert keyword
        assert {s.paper_id for s in keyword} <= protein
        index = app.indexes.vectors.current()
        assert index is not None
        vector = app.indexes.embedders.current().embed(["graph neural networks message passing"])[0]
        unfiltered = index.search(vector, 10)
        assert not {s.paper_id for s in unfiltered} & protein  # the query points at the graph papers
        dense = index.search(vector, 10, only)
        assert len(dense) == 10
        assert {s.paper_id for s in dense} <= protein
        nothing = SearchFilters(paper_ids=frozenset())
        assert app.indexes.keyword.search(merge_parsed(parsed, nothing), 50) == []
        assert index.search(vector, 10, nothing) == []
    finally:
        app.close()


def merge_parsed(parsed: ParsedQuery, filters: SearchFilters) -> ParsedQuery:
    return with_filters(parsed, filters)


def test_hybrid_search_by_request_filter_and_by_query_syntax(inst: Instance) -> None:
    topic = inst.topic_of_group("galaxy")
    galaxy = inst.members[topic]
    app = build_app(inst.settings)
    try:
        unfiltered = app.search.hybrid.search("graph study", limit=50)
        assert {h.paper.id for h in unfiltered.hits} - galaxy
        for page in (
            app.search.hybrid.search("graph study", SearchFilters(topic=topic), limit=50),
            app.search.hybrid.search(f"graph study topic:{topic}", limit=50),
        ):
            ids = {h.paper.id for h in page.hits}
            assert ids
            assert ids <= galaxy
            assert page.total <= len(galaxy)
            assert page.notes == ()
        unknown = app.search.hybrid.search("graph study topic:999999", limit=50)
        assert unknown.hits == ()
        assert unknown.notes == ("there is no topic 999999; nothing matches topic:999999",)
        constrained = app.search.hybrid.search(
            f'"galaxy study" topic:{topic}', limit=50
        )  # phrase: rerank path
        assert constrained.hits
        assert {h.paper.id for h in constrained.hits} <= galaxy
    finally:
        app.close()


def test_api_search_by_topic(client: TestClient, inst: Instance) -> None:
    topic = inst.topic_of_group("graph")
    got = client.get(f"/api/papers/search?q=study&topic={topic}&limit=100")
    assert got.status_code == 200, got.text
    ids = {item["paper"]["id"] for item in got.json()}
    assert ids
    assert ids <= inst.members[topic]
    without_words = client.get(f"/api/papers/search?topic={topic}&limit=5").json()
    assert len(without_words) == 5
    assert {item["paper"]["id"] for item in without_words} <= inst.members[topic]
    upvotes = [item["paper"]["upvotes"] for item in without_words]
    assert upvotes == sorted(upvotes, reverse=True)  # ranked like the topic page


@pytest.mark.parametrize("bad", ["999999", "0", "abc", "²", "-1", "1" * 12])
def test_api_search_with_a_bad_topic_is_a_400_naming_it(client: TestClient, bad: str) -> None:
    got = client.get("/api/papers/search", params={"q": "study", "topic": bad})
    assert got.status_code == 400, got.text
    body = got.json()
    assert body["status"] == 400
    assert body["errors"][0]["param"] == "topic"


def _paper_ids(html: str) -> set[str]:
    return {unquote(m) for m in re.findall(r'<h2 class="card-title"[^>]*>.*?href="/papers/([^"#?]+)"', html)}


def test_search_page_topic_select_and_filter(client: TestClient, inst: Instance) -> None:
    topic = inst.topic_of_group("protein")
    page = client.get(f"/search?q=study&topic={topic}", headers=HTML)
    assert page.status_code == 200
    assert f'<option value="{topic}" selected>' in page.text
    assert page.text.count("<option value=") >= 4  # "any" and the three topics
    ids = _paper_ids(page.text)
    assert ids
    assert ids <= inst.members[topic]
    assert f"topic={topic}" in page.text  # the export links and pages keep the topic
    plain = client.get("/search?q=study", headers=HTML)
    assert _paper_ids(plain.text) - inst.members[topic]
    assert 'id="f-topic"' in plain.text
    assert "<code>topic:12</code>" in client.get("/search", headers=HTML).text  # the syntax help names it


@pytest.mark.parametrize(("bad", "says"), [("999999", "there is no topic 999999"), ("x1", "topic must be")])
def test_search_page_with_a_bad_topic_is_a_400(client: TestClient, bad: str, says: str) -> None:
    page = client.get(f"/search?q=study&topic={bad}", headers=HTML)
    assert page.status_code == 400
    assert says in page.text


def test_topic_page_has_a_search_within_box(client: TestClient, inst: Instance) -> None:
    topic = inst.topic_of_group("galaxy")
    page = client.get(f"/topics/{topic}", headers=HTML)
    assert page.status_code == 200
    pattern = r'<form class="search-form topic-search"[^>]*action="/search".*?</form>'
    form = re.search(pattern, page.text, re.S)
    assert form is not None
    assert f'<input type="hidden" name="topic" value="{topic}">' in form.group(0)
