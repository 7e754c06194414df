"""Keyword search with PostgreSQL full-text search: the store's own weighted ``tsvector``, GIN-indexed.

Migration 0009 gives ``papers`` a ``search_tsv`` column (title weight A, abstract B, authors C, English
stemming, accents folded) that a trigger recomputes in the same transaction as any change to the text,
so the index can never lag the store and there is nothing to catch up, flush or rebuild after a crash.

Queries are built only from :class:`~paperfeed.domain.search.ParsedQuery` parts, each passed as a bound
parameter through ``phraseto_tsquery`` and combined with ``tsquery_and``/``tsquery_or``/``tsquery_not``:
user text never reaches ``to_tsquery``'s operator syntax (the safe subset ``websearch_to_tsquery`` offers,
with our own grammar). Phrases and ``author:`` names must match (a name only among the authors' lexemes,
via ``ts_filter``), terms are OR-ed (and next to a phrase only rank), exclusions are NOT-ed; filters are
plain WHERE clauses on the same rows, so a selective filter never starves the top k. Ranking is
``ts_rank`` with field weights (title > abstract > authors) and document-length normalisation.

Ranking is the cost: ``ts_rank`` reads (de-TOASTs) every matching row's document, ~3.5 µs a row, and an
OR of everyday words matches a third of the corpus ("deep learning for image segmentation": 64k of 200k
papers, ~300 ms). So a query of several words first ranks only *candidates*: papers with any of its
uncommon words (in under ``COMMON_SHARE`` of the papers, by the column's ``pg_stats`` lexeme
frequencies, which ANALYZE keeps) or with all of its common ones. Papers matching only some common words
are the ones BM25 would rank last, and ``ts_rank`` (which has no IDF) scores every candidate exactly as
before; when the candidates are fewer than k, the full OR query runs instead. Without filters, a query
whose common words (by the same frequencies) would put more than ``RANKED_ROWS`` papers in the ranking
ranks only the newest that many (an everyday word alone matches half the corpus). ``python -m
bench.pg_keyword`` at 200k papers, k=10: p50 267 → 18 ms, p99 1,309 → 172 ms; the top 10 overlap the
old ranking's by 0.80 (candidates alone: 0.90); SciFact test nDCG@10 0.615 → 0.622.

Highlighting runs in Python on the words of the text, each stemmed by PostgreSQL's own English stemmer
(``ts_lexize('english_stem', ...)``) once and then remembered, so a results page costs no round trips
once its words have been seen.
"""

from __future__ import annotations

import math
import re
import threading
import time as clock
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from sqlalchemy import text as sql
from sqlalchemy.engine import Engine

from paperfeed.adapters.keyword.folding import fold
from paperfeed.domain.search import ParsedQuery, ScoredId, SearchFilters, Span, distinctive_terms

__all__ = [
    "PG_WEIGHTS",
    "PgFieldWeights",
    "PostgresFtsUnavailable",
    "PostgresKeywordIndex",
    "postgres_fts_available",
]

CONFIG = "pg_catalog.english"  # must equal migration 0009's
_WORD = re.compile(r"[^\W_]+")  # runs of letters and digits, as PostgreSQL's parser splits words
_MAX_CACHED_WORDS = 200_000
# A word in at least this share of the papers is "common": alone it does not make a paper a candidate.
COMMON_SHARE = 0.02
# At most this many matches are ranked, the newest first (a query of one everyday word matches half the
# corpus: "model", 110k of 200k papers, took ~550 ms to rank in full).
RANKED_ROWS = 5000
_STATS_TTL = 600.0  # seconds between re-reads of the lexeme frequencies in pg_stats


class PostgresFtsUnavailable(RuntimeError):
    """The database is not PostgreSQL, or its schema predates migration 0009."""


