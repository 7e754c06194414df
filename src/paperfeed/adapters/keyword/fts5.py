"""Keyword search with SQLite FTS5: BM25 with field weights, filters applied inside the SQL query.

The index is the external-content table ``papers_fts`` from migration 0003. Triggers queue every
change to ``papers`` in ``papers_fts_queue`` atomically with it; :meth:`Fts5KeywordIndex.sync` applies
the queue in bulk (the ingest listener calls it after each committed batch, and it runs when the index
is opened), so no change is ever lost, and an import pays ~10 µs per paper for the queue plus one
bulk FTS5 insert per batch instead of a slow per-row trigger insert. While another engine serves,
:func:`suspend_fts5` idles the triggers and empties the index; opening it again rebuilds it.

Queries are built only from :class:`~paperfeed.domain.search.ParsedQuery` parts, each quoted as an FTS5
string (``"..."`` with ``"`` doubled), so user text can never be FTS5 syntax.

Caveat: ``papers`` has no INTEGER PRIMARY KEY, so a ``VACUUM`` may renumber its rowids; run
:meth:`rebuild` after one.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections import Counter
from datetime import timedelta
from typing import Any

from sqlalchemy import text as sql
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.search import ParsedQuery, ScoredId, SearchFilters, Span, distinctive_terms

from .weights import FieldWeights

__all__ = [
    "FieldWeights",
    "Fts5KeywordIndex",
    "Fts5Unavailable",
    "fts5_available",
    "match_expression",
    "suspend_fts5",
]

TOKENIZE = "porter unicode61 remove_diacritics 2"  # must equal migration 0003's
_OPEN, _CLOSE = "\ue000", "\ue001"  # private-use marks for highlight(); never left in user text
_WORD = re.compile(r"[^\W_]+")  # runs of letters and digits, as unicode61 splits words
# FTS5's term statistics of papers_fts, per connection (temp schema: nothing is added to the database)
_VOCAB = "CREATE VIRTUAL TABLE IF NOT EXISTS temp.papers_fts_terms USING fts5vocab(main, papers_fts, row)"
_COUNT_TTL = 60.0  # seconds a count of the indexed papers is reused for more-like-this idf


class Fts5Unavailable(RuntimeError):
    """The database has no FTS5 keyword table (PostgreSQL, or SQLite built without FTS5)."""


def _quote(words: str) -> str:
    return '"' + words.replace('"', '""') + '"'


def _positive_parts(query: ParsedQuery) -> tuple[list[str], list[str]]:
    phrases = [_quote(" ".join(p)) for p in query.phrases if p]
    terms = [_quote(t) for t in query.terms if t]
    return phrases, terms


def match_expression(query: ParsedQuery) -> str | None:
    """The FTS5 MATCH string for ``query``, or None when nothing in it can match.

    Phrases are AND-ed; terms are OR-ed and, next to phrases, only add to the rank (``phrases AND
    (phrases OR terms)``); every ``author:`` is a phrase in the authors column; exclusions are NOT-ed.
    """
    phrases, terms = _positive_parts(query)
    clauses: list[str] = []
    if phrases:
        clauses.extend(phrases)
        if terms:
            clauses.append("(" + " OR ".join([*phrases, *terms]) + ")")
    elif terms:
        clauses.append("(" + " OR ".join(terms) + ")")
    clauses.extend(f"authors : {_quote(name)}" for name in query.authors if name)
    if not clauses:
        return None
    expr = " AND ".join(clauses)
    for word in query.excluded:
        if word:
            expr = f"({expr}) NOT {_quote(word)}"
    return expr


def fts5_available(engine: Engine) -> bool:
    if engine.dialect.name != "sqlite":
        return False
    with engine.connect() as conn:
        found = conn.execute(
            sql("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'papers_fts'")
        ).first()
    return found is not None


def suspend_fts5(engine: Engine) -> bool:
    """Stop maintaining FTS5 (another engine serves): triggers go idle, the index is emptied.

    Opening :class:`Fts5KeywordIndex` later rebuilds it. Returns whether anything changed.
    """
    if not fts5_available(engine):
        return False
    with engine.begin() as conn:
        if not conn.execute(sql("SELECT live FROM papers_fts_state")).scalar():
            return False
        conn.execute(sql("UPDATE papers_fts_state SET live = 0"))
        conn.execute(sql("DELETE FROM papers_fts_queue"))
        conn.execute(sql("INSERT INTO papers_fts(papers_fts) VALUES ('delete-all')"))
    return True


def _filter_sql(filters: SearchFilters, params: dict[str, Any]) -> list[str]:
    """WHERE clauses on ``p`` (papers) for ``filters``; dates compare as ISO text, as SQLite stores them."""
    where: list[str] = []
    if filters.date_from is not None:
        where.append("p.published >= :date_from")
        params["date_from"] = filters.date_from.isoformat()
    if filters.date_to is not None:
        where.append("p.published < :date_after")
        params["date_after"] = (filters.date_to + timedelta(days=1)).isoformat()
    if filters.date_from is not None or filters.date_to is not None:
        where.append("p.published IS NOT NULL")
    if filters.categories:
        names = []
        for i, cat in enumerate(filters.categories):
            params[f"cat{i}"] = cat
            names.append(f":cat{i}")
        where.append(
            f"EXISTS (SELECT 1 FROM json_each(p.categories) c WHERE c.value IN ({', '.join(names)}))"
        )
    if filters.has_code is True:
        where.append("p.github_repo IS NOT NULL")
    elif filters.has_code is False:
        where.append("p.github_repo IS NULL")
    if filters.paper_ids is not None:  # a topic's papers: one JSON parameter, however many ids
        where.append("p.id IN (SELECT value FROM json_each(:only_ids))")
        params["only_ids"] = json.dumps(sorted(filters.paper_ids))
    return where


class _Highlighter:
    """Runs FTS5's own ``highlight()`` on one text in a private in-memory table with the same tokenizer,
    so highlighted words are exactly the ones the engine matched (stems included: "models" ~ "model")."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._conn.execute(f"CREATE VIRTUAL TABLE h USING fts5(t, tokenize='{TOKENIZE}')")
        self._conn.execute(f"CREATE VIRTUAL TABLE w USING fts5(t, tokenize='{TOKENIZE}')")
        self._conn.execute("CREATE VIRTUAL TABLE w_terms USING fts5vocab(w, 'instance')")
        self._lock = threading.Lock()

    def terms(self, text: str) -> tuple[Counter[str], dict[str, str]]:
        """The text's index terms (Porter stems) with their counts, and a word of the text for each
        term: a query can only name words, which the same tokenizer turns back into that term."""
        counts = Counter(w for m in _WORD.finditer(text) if len(w := m.group(0).lower()) > 1)
        words = list(counts)
        with self._lock:
            self._conn.execute("DELETE FROM w")
            self._conn.executemany("INSERT INTO w(rowid, t) VALUES (?, ?)", enumerate(words, start=1))
            rows = self._conn.execute("SELECT term, doc FROM w_terms ORDER BY doc, offset").fetchall()
        tf: Counter[str] = Counter()
        word_of: dict[str, str] = {}
        for term, doc in rows:
            word = words[int(doc) - 1]
            tf[term] += counts[word]
            word_of.setdefault(term, word)
        return tf, word_of

    def spans(self, expr: str, value: str) -> list[Span]:
        clean = value.replace(_OPEN, " ").replace(_CLOSE, " ")
        with self._lock:
            self._conn.execute("DELETE FROM h")
            self._conn.execute("INSERT INTO h(rowid, t) VALUES (1, ?)", (clean,))
            row = self._conn.execute(
                "SELECT highlight(h, 0, ?, ?) FROM h WHERE h MATCH ?", (_OPEN, _CLOSE, expr)
            ).fetchone()
        if row is None:
            return []
        spans: list[Span] = []
        pos = 0
        start = 0
        for ch in row[0]:
            if ch == _OPEN:
                start = pos
            elif ch == _CLOSE:
                spans.append(Span(start, pos))
            else:
                pos += 1
        return spans


