"""The stored sentences as the sentence indexes read them (:class:`~paperfeed.domain.evidence.EvidenceRows`).

``paper_sentences`` joined with ``papers``: the sentences (decoded by :func:`.sentences.unpack`, the
sentence store's own format) with the paper's text and the facets the filters use. :meth:`changed`
gives every row in the order rows were stored (``created_at``, then the paper id, on the index
migration 0021 adds), so an index follows the store by a ``(stamp, paper id)`` cursor and a killed
catch-up resumes after the last row it committed; :meth:`rows` gives only current rows (the paper's
text unchanged since its sentences were made), which is what search shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
from sqlalchemy import func, literal, select, tuple_
from sqlalchemy.engine import Engine

from paperfeed.domain.evidence import EvidenceRow
from paperfeed.domain.sentences import ROLES, PaperSentences, Sentence

from .schema import papers
from .schema_sentences import paper_sentences
from .sentences import unpack

__all__ = ["SqlEvidenceRows"]

_CHUNK = 900  # ids per IN (...): under every SQLite build's variable limit


def _day(value: Any) -> date | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime):
        return (value if value.tzinfo is None else value.astimezone(UTC)).date()
    return value if isinstance(value, date) else None


def _sentences_only(r: Any) -> PaperSentences:
    """A row's sentences without their vectors, decoded in bulk (search reads a few dozen rows a query;
    :func:`.sentences.unpack` rounds each probability in Python, ten times slower): the same format."""
    n = int(r.count)
    spans = np.frombuffer(r.spans, dtype="<i4").reshape(n, 2).tolist()
    probs = np.frombuffer(r.probabilities, dtype="<f2").astype(np.float32).reshape(n, len(ROLES))
    roles = probs.argmax(axis=1).tolist() if n else []
    sentences = tuple(
        Sentence(a, b, ROLES[k], tuple(p))
        for (a, b), k, p in zip(spans, roles, probs.round(4).tolist(), strict=True)
    )
    return PaperSentences(r.paper_id, r.content_hash, r.model_id, r.role_model, sentences, None)


def _stamp(value: Any) -> datetime:
    found: datetime = datetime.fromisoformat(value) if isinstance(value, str) else value
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


class SqlEvidenceRows:
    """:class:`~paperfeed.domain.evidence.EvidenceRows` on the paper store's engine (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _columns(self, vectors: bool) -> list[Any]:
        s = paper_sentences.c
        columns = [
            s.paper_id,
            s.model_id,
            s.role_model,
            s.content_hash,
            s.count,
            s.spans,
            s.probabilities,
            s.created_at,
            papers.c.abstract,
            papers.c.authors,
            papers.c.categories,
            papers.c.published,
            papers.c.github_repo,
        ]
        if vectors:
            columns.append(s.vectors)
        return columns

    @staticmethod
    def _current() -> Any:
        return paper_sentences.c.content_hash == papers.c.content_hash

    @staticmethod
    def _joined() -> Any:
        return paper_sentences.join(papers, papers.c.id == paper_sentences.c.paper_id)

    def _row(self, r: Any, vectors: bool) -> EvidenceRow:
        stored = unpack(r, vectors=True) if vectors else _sentences_only(r)
        return EvidenceRow(
            paper_id=r.paper_id,
            content_hash=r.content_hash,
            model_id=r.model_id,
            stamp=_stamp(r.created_at),
            abstract=r.abstract,
            authors=tuple(r.authors or ()),
            categories=tuple(r.categories or ()),
            published=_day(r.published),
            has_code=r.github_repo is not None,
            sentences=stored.sentences,
            vectors=stored.vectors,
        )

    def changed(
        self, since: tuple[datetime, str] | None, *, limit: int, vectors: bool, model_id: str | None = None
    ) -> list[EvidenceRow]:
        s = paper_sentences.c
        where: list[Any] = []  # every row, current or not: an index holds what the store holds
        if since is not None:
            # A row-value comparison, which both engines seek in ix_paper_sentences_stored (created_at,
            # paper_id); the same test spelled with OR/AND was a scan of the whole table on SQLite.
            stamp, after = since
            where.append(
                tuple_(s.created_at, s.paper_id)
                > tuple_(literal(stamp, s.created_at.type), literal(after, s.paper_id.type))
            )
        if model_id is not None:
            # ``|| ''`` keeps SQLite from answering by ix_paper_sentences_model_paper (every row of the
            # model, sorted, for each page: a catch-up of 200k papers read 56 GB); the cursor's index
            # walks the rows in page order and the model is a filter on them.
            where.append(s.model_id.concat("") == model_id)
        query = (
            select(*self._columns(vectors))
            .select_from(self._joined())
            .where(*where)
            .order_by(s.created_at, s.paper_id)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [self._row(r, vectors) for r in conn.execute(query)]

    def rows(
        self, paper_ids: Sequence[str], *, vectors: bool, model_id: str | None = None
    ) -> list[EvidenceRow]:
        ids = list(dict.fromkeys(paper_ids))
        found: list[EvidenceRow] = []
        with self.engine.connect() as conn:
            for start in range(0, len(ids), _CHUNK):
                where = [paper_sentences.c.paper_id.in_(ids[start : start + _CHUNK]), self._current()]
                if model_id is not None:
                    where.append(paper_sentences.c.model_id == model_id)
                query = select(*self._columns(vectors)).select_from(self._joined()).where(*where)
                found.extend(self._row(r, vectors) for r in conn.execute(query))
        return found

    def counts(self, model_id: str | None = None, *, current: bool = True) -> tuple[int, int]:
        where = [self._current()] if current else []
        if model_id is not None:
            where.append(paper_sentences.c.model_id == model_id)
        query = (
            select(func.count(), func.coalesce(func.sum(paper_sentences.c.count), 0))
            .select_from(self._joined())
            .where(*where)
        )
        with self.engine.connect() as conn:
            papers_count, sentences = conn.execute(query).one()
        return int(papers_count), int(sentences)

    def newest(self) -> tuple[datetime, str] | None:
        s = paper_sentences.c
        query = select(s.created_at, s.paper_id).order_by(s.created_at.desc(), s.paper_id.desc()).limit(1)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else (_stamp(row.created_at), row.paper_id)
