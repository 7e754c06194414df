"""Tantivy highlighting visits only the marked tokens (issue #19: it was a quarter of a search API
answer's CPU); it must give the spans the token-by-token loop gave, on real titles and abstracts."""

from __future__ import annotations

import random
from typing import Any

import pytest

from paperfeed.adapters.keyword.folding import fold
from paperfeed.adapters.keyword.tantivy_query import TANTIVY_WEIGHTS, TantivyQueries, _joined
from paperfeed.adapters.keyword.tantivy_writer import schema
from paperfeed.domain.query import parse_query
from paperfeed.domain.search import ParsedQuery, Span


def _token_by_token(queries: TantivyQueries, query: ParsedQuery, text: str) -> list[Span]:
    """The loop ``highlight`` had before (the reference): every token looked at."""
    if not text:
        return []
    singles, sequences = queries.highlight_terms(query)
    tokens = queries._analyzer.pre_tokenize(fold(text, "latin")).tokens
    stems = [t.text for t in tokens]
    marked = [stem in singles for stem in stems]
    for seq in sequences:
        n, first = len(seq), seq[0]
        for i, stem in enumerate(stems):
            if stem == first and tuple(stems[i : i + n]) == seq:
                marked[i : i + n] = [True] * n
    spans: list[Span] = []
    for i, token in enumerate(tokens):
        if not marked[i]:
            continue
        start, end = token.char_offset_from, token.char_offset_to
        if spans and i > 0 and marked[i - 1] and _joined(text, spans[-1].end, start):
            spans[-1] = Span(spans[-1].start, end)
        else:
            spans.append(Span(start, end))
    return spans


FIXED = [
    "language model",
    '"large language model"',
    '"state of the art" diffusion',
    "GPT-4 reasoning",
    "model's the of",
    '"vision-language" robot',
    "naïve Bayes café",
    "transformer -survey",
    'author:"Yann LeCun" attention',
]


@pytest.mark.parametrize("stemming", [True, False])
def test_spans_are_the_token_by_token_spans(hf_records: dict[str, dict[str, Any]], stemming: bool) -> None:
    queries = TantivyQueries(schema("en_stem" if stemming else "default"), TANTIVY_WEIGHTS, stemming=stemming)
    rng = random.Random(19)
    records = rng.sample(sorted(hf_records.values(), key=lambda r: str(r["id"])), 300)
    words = [w for r in records[:60] for w in str(r.get("title") or "").split() if w.isalpha()]
    drawn = [" ".join(rng.sample(words, 2)) for _ in range(20)]
    drawn += ['"' + " ".join(str(r.get("title") or "x").split()[:3]) + '"' for r in records[:10]]
    compared = marked = 0
    for text_query in FIXED + drawn:
        query = parse_query(text_query)
        for record in records:
            for text in (str(record.get("title") or ""), str(record.get("abstract") or "")):
                expected = _token_by_token(queries, query, text)
                assert queries.highlight(query, text) == expected, (text_query, record["id"])
                compared += 1
                marked += bool(expected)
    assert compared > 10_000  # the comparison covered texts with and without marks
    assert marked > 500
