"""The safe query parser: whatever a user types becomes a :class:`ParsedQuery`, never engine syntax.

Grammar (case-insensitive keys, everything unrecognised is literal text):

* ``word``                      a term (OR-ed with the other terms, ranked by BM25)
* ``"exact phrase"``            must occur, words adjacent (engines stem, so ``"language models"`` also
                                matches "language model")
* ``-word`` / ``-"a phrase"``   must not occur (``-author:X`` and other negated filters are ignored)
* ``author:Name`` / ``author:"Full Name"``   an author name containing these words (each ``author:`` must
                                match; aliases ``au:``)
* ``cat:cs.CL`` (alias ``category:``; ``cat:cs.CL,cs.LG`` allowed)   any of the named arXiv categories;
                                case is normalised (``cs.cl`` → ``cs.CL``, ``hep-TH`` → ``hep-th``)
* ``year:2024``, ``year:2020-2023``     published within those calendar years (inclusive)
* ``after:2019`` / ``before:2021``      published strictly after / before that year (``after:2019`` means
                                from 2020-01-01); a full date also works: ``after:2019-03-15`` means from
                                2019-03-16, ``before:2021-06-01`` up to 2021-05-31. Several date filters
                                intersect; an empty intersection matches nothing.
* ``topic:12``                  only papers of topic 12 (``/topics/12``; a coarse topic takes its fine
                                topics' papers; a topic a rebuild removed means its successor, an unknown
                                one matches nothing, and the search says so). Two different topics match
                                nothing. A value that is not a number is literal text.

Upper-case ``AND``/``OR``/``NOT`` are dropped (they are not operators here and would only rank on
stop-words); lower-case ``and``/``or``/``not`` stay words. Brackets, ``*``, ``^``, ``:``, ``~`` and other
operator-like punctuation split words (``quokka^2`` is ``quokka 2``), while ``-``, ``.``, ``+``, ``/``
and ``'`` inside a word keep it one term (``GPT-4``, ``cs.CL``) that engines match as adjacent parts.
Emoji and other symbols around words are stripped; control characters become spaces; an unmatched ``"``
is ignored. Input is cut to :data:`MAX_QUERY_CHARS` characters and :data:`MAX_TERMS` terms so no query
can make an engine do unbounded work. Parsing never raises.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from datetime import date, timedelta

from .search import ParsedQuery, SearchFilters

__all__ = ["MAX_QUERY_CHARS", "MAX_TERMS", "merge_filters", "parse_query", "with_filters"]

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32  # terms + phrase words + excluded + author words, in total
MAX_CATEGORIES = 16
MAX_WORD_CHARS = 64  # longer "words" (hashes, base64, a pasted 10 kB token) cannot be meant as words
_MIN_YEAR, _MAX_YEAR = 1000, 9998  # date(9999, 12, 31) + 1 day would overflow

# A chunk is a quoted span (with an optional ``-`` and/or ``key:`` in front) or a run of non-spaces.
_CHUNK = re.compile(r'-?(?:[A-Za-z]+:)?"[^"]*"|\S+')
_KEY = re.compile(r"^([A-Za-z]+):(.*)$", re.DOTALL)
_YEAR = re.compile(r"^(\d{4})$")
_YEAR_RANGE = re.compile(r"^(\d{4})\s*[-–..]+\s*(\d{4})$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_CATEGORY = re.compile(r"^([A-Za-z][A-Za-z\-]*)(?:\.([A-Za-z][A-Za-z\-]*))?$")
_OPERATORS = frozenset({"AND", "OR", "NOT"})
_AUTHOR_KEYS = frozenset({"author", "au", "authors"})
_CATEGORY_KEYS = frozenset({"cat", "category", "categories"})
_TOPIC_KEYS = frozenset({"topic"})
_TOPIC = re.compile(r"^[0-9]{1,9}$")  # ASCII digits only ("²".isdigit() is True)
_FILTER_KEYS = _AUTHOR_KEYS | _CATEGORY_KEYS | _TOPIC_KEYS | {"year", "before", "after"}


def _clean(raw: str) -> str:
    """Control/format characters become spaces (a NUL must not reach an engine); cut to the limit."""
    text = raw[: MAX_QUERY_CHARS * 4]
    text = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in text)
    if len(text) > MAX_QUERY_CHARS:  # cut at a space so the last word is not a fragment
        cut = text.rfind(" ", 0, MAX_QUERY_CHARS)
        text = text[: cut if cut > MAX_QUERY_CHARS // 2 else MAX_QUERY_CHARS]
    return text


def _word(chunk: str) -> str:
    """Strip everything that is not a letter or digit from both ends ("(GPT-4)," → "GPT-4")."""
    start, end = 0, len(chunk)
    while start < end and not chunk[start].isalnum():
        start += 1
    while end > start and not chunk[end - 1].isalnum():
        end -= 1
    return chunk[start:end]


def _usable(word: str) -> bool:
    return bool(word) and word not in _OPERATORS and len(word) <= MAX_WORD_CHARS


# Characters that are operators in some query language: they split words here ("quokka^2" → "quokka",
# "2"). Characters that join parts of one name stay inside a term ("GPT-4", "cs.CL", "C++", "TCP/IP").
_SYNTAX = re.compile(r"""[()\[\]{}^~*!?,;:"<>|\\=`$%]+""")


