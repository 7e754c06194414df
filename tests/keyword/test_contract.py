"""The KeywordIndex contract, run against FTS5 and tantivy alike (see conftest's ``engine_name``)."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paperfeed.domain.query import parse_query, with_filters
from paperfeed.domain.search import SearchFilters, SyncedKeywordIndex

from .corpus import FILLER


def ids(index: SyncedKeywordIndex, q: str, k: int = 10) -> list[str]:
    return [hit.paper_id for hit in index.search(parse_query(q), k)]


def test_title_beats_abstract_beats_authors(keyword: SyncedKeywordIndex) -> None:
    assert ids(keyword, "zephyrine") == ["w.title", "w.abstract", "w.author"]


def test_scores_are_positive_and_best_first(keyword: SyncedKeywordIndex) -> None:
    hits = keyword.search(parse_query("zephyrine"), 10)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(s > 0 for s in scores)


def test_phrase_requires_adjacent_words_while_words_do_not(keyword: SyncedKeywordIndex) -> None:
    assert ids(keyword, '"large language models"') == ["ph.exact"]
    assert set(ids(keyword, "large language models")) >= {"ph.exact", "ph.scattered"}


def test_terms_next_to_a_phrase_only_rank(keyword: SyncedKeywordIndex) -> None:
    # "code" is optional: the phrase alone decides what matches
    assert ids(keyword, '"large language models" zephyrine') == ["ph.exact"]


def test_exclusion(keyword: SyncedKeywordIndex) -> None:
    assert set(ids(keyword, "quokka")) == {"ex.keep", "ex.drop"}
    assert ids(keyword, "quokka -satellites") == ["ex.keep"]
    assert ids(keyword, 'quokka -"with satellites"') == ["ex.keep"]


def test_author_filter_matches_names_not_words_elsewhere(keyword: SyncedKeywordIndex) -> None:
    assert ids(keyword, 'author:"Ada Lovelace"') == ["au.ada"]
    assert set(ids(keyword, "author:Lovelace")) == {"au.ada", "au.other"}
    assert ids(keyword, "engines author:babbage") == ["au.ada"]
    assert ids(keyword, "author:zephyrine") == ["w.author"]


def test_category_filter_any_of(keyword: SyncedKeywordIndex) -> None:
    assert ids(keyword, "tokenizer cat:cs.CL") == ["cat.cl"]
    assert set(ids(keyword, "tokenizer cat:cs.cl cat:math.ag")) == {"cat.cl", "cat.ag"}
    assert ids(keyword, "tokenizer cat:q-bio.NC") == []


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("tokenizer year:2021", {"cat.cv"}),
        ("tokenizer year:2019-2021", {"cat.cl", "cat.cv"}),
        ("tokenizer after:2019", {"cat.cv", "cat.ag"}),
        ("tokenizer before:2021", {"cat.cl"}),
        ("tokenizer after:2021-06-14 before:2024", {"cat.cv"}),
        ("tokenizer year:2030", set()),
    ],
)
def test_date_filters(keyword: SyncedKeywordIndex, q: str, expected: set[str]) -> None:
    assert set(ids(keyword, q)) == expected


def test_request_filters_combine_with_parsed_ones(keyword: SyncedKeywordIndex) -> None:
    q = with_filters(parse_query("tokenizer"), SearchFilters(has_code=True))
    assert [h.paper_id for h in keyword.search(q, 10)] == ["cat.ag"]
    q = with_filters(parse_query("tokenizer after:2018"), SearchFilters(date_to=date(2019, 12, 31)))
    assert [h.paper_id for h in keyword.search(q, 10)] == ["cat.cl"]


def test_an_allow_list_of_ids_is_applied_inside_the_engine(keyword: SyncedKeywordIndex) -> None:
    """A topic filter reaches the engines as the topic's paper ids (docs/topics.md)."""
    allowed = frozenset({"cat.cv", "cat.ag", "crowd.ag3", "no.such.paper"})
    q = with_filters(parse_query("tokenizer"), SearchFilters(paper_ids=allowed))
    assert {h.paper_id for h in keyword.search(q, 10)} == {"cat.cv", "cat.ag"}
    q = with_filters(parse_query("transformer"), SearchFilters(paper_ids=allowed))
    assert [h.paper_id for h in keyword.search(q, 1)] == ["crowd.ag3"]  # never crowded out by the 60 others
    q = with_filters(parse_query("tokenizer year:2021"), SearchFilters(paper_ids=allowed))
    assert [h.paper_id for h in keyword.search(q, 10)] == ["cat.cv"]
    nothing = with_filters(parse_query("tokenizer"), SearchFilters(paper_ids=frozenset()))
    assert keyword.search(nothing, 10) == []
    found = mlt(keyword, "Tokenizer tricks", k=3, filters=SearchFilters(paper_ids=frozenset({"cat.ag"})))
    assert found == ["cat.ag"]


