"""Papers' sentences in ``paper_sentences`` (:class:`~paperfeed.domain.sentences.SentenceStore`).

The backlog is a join, as for the paper vectors: a paper needs its sentences (re)done when it has no row,
or a row of another text (``content_hash``), embedding model or role model. Each :meth:`save` is one
transaction, so a killed indexer loses at most the batch in flight. Reads return only current rows (the
paper's text unchanged since), so a changed abstract is never matched by its old sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, FromClause, and_, bindparam, func, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.sentences import ROLES, PaperSentences, Sentence, SentencesPending
from paperfeed.domain.summaries import SUMMARIES_CHECKPOINT, ExtractedSummary
from paperfeed.domain.wording import count

from .schema import papers
from .schema_sentences import paper_sentences
from .sql_store import write_checkpoint

__all__ = ["SqlSentenceStore", "pack", "unpack"]

_CHUNK = 900  # ids per IN (...) query: under every SQLite build's variable limit


def pack(row: PaperSentences) -> dict[str, Any]:
    """The table's columns for ``row`` (its vectors must be there)."""
    if row.vectors is None:
        raise ValueError(f"the sentences of {row.paper_id} have no vectors")
    n = len(row.sentences)
    if len(row.vectors) != n:
        raise ValueError(f"{row.paper_id}: {count(n, 'sentence')} but {count(len(row.vectors), 'vector')}")
    spans = np.array([[s.start, s.end] for s in row.sentences], dtype="<i4").reshape(n, 2)
    probabilities = np.array([s.probabilities for s in row.sentences], dtype="<f2").reshape(n, len(ROLES))
    return {
        "paper_id": row.paper_id,
        "model_id": row.model_id,
        "role_model": row.role_model,
        "content_hash": row.content_hash,
        "count": n,
        "spans": spans.tobytes(),
        "probabilities": probabilities.tobytes(),
        "vectors": np.ascontiguousarray(row.vectors, dtype="<f2").tobytes(),
    }


def unpack(r: Any, *, vectors: bool) -> PaperSentences:
    """A stored row back as :class:`PaperSentences` (vectors as float32, when asked for)."""
    n = int(r.count)
    spans = np.frombuffer(r.spans, dtype="<i4").reshape(n, 2)
    probs = np.frombuffer(r.probabilities, dtype="<f2").astype(np.float32).reshape(n, len(ROLES))
    # whole arrays to Python at once: a similar list reads a hundred papers' rows per request
    roles = probs.argmax(axis=1).tolist() if n else []
    sentences = tuple(
        Sentence(a, b, ROLES[role], tuple(p))
        for (a, b), role, p in zip(
            spans.tolist(), roles, np.round(probs.astype(np.float64), 4).tolist(), strict=True
        )
    )
    found = None
    if vectors:
        found = np.frombuffer(r.vectors, dtype="<f2").astype(np.float32).reshape(n, -1) if n else None
        if found is None:
            found = np.zeros((0, 0), dtype=np.float32)
    return PaperSentences(r.paper_id, r.content_hash, r.model_id, r.role_model, sentences, found)


