"""Tantivy's handling of a query's loose words: stop words dropped, hyphenated words split into their
parts (quotes keep the phrase), and the flat disjunction (top-k pruning) scoring exactly as the per-word
nesting did."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tantivy

from paperfeed.adapters.keyword.tantivy_index import TantivyKeywordIndex
from paperfeed.adapters.store import open_store
from paperfeed.domain.models import Paper
from paperfeed.domain.query import parse_query
from paperfeed.services.ingest import IngestService
from tests.support.papers import paper as make_paper

from .corpus import batches
from .sources import ListSource


def _p(pid: str, title: str, abstract: str) -> Paper:
    return make_paper(
        pid,
        title,
        day="2022-06-15",
        source="2026-01-01T00:00:00+00:00",
        abstract=abstract,
        authors=("Jo Doe",),
        categories=("cs.LG",),
        version=1,
    )


PAPERS = [
    _p("stop", "The of and the", "The the of and in on for with a an that is it the."),
    _p("graph", "Graph sparsifiers", "We sparsify a graph with spectral methods."),
    _p("state", "State of the art graph search", "A state-of-the-art method."),
    _p("split", "State and art", "Art about the state: a state art."),
    _p("gpt", "GPT-4 evaluated", "We evaluate GPT-4 on graph puzzles."),
    _p("gpt3", "GPT 3 and 4 compared", "Version 3 then version 4 of GPT."),
    _p("model", "A model's view of graph data", "Models see data."),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TantivyKeywordIndex]:
    root: Path = tmp_path_factory.mktemp("kw-words")
    store = open_store(f"sqlite+pysqlite:///{root / 'paperfeed.db'}")
    idx = TantivyKeywordIndex(root / "keyword", store.engine, background=False)
    IngestService(store, indexes=[idx]).run(ListSource(list(batches(PAPERS))))
    idx.flush()
    yield idx
    idx.close()
    store.close()


def ids(index: TantivyKeywordIndex, q: str) -> set[str]:
    return {hit.paper_id for hit in index.search(parse_query(q), 10)}


def test_stop_words_next_to_content_words_do_not_match_on_their_own(index: TantivyKeywordIndex) -> None:
    assert ids(index, "the graph of") == {"graph", "state", "gpt", "model"}


def test_a_query_of_only_stop_words_still_searches_for_them(index: TantivyKeywordIndex) -> None:
    assert "stop" in ids(index, "the of")


def test_possessive_s_and_single_letters_are_not_searched(index: TantivyKeywordIndex) -> None:
    # "That's" leaves nothing but a stop word and a letter; "model's" leaves "model"
    assert ids(index, "That's model's") == {"model"}


def test_hyphenated_words_search_their_parts_and_quotes_keep_the_phrase(index: TantivyKeywordIndex) -> None:
    assert ids(index, "state-of-the-art") == {"state", "split"}
    assert ids(index, "GPT-4") == {"gpt", "gpt3"}
    assert ids(index, '"GPT-4"') == {"gpt"}
    assert ids(index, '"state-of-the-art"') == {"state"}


def test_stop_words_inside_quotes_are_kept(index: TantivyKeywordIndex) -> None:
    assert ids(index, '"state of the art"') == {"state"}
    assert ids(index, "state art") == {"state", "split"}


def test_stop_words_are_not_highlighted_next_to_content_words(index: TantivyKeywordIndex) -> None:
    title = "The graph of the state"
    spans = index.highlight(parse_query("the graph"), title)
    assert [title[s.start : s.end] for s in spans] == ["graph"]


def test_flat_disjunction_scores_as_the_nested_one(index: TantivyKeywordIndex) -> None:
    """Same score per paper as a disjunction of per-word disjunctions (the sum is associative)."""
    query = parse_query("graph spectral search evaluate")
    flat = {h.paper_id: h.score for h in index.search(query, 10)}
    words = [index.queries.tokens(t) for t in query.terms]
    nested = tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, index.queries.fields_query(tokens)) for tokens in words]
    )
    searcher = index._index.searcher()
    found = {
        searcher.doc(addr)["id"][0]: score
        for score, addr in searcher.search(nested, limit=10, count=False).hits
    }
    assert flat.keys() == found.keys()
    assert len(flat) >= 3
    for pid, score in flat.items():
        assert score == pytest.approx(found[pid], rel=1e-5)
