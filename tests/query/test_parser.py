"""The query parser: the documented syntax, and that no string whatsoever makes it raise."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paperfeed.domain.query import MAX_QUERY_CHARS, MAX_TERMS, merge_filters, parse_query, with_filters
from paperfeed.domain.search import SearchFilters


def test_plain_words_phrases_exclusions() -> None:
    q = parse_query('sparse attention "large language models" -survey -"state space"')
    assert q.terms == ("sparse", "attention")
    assert q.phrases == (("large", "language", "models"),)
    assert q.excluded == ("survey", "state space")
    assert q.text == "sparse attention large language models"


def test_authors_and_categories() -> None:
    q = parse_query('author:Hinton au:"Yann LeCun" cat:cs.cl category:hep-TH cat:math.ag,q-bio.NC')
    assert q.authors == ("Hinton", "Yann LeCun")
    assert q.filters.categories == ("cs.CL", "hep-th", "math.AG", "q-bio.NC")
    assert q.terms == ()
    assert not q.empty  # an author alone is something to search for


@pytest.mark.parametrize(
    ("q", "start", "end"),
    [
        ("year:2024", date(2024, 1, 1), date(2024, 12, 31)),
        ("year:2020-2023", date(2020, 1, 1), date(2023, 12, 31)),
        ("year:2023-2020", date(2020, 1, 1), date(2023, 12, 31)),
        ("after:2019", date(2020, 1, 1), None),
        ("before:2021", None, date(2020, 12, 31)),
        ("after:2019-03-15", date(2019, 3, 16), None),
        ("before:2021-06-01", None, date(2021, 5, 31)),
        ("after:2019 before:2021 year:2020-2030", date(2020, 1, 1), date(2020, 12, 31)),
        ("YEAR:2024", date(2024, 1, 1), date(2024, 12, 31)),
    ],
)
def test_date_filters(q: str, start: date | None, end: date | None) -> None:
    f = parse_query(q).filters
    assert (f.date_from, f.date_to) == (start, end)


def test_contradictory_dates_match_nothing_rather_than_everything() -> None:
    f = parse_query("x after:2022 before:2020").filters
    assert f.date_from is not None
    assert f.date_to is not None
    assert f.date_from > f.date_to


@pytest.mark.parametrize("q", ["year:abc", "year:99999", "before:2021-02-30", "after:", "cat:***", "title:x"])
def test_malformed_filters_are_literal_text_or_dropped(q: str) -> None:
    parsed = parse_query(q)
    assert parsed.filters == SearchFilters()


def test_operators_and_syntax_are_never_syntax() -> None:
    q = parse_query("((quokka OR drones) AND NOT satellites) quo*ka^2 NEAR(x) title:y")
    assert q.terms == ("quokka", "drones", "satellites", "quo", "ka", "2", "NEAR", "x", "title", "y")
    assert q.excluded == ()
    assert parse_query("cats and dogs or not").terms == ("cats", "and", "dogs", "or", "not")


def test_unbalanced_quotes_and_joined_words() -> None:
    assert parse_query('"open quote here').terms == ("open", "quote", "here")
    assert parse_query('a "b c" "d').phrases == (("b", "c"),)
    assert parse_query("GPT-4 cs.CL (C++) TCP/IP").terms == ("GPT-4", "cs.CL", "C", "TCP/IP")


def test_control_characters_emoji_and_duplicates() -> None:
    q = parse_query("\x00quokka\x1b[31m 🦘 Quokka quokka\u200b")
    assert q.terms == ("quokka", "31m")
    assert "\x00" not in q.raw


def test_long_input_is_bounded() -> None:
    q = parse_query("word" + " w" * 20_000)
    assert len(q.raw) <= MAX_QUERY_CHARS
    assert len(q.terms) <= MAX_TERMS
    assert parse_query("a" * 10_000).terms == ()  # not a word anyone meant
    many = parse_query(" ".join(f"w{i}" for i in range(500)))
    assert len(many.terms) == MAX_TERMS


def test_merge_filters_intersects() -> None:
    a = SearchFilters(date_from=date(2020, 1, 1), categories=("cs.CL", "cs.LG"))
    b = SearchFilters(
        date_from=date(2021, 1, 1), date_to=date(2022, 1, 1), categories=("cs.LG",), has_code=True
    )
    m = merge_filters(a, b)
    assert m == SearchFilters(date(2021, 1, 1), date(2022, 1, 1), ("cs.LG",), True)
    disjoint = merge_filters(SearchFilters(categories=("cs.CL",)), SearchFilters(categories=("cs.CV",)))
    assert disjoint.categories
    assert "cs.CL" not in disjoint.categories
    assert "cs.CV" not in disjoint.categories
    q = parse_query("x cat:cs.CL")
    assert with_filters(q, None) is q
    assert with_filters(q, SearchFilters(has_code=False)).filters.has_code is False


QUERY_ALPHABET = st.one_of(
    st.text(),
    st.text(alphabet=st.sampled_from(list("\"-:()*^~ ANDORNOTauthorcatyearbefore2019.,\\'{}[]"))),
    st.lists(
        st.sampled_from(
            [
                '"',
                "-",
                "author:",
                'author:"',
                "cat:",
                "year:",
                "before:",
                "after:",
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
                "model",
                "2020-2023",
                "cs.CL",
                " ",
                "\u0301",
            ]
        )
    ).map("".join),
)


@settings(max_examples=400, deadline=None)
@given(QUERY_ALPHABET)
def test_any_string_parses(raw: str) -> None:
    q = parse_query(raw)
    for word in (*q.terms, *q.excluded, *q.authors, *(w for p in q.phrases for w in p)):
        assert word.strip() == word
        assert word
        assert not any(ord(ch) < 32 for ch in word)
    assert len(q.terms) + sum(len(p) for p in q.phrases) <= MAX_TERMS
    if q.filters.date_from and q.filters.date_to:
        assert isinstance(q.filters.date_from, date)


def test_negated_filters_are_ignored_not_searched() -> None:
    q = parse_query('quokka -author:Smith -cat:cs.CL -year:2020 -au:"Ada Lovelace"')
    assert q.terms == ("quokka",)
    assert q.excluded == ()
    assert q.authors == ()
    assert q.filters == SearchFilters()