@dataclass(frozen=True, slots=True)
class PgFieldWeights:
    """``ts_rank`` weight per field (each in (0, 1]) and its length normalisation flags.

    Chosen on SciFact train (``python -m bench.backends --quality``): title 1, abstract 0.7, normalisation
    1 → train nDCG@10 0.615, test 0.615 (abstract 0.4: 0.568/0.574; normalisation 0 or 32: ≤ 0.609/0.593;
    2: ≤ 0.372). ts_rank is no BM25: tantivy reaches test 0.692 on the same protocol.
    """

    title: float = 1.0
    abstract: float = 0.7
    authors: float = 0.2
    normalization: int = 1  # 1: rank / (1 + log(document length)), like BM25's length penalty

    def __post_init__(self) -> None:
        for name in ("title", "abstract", "authors"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 < value <= 1):
                raise ValueError(f"field weight {name}={value!r}: must be a number in (0, 1]")

    @property
    def array(self) -> str:
        """``{D, C, B, A}`` as ``ts_rank`` wants it (D is unused: every lexeme has A, B or C)."""
        return "{%r,%r,%r,%r}" % (0.0, float(self.authors), float(self.abstract), float(self.title))  # noqa: UP031


PG_WEIGHTS = PgFieldWeights()


def postgres_fts_available(engine: Engine) -> bool:
    if engine.dialect.name != "postgresql":
        return False
    with engine.connect() as conn:
        found = conn.execute(
            sql(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = 'papers' AND column_name = 'search_tsv'"
            )
        ).first()
    return found is not None


def _tsquery(param: str) -> str:
    return f"phraseto_tsquery('{CONFIG}', paperfeed_fold(:{param}))"


def _all(parts: list[str], combine: str) -> str:
    expr = parts[0]
    for part in parts[1:]:
        expr = f"{combine}({expr}, {part})"
    return expr


def _filter_sql(filters: SearchFilters, params: dict[str, Any]) -> list[str]:
    where: list[str] = []
    if filters.date_from is not None:
        where.append("p.published >= :date_from")
        params["date_from"] = datetime.combine(filters.date_from, time.min, UTC)
    if filters.date_to is not None:
        where.append("p.published < :date_after")
        params["date_after"] = datetime.combine(filters.date_to + timedelta(days=1), time.min, UTC)
    if filters.categories:
        where.append("jsonb_exists_any(CAST(p.categories AS jsonb), CAST(:cats AS text[]))")
        params["cats"] = list(filters.categories)
    if filters.has_code is True:
        where.append("p.github_repo IS NOT NULL")
    elif filters.has_code is False:
        where.append("p.github_repo IS NULL")
    if filters.paper_ids is not None:  # a topic's papers
        where.append("p.id = ANY(CAST(:only_ids AS text[]))")
        params["only_ids"] = sorted(filters.paper_ids)
    return where


