"""Keyword search over the papers' sentences with PostgreSQL full-text search (``sentence_search``).

PostgreSQL deployments keep their keyword indexes in the database, shared by every process and node
(the papers' ``search_tsv``, revision 0009); the sentences' is the table of revision 0021: one row per
stored sentence with its ``tsvector`` (English stemming, accents folded as the papers' are), its role,
GIN-indexed, rows deleted with their paper.

It follows ``paper_sentences`` by a ``(stamp, paper id)`` cursor kept in the ``checkpoints`` table and
written in the same transaction as each page of rows, so a kill loses nothing that was committed and the
next catch-up resumes after it. A process's first catch-up looks back ``OVERLAP`` before the cursor
(rows another process stamped before committing later); re-indexing a paper is idempotent (its rows
are replaced).

Queries are built from :class:`~paperfeed.domain.search.ParsedQuery` parts only, each a bound
parameter through ``phraseto_tsquery``, as the papers' adapter does: a phrase and a ``-word`` apply to the
sentence, ``author:`` to its paper (the authors' lexemes of ``papers.search_tsv``), the filters to its
paper's columns; ranking is ``ts_rank`` with length normalisation (``ts_rank`` has no IDF: tantivy's
BM25 ranks better on the same sentences, docs/benchmarks.md). A query of common words ranks at most
``RANKED_ROWS`` matching sentences.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text as sql
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.evidence import EvidenceRow, EvidenceRows, IndexCheck, ScoredSentence
from paperfeed.domain.search import ParsedQuery, Span
from paperfeed.domain.sentences import Role

from .postgres_fts import CONFIG, PostgresKeywordIndex, _all, _filter_sql, _tsquery

__all__ = ["CHECKPOINT", "PostgresSentenceIndex"]

log = logging.getLogger(__name__)

CHECKPOINT = "sentence_search"
OVERLAP = timedelta(seconds=30)
PAGE = 2000
RANKED_ROWS = 20_000


def build_sentence_statement(
    query: ParsedQuery, k: int, roles: frozenset[Role] | None
) -> tuple[str, dict[str, Any]] | None:
    """The SQL and parameters for ``query`` over ``sentence_search``, or None when nothing can match."""
    params: dict[str, Any] = {"k": int(k), "ranked": RANKED_ROWS}
    must: list[str] = []
    should: list[str] = []
    where: list[str] = []
    for i, phrase in enumerate(p for p in query.phrases if p):
        params[f"ph{i}"] = " ".join(phrase)
        must.append(_tsquery(f"ph{i}"))
    for i, term in enumerate(t for t in query.terms if t):
        params[f"t{i}"] = term
        should.append(_tsquery(f"t{i}"))
    for i, name in enumerate(a for a in query.authors if a):
        params[f"au{i}"] = name
        where.append(f"ts_filter(p.search_tsv, '{{c}}') @@ {_tsquery(f'au{i}')}")
    if not must and not should and not where:
        return None
    if must:
        match: str | None = _all(must, "tsquery_and")
    elif should:
        match = _all(should, "tsquery_or")
    else:
        match = None  # only author: every sentence of the author's papers, ranked by nothing
    rank = _all([*must, *should], "tsquery_or") if must or should else None
    for i, word in enumerate(w for w in query.excluded if w):
        params[f"ex{i}"] = word
        excluded = f"tsquery_not({_tsquery(f'ex{i}')})"
        match = excluded if match is None else f"tsquery_and({match}, {excluded})"
    if match is not None:
        where.insert(0, f"s.tsv @@ {match}")
    if roles is not None:
        where.append("s.role = ANY(CAST(:roles AS text[]))")
        params["roles"] = sorted(roles)
    where.extend(_filter_sql(query.filters, params))
    score = f"ts_rank(s.tsv, {rank}, 1)" if rank is not None else "0.0"
    statement = (
        f"SELECT m.paper_id, m.position, {score.replace('s.tsv', 'm.tsv')} AS score FROM ("
        "SELECT s.paper_id, s.position, s.tsv FROM sentence_search s JOIN papers p ON p.id = s.paper_id "
        f"WHERE {' AND '.join(where)} LIMIT :ranked) AS m "
        "ORDER BY score DESC, m.paper_id, m.position LIMIT :k"
    )
    return statement, params


class PostgresSentenceIndex:
    """:class:`~paperfeed.domain.evidence.SentenceKeywordIndex` on PostgreSQL (see the module)."""

    name = "postgres"

    def __init__(self, engine: Engine, rows: EvidenceRows) -> None:
        self.engine = engine
        self.rows = rows
        self._words = PostgresKeywordIndex(engine)  # highlighting with PostgreSQL's own stemmer
        self._looked_back = False  # this process's first catch-up looks back OVERLAP before the cursor

    # -- the cursor --------------------------------------------------------------------------------------

    def watermark(self) -> tuple[datetime, str] | None:
        with self.engine.connect() as conn:
            value = conn.execute(
                sql("SELECT value FROM checkpoints WHERE name = :name"), {"name": CHECKPOINT}
            ).scalar()
        if not value or "|" not in value:
            return None
        stamp, _, paper_id = value.partition("|")
        return datetime.fromisoformat(stamp), paper_id

    @staticmethod
    def _write_cursor(conn: Connection, cursor: tuple[datetime, str] | None) -> None:
        from paperfeed.adapters.store.sql_store import write_checkpoint

        write_checkpoint(conn, CHECKPOINT, "" if cursor is None else f"{cursor[0].isoformat()}|{cursor[1]}")

    # -- writing ---------------------------------------------------------------------------------------

    def _replace(self, conn: Connection, rows: Sequence[EvidenceRow]) -> None:
        conn.execute(
            sql("DELETE FROM sentence_search WHERE paper_id = ANY(CAST(:ids AS text[]))"),
            {"ids": [r.paper_id for r in rows]},
        )
        values = [
            {"pid": r.paper_id, "pos": i, "role": s.role, "text": s.text(r.abstract)}
            for r in rows
            for i, s in enumerate(r.sentences)
        ]
        if values:
            conn.execute(
                sql(
                    "INSERT INTO sentence_search (paper_id, position, role, tsv) SELECT p.id, "
                    "CAST(:pos AS smallint), CAST(:role AS varchar), "
                    f"to_tsvector('{CONFIG}', paperfeed_fold(CAST(:text AS text))) "
                    "FROM papers p WHERE p.id = CAST(:pid AS varchar)"
                ),
                values,
            )

    def on_saved(self, paper_ids: Sequence[str]) -> None:
        if paper_ids:
            self.catch_up()

    def catch_up(self) -> int:
        """Index the rows stored since the cursor (less the overlap), a page per transaction."""
        done = 0
        mark = self.watermark()
        cursor = mark
        if mark is not None and not self._looked_back:
            cursor = (mark[0] - OVERLAP, "")
        self._looked_back = True
        while True:
            page = self.rows.changed(cursor, limit=PAGE, vectors=False)
            if not page:
                break
            cursor = (page[-1].stamp, page[-1].paper_id)
            with self.engine.begin() as conn:
                self._replace(conn, page)
                newest = cursor if mark is None or cursor > mark else mark
                self._write_cursor(conn, newest)
            done += len(page)
        return done

    def rebuild(self) -> int:
        with self.engine.begin() as conn:
            conn.execute(sql("DELETE FROM sentence_search"))
            conn.execute(sql("DELETE FROM checkpoints WHERE name = :name"), {"name": CHECKPOINT})
        return self.catch_up()

    def close(self) -> None:
        """The engine belongs to the store."""

    # -- reading ---------------------------------------------------------------------------------------

    def __len__(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sql("SELECT count(*) FROM sentence_search")).scalar_one())

    def check(self) -> IndexCheck:
        """Sentences indexed against those stored, and whether rows were stored after the cursor."""
        _, stored = self.rows.counts(current=False)
        newest, mark = self.rows.newest(), self.watermark()
        behind = newest is not None and (mark is None or newest > mark)
        return IndexCheck("sentence keyword index (PostgreSQL)", stored, len(self), behind, "sentence_search")

    def search(
        self, query: ParsedQuery, k: int, roles: frozenset[Role] | None = None
    ) -> list[ScoredSentence]:
        built = build_sentence_statement(query, k, roles)
        if built is None or k <= 0:
            return []
        statement, params = built
        with self.engine.connect() as conn:
            found = conn.execute(sql(statement), params).all()
        return [ScoredSentence(r.paper_id, int(r.position), float(r.score)) for r in found]

    def highlight(self, query: ParsedQuery, text: str) -> list[Span]:
        return self._words.highlight(query, text)
