"""A reader's library: saved papers in tags, notes, "not interested", read marks, followed authors, alerts.

Pure data and validation. The store keeps it (``adapters/store/library.py``), the library service
changes it (``services/library.py``), and the recommendations service reads it as :class:`ReaderSignals`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO, Literal, Protocol

from .search import SearchFilters
from .wording import count

__all__ = [
    "DEFAULT_TAG",
    "FORMATS",
    "MAX_AUTHOR_CHARS",
    "MAX_FILE_BYTES",
    "MAX_NOTE_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_SEARCH_NAME_CHARS",
    "MAX_TAG_CHARS",
    "Bibliography",
    "BibliographyError",
    "BibliographyParser",
    "CitedWork",
    "FollowedAuthor",
    "Format",
    "InvalidLibraryInput",
    "LibraryItem",
    "LibraryRecords",
    "Note",
    "Owner",
    "ReadFilter",
    "ReaderSignals",
    "SavedPaper",
    "SavedSearch",
    "Tag",
    "arxiv_ids",
    "author_key",
    "check_author",
    "check_note",
    "check_query",
    "check_search_name",
    "check_tag_name",
    "tag_key",
]

DEFAULT_TAG = "Saved"  # the tag a paper goes to when none is named
MAX_TAG_CHARS = 60
MAX_NOTE_CHARS = 20_000
MAX_AUTHOR_CHARS = 200
MAX_SEARCH_NAME_CHARS = 100
MAX_QUERY_CHARS = 250  # as the search API

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_SPACES = re.compile(r"\s+")


class InvalidLibraryInput(ValueError):
    """A tag name, note, author or saved search that cannot be stored; the message says which and why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def _one_line(text: str) -> str:
    """NFC, control and bidi-override characters removed, runs of whitespace as one space, trimmed."""
    cleaned = _CONTROL.sub(" ", unicodedata.normalize("NFC", text))
    return _SPACES.sub(" ", cleaned).strip()


def check_tag_name(name: str) -> str:
    """A tag name as stored: one line, 1..60 characters."""
    text = _one_line(name)
    if not text:
        raise InvalidLibraryInput("tag", "a tag needs a name")
    if len(text) > MAX_TAG_CHARS:
        raise InvalidLibraryInput("tag", f"a tag name has at most {count(MAX_TAG_CHARS, 'character')}")
    return text


def tag_key(name: str) -> str:
    """Two names with the same key are the same tag ("Reading list" == "reading  LIST")."""
    return check_tag_name(name).casefold()


def check_author(name: str) -> str:
    """An author name as it appears on papers (one line, 1..200 characters)."""
    text = _one_line(name)
    if not text:
        raise InvalidLibraryInput("author", "an author needs a name")
    if len(text) > MAX_AUTHOR_CHARS:
        raise InvalidLibraryInput(
            "author", f"an author name has at most {count(MAX_AUTHOR_CHARS, 'character')}"
        )
    return text


def author_key(name: str) -> str:
    """Accent- and case-insensitive key: "José García" and "Jose  garcia" follow the same person."""
    decomposed = unicodedata.normalize("NFKD", check_author(name))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def check_note(body: str) -> str:
    """A note's Markdown source: line breaks kept, other control characters dropped, at most 20k chars."""
    text = unicodedata.normalize("NFC", body).replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(c for c in text if c in "\n\t" or not _CONTROL.match(c)).strip()
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidLibraryInput("note", f"a note has at most {count(MAX_NOTE_CHARS, 'character')}")
    return text


def check_search_name(name: str) -> str:
    text = _one_line(name)
    if not text:
        raise InvalidLibraryInput("name", "a saved search needs a name")
    if len(text) > MAX_SEARCH_NAME_CHARS:
        limit = MAX_SEARCH_NAME_CHARS
        raise InvalidLibraryInput("name", f"a saved search name has at most {count(limit, 'character')}")
    return text


def check_query(query: str) -> str:
    text = _one_line(query)
    if not text:
        raise InvalidLibraryInput("query", "a saved search needs a query")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidLibraryInput("query", f"a query has at most {count(MAX_QUERY_CHARS, 'character')}")
    return text


@dataclass(frozen=True, slots=True)
class Tag:
    """A named collection of one reader's papers; private unless ``public``."""

    id: int
    user_id: int
    name: str
    public: bool
    created_at: datetime
    count: int = 0  # papers in it (filled in by listings)


