"""Search my library (issue #34): a reader's saved papers, tags and private notes, by words and by meaning.

The library is one reader's, scored in memory (``domain/library_search.py``). What one search may cost is
bounded (issue #41), never by what the reader has stored:

* **words**: at most :data:`~paperfeed.domain.library_search.MAX_LIBRARY_QUERY_TERMS` distinct terms, each
  looked up in an index of the library's words (:class:`~paperfeed.domain.library_search.LibraryWords`).
  The index is kept per reader (:class:`_ReaderIndex`, for a bounded number of papers in all) and brought
  up to date from a cheap stamp of the reader's rows: a search after a change re-reads only the papers that
  changed (a small second segment), and folds them into the main one once there are many, without
  reading any paper again;
* **meaning**: one embedder for the whole search (the model in use when it began); the query and at most
  :data:`NOTES_PER_SEARCH` new notes are embedded in the request, the rest by one background thread at a
  lower CPU priority (notes' vectors are kept per model and text in a bounded cache, so a search after
  ``paperfeed model adapt`` never compares a note's vector in the old model's space with a query in the
  new one's); the papers' stored vectors are read once per index and model;
* **how often**: ``rate_per_minute`` searches a reader may run a minute on each web worker
  (``PAPERFEED_LIBRARY_SEARCH_RATE_PER_MINUTE``), then :class:`LibrarySearchLimited`;
* **how many indexes**: ``indexed_papers`` papers in all the readers' indexes a process keeps
  (``PAPERFEED_LIBRARY_SEARCH_INDEXED_PAPERS``), the least recently searched dropped first. Readers whose
  libraries do not fit together would otherwise make every search a full rebuild (~0.4 ms of CPU a
  paper: a few seconds for a large library) within the rate limit; so the rebuild of a dropped index
  counts as one more search per :data:`REBUILD_PAPERS_PER_SEARCH` papers (a reader's first build is
  free), and the CPU such readers can cause is bounded by the rate limit, not by their libraries' size.

Without an embedder or vectors the search is by words alone, and says so.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from paperfeed.domain.embedding import EmbeddingStore
from paperfeed.domain.library import InvalidLibraryInput, LibraryRecords
from paperfeed.domain.library_search import (
    MAX_LIBRARY_QUERY_CHARS,
    MAX_LIBRARY_QUERY_TERMS,
    MIN_MEANING,
    LibraryDoc,
    LibraryWords,
    Segment,
    Vectors,
    best_first,
    dense_match,
    fields_of,
    fuse_positions,
    id_ranks,
    keyword_match,
    query_terms,
    unit_rows,
)
from paperfeed.domain.models import Paper
from paperfeed.domain.search import MODEL_LOADING_NOTE, Embedder, EmbedderSource
from paperfeed.domain.wording import agree, count
from paperfeed.services.rate_limits import ClientRateLimiter
from paperfeed.services.visible import VisiblePapers

__all__ = ["LibraryHit", "LibrarySearch", "LibrarySearchLimited", "LibrarySearchPage"]

log = logging.getLogger("paperfeed.library")
NOTE_CACHE = 20_000  # notes' vectors kept (per model and text): 30 MB of 384-d vectors at most
NOTES_PER_SEARCH = 8  # new notes one search embeds itself (~60 ms); more wait for the background worker
REBUILD_PAPERS_PER_SEARCH = 250  # a dropped index's rebuild counts one more search per this many papers
EVICTED_READERS = 100_000  # readers whose index was dropped, remembered (the least recent forgotten first)
FOLD_AT = 256  # changed papers kept beside the main index before they are folded into it
Texts = dict[str, tuple[tuple[str, ...], str]]
_EMPTY = LibraryWords.build([], [])


class LibrarySearchLimited(Exception):
    """A reader ran more library searches than a minute allows; ``retry_after`` seconds until the next."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = max(1, int(retry_after + 0.999))
        super().__init__(
            f"too many searches of your library: try again in {count(self.retry_after, 'second')}"
        )


