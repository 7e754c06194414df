"""Anonymous reads cost a lookup: validators, conditional requests and a per-process page cache.

:class:`PublicCacheMiddleware` handles the anonymous ``GET`` of the routes in :data:`POLICIES` (the
day, week and month feeds, trending, search, the paper page and its ``.md``, the RSS/Atom feeds and the
JSON API's reads). For each it

- sets ``Cache-Control: public, max-age=…, stale-while-revalidate=…`` from the route's :class:`Policy`
  and ``Vary: Authorization, Cookie`` where a signed-in reader (by session cookie or by token) gets
  another answer, so a shared cache keeps the anonymous copy apart;
- adds a strong ``ETag`` (a digest of the body, so every worker gives the same tag for the same answer,
  and time-dependent pages such as today's feed or trending are still told apart) and answers a
  matching ``If-None-Match`` with ``304 Not Modified`` and no body;
- keeps the rendered answer in a bounded in-process cache (:class:`cachetools.TLRUCache`, sized in bytes
  by ``PAPERFEED_PAGE_CACHE_MB``) keyed by scheme, ``Host``, path, normalised query and ``Accept``,
  and stamped with the **data version** (:class:`~paperfeed.domain.feed.DataVersion`, from
  :class:`~paperfeed.services.page_version.PageVersions`: it moves with every import, vote, comment, harvest,
  moderation action, topics build, vector index save and finished job run, and on a node whose indexes
  follow a PostgreSQL store, when they catch up). An entry lives at most its policy's ``max-age``.

An entry of the current version is served as is. One whose version differs in its **content** part (a
vote, a comment, an edit) is still served for ``PAPERFEED_PAGE_CACHE_GRACE_SECONDS`` (default 10 s)
after that part changed, and one whose **papers** part differs (an import, a harvest, topic placements)
for ``PAPERFEED_PAGE_CACHE_IMPORT_GRACE_SECONDS`` (default 60 s) (``X-Paperfeed-Cache: stale`` marks
such a reuse). For ``PAPERFEED_PAGE_CACHE_REFRESH_SECONDS`` (default 600 s) after its grace, the copy is
still served while the worker renders the new one in the background (one at a time, paced to at most
half the worker's time); then a reader waits for the render. An import writes every second, and without
a grace each page would be rendered again every second, which is no cache at all. A change of the
**removals** part (a paper, comment or reader hidden or shown again) or of the **derived** part (a
topics build, the vector index saved with new vectors, a job run ending: a few a day, each awaited by
someone) empties the cache at once, so moderation is never late and nobody reloads a "No map yet" after
the build. With both graces 0, every change is.

A reader who changed something (a POST or DELETE with credentials) is never given a copy of an older
version for the longer grace plus the refresh seconds after it: the credential's digest is remembered by
the worker and, with several workers, in the node's shared cache. So a script that votes through the API
reads its vote back at once, while everyone else may get the graced copy.

With several workers, a worker that misses its own memory looks in the node's shared cache
(:class:`~paperfeed.domain.page_cache.SharedPageCache`, ``X-Paperfeed-Cache: shared``) before
rendering, and writes what it rendered there, under keys that carry :func:`render_fingerprint` (so it
outlives a restart with the same code and settings, and nothing else finds its copies); within a worker,
one render per key is in flight and later asks wait for it.

The version is read at most every ``PAPERFEED_PAGE_CACHE_CHECK_SECONDS`` (default 1 s) per worker, and
at once after any state-changing request this worker served. So an anonymous page shows a vote about
check + grace seconds after it (11 s by default), a new paper after check + import grace (61 s), and a
removal, a topics build or the end of a job within the check interval; when background renders cannot
keep up, up to the refresh seconds later. A signed-in reader's pages are never served from this cache, so
a voter sees their own vote at once.

A request with a session cookie or an ``Authorization`` header (any value: an expired session is not
anonymous) gets the anonymous copy only when rendering that copy never looked at who asked
(:func:`.security.asked_who`: no reader resolved, not even to nobody, no CSRF token) — the JSON API's
reads, which a script with a token asks for the most. Every HTML page names its reader in its header,
so a signed-in reader's page is always their own: rendered for them, never kept, ``private, no-store``
(:mod:`.headers`), and never compared with an anonymous ETag. A copy rendered for such a request is kept
only when it did not look either: then it is the anonymous answer.

A list of papers a reader's mute rules would filter (``web/mutes.py`` marks such a render
:data:`~.mutes.MUTABLE`) is given to a signed-in request only after :func:`~.mutes.reader_has_mutes` found
that its reader mutes nothing; a reader with rules gets their own list, rendered for them and never kept.

What is never cached or marked public: an answer that is not a 200, that sets a cookie, whose
handler chose ``private``/``no-store``/``no-cache``, or during whose rendering a user was resolved or a
CSRF token computed (:func:`.security.personal`). Search answers a failed part left partial are
``private, no-store`` for a signed-in reader and shared for 5 s only when anonymous
(:data:`.rendering.PARTIAL_SEARCH_HEADERS`); those whose only note is meaning search's coverage are
kept a minute at most (:data:`.rendering.COVERAGE_SEARCH_HEADERS`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import os
import re
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import anyio.to_thread
import orjson
from cachetools import TLRUCache
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from paperfeed import __version__
from paperfeed.bootstrap import App
from paperfeed.domain.feed import DataVersion
from paperfeed.domain.page_cache import SharedPageCache

from .headers import KEEP_SECONDS_HEADER, PUBLIC_SECONDS_HEADER, SESSION_COOKIE_PREFIX
from .mutes import MUTABLE, reader_has_mutes
from .security import asked_who, personal

__all__ = ["POLICIES", "Policy", "PublicCacheMiddleware", "policy_for", "render_fingerprint"]

log = logging.getLogger(__name__)

MAX_ENTRY_BYTES = 4 * 1024 * 1024  # larger answers are still validated, never kept
_REPLACED_KEPT = 4096  # version values remembered with the time they were replaced (an import: one a second)
_WRITERS_KEPT = 4096  # readers remembered with the time of their last change (the oldest are forgotten first)
_SAFE = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_NOT_SHARED = ("private", "no-store", "no-cache")


@dataclass(frozen=True, slots=True)
class Policy:
    """How long one family of anonymous answers may be reused, and what makes it differ."""

    name: str
    max_age: int  # seconds a browser or shared cache may reuse it without asking (and our entry lives)
    stale: int  # stale-while-revalidate: seconds a cache may serve it while fetching a fresh one
    vary: tuple[str, ...]  # request headers a signed-in reader's different answer hangs on
    keep: int = 0  # seconds the server keeps a rendered copy while the data is unchanged (0: max_age)

    @property
    def kept_for(self) -> int:
        return self.keep or self.max_age

    @property
    def cache_control(self) -> str:
        return f"public, max-age={self.max_age}, stale-while-revalidate={self.stale}"


# A signed-in reader's page has vote forms, library buttons, their name — signed in by cookie or token.
_PAGE = ("Authorization", "Cookie")
_API = ("Authorization", "Cookie")
_ID = r"(?:\d{4}\.\d{4,5}|[a-z][a-z.-]*/\d{7})(?:v\d+)?"  # canonical ids only: other spellings redirect

# Sized to how often each answer changes; docs/deployment.md has the same table. ``max_age`` is what a
# browser or proxy may reuse without asking; ``keep`` how long this server reuses its own copy while the
# data version stands still. The version catches every change of data but three: the clock (trending
# decays; the day pages' "rising" heading names this week), the search indexes catching up (similar
# papers, meaning search) and a reader's new display name; ``keep`` bounds how late those show.
_KEEP = 600
_HOUR = 3600
POLICIES: tuple[tuple[re.Pattern[str], Policy], ...] = tuple(
    (re.compile(pattern), policy)
    for pattern, policy in (
        (r"/", Policy("today's feed", 60, 300, _PAGE, _KEEP)),
        (r"/papers/(?:date|week|month)/[^/]+", Policy("day, week and month feeds", 120, 600, _PAGE, _KEEP)),
        (r"/trending", Policy("trending", 120, 600, _PAGE)),
        (r"/search", Policy("search page", 60, 300, _PAGE, _KEEP)),
        (rf"/papers/{_ID}", Policy("paper page", 120, 600, _PAGE, _KEEP)),
        (rf"/papers/{_ID}\.md", Policy("paper Markdown", 300, 3600, (), _HOUR)),
        (r"/(?:rss|atom)/(?:daily|trending|search)", Policy("RSS and Atom feeds", 300, 3600, ())),
        (r"/api/daily_papers", Policy("API: daily papers", 60, 300, _API, _KEEP)),
        (r"/api/papers/search", Policy("API: search", 60, 300, _API, _KEEP)),
        (r"/api/papers", Policy("API: all papers", 60, 300, _API, _KEEP)),
        (rf"/api/papers/{_ID}", Policy("API: one paper", 120, 600, _API, _KEEP)),
        (rf"/api/papers/{_ID}/similar", Policy("API: similar papers", 300, 3600, _API, _KEEP)),
        (r"/map", Policy("map page", 300, 3600, _PAGE, _HOUR)),
        (r"/api/map/(?:points|titles)", Policy("API: map points and titles", 300, 3600, (), _HOUR)),
    )
)


def policy_for(path: str) -> Policy | None:
    """The policy of an anonymous GET of ``path``; None for paths this cache never touches."""
    for pattern, policy in POLICIES:
        if pattern.fullmatch(path):
            return policy
    return None


@dataclass(frozen=True, slots=True)
class _Entry:
    headers: list[tuple[bytes, bytes]]  # as sent, ETag and Cache-Control included
    body: bytes
    etag: str
    cache_control: str
    vary: str
    ttl: float  # seconds the server keeps it (the policy's keep), not the max-age it sends
    version: DataVersion | None  # None: the version could not be read, and the entry is not kept
    stored: float  # the clock when rendered: a content change may reuse it for the grace seconds
    anyone: bool = False  # its render never looked at who asked: a signed-in reader may be given it too
    mutable: bool = False  # a list a reader's mute rules filter: given to them only when they mute nothing

    @property
    def size(self) -> int:
        return len(self.body) + sum(len(k) + len(v) for k, v in self.headers) + 200


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _discard(_message: Message) -> None:
    return None


def _internal_seconds(headers: MutableHeaders, name: str) -> int | None:
    """An internal header's whole seconds, the header dropped (a client never sees it); None: absent."""
    value = headers.get(name)
    if value is None:
        return None
    del headers[name]
    return int(value) if value.isascii() and value.isdigit() else None


