"""Mute rules: authors, categories or words a reader (or a group, for its digest and pages) never wants to
see. A muted paper is left out of the feeds, trending, search, For you, digests, RSS, the API and MCP for
that reader; pages say how many were hidden and can show them (docs/groups.md, "Mute rules").

The rules are compiled once per request into a :class:`MuteFilter` — sets of author keys and categories
and one regular expression of the words — and applied to the candidate list a surface already holds, so
muting costs a few set look-ups per shown paper and never a query per paper (bench/mute_cost.py).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, TypeVar

from .library import author_key
from .models import Paper
from .wording import count

__all__ = [
    "KINDS",
    "MAX_RULES",
    "MAX_VALUE_CHARS",
    "NO_MUTES",
    "InvalidMuteRule",
    "MuteFilter",
    "MuteKind",
    "MuteRecords",
    "MuteRule",
    "check_rule",
    "compile_rules",
]

MuteKind = Literal["author", "category", "word"]
KINDS: tuple[MuteKind, ...] = ("author", "category", "word")
MAX_RULES = 200  # per reader or group: a filter, not a blocklist of the whole field
MAX_VALUE_CHARS = 100
_CATEGORY = re.compile(r"^[a-z-]+(\.[a-z-]+)?$", re.IGNORECASE)
T = TypeVar("T")


class InvalidMuteRule(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True, slots=True)
class MuteRule:
    kind: MuteKind
    value: str  # as typed
    key: str  # as matched
    created_at: datetime | None = None


def _fold(text: str) -> str:
    """Accent- and case-insensitive form of a word or text (plain ASCII, most titles and abstracts, is
    only lower-cased: the same result, a hundred times faster)."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _author_key(name: str) -> str:
    """:func:`~.library.author_key`, with the same fast path for printable ASCII names."""
    if name.isascii() and name.isprintable():
        return " ".join(name.split()).lower()
    return author_key(name)


def check_rule(kind: str, value: str) -> MuteRule:
    """A rule as stored: its kind, the value as typed (one line) and its matching key."""
    if kind not in KINDS:
        raise InvalidMuteRule("kind", f"mute an author, a category or a word (not {kind[:20]!r})")
    text = " ".join(value.split())
    if not text:
        raise InvalidMuteRule("value", f"say which {kind} to mute")
    if len(text) > MAX_VALUE_CHARS:
        raise InvalidMuteRule("value", f"a mute rule has at most {count(MAX_VALUE_CHARS, 'character')}")
    if kind == "author":
        return MuteRule("author", text, author_key(text))
    if kind == "category":
        if not _CATEGORY.match(text):
            raise InvalidMuteRule("value", f"{text!r} is not an arXiv category (e.g. cs.CV, hep-th)")
        return MuteRule("category", text, text.casefold())
    if not any(c.isalnum() for c in text):
        raise InvalidMuteRule("value", "a muted word needs a letter or a digit")
    return MuteRule("word", text, _fold(text))


@dataclass(frozen=True)
class MuteFilter:
    """Rules compiled for one request: ``muted(paper)`` is a handful of set look-ups and one regex."""

    authors: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()  # "cs.cv" or a whole archive "hep-th" / "cs"
    words: re.Pattern[str] | None = None
    rules: tuple[MuteRule, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.authors or self.categories or self.words)

    def muted(self, paper: Paper) -> bool:
        if self.categories:
            for cat in paper.categories:
                folded = cat.casefold()
                if folded in self.categories or folded.split(".", 1)[0] in self.categories:
                    return True
        if self.authors and any(_author_key(a) in self.authors for a in paper.authors if a.strip()):
            return True
        if self.words is not None:
            return self.words.search(_fold(f"{paper.title}\n{paper.abstract}")) is not None
        return False

    def split(self, items: Sequence[T], paper_of: Callable[[T], Paper]) -> tuple[list[T], int]:
        """The items whose paper is not muted, and how many were left out."""
        if not self:
            return list(items), 0
        kept = [i for i in items if not self.muted(paper_of(i))]
        return kept, len(items) - len(kept)

    def papers(self, papers: Sequence[Paper]) -> tuple[list[Paper], int]:
        return self.split(papers, lambda p: p)

    def ids(self, papers: Iterable[Paper]) -> set[str]:
        """The ids of the muted ones among ``papers``."""
        return {p.id for p in papers if self.muted(p)} if self else set()


NO_MUTES = MuteFilter()


def compile_rules(rules: Iterable[MuteRule]) -> MuteFilter:
    """One :class:`MuteFilter` of ``rules`` (a reader's and, for group pages, the group's together).

    Words match whole words (and phrases), accent- and case-insensitively, in the title and abstract."""
    ordered = tuple(rules)
    authors = frozenset(r.key for r in ordered if r.kind == "author")
    categories = frozenset(r.key for r in ordered if r.kind == "category")
    words = sorted({r.key for r in ordered if r.kind == "word"}, key=len, reverse=True)
    pattern = None
    if words:
        alternatives = "|".join(re.escape(w) for w in words)
        pattern = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")
    return MuteFilter(authors, categories, pattern, ordered)


class MuteRecords(Protocol):
    """Mute rules in the store (``adapters/store/mutes.py``); ``owner`` is ("reader", user id) or
    ("group", group id)."""

    def rules(self, owner: tuple[str, int]) -> list[MuteRule]: ...
    def add(self, owner: tuple[str, int], rule: MuteRule, now: datetime, *, cap: int) -> bool | None:
        """Add a rule unless the owner has ``cap`` already, checked and written in one transaction (so
        parallel adds never pass the cap): True added, False there already, None refused (full)."""
        ...

    def remove(self, owner: tuple[str, int], kind: str, key: str) -> bool: ...
    def count(self, owner: tuple[str, int]) -> int: ...
