"""The paper store on SQLAlchemy Core: SQLite (WAL) by default, PostgreSQL by URL.

Every write goes through :meth:`SqlPaperStore.apply_batch`. A batch's papers are written in short
transactions of at most :data:`WRITE_CHUNK` papers, each with those papers' listings and ledger rows, the
source's checkpoint with the last: an import, a harvest and their kill are safe at any moment (a re-run
finds the chunks already written unchanged, by the ledger's fingerprints or by merging, and goes on after
the checkpoint), and the write lock a reader's upvote or save waits for is held for one chunk, tens of
milliseconds, never for a whole batch (a 5,000-paper batch held SQLite's one write lock 1.2-1.8 s: issue
#39 item 4, bench/write_latency.py); on SQLite the lock is left free a moment between chunks.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from operator import itemgetter
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import DateTime, bindparam, case, create_engine, event, func, select, text
from sqlalchemy.engine import Connection, Dialect, Engine, Row
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import ConnectionPoolEntry, QueuePool

from paperfeed.domain.ingest import Batch, BatchResult
from paperfeed.domain.merge import merge_paper
from paperfeed.domain.models import Listing, Paper
from paperfeed.domain.ports import BeforeWrite, DerivedStats, StoreStats
from paperfeed.domain.summaries import current_summary

from . import migrate
from .columns import UtcDateTime
from .errors import TranslatingQueuePool, invalid_url, translate_errors
from .schema import checkpoints, listings, papers, source_records
from .schema_accounts import hidden_papers

__all__ = ["WRITE_CHUNK", "SqlPaperStore", "normalise_url", "open_store", "sqlite_url", "write_checkpoint"]

_CHUNK = 900  # ids per IN (...) query: under every SQLite build's variable limit
# Papers per write transaction of a batch (see the module doc): ~0.2-0.3 ms of lock each on SQLite
# (measured on a busy 2-core machine), so a chunk holds the write lock ~20 ms (at most ~100 ms seen).
WRITE_CHUNK = 100
# Between two chunks on SQLite the lock is left free this long: a writer waiting in SQLite's busy handler
# (it sleeps 1, 2, 5, 10, … ms between tries) finds it free; back to back, the chunks starved it for the
# whole batch (waits of 1.5 s measured). 50 gaps a 5,000-paper batch: 0.1 s on an import's ~4 s of CPU.
SQLITE_WRITE_GAP = 0.002

# Papers per source: SQLite keeps them in ``source_counts`` (triggers, migration 0014); PostgreSQL
# counts them in one grouped query (see that migration for why it keeps no counters).
_BY_SOURCE = {
    "sqlite": text("SELECT source, papers FROM source_counts WHERE papers > 0"),
    "postgresql": text(
        "SELECT k, count(*) FROM papers CROSS JOIN LATERAL json_object_keys(papers.sources) AS k GROUP BY k"
    ),
}


def sqlite_url(path: Path) -> str:
    return f"sqlite+pysqlite:///{path}"


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _on_sqlite_connect(dbapi_conn: Any, _record: ConnectionPoolEntry) -> None:
    # WAL: one writer and many readers at once; NORMAL sync is durable across crashes of the process.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA cache_size=-65536")
    cur.close()


def normalise_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` URLs name psycopg 3, the driver paperfeed installs
    (SQLAlchemy's default for them is psycopg2)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def make_engine(url: str) -> Engine:
    """Create an engine with the pragmas and JSON codec paperfeed relies on, raising the domain's store
    errors (``errors.py``; a URL it cannot use: :class:`~paperfeed.domain.errors.InvalidDatabaseUrl`)."""
    url = normalise_url(url)
    options: dict[str, Any] = {}
    if url.startswith("postgresql"):
        # Sessions in UTC, whatever the server's TimeZone: timestamps come back as UTC and date
        # arithmetic in SQL agrees with Python's. pre_ping: a server restart costs one failed checkout,
        # not a pool of dead connections.
        options = {"connect_args": {"options": "-c timezone=UTC"}, "pool_pre_ping": True}
    try:
        engine = create_engine(url, json_serializer=_json_dumps, json_deserializer=orjson.loads, **options)
        if type(engine.pool) is QueuePool:  # the same pool, saying "unavailable" in the domain's words
            engine.dispose()
            engine = create_engine(
                url,
                json_serializer=_json_dumps,
                json_deserializer=orjson.loads,
                poolclass=TranslatingQueuePool,
                **options,
            )
    except ArgumentError as exc:  # an unknown driver, a URL that does not parse
        raise invalid_url(exc) from exc
    translate_errors(engine)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _on_sqlite_connect)
    return engine


def open_store(url: str, *, migrate_schema: bool = True) -> SqlPaperStore:
    """Open (and by default migrate) the store at ``url``."""
    engine = make_engine(url)
    if migrate_schema:
        migrate.upgrade(engine)
    return SqlPaperStore(engine)


def _to_row(paper: Paper, now: datetime) -> dict[str, Any]:
    return {
        "id": paper.id,
        "version": paper.version,
        "title": paper.title,
        "abstract": paper.abstract,
        "authors": paper.authors,  # tuples: the JSON codec writes them as arrays, no list copies
        "categories": paper.categories,
        "primary_category": paper.primary_category,
        "published": paper.published,
        "updated": paper.updated,
        "comment": paper.comment,
        "journal_ref": paper.journal_ref,
        "doi": paper.doi,
        "license": paper.license,
        "github_repo": paper.github_repo,
        "github_stars": paper.github_stars,
        "project_page": paper.project_page,
        "upvotes": paper.upvotes,
        "num_comments": paper.num_comments,
        "organization": paper.organization,
        "ai_summary": paper.ai_summary,
        "ai_keywords": paper.ai_keywords,
        "sources": paper.sources,
        "content_hash": paper.content_hash,
        "modified_at": now,
    }


def _from_row(row: Row[Any]) -> Paper:
    m = row._mapping
    return Paper(
        id=m["id"],
        title=m["title"],
        abstract=m["abstract"],
        authors=tuple(m["authors"]),
        categories=tuple(m["categories"]),
        version=m["version"],
        published=m["published"],
        updated=m["updated"],
        comment=m["comment"],
        journal_ref=m["journal_ref"],
        doi=m["doi"],
        license=m["license"],
        github_repo=m["github_repo"],
        github_stars=m["github_stars"],
        project_page=m["project_page"],
        upvotes=m["upvotes"],
        num_comments=m["num_comments"],
        organization=m["organization"],
        ai_summary=m["ai_summary"],
        ai_keywords=tuple(m["ai_keywords"]),
        sources=dict(m["sources"]),
        extracted_summary=current_summary(m.get("summary_line"), m.get("summary_key"), m["content_hash"]),
    )


_PAPER_COLUMNS = [c for c in papers.c if c.name not in ("created_at",)]
# what ingest writes: the extracted summary belongs to the sentence pass (adapters/store/sentences.py)
_SUMMARY_COLUMNS = ("summary_line", "summary_key")
_WRITTEN_COLUMNS = [c for c in _PAPER_COLUMNS if c.name not in _SUMMARY_COLUMNS]


class _BulkWriter:
    """``executemany`` of a few fixed statements with the parameters converted in one loop per row.

    SQLAlchemy's per-row parameter handling is generic over every statement shape and costs as much CPU
    as SQLite's own insert of a paper (38 vs 19 us per row, measured on real papers). For the bulk
    statements of an import this does the same conversion itself: the statement compiled for the
    dialect (the same SQL), the dialect's own bind processors, positional parameters; a date-time
    processor remembers its last value (a batch stamps every row with the same instant). Used for
    SQLite, whose driver takes positional parameters; other dialects keep SQLAlchemy's path.
    """

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect
        self._plans: dict[tuple[int, tuple[str, ...]], tuple[str, list[str], list[Any]] | None] = {}

    def executemany(self, conn: Connection, stmt: Any, rows: list[dict[str, Any]]) -> None:
        keys = tuple(rows[0])
        try:
            plan = self._plans[(id(stmt), keys)]
        except KeyError:
            plan = self._plans[(id(stmt), keys)] = self._plan(stmt, keys)
        if plan is None:  # a shape this does not handle: SQLAlchemy's own path
            conn.execute(stmt, rows)
            return
        sql, names, procs = plan
        args = [
            tuple([value if proc is None else proc(value) for value, proc in zip(values, procs, strict=True)])
            for values in map(itemgetter(*names), rows)
        ]
        conn.exec_driver_sql(sql, args)

    def _plan(self, stmt: Any, keys: tuple[str, ...]) -> tuple[str, list[str], list[Any]] | None:
        compiled = stmt.compile(dialect=self._dialect, column_keys=list(keys))
        names = list(compiled.positiontup or ())
        if compiled.positiontup is None or len(names) < 2 or not set(names) <= set(keys):
            return None  # named parameters, or values fixed in the statement itself
        procs = []
        for name in names:
            bind = compiled.binds[name]
            proc = bind.type.dialect_impl(self._dialect).bind_processor(self._dialect)
            stamp = isinstance(bind.type, DateTime | UtcDateTime)
            procs.append(_last_value_memo(proc) if proc and stamp else proc)
        return compiled.string, names, procs


def _dialect_insert(dialect: Dialect) -> Any:
    """The dialect's INSERT (with ON CONFLICT), imported when first needed: the CLI starts without it."""
    if dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert
    from sqlalchemy.dialects import sqlite

    return sqlite.insert


