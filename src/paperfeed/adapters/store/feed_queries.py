"""Reads behind the feeds (:class:`~paperfeed.domain.feed.FeedQueries`) on the store's SQL engine.

Portable SQLAlchemy Core only (SQLite and PostgreSQL). Every query is a range or key seek on an index:
``listings`` is keyed ``(day, source, paper_id)`` so day ranges are index ranges, ``ix_listings_paper_id``
finds a paper's days, and ``ix_papers_published_id`` (migration 0004) serves the keyset-paged list of all
papers newest first. Papers an administrator hid (``hidden_papers``) are left out of every read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import Date, Integer, Select, and_, bindparam, func, or_, select
from sqlalchemy.engine import Connection, Engine, Row
from sqlalchemy.sql.elements import Label

from paperfeed.domain.community import with_local_counts
from paperfeed.domain.embedding import VECTOR_INDEX_MARK
from paperfeed.domain.feed import DataVersion, ListedPaper, PaperCursor, TrendCandidate
from paperfeed.domain.models import Paper
from paperfeed.domain.summaries import SUMMARIES_CHECKPOINT

from .accounts import not_hidden
from .columns import as_date
from .community import community_version, local_comments, local_upvotes
from .embeddings import MARK_PREFIX
from .schema import checkpoints, listings, papers
from .schema_accounts import hidden_papers
from .schema_citations import citation_harvests, citation_imports
from .schema_jobs import job_runs
from .schema_topics import topic_builds, topic_papers
from .sql_store import _PAPER_COLUMNS, _from_row

__all__ = ["SqlFeedQueries"]


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, UTC)


_NO_LIMIT = 1_000_000_000  # "all rows" as a bound value (SQLite and PostgreSQL spell no-limit differently)


def _ranked(agg: Any, *, by_day: bool) -> Select[Any]:
    """Papers joined to an aggregated listing subquery, best first (newest day first if ``by_day``)."""
    # Shown and ranked: the imported count (the paper's, else its listing's) plus local votes. The local
    # votes are not selected again: ``_listed`` takes them back out of the sum.
    imported = func.coalesce(papers.c.upvotes, agg.c.listing_upvotes, 0)
    upvotes = (imported + local_upvotes(papers.c.id)).label("rank_upvotes")
    order = [agg.c.first_day.desc()] if by_day else []
    order += [upvotes.desc(), agg.c.best_rank.is_(None), agg.c.best_rank, papers.c.id]
    comments = local_comments(papers.c.id).label("local_comments")
    return (
        select(
            *_PAPER_COLUMNS, upvotes, imported.label("imported"), comments, agg.c.first_day, agg.c.best_rank
        )
        .join_from(agg, papers, papers.c.id == agg.c.pid)
        .where(not_hidden(papers.c.id))
        .order_by(*order)
        .limit(bindparam("lim", type_=Integer))
        .offset(bindparam("off", type_=Integer))
    )


_CHUNK = 900  # ids per IN (...): under every SQLite build's variable limit


class SqlFeedQueries:
    """:class:`~paperfeed.domain.feed.FeedQueries` over a SQLAlchemy engine.

    Statements are built once here with bound parameters: building and hashing a Core statement per
    call cost more than running it (a day's query runs in ~0.3 ms on SQLite).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        start, end = bindparam("start", type_=Date), bindparam("end", type_=Date)
        in_range = listings.c.day.between(start, end)
        per_paper = (
            select(
                listings.c.paper_id.label("pid"),
                func.max(listings.c.upvotes).label("listing_upvotes"),
                func.min(listings.c.day).label("first_day"),
                func.min(listings.c.rank).label("best_rank"),
            )
            .where(in_range)
            .group_by(listings.c.paper_id)
            .subquery()
        )
        self._listed = _ranked(per_paper, by_day=False)
        self._listed_count = select(func.count(func.distinct(listings.c.paper_id))).where(
            in_range, not_hidden(listings.c.paper_id)
        )
        per_day = (
            select(
                listings.c.day.label("first_day"),
                listings.c.paper_id.label("pid"),
                func.max(listings.c.upvotes).label("listing_upvotes"),
                func.min(listings.c.rank).label("best_rank"),
            )
            .where(listings.c.day >= start)
            .group_by(listings.c.day, listings.c.paper_id)
            .subquery()
        )
        self._recent = _ranked(per_day, by_day=True)
        self._sizes: tuple[str, list[tuple[date, int]]] | None = None
        self._day_sizes = (
            select(listings.c.day, func.count(func.distinct(listings.c.paper_id)))
            .where(not_hidden(listings.c.paper_id))
            .group_by(listings.c.day)
            .order_by(listings.c.day.desc())
        )
        self._latest = select(func.max(listings.c.day))
        self._neighbours = select(
            select(func.max(listings.c.day)).where(listings.c.day < start).scalar_subquery(),
            select(func.min(listings.c.day)).where(listings.c.day > end).scalar_subquery(),
        )
        self._paper = select(*_PAPER_COLUMNS).where(papers.c.id == bindparam("pid"), not_hidden(papers.c.id))
        self._days_of = (
            select(listings.c.day)
            .where(listings.c.paper_id == bindparam("pid"))
            .distinct()
            .order_by(listings.c.day)
        )

    # -- days ---------------------------------------------------------------------------------------

    def count_papers(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(papers)).scalar_one())

    def latest_day(self) -> date | None:
        with self.engine.connect() as conn:
            value = conn.execute(self._latest).scalar()
        return None if value is None else as_date(value)

    def neighbours(self, start: date, end: date) -> tuple[date | None, date | None]:
        with self.engine.connect() as conn:
            before, after = conn.execute(self._neighbours, {"start": start, "end": end}).one()
        return (
            None if before is None else as_date(before),
            None if after is None else as_date(after),
        )

    # -- ranked listings ----------------------------------------------------------------------------

    def listed(self, start: date, end: date, limit: int | None, offset: int) -> tuple[list[ListedPaper], int]:
        lim = _NO_LIMIT if limit is None else limit
        params = {"start": start, "end": end, "lim": lim, "off": offset}
        with self.engine.connect() as conn:
            rows = conn.execute(self._listed, params).all()
            if (rows and len(rows) < lim) or (not rows and offset == 0):
                total = offset + len(rows)  # the last page: no need to count
            else:
                total = conn.execute(self._listed_count, params).scalar_one()
        return [_listed(r) for r in rows], total

    def recent(self, limit: int, offset: int) -> tuple[list[ListedPaper], int]:
        # Rank only the newest days that can hold the page: find them from per-day sizes (an index
        # scan), instead of grouping and sorting every listing ever made.
        sizes = self._sizes_by_day()
        total = sum(size for _, size in sizes)
        if total == 0:
            return [], 0
        need, held = offset + limit, 0
        first = sizes[-1][0]
        for day, size in sizes:
            held += size
            if held >= need:
                first = day
                break
        with self.engine.connect() as conn:
            rows = conn.execute(self._recent, {"start": first, "lim": limit, "off": offset}).all()
        return [_listed(r) for r in rows], total

    def _sizes_by_day(self) -> list[tuple[date, int]]:
        """Papers per listed day, newest first; recomputed only when the data changes."""
        with self.engine.connect() as conn:
            version = self._listing_version(conn)
        cached = self._sizes
        if cached is not None and cached[0] == version:
            return cached[1]
        with self.engine.connect() as conn:
            sizes = [(as_date(day), int(n)) for day, n in conn.execute(self._day_sizes)]
        self._sizes = (version, sizes)  # one assignment: safe to race between threads
        return sizes

    # -- trending -----------------------------------------------------------------------------------

    def trend_candidates(self, since: datetime, until: datetime) -> list[TrendCandidate]:
        first_day_from = since.date() if since.time() == time.min else since.date() + timedelta(days=1)
        first_day_to = until.date() if until.time() == time.min else until.date() + timedelta(days=1)
        # Papers listed in the window; their age counts from their first listing ever.
        recent_ids = select(listings.c.paper_id).where(
            listings.c.day >= first_day_from, listings.c.day < first_day_to
        )
        firsts = (
            select(
                listings.c.paper_id.label("pid"),
                func.min(listings.c.day).label("first_day"),
                func.max(listings.c.upvotes).label("listing_upvotes"),
            )
            .where(listings.c.paper_id.in_(recent_ids))
            .group_by(listings.c.paper_id)
            .subquery()
        )
        votes = local_upvotes(papers.c.id)
        comments = local_comments(papers.c.id).label("local_comments")
        imported = func.coalesce(papers.c.upvotes, firsts.c.listing_upvotes, 0)
        stars = func.coalesce(papers.c.github_stars, 0)
        listed: Select[Any] = (
            select(
                *_PAPER_COLUMNS,
                (imported + votes).label("u"),
                imported.label("imported"),
                stars.label("s"),
                firsts.c.first_day,
                comments,
            )
            .join_from(firsts, papers, papers.c.id == firsts.c.pid)
            .where(not_hidden(papers.c.id))
        )
        # Papers never listed: first seen when published.
        own_upvotes = func.coalesce(papers.c.upvotes, 0) + votes
        never_listed: Select[Any] = select(
            *_PAPER_COLUMNS,
            own_upvotes.label("u"),
            func.coalesce(papers.c.upvotes, 0).label("imported"),
            stars.label("s"),
            comments,
        ).where(
            papers.c.published >= since,
            papers.c.published < until,
            or_(own_upvotes > 0, stars > 0),
            not_hidden(papers.c.id),
            ~select(listings.c.paper_id).where(listings.c.paper_id == papers.c.id).exists(),
        )
        out: list[TrendCandidate] = []
        with self.engine.connect() as conn:
            for row in conn.execute(listed):
                seen = _day_start(as_date(row.first_day))
                out.append(
                    TrendCandidate(_shown(row, int(row.u) - row.imported), int(row.u), int(row.s), seen)
                )
            for row in conn.execute(never_listed):
                paper = _shown(row, int(row.u) - row.imported)
                if paper.published is not None:
                    out.append(TrendCandidate(paper, int(row.u), int(row.s), paper.published))
        return out

    def latest_activity(self) -> datetime | None:
        day = self.latest_day()
        with self.engine.connect() as conn:
            value = conn.execute(select(func.max(papers.c.published))).scalar()
        stamps = [_day_start(day + timedelta(days=1))] if day is not None else []
        if value is not None:
            stamps.append(value)
        return max(stamps) if stamps else None

    def data_version(self) -> DataVersion:
        with self.engine.connect() as conn:
            # a citation harvest changes paper pages' counts and lists: it must reach cached answers
            harvested = conn.execute(select(func.max(citation_harvests.c.harvested_at))).scalar()
            # so does a bulk import of citations (each saved batch stamps its file's ledger row)
            imported = conn.execute(select(func.max(citation_imports.c.updated_at))).scalar()
            # placing new papers in the topics changes their pages and the map (a stream, like an import)
            placed = conn.execute(select(func.count()).select_from(topic_papers)).scalar_one()
            papers_part, hidden = self._listing_parts(conn)
            added, removed = community_version(conn)
            return DataVersion(
                content=str(added),
                removals=f"{hidden}|{removed}",
                papers=f"{papers_part}|{harvested}|{imported}|{placed}",
                derived=self._derived(conn),
            )

    @staticmethod
    def _derived(conn: Connection) -> str:
        """Topic builds, the vector indexes' sync points and the newest end of a job run (see
        :class:`DataVersion`; a run starting changes nothing): a few small index reads."""
        built = conn.execute(select(func.max(topic_builds.c.generation))).scalar()
        prefix = MARK_PREFIX + VECTOR_INDEX_MARK
        synced = conn.execute(
            select(checkpoints.c.name, checkpoints.c.value, checkpoints.c.updated_at)
            .where(checkpoints.c.name.startswith(prefix, autoescape=True))
            .order_by(checkpoints.c.name)
        ).all()
        newest = select(job_runs.c.finished_at).order_by(job_runs.c.id.desc()).limit(20).subquery()
        ended = conn.execute(select(func.max(newest.c.finished_at))).scalar()  # the newest end of a run
        summaries = conn.execute(  # extracted one-line summaries written by the sentence pass
            select(checkpoints.c.value).where(checkpoints.c.name == SUMMARIES_CHECKPOINT)
        ).scalar()
        return "|".join(
            [
                str(built),
                *(f"{n}={v}@{at}" for n, v, at in synced),
                f"ended:{ended}",
                f"summaries:{summaries}",
            ]
        )

    @classmethod
    def _listing_version(cls, conn: Connection) -> str:
        """Changes with papers, listings and hidden papers (not with votes: day sizes ignore them)."""
        return "|".join(cls._listing_parts(conn))

    @staticmethod
    def _listing_parts(conn: Connection) -> tuple[str, str]:
        """(papers and listings, hidden papers): see :class:`DataVersion` for why they are apart."""
        modified = conn.execute(select(func.max(papers.c.modified_at))).scalar()
        n_listings = conn.execute(select(func.count()).select_from(listings)).scalar_one()
        hidden = conn.execute(select(func.count(), func.max(hidden_papers.c.hidden_at))).one()
        return f"{modified}|{n_listings}", f"{hidden[0]}|{hidden[1]}"

    # -- papers -------------------------------------------------------------------------------------

    def paper(self, paper_id: str) -> Paper | None:
        return self.visible_papers([paper_id]).get(paper_id)

    def visible_papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        """:class:`~paperfeed.domain.visible.VisibleReads`: the papers among ``paper_ids`` an administrator
        did not hide, with the counts pages show, in one query per chunk of ids."""
        found: dict[str, Paper] = {}
        ids = list(dict.fromkeys(paper_ids))
        with self.engine.connect() as conn:
            for start in range(0, len(ids), _CHUNK):
                query: Select[Any] = select(*_PAPER_COLUMNS, *_local_counts()).where(
                    papers.c.id.in_(ids[start : start + _CHUNK]), not_hidden(papers.c.id)
                )
                found.update((row.id, _shown(row)) for row in conn.execute(query))
        return found

    def hidden_paper_ids(self) -> frozenset[str]:
        """The ids of hidden papers (a small table: read whole, for filters applied outside SQL)."""
        with self.engine.connect() as conn:
            return frozenset(conn.execute(select(hidden_papers.c.paper_id)).scalars())

    def listing_days(self, paper_id: str) -> list[date]:
        query: Select[Any] = (
            select(listings.c.day).where(listings.c.paper_id == paper_id).distinct().order_by(listings.c.day)
        )
        with self.engine.connect() as conn:
            return [as_date(d) for d in conn.execute(query).scalars()]

    def papers_after(self, cursor: PaperCursor | None, limit: int) -> list[Paper]:
        base = select(*_PAPER_COLUMNS, *_local_counts()).where(not_hidden(papers.c.id))
        out: list[Paper] = []
        with self.engine.connect() as conn:
            if cursor is None or cursor.published is not None:
                dated = base.where(papers.c.published.is_not(None))
                if cursor is not None and cursor.published is not None:
                    when = cursor.published.astimezone(UTC)
                    dated = dated.where(
                        or_(
                            papers.c.published < when,
                            and_(papers.c.published == when, papers.c.id < cursor.paper_id),
                        )
                    )
                out = self._page(conn, dated.order_by(papers.c.published.desc(), papers.c.id.desc()), limit)
            if len(out) < limit:
                undated = base.where(papers.c.published.is_(None))
                if cursor is not None and cursor.published is None:
                    undated = undated.where(papers.c.id < cursor.paper_id)
                out += self._page(conn, undated.order_by(papers.c.id.desc()), limit - len(out))
        return out

    @staticmethod
    def _page(conn: Connection, query: Select[Any], limit: int) -> list[Paper]:
        return [_shown(r) for r in conn.execute(query.limit(limit))]


def _local_counts() -> tuple[Label[int], Label[int]]:
    return local_upvotes(papers.c.id).label("local_votes"), local_comments(papers.c.id).label(
        "local_comments"
    )


def _shown(row: Row[Any], local_votes: int | None = None) -> Paper:
    """A paper with the counts pages show: imported upvotes and comments plus this instance's."""
    votes = row.local_votes if local_votes is None else local_votes
    return with_local_counts(_from_row(row), votes, row.local_comments)


def _listed(row: Row[Any]) -> ListedPaper:
    return ListedPaper(
        paper=_shown(row, int(row.rank_upvotes) - row.imported),
        upvotes=int(row.rank_upvotes),
        first_day=as_date(row.first_day),
        listing_rank=row.best_rank,
    )
