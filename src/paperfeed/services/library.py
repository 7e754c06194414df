"""The library service: what a reader can do with their papers, and what others may see of it.

Every method takes the acting user's id and checks ownership itself, so no surface (page, API, CLI) can
forget to: another reader's private tag is reported exactly like a tag that does not exist. Papers
hidden by an admin are left out of everything shown (they stay in the library, out of sight).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from paperfeed.domain.ids import normalize_paper_id
from paperfeed.domain.library import (
    DEFAULT_TAG,
    FollowedAuthor,
    InvalidLibraryInput,
    LibraryItem,
    LibraryRecords,
    Note,
    Owner,
    ReaderSignals,
    ReadFilter,
    SavedSearch,
    Tag,
    author_key,
    check_author,
    check_note,
    check_query,
    check_search_name,
    check_tag_name,
    tag_key,
)
from paperfeed.domain.models import Paper
from paperfeed.domain.reference_formats import Reference
from paperfeed.domain.results import PaperSearch
from paperfeed.domain.search import SearchFilters
from paperfeed.services.mutes import MuteService
from paperfeed.services.visible import VisiblePapers

__all__ = [
    "AlertPage",
    "AuthorPage",
    "CollectionPage",
    "LibraryNotFound",
    "LibraryPage",
    "LibraryService",
    "PaperState",
]

MAX_PAGE_SIZE = 200
AUTHOR_POOL = 300  # papers asked of the search engine for an author page (then sorted newest first)
ALERT_POOL = 100


class LibraryNotFound(LookupError):
    """No such tag / paper / saved search for this reader (or it is someone else's private one)."""


@dataclass(frozen=True, slots=True)
class PaperState:
    """One reader's marks on one paper (what the save button, tag picker and note box show)."""

    paper_id: str
    tags: tuple[str, ...] = ()
    read: bool = False
    dismissed: bool = False
    note: Note | None = None

    @property
    def saved(self) -> bool:
        return bool(self.tags)


@dataclass(frozen=True, slots=True)
class LibraryEntry:
    paper: Paper
    item: LibraryItem


@dataclass(frozen=True, slots=True)
class LibraryPage:
    entries: tuple[LibraryEntry, ...]
    total: int
    offset: int
    limit: int
    tag: Tag | None
    read: ReadFilter
    hidden: int = 0  # saved papers on this page left out because an admin hid them


@dataclass(frozen=True, slots=True)
class CollectionPage:
    """A tag as shown to its owner or, when public, to anyone."""

    tag: Tag
    owner: Owner
    papers: tuple[tuple[Paper, datetime], ...]  # paper, when it was saved to the tag
    total: int
    offset: int
    limit: int


@dataclass(frozen=True, slots=True)
class AuthorPage:
    name: str
    papers: tuple[Paper, ...]  # newest first
    followed: bool


@dataclass(frozen=True, slots=True)
class AlertPage:
    search: SavedSearch
    new: tuple[Paper, ...]  # published after search.seen_since, newest first
    earlier: tuple[Paper, ...]  # the other matches, best first
    notes: tuple[str, ...] = ()


def _paper_id(text: str) -> str:
    """Canonical (version-less) id; raises InvalidPaperId for text that is no paper id."""
    return normalize_paper_id(text).base


def _page(limit: int, offset: int) -> tuple[int, int]:
    return max(1, min(limit, MAX_PAGE_SIZE)), max(0, offset)


@dataclass
class LibraryService:
    records: LibraryRecords
    papers: VisiblePapers  # hidden papers left out, the shown counts added
    search: PaperSearch
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    mutes: MuteService | None = None  # a reader's mute rules (alerts)

    # -- helpers -----------------------------------------------------------------------------------------

    def _existing_paper(self, paper_id: str) -> str:
        """The canonical id of a paper this instance shows; a hidden paper is refused exactly like an
        unknown one, so saving or tagging cannot tell that an administrator hid it."""
        canonical = _paper_id(paper_id)
        if not self.records.existing_papers([canonical]) or canonical in self.papers.hidden():
            raise LibraryNotFound(f"no paper with id {canonical} is in this instance")
        return canonical

    def _own_tag(self, user_id: int, tag_id: int) -> Tag:
        tag = self.records.tag(tag_id)
        if tag is None or tag.user_id != user_id:
            raise LibraryNotFound(f"no tag {tag_id} in your library")
        return tag

    def _own_search(self, user_id: int, search_id: int) -> SavedSearch:
        found = self.records.saved_search(search_id)
        if found is None or found.user_id != user_id:
            raise LibraryNotFound(f"no saved search {search_id} in your library")
        return found

    def _visible(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        """The papers among ``paper_ids`` that exist and are not hidden by an admin."""
        return self.papers.get(paper_ids)

    # -- tags and saves ----------------------------------------------------------------------------------

    def tags(self, user_id: int) -> list[Tag]:
        return self.records.tags(user_id)

    def tag(self, user_id: int, tag_id: int) -> Tag:
        return self._own_tag(user_id, tag_id)

    def create_tag(self, user_id: int, name: str, *, public: bool = False) -> Tag:
        return self.records.create_tag(user_id, check_tag_name(name), public=public)

    def update_tag(
        self, user_id: int, tag_id: int, *, name: str | None = None, public: bool | None = None
    ) -> Tag:
        self._own_tag(user_id, tag_id)
        if not self.records.update_tag(
            tag_id, name=None if name is None else check_tag_name(name), public=public
        ):
            raise InvalidLibraryInput("tag", f"you already have a tag named “{check_tag_name(name or '')}”")
        return self._own_tag(user_id, tag_id)

    def delete_tag(self, user_id: int, tag_id: int) -> None:
        self._own_tag(user_id, tag_id)
        self.records.delete_tag(tag_id)

    def save(self, user_id: int, paper_id: str, tags: Sequence[str] = (DEFAULT_TAG,)) -> PaperState:
        """Save a paper to ``tags`` (default "Saved"); saving again is harmless."""
        canonical = self._existing_paper(paper_id)
        names = [check_tag_name(t) for t in tags] or [DEFAULT_TAG]
        self.records.save(user_id, [canonical], names)
        return self.state(user_id, canonical)

    def set_tags(self, user_id: int, paper_id: str, tags: Sequence[str]) -> PaperState:
        """Make the paper be in exactly ``tags`` (the tag picker); an empty list unsaves it."""
        canonical = self._existing_paper(paper_id)
        self.records.set_paper_tags(user_id, canonical, [check_tag_name(t) for t in tags])
        return self.state(user_id, canonical)

    def unsave(self, user_id: int, paper_id: str, tag_id: int | None = None) -> PaperState:
        canonical = _paper_id(paper_id)
        if tag_id is not None:
            self._own_tag(user_id, tag_id)
        self.records.unsave(user_id, canonical, tag_id)
        return self.state(user_id, canonical)

    def save_many(self, user_id: int, paper_ids: Sequence[str], tag: str = DEFAULT_TAG) -> tuple[int, int]:
        """Save existing papers to one tag in one transaction; returns (newly saved, already there)."""
        name = check_tag_name(tag)
        unique = list(dict.fromkeys(paper_ids))
        existing = self.records.tag_named(user_id, name)
        already = 0
        if existing is not None:
            have = self.records.paper_tags(user_id, unique)
            already = sum(
                1 for pid in unique if any(t.casefold() == name.casefold() for t in have.get(pid, ()))
            )
        added = self.records.save(user_id, unique, [name]) if unique else 0
        return added, already

    def save_tagged(self, user_id: int, plan: Mapping[str, Sequence[str]]) -> tuple[int, int]:
        """Save existing papers each to its own checked tags (an import that carries tags); returns
        (papers newly saved to some tag, papers already in all of theirs)."""
        have = self.records.paper_tags(user_id, list(plan))
        groups: dict[tuple[str, ...], list[str]] = {}
        already = 0
        for pid, names in plan.items():
            keys = {tag_key(t) for t in have.get(pid, ())}
            if all(tag_key(n) in keys for n in names):
                already += 1
            else:
                groups.setdefault(tuple(names), []).append(pid)
        for names, pids in groups.items():
            self.records.save(user_id, pids, list(names))
        return len(plan) - already, already

    def add_notes(self, user_id: int, notes: Mapping[str, str]) -> int:
        """Set checked notes on papers the reader has no note on yet (an import never overwrites one)."""
        existing = self.records.notes(user_id, list(notes))
        added = 0
        for pid, body in notes.items():
            if pid not in existing and body:
                self.records.set_note(user_id, pid, body)
                added += 1
        return added

    # -- what a reader sees --------------------------------------------------------------------------------

    def state(self, user_id: int, paper_id: str) -> PaperState:
        canonical = _paper_id(paper_id)
        tags = self.records.paper_tags(user_id, [canonical]).get(canonical, ())
        read, dismissed = self.records.marks(user_id, [canonical]).get(canonical, (False, False))
        return PaperState(canonical, tags, read, dismissed, self.records.note(user_id, canonical))

    def all_states(self, user_id: int) -> dict[str, PaperState]:
        """Every paper the reader saved or marked, with tags and marks (no notes): one page's buttons."""
        tags, read, dismissed = self.records.reader_marks(user_id)
        return {
            pid: PaperState(pid, tags.get(pid, ()), pid in read, pid in dismissed)
            for pid in set(tags) | read | dismissed
        }

    def states(self, user_id: int, paper_ids: Sequence[str]) -> dict[str, PaperState]:
        """Tags and marks of many papers at once (feed pages); notes are not loaded."""
        tags = self.records.paper_tags(user_id, paper_ids)
        marks = self.records.marks(user_id, paper_ids)
        return {pid: PaperState(pid, tags.get(pid, ()), *marks.get(pid, (False, False))) for pid in paper_ids}

    def library(
        self,
        user_id: int,
        *,
        tag_id: int | None = None,
        read: ReadFilter = "all",
        limit: int = 50,
        offset: int = 0,
    ) -> LibraryPage:
        tag = self._own_tag(user_id, tag_id) if tag_id is not None else None
        limit, offset = _page(limit, offset)
        items, total = self.records.items(user_id, tag_id=tag_id, read=read, limit=limit, offset=offset)
        papers = self._visible([i.paper_id for i in items])
        entries = tuple(LibraryEntry(papers[i.paper_id], i) for i in items if i.paper_id in papers)
        return LibraryPage(entries, total, offset, limit, tag, read, hidden=len(items) - len(entries))

    def collection(
        self, tag_id: int, viewer_id: int | None = None, *, limit: int = 50, offset: int = 0
    ) -> CollectionPage:
        """A tag's papers: for its owner always, for anyone else only when public and the owner visible."""
        tag = self.records.tag(tag_id)
        owner = self.records.owner(tag.user_id) if tag is not None else None
        if tag is None or owner is None:
            raise LibraryNotFound(f"no collection {tag_id}")
        if viewer_id != tag.user_id and (not tag.public or owner.hidden):
            raise LibraryNotFound(f"no collection {tag_id}")
        limit, offset = _page(limit, offset)
        rows, total = self.records.tag_papers(tag_id, limit, offset)
        papers = self._visible([pid for pid, _ in rows])
        shown = tuple((papers[pid], at) for pid, at in rows if pid in papers)
        return CollectionPage(tag, owner, shown, total, offset, limit)

    # -- exports (BibTeX, RIS, CSL-JSON: domain/reference_formats.py) ----------------------------------

    def references(self, user_id: int, *, tag_id: int | None = None) -> tuple[list[Reference], Tag | None]:
        """The reader's own saved papers (one tag's, or all), newest save first, with every tag of theirs
        on each paper and their note: what their export file carries. Another reader's tag is a 404."""
        tag = self._own_tag(user_id, tag_id) if tag_id is not None else None
        items: list[LibraryItem] = []
        while True:
            page, total = self.records.items(user_id, tag_id=tag_id, limit=MAX_PAGE_SIZE, offset=len(items))
            items += page
            if not page or len(items) >= total:
                break
        papers = self._visible([i.paper_id for i in items])
        notes = self.records.notes(user_id, [i.paper_id for i in items if i.has_note])
        refs = [
            Reference(papers[i.paper_id], i.tags, notes.get(i.paper_id))
            for i in items
            if i.paper_id in papers
        ]
        return refs, tag

    def collection_references(self, tag_id: int, viewer_id: int | None = None) -> tuple[list[Reference], Tag]:
        """A tag's papers as an export: its owner gets their own export of the tag (all their tags and
        notes); anyone else, only for a public tag, the papers with that tag's name and no notes."""
        shown = self.collection(tag_id, viewer_id, limit=1)
        if viewer_id == shown.tag.user_id:
            return self.references(viewer_id, tag_id=tag_id)[0], shown.tag
        rows: list[tuple[str, datetime]] = []
        while True:
            page, total = self.records.tag_papers(tag_id, MAX_PAGE_SIZE, len(rows))
            rows += page
            if not page or len(rows) >= total:
                break
        papers = self._visible([pid for pid, _ in rows])
        return [Reference(papers[pid], (shown.tag.name,)) for pid, _ in rows if pid in papers], shown.tag

    # -- marks and notes -----------------------------------------------------------------------------------

    def set_read(self, user_id: int, paper_id: str, read: bool = True) -> PaperState:
        canonical = self._existing_paper(paper_id)
        self.records.set_read(user_id, canonical, read)
        return self.state(user_id, canonical)

    def set_dismissed(self, user_id: int, paper_id: str, dismissed: bool = True) -> PaperState:
        """ "Not interested": recommendations skip the paper (and learn from it)."""
        canonical = self._existing_paper(paper_id)
        self.records.set_dismissed(user_id, canonical, dismissed)
        return self.state(user_id, canonical)

    def dismissed(self, user_id: int, *, limit: int = 50, offset: int = 0) -> tuple[list[Paper], int]:
        limit, offset = _page(limit, offset)
        rows, total = self.records.dismissed(user_id, limit, offset)
        papers = self._visible([pid for pid, _ in rows])
        return [papers[pid] for pid, _ in rows if pid in papers], total

    def set_note(self, user_id: int, paper_id: str, body: str) -> PaperState:
        """Store the reader's private note (Markdown source); an empty note deletes it."""
        canonical = self._existing_paper(paper_id)
        self.records.set_note(user_id, canonical, check_note(body))
        return self.state(user_id, canonical)

    # -- authors -------------------------------------------------------------------------------------------

    def followed(self, user_id: int) -> list[FollowedAuthor]:
        return self.records.followed(user_id)

    def follow(self, user_id: int, name: str) -> bool:
        return self.records.follow(user_id, check_author(name))

    def unfollow(self, user_id: int, name: str) -> bool:
        return self.records.unfollow(user_id, check_author(name))

    def author(self, name: str, viewer_id: int | None = None, *, limit: int = 50) -> AuthorPage:
        """Recent papers whose author list has exactly this name (accent- and case-insensitively)."""
        clean = check_author(name)
        key = author_key(clean)
        quoted = clean.replace('"', " ")
        hits = self.search.search(f'author:"{quoted}"', limit=AUTHOR_POOL).hits
        ids = [h.paper.id for h in hits if any(author_key(a) == key for a in h.paper.authors if a.strip())]
        visible = self._visible(ids)
        newest = sorted(
            visible.values(),
            key=lambda p: (p.published or datetime.min.replace(tzinfo=UTC), p.id),
            reverse=True,
        )
        followed = viewer_id is not None and any(f.key == key for f in self.records.followed(viewer_id))
        return AuthorPage(clean, tuple(newest[: max(1, limit)]), followed)

    # -- saved searches (alerts) ---------------------------------------------------------------------------

    def searches(self, user_id: int) -> list[SavedSearch]:
        return self.records.searches(user_id)

    def saved_search(self, user_id: int, search_id: int) -> SavedSearch:
        return self._own_search(user_id, search_id)

    def add_search(
        self, user_id: int, name: str, query: str, filters: SearchFilters | None = None
    ) -> SavedSearch:
        clean_name = check_search_name(name)
        created = self.records.add_search(user_id, clean_name, check_query(query), filters or SearchFilters())
        if created is None:
            raise InvalidLibraryInput("name", f"you already have a saved search named “{clean_name}”")
        return created

    def delete_search(self, user_id: int, search_id: int) -> None:
        self._own_search(user_id, search_id)
        self.records.delete_search(search_id)

    def feed_token(self, user_id: int, search_id: int) -> str:
        """The secret that makes the alert's feed URL (whoever has the URL can read the feed)."""
        self._own_search(user_id, search_id)
        token = self.records.search_feed_token(search_id)
        assert token is not None
        return token

    def mark_seen(self, user_id: int, search_id: int) -> SavedSearch:
        self._own_search(user_id, search_id)
        self.records.mark_search_seen(search_id, self.now())
        return self._own_search(user_id, search_id)

    def alert(self, user_id: int, search_id: int) -> AlertPage:
        return self._alert(self._own_search(user_id, search_id))

    def alert_by_token(self, token: str) -> AlertPage:
        found = self.records.search_by_token(token) if token else None
        if found is None:
            raise LibraryNotFound("no such alert feed")
        owner = self.records.owner(found.user_id)
        if owner is None or owner.hidden:
            raise LibraryNotFound("no such alert feed")
        return self._alert(found)

    def _alert(self, saved: SavedSearch) -> AlertPage:
        page = self.search.search(saved.query, saved.filters, limit=ALERT_POOL)
        visible = self._visible([h.paper.id for h in page.hits])
        ranked = [h.paper for h in page.hits if h.paper.id in visible]
        if self.mutes is not None:  # the alert's page and private feed are its owner's: their mute rules
            muted = self.mutes.filter_for(saved.user_id).muted
            ranked = [p for p in ranked if not muted(p)]
        since = saved.seen_since
        new = sorted(
            (p for p in ranked if p.published is not None and p.published > since),
            key=lambda p: (p.published, p.id),
            reverse=True,
        )
        fresh = {p.id for p in new}
        return AlertPage(saved, tuple(new), tuple(p for p in ranked if p.id not in fresh), page.notes)

    # -- for other services ---------------------------------------------------------------------------------

    def signals(self, user_id: int) -> ReaderSignals:
        """Everything recommendations need to know about the reader, in one snapshot."""
        return self.records.signals(user_id)

    def user_id_for_email(self, email: str) -> int | None:
        return self.records.user_id_for_email(email)