@dataclass(frozen=True, slots=True)
class Owner:
    """The reader a tag belongs to, as others see them (a hidden reader's public tags are not shown)."""

    id: int
    display_name: str
    hidden: bool


@dataclass(frozen=True, slots=True)
class SavedPaper:
    """A paper in the library: the tags it is in and when it was first saved."""

    paper_id: str
    tags: tuple[str, ...]  # tag names, in the order the tags were created
    saved_at: datetime  # earliest save over its tags


@dataclass(frozen=True, slots=True)
class FollowedAuthor:
    name: str  # as the reader typed it (or as it appears on the paper they followed it from)
    followed_at: datetime

    @property
    def key(self) -> str:
        return author_key(self.name)


@dataclass(frozen=True, slots=True)
class SavedSearch:
    """A search that acts as an alert: new matches are those published after ``last_seen_at``."""

    id: int
    user_id: int
    name: str
    query: str
    filters: SearchFilters
    created_at: datetime
    last_seen_at: datetime | None = None

    @property
    def seen_since(self) -> datetime:
        """Matches published after this are "new" (the last visit, or the alert's creation)."""
        return self.last_seen_at or self.created_at


@dataclass(frozen=True, slots=True)
class Note:
    paper_id: str
    body: str  # Markdown source, rendered and sanitised by the web layer
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class LibraryItem:
    """One row of "My library": a saved paper with the reader's marks on it."""

    paper_id: str
    tags: tuple[str, ...]
    saved_at: datetime
    read: bool
    has_note: bool


@dataclass(frozen=True, slots=True)
class ReaderSignals:
    """Everything the library says about one reader's interests, for recommendations (read-only).

    Frozen snapshot taken in one read: saved papers with their tags, dismissed ("not interested") and
    read paper ids, followed author names and saved searches.
    """

    user_id: int
    saved: tuple[SavedPaper, ...] = ()  # newest save first
    dismissed: frozenset[str] = frozenset()
    read: frozenset[str] = frozenset()
    followed_authors: tuple[str, ...] = ()  # names as followed, oldest first
    saved_searches: tuple[SavedSearch, ...] = ()
    taken_at: datetime | None = None

    @property
    def saved_ids(self) -> frozenset[str]:
        return frozenset(s.paper_id for s in self.saved)

    @property
    def excluded_ids(self) -> frozenset[str]:
        """Papers never to recommend: already saved or dismissed."""
        return self.saved_ids | self.dismissed

    @property
    def tags(self) -> tuple[str, ...]:
        """Tag names that hold at least one saved paper, first seen first."""
        return tuple(dict.fromkeys(name for s in self.saved for name in s.tags))

    def in_tag(self, name: str) -> tuple[str, ...]:
        """Ids of the papers saved under tag ``name`` (matched case-insensitively)."""
        key = name.casefold()
        return tuple(s.paper_id for s in self.saved if any(t.casefold() == key for t in s.tags))

    @property
    def followed_author_keys(self) -> frozenset[str]:
        """Keys to match paper authors against (see :func:`author_key`)."""
        return frozenset(author_key(name) for name in self.followed_authors)


ReadFilter = Literal["all", "read", "unread"]


