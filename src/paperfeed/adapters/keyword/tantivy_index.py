"""Keyword search with tantivy: a derived index in ``<data_dir>/keyword/``, rebuilt from the store at will.

Why: at 1M abstracts FTS5 needs ~200 ms for a common-word OR query, tantivy a few ms (see
bench/keyword_speed.py). The store stays the source of truth and this index follows it. The class here
opens the index and answers the port; the three jobs behind it live next to it:

* :mod:`.tantivy_damage`: checksums of the files, so a damaged index is rebuilt instead of panicking;
* :mod:`.tantivy_writer`: the document layout and the writer that keeps the index in step with the store
  (staged batches, background re-indexing, catch-up after a crash, full rebuilds);
* :mod:`.tantivy_query`: queries built from :class:`~paperfeed.domain.search.ParsedQuery`, and
  highlighting.

A missing or incompatible index (another ``INDEX_VERSION`` or analyzer) is rebuilt in full on open.

Commits by other processes (an import from the CLI, ``paperfeed check --repair``) are picked up before
each search: the reader reloads when ``meta.json`` differs from the one it last loaded (see
:meth:`TantivyKeywordIndex.follow_commits`), not on tantivy's own timer.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

import tantivy

from paperfeed.domain.ingest import BatchResult
from paperfeed.domain.models import Paper
from paperfeed.domain.ports import StoreReads
from paperfeed.domain.search import KeywordIndexUnavailable, ParsedQuery, ScoredId, SearchFilters, Span
from paperfeed.domain.wording import count

from .tantivy_damage import damaged_files, tantivy_failure
from .tantivy_query import TANTIVY_WEIGHTS, TantivyQueries, analyzer
from .tantivy_writer import INDEX_VERSION, KeywordIndexBusy, TantivyWriter, read_state, schema
from .weights import FieldWeights

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = [
    "INDEX_VERSION",
    "TANTIVY_WEIGHTS",
    "KeywordIndexBusy",
    "TantivyKeywordIndex",
    "analyzer",
    "damaged_files",
]

log = logging.getLogger(__name__)

# How far below its watermark a following node looks again: covers transactions that commit after a
# later-stamped one and clocks of other nodes that lag this much (keep nodes NTP-synced).
FOLLOW_OVERLAP_SECONDS = 30.0


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _unavailable_when_damaged(
    method: Callable[Concatenate[TantivyKeywordIndex, _P], _R],
) -> Callable[Concatenate[TantivyKeywordIndex, _P], _R]:
    """Turn tantivy's damaged-file failures (a ValueError or a panic) into
    :class:`~paperfeed.domain.search.KeywordIndexUnavailable`, which the search service degrades on.

    Before giving up it reloads the index once and retries (a segment file another process merged
    away between our reload and the query); a rebuild by ``paperfeed check --repair`` is picked up
    before the query already, by :meth:`TantivyKeywordIndex.follow_commits`.
    """

    def guarded(self: TantivyKeywordIndex, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except BaseException as first:
            if not tantivy_failure(first):
                raise
        try:
            self.follow_commits(force=True)
            return method(self, *args, **kwargs)
        except BaseException as exc:
            if not tantivy_failure(exc):
                raise
            message = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            log.error("%s: keyword index unreadable (%s); run `paperfeed check --repair`", self.path, message)
            raise KeywordIndexUnavailable(
                f"{self.path}: the keyword index cannot be read ({message}); "
                "`paperfeed check --repair` rebuilds it"
            ) from exc

    functools.update_wrapper(guarded, method)  # name and docstring (the decorator form confuses mypy)
    return guarded


@contextlib.contextmanager
def _opening(path: Path) -> Iterator[None]:
    """Hold the node's lock on opening the index at ``path`` (a blocking ``flock`` beside the folder,
    released by the kernel if this process dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent / f".{path.name}.opening.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


