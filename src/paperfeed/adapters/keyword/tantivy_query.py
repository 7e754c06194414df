"""Queries on the tantivy index: :class:`~paperfeed.domain.search.ParsedQuery` to tantivy's query
objects (never its query-string parser), and highlighting, tokenised by the same analyzer as the documents.
"""

from __future__ import annotations

import math
import re
import sys
from array import array
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import tantivy

from paperfeed.domain.search import ParsedQuery, SearchFilters, Span, distinctive_terms

from .folding import fold
from .tantivy_writer import EPOCH, FIELDS
from .weights import FieldWeights

__all__ = ["TANTIVY_WEIGHTS", "TantivyQueries", "analyzer"]

# Scoring is BM25 on a catch-all ``text`` field (title + abstract, weight ``abstract``) plus ``title``
# times the BM25 of the title field alone, plus ``authors`` times the authors field's: a title match
# always adds to a text match, so title > abstract > authors holds whatever the field lengths (tantivy has
# no BM25F; summing separate title and abstract scores let short titles swamp everything). Chosen on
# SciFact train with bench/keyword_quality.py (title 0.2: train nDCG@10 0.697, test 0.692).
TANTIVY_WEIGHTS = FieldWeights(title=0.2, abstract=1.0, authors=0.2)


def analyzer(stemming: bool = True, *, stop_words: bool = False) -> tantivy.TextAnalyzer:
    """Query-side twin of tantivy's built-in ``en_stem`` (``default`` without stemming) analyzer: runs of
    letters/digits, tokens over 40 bytes dropped, lower-cased, English Snowball stems.

    Documents are analysed by the built-in one, which costs ~25% less CPU than the same chain registered
    from Python; accents are folded beforehand by :func:`~.folding.fold` (its ``"latin"`` rules).

    ``stop_words`` adds tantivy's English stop-word list, for a query's loose words only: "the", "of",
    "and" match nearly every abstract and add next to nothing to a BM25 ranking, yet each one is a long
    posting list that defeats top-k pruning (at 1M papers, dropping them from 3-6-word title queries took
    the keyword leg, k=100, from p50 11 / p99 44 ms to 4.3 / 18.5 ms). Phrases keep them ("the the" is a
    band), and a query of nothing but stop words still searches for them.
    """
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
    )
    if stop_words:
        builder = builder.filter(tantivy.Filter.stopword("english"))
    if stemming:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()


# Texts whose analysis (stems and offsets) highlighting keeps: tantivy's analysis is ~90 % of highlighting
# and does not depend on the query, while the same popular papers come back in search after search. An
# entry is the text itself (the key) plus ~16 bytes a token (stems interned, offsets in arrays): about
# 5 kB for an abstract, so at most ~10 MB a process. A changed text is another key: nothing goes stale.
ANALYSED_TEXTS = 2048

_POSSESSIVE = re.compile(r"['\u2019]s\b", re.IGNORECASE)


