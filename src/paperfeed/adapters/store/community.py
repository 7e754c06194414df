"""Votes, submissions and comments on SQLAlchemy Core (SQLite and PostgreSQL alike).

Exact counts under concurrency come from the schema, not from care in Python:

- a vote is a row keyed ``(paper_id, user_id)``: a second vote by the same reader (double click, two
  tabs, two workers) is a primary-key conflict, turned into "already voted"; counts are ``COUNT(*)``
  when read, so there is no counter to drift;
- per-reader caps (submissions a day, comments an hour) insert first and count afterwards in the same
  transaction. On SQLite the insert takes the database's single write lock, so the count sees every
  earlier attempt; on PostgreSQL the reader's ``users`` row is locked first (``SELECT … FOR UPDATE``),
  which queues one reader's concurrent attempts behind each other. Over the cap, the transaction rolls
  back and nothing is written.

:func:`local_upvotes` and :func:`local_comments` are the correlated counts the feed queries add to
imported counts, so rankings sort by exactly what pages show.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    ScalarSelect,
    Select,
    and_,
    delete,
    exists,
    func,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.engine import Connection, Engine, Row
from sqlalchemy.exc import IntegrityError

from paperfeed.domain.community import (
    Comment,
    LimitReached,
    PaperNotFound,
    PaperStatus,
    Submission,
    Upvoter,
    public_name,
    submission_cap_reached,
)
from paperfeed.domain.wording import count

from .columns import as_date
from .schema import listings, papers
from .schema_accounts import hidden_papers, rate_limit_hits, users
from .schema_community import paper_comments, paper_submissions, paper_upvotes

__all__ = [
    "SUBMITTED_SOURCE",
    "SqlCommunityStore",
    "community_version",
    "local_comments",
    "local_upvotes",
]

SUBMITTED_SOURCE = "submitted"  # the listings.source of papers readers put on the daily feed
_CHUNK = 900  # ids per IN (...): under every SQLite build's variable limit


def _visible(user_id: ColumnElement[int]) -> ColumnElement[bool]:
    """Not by a reader an administrator hid. (A NOT IN over the few hidden readers: measured cheaper than
    joining ``users`` for every vote of every paper on a feed.)"""
    return user_id.not_in(select(users.c.id).where(users.c.hidden_at.is_not(None)))


def local_upvotes(paper_id: ColumnElement[Any]) -> ScalarSelect[int]:
    """Votes of visible readers for the paper ``paper_id`` refers to (a correlated subquery)."""
    return (
        select(func.count())
        .where(paper_upvotes.c.paper_id == paper_id, _visible(paper_upvotes.c.user_id))
        .scalar_subquery()
    )


def local_comments(paper_id: ColumnElement[Any]) -> ScalarSelect[int]:
    """Comments that are shown (not hidden, by visible readers) on the paper ``paper_id`` refers to."""
    return (
        select(func.count())
        .where(
            paper_comments.c.paper_id == paper_id,
            paper_comments.c.hidden_at.is_(None),
            _visible(paper_comments.c.user_id),
        )
        .scalar_subquery()
    )


def community_version(conn: Connection) -> tuple[str, str]:
    """Two parts: what moves when a vote or a comment is added or removed or a comment edited, and what
    moves when a comment is hidden or shown again or an administrator hides or shows a reader (for the
    trending and page caches' keys; see :class:`~paperfeed.domain.feed.DataVersion`).

    Count and newest time together catch every change but a clock going backwards; the vote parts are
    index reads (``ix_paper_upvotes_created``), the comment and reader parts scan small tables. Callers
    ask at most about once a second per process (see ``FeedService.data_version``).
    """
    # One aggregate a query: SQLite answers a lone count(*) or max() from an index, not the two together.
    added = [
        select(func.count()).select_from(paper_upvotes),
        select(func.max(paper_upvotes.c.created_at)),
        select(func.count()).select_from(paper_comments),
        select(func.max(paper_comments.c.id)),
        select(func.max(paper_comments.c.edited_at)),
    ]
    removed = [
        select(func.count(paper_comments.c.hidden_at)),
        select(func.max(paper_comments.c.hidden_at)),
        select(func.count(users.c.hidden_at)),
        select(func.max(users.c.hidden_at)),
    ]

    def joined(group: list[Select[Any]]) -> str:
        return "|".join(str(conn.execute(part).scalar()) for part in group)

    return joined(added), joined(removed)


_COMMENT_COLUMNS = (
    paper_comments.c.id,
    paper_comments.c.paper_id,
    paper_comments.c.user_id,
    users.c.display_name,
    paper_comments.c.body,
    paper_comments.c.created_at,
    paper_comments.c.edited_at,
    paper_comments.c.hidden_at,
)
_COMMENTS_WITH_AUTHORS = paper_comments.join(users, users.c.id == paper_comments.c.user_id)


def _comment(row: Row[*tuple[Any, ...]]) -> Comment:
    m = row._mapping
    return Comment(
        id=int(m["id"]),
        paper_id=m["paper_id"],
        user_id=int(m["user_id"]),
        author=public_name(int(m["user_id"]), m["display_name"]),
        body=m["body"],
        created_at=m["created_at"],
        edited_at=m["edited_at"],
        hidden_at=m["hidden_at"],
    )


class SqlCommunityStore:
    """:class:`~paperfeed.domain.community.CommunityStore` on a SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _lock_reader(self, conn: Connection, user_id: int) -> None:
        """PostgreSQL: queue this reader's concurrent capped writes (SQLite: its write lock does that)."""
        if conn.dialect.name != "sqlite":
            conn.execute(select(users.c.id).where(users.c.id == user_id).with_for_update())

    # -- papers -------------------------------------------------------------------------------------

    def paper_status(self, paper_id: str) -> tuple[PaperStatus, int | None]:
        hidden = exists().where(hidden_papers.c.paper_id == papers.c.id)
        query = select(papers.c.upvotes, hidden.label("hidden")).where(papers.c.id == paper_id)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            return "missing", None
        return ("hidden" if row.hidden else "visible"), row.upvotes

    def listed_on(self, paper_id: str) -> date | None:
        with self.engine.connect() as conn:
            value = conn.execute(
                select(func.min(listings.c.day)).where(listings.c.paper_id == paper_id)
            ).scalar()
        return None if value is None else as_date(value)

    # -- votes --------------------------------------------------------------------------------------

    def add_vote(self, user_id: int, paper_id: str, now: datetime) -> bool:
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(paper_upvotes).values(paper_id=paper_id, user_id=user_id, created_at=now))
        except IntegrityError:
            if self.has_voted(user_id, paper_id):
                return False  # voted already (a double click, or another tab at the same moment)
            raise PaperNotFound(f"No paper with id {paper_id} is in this paperfeed instance.") from None
        return True

    def remove_vote(self, user_id: int, paper_id: str) -> bool:
        with self.engine.begin() as conn:
            gone = conn.execute(
                delete(paper_upvotes).where(
                    paper_upvotes.c.paper_id == paper_id, paper_upvotes.c.user_id == user_id
                )
            )
        return gone.rowcount == 1

    def vote_count(self, paper_id: str) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(local_upvotes(literal(paper_id)))).scalar_one())

    def vote_counts(self, paper_ids: list[str]) -> dict[str, int]:
        return self._counts(
            paper_upvotes.c.paper_id, paper_upvotes, [_visible(paper_upvotes.c.user_id)], paper_ids
        )

    def comment_counts(self, paper_ids: list[str]) -> dict[str, int]:
        return self._counts(
            paper_comments.c.paper_id,
            paper_comments,
            [_visible(paper_comments.c.user_id), paper_comments.c.hidden_at.is_(None)],
            paper_ids,
        )

    def _counts(
        self, key: ColumnElement[str], source: Any, where: list[ColumnElement[bool]], paper_ids: list[str]
    ) -> dict[str, int]:
        out: dict[str, int] = {}
        unique = list(dict.fromkeys(paper_ids))
        with self.engine.connect() as conn:
            for first in range(0, len(unique), _CHUNK):
                chunk = unique[first : first + _CHUNK]
                query = (
                    select(key, func.count()).select_from(source).where(key.in_(chunk), *where).group_by(key)
                )
                out.update((pid, int(n)) for pid, n in conn.execute(query))
        return out

    def has_voted(self, user_id: int, paper_id: str) -> bool:
        return bool(self.voted_among(user_id, [paper_id]))

    def voted_among(self, user_id: int, paper_ids: list[str]) -> set[str]:
        found: set[str] = set()
        unique = list(dict.fromkeys(paper_ids))
        with self.engine.connect() as conn:
            for first in range(0, len(unique), _CHUNK):
                query = select(paper_upvotes.c.paper_id).where(
                    paper_upvotes.c.user_id == user_id,
                    paper_upvotes.c.paper_id.in_(unique[first : first + _CHUNK]),
                )
                found.update(conn.execute(query).scalars())
        return found

    def voted_papers(self, user_id: int) -> list[str]:
        query = (
            select(paper_upvotes.c.paper_id)
            .where(paper_upvotes.c.user_id == user_id)
            .order_by(paper_upvotes.c.created_at.desc(), paper_upvotes.c.paper_id)
        )
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def upvoters(self, paper_id: str, limit: int, offset: int) -> tuple[list[Upvoter], int]:
        visible = and_(paper_upvotes.c.paper_id == paper_id, users.c.hidden_at.is_(None))
        joined = paper_upvotes.join(users, users.c.id == paper_upvotes.c.user_id)
        query = (
            select(users.c.id, users.c.display_name, paper_upvotes.c.created_at)
            .select_from(joined)
            .where(visible)
            .order_by(paper_upvotes.c.created_at.desc(), users.c.id)
            .limit(limit)
            .offset(offset)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            total = conn.execute(select(func.count()).select_from(joined).where(visible)).scalar_one()
        voters = [Upvoter(int(r.id), public_name(int(r.id), r.display_name), r.created_at) for r in rows]
        return voters, int(total)

    # -- submissions --------------------------------------------------------------------------------

    def submission(self, paper_id: str) -> Submission | None:
        query = (
            select(
                paper_submissions.c.paper_id,
                paper_submissions.c.user_id,
                paper_submissions.c.day,
                paper_submissions.c.submitted_at,
                users.c.display_name,
                users.c.hidden_at,
            )
            .select_from(paper_submissions.outerjoin(users, users.c.id == paper_submissions.c.user_id))
            .where(paper_submissions.c.paper_id == paper_id)
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None
        uid = None if row.user_id is None else int(row.user_id)
        name = public_name(uid, row.display_name) if uid is not None and row.hidden_at is None else None
        return Submission(row.paper_id, uid, name, as_date(row.day), row.submitted_at)

    def add_submission(
        self, user_id: int, paper_id: str, day: date, now: datetime, cap: int
    ) -> Submission | None:
        try:
            with self.engine.begin() as conn:
                self._lock_reader(conn, user_id)
                conn.execute(
                    insert(paper_submissions).values(
                        paper_id=paper_id, user_id=user_id, day=day, submitted_at=now
                    )
                )
                made = conn.execute(
                    select(func.count()).where(
                        paper_submissions.c.user_id == user_id, paper_submissions.c.day == day
                    )
                ).scalar_one()
                if made > cap:
                    raise submission_cap_reached(cap, day, now)
                already_listed = exists().where(
                    listings.c.day == day,
                    listings.c.source == SUBMITTED_SOURCE,
                    listings.c.paper_id == paper_id,
                )
                conn.execute(
                    insert(listings).from_select(
                        ["day", "source", "paper_id"],
                        select(literal(day), literal(SUBMITTED_SOURCE), literal(paper_id)).where(
                            ~already_listed
                        ),
                    )
                )
        except IntegrityError:
            if self.submission(paper_id) is not None:
                return None  # another reader submitted it at the same moment
            raise PaperNotFound(f"No paper with id {paper_id} is in this paperfeed instance.") from None
        return self.submission(paper_id)

    def submissions_on(self, user_id: int, day: date) -> int:
        query = select(func.count()).where(
            paper_submissions.c.user_id == user_id, paper_submissions.c.day == day
        )
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    # Attempts live in the accounts' rate-limit log, one bucket per reader and UTC day (purged after a
    # day, longer than any day's bucket is read).

    @staticmethod
    def _attempts_bucket(user_id: int, day: date) -> str:
        return f"submit:{user_id}:{day.isoformat()}"

    def count_attempt(self, user_id: int, day: date, now: datetime, cap: int) -> bool:
        bucket = self._attempts_bucket(user_id, day)
        with self.engine.connect() as conn, conn.begin() as tx:
            self._lock_reader(conn, user_id)
            # Write first, then count (as add_submission): concurrent attempts see each other.
            conn.execute(insert(rate_limit_hits).values(bucket=bucket, at=now.timestamp()))
            made = conn.execute(select(func.count()).where(rate_limit_hits.c.bucket == bucket)).scalar_one()
            if made > cap:
                tx.rollback()
                return False
        return True

    def attempts_on(self, user_id: int, day: date) -> int:
        query = select(func.count()).where(rate_limit_hits.c.bucket == self._attempts_bucket(user_id, day))
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    # -- comments -----------------------------------------------------------------------------------

    def add_comment(self, user_id: int, paper_id: str, body: str, now: datetime, per_hour: int) -> Comment:
        since = now - timedelta(hours=1)
        try:
            with self.engine.begin() as conn:
                self._lock_reader(conn, user_id)
                new_id = conn.execute(
                    insert(paper_comments).values(
                        paper_id=paper_id, user_id=user_id, body=body, created_at=now
                    )
                ).inserted_primary_key
                assert new_id is not None
                recent = (
                    conn.execute(
                        select(paper_comments.c.created_at)
                        .where(paper_comments.c.user_id == user_id, paper_comments.c.created_at > since)
                        .order_by(paper_comments.c.created_at)
                    )
                    .scalars()
                    .all()
                )
                if len(recent) > per_hour:
                    oldest = recent[0]
                    raise LimitReached(
                        f"You have written {count(per_hour, 'comment')} in the last hour, the most allowed. "
                        "Try again a little later.",
                        int((oldest + timedelta(hours=1) - now).total_seconds()) + 1,
                    )
        except IntegrityError:
            raise PaperNotFound(f"No paper with id {paper_id} is in this paperfeed instance.") from None
        found = self.comment(int(new_id[0]))
        assert found is not None
        return found

    def comment(self, comment_id: int) -> Comment | None:
        query = (
            select(*_COMMENT_COLUMNS)
            .select_from(_COMMENTS_WITH_AUTHORS)
            .where(paper_comments.c.id == comment_id, users.c.hidden_at.is_(None))
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else _comment(row)

    def comments(self, paper_id: str, *, include_hidden: bool) -> list[Comment]:
        query = (
            select(*_COMMENT_COLUMNS)
            .select_from(_COMMENTS_WITH_AUTHORS)
            .where(paper_comments.c.paper_id == paper_id, users.c.hidden_at.is_(None))
            .order_by(paper_comments.c.created_at, paper_comments.c.id)
        )
        if not include_hidden:
            query = query.where(paper_comments.c.hidden_at.is_(None))
        with self.engine.connect() as conn:
            return [_comment(r) for r in conn.execute(query)]

    def edit_comment(self, comment_id: int, body: str, now: datetime) -> bool:
        with self.engine.begin() as conn:
            done = conn.execute(
                update(paper_comments)
                .where(paper_comments.c.id == comment_id)
                .values(body=body, edited_at=now)
            )
        return done.rowcount == 1

    def delete_comment(self, comment_id: int) -> bool:
        with self.engine.begin() as conn:
            done = conn.execute(delete(paper_comments).where(paper_comments.c.id == comment_id))
        return done.rowcount == 1

    def set_comment_hidden(self, comment_id: int, by: int | None, now: datetime | None) -> bool:
        with self.engine.begin() as conn:
            done = conn.execute(
                update(paper_comments)
                .where(paper_comments.c.id == comment_id)
                .values(hidden_at=now, hidden_by=by if now is not None else None)
            )
        return done.rowcount == 1