class TantivyKeywordIndex:
    """:class:`~paperfeed.domain.search.KeywordIndex` on a tantivy index derived from the paper store."""

    name = "tantivy"

    def __init__(
        self,
        path: Path,
        engine: Engine | None,
        weights: FieldWeights | None = None,
        *,
        heap_size: int = 64_000_000,
        rebuild_heap_size: int = 1_000_000_000,
        writer_threads: int = 1,
        catch_up: bool = True,
        stemming: bool = True,
        background: bool = True,
    ) -> None:
        self.path = path
        self.engine = engine
        # Several processes of a node (the web workers) may open a missing index at once: each would wipe
        # the folder and rebuild it while another writes there, and tantivy's writer dies on the vanished
        # files. So opening, and building when needed, takes turns; a later opener finds the index current.
        with _opening(path):
            analyzer_name = "stem" if stemming else "plain"
            needs_rebuild = False  # damaged files were wiped: the next reindex/catch-up is a rebuild
            path.mkdir(parents=True, exist_ok=True)
            state = read_state(path)
            fresh = state.get("version") != INDEX_VERSION or state.get("analyzer") != analyzer_name
            if fresh:
                self._wipe()  # an index of another version: start over
            elif damaged := damaged_files(path):  # derived data: rebuild it rather than let tantivy panic
                problems = "; ".join(damaged[:3])
                log.warning("%s: keyword index damaged (%s); rebuilding it from the store", path, problems)
                self._wipe()
                fresh = needs_rebuild = True
            self._schema = schema("en_stem" if stemming else "default")
            try:
                self._index = tantivy.Index(self._schema, path=str(path), reuse=not fresh)
            except BaseException as exc:  # damaged files (e.g. a disk filled up mid-commit): rebuild them
                if not tantivy_failure(exc):
                    raise
                log.warning("%s: keyword index unreadable (%s); rebuilding it from the store", path, exc)
                self._wipe()
                fresh = needs_rebuild = True
                self._index = tantivy.Index(self._schema, path=str(path), reuse=False)
            # tantivy's default reader reloads on a timer thread (meta.json polled every 500 ms) and may
            # land on another process's intermediate commit, e.g. the empty index a repair creates before
            # its rebuild, and stay there until the next poll; a late timer reload can even overwrite a
            # newer one. Reloads happen in follow_commits only, so what a search sees is the latest
            # meta.json.
            self._meta_seen = self._read_meta()  # the meta.json the reader last loaded (read before it)
            self._reload_lock = threading.Lock()
            self._index.config_reader("manual")
            self.queries = TantivyQueries(self._schema, weights or TANTIVY_WEIGHTS, stemming=stemming)
            self._writer = TantivyWriter(
                path,
                engine,
                self._index,
                reload=functools.partial(self.follow_commits, force=True),
                analyzer_name=analyzer_name,
                heap_size=heap_size,
                rebuild_heap_size=rebuild_heap_size,
                writer_threads=writer_threads,
                background=background,
                needs_rebuild=needs_rebuild,
            )
            if catch_up:
                try:
                    if fresh or "watermark" not in state:
                        self.rebuild()
                    else:
                        self.catch_up()
                except KeywordIndexBusy:
                    pass  # the process holding the writer is updating the index; it catches up itself
                self.close()  # a reader must not keep the writer lock from the process that imports

    @classmethod
    def open_current(
        cls, path: Path, reads: StoreReads, weights: FieldWeights | None = None, *, stemming: bool = True
    ) -> TantivyKeywordIndex | None:
        """The index at ``path``, for searching only, when it provably holds the store as it is: of this
        version and analyzer, with a watermark, no changes another process's lock kept out
        (``dirty_since``), and no paper written after the watermark (``reads.changed_after``). Opening it
        so needs no store engine (no SQLAlchemy: docs/cli.md, "Start-up time"); damaged files are
        still looked for, as on every open. None otherwise: open it with the store, which catches up
        or rebuilds. Such an index cannot write (it raises if asked to sync)."""
        state = read_state(path)
        mark = state.get("watermark")
        if (
            state.get("version") != INDEX_VERSION
            or state.get("analyzer") != ("stem" if stemming else "plain")
            or mark is None
            or state.get("dirty_since") is not None
            or reads.changed_after(datetime.fromisoformat(mark))
        ):
            return None
        index = cls(path, None, weights, catch_up=False, stemming=stemming)
        if index._writer.needs_rebuild:  # damaged files were wiped: only the store can rebuild it
            return None
        return index

    def follow_commits(self, *, force: bool = False) -> None:
        """Reload the reader if ``meta.json`` changed since it last loaded (always with ``force``).

        tantivy replaces ``meta.json`` atomically at each commit, from any process, so comparing its
        bytes (about 2 KB, read in microseconds) tells exactly whether there is a newer commit. A
        missing file (a repair wiping the folder) keeps the current segments until the new index is
        committed. Reloads are serialised: two racing reloads could otherwise install the older one last.
        """
        if not force and self._read_meta() in (None, self._meta_seen):
            return
        with self._reload_lock:
            meta = self._read_meta()  # read before the reload: the reader is at least this new
            if force or (meta is not None and meta != self._meta_seen):
                self._index.reload()
                self._meta_seen = meta

    def _read_meta(self) -> bytes | None:
        try:
            return (self.path / "meta.json").read_bytes()
        except OSError:
            return None

    def _wipe(self) -> None:
        for leftover in self.path.iterdir():
            if leftover.is_file():
                leftover.unlink()

    @property
    def weights(self) -> FieldWeights:
        return self.queries.weights

    @weights.setter
    def weights(self, value: FieldWeights) -> None:
        self.queries.weights = value

    # -- writing (see tantivy_writer) -------------------------------------------------------------------

    def reindex(self, paper_ids: Iterable[str]) -> int:
        """Replace the documents of ``paper_ids`` with the store's current papers (absent → removed)."""
        return self._writer.reindex(paper_ids)

    def index_papers(self, papers: Iterable[Paper], written_at: datetime | None) -> int:
        """Replace the documents of ``papers`` as the store just wrote them (at ``written_at``)."""
        return self._writer.index_papers(papers, written_at)

    def stage_papers(self, papers: Sequence[Paper], written_at: datetime) -> None:
        """Inside the store's transaction: replace these papers' documents in the writer, uncommitted."""
        self._writer.stage_papers(papers, written_at)

    def discard_staged(self) -> None:
        """The store's transaction failed: forget what :meth:`stage_papers` added."""
        self._writer.discard_staged()

    def on_papers_changed(self, changed: Sequence[str] | BatchResult) -> None:
        """Ingest listener: called after each committed batch with its result (or just changed ids)."""
        self._writer.on_papers_changed(changed)

    def flush(self) -> None:
        """Wait until every change handed to the listener is committed and searchable."""
        self._writer.flush()

    def catch_up(self) -> int:
        """Re-index papers modified since the index last followed the store."""
        return self._writer.catch_up()

    def rebuild(self, batch_size: int = 5000) -> int:
        """Index every paper from scratch (timed and logged: a node's cold start is this)."""
        started = time.monotonic()
        built = self._writer.rebuild(batch_size)
        log.info(
            "%s: keyword index built from the store: %s in %.1f s",
            self.path,
            count(built, "paper"),
            time.monotonic() - started,
        )
        return built

    def follow_store(self, overlap_seconds: float = FOLLOW_OVERLAP_SECONDS) -> int:
        """Add what other nodes wrote to a PostgreSQL store since the last look, then let the writer lock
        go; returns how many papers were (re-)indexed (see :meth:`TantivyWriter.follow`)."""
        try:
            return self._writer.follow(timedelta(seconds=overlap_seconds))
        finally:
            self._writer.release()

    def close(self) -> None:
        """Finish queued work, let merges finish, release the writer lock (other processes may write)."""
        self._writer.close()

    @_unavailable_when_damaged
    def __len__(self) -> int:
        self._writer.settle()
        self.follow_commits()
        return int(self._index.searcher().num_docs)

    # -- queries (see tantivy_query) --------------------------------------------------------------------

    def build_query(self, query: ParsedQuery) -> tantivy.Query | None:
        """The tantivy query for ``query``, or None when nothing in it can match."""
        return self.queries.build(query)

    @_unavailable_when_damaged
    def search(self, query: ParsedQuery, k: int) -> list[ScoredId]:
        return self._top(self.queries.build(query), k)

    @_unavailable_when_damaged
    def more_like_this(
        self,
        title: str,
        abstract: str,
        k: int,
        filters: SearchFilters | None = None,
        *,
        max_terms: int = 25,
    ) -> list[ScoredId]:
        """A more-like-this query on the paper's text (see TantivyQueries.more_like_this)."""
        if k <= 0:
            return []
        self._writer.settle()
        self.follow_commits()
        searcher = self._index.searcher()
        return self._top(self.queries.more_like_this(title, abstract, filters, max_terms, searcher), k)

    def _top(self, tq: tantivy.Query | None, k: int) -> list[ScoredId]:
        if tq is None or k <= 0:
            return []
        self._writer.settle()
        self.follow_commits()
        searcher = self._index.searcher()
        result = searcher.search(tq, limit=int(k), count=False)
        hits = [(score, searcher.doc(addr)["id"][0]) for score, addr in result.hits]
        hits.sort(key=lambda h: (-h[0], h[1]))  # stable order for equal scores
        return [ScoredId(pid, float(score)) for score, pid in hits]

    def highlight(self, query: ParsedQuery, text: str) -> list[Span]:
        """Tokens of ``text`` whose analysed form (stem) equals a query term's, and phrase runs."""
        return self.queries.highlight(query, text)
