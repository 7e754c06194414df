"""Claims on the embedding backlog (``domain/embedding_claims.py``) in the paper store's database.

Two adapters, one per database, differing only in how a batch is claimed:

* **PostgreSQL** (:class:`PgBatchClaims`): the next backlog papers are selected ``FOR NO KEY UPDATE OF
  papers SKIP LOCKED``, so processes claiming at the same moment skip each other's candidates instead of
  queueing behind them, then inserted into ``embedding_claims`` with ``ON CONFLICT DO NOTHING``: the
  primary key is what makes two claims of one paper impossible (a candidate read just before another
  process's claim committed is simply not won, and the next statement's snapshot sees the claim).
  ``NO KEY UPDATE`` rather than ``UPDATE``: it does not wait for the foreign-key checks of another
  process committing vectors of those papers.
* **SQLite** (:class:`SqliteBatchClaims`): one ``INSERT … SELECT`` statement, which takes the database's
  single write lock before it reads, so two processes' claims are serialised by SQLite itself (several
  processes on one machine: ``paperfeed index`` twice, or beside ``paperfeed run``'s indexer).

Everything else is shared: a commit ends the claims with ``DELETE … RETURNING`` and writes vectors only
for the rows it deleted, in the same transaction as the vectors and the ledger's counts, so a claim that
expired and was taken by another process is never committed twice (whichever transaction deletes the row
first wins; the other finds nothing of its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, and_, delete, exists, func, literal, or_, select, true, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.embedding import PendingPaper
from paperfeed.domain.embedding_claims import ClaimHolding, EmbeddingWorker, WorkerState
from paperfeed.domain.wording import count

from .columns import UtcDateTime, as_utc
from .embeddings import needs_vector, write_vectors
from .schema import embeddings, papers
from .schema_claims import embedding_claims, embedding_workers

if TYPE_CHECKING:
    from paperfeed.domain.embedding import Vectors

__all__ = ["PgBatchClaims", "SqliteBatchClaims", "open_claims"]

_CHUNK = 900  # ids per IN (...): under every SQLite build's variable limit
_FORGET_AFTER = timedelta(days=30)  # ledger rows of workers not seen for this long are dropped
_ATTEMPTS = 5  # PostgreSQL: claims lost to a concurrent claimer before giving up for this call


def open_claims(engine: Engine) -> SqlBatchClaims:
    """The claims adapter of ``engine``'s database."""
    return PgBatchClaims(engine) if engine.dialect.name == "postgresql" else SqliteBatchClaims(engine)


def _pending(rows: Sequence[Any]) -> list[PendingPaper]:
    return [PendingPaper(r.id, r.title, r.abstract, r.content_hash, bool(r.has_vector)) for r in rows]


_PENDING_COLUMNS = (
    papers.c.id,
    papers.c.title,
    papers.c.abstract,
    papers.c.content_hash,
    embeddings.c.paper_id.is_not(None).label("has_vector"),
)


def _unclaimed(model_id: str, after: str, since: datetime | None) -> ColumnElement[bool]:
    """Backlog papers past ``after`` (changed from ``since`` on) that nobody claims."""
    claimed = exists().where(embedding_claims.c.paper_id == papers.c.id)
    recent = papers.c.modified_at >= since if since is not None else true()  # ix_papers_modified_at
    return and_(papers.c.id > after, recent, needs_vector(model_id), ~claimed)


def _unclaimed_backlog(model_id: str, after: str, limit: int, since: datetime | None) -> Any:
    """Those papers in id order, at most ``limit`` (the columns of a PendingPaper)."""
    return (
        select(*_PENDING_COLUMNS)
        .select_from(papers.outerjoin(embeddings, embeddings.c.paper_id == papers.c.id))
        .where(_unclaimed(model_id, after, since))
        .order_by(papers.c.id)
        .limit(limit)
    )


