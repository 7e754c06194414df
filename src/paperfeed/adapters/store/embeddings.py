"""Paper vectors in the ``embeddings`` table, beside the papers they were made from.

One row per paper: the vector of the *configured* model for the text whose ``content_hash`` it records.
A paper needs (re-)embedding when it has no row, a row of another model, or a row whose hash differs from
the paper's current one; that comparison is a single join, so the backlog survives any crash and is never
kept anywhere else. Every :meth:`SqlEmbeddingStore.save_vectors` call is one transaction: a killed indexer
loses at most the batch in flight.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
from sqlalchemy import ColumnElement, func, or_, select, true
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.embedding import PendingPaper
from paperfeed.domain.indexing_status import INDEXER_REPORT_CHECKPOINT, IndexerReport
from paperfeed.domain.search import VectorRecord
from paperfeed.domain.wording import count

from .columns import as_utc
from .schema import checkpoints, embeddings, papers

__all__ = [
    "MARK_PREFIX",
    "SqlEmbeddingStore",
    "decode_vector",
    "encode_vector",
    "needs_vector",
    "write_vectors",
]

Vectors = npt.NDArray[np.float32]

_CHUNK = 900  # ids per IN (...) query: under every SQLite build's variable limit
MARK_PREFIX = "embeddings-mark:"  # checkpoints named so are sync marks (IndexMarks)
_INDEXER_REPORT = INDEXER_REPORT_CHECKPOINT  # the checkpoint holding the newest IndexerReport, as JSON


def encode_vector(vector: npt.NDArray[Any]) -> bytes:
    """float32 little-endian bytes, whatever the platform."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def decode_vector(blob: bytes) -> Vectors:
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def _day(value: datetime | date | None) -> date | None:
    if value is None:
        return None
    return value.date() if isinstance(value, datetime) else value


def needs_vector(model_id: str) -> ColumnElement[bool]:
    """A paper (outer-joined with its ``embeddings`` row) has no vector of ``model_id`` for its text."""
    return or_(
        embeddings.c.paper_id.is_(None),
        embeddings.c.model_id != model_id,
        embeddings.c.content_hash != papers.c.content_hash,
    )


def write_vectors(
    conn: Connection, model_id: str, papers_: Sequence[PendingPaper], vectors: Vectors, now: datetime
) -> None:
    """Upsert one vector per paper in ``conn``'s transaction (``save_vectors``, and a claimed batch's
    commit in ``claims.py``, which ends its claims in the same transaction)."""
    rows = [
        {
            "paper_id": p.paper_id,
            "model_id": model_id,
            "content_hash": p.content_hash,
            "vector": encode_vector(v),
            "created_at": now,
        }
        for p, v in zip(papers_, vectors, strict=True)
    ]
    insert: Any = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    stmt = insert(embeddings)
    stmt = stmt.on_conflict_do_update(
        index_elements=[embeddings.c.paper_id],
        set_={
            "model_id": stmt.excluded.model_id,
            "content_hash": stmt.excluded.content_hash,
            "vector": stmt.excluded.vector,
            "created_at": stmt.excluded.created_at,
        },
    )
    conn.execute(stmt, rows)