def _words(text: str) -> tuple[str, ...]:
    return tuple(w for w in (_word(part) for part in _SYNTAX.sub(" ", text).split()) if _usable(w))


def _year_start(year: int) -> date | None:
    return date(year, 1, 1) if _MIN_YEAR <= year <= _MAX_YEAR else None


def _parse_day(value: str) -> date | None:
    """``YYYY`` → None here (callers handle years); ``YYYY-MM-DD`` → that date if valid."""
    m = _DATE.match(value)
    if not m:
        return None
    try:
        day = date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None
    return day if _MIN_YEAR <= day.year <= _MAX_YEAR else None


def _date_range(key: str, value: str) -> tuple[date | None, date | None] | None:
    """The inclusive ``(from, to)`` a date filter means, or None when the value is not a date."""
    value = value.strip()
    if key == "year":
        if m := _YEAR.match(value):
            start = _year_start(int(m[1]))
            return (start, date(start.year, 12, 31)) if start else None
        if m := _YEAR_RANGE.match(value):
            lo, hi = sorted((int(m[1]), int(m[2])))
            first, last = _year_start(lo), _year_start(hi)
            return (first, date(last.year, 12, 31)) if first and last else None
        return None
    if m := _YEAR.match(value):
        year = int(m[1])
        if key == "after":
            start = _year_start(year + 1)
            return (start, None) if start else None
        start = _year_start(year)
        return (None, start - timedelta(days=1)) if start else None
    day = _parse_day(value)
    if day is None:
        return None
    return (day + timedelta(days=1), None) if key == "after" else (None, day - timedelta(days=1))


def _category(value: str) -> str | None:
    """arXiv category with its conventional case: archive lower, 2-letter subject class upper."""
    m = _CATEGORY.match(value)
    if not m:
        return None
    archive, subject = m[1].lower(), m[2]
    if subject is None:
        return archive
    return f"{archive}.{subject.upper() if len(subject) == 2 else subject.lower()}"


def _later(a: date | None, b: date | None) -> date | None:
    return b if a is None else a if b is None else max(a, b)


def _earlier(a: date | None, b: date | None) -> date | None:
    return b if a is None else a if b is None else min(a, b)


def _both_topics(a: SearchFilters, b: SearchFilters) -> tuple[int | None, frozenset[str] | None]:
    """The topic and allow-list of two filters at once: two different topics (or disjoint allow-lists)
    leave an empty allow-list, which matches nothing."""
    topic = a.topic if a.topic is not None else b.topic
    if a.paper_ids is not None and b.paper_ids is not None:
        ids: frozenset[str] | None = a.paper_ids & b.paper_ids
    else:
        ids = a.paper_ids if a.paper_ids is not None else b.paper_ids
    if a.topic is not None and b.topic is not None and a.topic != b.topic:
        ids = frozenset()
    return topic, ids