def test_selective_filter_still_returns_k_results(keyword: SyncedKeywordIndex) -> None:
    assert len(ids(keyword, "transformer", k=100)) == 64
    top = ids(keyword, "transformer cat:math.AG", k=4)
    assert sorted(top) == [f"crowd.ag{i}" for i in range(4)]


def test_k_limits_results(keyword: SyncedKeywordIndex) -> None:
    assert len(ids(keyword, "transformer", k=5)) == 5
    assert ids(keyword, "transformer", k=0) == []


def test_stemming_and_accents(keyword: SyncedKeywordIndex) -> None:
    assert "stem.model" in ids(keyword, "models")
    assert ids(keyword, "naive resume") == ["acc.naive"]


def test_queries_with_nothing_to_match_return_nothing(keyword: SyncedKeywordIndex) -> None:
    for q in ["", "   ", "-quokka", "cat:cs.CL", "year:2020", "AND OR NOT", "🙂 ***"]:
        assert ids(keyword, q) == [], q


HOSTILE = [
    '"',
    '""',
    '"""',
    'quokka "unbalanced',
    "(quokka",
    "quokka)",
    "((quokka OR drones) AND NOT satellites)",
    "quokka AND",
    "OR quokka",
    "NOT quokka",
    "NEAR(quokka drones)",
    "quokka*",
    "*",
    "quo*ka",
    "title:quokka",
    ":quokka",
    "quokka:",
    "quokka^2",
    "^",
    "-",
    "--quokka",
    "- -",
    "quokka -",
    "{title}: quokka",
    "title : quokka",
    "quokka~2",
    "'quokka'",
    "`quokka`",
    "quokka; DROP TABLE papers; --",
    "quokka' OR '1'='1",
    "\\",
    "quokka\\",
    "🦘 quokka 🦘",
    "🦘",
    "quokka\x00drones",
    "\x00",
    "\x1b[31mquokka",
    "\u202equokka",
    "quokka\u200b",
    "author:",
    'author:"',
    "author:***",
    "cat:",
    "cat:***",
    "cat:cs.CL,,,",
    "year:",
    "year:-",
    "year:99999",
    "year:0000",
    "year:2024-",
    "before:9999",
    "after:9999",
    "after:0999",
    "before:2021-02-30",
    "+quokka",
    "quokka!",
    "@quokka #drones $",
    "a" * 10_000,
    "quokka " * 2_000,
    ('"quokka drones" ' * 500),
    "-" * 10_000,
    '"' * 10_000,
    "(" * 5_000 + ")" * 5_000,
]


@pytest.mark.parametrize("q", HOSTILE, ids=lambda q: repr(q[:24]))
def test_hostile_queries_never_raise(keyword: SyncedKeywordIndex, q: str) -> None:
    pq = parse_query(q)
    hits = keyword.search(pq, 10)
    assert isinstance(hits, list)
    assert keyword.highlight(pq, "Quokka tracking with drones") is not None


def test_hostile_queries_still_find_the_words(keyword: SyncedKeywordIndex) -> None:
    for q in ["(quokka", "quokka*", "quokka^2", "((quokka OR drones) AND NOT satellites)", "🦘 quokka 🦘"]:
        assert "ex.keep" in ids(keyword, q), q


def _marked(text: str, spans: list) -> list[str]:  # type: ignore[type-arg]
    return [text[s.start : s.end] for s in spans]


def test_highlight_terms_with_stemming(keyword: SyncedKeywordIndex) -> None:
    title = "Large Language Models for Zephyrine"
    spans = keyword.highlight(parse_query("model zephyrine"), title)
    assert _marked(title, spans) == ["Models", "Zephyrine"]


def test_highlight_phrase_and_not_excluded_or_author(keyword: SyncedKeywordIndex) -> None:
    text = "Large language models. Language is large."
    spans = keyword.highlight(parse_query('"large language" -models author:Large'), text)
    marked = _marked(text, spans)
    assert "".join(marked).lower().replace(" ", "") == "largelanguage"
    assert spans[0].start == 0