class SqlEmbeddingStore:
    """:class:`~paperfeed.domain.embedding.EmbeddingStore` on the paper store's SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._insert: Any = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert

    # -- backlog ------------------------------------------------------------------------------------------

    _needs_vector = staticmethod(needs_vector)

    def count_papers(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(papers)).scalar_one())

    def count_backlog(self, model_id: str) -> int:
        query = (
            select(func.count())
            .select_from(papers.outerjoin(embeddings, embeddings.c.paper_id == papers.c.id))
            .where(self._needs_vector(model_id))
        )
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def backlog(
        self, model_id: str, *, after: str = "", limit: int = 256, since: datetime | None = None
    ) -> list[PendingPaper]:
        recent = papers.c.modified_at >= since if since is not None else true()  # ix_papers_modified_at
        query = (
            select(
                papers.c.id,
                papers.c.title,
                papers.c.abstract,
                papers.c.content_hash,
                embeddings.c.paper_id.is_not(None).label("has_vector"),
            )
            .select_from(papers.outerjoin(embeddings, embeddings.c.paper_id == papers.c.id))
            .where(papers.c.id > after, recent, self._needs_vector(model_id))
            .order_by(papers.c.id)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [PendingPaper(r.id, r.title, r.abstract, r.content_hash, bool(r.has_vector)) for r in rows]

    # -- writes -------------------------------------------------------------------------------------------

    def save_vectors(self, model_id: str, papers_: Sequence[PendingPaper], vectors: Vectors) -> None:
        if len(papers_) != len(vectors):
            raise ValueError(f"{count(len(papers_), 'paper')} but {count(len(vectors), 'vector')}")
        if not papers_:
            return
        with self.engine.begin() as conn:
            write_vectors(conn, model_id, papers_, vectors, datetime.now(UTC))

    def delete(self, paper_ids: Sequence[str]) -> int:
        ids = list(paper_ids)
        removed = 0
        with self.engine.begin() as conn:
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                removed += conn.execute(embeddings.delete().where(embeddings.c.paper_id.in_(chunk))).rowcount
        return removed

    def delete_all(self) -> int:
        with self.engine.begin() as conn:
            removed = conn.execute(embeddings.delete()).rowcount
            conn.execute(checkpoints.delete().where(checkpoints.c.name.startswith(MARK_PREFIX)))
        return int(removed)

    def delete_other_models(self, model_id: str) -> int:
        with self.engine.begin() as conn:
            return int(conn.execute(embeddings.delete().where(embeddings.c.model_id != model_id)).rowcount)

    # -- reads --------------------------------------------------------------------------------------------

    def model_counts(self) -> dict[str, int]:
        query = select(embeddings.c.model_id, func.count()).group_by(embeddings.c.model_id)
        with self.engine.connect() as conn:
            return {str(m): int(n) for m, n in conn.execute(query)}

    def newest(self, model_id: str) -> datetime | None:
        query = select(func.max(embeddings.c.created_at)).where(embeddings.c.model_id == model_id)
        with self.engine.connect() as conn:
            return conn.execute(query).scalar()

    def records(
        self, model_id: str, *, since: datetime | None = None, until: datetime | None = None, page: int = 4096
    ) -> Iterator[list[VectorRecord]]:
        """Keyset-paged by paper id, one short read transaction per page (constant memory)."""
        base = (
            select(
                embeddings.c.paper_id,
                embeddings.c.vector,
                papers.c.published,
                papers.c.categories,
                papers.c.github_repo,
            )
            .select_from(embeddings.join(papers, papers.c.id == embeddings.c.paper_id))
            .where(embeddings.c.model_id == model_id)
            .order_by(embeddings.c.paper_id)
            .limit(page)
        )
        if since is not None:
            base = base.where(embeddings.c.created_at >= since)
        if until is not None:
            base = base.where(embeddings.c.created_at <= until)
        last = ""
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(base.where(embeddings.c.paper_id > last)).all()
            if not rows:
                return
            yield [
                VectorRecord(
                    paper_id=r.paper_id,
                    vector=decode_vector(r.vector),
                    published=_day(r.published),
                    categories=tuple(r.categories),
                    has_code=r.github_repo is not None,
                )
                for r in rows
            ]
            last = rows[-1].paper_id

    def vectors(self, model_id: str, paper_ids: Sequence[str]) -> dict[str, Vectors]:
        ids = list(dict.fromkeys(paper_ids))
        found: dict[str, Vectors] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(ids), _CHUNK):
                query = select(embeddings.c.paper_id, embeddings.c.vector).where(
                    embeddings.c.model_id == model_id, embeddings.c.paper_id.in_(ids[start : start + _CHUNK])
                )
                for paper_id, blob in conn.execute(query):
                    found[paper_id] = decode_vector(blob)
        return found

    # -- marks --------------------------------------------------------------------------------------------

    def get_mark(self, name: str) -> datetime | None:
        query = select(checkpoints.c.value).where(checkpoints.c.name == MARK_PREFIX + name)
        with self.engine.connect() as conn:
            value = conn.execute(query).scalar()
        return None if value is None else as_utc(datetime.fromisoformat(value))

    def set_mark(self, name: str, value: datetime | None) -> None:
        key = MARK_PREFIX + name
        if value is None:
            with self.engine.begin() as conn:
                conn.execute(checkpoints.delete().where(checkpoints.c.name == key))
            return
        self._put(key, value.astimezone(UTC).isoformat())

    def _put(self, key: str, value: str) -> None:
        with self.engine.begin() as conn:
            stmt = self._insert(checkpoints).values(name=key, value=value, updated_at=datetime.now(UTC))
            stmt = stmt.on_conflict_do_update(
                index_elements=[checkpoints.c.name],
                set_={"value": stmt.excluded.value, "updated_at": stmt.excluded.updated_at},
            )
            conn.execute(stmt)

    # -- the indexer's report (IndexerReports) ---------------------------------------------------------------

    def report_indexer(self, report: IndexerReport) -> None:
        self._put(_INDEXER_REPORT, orjson.dumps(report.to_json()).decode())

    def indexer_report(self) -> IndexerReport | None:
        query = select(checkpoints.c.value).where(checkpoints.c.name == _INDEXER_REPORT)
        with self.engine.connect() as conn:
            value = conn.execute(query).scalar()
        if value is None:
            return None
        try:
            found = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
        return IndexerReport.from_json(found) if isinstance(found, dict) else None