def build_statement(
    query: ParsedQuery,
    k: int,
    weights: PgFieldWeights = PG_WEIGHTS,
    candidates: tuple[list[int], list[int]] | None = None,
    ranked: int | None = None,
) -> tuple[str, dict[str, Any]] | None:
    """The SQL and its parameters for ``query``, or None when nothing in it can match.

    ``candidates`` = (uncommon, common) positions among the query's non-empty terms: without phrases or
    authors, only papers with an uncommon term or all the common ones are ranked (see the module doc).
    ``ranked``: rank only that many matches, the newest.
    """
    params: dict[str, Any] = {"k": int(k), "weights": weights.array, "norm": weights.normalization}
    must: list[str] = []
    should: list[str] = []
    where: list[str] = []
    for i, phrase in enumerate(p for p in query.phrases if p):
        params[f"ph{i}"] = " ".join(phrase)
        must.append(_tsquery(f"ph{i}"))
    for i, name in enumerate(a for a in query.authors if a):
        params[f"au{i}"] = name
        must.append(_tsquery(f"au{i}"))
        where.append(f"ts_filter(p.search_tsv, '{{c}}') @@ {_tsquery(f'au{i}')}")
    for i, term in enumerate(t for t in query.terms if t):
        params[f"t{i}"] = term
        should.append(_tsquery(f"t{i}"))
    if not must and not should:
        return None
    match = _all(must, "tsquery_and") if must else _all(should, "tsquery_or")
    if candidates is not None and not must:
        rare, common = candidates
        parts = [should[i] for i in rare]
        if len(common) > 1 or not rare:  # one common word next to uncommon ones adds no candidates
            parts.append(_all([should[i] for i in common], "tsquery_and"))
        if parts:
            match = _all(parts, "tsquery_or")
    rank = _all([*must, *should], "tsquery_or")
    for i, word in enumerate(w for w in query.excluded if w):
        params[f"ex{i}"] = word
        match = f"tsquery_and({match}, tsquery_not({_tsquery(f'ex{i}')}))"
    where = [f"p.search_tsv @@ {match}", *where, *_filter_sql(query.filters, params)]
    score = f"ts_rank(CAST(:weights AS real[]), p.search_tsv, {rank}, :norm) AS score"
    if ranked is None:
        statement = (
            f"SELECT p.id AS id, {score} FROM papers p WHERE {' AND '.join(where)} "
            "ORDER BY score DESC, p.id LIMIT :k"
        )
    else:  # the newest matches walking the (published, id) index back; documents read only to rank them
        params["ranked"] = int(ranked)
        statement = (
            f"SELECT p.id AS id, {score} FROM (SELECT p.id, p.search_tsv FROM papers p "
            f"WHERE {' AND '.join(where)} ORDER BY p.published DESC, p.id DESC LIMIT :ranked) AS p "
            "ORDER BY score DESC, p.id LIMIT :k"
        )
    return statement, params