@dataclass(frozen=True, slots=True)
class LibraryHit:
    paper: Paper
    tags: tuple[str, ...]
    note: str
    matched: tuple[str, ...]  # "note", "tags", "title", "authors", "abstract", "meaning"


@dataclass(frozen=True, slots=True)
class LibrarySearchPage:
    query: str
    hits: tuple[LibraryHit, ...]
    searched: int  # papers in the library
    notes: tuple[str, ...] = ()


@dataclass
class _ReaderIndex:
    """One reader's library as search sees it: the texts it was built from, a main segment and a small
    one of the papers changed since (the main one's copies of those no longer count), and, per model, the
    papers' stored vectors and the notes' as rows by position (the segments' papers, main then changed).

    Everything a search ranks is an array over those positions, made once per index (the tie-break by id,
    where each paper is) and once per index and model (the rows, scaled to length 1), so a search of an
    unchanged library does no work per paper in Python."""

    stamp: str
    texts: Texts
    main: LibraryWords
    alive: np.ndarray  # of the main segment's papers, those that still count
    changed: LibraryWords
    vectors: dict[str, tuple[tuple[str, ...], Vectors]] = field(default_factory=dict)  # by paper id
    notes: dict[str, dict[str, Vectors]] = field(default_factory=dict)  # per model: by paper id
    dense: dict[str, _Rows] = field(default_factory=dict)  # per model: complete ones only

    @property
    def size(self) -> int:
        return len(self.main) + len(self.changed)

    def segments(self) -> list[Segment]:
        return [Segment(self.main, self.alive), Segment(self.changed)]

    @cached_property
    def ids(self) -> tuple[str, ...]:
        """The paper at each position (a paper changed since the main segment was built is there twice:
        its main copy no longer counts)."""
        return self.main.ids + self.changed.ids

    @cached_property
    def ties(self) -> npt.NDArray[np.int64]:
        return id_ranks(self.ids)

    @cached_property
    def position(self) -> dict[str, int]:
        """Where each paper that counts is."""
        alive = np.concatenate([self.alive, np.ones(len(self.changed), dtype=bool)])
        return {self.ids[i]: int(i) for i in np.flatnonzero(alive)}

    @cached_property
    def noted(self) -> dict[str, str]:
        """The papers that count with a note, and the note."""
        return {pid: self.texts[pid][1] for pid in self.position if self.texts[pid][1]}


@dataclass(frozen=True, slots=True)
class _Rows:
    """A library's vectors under one model, scaled to length 1: the papers' own and the notes', each
    with the position of its paper."""

    papers: tuple[npt.NDArray[np.int64], Vectors]
    notes: tuple[npt.NDArray[np.int64], Vectors]