class SqlBatchClaims:
    """:class:`~paperfeed.domain.embedding_claims.BatchClaims` on SQLAlchemy Core; :meth:`claim` is the
    database's own (the subclasses)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._insert: Any = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert

    def claim(
        self,
        model_id: str,
        holder: str,
        *,
        batch: int,
        after: str,
        limit: int,
        now: datetime,
        until: datetime,
        since: datetime | None = None,
    ) -> list[PendingPaper]:
        raise NotImplementedError

    def commit(
        self, model_id: str, holder: str, papers_: Sequence[PendingPaper], vectors: Vectors, now: datetime
    ) -> list[str]:
        if len(papers_) != len(vectors):
            raise ValueError(f"{count(len(papers_), 'paper')} but {count(len(vectors), 'vector')}")
        ids = [p.paper_id for p in papers_]
        with self.engine.begin() as conn:
            held: set[str] = set()
            for start in range(0, len(ids), _CHUNK):
                ended = conn.execute(
                    delete(embedding_claims)
                    .where(
                        embedding_claims.c.holder == holder,
                        embedding_claims.c.paper_id.in_(ids[start : start + _CHUNK]),
                    )
                    .returning(embedding_claims.c.paper_id)
                )
                held.update(ended.scalars())
            keep = [i for i, paper_id in enumerate(ids) if paper_id in held]
            if keep:
                write_vectors(conn, model_id, [papers_[i] for i in keep], vectors[keep], now)
            conn.execute(
                update(embedding_workers)
                .where(embedding_workers.c.holder == holder)
                .values(
                    batches=embedding_workers.c.batches + (1 if keep else 0),
                    papers=embedding_workers.c.papers + len(keep),
                    seen_at=now,
                )
            )
        return [ids[i] for i in keep]

    def renew(self, holder: str, until: datetime, now: datetime) -> int:
        with self.engine.begin() as conn:
            held = conn.execute(
                update(embedding_claims).where(embedding_claims.c.holder == holder).values(expires_at=until)
            ).rowcount
            conn.execute(
                update(embedding_workers).where(embedding_workers.c.holder == holder).values(seen_at=now)
            )
        return int(held)

    def release(self, holder: str) -> int:
        with self.engine.begin() as conn:
            return int(
                conn.execute(delete(embedding_claims).where(embedding_claims.c.holder == holder)).rowcount
            )

    def sweep(self, now: datetime, dead: Sequence[str] = ()) -> int:
        ended = embedding_claims.c.expires_at < now
        if dead:
            ended = or_(ended, embedding_claims.c.holder.in_(list(dead)))
        with self.engine.begin() as conn:
            return int(conn.execute(delete(embedding_claims).where(ended)).rowcount)

    def holdings(self) -> list[ClaimHolding]:
        c = embedding_claims.c
        query = (
            select(
                c.holder,
                func.count(),
                func.count(func.distinct(c.batch)),
                func.min(c.paper_id),
                func.max(c.paper_id),
                func.max(c.expires_at),
            )
            .group_by(c.holder)
            .order_by(c.holder)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [
            ClaimHolding(str(h), int(n), int(b), str(first), str(last), as_utc(expires))
            for h, n, b, first, last, expires in rows
        ]

    # -- the ledger ---------------------------------------------------------------------------------------

    def start_worker(self, holder: str, model_id: str, now: datetime) -> None:
        stmt = self._insert(embedding_workers).values(
            holder=holder,
            model_id=model_id,
            state="embedding",
            started_at=now,
            seen_at=now,
            batches=0,
            papers=0,
        )
        stmt = stmt.on_conflict_do_update(  # the same process again (index --follow's next slice)
            index_elements=[embedding_workers.c.holder],
            set_={"state": "embedding", "model_id": stmt.excluded.model_id, "seen_at": stmt.excluded.seen_at},
        )
        with self.engine.begin() as conn:
            conn.execute(delete(embedding_workers).where(embedding_workers.c.seen_at < now - _FORGET_AFTER))
            conn.execute(stmt)

    def finish_worker(self, holder: str, state: WorkerState, now: datetime) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(embedding_workers)
                .where(embedding_workers.c.holder == holder)
                .values(state=state, seen_at=now)
            )

    def workers(self, since: datetime) -> list[EmbeddingWorker]:
        w = embedding_workers.c
        query = select(embedding_workers).where(w.seen_at >= since).order_by(w.seen_at.desc(), w.holder)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [
            EmbeddingWorker(
                holder=r.holder,
                model_id=r.model_id,
                state=r.state,
                started_at=as_utc(r.started_at),
                seen_at=as_utc(r.seen_at),
                batches=int(r.batches),
                papers=int(r.papers),
            )
            for r in rows
        ]


class PgBatchClaims(SqlBatchClaims):
    """Claims on PostgreSQL: ``SELECT … FOR NO KEY UPDATE SKIP LOCKED``, then ``INSERT … ON CONFLICT DO
    NOTHING`` (the module's docstring says why both)."""

    def claim(
        self,
        model_id: str,
        holder: str,
        *,
        batch: int,
        after: str,
        limit: int,
        now: datetime,
        until: datetime,
        since: datetime | None = None,
    ) -> list[PendingPaper]:
        if limit < 1:
            return []
        query = _unclaimed_backlog(model_id, after, limit, since).with_for_update(
            of=papers, skip_locked=True, key_share=True
        )
        with self.engine.begin() as conn:
            for _ in range(_ATTEMPTS):
                rows = conn.execute(query).all()  # READ COMMITTED: each attempt sees claims committed since
                if not rows:
                    return []
                won = self._insert_claims(conn, [r.id for r in rows], model_id, holder, batch, now, until)
                if won:
                    return _pending([r for r in rows if r.id in won])
        return []  # every candidate was won by others, five times over: the caller looks again

    def _insert_claims(
        self,
        conn: Connection,
        ids: list[str],
        model_id: str,
        holder: str,
        batch: int,
        now: datetime,
        until: datetime,
    ) -> set[str]:
        rows = [
            {
                "paper_id": i,
                "holder": holder,
                "batch": batch,
                "model_id": model_id,
                "claimed_at": now,
                "expires_at": until,
            }
            for i in ids
        ]
        stmt = (
            postgresql.insert(embedding_claims)
            .values(rows)
            .on_conflict_do_nothing(index_elements=[embedding_claims.c.paper_id])
            .returning(embedding_claims.c.paper_id)
        )
        return set(conn.execute(stmt).scalars())


class SqliteBatchClaims(SqlBatchClaims):
    """Claims on SQLite: one ``INSERT … SELECT`` under the database's write lock, read back by batch."""

    def claim(
        self,
        model_id: str,
        holder: str,
        *,
        batch: int,
        after: str,
        limit: int,
        now: datetime,
        until: datetime,
        since: datetime | None = None,
    ) -> list[PendingPaper]:
        if limit < 1:
            return []
        candidates = (
            select(
                papers.c.id,
                literal(holder),
                literal(batch),
                literal(model_id),
                literal(now, UtcDateTime()),
                literal(until, UtcDateTime()),
            )
            .select_from(papers.outerjoin(embeddings, embeddings.c.paper_id == papers.c.id))
            .where(_unclaimed(model_id, after, since))
            .order_by(papers.c.id)
            .limit(limit)
        )
        c = embedding_claims.c
        fill = embedding_claims.insert().from_select(
            [c.paper_id, c.holder, c.batch, c.model_id, c.claimed_at, c.expires_at], candidates
        )
        mine = (
            select(*_PENDING_COLUMNS)
            .select_from(
                embedding_claims.join(papers, papers.c.id == c.paper_id).outerjoin(
                    embeddings, embeddings.c.paper_id == papers.c.id
                )
            )
            .where(c.holder == holder, c.batch == batch)
            .order_by(papers.c.id)
        )
        with self.engine.begin() as conn:
            conn.execute(fill)  # the write lock first (a write statement takes it before it reads)
            return _pending(conn.execute(mine).all())