class PostgresKeywordIndex:
    """:class:`~paperfeed.domain.search.KeywordIndex` on the PostgreSQL store's ``search_tsv`` column."""

    name = "postgres"

    def __init__(self, engine: Engine, weights: PgFieldWeights | None = None) -> None:
        if not postgres_fts_available(engine):
            raise PostgresFtsUnavailable(
                f"{engine.url.render_as_string(hide_password=True)}: no papers.search_tsv column "
                "(PostgreSQL full-text search needs PostgreSQL and `paperfeed migrate`)"
            )
        self.engine = engine
        self.weights = weights or PG_WEIGHTS
        self._stems: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self._shares: dict[str, float] = {}
        self._papers = 0.0
        self._shares_read = -_STATS_TTL

    # -- keeping in sync: the trigger does it, in the writer's transaction ----------------------------

    def on_papers_changed(self, _paper_ids: object) -> None:
        """Ingest listener: nothing to do, the trigger indexed the papers when they were written."""

    def flush(self) -> None:
        """Nothing is ever pending."""

    def rebuild(self) -> int:
        """Recompute every paper's document (after changing the search function by hand, say)."""
        with self.engine.begin() as conn:
            done = conn.execute(
                sql("UPDATE papers SET search_tsv = paperfeed_search_document(title, abstract, authors)")
            )
        return int(done.rowcount)

    def __len__(self) -> int:
        with self.engine.connect() as conn:
            return int(
                conn.execute(sql("SELECT count(*) FROM papers WHERE search_tsv IS NOT NULL")).scalar_one()
            )

    def close(self) -> None:
        """The engine belongs to the store."""

    # -- queries ----------------------------------------------------------------------------------------

    def search(self, query: ParsedQuery, k: int) -> list[ScoredId]:
        if k <= 0:
            return []
        narrowed, narrowed_rows, all_rows = self._plan(query)
        if narrowed is not None:
            cap = RANKED_ROWS if narrowed_rows > RANKED_ROWS else None
            rows = self._run(build_statement(query, k, self.weights, narrowed, cap))
            if len(rows) >= k:
                return rows
        cap = RANKED_ROWS if all_rows > RANKED_ROWS else None
        return self._run(build_statement(query, k, self.weights, ranked=cap))

    def more_like_this(
        self,
        title: str,
        abstract: str,
        k: int,
        filters: SearchFilters | None = None,
        *,
        max_terms: int = 25,
    ) -> list[ScoredId]:
        """The text's ``max_terms`` lexemes of highest tf-idf, searched as an OR query (ranked as any
        query is, :meth:`search`).

        Document frequencies come from ANALYZE's lexeme statistics (``pg_stats``), which know only the
        common lexemes (in over ~1.8% of papers): counting each lexeme's papers would cost a GIN scan
        per word. Every other lexeme counts as rarer than the rarest common one, so among those the
        counts in the text decide; common ones are down-weighted by their true share.
        """
        if k <= 0 or max_terms <= 0:
            return []
        words = [w for w in self._words(f"{title} {abstract}") if len(w) > 1]
        stems = self._lexemes(words)
        tf: Counter[str] = Counter()
        word_of: dict[str, str] = {}
        for word in words:
            lexemes = stems[word]
            if len(lexemes) == 1:  # stop-words have none; a word of several lexemes would be a phrase
                tf[lexemes[0]] += 1
                word_of.setdefault(lexemes[0], word)
        if not tf:
            return []
        shares = self._lexeme_shares()
        total = max(self._papers, 1000.0)  # never analysed (0): every idf equal, the counts decide
        floor = min(shares.values(), default=COMMON_SHARE) / 2  # "rarer than any common lexeme"
        doc_freq = {lx: max(2.0, shares.get(lx, floor) * total) for lx in tf}
        best = distinctive_terms(tf, doc_freq, total, max_terms)
        query = ParsedQuery(
            raw="", terms=tuple(word_of[lx] for lx in best), filters=filters or SearchFilters()
        )
        return self.search(query, k)

    def _run(self, built: tuple[str, dict[str, Any]] | None) -> list[ScoredId]:
        if built is None:
            return []
        statement, params = built
        with self.engine.connect() as conn:
            rows = conn.execute(sql(statement), params).all()
        return [ScoredId(row.id, float(row.score)) for row in rows]

    def _candidates(self, query: ParsedQuery) -> tuple[list[int], list[int]] | None:
        """(uncommon, common) term positions when ranking only candidates can save work, else None."""
        return self._plan(query)[0]

    def _plan(self, query: ParsedQuery) -> tuple[tuple[list[int], list[int]] | None, float, float]:
        """The candidates (see :meth:`_candidates`), and roughly how many papers they and the full query
        would rank (from the common words' shares; 0 where no cap should apply: filters, phrases)."""
        terms = [t for t in query.terms if t]
        shares = self._lexeme_shares() if not (query.phrases or query.authors) and terms else {}
        if not shares:
            return None, 0.0, 0.0  # never analysed, or phrases and names decide: no candidates, no cap
        total = self._papers
        words = [self._words(t) for t in terms]
        stems = self._lexemes([w for ws in words for w in ws])
        rare: list[int] = []
        common: list[int] = []
        share: dict[int, float] = {}
        for i, ws in enumerate(words):
            lexemes = [lx for w in ws for lx in stems[w]]
            if not lexemes:
                continue  # stop-words only: matches nothing
            # a word of several lexemes ("GPT-4") is a phrase: as rare as its rarest lexeme
            # (one that is not among the most common counts as 0: rare, and cheap to rank in full)
            share[i] = min(shares.get(lx, 0.0) for lx in lexemes)
            (common if share[i] >= COMMON_SHARE else rare).append(i)
        if query.filters.active:
            total = 0.0  # the filter's share is unknown: rank every match (the old, bitmap-scan plan)
        all_rows = min(1.0, sum(share.values())) * total
        if not common or len(rare) + len(common) < 2:
            return None, 0.0, all_rows  # nothing common to leave out: the full query is the candidate set
        both = math.prod(share[i] for i in common) if len(common) > 1 or not rare else 0.0
        return (rare, common), min(1.0, sum(share[i] for i in rare) + both) * total, all_rows

    def _lexeme_shares(self) -> dict[str, float]:
        """Share of papers containing each common lexeme: ANALYZE's most common elements of
        ``search_tsv`` (down to ~1.8% at the default statistics target); absent lexemes are rarer."""
        now = clock.monotonic()
        with self._lock:
            if now - self._shares_read < _STATS_TTL:
                return self._shares
        with self.engine.connect() as conn:
            row = conn.execute(
                sql(
                    "SELECT CAST(CAST(most_common_elems AS text) AS text[]) AS elems, "
                    "most_common_elem_freqs AS freqs FROM pg_stats WHERE schemaname = current_schema() "
                    "AND tablename = 'papers' AND attname = 'search_tsv'"
                )
            ).first()
        shares = dict(zip(row.elems, row.freqs, strict=False)) if row and row.elems else {}
        with self.engine.connect() as conn:
            found = conn.execute(sql("SELECT reltuples FROM pg_class WHERE oid = CAST('papers' AS regclass)"))
            count = max(0.0, float(found.scalar_one()))  # ANALYZE's estimate
        with self._lock:
            self._shares, self._papers, self._shares_read = shares, count, now
        return shares

    def _lexemes(self, words: list[str]) -> dict[str, tuple[str, ...]]:
        """PostgreSQL's English stems of ``words`` (lower-cased; stop-words stem to nothing)."""
        with self._lock:
            missing = [w for w in dict.fromkeys(words) if w not in self._stems]
        if missing:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    sql(
                        "SELECT w, ts_lexize('english_stem', w) AS l FROM unnest(CAST(:words AS text[])) AS w"
                    ),
                    {"words": missing},
                ).all()
            with self._lock:
                if len(self._stems) + len(rows) > _MAX_CACHED_WORDS:
                    self._stems.clear()
                self._stems.update((r.w, tuple(r.l or ())) for r in rows)
        with self._lock:
            return {w: self._stems.get(w, ()) for w in words}

    def highlight(self, query: ParsedQuery, text: str) -> list[Span]:
        """Words of ``text`` whose stem is a query term's, and runs of words that spell a phrase."""
        sequences = [
            seq
            for seq in (self._words(w) for w in [*query.terms, *(" ".join(p) for p in query.phrases)])
            if seq
        ]
        if not text or not sequences:
            return []
        found = [(m.start(), m.end(), m.group(0).lower()) for m in _WORD.finditer(fold(text, "marks"))]
        stems_of = self._lexemes([w for *_, w in found] + [w for seq in sequences for w in seq])
        stems = [stems_of[w] for *_, w in found]
        marked = [False] * len(found)
        for seq in sequences:
            wanted = [set(stems_of[w]) for w in seq]  # an empty set: a stop-word, any word stands there
            real = [j for j, stem in enumerate(wanted) if stem]
            if not real:
                continue  # only stop-words: the engine drops them, so nothing matched
            first, last = real[0], real[-1]
            wanted = wanted[first : last + 1]
            n = len(wanted)
            for i in range(len(stems) - n + 1):
                if all(not want or want & set(stems[i + j]) for j, want in enumerate(wanted)):
                    for j in range(i, i + n):
                        marked[j] = True
        spans: list[Span] = []
        for i, (start, end, _word) in enumerate(found):
            if not marked[i]:
                continue
            if spans and i > 0 and marked[i - 1] and not text[spans[-1].end : start].strip(" -"):
                spans[-1] = Span(spans[-1].start, end)  # one span per phrase
            else:
                spans.append(Span(start, end))
        return spans

    @staticmethod
    def _words(words: str) -> list[str]:
        return [m.group(0).lower() for m in _WORD.finditer(fold(words, "marks"))]
