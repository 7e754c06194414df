"""Readers' libraries on SQLAlchemy Core (SQLite and PostgreSQL alike).

Each public method is one transaction. Upserts use ``INSERT … ON CONFLICT`` through the dialect's own
``insert`` (SQLite and PostgreSQL spell it the same), so two clicks racing on "save" end in one row.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import and_, delete, func, select, true, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.library import (
    FollowedAuthor,
    LibraryItem,
    Note,
    Owner,
    ReaderSignals,
    ReadFilter,
    SavedPaper,
    SavedSearch,
    Tag,
    author_key,
    check_author,
    check_search_name,
    check_tag_name,
    tag_key,
)
from paperfeed.domain.search import SearchFilters

from .schema import papers
from .schema_accounts import hidden_papers, users
from .schema_library import (
    library_authors,
    library_marks,
    library_notes,
    library_saves,
    library_searches,
    library_tags,
)

__all__ = ["SqlLibraryStore", "filters_from_json", "filters_to_json"]

_CHUNK = 900  # ids per IN (...): under every SQLite build's variable limit


def _chunks(ids: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


def filters_to_json(filters: SearchFilters) -> dict[str, Any]:
    return {
        "date_from": filters.date_from.isoformat() if filters.date_from else None,
        "date_to": filters.date_to.isoformat() if filters.date_to else None,
        "categories": list(filters.categories),
        "has_code": filters.has_code,
    }


def filters_from_json(data: dict[str, Any]) -> SearchFilters:
    def day(value: Any) -> date | None:
        return date.fromisoformat(value) if isinstance(value, str) and value else None

    has_code = data.get("has_code")
    return SearchFilters(
        date_from=day(data.get("date_from")),
        date_to=day(data.get("date_to")),
        categories=tuple(str(c) for c in data.get("categories") or ()),
        has_code=has_code if isinstance(has_code, bool) else None,
    )


class SqlLibraryStore:
    """Libraries in the relational store; knows tables, not pages."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._insert: Any = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert

    # -- people and papers (read-only lookups the library needs) -------------------------------------

    def user_id_for_email(self, email: str) -> int | None:
        with self.engine.connect() as conn:
            value = conn.execute(select(users.c.id).where(users.c.email == email.strip().lower())).scalar()
        return int(value) if value is not None else None

    def owner(self, user_id: int) -> Owner | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(users.c.id, users.c.display_name, users.c.hidden_at).where(users.c.id == user_id)
            ).first()
        if row is None:
            return None
        return Owner(row.id, row.display_name or f"reader {row.id}", row.hidden_at is not None)

    def existing_papers(self, paper_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        with self.engine.connect() as conn:
            for chunk in _chunks(list(paper_ids)):
                found.update(conn.execute(select(papers.c.id).where(papers.c.id.in_(chunk))).scalars())
        return found

    def hidden_among(self, paper_ids: Sequence[str]) -> set[str]:
        """Those of ``paper_ids`` an admin has hidden (the accounts area keeps that list)."""
        found: set[str] = set()
        with self.engine.connect() as conn:
            for chunk in _chunks(list(dict.fromkeys(paper_ids))):
                query = select(hidden_papers.c.paper_id).where(hidden_papers.c.paper_id.in_(chunk))
                found.update(conn.execute(query).scalars())
        return found

    def reader_marks(self, user_id: int) -> tuple[dict[str, tuple[str, ...]], set[str], set[str]]:
        """All of a reader's saves (paper -> tag names), read and dismissed ids: what buttons on a page show.

        One pass over the reader's own rows, so a page of 100 cards costs two queries, not 200.
        """
        tags: dict[str, list[str]] = {}
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(library_saves.c.paper_id, library_tags.c.name)
                .join(library_tags, library_tags.c.id == library_saves.c.tag_id)
                .where(library_saves.c.user_id == user_id)
                .order_by(library_tags.c.created_at, library_tags.c.id)
            )
            for paper_id, name in rows:
                tags.setdefault(paper_id, []).append(name)
            marks = conn.execute(
                select(library_marks.c.paper_id, library_marks.c.read_at, library_marks.c.dismissed_at).where(
                    library_marks.c.user_id == user_id
                )
            ).all()
        read = {m.paper_id for m in marks if m.read_at is not None}
        dismissed = {m.paper_id for m in marks if m.dismissed_at is not None}
        return {k: tuple(v) for k, v in tags.items()}, read, dismissed

    def library_texts(self, user_id: int) -> dict[str, tuple[tuple[str, ...], str]]:
        """Every paper the reader saved or wrote a note on: its tag names and the note ("" for none),
        in two reads of the reader's own rows (what "search my library" searches)."""
        tags, _, _ = self.reader_marks(user_id)
        with self.engine.connect() as conn:
            notes = dict(
                conn.execute(
                    select(library_notes.c.paper_id, library_notes.c.body).where(
                        library_notes.c.user_id == user_id
                    )
                ).all()
            )
        return {pid: (tags.get(pid, ()), str(notes.get(pid, ""))) for pid in {*tags, *notes}}

    def library_stamp(self, user_id: int) -> str:
        """What "search my library" keeps its index of a reader by: the reader's saves (how many, the
        newest), notes (how many, the latest edit) and tags (ids and names). Every change of a save, a
        note or a tag moves one of them (a save or an edit is stamped now; a removal lowers a count)."""
        with self.engine.connect() as conn:
            saves = conn.execute(
                select(func.count(), func.max(library_saves.c.saved_at)).where(
                    library_saves.c.user_id == user_id
                )
            ).one()
            notes = conn.execute(
                select(func.count(), func.max(library_notes.c.updated_at)).where(
                    library_notes.c.user_id == user_id
                )
            ).one()
            tags = conn.execute(
                select(library_tags.c.id, library_tags.c.name)
                .where(library_tags.c.user_id == user_id)
                .order_by(library_tags.c.id)
            ).all()
        parts = (tuple(saves), tuple(notes), tuple(tuple(t) for t in tags))
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]

    # -- tags ------------------------------------------------------------------------------------------

    def _tag_ids(self, conn: Connection, user_id: int, names: Sequence[str], now: datetime) -> list[int]:
        """Ids of the user's tags named ``names``, creating the missing ones (private)."""
        wanted = {tag_key(n): check_tag_name(n) for n in names}
        if not wanted:
            return []
        rows = [
            {"user_id": user_id, "name": name, "name_key": key, "public": False, "created_at": now}
            for key, name in wanted.items()
        ]
        stmt = self._insert(library_tags).on_conflict_do_nothing(
            index_elements=[library_tags.c.user_id, library_tags.c.name_key]
        )
        conn.execute(stmt, rows)
        found = conn.execute(
            select(library_tags.c.name_key, library_tags.c.id).where(
                library_tags.c.user_id == user_id, library_tags.c.name_key.in_(list(wanted))
            )
        )
        ids: dict[str, int] = {row.name_key: row.id for row in found}
        return [ids[key] for key in wanted]

    def create_tag(self, user_id: int, name: str, *, public: bool = False) -> Tag:
        now = datetime.now(UTC)
        with self.engine.begin() as conn:
            (tag_id,) = self._tag_ids(conn, user_id, [name], now)
            if public:
                conn.execute(update(library_tags).where(library_tags.c.id == tag_id).values(public=True))
        tag = self.tag(tag_id)
        assert tag is not None
        return tag

    def _tag_rows(self, conn: Connection, *where: Any) -> list[Tag]:
        counts = (
            select(library_saves.c.tag_id, func.count().label("n"))
            .group_by(library_saves.c.tag_id)
            .subquery()
        )
        query = (
            select(library_tags, func.coalesce(counts.c.n, 0).label("n"))
            .outerjoin(counts, counts.c.tag_id == library_tags.c.id)
            .where(*where)
            .order_by(library_tags.c.created_at, library_tags.c.id)
        )
        return [
            Tag(r.id, r.user_id, r.name, bool(r.public), r.created_at, int(r.n)) for r in conn.execute(query)
        ]

    def tags(self, user_id: int) -> list[Tag]:
        with self.engine.connect() as conn:
            return self._tag_rows(conn, library_tags.c.user_id == user_id)

    def tag(self, tag_id: int) -> Tag | None:
        with self.engine.connect() as conn:
            found = self._tag_rows(conn, library_tags.c.id == tag_id)
        return found[0] if found else None

    def tag_named(self, user_id: int, name: str) -> Tag | None:
        with self.engine.connect() as conn:
            found = self._tag_rows(
                conn, library_tags.c.user_id == user_id, library_tags.c.name_key == tag_key(name)
            )
        return found[0] if found else None

    def update_tag(self, tag_id: int, *, name: str | None = None, public: bool | None = None) -> bool:
        """Rename and/or publish a tag; False if another tag of the owner already has ``name``."""
        values: dict[str, Any] = {}
        if name is not None:
            values.update(name=check_tag_name(name), name_key=tag_key(name))
        if public is not None:
            values["public"] = public
        if not values:
            return True
        with self.engine.begin() as conn:
            if name is not None:
                owner = select(library_tags.c.user_id).where(library_tags.c.id == tag_id).scalar_subquery()
                clash = conn.execute(
                    select(library_tags.c.id).where(
                        library_tags.c.user_id == owner,
                        library_tags.c.name_key == values["name_key"],
                        library_tags.c.id != tag_id,
                    )
                ).first()
                if clash is not None:
                    return False
            conn.execute(update(library_tags).where(library_tags.c.id == tag_id).values(**values))
        return True

    def delete_tag(self, tag_id: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(library_saves).where(library_saves.c.tag_id == tag_id))
            conn.execute(delete(library_tags).where(library_tags.c.id == tag_id))

    # -- saves -----------------------------------------------------------------------------------------

    def save(self, user_id: int, paper_ids: Sequence[str], tag_names: Sequence[str]) -> int:
        """Put ``paper_ids`` in each of ``tag_names`` (created if missing); returns the new saves.

        Papers must exist (the service checks). Saving again changes nothing: not even ``saved_at``.
        """
        now = datetime.now(UTC)
        unique = list(dict.fromkeys(paper_ids))
        with self.engine.begin() as conn:
            tag_ids = self._tag_ids(conn, user_id, tag_names, now)
            before = self._count_saves(conn, user_id)
            rows = [
                {"tag_id": t, "paper_id": p, "user_id": user_id, "saved_at": now}
                for t in tag_ids
                for p in unique
            ]
            stmt = self._insert(library_saves).on_conflict_do_nothing(
                index_elements=[library_saves.c.tag_id, library_saves.c.paper_id]
            )
            for start in range(0, len(rows), 500):
                conn.execute(stmt, rows[start : start + 500])
            return self._count_saves(conn, user_id) - before

    @staticmethod
    def _count_saves(conn: Connection, user_id: int) -> int:
        query = select(func.count()).select_from(library_saves).where(library_saves.c.user_id == user_id)
        return int(conn.execute(query).scalar_one())

    def set_paper_tags(self, user_id: int, paper_id: str, tag_names: Sequence[str]) -> None:
        """Make ``paper_id`` be in exactly ``tag_names`` (none: not saved at all)."""
        now = datetime.now(UTC)
        with self.engine.begin() as conn:
            keep = self._tag_ids(conn, user_id, tag_names, now)
            conn.execute(
                delete(library_saves).where(
                    library_saves.c.user_id == user_id,
                    library_saves.c.paper_id == paper_id,
                    library_saves.c.tag_id.not_in(keep) if keep else true(),
                )
            )
            if keep:
                stmt = self._insert(library_saves).on_conflict_do_nothing(
                    index_elements=[library_saves.c.tag_id, library_saves.c.paper_id]
                )
                conn.execute(
                    stmt,
                    [{"tag_id": t, "paper_id": paper_id, "user_id": user_id, "saved_at": now} for t in keep],
                )

    def unsave(self, user_id: int, paper_id: str, tag_id: int | None = None) -> int:
        """Take the paper out of one tag, or out of the library (``tag_id`` None); returns rows removed."""
        where = [library_saves.c.user_id == user_id, library_saves.c.paper_id == paper_id]
        if tag_id is not None:
            where.append(library_saves.c.tag_id == tag_id)
        with self.engine.begin() as conn:
            return int(conn.execute(delete(library_saves).where(*where)).rowcount)

    def paper_tags(self, user_id: int, paper_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Tag names each of ``paper_ids`` is saved under (papers not saved are left out)."""
        out: dict[str, list[str]] = {}
        with self.engine.connect() as conn:
            for chunk in _chunks(list(dict.fromkeys(paper_ids))):
                query = (
                    select(library_saves.c.paper_id, library_tags.c.name)
                    .join(library_tags, library_tags.c.id == library_saves.c.tag_id)
                    .where(library_saves.c.user_id == user_id, library_saves.c.paper_id.in_(chunk))
                    .order_by(library_tags.c.created_at, library_tags.c.id)
                )
                for paper_id, name in conn.execute(query):
                    out.setdefault(paper_id, []).append(name)
        return {k: tuple(v) for k, v in out.items()}

    def items(
        self,
        user_id: int,
        *,
        tag_id: int | None = None,
        read: ReadFilter = "all",
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[LibraryItem], int]:
        """One page of the user's saved papers, first saved newest first, and how many there are."""
        saved_at = func.min(library_saves.c.saved_at).label("saved_at")
        base = select(library_saves.c.paper_id, saved_at).where(library_saves.c.user_id == user_id)
        if tag_id is not None:
            base = base.where(library_saves.c.tag_id == tag_id)
        if read != "all":
            is_read = (
                select(library_marks.c.paper_id)
                .where(
                    library_marks.c.user_id == user_id,
                    library_marks.c.paper_id == library_saves.c.paper_id,
                    library_marks.c.read_at.is_not(None),
                )
                .exists()
            )
            base = base.where(is_read if read == "read" else ~is_read)
        grouped = base.group_by(library_saves.c.paper_id).subquery()
        with self.engine.connect() as conn:
            total = int(conn.execute(select(func.count()).select_from(grouped)).scalar_one())
            rows = conn.execute(
                select(grouped.c.paper_id, grouped.c.saved_at)
                .order_by(grouped.c.saved_at.desc(), grouped.c.paper_id)
                .limit(limit)
                .offset(offset)
            ).all()
        ids = [r.paper_id for r in rows]
        tags = self.paper_tags(user_id, ids)
        marks = self.marks(user_id, ids)
        notes = self.noted(user_id, ids)
        items = [
            LibraryItem(
                paper_id=r.paper_id,
                tags=tags.get(r.paper_id, ()),
                saved_at=r.saved_at,
                read=marks.get(r.paper_id, (False, False))[0],
                has_note=r.paper_id in notes,
            )
            for r in rows
        ]
        return items, total

    def tag_papers(
        self, tag_id: int, limit: int = 50, offset: int = 0
    ) -> tuple[list[tuple[str, datetime]], int]:
        """Papers in one tag, newest save first, with when each was saved, and how many there are."""
        where = library_saves.c.tag_id == tag_id
        with self.engine.connect() as conn:
            total = int(
                conn.execute(select(func.count()).select_from(library_saves).where(where)).scalar_one()
            )
            rows = conn.execute(
                select(library_saves.c.paper_id, library_saves.c.saved_at)
                .where(where)
                .order_by(library_saves.c.saved_at.desc(), library_saves.c.paper_id)
                .limit(limit)
                .offset(offset)
            ).all()
        return [(r.paper_id, r.saved_at) for r in rows], total

    # -- marks: read and "not interested" --------------------------------------------------------------

    def _mark(self, user_id: int, paper_id: str, column: str, on: bool) -> None:
        value = datetime.now(UTC) if on else None
        with self.engine.begin() as conn:
            if on:
                stmt = self._insert(library_marks).values(
                    user_id=user_id, paper_id=paper_id, **{column: value}
                )
                # Marking again keeps the first time it was marked.
                stmt = stmt.on_conflict_do_update(
                    index_elements=[library_marks.c.user_id, library_marks.c.paper_id],
                    set_={column: func.coalesce(library_marks.c[column], stmt.excluded[column])},
                )
                conn.execute(stmt)
            else:
                conn.execute(
                    update(library_marks)
                    .where(library_marks.c.user_id == user_id, library_marks.c.paper_id == paper_id)
                    .values(**{column: None})
                )
                conn.execute(
                    delete(library_marks).where(
                        library_marks.c.user_id == user_id,
                        library_marks.c.paper_id == paper_id,
                        library_marks.c.read_at.is_(None),
                        library_marks.c.dismissed_at.is_(None),
                    )
                )

    def set_read(self, user_id: int, paper_id: str, read: bool) -> None:
        self._mark(user_id, paper_id, "read_at", read)

    def set_dismissed(self, user_id: int, paper_id: str, dismissed: bool) -> None:
        self._mark(user_id, paper_id, "dismissed_at", dismissed)

    def marks(self, user_id: int, paper_ids: Sequence[str]) -> dict[str, tuple[bool, bool]]:
        """(read, dismissed) for those of ``paper_ids`` with a mark."""
        out: dict[str, tuple[bool, bool]] = {}
        with self.engine.connect() as conn:
            for chunk in _chunks(list(dict.fromkeys(paper_ids))):
                query = select(library_marks).where(
                    library_marks.c.user_id == user_id, library_marks.c.paper_id.in_(chunk)
                )
                for r in conn.execute(query):
                    out[r.paper_id] = (r.read_at is not None, r.dismissed_at is not None)
        return out

    def dismissed(
        self, user_id: int, limit: int = 50, offset: int = 0
    ) -> tuple[list[tuple[str, datetime]], int]:
        where = and_(library_marks.c.user_id == user_id, library_marks.c.dismissed_at.is_not(None))
        with self.engine.connect() as conn:
            total = int(
                conn.execute(select(func.count()).select_from(library_marks).where(where)).scalar_one()
            )
            rows = conn.execute(
                select(library_marks.c.paper_id, library_marks.c.dismissed_at)
                .where(where)
                .order_by(library_marks.c.dismissed_at.desc(), library_marks.c.paper_id)
                .limit(limit)
                .offset(offset)
            ).all()
        return [(r.paper_id, r.dismissed_at) for r in rows], total

    # -- notes -----------------------------------------------------------------------------------------

    def set_note(self, user_id: int, paper_id: str, body: str) -> None:
        """Store the note (already checked); an empty body deletes it."""
        now = datetime.now(UTC)
        with self.engine.begin() as conn:
            if not body:
                conn.execute(
                    delete(library_notes).where(
                        library_notes.c.user_id == user_id, library_notes.c.paper_id == paper_id
                    )
                )
                return
            stmt = self._insert(library_notes).values(
                user_id=user_id, paper_id=paper_id, body=body, created_at=now, updated_at=now
            )
            stmt = stmt.on_conflict_do_update(
                index_elements=[library_notes.c.user_id, library_notes.c.paper_id],
                set_={"body": stmt.excluded.body, "updated_at": stmt.excluded.updated_at},
            )
            conn.execute(stmt)

    def note(self, user_id: int, paper_id: str) -> Note | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(library_notes).where(
                    library_notes.c.user_id == user_id, library_notes.c.paper_id == paper_id
                )
            ).first()
        return None if row is None else Note(row.paper_id, row.body, row.updated_at)

    def notes(self, user_id: int, paper_ids: Sequence[str]) -> dict[str, str]:
        """The reader's notes on ``paper_ids`` (those that have one): an export's ``annote`` / ``N1``."""
        found: dict[str, str] = {}
        with self.engine.connect() as conn:
            for chunk in _chunks(list(dict.fromkeys(paper_ids))):
                query = select(library_notes.c.paper_id, library_notes.c.body).where(
                    library_notes.c.user_id == user_id, library_notes.c.paper_id.in_(chunk)
                )
                found.update({row.paper_id: row.body for row in conn.execute(query)})
        return found

    def noted(self, user_id: int, paper_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        with self.engine.connect() as conn:
            for chunk in _chunks(list(dict.fromkeys(paper_ids))):
                query = select(library_notes.c.paper_id).where(
                    library_notes.c.user_id == user_id, library_notes.c.paper_id.in_(chunk)
                )
                found.update(conn.execute(query).scalars())
        return found

    # -- followed authors ------------------------------------------------------------------------------

    def follow(self, user_id: int, name: str) -> bool:
        """Follow ``name``; False if already followed (under any spelling with the same key)."""
        row = {
            "user_id": user_id,
            "name_key": author_key(name),
            "name": check_author(name),
            "followed_at": datetime.now(UTC),
        }
        stmt = self._insert(library_authors).on_conflict_do_nothing(
            index_elements=[library_authors.c.user_id, library_authors.c.name_key]
        )
        with self.engine.begin() as conn:
            # RETURNING, not rowcount: psycopg reports a row for ON CONFLICT DO NOTHING too
            return conn.execute(stmt.values(**row).returning(library_authors.c.name_key)).first() is not None

    def unfollow(self, user_id: int, name: str) -> bool:
        with self.engine.begin() as conn:
            result = conn.execute(
                delete(library_authors).where(
                    library_authors.c.user_id == user_id, library_authors.c.name_key == author_key(name)
                )
            )
        return bool(result.rowcount)

    def followed(self, user_id: int) -> list[FollowedAuthor]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(library_authors.c.name, library_authors.c.followed_at)
                .where(library_authors.c.user_id == user_id)
                .order_by(library_authors.c.followed_at, library_authors.c.name_key)
            ).all()
        return [FollowedAuthor(r.name, r.followed_at) for r in rows]

    # -- saved searches --------------------------------------------------------------------------------

    @staticmethod
    def _search(row: Any) -> SavedSearch:
        return SavedSearch(
            id=row.id,
            user_id=row.user_id,
            name=row.name,
            query=row.query,
            filters=filters_from_json(dict(row.filters or {})),
            created_at=row.created_at,
            last_seen_at=row.last_seen_at,
        )

    def add_search(self, user_id: int, name: str, query: str, filters: SearchFilters) -> SavedSearch | None:
        """Create a saved search; None if the user already has one by that name."""
        clean = check_search_name(name)
        row = {
            "user_id": user_id,
            "name": clean,
            "name_key": clean.casefold(),
            "query": query,
            "filters": filters_to_json(filters),
            "feed_token": secrets.token_urlsafe(24),
            "created_at": datetime.now(UTC),
        }
        stmt = self._insert(library_searches).on_conflict_do_nothing(
            index_elements=[library_searches.c.user_id, library_searches.c.name_key]
        )
        with self.engine.begin() as conn:
            if conn.execute(stmt.values(**row).returning(library_searches.c.id)).first() is None:
                return None
            found = conn.execute(
                select(library_searches).where(library_searches.c.feed_token == row["feed_token"])
            ).one()
        return self._search(found)

    def searches(self, user_id: int) -> list[SavedSearch]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(library_searches)
                .where(library_searches.c.user_id == user_id)
                .order_by(library_searches.c.created_at, library_searches.c.id)
            ).all()
        return [self._search(r) for r in rows]

    def saved_search(self, search_id: int) -> SavedSearch | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(library_searches).where(library_searches.c.id == search_id)).first()
        return None if row is None else self._search(row)

    def search_feed_token(self, search_id: int) -> str | None:
        with self.engine.connect() as conn:
            value = conn.execute(
                select(library_searches.c.feed_token).where(library_searches.c.id == search_id)
            ).scalar()
        return str(value) if value is not None else None

    def search_by_token(self, token: str) -> SavedSearch | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(library_searches).where(library_searches.c.feed_token == token)).first()
        return None if row is None else self._search(row)

    def mark_search_seen(self, search_id: int, at: datetime) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(library_searches).where(library_searches.c.id == search_id).values(last_seen_at=at)
            )

    def delete_search(self, search_id: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(library_searches).where(library_searches.c.id == search_id))

    # -- everything at once, for recommendations -------------------------------------------------------

    def signals(self, user_id: int) -> ReaderSignals:
        """One consistent snapshot of the user's library (one read transaction)."""
        with self.engine.begin() as conn:
            saves = conn.execute(
                select(library_saves.c.paper_id, library_tags.c.name, library_saves.c.saved_at)
                .join(library_tags, library_tags.c.id == library_saves.c.tag_id)
                .where(library_saves.c.user_id == user_id)
                .order_by(library_tags.c.created_at, library_tags.c.id)
            ).all()
            marks = conn.execute(select(library_marks).where(library_marks.c.user_id == user_id)).all()
            authors = conn.execute(
                select(library_authors.c.name)
                .where(library_authors.c.user_id == user_id)
                .order_by(library_authors.c.followed_at, library_authors.c.name_key)
            ).scalars()
            followed = tuple(authors)
            searches = conn.execute(
                select(library_searches)
                .where(library_searches.c.user_id == user_id)
                .order_by(library_searches.c.created_at, library_searches.c.id)
            ).all()
        tags: dict[str, list[str]] = {}
        first: dict[str, datetime] = {}
        for paper_id, name, saved_at in saves:
            tags.setdefault(paper_id, []).append(name)
            at = saved_at
            first[paper_id] = min(first.get(paper_id, at), at)
        saved = sorted(
            (SavedPaper(pid, tuple(names), first[pid]) for pid, names in tags.items()),
            key=lambda s: (s.saved_at, s.paper_id),
            reverse=True,
        )
        return ReaderSignals(
            user_id=user_id,
            saved=tuple(saved),
            dismissed=frozenset(m.paper_id for m in marks if m.dismissed_at is not None),
            read=frozenset(m.paper_id for m in marks if m.read_at is not None),
            followed_authors=followed,
            saved_searches=tuple(self._search(r) for r in searches),
            taken_at=datetime.now(UTC),
        )