def merge_filters(a: SearchFilters, b: SearchFilters) -> SearchFilters:
    """Both sets of restrictions at once: dates intersect; category lists intersect when both are set;
    topics and allow-lists intersect (see :func:`_both_topics`)."""
    if a.categories and b.categories:
        cats = tuple(c for c in a.categories if c in set(b.categories)) or ("\x00none",)
    else:
        cats = a.categories or b.categories
    if a.has_code is not None and b.has_code is not None and a.has_code != b.has_code:
        has_code: bool | None = None
        cats = ("\x00none",)  # contradictory: match nothing rather than ignore a restriction
    else:
        has_code = a.has_code if a.has_code is not None else b.has_code
    topic, ids = _both_topics(a, b)
    return SearchFilters(
        date_from=_later(a.date_from, b.date_from),
        date_to=_earlier(a.date_to, b.date_to),
        categories=cats,
        has_code=has_code,
        topic=topic,
        paper_ids=ids,
    )


def with_filters(query: ParsedQuery, filters: SearchFilters | None) -> ParsedQuery:
    """``query`` further restricted by request filters (e.g. the API's date/category parameters)."""
    if filters is None or not filters.active:
        return query
    return replace(query, filters=merge_filters(query.filters, filters))


def _dedupe(items: list[str]) -> tuple[str, ...]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.casefold()
        if key not in seen:
            seen.add(key)
            out.append(item)
    return tuple(out)


def parse_query(raw: str) -> ParsedQuery:
    """Split ``raw`` into terms, phrases, exclusions, authors and filters. Never raises."""
    text = _clean(raw if isinstance(raw, str) else str(raw)).strip()
    terms: list[str] = []
    phrases: list[tuple[str, ...]] = []
    excluded: list[str] = []
    authors: list[str] = []
    categories: list[str] = []
    date_from: date | None = None
    date_to: date | None = None
    topic: int | None = None
    nothing = False  # two different topics: an empty allow-list
    budget = MAX_TERMS

    def take(words: tuple[str, ...]) -> tuple[str, ...]:
        nonlocal budget
        kept = words[: max(budget, 0)]
        budget -= len(kept)
        return kept

    for m in _CHUNK.finditer(text):
        chunk = m.group(0)
        negated = chunk.startswith("-")
        body = chunk[1:] if negated else chunk
        key_match = _KEY.match(body)
        if key_match and negated and key_match[1].lower() in _FILTER_KEYS:
            continue  # "-author:X", "-cat:Y": exclusion by field is not supported; never a text search
        if key_match and not negated:
            key, value = key_match[1].lower(), key_match[2]
            quoted = len(value) >= 2 and value.startswith('"') and value.endswith('"')
            if quoted:
                value = value[1:-1]
            if key in _AUTHOR_KEYS:
                name = take(_words(value))
                if name:
                    authors.append(" ".join(name))
                continue
            if key in _CATEGORY_KEYS:
                for part in value.split(","):
                    cat = _category(part.strip())
                    if cat and len(categories) < MAX_CATEGORIES:
                        categories.append(cat)
                continue
            if key in _TOPIC_KEYS and _TOPIC.match(value.strip()):
                number = int(value.strip())
                nothing = nothing or (topic is not None and topic != number)
                topic = number if topic is None else topic
                continue
            if key in ("year", "before", "after"):
                span = _date_range(key, value)
                if span is not None:
                    date_from, date_to = _later(date_from, span[0]), _earlier(date_to, span[1])
                    continue
        if len(body) >= 2 and body.startswith('"') and body.endswith('"'):
            words = take(_words(body[1:-1]))
            if not words:
                continue
            if negated:
                excluded.append(" ".join(words))
            else:
                phrases.append(words)
            continue
        words = _words(body)
        if negated:
            excluded.extend(take(words[:1]))
            terms.extend(take(words[1:]))
        else:
            terms.extend(take(words))
    if date_from and date_to and date_from > date_to:
        date_to = date_from - timedelta(days=1)  # keep it empty: never silently drop a restriction
    filters = SearchFilters(
        date_from=date_from,
        date_to=date_to,
        categories=_dedupe(categories),
        topic=topic,
        paper_ids=frozenset() if nothing else None,
    )
    return ParsedQuery(
        raw=text,  # what was understood: control characters blanked, length capped
        terms=_dedupe(terms),
        phrases=tuple(dict.fromkeys(phrases)),
        excluded=_dedupe(excluded),
        authors=_dedupe(authors),
        filters=filters,
    )
