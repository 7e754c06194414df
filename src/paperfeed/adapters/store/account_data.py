"""A reader's rows in every area, read for the data export and erased for account deletion.

Implements :class:`paperfeed.domain.account_data.ReaderDataStore` on SQLAlchemy Core, for SQLite and
PostgreSQL alike. It is the one module that knows every per-reader table, so a table added to an area
must be added here too: ``tests/accounts/test_account_data_store.py`` fills every column that refers to
a reader and fails until a new one is filled there and shown gone after deletion.

Deletion is one transaction and does not lean on ``ON DELETE CASCADE`` alone: every table is cleared
by an explicit statement (clearer to read, and right even on a SQLite connection that forgot
``PRAGMA foreign_keys``). Digest rows are found by the reader's id *and* by their address, since a
subscription made before signing up carries the address only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, delete, or_, select, update
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.account_data import EXPORT_FORMAT, DeletedRows, ReaderExport

from .groups import forget_reader, reader_groups_export
from .schema import papers
from .schema_accounts import api_tokens, hidden_papers, one_time_links, sessions, users
from .schema_community import paper_comments, paper_submissions, paper_upvotes
from .schema_digests import digest_sent_papers, digest_subscriptions, digests, mail_bounces
from .schema_library import (
    library_authors,
    library_marks,
    library_notes,
    library_saves,
    library_searches,
    library_tags,
)
from .schema_topics import topic_picks, topics

__all__ = ["SqlReaderDataStore"]

_CHUNK = 900  # ids per IN (...): under every SQLite build's variable limit


def _iso(value: datetime | None) -> str | None:
    """ISO 8601 in UTC (SQLite hands timestamps back naive, PostgreSQL aware)."""
    if value is None:
        return None
    aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return aware.isoformat()


def _chunks(ids: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


def _rows(conn: Connection, query: Any) -> list[Any]:
    return [row._mapping for row in conn.execute(query)]


class SqlReaderDataStore:
    """Every per-reader table, read whole or deleted whole."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- export -------------------------------------------------------------------------------------------

    def reader_export(self, user_id: int) -> ReaderExport | None:
        conn_options: dict[str, Any] = {}
        if self.engine.dialect.name == "postgresql":
            conn_options["isolation_level"] = "REPEATABLE READ"  # one snapshot for every table read
        with self.engine.connect().execution_options(**conn_options) as conn, conn.begin():
            user = conn.execute(select(users).where(users.c.id == user_id)).first()
            if user is None:
                return None
            u = user._mapping
            account = self._account(conn, u)
            library, saved = self._library(conn, user_id)
            comments = [
                {
                    "id": r["id"],
                    "paperId": r["paper_id"],
                    "markdown": r["body"],
                    "createdAt": _iso(r["created_at"]),
                    "editedAt": _iso(r["edited_at"]),
                    "hiddenByModerator": r["hidden_at"] is not None,
                }
                for r in _rows(
                    conn,
                    select(paper_comments)
                    .where(paper_comments.c.user_id == user_id)
                    .order_by(paper_comments.c.created_at, paper_comments.c.id),
                )
            ]
            upvotes = [
                {"paperId": r["paper_id"], "createdAt": _iso(r["created_at"])}
                for r in _rows(
                    conn,
                    select(paper_upvotes)
                    .where(paper_upvotes.c.user_id == user_id)
                    .order_by(paper_upvotes.c.created_at, paper_upvotes.c.paper_id),
                )
            ]
            submissions = [
                {"paperId": r["paper_id"], "day": str(r["day"])[:10], "submittedAt": _iso(r["submitted_at"])}
                for r in _rows(
                    conn,
                    select(paper_submissions)
                    .where(paper_submissions.c.user_id == user_id)
                    .order_by(paper_submissions.c.submitted_at),
                )
            ]
            subscriptions = self._subscriptions(conn, user_id, u["email"])
            picked = self._topic_picks(conn, user_id)
            in_groups = reader_groups_export(conn, user_id)
        documents = {
            "account": account,
            "library": library,
            "comments": comments,
            "upvotes": upvotes,
            "submissions": submissions,
            "subscriptions": subscriptions,
            "topics": picked,
            "groups": in_groups,
        }
        return ReaderExport(email=u["email"], documents=documents, saved_paper_ids=saved)

    def _account(self, conn: Connection, u: Any) -> dict[str, Any]:
        tokens = _rows(
            conn, select(api_tokens).where(api_tokens.c.user_id == u["id"]).order_by(api_tokens.c.id)
        )
        live = _rows(
            conn,
            select(sessions.c.created_at, sessions.c.last_seen_at, sessions.c.expires_at)
            .where(sessions.c.user_id == u["id"])
            .order_by(sessions.c.created_at),
        )
        return {
            "format": EXPORT_FORMAT,
            "exportedAt": datetime.now(UTC).isoformat(),
            "id": u["id"],
            "email": u["email"],
            "displayName": u["display_name"],
            "role": u["role"],
            "createdAt": _iso(u["created_at"]),
            "emailConfirmed": u["email_verified_at"] is not None,
            "emailConfirmedAt": _iso(u["email_verified_at"]),
            "hasPassword": u["password_hash"] is not None,
            "hiddenByModerator": u["hidden_at"] is not None,
            "apiTokens": [
                {"name": t["name"], "createdAt": _iso(t["created_at"]), "lastUsedAt": _iso(t["last_used_at"])}
                for t in tokens
            ],
            "sessions": [
                {
                    "createdAt": _iso(s["created_at"]),
                    "lastSeenAt": _iso(s["last_seen_at"]),
                    "expiresAt": _iso(s["expires_at"]),
                }
                for s in live
            ],
        }

    def _library(self, conn: Connection, user_id: int) -> tuple[dict[str, Any], tuple[str, ...]]:
        tags = _rows(
            conn,
            select(library_tags)
            .where(library_tags.c.user_id == user_id)
            .order_by(library_tags.c.created_at, library_tags.c.id),
        )
        tag_names = {t["id"]: t["name"] for t in tags}
        saves = _rows(
            conn,
            select(library_saves)
            .where(library_saves.c.user_id == user_id)
            .order_by(library_saves.c.saved_at.desc(), library_saves.c.paper_id),
        )
        marks = {
            r["paper_id"]: r
            for r in _rows(conn, select(library_marks).where(library_marks.c.user_id == user_id))
        }
        notes = {
            r["paper_id"]: r
            for r in _rows(conn, select(library_notes).where(library_notes.c.user_id == user_id))
        }
        # Every paper the reader did something with: saved ones first (newest save first), then others.
        order = list(dict.fromkeys([s["paper_id"] for s in saves] + sorted({*marks, *notes})))
        titles: dict[str, str] = {}
        hidden: set[str] = set()
        for chunk in _chunks(order):
            titles.update(
                (r["id"], r["title"])
                for r in _rows(conn, select(papers.c.id, papers.c.title).where(papers.c.id.in_(chunk)))
            )
            hidden.update(
                conn.execute(
                    select(hidden_papers.c.paper_id).where(hidden_papers.c.paper_id.in_(chunk))
                ).scalars()
            )
        by_paper: dict[str, list[dict[str, Any]]] = {}
        for s in saves:
            by_paper.setdefault(s["paper_id"], []).append(
                {"tag": tag_names.get(s["tag_id"], ""), "savedAt": _iso(s["saved_at"])}
            )
        entries = []
        for paper_id in order:
            mark = marks.get(paper_id)
            note = notes.get(paper_id)
            entries.append(
                {
                    "paperId": paper_id,
                    # A paper an administrator hid is listed by id only: hiding it is about its metadata.
                    "title": None if paper_id in hidden else titles.get(paper_id),
                    "saved": paper_id in by_paper,
                    "tags": by_paper.get(paper_id, []),
                    "readAt": _iso(mark["read_at"]) if mark else None,
                    "notInterestedAt": _iso(mark["dismissed_at"]) if mark else None,
                    "note": None
                    if note is None
                    else {
                        "markdown": note["body"],
                        "createdAt": _iso(note["created_at"]),
                        "updatedAt": _iso(note["updated_at"]),
                    },
                }
            )
        authors = _rows(
            conn,
            select(library_authors)
            .where(library_authors.c.user_id == user_id)
            .order_by(library_authors.c.followed_at, library_authors.c.name_key),
        )
        searches = _rows(
            conn,
            select(library_searches)
            .where(library_searches.c.user_id == user_id)
            .order_by(library_searches.c.created_at, library_searches.c.id),
        )
        library = {
            "tags": [
                {"name": t["name"], "public": bool(t["public"]), "createdAt": _iso(t["created_at"])}
                for t in tags
            ],
            "papers": entries,
            "notInterested": [e["paperId"] for e in entries if e["notInterestedAt"] is not None],
            "followedAuthors": [{"name": a["name"], "followedAt": _iso(a["followed_at"])} for a in authors],
            # The private feed token of an alert is a secret: it is not exported (the feed URL is on
            # the alert's page while the account exists).
            "savedSearches": [
                {
                    "name": s["name"],
                    "query": s["query"],
                    "filters": s["filters"],
                    "createdAt": _iso(s["created_at"]),
                    "lastSeenAt": _iso(s["last_seen_at"]),
                }
                for s in searches
            ],
        }
        saved = tuple(p for p in order if p in by_paper and p not in hidden and p in titles)
        return library, saved

    def _topic_picks(self, conn: Connection, user_id: int) -> list[dict[str, Any]]:
        """The topics the reader picked for "For you", as stored, oldest first. A pick of a topic that a
        rebuild removed (resolved to its successor only when the picks are next read) has no label."""
        query = (
            select(topic_picks.c.topic_id, topic_picks.c.picked_at, topics.c.label)
            .select_from(topic_picks.outerjoin(topics, topics.c.id == topic_picks.c.topic_id))
            .where(topic_picks.c.user_id == user_id)
            .order_by(topic_picks.c.picked_at, topic_picks.c.topic_id)
        )
        return [
            {"topicId": r["topic_id"], "label": r["label"], "pickedAt": _iso(r["picked_at"])}
            for r in _rows(conn, query)
        ]

    def _subscriptions(self, conn: Connection, user_id: int, email: str) -> list[dict[str, Any]]:
        subs = _rows(
            conn,
            select(digest_subscriptions)
            .where(_reader_subscriptions(user_id, email))
            .order_by(digest_subscriptions.c.id),
        )
        out = []
        for s in subs:
            ledger = _rows(
                conn,
                select(
                    digests.c.period,
                    digests.c.status,
                    digests.c.paper_count,
                    digests.c.composed_at,
                    digests.c.sent_at,
                    digests.c.content,
                )
                .where(digests.c.subscription_id == s["id"])
                .order_by(digests.c.slot),
            )
            out.append(
                {
                    "email": s["email"],
                    "linkedToAccount": s["user_id"] == user_id,
                    "status": s["status"],
                    "cadence": s["cadence"],
                    "weekday": s["weekday"],
                    "sendHour": s["send_hour"],
                    "timezone": s["timezone"],
                    "sections": s["sections"],
                    "categories": s["categories"],
                    "maxItems": s["max_items"],
                    "createdAt": _iso(s["created_at"]),
                    "confirmedAt": _iso(s["confirmed_at"]),
                    "unsubscribedAt": _iso(s["unsubscribed_at"]),
                    "digests": [
                        {
                            "period": d["period"],
                            "status": d["status"],
                            "paperCount": d["paper_count"],
                            "composedAt": _iso(d["composed_at"]),
                            "sentAt": _iso(d["sent_at"]),
                            "content": d["content"],
                        }
                        for d in ledger
                    ],
                }
            )
        return out

    # -- deletion -----------------------------------------------------------------------------------------

    def delete_reader(self, user_id: int) -> DeletedRows | None:
        with self.engine.begin() as conn:
            who = select(users.c.email).where(users.c.id == user_id)
            if conn.dialect.name == "postgresql":
                # The same lock the community store takes before a capped write: a vote or comment
                # racing with deletion waits for it, then fails on the foreign key, never half-writes.
                who = who.with_for_update()
            email = conn.execute(who).scalar()
            if email is None:
                return None
            mine = _reader_subscriptions(user_id, email)
            sub_ids = select(digest_subscriptions.c.id).where(mine).scalar_subquery()
            counts: dict[str, int] = {}

            def run(name: str, statement: Any) -> None:
                counts[name] = counts.get(name, 0) + conn.execute(statement).rowcount

            run(
                "digest_sent_papers",
                delete(digest_sent_papers).where(digest_sent_papers.c.subscription_id.in_(sub_ids)),
            )
            run("digests", delete(digests).where(digests.c.subscription_id.in_(sub_ids)))
            run("digest_subscriptions", delete(digest_subscriptions).where(mine))
            run("mail_bounces", delete(mail_bounces).where(mail_bounces.c.email == email))
            run("library_saves", delete(library_saves).where(library_saves.c.user_id == user_id))
            run("library_tags", delete(library_tags).where(library_tags.c.user_id == user_id))
            run("library_marks", delete(library_marks).where(library_marks.c.user_id == user_id))
            run("library_notes", delete(library_notes).where(library_notes.c.user_id == user_id))
            run("library_authors", delete(library_authors).where(library_authors.c.user_id == user_id))
            run("library_searches", delete(library_searches).where(library_searches.c.user_id == user_id))
            run("paper_upvotes", delete(paper_upvotes).where(paper_upvotes.c.user_id == user_id))
            run("paper_comments", delete(paper_comments).where(paper_comments.c.user_id == user_id))
            run(
                "submissions",
                update(paper_submissions).where(paper_submissions.c.user_id == user_id).values(user_id=None),
            )
            run(
                "moderation",
                update(paper_comments).where(paper_comments.c.hidden_by == user_id).values(hidden_by=None),
            )
            run(
                "moderation",
                update(hidden_papers).where(hidden_papers.c.hidden_by == user_id).values(hidden_by=None),
            )
            for name, n in forget_reader(conn, user_id).items():  # reading groups and mute rules
                counts[name] = counts.get(name, 0) + n
            run("topic_picks", delete(topic_picks).where(topic_picks.c.user_id == user_id))
            run("sessions", delete(sessions).where(sessions.c.user_id == user_id))
            run("api_tokens", delete(api_tokens).where(api_tokens.c.user_id == user_id))
            run("one_time_links", delete(one_time_links).where(one_time_links.c.user_id == user_id))
            run("users", delete(users).where(users.c.id == user_id))
        return DeletedRows(counts)


def _reader_subscriptions(user_id: int, email: str) -> ColumnElement[bool]:
    """The digest subscriptions of the reader: linked to the account, or to its address."""
    return or_(digest_subscriptions.c.user_id == user_id, digest_subscriptions.c.email == email.lower())