def test_highlight_offsets_are_characters(keyword: SyncedKeywordIndex) -> None:
    text = "Naïve 🦘 résumé parsing"
    spans = keyword.highlight(parse_query("resume"), text)
    assert _marked(text, spans) == ["résumé"]
    assert keyword.highlight(parse_query("quokka"), "") == []
    assert keyword.highlight(parse_query(""), text) == []


QUERIES = st.one_of(
    st.text(max_size=300),
    st.lists(
        st.sampled_from(
            [
                '"',
                "-",
                "author:",
                'author:"',
                "cat:",
                "year:",
                "after:",
                "before:",
                "AND",
                "OR",
                "NOT",
                "(",
                ")",
                "*",
                "^",
                ":",
                "🦘",
                "\x00",
                "quokka",
                "drones",
                "large language",
                "2020-2023",
                "cs.CL",
                " ",
                "NEAR",
                "{title}",
                "\\",
                "'",
                "+",
                "~2",
                "Ada",
                "Lovelace",
                "ń",
                "\u0301",
            ]
        ),
        max_size=40,
    ).map("".join),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=QUERIES)
def test_engine_never_raises_on_any_string(keyword: SyncedKeywordIndex, raw: str) -> None:
    pq = parse_query(raw)
    hits = keyword.search(pq, 10)
    assert len(hits) <= 10
    spans = keyword.highlight(pq, "Quokka tracking with drones, large language models by Ada Lovelace")
    assert all(0 <= s.start < s.end for s in spans)


def test_accents_fold_in_author_names_both_ways(keyword: SyncedKeywordIndex) -> None:
    assert ids(keyword, "author:lovelace") == ids(keyword, "author:Lóvelace")


def mlt(
    keyword: SyncedKeywordIndex, title: str, abstract: str = FILLER, k: int = 10, **kw: object
) -> list[str]:
    return [hit.paper_id for hit in keyword.more_like_this(title, abstract, k, **kw)]  # type: ignore[arg-type]


def test_more_like_this_finds_the_paper_then_the_one_sharing_its_rare_words(
    keyword: SyncedKeywordIndex,
) -> None:
    found = mlt(keyword, "Quokka tracking with drones")
    # itself and the other quokka paper ("drones", in no other paper, cannot find anything: dropped)
    assert set(found[:2]) == {"ex.keep", "ex.drop"}
    hits = keyword.more_like_this("Quokka tracking with drones", FILLER, 10)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_more_like_this_honours_filters_inside_the_engine(keyword: SyncedKeywordIndex) -> None:
    # FILLER is in every paper: without the filter the 60 "transformer" papers would crowd the top k
    assert mlt(keyword, "Tokenizer tricks", k=3, filters=SearchFilters(categories=("cs.CV",))) == ["cat.cv"]
    years = SearchFilters(date_from=date(2024, 1, 1))
    assert mlt(keyword, "Tokenizer tricks", k=3, filters=years) == ["cat.ag"]


def test_more_like_this_keeps_the_most_distinctive_terms(keyword: SyncedKeywordIndex) -> None:
    # one term allowed: "zephyrine" (twice in the text) beats "estimation" (once), as rare in the index
    found = set(mlt(keyword, "Zephyrine zephyrine estimation", "", max_terms=1))
    assert {"w.title", "w.abstract"} <= found <= {"w.title", "w.abstract", "w.author"}
    two = set(mlt(keyword, "Zephyrine zephyrine estimation", "", max_terms=2))
    assert two == {"w.title", "w.abstract", "w.author"}  # "estimation" is in all three titles


def test_more_like_this_with_nothing_to_go_on_is_empty(keyword: SyncedKeywordIndex) -> None:
    assert mlt(keyword, "", "") == []
    assert mlt(keyword, "qwzx plmkj", "") == []  # words no paper has
    assert mlt(keyword, "Quokka tracking", k=0) == []
    assert mlt(keyword, "Quokka tracking", max_terms=0) == []


def test_more_like_this_breaks_ties_among_terms_the_same_way_every_time(keyword: SyncedKeywordIndex) -> None:
    # "quokka" and "analytical": once each in the text, each in two papers: equal tf-idf. One term allowed:
    # the first by the term, on every search (tantivy's own query chose differently between searches)
    lists = {tuple(mlt(keyword, "Quokka analytical", "", max_terms=1)) for _ in range(20)}
    assert len(lists) == 1
    assert set(next(iter(lists))) == {"au.ada", "au.other"}