class Fts5KeywordIndex:
    """:class:`~paperfeed.domain.search.KeywordIndex` on the SQLite store's own FTS5 table."""

    name = "fts5"

    def __init__(self, engine: Engine, weights: FieldWeights | None = None, *, sync: bool = True) -> None:
        if not fts5_available(engine):
            raise Fts5Unavailable(
                f"{engine.url.render_as_string(hide_password=True)}: no FTS5 keyword table "
                "(FTS5 needs SQLite; use keyword_engine=tantivy)"
            )
        self.engine = engine
        self.weights = weights or FieldWeights()
        self._highlighter = _Highlighter()
        self._count = (0, -_COUNT_TTL)  # indexed papers, when counted
        if sync:
            self.sync()

    # -- keeping in sync ----------------------------------------------------------------------------

    def pending(self) -> int:
        """Queued changes not yet in the index."""
        with self.engine.connect() as conn:
            return int(conn.execute(sql("SELECT count(*) FROM papers_fts_queue")).scalar_one())

    def sync(self) -> int:
        """Apply queued changes in bulk (or rebuild a suspended index); returns how many were applied."""
        with self.engine.begin() as conn:
            if not conn.execute(sql("SELECT live FROM papers_fts_state")).scalar():
                return self._rebuild(conn)
            return self._drain(conn)

    def _drain(self, conn: Connection) -> int:
        top = conn.execute(sql("SELECT max(seq) FROM papers_fts_queue")).scalar()
        if top is None:
            return 0
        # The earliest queued change of each row says what the index holds for it: nothing after an
        # insert, that change's old text after an update or delete. Later entries' old text never was.
        conn.execute(
            sql(
                """INSERT INTO papers_fts(papers_fts, rowid, title, abstract, authors)
                SELECT 'delete', q.rid, q.old_title, q.old_abstract, q.old_authors
                FROM papers_fts_queue q
                WHERE q.indexed = 1 AND q.seq IN (
                    SELECT min(seq) FROM papers_fts_queue WHERE seq <= :top GROUP BY rid)"""
            ),
            {"top": top},
        )
        conn.execute(
            sql(
                """INSERT INTO papers_fts(rowid, title, abstract, authors)
                SELECT p.rowid, p.title, p.abstract, p.authors FROM papers p
                WHERE p.rowid IN (SELECT rid FROM papers_fts_queue WHERE seq <= :top)"""
            ),
            {"top": top},
        )
        done = conn.execute(sql("DELETE FROM papers_fts_queue WHERE seq <= :top"), {"top": top})
        return int(done.rowcount)

    def on_papers_changed(self, _paper_ids: object) -> None:
        """Ingest listener: the triggers already queued exactly what changed; apply it now."""
        self.sync()

    def flush(self) -> None:
        """Nothing is pending between the listener call and the index: the listener syncs in place."""

    def rebuild(self) -> None:
        """Re-read every paper into the index (after a VACUUM, or to recover from anything odd)."""
        with self.engine.begin() as conn:
            self._rebuild(conn)

    @staticmethod
    def _rebuild(conn: Connection) -> int:
        # One transaction: a writer that commits before it is in the rebuild, one after it is queued.
        conn.execute(sql("UPDATE papers_fts_state SET live = 1"))
        conn.execute(sql("DELETE FROM papers_fts_queue"))
        conn.execute(sql("INSERT INTO papers_fts(papers_fts) VALUES ('rebuild')"))
        return int(conn.execute(sql("SELECT count(*) FROM papers_fts_docsize")).scalar_one())

    def optimize(self) -> None:
        """Merge the index into one segment (faster queries after a large import)."""
        with self.engine.begin() as conn:
            conn.execute(sql("INSERT INTO papers_fts(papers_fts) VALUES ('optimize')"))

    def __len__(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sql("SELECT count(*) FROM papers_fts_docsize")).scalar_one())

    def close(self) -> None:
        self._highlighter._conn.close()

    # -- queries ------------------------------------------------------------------------------------

    def search(self, query: ParsedQuery, k: int) -> list[ScoredId]:
        expr = match_expression(query)
        if expr is None or k <= 0:
            return []
        w = self.weights
        params: dict[str, Any] = {"match": expr, "k": int(k)}
        where = ["papers_fts MATCH :match", *_filter_sql(query.filters, params)]
        statement = (
            f"SELECT p.id AS id, bm25(papers_fts, {float(w.title)!r}, {float(w.abstract)!r}, "
            f"{float(w.authors)!r}) AS score "
            "FROM papers_fts JOIN papers p ON p.rowid = papers_fts.rowid "
            f"WHERE {' AND '.join(where)} ORDER BY score, p.id LIMIT :k"
        )
        with self.engine.connect() as conn:
            rows = conn.execute(sql(statement), params).all()
        return [ScoredId(row.id, -float(row.score)) for row in rows]

    def more_like_this(
        self,
        title: str,
        abstract: str,
        k: int,
        filters: SearchFilters | None = None,
        *,
        max_terms: int = 25,
    ) -> list[ScoredId]:
        """The text's ``max_terms`` terms of highest tf-idf (document frequencies from FTS5's own
        vocabulary, ``fts5vocab``), searched as an OR query with the usual field-weighted BM25."""
        if k <= 0 or max_terms <= 0:
            return []
        tf, word_of = self._highlighter.terms(f"{title} {abstract}")
        if not tf:
            return []
        with self.engine.connect() as conn:
            conn.execute(sql(_VOCAB))
            doc_freq: dict[str, float] = {}
            for term in tf:  # one indexed lookup each (fts5vocab answers `term =` without a scan)
                found = conn.execute(
                    sql("SELECT doc FROM temp.papers_fts_terms WHERE term = :t"), {"t": term}
                ).scalar()
                doc_freq[term] = float(found or 0)
            total = self._indexed(conn)
        best = distinctive_terms(tf, doc_freq, total, max_terms)
        query = ParsedQuery(raw="", terms=tuple(word_of[t] for t in best), filters=filters or SearchFilters())
        return self.search(query, k)

    def _indexed(self, conn: Connection) -> float:
        """Papers in the index, re-counted at most once a minute (idf needs no more precision)."""
        count, when = self._count
        now = time.monotonic()
        if now - when >= _COUNT_TTL:
            count = int(conn.execute(sql("SELECT count(*) FROM papers_fts_docsize")).scalar_one())
            self._count = (count, now)
        return float(count)

    def highlight(self, query: ParsedQuery, text: str) -> list[Span]:
        phrases, terms = _positive_parts(query)
        if not text or not (phrases or terms):
            return []
        return self._highlighter.spans(" OR ".join([*phrases, *terms]), text)