class SqlSentenceStore:
    """``paper_sentences`` on the paper store's engine (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._insert: Any = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert

    @staticmethod
    def _stale(model_id: str, role_model: str) -> ColumnElement[bool]:
        return or_(
            paper_sentences.c.paper_id.is_(None),
            paper_sentences.c.model_id != model_id,
            paper_sentences.c.role_model != role_model,
            paper_sentences.c.content_hash != papers.c.content_hash,
        )

    def count_backlog(self, model_id: str, role_model: str) -> int:
        return self._count(self._with_sentences(outer=True), self._stale(model_id, role_model))

    def count_done(self, model_id: str) -> int:
        query = (
            select(func.count())
            .select_from(paper_sentences.join(papers, papers.c.id == paper_sentences.c.paper_id))
            .where(
                paper_sentences.c.model_id == model_id,
                paper_sentences.c.content_hash == papers.c.content_hash,
            )
        )
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def backlog(
        self, model_id: str, role_model: str, *, after: str = "", limit: int = 64
    ) -> list[SentencesPending]:
        return self._pending(
            self._with_sentences(outer=True), self._stale(model_id, role_model), after, limit
        )

    def save(self, rows: Sequence[PaperSentences], summaries: Sequence[ExtractedSummary] = ()) -> None:
        if not rows:
            self.save_summaries(summaries)
            return
        now = datetime.now(UTC)
        values = [{**pack(r), "created_at": now} for r in rows]
        stmt = self._insert(paper_sentences)
        stmt = stmt.on_conflict_do_update(
            index_elements=[paper_sentences.c.paper_id],
            set_={c: getattr(stmt.excluded, c) for c in values[0] if c != "paper_id"},
        )
        with self.engine.begin() as conn:
            conn.execute(stmt, values)
            self._write_summaries(conn, summaries)

    # -- the extracted one-line summaries (papers.summary_line, issue #33 part 5) --------------------------

    def _summary_stale(self, model_id: str, rule_id: str) -> ColumnElement[bool]:
        """Current sentences of ``model_id``, and a summary not chosen for this text by ``rule_id``."""
        wanted = papers.c.content_hash + f"/{rule_id}"
        return and_(
            paper_sentences.c.model_id == model_id,
            paper_sentences.c.content_hash == papers.c.content_hash,
            or_(papers.c.summary_key.is_(None), papers.c.summary_key != wanted),
        )

    def count_summary_backlog(self, model_id: str, rule_id: str) -> int:
        return self._count(self._with_sentences(outer=False), self._summary_stale(model_id, rule_id))

    def summary_backlog(
        self, model_id: str, rule_id: str, *, after: str = "", limit: int = 500
    ) -> list[SentencesPending]:
        joined = self._with_sentences(outer=False)
        return self._pending(joined, self._summary_stale(model_id, rule_id), after, limit)

    # -- the two backlogs' one query shape --------------------------------------------------------------

    @staticmethod
    def _with_sentences(*, outer: bool) -> FromClause:
        """Papers with their sentences row (``outer``: papers without one too, as the first pass wants)."""
        on = paper_sentences.c.paper_id == papers.c.id
        return papers.outerjoin(paper_sentences, on) if outer else papers.join(paper_sentences, on)

    def _count(self, joined: FromClause, stale: ColumnElement[bool]) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(joined).where(stale)).scalar_one())

    def _pending(
        self, joined: FromClause, stale: ColumnElement[bool], after: str, limit: int
    ) -> list[SentencesPending]:
        """Papers after ``after`` (by id) that ``stale`` says are due, ``limit`` of them."""
        query = (
            select(papers.c.id, papers.c.abstract, papers.c.content_hash, papers.c.title)
            .select_from(joined)
            .where(papers.c.id > after, stale)
            .order_by(papers.c.id)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [SentencesPending(r.id, r.abstract, r.content_hash, r.title) for r in rows]

    def save_summaries(self, summaries: Sequence[ExtractedSummary]) -> None:
        if summaries:
            with self.engine.begin() as conn:
                self._write_summaries(conn, summaries)

    @staticmethod
    def _write_summaries(conn: Connection, summaries: Sequence[ExtractedSummary]) -> None:
        """Each paper's line, only while its text is the one the line was chosen for; then the
        ``summaries`` checkpoint, which the data version reads (cached pages show the new lines)."""
        if not summaries:
            return
        stmt = (
            papers.update()
            .where(papers.c.id == bindparam("pid"), papers.c.content_hash == bindparam("hash"))
            .values(summary_line=bindparam("line"), summary_key=bindparam("key"))
        )
        conn.execute(
            stmt,
            [{"pid": s.paper_id, "hash": s.content_hash, "line": s.line, "key": s.key} for s in summaries],
        )
        write_checkpoint(conn, SUMMARIES_CHECKPOINT, datetime.now(UTC).isoformat())

    def sentences(
        self, paper_ids: Sequence[str], model_id: str, *, vectors: bool = True
    ) -> dict[str, PaperSentences]:
        ids = list(dict.fromkeys(paper_ids))
        columns = [
            paper_sentences.c.paper_id,
            paper_sentences.c.model_id,
            paper_sentences.c.role_model,
            paper_sentences.c.content_hash,
            paper_sentences.c.count,
            paper_sentences.c.spans,
            paper_sentences.c.probabilities,
        ]
        if vectors:
            columns.append(paper_sentences.c.vectors)
        found: dict[str, PaperSentences] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                query = (
                    select(*columns)
                    .select_from(paper_sentences.join(papers, papers.c.id == paper_sentences.c.paper_id))
                    .where(
                        and_(
                            paper_sentences.c.paper_id.in_(chunk),
                            paper_sentences.c.model_id == model_id,
                            paper_sentences.c.content_hash == papers.c.content_hash,
                        )
                    )
                )
                for r in conn.execute(query):
                    found[r.paper_id] = unpack(r, vectors=vectors)
        return found