def _credentialed(scope: Scope) -> bool:
    """A session cookie (valid or not) or an Authorization header: the reader may not be anonymous."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            return True
        if name == b"cookie" and SESSION_COOKIE_PREFIX in value:
            return True
    return False


def _credential(scope: Scope) -> str:
    """A digest of who asks: the ``Authorization`` header and the session cookie (nothing else of the
    cookies, which change without the reader changing)."""
    digest = hashlib.blake2b(digest_size=16)
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            digest.update(b"a:" + value + b"\n")
        elif name == b"cookie":
            for part in value.split(b";"):
                if SESSION_COOKIE_PREFIX in part:
                    digest.update(b"c:" + part.strip() + b"\n")
    return digest.hexdigest()


def _header(scope: Scope, wanted: bytes) -> str:
    for name, value in scope.get("headers", ()):
        if name == wanted:
            return str(value.decode("latin-1"))
    return ""


def _key(scope: Scope) -> tuple[Any, ...]:
    """What an anonymous answer is keyed by: scheme, ``Host``, path, normalised query and ``Accept``."""
    return (
        scope.get("scheme", "http"),
        _header(scope, b"host"),
        scope.get("root_path", ""),
        scope["path"],
        _query(scope.get("query_string", b"")),
        _header(scope, b"accept")[:300],
    )


def _query(raw: bytes) -> tuple[tuple[str, str], ...]:
    """Parameters sorted by name; values of one name keep their order (a handler may take the first)."""
    pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True)
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


def _matches(if_none_match: str, etag: str) -> bool:
    """RFC 9110 §13.1.2: weak comparison, a list of tags, or ``*``."""
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    wanted = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == wanted for tag in if_none_match.split(","))


# Settings that never change what a page shows: a server restarted with another grace keeps its copies.
_NOT_RENDERED = ("page_cache_", "workers", "host", "port")


def render_fingerprint(settings: Any, package: Path | None = None) -> str:
    """What a rendered answer depends on besides the data: paperfeed's version, its files (code, templates,
    static assets: size and mtime, so an upgrade or an edit shows) and the settings. The shared cache keys
    copies by it, so a restarted server with the same code and settings starts warm, and any other never
    sees them."""
    digest = hashlib.blake2b(__version__.encode(), digest_size=16)
    fields = settings.model_dump(mode="json")
    digest.update(
        orjson.dumps(
            {k: v for k, v in fields.items() if not k.startswith(_NOT_RENDERED)}, option=orjson.OPT_SORT_KEYS
        )
    )
    package = package or Path(__file__).resolve().parent.parent
    for folder, subfolders, files in os.walk(package):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(files):
            path = Path(folder, name)
            try:
                stat = path.stat()
            except OSError:
                continue
            digest.update(f"{path.relative_to(package)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _shared_key(key: tuple[Any, ...], fingerprint: str) -> str:
    """The shared cache's key: the code and settings' fingerprint (:func:`render_fingerprint`: a copy
    rendered by other code or settings is never found) and a digest of the request key (queries may be
    long)."""
    return f"{__version__}:{fingerprint}:" + hashlib.blake2b(repr(key).encode(), digest_size=20).hexdigest()


_LENGTH = struct.Struct(">I")


def _encode(entry: _Entry, clock: Callable[[], float]) -> bytes:
    """An entry as bytes for the shared cache: a JSON head (its age as a wall-clock time, since each
    process has its own monotonic clock in tests) then the body. Never pickle: the file is just data."""
    assert entry.version is not None
    head = orjson.dumps(
        {
            "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in entry.headers],
            "etag": entry.etag,
            "cache_control": entry.cache_control,
            "vary": entry.vary,
            "ttl": entry.ttl,
            "version": [
                entry.version.content,
                entry.version.removals,
                entry.version.papers,
                entry.version.derived,
            ],
            "rendered": time.time() - (clock() - entry.stored),
            "anyone": entry.anyone,
            "mutable": entry.mutable,
        }
    )
    return _LENGTH.pack(len(head)) + head + entry.body


def _decode(raw: bytes, clock: Callable[[], float]) -> _Entry | None:
    """The entry :func:`_encode` wrote; None for anything else (a damaged or foreign value is a miss)."""
    try:
        (size,) = _LENGTH.unpack_from(raw)
        head = orjson.loads(raw[_LENGTH.size : _LENGTH.size + size])
        content, removals, papers, derived = head["version"]
        return _Entry(
            [(str(k).encode("latin-1"), str(v).encode("latin-1")) for k, v in head["headers"]],
            raw[_LENGTH.size + size :],
            str(head["etag"]),
            str(head["cache_control"]),
            str(head["vary"]),
            float(head["ttl"]),
            DataVersion(str(content), str(removals), str(papers), str(derived)),
            clock() - max(0.0, time.time() - float(head["rendered"])),
            head.get("anyone") is True,  # absent (an older copy): treated as a reader's own
            head.get("mutable", True) is not False,  # absent: asked about, to be safe
        )
    except (struct.error, orjson.JSONDecodeError, KeyError, TypeError, ValueError, UnicodeError):
        return None


class PublicCacheMiddleware:
    """See the module doc. One instance per app, so one cache per worker process."""

    def __init__(self, app: ASGIApp, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.clock = clock
        self._cache: TLRUCache[tuple[Any, ...], _Entry] | None = None
        self._max_bytes = -1  # unknown until the first request brings the settings
        self._version: DataVersion | None = None
        self._checked = float("-inf")
        self._check_every = 1.0
        self._grace = 10.0
        self._import_grace = 60.0
        self._refresh = 600.0  # seconds past a grace a copy is served while a background render replaces it
        self._background: asyncio.Task[None] | None = None  # the one background render of this worker
        self._background_after = float("-inf")  # when the next may start: renders take half the time at most
        self._refreshing = asyncio.Lock()  # one version read at a time per worker
        self._replaced: dict[tuple[str, str], float] = {}  # (part, value) → when it stopped being current
        self._flights: dict[tuple[Any, ...], asyncio.Event] = {}  # keys being rendered: later asks wait
        self._shared: SharedPageCache | None = None  # the node's cache the workers share, if any
        self._fingerprint = ""  # of the code and settings: the shared cache's keys carry it
        self._writes = 0  # state-changing requests served: one since the last read makes it stale
        self._read_at_writes = -1
        self._writers: dict[str, float] = {}  # a credential's digest → when it last changed something

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] not in _SAFE:
            try:
                await self.app(scope, receive, send)
            finally:
                self._writes += 1  # it may have changed the data: read the version anew
                container: App | None = scope.get("state", {}).get("app")
                if _credentialed(scope) and container is not None:
                    self._configure(container)  # a worker's first request may be this change
                    await self._note_writer(_credential(scope))
            return
        policy = policy_for(scope["path"]) if scope["method"] == "GET" else None
        if policy is None:
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        if _credentialed(scope):
            await self._for_reader(scope, receive, send, policy, state)
            return
        version = await self._current_version(state)
        key = _key(scope)
        conditional = _header(scope, b"if-none-match")
        cache = self._cache
        kept = cache.get(key) if cache is not None and version is not None else None
        if kept is not None and await self._answer_kept(
            scope, send, policy, state, conditional, key, version, kept
        ):
            return
        if cache is None or version is None:  # nothing can be kept: no one to wait for
            await self._render(scope, receive, send, policy, state, conditional, key, version)
            return
        flight = self._flights.get(key)
        if flight is not None:  # another request of this worker is rendering it: share its answer
            if (
                kept is not None
                and self._grace > 0
                and self._import_grace > 0
                and self._same_strict(kept, version)
            ):
                await self._reply(send, kept, conditional, "stale")  # while the new copy renders
                return
            await flight.wait()
            kept = cache.get(key)
            how = self._usable(kept, version)
            if kept is not None and how:
                await self._reply(send, kept, conditional, how)
                return
            await self._render(scope, receive, send, policy, state, conditional, key, version)
            return
        self._flights[key] = flight = asyncio.Event()
        refresh = False
        try:
            shared = self._from_shared(key, version)
            if shared is not None:
                cache[key] = shared
                refresh = not self._usable(shared, version)
                await self._reply(send, shared, conditional, "stale" if refresh else "shared")
                return
            await self._render(scope, receive, send, policy, state, conditional, key, version)
        finally:
            flight.set()
            if self._flights.get(key) is flight:
                del self._flights[key]
            if refresh:
                self._refresh_later(scope, state, policy, key, version)

    async def _for_reader(
        self, scope: Scope, receive: Receive, send: Send, policy: Policy, state: dict[str, Any]
    ) -> None:
        """A request that may be a signed-in reader's (a session cookie or an ``Authorization`` header).

        It is given the anonymous copy only when rendering that copy never looked at who asked (the JSON
        API's reads: a script with a token gets what everyone gets), and a copy rendered for it is kept
        only on the same condition. Otherwise (a page that shows the reader's name, votes or CSRF token)
        it gets its own answer, never kept and never compared with an anonymous ETag."""
        version = await self._current_version(state)
        key = _key(scope)
        cache = self._cache
        kept = cache.get(key) if cache is not None and version is not None else None
        if kept is None:
            kept = self._from_shared(key, version)
            if kept is not None and kept.anyone and cache is not None:
                cache[key] = kept
        if kept is not None and not kept.anyone:  # this answer depends on the reader
            await self.app(scope, receive, send)
            return
        if kept is not None and kept.mutable and await anyio.to_thread.run_sync(reader_has_mutes, scope):
            await self.app(scope, receive, send)  # a list their mute rules filter: their own answer
            return
        conditional = _header(scope, b"if-none-match")
        if kept is not None and kept.version != version and await self._wrote_lately(_credential(scope)):
            # this reader changed something since: a copy from before it would lose their own change
            await self._render(scope, receive, send, policy, state, conditional, key, version, reader=True)
            return
        if kept is not None and await self._answer_kept(
            scope, send, policy, state, conditional, key, version, kept
        ):
            return
        await self._render(scope, receive, send, policy, state, conditional, key, version, reader=True)

    async def _answer_kept(
        self,
        scope: Scope,
        send: Send,
        policy: Policy,
        state: dict[str, Any],
        conditional: str,
        key: tuple[Any, ...],
        version: DataVersion | None,
        kept: _Entry,
    ) -> bool:
        """Answer with ``kept`` when it may still be served: of this data version or within its grace,
        or past the grace but within the refresh seconds (then a background render replaces it, without
        the request's credentials). False: it may not, and the caller renders."""
        how = self._usable(kept, version)
        if how:
            await self._reply(send, kept, conditional, how)
            return True
        if self._refreshable(kept, version):  # past its grace: replaced off the path
            self._refresh_later(scope, state, policy, key, version)
            await self._reply(send, kept, conditional, "stale")
            return True
        return False

    def _usable(self, entry: _Entry | None, version: DataVersion | None) -> str:
        """'hit' (of the current data version), 'stale' (within a grace of the change) or ''."""
        if entry is None or version is None:
            return ""
        if entry.version == version:
            return "hit"
        if not self._same_strict(entry, version):
            return ""
        return "stale" if self._overdue(entry, version) < 0 else ""

    def _refreshable(self, entry: _Entry, version: DataVersion | None) -> bool:
        """Past its grace but within the refresh seconds after it: served while a background render
        replaces it. Never for a part whose grace is 0 (strict), nor after a removal or a derived change."""
        if self._refresh <= 0 or version is None or not self._same_strict(entry, version):
            return False
        return self._overdue(entry, version) < self._refresh

    def _changed(self, entry: _Entry, version: DataVersion) -> list[tuple[str, float]]:
        """The graced parts (content, papers) in which ``entry``'s version differs, with their grace."""
        assert entry.version is not None
        return [
            (part, grace)
            for part, grace in (("content", self._grace), ("papers", self._import_grace))
            if getattr(entry.version, part) != getattr(version, part)
        ]

    def _overdue(self, entry: _Entry, version: DataVersion) -> float:
        """Seconds since the first of ``entry``'s changed parts outlived its grace: negative while every
        one is within it, infinite where a changed part has no grace (0: strict)."""
        now = self.clock()
        overdue = [
            now - self._outdated(entry, part) - grace if grace > 0 else math.inf
            for part, grace in self._changed(entry, version)
        ]
        return max(overdue, default=-math.inf)  # nothing graced changed: within every grace

    def _behind(self, entry: _Entry) -> float | None:
        """Seconds since the oldest part of ``entry``'s version stopped being current (None: it is)."""
        version = self._version
        if entry.version is None or version is None:
            return None
        since = [self._outdated(entry, part) for part, _ in self._changed(entry, version)]
        return max(0.0, self.clock() - min(since)) if since else None

    def _outdated(self, entry: _Entry, part: str) -> float:
        """When ``entry``'s value of ``part`` stopped being current, as far as this worker knows: the grace
        counts from there, so a page rendered an hour before the daily import still gets the whole grace.
        A value this worker never saw replaced (an entry another worker rendered) counts from the render,
        which is earlier: never a longer lag than the grace."""
        assert entry.version is not None
        return self._replaced.get((part, getattr(entry.version, part)), entry.stored)

    @staticmethod
    def _same_strict(entry: _Entry, version: DataVersion | None) -> bool:
        """Whether ``entry`` agrees with ``version`` in the parts no grace covers (removals, derived)."""
        return (
            entry.version is not None
            and version is not None
            and entry.version.removals == version.removals
            and entry.version.derived == version.derived
        )

    # -- a reader's own changes -------------------------------------------------------------------------

    def _writer_horizon(self) -> float:
        """How long after a change an older copy may still be served to others: the longer grace and
        the background refresh after it. A reader who made a change is never served one for this long."""
        return max(self._grace, self._import_grace, 0.0) + max(self._refresh, 0.0) + self._check_every

    async def _note_writer(self, who: str) -> None:
        """Remember that the reader ``who`` changed something now (and tell the node's other workers)."""
        self._writers.pop(who, None)
        self._writers[who] = self.clock()
        while len(self._writers) > _WRITERS_KEPT:
            del self._writers[next(iter(self._writers))]
        if self._shared is not None:
            await anyio.to_thread.run_sync(
                self._shared.put, f"wrote:{self._fingerprint}:{who}", b"1", self._writer_horizon()
            )

    async def _wrote_lately(self, who: str) -> bool:
        """Whether the reader ``who`` changed something within the horizon, here or in another worker."""
        when = self._writers.get(who)
        if when is not None and self.clock() - when < self._writer_horizon():
            return True
        shared = self._shared
        if shared is None:
            return False
        return await anyio.to_thread.run_sync(shared.get, f"wrote:{self._fingerprint}:{who}") is not None

    # -- the node's shared cache ---------------------------------------------------------------------------

    def _from_shared(self, key: tuple[Any, ...], version: DataVersion | None) -> _Entry | None:
        """A usable copy another worker of this node rendered (a lookup in its file: tens of µs)."""
        if self._shared is None or version is None:
            return None
        raw = self._shared.get(_shared_key(key, self._fingerprint))
        entry = _decode(raw, self.clock) if raw is not None else None
        if entry is None or not (self._usable(entry, version) or self._refreshable(entry, version)):
            return None
        return entry

    async def _to_shared(self, key: tuple[Any, ...], entry: _Entry) -> None:
        shared = self._shared
        if shared is None or entry.version is None:
            return
        await anyio.to_thread.run_sync(
            shared.put, _shared_key(key, self._fingerprint), _encode(entry, self.clock), entry.ttl
        )

    # -- replacing a copy past its grace in the background ------------------------------------------------

    def _refresh_later(
        self,
        scope: Scope,
        state: dict[str, Any],
        policy: Policy,
        key: tuple[Any, ...],
        version: DataVersion | None,
    ) -> None:
        """Start rendering ``key`` anew off the reader's path, unless this worker is already rendering it,
        is rendering another in the background, or rendered one too recently (the previous background
        render took as long as the pause after it: the readers keep at least half the worker)."""
        if self._background is not None or key in self._flights or self.clock() < self._background_after:
            return
        quiet: Scope = {
            **scope,
            "state": dict(state),  # as the request found it: the render adds its own marks
            "headers": [  # the anonymous copy: no validators, no credentials (the copy is anyone's)
                (name, value)
                for name, value in scope.get("headers", ())
                if name not in (b"if-none-match", b"if-modified-since", b"authorization", b"cookie")
            ],
        }
        self._flights[key] = flight = asyncio.Event()
        self._background = asyncio.get_running_loop().create_task(
            self._render_behind(quiet, policy, key, version, flight)
        )

    async def _render_behind(
        self,
        scope: Scope,
        policy: Policy,
        key: tuple[Any, ...],
        version: DataVersion | None,
        flight: asyncio.Event,
    ) -> None:
        started = self.clock()
        try:
            shared = self._from_shared(key, version)
            if shared is not None and shared.version == version and self._cache is not None:
                self._cache[key] = shared  # another worker already rendered this version
            else:
                await self._render(scope, _no_body, _discard, policy, scope["state"], "", key, version)
        except Exception as exc:  # a reader already has the old copy; the next ask tries again
            log.warning("page cache: rendering %s in the background failed: %s", scope.get("path"), exc)
        finally:
            flight.set()
            if self._flights.get(key) is flight:
                del self._flights[key]
            finished = self.clock()
            self._background_after = finished + (finished - started)
            self._background = None

    # -- the data version ------------------------------------------------------------------------------

    async def _current_version(self, state: dict[str, Any]) -> DataVersion | None:
        """The data version, read again when older than the check interval; None: cache nothing."""
        container: App | None = state.get("app")
        if container is None:
            return None
        self._configure(container)
        if self._fresh():
            return self._version
        if self._refreshing.locked() and self._version is not None and self._read_at_writes == self._writes:
            return self._version  # being read by another request; ours is at most an interval older
        async with self._refreshing:
            if self._fresh():
                return self._version
            started, writes = self.clock(), self._writes
            try:
                versions = container.catalogue.page_versions
                version: DataVersion = await anyio.to_thread.run_sync(versions.current)
            except Exception:  # a cache must never turn a readable page into an error: cache nothing
                self._version = None
                return None
            old, cache = self._version, self._cache
            dead = (
                old is not None
                and version != old
                and (
                    version.removals != old.removals
                    or version.derived != old.derived
                    or (version.content != old.content and self._grace <= 0)
                    or (version.papers != old.papers and self._import_grace <= 0)
                )
            )
            if dead and cache is not None:
                cache.clear()  # every entry is dead now: free their memory at once
            if old is not None:
                # the change happened after the previous read: count from there (a worker nobody asked
                # for an hour must not grant a whole grace to a page an hour stale)
                for part in ("content", "papers"):
                    value = getattr(old, part)
                    if value != getattr(version, part):
                        self._replaced.pop((part, value), None)
                        self._replaced[(part, value)] = self._checked
                while len(self._replaced) > _REPLACED_KEPT:
                    del self._replaced[next(iter(self._replaced))]
            self._version, self._checked, self._read_at_writes = version, started, writes
            return version

    def _configure(self, container: App) -> None:
        """Read the page cache's settings from the app's container, once (the first request brings it)."""
        if self._max_bytes < 0:
            settings = container.settings
            self._max_bytes = int(settings.page_cache_mb) * 1024 * 1024
            self._check_every = float(settings.page_cache_check_seconds)
            self._grace = float(settings.page_cache_grace_seconds)
            self._import_grace = float(settings.page_cache_import_grace_seconds)
            self._refresh = float(settings.page_cache_refresh_seconds)
            self._shared = container.catalogue.shared_pages if self._max_bytes > 0 else None
            if self._shared is not None:
                self._fingerprint = render_fingerprint(settings)
            if self._max_bytes > 0:
                self._cache = TLRUCache(
                    maxsize=self._max_bytes,
                    ttu=lambda _key, entry, now: now + entry.ttl,
                    timer=self.clock,
                    getsizeof=lambda entry: entry.size,
                )

    def _fresh(self) -> bool:
        return (
            self._version is not None
            and self._read_at_writes == self._writes
            and self.clock() - self._checked < self._check_every
        )

    # -- answering ---------------------------------------------------------------------------------------

    async def _render(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        policy: Policy,
        state: dict[str, Any],
        conditional: str,
        key: tuple[Any, ...],
        version: DataVersion | None,
        *,
        reader: bool = False,
    ) -> None:
        """Render through the app; keep the answer when it is anyone's. A ``reader``'s render (a request
        with credentials) is kept only when it never looked at who asked: then it is the anonymous one."""
        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
            else:
                await send(message)

        await self.app(scope, receive, capture)
        if start is None:
            return
        body = b"".join(chunks)
        headers = MutableHeaders(raw=list(start.get("headers", ())))
        chosen = headers.get("cache-control", "").lower()
        # a private answer its handler lets anonymous readers share briefly (rendering.PARTIAL_SEARCH_HEADERS)
        brief = _internal_seconds(headers, PUBLIC_SECONDS_HEADER)
        if brief is not None:
            policy = Policy(
                policy.name, min(brief, policy.max_age), 0, policy.vary, min(brief, policy.max_age)
            )
            chosen = ""
        keep = _internal_seconds(headers, KEEP_SECONDS_HEADER)  # a public answer the server keeps less long
        if keep is not None:
            kept_for = min(keep, policy.kept_for)
            policy = Policy(policy.name, policy.max_age, policy.stale, policy.vary, kept_for)
        asked = asked_who(state)
        shareable = (
            start["status"] == 200
            and "set-cookie" not in headers
            and not any(word in chosen for word in _NOT_SHARED)
            and not (asked if reader else personal(state))
        )
        if not shareable:
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        etag = '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'
        headers["Cache-Control"] = policy.cache_control
        headers["ETag"] = etag
        if policy.vary:
            headers["Vary"] = ", ".join(policy.vary)
        elif "vary" in headers:
            del headers["Vary"]
        vary = headers.get("vary", "")
        entry = _Entry(
            headers.raw,
            body,
            etag,
            policy.cache_control,
            vary,
            float(policy.kept_for),
            version,
            self.clock(),
            anyone=not asked,
            mutable=bool(state.get(MUTABLE)),
        )
        cache = self._cache
        if cache is not None and version is not None and entry.size <= min(MAX_ENTRY_BYTES, cache.maxsize):
            cache[key] = entry
            await self._reply(send, entry, conditional, "miss")
            await self._to_shared(key, entry)  # after the reply: the reader never waits for the disk
            return
        await self._reply(send, entry, conditional, "miss")

    async def _reply(self, send: Send, entry: _Entry, conditional: str, how: str) -> None:
        marker = [(b"x-paperfeed-cache", how.encode())]
        behind = self._behind(entry) if how == "stale" else None
        if behind is not None:  # how long ago the data it shows was replaced: the lag a reader sees
            marker.append((b"x-paperfeed-stale-seconds", str(int(behind)).encode()))
        if _matches(conditional, entry.etag):
            headers = [(b"etag", entry.etag.encode()), (b"cache-control", entry.cache_control.encode())]
            if entry.vary:
                headers.append((b"vary", entry.vary.encode()))
            await send({"type": "http.response.start", "status": 304, "headers": [*headers, *marker]})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [*entry.headers, *marker]})
        await send({"type": "http.response.body", "body": entry.body})