class LibraryRecords(Protocol):
    """What the service needs from the store (``adapters/store/library.py`` implements it)."""

    def user_id_for_email(self, email: str) -> int | None: ...
    def owner(self, user_id: int) -> Owner | None: ...
    def existing_papers(self, paper_ids: Sequence[str]) -> set[str]: ...
    def hidden_among(self, paper_ids: Sequence[str]) -> set[str]: ...
    def reader_marks(self, user_id: int) -> tuple[dict[str, tuple[str, ...]], set[str], set[str]]: ...
    def create_tag(self, user_id: int, name: str, *, public: bool = False) -> Tag: ...
    def tags(self, user_id: int) -> list[Tag]: ...
    def tag(self, tag_id: int) -> Tag | None: ...
    def tag_named(self, user_id: int, name: str) -> Tag | None: ...
    def update_tag(self, tag_id: int, *, name: str | None = None, public: bool | None = None) -> bool: ...
    def delete_tag(self, tag_id: int) -> None: ...
    def save(self, user_id: int, paper_ids: Sequence[str], tag_names: Sequence[str]) -> int: ...
    def set_paper_tags(self, user_id: int, paper_id: str, tag_names: Sequence[str]) -> None: ...
    def unsave(self, user_id: int, paper_id: str, tag_id: int | None = None) -> int: ...
    def paper_tags(self, user_id: int, paper_ids: Sequence[str]) -> dict[str, tuple[str, ...]]: ...
    def items(
        self,
        user_id: int,
        *,
        tag_id: int | None = None,
        read: ReadFilter = "all",
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[LibraryItem], int]: ...
    def tag_papers(
        self, tag_id: int, limit: int = 50, offset: int = 0
    ) -> tuple[list[tuple[str, datetime]], int]: ...
    def set_read(self, user_id: int, paper_id: str, read: bool) -> None: ...
    def set_dismissed(self, user_id: int, paper_id: str, dismissed: bool) -> None: ...
    def marks(self, user_id: int, paper_ids: Sequence[str]) -> dict[str, tuple[bool, bool]]: ...
    def dismissed(
        self, user_id: int, limit: int = 50, offset: int = 0
    ) -> tuple[list[tuple[str, datetime]], int]: ...
    def set_note(self, user_id: int, paper_id: str, body: str) -> None: ...
    def note(self, user_id: int, paper_id: str) -> Note | None: ...
    def notes(self, user_id: int, paper_ids: Sequence[str]) -> dict[str, str]: ...
    def follow(self, user_id: int, name: str) -> bool: ...
    def unfollow(self, user_id: int, name: str) -> bool: ...
    def followed(self, user_id: int) -> list[FollowedAuthor]: ...
    def add_search(
        self, user_id: int, name: str, query: str, filters: SearchFilters
    ) -> SavedSearch | None: ...
    def searches(self, user_id: int) -> list[SavedSearch]: ...
    def saved_search(self, search_id: int) -> SavedSearch | None: ...
    def search_feed_token(self, search_id: int) -> str | None: ...
    def search_by_token(self, token: str) -> SavedSearch | None: ...
    def mark_search_seen(self, search_id: int, at: datetime) -> None: ...
    def delete_search(self, search_id: int) -> None: ...
    def signals(self, user_id: int) -> ReaderSignals: ...
    def library_texts(self, user_id: int) -> dict[str, tuple[tuple[str, ...], str]]: ...
    def library_stamp(self, user_id: int) -> str:
        """A digest that changes whenever the reader's saves, tags or notes do (a few index reads)."""
        ...


# -- importing a library from a bibliography file (``services/library_import.py``) -------------------------

MAX_FILE_BYTES = 20 * 2**20  # the largest bibliography file read
Format = Literal["auto", "bibtex", "ris", "csl-json", "ids"]
FORMATS: tuple[str, ...] = ("auto", "bibtex", "ris", "csl-json", "ids")


class BibliographyError(ValueError):
    """The file cannot be read as a bibliography; the message names the file and line or entry."""


@dataclass(frozen=True, slots=True)
class CitedWork:
    """One entry of a bibliography."""

    where: str  # "library.bib:12 (smith2020)", "zotero.json: item 3 (id abc)", "ids.txt:4"
    arxiv_id: str | None  # version-less arXiv id, when one was recognised
    title: str | None = None
    problem: str | None = None  # why there is no arXiv id (or why the entry was skipped)
    tags: tuple[str, ...] = ()  # the entry's keywords (BibTeX keywords, RIS KW, CSL-JSON keyword)
    note: str | None = None  # the reader's note it carries (BibTeX annote, RIS N1, CSL-JSON note)


def arxiv_ids(works: Iterable[CitedWork]) -> list[str]:
    """The distinct arXiv ids of ``works``, in first-seen order."""
    return list(dict.fromkeys(w.arxiv_id for w in works if w.arxiv_id))


@dataclass(frozen=True, slots=True)
class Bibliography:
    """The entries read from one bibliography file; ``more``: the file has entries past the cap the reader
    was given, which were not read."""

    works: list[CitedWork]
    more: bool = False


class BibliographyParser(Protocol):
    """Reads a bibliography file called ``name`` from ``stream`` (``adapters/sources/bibliography.py``:
    BibTeX, RIS, CSL-JSON or a list of ids), at most ``max_entries`` entries of it (None: all) and no
    more of the stream than those need; raises :class:`BibliographyError` for a file it cannot read."""

    def __call__(
        self, stream: BinaryIO, name: str, fmt: Format = "auto", *, max_entries: int | None = None
    ) -> Bibliography: ...