class TantivyQueries:
    """Builds the queries of one index (its schema, analyzer and field weights) and highlights texts."""

    def __init__(self, schema: tantivy.Schema, weights: FieldWeights, *, stemming: bool) -> None:
        self.schema = schema
        self.weights = weights
        self._analyzer = analyzer(stemming)
        self._word_analyzer = analyzer(stemming, stop_words=True)
        self._highlight_cache: dict[ParsedQuery, tuple[frozenset[str], tuple[tuple[str, ...], ...]]] = {}
        self._analysed = lru_cache(maxsize=ANALYSED_TEXTS)(self._analyse)  # thread-safe, bounded

    def _analyse(self, text: str) -> tuple[tuple[str, ...], array[int], array[int]]:
        """``text``'s stems and their character offsets (start, end), as highlighting reads them."""
        tokens = self._analyzer.pre_tokenize(fold(text, "latin")).tokens
        stems = tuple(sys.intern(t.text) for t in tokens)
        return (
            stems,
            array("l", [t.char_offset_from for t in tokens]),
            array("l", [t.char_offset_to for t in tokens]),
        )

    def tokens(self, words: str) -> list[str]:
        return list(self._analyzer.analyze(fold(words, "latin")))

    def word_tokens(self, query: ParsedQuery) -> list[list[str]]:
        """The analysed loose words, without stop words, single letters and possessive 's ("that's")
        unless nothing else is left to search for.

        A word that analyses into several tokens ("GPT-4", "state-of-the-art") becomes its content tokens
        as separate words ("gpt", "4"; "state", "art"): a phrase there would take the whole query off
        tantivy's pruned path and read position lists of common tokens (at 1M papers ~280 MB of them
        mapped in); papers with all the parts still rank first, and quotes keep the exact phrase.
        """
        words = [_POSSESSIVE.sub("", fold(term, "latin")) for term in query.terms]
        kept = [[t] for word in words for t in self._word_analyzer.analyze(word) if len(t) > 1 or t.isdigit()]
        if kept or query.phrases or query.authors:
            return kept
        return [tokens for word in words if (tokens := self.tokens(word))]

    def match(self, field: str, tokens: Sequence[str]) -> tantivy.Query:
        if len(tokens) == 1:
            return tantivy.Query.term_query(self.schema, field, tokens[0])
        return tantivy.Query.phrase_query(self.schema, field, list(tokens))

    def field_clauses(self, tokens: Sequence[str]) -> list[tuple[tantivy.Occur, tantivy.Query]]:
        """One boosted Should clause per weighted field: the weighted sum of the fields' BM25."""
        w = self.weights
        boosts = {"text": w.abstract, "title": w.title, "authors": w.authors}
        return [
            (tantivy.Occur.Should, tantivy.Query.boost_query(self.match(f, tokens), boosts[f]))
            for f in FIELDS
            if boosts[f] > 0
        ]

    def fields_query(self, tokens: Sequence[str]) -> tantivy.Query:
        """Match in any field; the score is the weighted sum of the fields' BM25 (see TANTIVY_WEIGHTS)."""
        return tantivy.Query.boolean_query(self.field_clauses(tokens))

    def filter_queries(self, filters: SearchFilters) -> list[tantivy.Query]:
        out: list[tantivy.Query] = []
        if filters.date_from is not None or filters.date_to is not None:
            out.append(
                tantivy.Query.range_query(
                    self.schema,
                    "day",
                    tantivy.FieldType.Integer,
                    (filters.date_from - EPOCH).days if filters.date_from else None,
                    (filters.date_to - EPOCH).days if filters.date_to else None,
                )
            )
        if filters.categories:
            out.append(tantivy.Query.term_set_query(self.schema, "cat", list(filters.categories)))
        if filters.has_code is not None:
            out.append(tantivy.Query.term_query(self.schema, "code", filters.has_code))
        if filters.paper_ids is not None:  # a topic's papers (an empty set matches nothing)
            out.append(tantivy.Query.term_set_query(self.schema, "id", sorted(filters.paper_ids)))
        return out

    def build(self, query: ParsedQuery) -> tantivy.Query | None:
        """The tantivy query for ``query``, or None when nothing in it can match."""
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        filters = self.filter_queries(query.filters)
        must = False
        for phrase in query.phrases:
            tokens = self.tokens(" ".join(phrase))
            if tokens:
                clauses.append((tantivy.Occur.Must, self.fields_query(tokens)))
                must = True
        for name in query.authors:
            tokens = self.tokens(name)
            if tokens:
                clauses.append((tantivy.Occur.Must, self.match("authors", tokens)))
                must = True
        # The words' (term, field) clauses go into ONE flat disjunction, not a disjunction of per-word
        # disjunctions: the score is the same sum, but a flat union of term scorers is what tantivy's
        # block-max WAND prunes (top-k without scoring every match). At 1M papers it took 3-6-word
        # queries from p50 37 to 17 ms at k=100 (the bench/speed.py 1M index), with identical results.
        shoulds = []
        for tokens in self.word_tokens(query):
            shoulds.extend(self.field_clauses(tokens))
        if not must and not shoulds:
            return None
        if must:
            clauses.extend(shoulds)  # next to a Must, a Should only adds to the score
        elif not query.excluded and not filters:
            return tantivy.Query.boolean_query(shoulds)  # the plain OR query: pruned top-k
        else:
            clauses.append((tantivy.Occur.Must, tantivy.Query.boolean_query(shoulds)))
        for word in query.excluded:
            tokens = self.tokens(word)
            if tokens:
                for field in ("text", "authors"):
                    clauses.append((tantivy.Occur.MustNot, self.match(field, tokens)))
        for flt in filters:
            clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(flt, 0.0)))
        return tantivy.Query.boolean_query(clauses)

    def more_like_this(
        self,
        title: str,
        abstract: str,
        filters: SearchFilters | None,
        max_terms: int,
        searcher: tantivy.Searcher,
    ) -> tantivy.Query | None:
        """ "More like this" on the catch-all ``text`` field: the ``max_terms`` terms of the text with the
        highest tf-idf in the index (analysed like the documents, two letters or more, in at least two
        papers: one is the paper itself), each boosted by its tf-idf, OR-ed and BM25-scored.

        Chosen here (``domain.search.distinctive_terms``, ties by the term) rather than by tantivy's own
        more-like-this query, which breaks ties among equally weighted terms differently on each search:
        a paper's similar list changed between two requests.
        """
        tokens = [t for t in self.tokens(f"{title} {abstract}") if len(t) >= 2]
        if not tokens or max_terms <= 0:
            return None
        counts = Counter(tokens)
        doc_freq = {t: float(searcher.doc_freq("text", t)) for t in counts}
        total = float(searcher.num_docs)
        terms = distinctive_terms(counts, doc_freq, total, max_terms)
        if not terms:
            return None
        weight = {
            t: counts[t] * math.log(1.0 + (total - doc_freq[t] + 0.5) / (doc_freq[t] + 0.5)) for t in terms
        }
        like = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.boost_query(self.match("text", [t]), weight[t]))
                for t in terms
            ]
        )
        constraints = self.filter_queries(filters or SearchFilters())
        if not constraints:
            return like
        clauses = [(tantivy.Occur.Must, like)]
        clauses += [(tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0)) for f in constraints]
        return tantivy.Query.boolean_query(clauses)

    def highlight_terms(self, query: ParsedQuery) -> tuple[frozenset[str], tuple[tuple[str, ...], ...]]:
        """The query's single stems and multi-token runs, analysed once per query (a results page
        highlights twenty texts with the same query)."""
        found = self._highlight_cache.get(query)
        if found is None:
            singles: set[str] = set()
            sequences: list[tuple[str, ...]] = []
            for seq in [*self.word_tokens(query), *(self.tokens(" ".join(p)) for p in query.phrases)]:
                if len(seq) == 1:
                    singles.add(seq[0])
                elif seq:
                    sequences.append(tuple(seq))
            found = (frozenset(singles), tuple(sequences))
            if len(self._highlight_cache) >= 256:
                self._highlight_cache.clear()
            self._highlight_cache[query] = found
        return found

    def highlight(self, query: ParsedQuery, text: str) -> list[Span]:
        """Tokens of ``text`` whose analysed form (stem) equals a query term's, and phrase runs."""
        if not text:
            return []
        singles, sequences = self.highlight_terms(query)
        stems, starts, ends = self._analysed(text)
        if sequences:
            marked = [stem in singles for stem in stems]
            for seq in sequences:
                n, first = len(seq), seq[0]
                for i, stem in enumerate(stems):
                    if stem == first and tuple(stems[i : i + n]) == seq:
                        marked[i : i + n] = [True] * n
            hits = [i for i, m in enumerate(marked) if m]
        else:
            hits = [i for i, stem in enumerate(stems) if stem in singles]
        # The analysis is kept per text (ANALYSED_TEXTS); then only the marked tokens are visited.
        spans: list[Span] = []
        previous = -2
        for i in hits:
            start, end = starts[i], ends[i]
            if spans and previous == i - 1 and _joined(text, spans[-1].end, start):
                spans[-1] = Span(spans[-1].start, end)  # one span per phrase, as FTS5 gives
            else:
                spans.append(Span(start, end))
            previous = i
        return spans


def _joined(text: str, end: int, start: int) -> bool:
    return start >= end and not text[end:start].strip(" -")
