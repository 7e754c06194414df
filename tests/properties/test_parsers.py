"""Property tests: the query parser and the id parser take any text and answer cleanly."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paperfeed.domain.ids import ArxivId, InvalidPaperId, normalize_paper_id, parse_arxiv_id
from paperfeed.domain.query import MAX_QUERY_CHARS, MAX_TERMS, parse_query
from paperfeed.domain.search import ParsedQuery
from tests.support.hostile import STRINGS

# Any code point, surrogates included (a JSON body or a form can carry a lone one).
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=300)
QUERY_PIECES = st.sampled_from(
    ['"', "-", "author:", "cat:", "year:", "after:", "before:", "AND", "OR", "NOT", "(", ")", "*", ":",
     "cs.CL", "2024", "2020-2023", "2019-03-15", "au:\"A B\"", "\x00", "🧬", "\u202e", " ", "é"]
)  # fmt: skip
QUERIES = st.one_of(ANY_TEXT, st.lists(st.one_of(QUERY_PIECES, ANY_TEXT), max_size=40).map(" ".join))


def _words(q: ParsedQuery) -> list[str]:
    return [
        *q.terms,
        *(w for p in q.phrases for w in p),
        *q.excluded,
        *(w for a in q.authors for w in a.split()),
    ]


def assert_bounded(parsed: ParsedQuery) -> None:
    assert isinstance(parsed, ParsedQuery)
    words = _words(parsed)
    assert len(words) <= MAX_TERMS
    for word in words:
        assert word.strip()
        assert len(word) <= MAX_QUERY_CHARS
        assert not any(unicodedata.category(ch) in ("Cc", "Cs") for ch in word), repr(word)
    assert len(parsed.filters.categories) <= 16


@settings(max_examples=400, deadline=None)
@given(QUERIES)
def test_any_query_parses_to_bounded_safe_parts(raw: str) -> None:
    assert_bounded(parse_query(raw))


@pytest.mark.parametrize(("name", "value"), STRINGS, ids=[n for n, _ in STRINGS])
def test_hostile_queries(name: str, value: str) -> None:
    assert_bounded(parse_query(value))


@settings(max_examples=400)
@given(st.one_of(ANY_TEXT, st.from_regex(r"(arXiv:)?\d{4}\.\d{4,5}(v\d{1,4})?", fullmatch=True)))
def test_any_id_parses_or_is_refused_cleanly(text: str) -> None:
    for parse in (parse_arxiv_id, normalize_paper_id):
        try:
            parsed = parse(text)
        except InvalidPaperId as exc:
            message = str(exc)  # says why
            assert message.startswith("not "), message
            continue
        assert isinstance(parsed, ArxivId)
        assert parse(str(parsed)) == parsed  # canonical spellings are fixed points
        assert parse(parsed.base).base == parsed.base


@pytest.mark.parametrize(("name", "value"), STRINGS, ids=[n for n, _ in STRINGS])
def test_hostile_ids(name: str, value: str) -> None:
    with pytest.raises(InvalidPaperId):
        normalize_paper_id(value)
