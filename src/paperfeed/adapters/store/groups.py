"""Reading groups on SQLAlchemy Core (SQLite and PostgreSQL alike); implements ``domain.groups.GroupRecords``.

Each public method is one transaction. Who may call what is the group service's business: these methods
trust their arguments (the ids were checked against a membership already).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine, Row

from paperfeed.domain.groups import (
    Group,
    GroupSearch,
    GroupSession,
    Invitation,
    Member,
    Membership,
    QueueEntry,
    Role,
)

from .schema import papers
from .schema_accounts import users
from .schema_groups import (
    group_invitations,
    group_members,
    group_mutes,
    group_queue,
    group_searches,
    group_sessions,
    group_votes,
    groups,
    reader_mutes,
)

__all__ = ["SqlGroupStore", "forget_reader", "reader_name"]

_CHUNK = 900


def reader_name(display_name: str | None, user_id: int | None) -> str:
    """What other members call a reader: their display name, else "reader N" (their account's number,
    which the API shows as ``userId`` anyway), else "a former member". Never anything of their address:
    members never see each other's (issue #41: the part before the @ was shown)."""
    if user_id is None:
        return "a former member"
    return display_name or f"reader {user_id}"


def _group(row: Row[Any]) -> Group:
    return Group(row.id, row.name, row.description or "", row.created_at)


def _membership(row: Row[Any]) -> Membership:
    role: Role = "owner" if row.role == "owner" else "member"
    return Membership(row.group_id, row.user_id, role, row.joined_at, bool(row.digest))


# A closed invitation (withdrawn, or its address removed or joined) expires when it was made: before any
# "now" another request holds. Expiring it "now" was a race on PostgreSQL: an acceptance that had read the
# clock a moment before the removal found the closed row still valid (expiry > its now) once the removal's
# row lock let it re-check the row, and brought the removed member back.
_CLOSED = group_invitations.c.created_at


class _Unchanged(Exception):
    """Rolls a compare-and-set transaction back."""