@dataclass
class LibrarySearch:
    records: LibraryRecords
    papers: VisiblePapers  # existing and not hidden by an admin
    embeddings: EmbeddingStore  # the papers' stored vectors
    embedder: EmbedderSource | None  # the model in use (None: no embedder, words only)
    limiter: ClientRateLimiter  # searches per reader a minute, per process (0: not limited)
    indexed_papers: int  # papers in all the readers' indexes this process keeps (least recent go first)
    _notes: OrderedDict[tuple[str, str], Vectors] = field(default_factory=OrderedDict, init=False)
    _waiting: OrderedDict[tuple[str, str], None] = field(default_factory=OrderedDict, init=False)
    _worker: threading.Thread | None = field(default=None, init=False)
    _wake: threading.Event = field(default_factory=threading.Event, init=False)
    _closed: bool = field(default=False, init=False)
    _indexes: OrderedDict[int, _ReaderIndex] = field(default_factory=OrderedDict, init=False)
    _building: dict[int, threading.Lock] = field(default_factory=dict, init=False)
    _evicted: OrderedDict[int, None] = field(default_factory=OrderedDict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def search(self, user_id: int, query: str, *, limit: int = 50) -> LibrarySearchPage:
        text = " ".join(query.split())
        if not text:
            raise InvalidLibraryInput("q", "type some words to search your library for")
        if len(text) > MAX_LIBRARY_QUERY_CHARS:
            raise InvalidLibraryInput(
                "q", f"a query has at most {count(MAX_LIBRARY_QUERY_CHARS, 'character')}"
            )
        wait = self.limiter.wait(f"library:{user_id}")
        if wait > 0:
            raise LibrarySearchLimited(wait)
        wanted, typed = query_terms(text)
        notes: list[str] = []
        if typed > len(wanted):
            notes.append(
                f"searched the first {MAX_LIBRARY_QUERY_TERMS} of the query's {count(typed, 'word')}"
            )
        index, rebuilt = self._index(user_id)
        if rebuilt:  # this search goes on; the reader's next ones wait for what the rebuild cost
            log.info(
                "library search: reader %s's index was dropped to make room and read again (%s); "
                "PAPERFEED_LIBRARY_SEARCH_INDEXED_PAPERS bounds the indexes kept",
                user_id,
                count(rebuilt, "paper"),
            )
            self.limiter.charge(f"library:{user_id}", rebuilt / REBUILD_PAPERS_PER_SEARCH)
        keyword, why = keyword_match(wanted, index.segments())
        cosines = self._dense(text, index, notes)
        meaning = cosines >= MIN_MEANING if cosines is not None else np.zeros(len(index.ids), dtype=bool)
        lists = [best_first(keyword, keyword > 0, index.ties, decimals=9)]
        if cosines is not None:
            lists.append(best_first(cosines, meaning, index.ties))
        ranked = fuse_positions(lists, index.ties, limit=max(1, min(limit, 200)))
        shown = self.papers.get([index.ids[i] for i in ranked])  # read afresh: hidden or retitled since
        hits = []
        for i in ranked:
            pid = index.ids[i]
            if pid not in shown:
                continue
            tags, note = index.texts[pid]
            matched = sorted(fields_of(int(why[i]))) + (["meaning"] if meaning[i] else [])
            hits.append(LibraryHit(shown[pid], tags, note, tuple(matched)))
        return LibrarySearchPage(text, tuple(hits), len(index.texts), tuple(notes))

    # -- meaning ---------------------------------------------------------------------------------------------

    def _dense(self, text: str, index: _ReaderIndex, notes: list[str]) -> npt.NDArray[np.float32] | None:
        """The best cosine of the query to each position's paper or note, with one embedder for the whole
        search; None (and a note) without one."""
        if self.embedder is None:
            notes.append("meaning search is unavailable here: matching your words only")
            return None
        if self.embedder.loading():  # the web's start: answer with words at once, not after the model
            notes.append(MODEL_LOADING_NOTE)
            return None
        try:
            embedder = self.embedder.current()
            query = np.asarray(embedder.embed([text]), dtype=np.float32)[0]
            rows, waiting = self._rows(embedder, index)
        except Exception as exc:  # a model that cannot load must not take word search down with it
            log.warning("library search: embedding failed: %s", exc)
            notes.append("meaning search failed (the embedding model): matching your words only")
            return None
        if waiting:
            noted = len(index.noted)
            notes.append(
                f"{waiting} of your {count(noted, 'note')} {agree(waiting, 'is', 'are')} not "
                f"searched by meaning yet: {agree(waiting, 'it is', 'they are')} being prepared "
                "(search again in a minute)"
            )
        return dense_match(query, len(index.ids), [rows.papers, rows.notes])

    def _rows(self, embedder: Embedder, index: _ReaderIndex) -> tuple[_Rows, int]:
        """The index's vectors under ``embedder``'s model, and how many notes have none yet; kept in the
        index once every note has one (until then each search takes what the background worker made)."""
        model = embedder.model_id
        with self._lock:
            kept = index.dense.get(model)
            have = index.notes.setdefault(model, {})
        if kept is not None:
            return kept, 0
        paper_ids, paper_rows = self._paper_vectors(model, index)
        waiting = self._note_vectors(embedder, index.noted, have)
        where = index.position
        with self._lock:
            noted = [pid for pid in index.noted if pid in have]
            note_rows = np.stack([have[pid] for pid in noted]) if noted else np.zeros((0, 1), np.float32)
        rows = _Rows(
            (
                np.asarray([where[pid] for pid in paper_ids if pid in where], dtype=np.int64),
                paper_rows[[pid in where for pid in paper_ids]] if len(paper_ids) else paper_rows,
            ),
            (np.asarray([where[pid] for pid in noted], dtype=np.int64), unit_rows(note_rows)),
        )
        if not waiting:
            with self._lock:
                index.dense[model] = rows
        return rows, waiting

    def _note_vectors(self, embedder: Embedder, notes: dict[str, str], have: dict[str, Vectors]) -> int:
        """Adds to ``have`` (the index's note vectors under ``embedder``'s model, by paper) those of
        ``notes`` made since, and says how many have none yet. At most :data:`NOTES_PER_SEARCH` missing ones
        are embedded here (a small library is complete at once); the others are handed to the background
        worker (:meth:`_embed_waiting`), whose vectors wait in the cache until a search takes them."""
        model = embedder.model_id
        with self._lock:
            for pid, body in notes.items():
                if pid not in have and (vector := self._notes.get((model, body))) is not None:
                    self._notes.move_to_end((model, body))
                    have[pid] = vector
            missing = sorted({body for pid, body in notes.items() if pid not in have})
        made = self._store(model, missing[:NOTES_PER_SEARCH], embedder)
        with self._lock:
            for pid, body in notes.items():
                if pid not in have and body in made:
                    have[pid] = made[body]
            later = [(model, body) for body in missing[NOTES_PER_SEARCH:] if (model, body) not in self._notes]
            for key in later[: max(0, NOTE_CACHE - len(self._waiting))]:
                self._waiting[key] = None
            if later and not self._closed:
                if self._worker is None or not self._worker.is_alive():
                    self._worker = threading.Thread(
                        target=self._embed_waiting, name="paperfeed-library-notes", daemon=True
                    )
                    self._worker.start()
                self._wake.set()
            return sum(1 for pid in notes if pid not in have)

    def _store(self, model: str, bodies: Sequence[str], embedder: Embedder) -> dict[str, Vectors]:
        """Embeds ``bodies`` into the cache (least recent go first past :data:`NOTE_CACHE`); returns them."""
        if not bodies:
            return {}
        made = np.asarray(embedder.embed(list(bodies)), dtype=np.float32)
        with self._lock:
            for body, vector in zip(bodies, made, strict=True):
                self._notes[(model, body)] = vector
                self._waiting.pop((model, body), None)
            while len(self._notes) > NOTE_CACHE:
                self._notes.popitem(last=False)
        return dict(zip(bodies, made, strict=True))

    def _embed_waiting(self) -> None:
        """The background worker: embeds the notes searches left waiting, a batch at a time, at a lower
        CPU priority than the requests (Linux: a thread's own nice value), until there are none."""
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        while not self._closed:
            self._wake.wait(timeout=60)
            self._wake.clear()
            while not self._closed:
                with self._lock:
                    batch = list(itertools.islice(self._waiting, NOTES_PER_SEARCH))
                if not batch or self.embedder is None:
                    break
                try:
                    embedder = self.embedder.current()
                    model = embedder.model_id
                    with self._lock:
                        for key in [k for k in batch if k[0] != model]:  # another model was adopted
                            self._waiting.pop(key, None)
                    self._store(model, [body for m, body in batch if m == model], embedder)
                except Exception as exc:  # the next search hands them over again
                    log.warning("library search: embedding notes in the background failed: %s", exc)
                    with self._lock:
                        self._waiting.clear()
                    break

    def close(self) -> None:
        """Stop the background worker (the App closes it before the store and the model)."""
        self._closed = True
        self._wake.set()
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=10)

    def _paper_vectors(self, model: str, index: _ReaderIndex) -> tuple[tuple[str, ...], Vectors]:
        """The stored vectors of the index's papers under ``model`` (scaled to length 1), read once per
        index and model (kept across a change that adds or removes no paper)."""
        with self._lock:
            kept = index.vectors.get(model)
        if kept is None:
            found = self.embeddings.vectors(model, list(index.texts))
            ids = tuple(pid for pid in index.texts if pid in found)
            rows = np.stack([found[pid] for pid in ids]) if ids else np.zeros((0, 1), dtype=np.float32)
            kept = (ids, unit_rows(rows))
            with self._lock:
                index.vectors[model] = kept
        return kept

    # -- the index of a reader's words -----------------------------------------------------------------------

    def _index(self, user_id: int) -> tuple[_ReaderIndex, int]:
        """The reader's index, brought up to date with their rows (one small read when nothing changed),
        and how many papers it read again because the reader's index had been dropped (0: none)."""
        with self._lock:
            building = self._building.setdefault(user_id, threading.Lock())
        with building:  # one build per reader at a time; other readers go on
            stamp = self.records.library_stamp(user_id)
            with self._lock:
                kept = self._indexes.get(user_id)
            if kept is not None and kept.stamp == stamp:
                with self._lock:
                    self._indexes.move_to_end(user_id)
                return kept, 0
            texts = self.records.library_texts(user_id)
            index = self._update(kept, stamp, texts) if kept is not None else self._build(stamp, texts)
            with self._lock:
                dropped = kept is None and user_id in self._evicted  # else its first build: free
                self._evicted.pop(user_id, None)
                rebuilt = index.size if dropped else 0
                self._indexes[user_id] = index
                self._indexes.move_to_end(user_id)
                total = sum(i.size for i in self._indexes.values())
                while total > self.indexed_papers and len(self._indexes) > 1:
                    reader, gone = self._indexes.popitem(last=False)
                    total -= gone.size
                    self._evicted[reader] = None
                    while len(self._evicted) > EVICTED_READERS:
                        self._evicted.popitem(last=False)
            return index, rebuilt

    def _docs(self, texts: Texts, paper_ids: Sequence[str]) -> tuple[list[str], list[dict[str, int]]]:
        found = self.papers.get(list(paper_ids))
        ids = [pid for pid in paper_ids if pid in found]
        return ids, [LibraryDoc(found[pid], *texts[pid]).words() for pid in ids]

    def _build(self, stamp: str, texts: Texts) -> _ReaderIndex:
        main = LibraryWords.build(*self._docs(texts, list(texts)))
        return _ReaderIndex(stamp, texts, main, np.ones(len(main), dtype=bool), _EMPTY)

    def _update(self, kept: _ReaderIndex, stamp: str, texts: Texts) -> _ReaderIndex:
        """``kept`` after the reader's changes: only the papers added or changed are read, into the small
        segment (their old copies stop counting); past :data:`FOLD_AT` of them the two segments are
        folded into one, from the words they hold (no paper is read again)."""
        changed = [pid for pid, value in texts.items() if kept.texts.get(pid) != value]
        gone = set(changed)

        def still(ids: Sequence[str]) -> np.ndarray:
            return np.fromiter((pid in texts and pid not in gone for pid in ids), dtype=bool, count=len(ids))

        alive = kept.alive & still(kept.main.ids)
        fresh = LibraryWords.build(*self._docs(texts, changed))
        small = LibraryWords.merged([(kept.changed, still(kept.changed.ids)), (fresh, None)])
        vectors = kept.vectors if texts.keys() == kept.texts.keys() else {}  # a paper came or went
        with self._lock:  # the notes' vectors that still hold (their note unchanged)
            notes = {
                model: {
                    pid: v for pid, v in have.items() if pid in texts and texts[pid][1] == kept.texts[pid][1]
                }
                for model, have in kept.notes.items()
            }
        if len(small) > FOLD_AT:
            main = LibraryWords.merged([(kept.main, alive), (small, None)])
            return _ReaderIndex(stamp, texts, main, np.ones(len(main), dtype=bool), _EMPTY, vectors, notes)
        return _ReaderIndex(stamp, texts, kept.main, alive, small, vectors, notes)