def write_checkpoint(conn: Connection, name: str, value: str) -> None:
    """Set checkpoint ``name`` inside the caller's transaction (other stores write theirs with their data)."""
    insert = _dialect_insert(conn.dialect)
    stmt = insert(checkpoints).values(name=name, value=value, updated_at=datetime.now(UTC))
    stmt = stmt.on_conflict_do_update(
        index_elements=[checkpoints.c.name],
        set_={"value": stmt.excluded.value, "updated_at": stmt.excluded.updated_at},
    )
    conn.execute(stmt)


@dataclass(frozen=True, slots=True)
class _Chunk:
    """One write transaction of a batch: its papers' rows, their listings and ledger rows."""

    rows: list[tuple[bool, dict[str, Any]]]
    listings: list[Listing]
    ledger: dict[str, tuple[str, str]]
    last: bool  # the checkpoint goes with it


def _last_value_memo(proc: Any) -> Any:
    last: list[Any] = [object(), None]

    def convert(value: Any) -> Any:
        if value is not last[0]:
            last[0], last[1] = value, proc(value)
        return last[1]

    return convert


class SqlPaperStore:
    """:class:`~paperfeed.domain.ports.PaperStore` on a SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._insert = self._dialect_insert()
        update_cols: dict[str, Any] = {
            c.name: bindparam(f"v_{c.name}") for c in _WRITTEN_COLUMNS if c.name != "id"
        }
        self._update_stmt = papers.update().where(papers.c.id == bindparam("v_id")).values(update_cols)
        self._insert_stmt = papers.insert()
        # Built once, with expanding IN parameters: compiled once and cached, not once per id list.
        self._fetch_stmt = select(*_PAPER_COLUMNS).where(papers.c.id.in_(bindparam("ids", expanding=True)))
        self._known_stmt = select(source_records.c.record_key, source_records.c.fingerprint).where(
            source_records.c.source == bindparam("source"),
            source_records.c.record_key.in_(bindparam("keys", expanding=True)),
        )
        self._listings_stmt = self._listings_upsert()
        self._ledger_stmt = self._ledger_upsert()
        self._bulk = _BulkWriter(engine.dialect) if engine.dialect.name == "sqlite" else None

    def _dialect_insert(self) -> Any:
        return _dialect_insert(self.engine.dialect)

    # -- writes -------------------------------------------------------------------------------------

    def apply_batch(self, batch: Batch, *, before_write: BeforeWrite | None = None) -> BatchResult:
        """Write ``batch`` (see the module doc: in chunks of :data:`WRITE_CHUNK` papers, the checkpoint with
        the last); ``before_write`` gets the papers about to be added or changed (merged, as they will be
        stored) and their ``modified_at`` first, before anything is written: a derived index can work on
        them while the rows are written. If it raises, nothing is written."""
        incoming: dict[str, Paper] = {}
        for paper in batch.papers:  # several observations of one paper in a batch merge in order
            incoming[paper.id] = merge_paper(incoming.get(paper.id), paper)
        now = datetime.now(UTC)
        added = updated = unchanged = 0
        with self.engine.connect() as conn:  # a read: no write lock is taken yet
            existing = self._fetch(conn, list(incoming))
        rows: dict[str, tuple[bool, dict[str, Any]]] = {}  # paper id -> (new?, its row)
        added_papers: list[Paper] = []
        updated_papers: list[Paper] = []
        for paper_id, paper in incoming.items():
            old = existing.get(paper_id)
            merged = merge_paper(old, paper)
            if old is None:
                row = _to_row(merged, now)
                row["created_at"] = now
                rows[paper_id] = (True, row)
                added_papers.append(merged)
                added += 1
            elif merged != old:
                rows[paper_id] = (False, {f"v_{k}": v for k, v in _to_row(merged, now).items()})
                updated_papers.append(merged)
                updated += 1
            else:
                unchanged += 1
        if before_write is not None and (added_papers or updated_papers):
            before_write([*added_papers, *updated_papers], now)
        written = 0
        gap = SQLITE_WRITE_GAP if self.engine.dialect.name == "sqlite" else 0.0
        for n, chunk in enumerate(self._chunks(batch, rows)):
            if n and gap:
                time.sleep(gap)  # the other writers' turn (see SQLITE_WRITE_GAP)
            with self.engine.begin() as conn:
                inserts = [row for new, row in chunk.rows if new]
                updates = [row for new, row in chunk.rows if not new]
                if inserts:
                    self._executemany(conn, self._insert_stmt, inserts)
                if updates:
                    self._executemany(conn, self._update_stmt, updates)
                written += self._write_listings(conn, chunk.listings)
                if chunk.ledger and batch.ledger_source:
                    self._write_ledger(conn, batch.ledger_source, chunk.ledger)
                if chunk.last and batch.checkpoint is not None:
                    self._write_checkpoint(conn, *batch.checkpoint)
        changed = (*added_papers, *updated_papers)
        return BatchResult(
            added=added,
            updated=updated,
            unchanged=unchanged,
            listings=written,
            changed_ids=tuple(p.id for p in changed),
            changed=changed,
            written_at=now,
        )

    @staticmethod
    def _chunks(batch: Batch, rows: dict[str, tuple[bool, dict[str, Any]]]) -> Iterator[_Chunk]:
        """The batch's writes in chunks of :data:`WRITE_CHUNK` papers, each with the listings and ledger
        rows of its papers (those of papers written in no chunk, unchanged ones, go with the last)."""
        ids = list(rows)
        parts = [ids[i : i + WRITE_CHUNK] for i in range(0, len(ids), WRITE_CHUNK)] or [[]]
        where = {pid: n for n, part in enumerate(parts) for pid in part}
        last = len(parts) - 1
        listings: list[list[Listing]] = [[] for _ in parts]
        for item in batch.listings:
            listings[where.get(item.paper_id, last)].append(item)
        ledger: list[dict[str, tuple[str, str]]] = [{} for _ in parts]
        for key, (pid, fingerprint) in (batch.fingerprints or {}).items():
            ledger[where.get(pid, last)][key] = (pid, fingerprint)
        for n, part in enumerate(parts):
            yield _Chunk([rows[pid] for pid in part], listings[n], ledger[n], n == last)

    def _write_listings(self, conn: Connection, items: Sequence[Listing]) -> int:
        if not items:
            return 0
        rows: dict[tuple[date, str, str], dict[str, Any]] = {}
        for item in items:
            key = (item.day, item.source, item.paper_id)
            prev = rows.get(key)
            upvotes = item.upvotes
            if (
                prev is not None
                and prev["upvotes"] is not None
                and (upvotes is None or prev["upvotes"] > upvotes)
            ):
                upvotes = prev["upvotes"]
            rank = item.rank if item.rank is not None else (prev["rank"] if prev else None)
            rows[key] = {
                "day": item.day,
                "source": item.source,
                "paper_id": item.paper_id,
                "upvotes": upvotes,
                "rank": rank,
            }
        self._executemany(conn, self._listings_stmt, list(rows.values()))
        return len(rows)

    def _listings_upsert(self) -> Any:
        stmt = self._insert(listings)
        excluded = stmt.excluded
        return stmt.on_conflict_do_update(
            index_elements=[listings.c.day, listings.c.source, listings.c.paper_id],
            set_={
                "upvotes": case(
                    (listings.c.upvotes.is_(None), excluded.upvotes),
                    (excluded.upvotes > listings.c.upvotes, excluded.upvotes),
                    else_=listings.c.upvotes,
                ),
                "rank": func.coalesce(excluded.rank, listings.c.rank),
            },
        )

    def _write_ledger(self, conn: Connection, source: str, entries: dict[str, tuple[str, str]]) -> None:
        rows = [
            {"source": source, "record_key": key, "paper_id": pid, "fingerprint": fp}
            for key, (pid, fp) in entries.items()
        ]
        self._executemany(conn, self._ledger_stmt, rows)

    def _ledger_upsert(self) -> Any:
        stmt = self._insert(source_records)
        return stmt.on_conflict_do_update(
            index_elements=[source_records.c.source, source_records.c.record_key],
            set_={"paper_id": stmt.excluded.paper_id, "fingerprint": stmt.excluded.fingerprint},
        )

    def _executemany(self, conn: Connection, stmt: Any, rows: list[dict[str, Any]]) -> None:
        """``conn.execute(stmt, rows)``; on SQLite through :class:`_BulkWriter`."""
        if self._bulk is None:
            conn.execute(stmt, rows)
        else:
            self._bulk.executemany(conn, stmt, rows)

    def known_fingerprints(self, source: str, keys: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                rows = conn.execute(self._known_stmt, {"source": source, "keys": chunk})
                found.update((key, fp) for key, fp in rows)
        return found

    def _write_checkpoint(self, conn: Connection, name: str, value: str) -> None:
        write_checkpoint(conn, name, value)

    def clear_checkpoint(self, name: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(checkpoints.delete().where(checkpoints.c.name == name))

    # -- reads --------------------------------------------------------------------------------------

    def _fetch(self, conn: Connection, ids: Sequence[str]) -> dict[str, Paper]:
        found: dict[str, Paper] = {}
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            for row in conn.execute(self._fetch_stmt, {"ids": chunk}):
                found[row.id] = _from_row(row)
        return found

    def get_paper(self, paper_id: str) -> Paper | None:
        return self.get_papers([paper_id]).get(paper_id)

    def get_papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        with self.engine.connect() as conn:
            return self._fetch(conn, list(paper_ids))

    def iter_papers(self, batch_size: int = 1000) -> Iterator[list[Paper]]:
        """All papers in id order, a page at a time (keyset pagination: constant memory)."""
        last = ""
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    select(*_PAPER_COLUMNS).where(papers.c.id > last).order_by(papers.c.id).limit(batch_size)
                ).all()
            if not rows:
                return
            page = [_from_row(r) for r in rows]
            last = page[-1].id
            yield page

    def listings_for_day(self, day: date, source: str | None = None) -> list[Listing]:
        query = select(listings).where(listings.c.day == day)
        if source is not None:
            query = query.where(listings.c.source == source)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        items = [Listing(r.day, r.paper_id, r.source, r.upvotes, r.rank) for r in rows]
        return sorted(items, key=lambda x: (x.source, -(x.upvotes or 0), x.rank or 0, x.paper_id))

    def get_checkpoint(self, name: str) -> str | None:
        with self.engine.connect() as conn:
            value = conn.execute(select(checkpoints.c.value).where(checkpoints.c.name == name)).scalar()
        return value

    def count_papers(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(papers)).scalar_one())

    def stats(self) -> StoreStats:
        with self.engine.connect() as conn:
            count = conn.execute(select(func.count()).select_from(papers)).scalar_one()
            n_listings = conn.execute(select(func.count()).select_from(listings)).scalar_one()
            days = conn.execute(select(func.count(func.distinct(listings.c.day)))).scalar_one()
            # two statements, not one: SQLite answers a lone min() or max() from the published index,
            # but both in one SELECT with a scan of the whole table (0.04 s on 100k papers)
            first = conn.execute(select(func.min(papers.c.published))).scalar_one()
            last = conn.execute(select(func.max(papers.c.published))).scalar_one()
            # sorted here, not by SQL: PostgreSQL's collation would order names another way
            rows = conn.execute(_BY_SOURCE[conn.dialect.name]).all()
            by_source: dict[str, int] = dict(sorted((str(name), int(n)) for name, n in rows))

        def _day(value: Any) -> str | None:
            return None if value is None else str(value)[:10]

        return StoreStats(
            papers=count,
            listings=n_listings,
            listing_days=days,
            by_source=by_source,
            first_published=_day(first),
            last_published=_day(last),
            location=self.engine.url.render_as_string(hide_password=True),
        )

    def derived_stats(self) -> DerivedStats:
        from .schema import embeddings
        from .topics import SqlTopicRecords

        query = select(embeddings.c.model_id, func.count()).group_by(embeddings.c.model_id)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        vectors = dict(sorted((str(model), int(n)) for model, n in rows))
        return DerivedStats(vectors=vectors, topics=SqlTopicRecords(self.engine).current())

    def hidden_paper_ids(self) -> frozenset[str]:
        with self.engine.connect() as conn:
            return frozenset(conn.execute(select(hidden_papers.c.paper_id)).scalars())

    def changed_after(self, moment: datetime) -> bool:
        with self.engine.connect() as conn:
            found = conn.execute(select(papers.c.id).where(papers.c.modified_at > moment).limit(1)).first()
        return found is not None

    def close(self) -> None:
        self.engine.dispose()