class SqlGroupStore:
    """Groups in the relational store; knows tables, not rules."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._insert: Any = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert

    # -- groups and members ----------------------------------------------------------------------------------

    def create_group(self, owner_id: int, name: str, description: str, calendar_token: str) -> Group:
        now = datetime.now(UTC)
        with self.engine.begin() as conn:
            gid = conn.execute(
                groups.insert()
                .values(name=name, description=description, created_at=now)
                .returning(groups.c.id)
            ).scalar_one()
            conn.execute(
                group_members.insert().values(
                    group_id=gid, user_id=owner_id, role="owner", joined_at=now, calendar_token=calendar_token
                )
            )
        return Group(int(gid), name, description, now)

    def group(self, group_id: int) -> Group | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(groups).where(groups.c.id == group_id)).first()
        return None if row is None else _group(row)

    def delete_group(self, group_id: int) -> None:
        with self.engine.begin() as conn:
            # children first: SQLite enforces ON DELETE CASCADE only with the foreign_keys pragma
            for table in (group_votes, group_queue, group_sessions, group_invitations, group_members):
                conn.execute(delete(table).where(table.c.group_id == group_id))
            for table in (group_mutes, group_searches):
                conn.execute(delete(table).where(table.c.group_id == group_id))
            conn.execute(delete(groups).where(groups.c.id == group_id))

    def groups_of(self, user_id: int) -> list[tuple[Group, Membership]]:
        query = (
            select(groups, group_members)
            .join(group_members, group_members.c.group_id == groups.c.id)
            .where(group_members.c.user_id == user_id)
            .order_by(groups.c.name, groups.c.id)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [(_group(r), _membership(r)) for r in rows]

    def membership(self, group_id: int, user_id: int) -> Membership | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(group_members).where(
                    group_members.c.group_id == group_id, group_members.c.user_id == user_id
                )
            ).first()
        return None if row is None else _membership(row)

    def members(self, group_id: int) -> list[Member]:
        query = (
            select(group_members, users.c.display_name)
            .join(users, users.c.id == group_members.c.user_id)
            .where(group_members.c.group_id == group_id)
            .order_by(group_members.c.joined_at, group_members.c.user_id)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [
            Member(
                r.user_id,
                reader_name(r.display_name, r.user_id),
                _membership(r).role,
                r.joined_at,
                named=bool(r.display_name),
            )
            for r in rows
        ]

    def member_emails(self, group_id: int, *, digest_only: bool = False) -> list[tuple[int, str]]:
        query = (
            select(users.c.id, users.c.email)
            .join(group_members, group_members.c.user_id == users.c.id)
            .where(group_members.c.group_id == group_id, users.c.hidden_at.is_(None))
            .order_by(users.c.id)
        )
        if digest_only:
            query = query.where(group_members.c.digest.is_(True))
        with self.engine.connect() as conn:
            return [(int(r.id), str(r.email)) for r in conn.execute(query)]

    def add_member(self, group_id: int, user_id: int, calendar_token: str) -> bool:
        """Add a member; False when they already are one (a second accepted invitation changes nothing)."""
        stmt = self._insert(group_members).values(
            group_id=group_id,
            user_id=user_id,
            role="member",
            joined_at=datetime.now(UTC),
            calendar_token=calendar_token,
        )
        stmt = stmt.on_conflict_do_nothing(index_elements=[group_members.c.group_id, group_members.c.user_id])
        with self.engine.begin() as conn:
            return conn.execute(stmt.returning(group_members.c.user_id)).first() is not None

    def remove_member(self, group_id: int, user_id: int) -> bool:
        """Remove a member and their vote (their queue entries and notes stay: the group's record), and
        close the open invitations of their address to the group, so an older link cannot bring them back.

        The invitations are closed first: on PostgreSQL an acceptance of one of them racing this removal
        either holds its row (then this waits, and the member it committed is deleted next) or finds it
        closed; the acceptance is one transaction (:meth:`accept_invitation`)."""
        email = select(users.c.email).where(users.c.id == user_id).scalar_subquery()
        with self.engine.begin() as conn:
            self._close(conn, group_id, datetime.now(UTC), group_invitations.c.email == email)
            conn.execute(
                delete(group_votes).where(
                    group_votes.c.group_id == group_id, group_votes.c.user_id == user_id
                )
            )
            gone = conn.execute(
                delete(group_members).where(
                    group_members.c.group_id == group_id,
                    group_members.c.user_id == user_id,
                    group_members.c.role == "member",
                )
            ).rowcount
        return bool(gone)

    def hand_over(self, group_id: int, from_user: int, to_user: int) -> bool:
        """Make ``to_user`` the owner and ``from_user`` a member, in one transaction (compare-and-set)."""
        where = group_members.c.group_id == group_id
        try:
            with self.engine.begin() as conn:
                for user_id, old, new in ((to_user, "member", "owner"), (from_user, "owner", "member")):
                    changed = conn.execute(
                        update(group_members)
                        .where(where, group_members.c.user_id == user_id, group_members.c.role == old)
                        .values(role=new)
                    ).rowcount
                    if not changed:
                        raise _Unchanged
        except _Unchanged:
            return False
        return True

    def set_digest(self, group_id: int, user_id: int, on: bool) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(group_members)
                .where(group_members.c.group_id == group_id, group_members.c.user_id == user_id)
                .values(digest=on)
            )

    def calendar_token(self, group_id: int, user_id: int) -> str | None:
        with self.engine.connect() as conn:
            value = conn.execute(
                select(group_members.c.calendar_token).where(
                    group_members.c.group_id == group_id, group_members.c.user_id == user_id
                )
            ).scalar()
        return None if value is None else str(value)

    def by_calendar_token(self, token: str) -> Membership | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(group_members)
                .join(users, users.c.id == group_members.c.user_id)
                .where(group_members.c.calendar_token == token, users.c.hidden_at.is_(None))
            ).first()
        return None if row is None else _membership(row)

    # -- invitations -----------------------------------------------------------------------------------------

    def add_invitation(
        self, group_id: int, email: str, token_hash: str, invited_by: int, now: datetime, expires_at: datetime
    ) -> int:
        with self.engine.begin() as conn:
            return int(
                conn.execute(
                    group_invitations.insert()
                    .values(
                        group_id=group_id,
                        email=email,
                        token_hash=token_hash,
                        invited_by=invited_by,
                        created_at=now,
                        expires_at=expires_at,
                    )
                    .returning(group_invitations.c.id)
                ).scalar_one()
            )

    def _invitations(self) -> Any:
        return select(group_invitations, users.c.display_name).outerjoin(
            users, users.c.id == group_invitations.c.invited_by
        )

    @staticmethod
    def _invitation(row: Row[Any]) -> Invitation:
        return Invitation(
            row.id,
            row.group_id,
            row.email,
            reader_name(row.display_name, row.invited_by),
            row.created_at,
            row.expires_at,
            row.used_at,
            row.invited_by,
        )

    def invitation(self, token_hash: str) -> Invitation | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                self._invitations().where(group_invitations.c.token_hash == token_hash)
            ).first()
        return None if row is None else self._invitation(row)

    def accept_invitation(
        self, token_hash: str, user_id: int, now: datetime, calendar_token: str
    ) -> int | None:
        """Mark an unused, unexpired invitation used (compare-and-set, so a link works once even when
        two requests race), make ``user_id`` a member and close the address's other open invitations to
        the group, in one transaction; its group id, or None."""
        with self.engine.begin() as conn:
            row = conn.execute(
                update(group_invitations)
                .where(
                    group_invitations.c.token_hash == token_hash,
                    group_invitations.c.used_at.is_(None),
                    group_invitations.c.expires_at > now,
                )
                .values(used_at=now, used_by=user_id)
                .returning(group_invitations.c.group_id, group_invitations.c.email)
            ).first()
            if row is None:
                return None
            group_id = int(row.group_id)
            self._close(conn, group_id, now, group_invitations.c.email == row.email)
            conn.execute(
                self._insert(group_members)
                .values(
                    group_id=group_id,
                    user_id=user_id,
                    role="member",
                    joined_at=now,
                    calendar_token=calendar_token,
                )
                .on_conflict_do_nothing(index_elements=[group_members.c.group_id, group_members.c.user_id])
            )
        return group_id

    @staticmethod
    def _close(conn: Connection, group_id: int, now: datetime, which: Any) -> int:
        """Close the group's open invitations ``which`` selects: their expiry is set back to their
        creation (see :data:`_CLOSED`); how many."""
        return int(
            conn.execute(
                update(group_invitations)
                .where(
                    group_invitations.c.group_id == group_id,
                    which,
                    group_invitations.c.used_at.is_(None),
                    group_invitations.c.expires_at > now,
                )
                .values(expires_at=_CLOSED)
            ).rowcount
        )

    def withdraw_invitation(self, group_id: int, invitation_id: int, now: datetime) -> bool:
        with self.engine.begin() as conn:
            return bool(self._close(conn, group_id, now, group_invitations.c.id == invitation_id))

    def open_invitations(self, group_id: int, now: datetime) -> list[Invitation]:
        query = (
            self._invitations()
            .where(
                group_invitations.c.group_id == group_id,
                group_invitations.c.used_at.is_(None),
                group_invitations.c.expires_at > now,
            )
            .order_by(group_invitations.c.created_at.desc())
        )
        with self.engine.connect() as conn:
            return [self._invitation(r) for r in conn.execute(query)]

    # -- the queue and votes ---------------------------------------------------------------------------------

    def _queue_query(self, group_id: int) -> Any:
        votes = (
            select(group_votes.c.paper_id, func.count().label("votes"))
            .where(group_votes.c.group_id == group_id)
            .group_by(group_votes.c.paper_id)
            .subquery()
        )
        return (
            select(
                group_queue,
                users.c.display_name,
                func.coalesce(votes.c.votes, 0).label("votes"),
            )
            .outerjoin(users, users.c.id == group_queue.c.added_by)
            .outerjoin(votes, votes.c.paper_id == group_queue.c.paper_id)
            .where(group_queue.c.group_id == group_id)
        )

    @staticmethod
    def _entry(row: Row[Any]) -> QueueEntry:
        return QueueEntry(
            row.paper_id,
            row.added_by,
            reader_name(row.display_name, row.added_by),
            row.note or "",
            row.added_at,
            int(row.votes),
        )

    def queue(self, group_id: int) -> list[QueueEntry]:
        """The queue, newest first (the service sorts by votes where it wants to)."""
        query = self._queue_query(group_id).order_by(group_queue.c.added_at.desc(), group_queue.c.paper_id)
        with self.engine.connect() as conn:
            return [self._entry(r) for r in conn.execute(query)]

    def queued_in(self, group_ids: Sequence[int]) -> dict[int, frozenset[str]]:
        found: dict[int, set[str]] = {}
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(group_queue.c.group_id, group_queue.c.paper_id).where(
                    group_queue.c.group_id.in_(list(group_ids))
                )
            )
            for group_id, paper_id in rows:
                found.setdefault(int(group_id), set()).add(str(paper_id))
        return {g: frozenset(ids) for g, ids in found.items()}

    def queue_entry(self, group_id: int, paper_id: str) -> QueueEntry | None:
        with self.engine.connect() as conn:
            row = conn.execute(self._queue_query(group_id).where(group_queue.c.paper_id == paper_id)).first()
        return None if row is None else self._entry(row)

    def add_to_queue(self, group_id: int, paper_id: str, user_id: int, note: str, now: datetime) -> bool:
        """Queue a paper; False when it is queued already (the first note and adder stay)."""
        stmt = self._insert(group_queue).values(
            group_id=group_id, paper_id=paper_id, added_by=user_id, note=note, added_at=now
        )
        stmt = stmt.on_conflict_do_nothing(index_elements=[group_queue.c.group_id, group_queue.c.paper_id])
        with self.engine.begin() as conn:
            return conn.execute(stmt.returning(group_queue.c.paper_id)).first() is not None

    def remove_from_queue(self, group_id: int, paper_id: str) -> bool:
        with self.engine.begin() as conn:
            conn.execute(
                delete(group_votes).where(
                    group_votes.c.group_id == group_id, group_votes.c.paper_id == paper_id
                )
            )
            return bool(
                conn.execute(
                    delete(group_queue).where(
                        group_queue.c.group_id == group_id, group_queue.c.paper_id == paper_id
                    )
                ).rowcount
            )

    def vote(self, group_id: int, user_id: int, paper_id: str | None, now: datetime) -> None:
        """Put the member's one vote on ``paper_id`` (None takes it back)."""
        with self.engine.begin() as conn:
            conn.execute(
                delete(group_votes).where(
                    group_votes.c.group_id == group_id, group_votes.c.user_id == user_id
                )
            )
            if paper_id is not None:
                conn.execute(
                    group_votes.insert().values(
                        group_id=group_id, user_id=user_id, paper_id=paper_id, voted_at=now
                    )
                )

    def my_vote(self, group_id: int, user_id: int) -> str | None:
        with self.engine.connect() as conn:
            value = conn.execute(
                select(group_votes.c.paper_id).where(
                    group_votes.c.group_id == group_id, group_votes.c.user_id == user_id
                )
            ).scalar()
        return None if value is None else str(value)

    # -- sessions --------------------------------------------------------------------------------------------

    def _sessions_query(self) -> Any:
        presenter = users.alias("presenter")
        editor = users.alias("editor")
        return (
            select(
                group_sessions,
                presenter.c.display_name.label("p_name"),
                editor.c.display_name.label("e_name"),
            )
            .outerjoin(presenter, presenter.c.id == group_sessions.c.presenter_id)
            .outerjoin(editor, editor.c.id == group_sessions.c.notes_updated_by)
        )

    @staticmethod
    def _session(row: Row[Any]) -> GroupSession:
        return GroupSession(
            id=row.id,
            group_id=row.group_id,
            starts_at=row.starts_at,
            presenter_id=row.presenter_id,
            presenter_name=reader_name(row.p_name, row.presenter_id),
            paper_id=row.paper_id,
            notes=row.notes or "",
            notes_updated_at=row.notes_updated_at,
            notes_updated_by_name=reader_name(row.e_name, row.notes_updated_by)
            if row.notes_updated_at
            else "",
            created_at=row.created_at,
        )

    def add_session(
        self, group_id: int, starts_at: datetime, presenter_id: int, paper_id: str, now: datetime
    ) -> GroupSession:
        """A new session; its paper leaves the queue (and its votes go) in the same transaction."""
        with self.engine.begin() as conn:
            sid = conn.execute(
                group_sessions.insert()
                .values(
                    group_id=group_id,
                    starts_at=starts_at,
                    presenter_id=presenter_id,
                    paper_id=paper_id,
                    created_at=now,
                )
                .returning(group_sessions.c.id)
            ).scalar_one()
            conn.execute(
                delete(group_votes).where(
                    group_votes.c.group_id == group_id, group_votes.c.paper_id == paper_id
                )
            )
            conn.execute(
                delete(group_queue).where(
                    group_queue.c.group_id == group_id, group_queue.c.paper_id == paper_id
                )
            )
        found = self.session(int(sid))
        assert found is not None
        return found

    def session(self, session_id: int) -> GroupSession | None:
        with self.engine.connect() as conn:
            row = conn.execute(self._sessions_query().where(group_sessions.c.id == session_id)).first()
        return None if row is None else self._session(row)

    def sessions(
        self,
        group_id: int,
        *,
        after: datetime | None = None,
        before: datetime | None = None,
        limit: int = 100,
    ) -> list[GroupSession]:
        """Sessions from ``after`` on (soonest first), or before ``before`` (latest first)."""
        query = self._sessions_query().where(group_sessions.c.group_id == group_id)
        if after is not None:
            query = query.where(group_sessions.c.starts_at >= after).order_by(
                group_sessions.c.starts_at, group_sessions.c.id
            )
        elif before is not None:
            query = query.where(group_sessions.c.starts_at < before).order_by(
                group_sessions.c.starts_at.desc(), group_sessions.c.id.desc()
            )
        else:
            query = query.order_by(group_sessions.c.starts_at, group_sessions.c.id)
        with self.engine.connect() as conn:
            return [self._session(r) for r in conn.execute(query.limit(limit))]

    def set_session_notes(self, session_id: int, body: str, user_id: int, now: datetime) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(group_sessions)
                .where(group_sessions.c.id == session_id)
                .values(notes=body, notes_updated_at=now, notes_updated_by=user_id)
            )

    def delete_session(self, session_id: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(group_sessions).where(group_sessions.c.id == session_id))

    # -- the weekly digest and the group's searches -------------------------------------------------------

    def groups_with_digest(self) -> list[int]:
        """Groups with at least one member who wants the weekly digest."""
        with self.engine.connect() as conn:
            return list(
                conn.execute(
                    select(group_members.c.group_id)
                    .where(group_members.c.digest.is_(True))
                    .distinct()
                    .order_by(group_members.c.group_id)
                ).scalars()
            )

    def searches(self, group_id: int) -> list[GroupSearch]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(group_searches)
                .where(group_searches.c.group_id == group_id)
                .order_by(group_searches.c.id)
            ).all()
        return [GroupSearch(r.id, r.group_id, r.query, r.created_at) for r in rows]

    def add_search(self, group_id: int, query: str, user_id: int, now: datetime) -> GroupSearch:
        with self.engine.begin() as conn:
            sid = conn.execute(
                group_searches.insert()
                .values(group_id=group_id, query=query, created_by=user_id, created_at=now)
                .returning(group_searches.c.id)
            ).scalar_one()
        return GroupSearch(int(sid), group_id, query, now)

    def delete_search(self, group_id: int, search_id: int) -> bool:
        with self.engine.begin() as conn:
            return bool(
                conn.execute(
                    delete(group_searches).where(
                        group_searches.c.group_id == group_id, group_searches.c.id == search_id
                    )
                ).rowcount
            )

    # -- papers ----------------------------------------------------------------------------------------------

    def existing_papers(self, paper_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        ids = list(dict.fromkeys(paper_ids))
        with self.engine.connect() as conn:
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                found.update(conn.execute(select(papers.c.id).where(papers.c.id.in_(chunk))).scalars())
        return found


def forget_reader(conn: Connection, user_id: int) -> dict[str, int]:
    """Inside an account deletion's transaction: the reader's memberships, votes and mute rules go; what
    they wrote for their groups (queue entries, notes, sessions, invitations) stays without their name;
    a group they own passes to its longest-standing other member, or is deleted when they were alone."""
    counts: dict[str, int] = {}

    def run(name: str, statement: Any) -> None:
        counts[name] = counts.get(name, 0) + conn.execute(statement).rowcount

    owned = conn.execute(
        select(group_members.c.group_id).where(
            group_members.c.user_id == user_id, group_members.c.role == "owner"
        )
    ).scalars()
    for group_id in list(owned):
        heir = conn.execute(
            select(group_members.c.user_id)
            .where(group_members.c.group_id == group_id, group_members.c.user_id != user_id)
            .order_by(group_members.c.joined_at, group_members.c.user_id)
            .limit(1)
        ).scalar()
        if heir is None:
            for table in (
                group_votes,
                group_queue,
                group_sessions,
                group_invitations,
                group_mutes,
                group_searches,
            ):
                conn.execute(delete(table).where(table.c.group_id == group_id))
            conn.execute(delete(group_members).where(group_members.c.group_id == group_id))
            run("groups", delete(groups).where(groups.c.id == group_id))
        else:
            conn.execute(
                update(group_members)
                .where(group_members.c.group_id == group_id, group_members.c.user_id == heir)
                .values(role="owner")
            )
    run("group_votes", delete(group_votes).where(group_votes.c.user_id == user_id))
    run("group_members", delete(group_members).where(group_members.c.user_id == user_id))
    run("reader_mutes", delete(reader_mutes).where(reader_mutes.c.user_id == user_id))
    for table, column in (
        (group_queue, "added_by"),
        (group_invitations, "invited_by"),
        (group_invitations, "used_by"),
        (group_sessions, "presenter_id"),
        (group_sessions, "notes_updated_by"),
        (group_searches, "created_by"),
    ):
        run("group_records", update(table).where(table.c[column] == user_id).values({column: None}))
    return counts


def reader_groups_export(conn: Connection, user_id: int) -> dict[str, Any]:
    """A reader's part of their groups, for their data export (docs/accounts.md, "Your data"): their
    memberships, the papers they queued and why, their votes, and their mute rules. What others wrote for
    a group is theirs, not this reader's, and stays out."""

    def iso(value: datetime | None) -> str | None:
        return (
            None
            if value is None
            else value.astimezone(UTC).isoformat()
            if value.tzinfo
            else value.isoformat()
        )

    names = {
        r.id: r.name
        for r in conn.execute(
            select(groups.c.id, groups.c.name)
            .join(group_members, group_members.c.group_id == groups.c.id)
            .where(group_members.c.user_id == user_id)
        )
    }
    members = conn.execute(select(group_members).where(group_members.c.user_id == user_id)).all()
    queued = conn.execute(select(group_queue).where(group_queue.c.added_by == user_id)).all()
    votes = conn.execute(select(group_votes).where(group_votes.c.user_id == user_id)).all()
    rules = conn.execute(select(reader_mutes).where(reader_mutes.c.user_id == user_id)).all()
    return {
        "memberships": [
            {
                "group": names.get(m.group_id),
                "role": m.role,
                "joinedAt": iso(m.joined_at),
                "weeklyDigest": m.digest,
            }
            for m in members
        ],
        "queued": [
            {
                "group": names.get(q.group_id),
                "paperId": q.paper_id,
                "note": q.note,
                "addedAt": iso(q.added_at),
            }
            for q in queued
        ],
        "votes": [{"group": names.get(v.group_id), "paperId": v.paper_id} for v in votes],
        "muteRules": [{"kind": r.kind, "value": r.value} for r in rules],
    }
