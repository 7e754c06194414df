"""The account store on SQLAlchemy Core (SQLite and PostgreSQL alike).

Secrets arrive hashed; this module only files and finds digests. Single use of one-time links and
the rate-limit counts rely on the database, not on process memory, so several web workers (or hosts
on PostgreSQL) agree on them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, exists, func, insert, select, update
from sqlalchemy.engine import Engine, Row
from sqlalchemy.exc import IntegrityError

from paperfeed.domain.accounts import (
    ApiToken,
    HiddenPaper,
    Hit,
    LinkPurpose,
    StoredUser,
    User,
    UserSummary,
)

from .schema import papers
from .schema_accounts import api_tokens, hidden_papers, one_time_links, rate_limit_hits, sessions, users

__all__ = ["SqlAccountStore", "hidden_paper_ids", "not_hidden"]

_RATE_LOG_KEEP = timedelta(days=1)  # longer than any rate-limit window


def not_hidden(paper_id: ColumnElement[Any]) -> ColumnElement[bool]:
    """``WHERE`` clause keeping papers an administrator has not hidden (for every query that shows papers)."""
    return ~exists().where(hidden_papers.c.paper_id == paper_id)


def hidden_paper_ids(engine: Engine) -> frozenset[str]:
    """The ids of hidden papers (a small table: read whole, for filters applied outside SQL)."""
    with engine.connect() as conn:
        return frozenset(conn.execute(select(hidden_papers.c.paper_id)).scalars())


def _user(m: Any) -> User:
    return User(
        id=m["id"],
        email=m["email"],
        display_name=m["display_name"],
        role=m["role"],
        email_verified=m["email_verified_at"] is not None,
    )


def _stored(row: Row[Any]) -> StoredUser:
    m = row._mapping
    created = m["created_at"]
    assert created is not None
    return StoredUser(_user(m), m["password_hash"], m["hidden_at"] is not None, created)


def _token(row: Row[Any]) -> ApiToken:
    m = row._mapping
    created = m["created_at"]
    assert created is not None
    return ApiToken(m["id"], m["name"], m["prefix"], created, m["last_used_at"])


_USER_COLUMNS = (
    users.c.id,
    users.c.email,
    users.c.display_name,
    users.c.role,
    users.c.email_verified_at,
)


class SqlAccountStore:
    """Implements :class:`paperfeed.domain.accounts.AccountStore`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- users ------------------------------------------------------------------------------------------

    def create_user(
        self, email: str, password_hash: str | None, display_name: str | None, now: datetime
    ) -> User | None:
        try:
            with self.engine.begin() as conn:
                new_id = conn.execute(
                    insert(users).values(
                        email=email,
                        password_hash=password_hash,
                        display_name=display_name,
                        role="user",
                        created_at=now,
                    )
                ).inserted_primary_key
        except IntegrityError:
            return None  # the address is taken (unique constraint: safe under concurrent sign-ups)
        assert new_id is not None
        return User(int(new_id[0]), email, display_name, "user", False)

    def _one_user(self, where: Any) -> StoredUser | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(users).where(where)).first()
        return _stored(row) if row is not None else None

    def user_by_id(self, user_id: int) -> StoredUser | None:
        return self._one_user(users.c.id == user_id)

    def user_by_email(self, email: str) -> StoredUser | None:
        return self._one_user(users.c.email == email)

    def list_users(self) -> list[UserSummary]:
        n_sessions = (
            select(func.count()).where(sessions.c.user_id == users.c.id).scalar_subquery().label("n_sessions")
        )
        n_tokens = (
            select(func.count()).where(api_tokens.c.user_id == users.c.id).scalar_subquery().label("n_tokens")
        )
        query = select(users, n_sessions, n_tokens).order_by(users.c.id)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        out = []
        for row in rows:
            stored = _stored(row)
            m = row._mapping
            out.append(
                UserSummary(stored.user, stored.hidden, stored.created_at, m["n_sessions"], m["n_tokens"])
            )
        return out

    def _update_user(self, user_id: int, **values: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(users).where(users.c.id == user_id).values(**values))

    def set_password_hash(self, user_id: int, password_hash: str | None) -> None:
        self._update_user(user_id, password_hash=password_hash)

    def set_display_name(self, user_id: int, display_name: str | None) -> None:
        self._update_user(user_id, display_name=display_name)

    def mark_verified(self, user_id: int, now: datetime) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(users)
                .where(users.c.id == user_id, users.c.email_verified_at.is_(None))
                .values(email_verified_at=now)
            )

    def confirm_address(self, user_id: int, now: datetime, *, drop_unproven: bool) -> bool:
        values: dict[str, Any] = {"email_verified_at": now}
        if drop_unproven:
            values.update(password_hash=None, display_name=None)
        with self.engine.begin() as conn:
            changed = conn.execute(
                update(users)
                .where(users.c.id == user_id, users.c.email_verified_at.is_(None))
                .values(**values)
            ).rowcount
        return bool(changed == 1)

    def set_role(self, user_id: int, role: str) -> None:
        self._update_user(user_id, role=role)

    def set_hidden(self, user_id: int, hidden_at: datetime | None) -> None:
        self._update_user(user_id, hidden_at=hidden_at)

    # -- sessions ---------------------------------------------------------------------------------------

    def add_session(self, id_hash: str, user_id: int, now: datetime, expires_at: datetime) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                insert(sessions).values(
                    id_hash=id_hash, user_id=user_id, created_at=now, last_seen_at=now, expires_at=expires_at
                )
            )

    def session_user(self, id_hash: str, now: datetime) -> tuple[User, datetime] | None:
        """The visible user of a live session and when the session was last seen."""
        query = (
            select(*_USER_COLUMNS, sessions.c.last_seen_at)
            .join(users, users.c.id == sessions.c.user_id)
            .where(sessions.c.id_hash == id_hash, sessions.c.expires_at > now, users.c.hidden_at.is_(None))
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None
        seen = row._mapping["last_seen_at"]
        assert seen is not None
        return _user(row._mapping), seen

    def touch_session(self, id_hash: str, now: datetime) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(sessions).where(sessions.c.id_hash == id_hash).values(last_seen_at=now))

    def delete_session(self, id_hash: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(sessions).where(sessions.c.id_hash == id_hash))

    def delete_sessions(self, user_id: int, *, keep: str | None = None) -> int:
        where = sessions.c.user_id == user_id
        if keep is not None:
            where = and_(where, sessions.c.id_hash != keep)
        with self.engine.begin() as conn:
            return conn.execute(delete(sessions).where(where)).rowcount

    # -- API tokens -------------------------------------------------------------------------------------

    def add_token(self, user_id: int, name: str, token_hash: str, prefix: str, now: datetime) -> ApiToken:
        with self.engine.begin() as conn:
            new_id = conn.execute(
                insert(api_tokens).values(
                    user_id=user_id, name=name, token_hash=token_hash, prefix=prefix, created_at=now
                )
            ).inserted_primary_key
        assert new_id is not None
        return ApiToken(int(new_id[0]), name, prefix, now, None)

    def token_user(self, token_hash: str, now: datetime) -> tuple[User, int, datetime | None] | None:
        """The visible user holding a token, the token's id and when it was last used."""
        query = (
            select(*_USER_COLUMNS, api_tokens.c.id.label("token_id"), api_tokens.c.last_used_at)
            .join(users, users.c.id == api_tokens.c.user_id)
            .where(api_tokens.c.token_hash == token_hash, users.c.hidden_at.is_(None))
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None
        m = row._mapping
        return _user(m), m["token_id"], m["last_used_at"]

    def touch_token(self, token_id: int, now: datetime) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(api_tokens).where(api_tokens.c.id == token_id).values(last_used_at=now))

    def list_tokens(self, user_id: int) -> list[ApiToken]:
        query = select(api_tokens).where(api_tokens.c.user_id == user_id).order_by(api_tokens.c.id)
        with self.engine.connect() as conn:
            return [_token(row) for row in conn.execute(query)]

    def delete_token(self, user_id: int, token_id: int) -> bool:
        with self.engine.begin() as conn:
            result = conn.execute(
                delete(api_tokens).where(api_tokens.c.id == token_id, api_tokens.c.user_id == user_id)
            )
        return result.rowcount == 1

    def delete_tokens(self, user_id: int) -> int:
        with self.engine.begin() as conn:
            return conn.execute(delete(api_tokens).where(api_tokens.c.user_id == user_id)).rowcount

    # -- one-time links ---------------------------------------------------------------------------------

    def add_link(
        self, token_hash: str, user_id: int, purpose: LinkPurpose, now: datetime, expires_at: datetime
    ) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                insert(one_time_links).values(
                    token_hash=token_hash,
                    user_id=user_id,
                    purpose=purpose,
                    created_at=now,
                    expires_at=expires_at,
                )
            )

    def _usable(self, token_hash: str, purpose: LinkPurpose, now: datetime) -> Any:
        return and_(
            one_time_links.c.token_hash == token_hash,
            one_time_links.c.purpose == purpose,
            one_time_links.c.used_at.is_(None),
            one_time_links.c.expires_at > now,
        )

    def peek_link(self, token_hash: str, purpose: LinkPurpose, now: datetime) -> int | None:
        with self.engine.connect() as conn:
            user_id = conn.execute(
                select(one_time_links.c.user_id).where(self._usable(token_hash, purpose, now))
            ).scalar()
        return None if user_id is None else int(user_id)

    def consume_link(self, token_hash: str, purpose: LinkPurpose, now: datetime) -> int | None:
        # One conditional UPDATE: of two concurrent uses, exactly one sees rowcount 1.
        with self.engine.begin() as conn:
            used = conn.execute(
                update(one_time_links).where(self._usable(token_hash, purpose, now)).values(used_at=now)
            ).rowcount
            if used != 1:
                return None
            user_id = conn.execute(
                select(one_time_links.c.user_id).where(one_time_links.c.token_hash == token_hash)
            ).scalar_one()
        return int(user_id)

    def expire_links(self, user_id: int, purpose: LinkPurpose, now: datetime) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(one_time_links)
                .where(
                    one_time_links.c.user_id == user_id,
                    one_time_links.c.purpose == purpose,
                    one_time_links.c.used_at.is_(None),
                )
                .values(used_at=now)
            )

    # -- rate limits ------------------------------------------------------------------------------------

    def hit(self, bucket: str, now: datetime, window_seconds: float, limit: int) -> Hit:
        """Count first, then look: an attempt is allowed when at most ``limit`` are in the window.

        Each attempt commits its row before counting, so concurrent attempts see each other and never
        let more than ``limit`` through (at worst both are refused); a refused attempt is taken back so
        it does not push the window further out.
        """
        at = now.timestamp()
        start = at - window_seconds
        with self.engine.begin() as conn:
            conn.execute(
                delete(rate_limit_hits).where(
                    rate_limit_hits.c.bucket == bucket, rate_limit_hits.c.at <= start
                )
            )
            new_id = conn.execute(insert(rate_limit_hits).values(bucket=bucket, at=at)).inserted_primary_key
        assert new_id is not None
        hit_id = int(new_id[0])
        with self.engine.connect() as conn:
            times = (
                conn.execute(
                    select(rate_limit_hits.c.at)
                    .where(
                        rate_limit_hits.c.bucket == bucket,
                        rate_limit_hits.c.at > start,
                        rate_limit_hits.c.id != hit_id,
                    )
                    .order_by(rate_limit_hits.c.at)
                )
                .scalars()
                .all()
            )
        if len(times) < limit:
            return Hit(hit_id)
        self.unhit(hit_id)
        # Allowed again when the window holds limit - 1 earlier attempts: when the k-th oldest leaves.
        leaving = times[len(times) - limit]
        return Hit(None, max(1.0, leaving + window_seconds - at))

    def unhit(self, hit_id: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(rate_limit_hits).where(rate_limit_hits.c.id == hit_id))

    def purge(self, now: datetime) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(sessions).where(sessions.c.expires_at <= now))
            conn.execute(delete(one_time_links).where(one_time_links.c.expires_at <= now))
            conn.execute(
                delete(rate_limit_hits).where(rate_limit_hits.c.at < (now - _RATE_LOG_KEEP).timestamp())
            )

    # -- moderation -------------------------------------------------------------------------------------

    def paper_exists(self, paper_id: str) -> bool:
        with self.engine.connect() as conn:
            return conn.execute(select(papers.c.id).where(papers.c.id == paper_id)).first() is not None

    def hide_paper(self, paper_id: str, by: int | None, reason: str, now: datetime) -> bool:
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(hidden_papers).values(
                        paper_id=paper_id, hidden_by=by, reason=reason, hidden_at=now
                    )
                )
        except IntegrityError:
            return False  # already hidden
        return True

    def unhide_paper(self, paper_id: str) -> bool:
        with self.engine.begin() as conn:
            return (
                conn.execute(delete(hidden_papers).where(hidden_papers.c.paper_id == paper_id)).rowcount == 1
            )

    def hidden_papers(self) -> list[HiddenPaper]:
        query = select(hidden_papers).order_by(hidden_papers.c.hidden_at.desc())
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        out = []
        for row in rows:
            m = row._mapping
            when = m["hidden_at"]
            assert when is not None
            out.append(HiddenPaper(m["paper_id"], m["hidden_by"], m["reason"], when))
        return out
