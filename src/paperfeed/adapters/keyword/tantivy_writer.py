"""The tantivy index's writer: the document layout, and keeping the index in step with the paper store.

The store stays the source of truth; the index follows it:

* an import (:class:`~paperfeed.services.ingest.IngestService`) keeps it in step batch by batch: inside
  each batch's transaction :meth:`TantivyWriter.stage_papers` hands the papers as the store will write
  them to tantivy's indexing thread, which analyses them while SQLite writes the rows; once the store has
  committed, :meth:`~TantivyWriter.on_papers_changed` commits them too, so a paper is searchable (from
  any process) as soon as its batch is done; a failed batch's staged documents are rolled back. Called
  with bare ids (or a result nothing was staged for), it re-indexes those papers on a background thread
  (batches that queued up meanwhile are committed together; a search in the same process first waits
  for that queue, and :meth:`~TantivyWriter.close` flushes it);
* ``state.json`` records the newest ``papers.modified_at`` indexed; on open, papers modified since then
  (a crash between the store's commit and ours, or a writer that ran without this listener) are
  re-indexed (:meth:`~TantivyWriter.catch_up`);
* :meth:`~TantivyWriter.rebuild` re-reads everything (deletions in the store are only picked up by a
  rebuild);
* :meth:`~TantivyWriter.follow` is how a node's index follows a PostgreSQL store that other nodes write
  (no listener of theirs reaches this folder): it re-reads papers modified since the watermark minus an
  overlap, because ``modified_at`` is stamped by the writing process before its transaction commits, so
  a transaction that commits late, or a node whose clock lags, can add rows *below* a watermark already
  passed. Papers already indexed at the same ``modified_at`` are skipped, so an idle look costs one
  indexed ``count``/``max`` query.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tantivy

from paperfeed.domain.ingest import BatchResult
from paperfeed.domain.models import Paper
from paperfeed.domain.wording import count

from .folding import fold

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["EPOCH", "FIELDS", "INDEX_VERSION", "KeywordIndexBusy", "TantivyWriter", "read_state", "schema"]

log = logging.getLogger(__name__)

INDEX_VERSION = "3"  # bump when the schema or analyzer changes: an older index is then rebuilt
EPOCH = date(1970, 1, 1)
_CHUNK = 900
FIELDS = ("text", "title", "authors")  # text = title + abstract (see _document)
# A change handed to the indexing thread: ids to re-read from the store, or papers as stored + their time.
_Change = list[str] | tuple[list[Paper], datetime | None]


def schema(tokenizer: str) -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    for name in FIELDS:
        sb.add_text_field(name, tokenizer_name=tokenizer)  # positions: phrase queries
    sb.add_text_field("cat", tokenizer_name="raw")
    sb.add_integer_field("day", indexed=True, fast=True)  # published, days since 1970-01-01
    sb.add_boolean_field("code", indexed=True)
    return sb.build()


def _day(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):  # raw SQLite text, should a driver hand it over untyped
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime):
        value = (value if value.tzinfo is None else value.astimezone(UTC)).date()
    return int((value - EPOCH).days)


def _columns() -> tuple[Any, ...]:
    """The columns a document is made of. SQLAlchemy and the store's tables are imported by the methods
    that read the store only: a search opens an index that is current without them (docs/cli.md)."""
    from paperfeed.adapters.store.schema import papers

    return (
        papers.c.id,
        papers.c.title,
        papers.c.abstract,
        papers.c.authors,
        papers.c.categories,
        papers.c.published,
        papers.c.github_repo,
    )


class KeywordIndexBusy(RuntimeError):
    """Another process holds this index's writer lock."""


def read_state(path: Path) -> dict[str, str]:
    """The index's ``state.json`` (version, analyzer, watermark, dirty_since); empty when unreadable."""
    try:
        data = json.loads((path / "state.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class TantivyWriter:
    """The one writer of a tantivy index in this process, syncing it with the store (see the module)."""

    def __init__(
        self,
        path: Path,
        engine: Engine | None,
        index: tantivy.Index,
        *,
        reload: Callable[[], None],
        analyzer_name: str,
        heap_size: int,
        rebuild_heap_size: int,
        writer_threads: int,
        background: bool,
        needs_rebuild: bool,
    ) -> None:
        self.path = path
        self.engine = engine
        self._index = index
        self._reload = reload  # after each commit: searches in this process see it at once
        self._analyzer_name = analyzer_name
        self._heap_size = heap_size
        self._rebuild_heap_size = max(heap_size, rebuild_heap_size)
        self._writer_threads = writer_threads
        self._lock = threading.RLock()
        self._writer: Any = None
        self._background = background
        self._pending: queue.Queue[_Change | None] = queue.Queue(maxsize=16)
        self._worker: threading.Thread | None = None
        self._staged: bool | None = None  # papers staged in the writer (False: could not, lock busy)
        self._failure: BaseException | None = None
        self._needs_rebuild = needs_rebuild  # damaged files were wiped: the next reindex/catch-up rebuilds
        self._followed: dict[str, datetime] = {}  # follow(): papers of the overlap window indexed, by stamp
        self._window: tuple[int, datetime | None] | None = None  # follow(): the window's last count, max

    @property
    def needs_rebuild(self) -> bool:
        """Damaged files were wiped on open: only a rebuild from the store brings the index back."""
        return self._needs_rebuild

    def _store(self) -> Engine:
        """The store's engine; an index opened for searching only has none (and never writes)."""
        if self.engine is None:
            raise RuntimeError(f"{self.path}: keyword index opened for searching only; it cannot sync")
        return self.engine

    # -- state --------------------------------------------------------------------------------------

    @property
    def _state_file(self) -> Path:
        return self.path / "state.json"

    def _write_state(
        self, watermark: datetime | None, *, dirty_since: datetime | None = None, clean: bool = False
    ) -> None:
        """``watermark`` only moves forward; ``dirty_since`` (changes another process's lock kept us from
        indexing) only moves back, until a catch-up covering it clears it (``clean``)."""
        state = read_state(self.path)
        state["version"] = INDEX_VERSION
        state["analyzer"] = self._analyzer_name
        if watermark is not None:
            mark = watermark.isoformat()
            if state.get("watermark") is None or mark > state["watermark"]:
                state["watermark"] = mark
        if dirty_since is not None:
            mark = dirty_since.isoformat()
            if state.get("dirty_since") is None or mark < state["dirty_since"]:
                state["dirty_since"] = mark
        if clean:
            state.pop("dirty_since", None)
        # unique per call: two writers of one process (an app and a CLI command, threads) must not share it
        tmp = self._state_file.with_suffix(f".{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self._state_file)

    # -- writing ------------------------------------------------------------------------------------

    def _writer_now(self, heap_size: int | None = None) -> Any:
        """The open writer, or a new one with ``heap_size`` (default: the everyday heap)."""
        if self._writer is None:
            heap = heap_size or self._heap_size
            try:
                self._writer = self._index.writer(heap_size=heap, num_threads=self._writer_threads)
            except ValueError as exc:
                if "LockBusy" not in str(exc):
                    raise
                raise KeywordIndexBusy(
                    f"{self.path}: another process is writing this keyword index (only one writer at a time)"
                ) from exc
        return self._writer

    def _document(self, row: Any) -> tantivy.Document:
        doc = tantivy.Document()
        doc.add_text("id", row.id)
        title = fold(row.title, "latin")
        doc.add_text("text", title)
        doc.add_text("text", fold(row.abstract, "latin"))
        doc.add_text("title", title)
        for name in row.authors:
            doc.add_text("authors", fold(name, "latin"))
        for cat in row.categories:
            doc.add_text("cat", cat)
        day = _day(row.published)
        if day is not None:
            doc.add_integer("day", day)
        doc.add_boolean("code", row.github_repo is not None)
        return doc

    def _rows(self, ids: Sequence[str]) -> Iterator[Any]:
        from sqlalchemy import select

        from paperfeed.adapters.store.schema import papers

        with self._store().connect() as conn:
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                query = select(*_columns(), papers.c.modified_at).where(papers.c.id.in_(chunk))
                yield from conn.execute(query)

    def reindex(self, paper_ids: Iterable[str]) -> int:
        """Replace the documents of ``paper_ids`` with the store's current papers (absent → removed).

        If another process holds the writer, the papers are marked for the next catch-up instead (see
        ``dirty_since``) and 0 is returned: the store has them, the index will follow.
        """
        if self._needs_rebuild:  # opened without catch-up on damaged files that were wiped
            return self.rebuild()
        ids = list(dict.fromkeys(paper_ids))
        if not ids:
            return 0
        with self._lock:
            rows = list(self._rows(ids))
            stamps = [r.modified_at for r in rows if r.modified_at is not None]
            return self._replace(ids, rows, stamps)

    def index_papers(self, papers: Iterable[Paper], written_at: datetime | None) -> int:
        """Replace the documents of ``papers`` as the store just wrote them (at ``written_at``)."""
        latest = {p.id: p for p in papers}
        with self._lock:
            return self._replace(list(latest), latest.values(), [written_at] if written_at else [])

    def _replace(self, ids: list[str], docs: Iterable[Any], stamps: list[datetime]) -> int:
        """Delete ``ids``, add ``docs`` (papers or store rows), commit; ``stamps``: their modified_at."""
        if not ids:
            return 0
        try:
            writer = self._writer_now()
        except KeywordIndexBusy as exc:
            if stamps:
                self._write_state(None, dirty_since=min(stamps))
            log.warning("%s; %s left for the next catch-up", exc, count(len(ids), "changed paper"))
            return 0
        for pid in ids:
            writer.delete_documents_by_term("id", pid)
        for doc in docs:
            writer.add_document(self._document(doc))
        writer.commit()
        self._reload()
        self._write_state(max(stamps) if stamps else None)
        return len(ids)

    def stage_papers(self, papers: Sequence[Paper], written_at: datetime) -> None:
        """Inside the store's transaction: replace these papers' documents in the writer, uncommitted.

        tantivy's indexing thread analyses them while the store writes its rows; :meth:`on_papers_changed`
        commits them once the store has committed, :meth:`discard_staged` drops them if it did not.
        """
        self._raise_failure()
        self.settle()  # earlier changes first
        with self._lock:
            try:
                writer = self._writer_now()
            except KeywordIndexBusy as exc:
                self._write_state(None, dirty_since=written_at)
                log.warning("%s; %s left for the next catch-up", exc, count(len(papers), "changed paper"))
                self._staged = False
                return
            for paper in papers:
                writer.delete_documents_by_term("id", paper.id)
            for paper in papers:
                writer.add_document(self._document(paper))
            self._staged = True

    def discard_staged(self) -> None:
        """The store's transaction failed: forget what :meth:`stage_papers` added."""
        staged, self._staged = self._staged, None
        if staged:
            with self._lock:
                self._writer_now().rollback()

    def on_papers_changed(self, changed: Sequence[str] | BatchResult) -> None:
        """Ingest listener: called after each committed batch with its result (or just changed ids).

        What :meth:`stage_papers` staged is committed now, before this returns. Otherwise a
        :class:`BatchResult` carries the papers exactly as stored, indexed without being read back from
        the store; bare ids are re-read.
        """
        self._raise_failure()
        staged, self._staged = self._staged, None
        if staged is not None and isinstance(changed, BatchResult):
            if staged:
                with self._lock:
                    self._writer_now().commit()
                    self._reload()
                    self._write_state(changed.written_at)
            return
        if isinstance(changed, BatchResult):
            item: _Change = (list(changed.changed), changed.written_at)
        else:
            item = list(changed)
        if not self._background:
            self._apply([item])
            return
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="tantivy-indexer", daemon=True)
            self._worker.start()
        self._pending.put(item)  # blocks while 16 batches wait: bounded memory, back-pressure

    def _apply(self, items: Sequence[_Change]) -> None:
        """Index queued changes in one commit; later ones win, and re-read ids win over papers."""
        papers: dict[str, Paper] = {}
        stamps: list[datetime] = []
        ids: list[str] = []
        for item in items:
            if isinstance(item, tuple):
                papers.update((p.id, p) for p in item[0])
                if item[1] is not None:
                    stamps.append(item[1])
            else:
                ids.extend(item)
        with self._lock:
            if ids:
                ids = list(dict.fromkeys(ids))
                rows = list(self._rows(ids))
                stamps.extend(r.modified_at for r in rows if r.modified_at is not None)
                for pid in ids:
                    papers.pop(pid, None)
                self._replace([*papers, *ids], [*papers.values(), *rows], stamps)
            else:
                self._replace(list(papers), papers.values(), stamps)

    def _work(self) -> None:
        while True:
            item = self._pending.get()
            if item is None:
                self._pending.task_done()
                return
            items, stop = [item], False
            while True:  # fell behind: take whatever else is queued into the same commit
                try:
                    more = self._pending.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                items.append(more)
            taken = len(items) + stop
            try:
                if self._failure is None:
                    self._apply(items)
            except BaseException as exc:  # surfaced to the importing thread by flush/next listener call
                self._failure = exc
            finally:
                for _ in range(taken):
                    self._pending.task_done()
            if stop:
                return

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise RuntimeError(f"{self.path}: keyword indexing failed: {failure}") from failure

    def flush(self) -> None:
        """Wait until every change handed to the listener is committed and searchable."""
        if self._worker is not None:
            self._pending.join()
        self._raise_failure()

    def catch_up(self) -> int:
        """Re-index papers modified after the last indexed change, and since the first change another
        process's writer lock kept from the index (``dirty_since``, inclusive).

        The watermark is the newest ``modified_at`` already indexed, so it is exclusive: a bulk write
        gives many papers one timestamp (819k at the 1M bench), and ``>=`` re-indexed all of them at
        every start, fragmenting the index into new segments each time.
        """
        from sqlalchemy import select

        from paperfeed.adapters.store.schema import papers

        if self._needs_rebuild:
            return self.rebuild()
        state = read_state(self.path)
        mark, dirty = state.get("watermark"), state.get("dirty_since")
        if dirty is not None and (mark is None or dirty <= mark):
            condition = papers.c.modified_at >= datetime.fromisoformat(dirty)
        elif mark is not None:
            condition = papers.c.modified_at > datetime.fromisoformat(mark)
        else:
            return 0
        with self._store().connect() as conn:
            ids = list(conn.execute(select(papers.c.id).where(condition)).scalars())
        count = 0
        for start in range(0, len(ids), 5000):
            count += self.reindex(ids[start : start + 5000])
        if count == len(ids):
            self._write_state(None, clean=True)
        return count

    def follow(self, overlap: timedelta) -> int:
        """Index papers another node wrote since the watermark (minus ``overlap``); see the module.

        Returns how many papers were (re-)indexed. A missing watermark (or wiped damaged files) means a
        full rebuild. If another process on this node holds the writer, nothing is recorded as followed,
        so the next look tries again.
        """
        from sqlalchemy import func, select

        from paperfeed.adapters.store.schema import papers

        if self._needs_rebuild or read_state(self.path).get("watermark") is None:
            self._followed.clear()
            self._window = None
            return self.rebuild()
        mark = datetime.fromisoformat(read_state(self.path)["watermark"])
        since = mark - overlap
        window = papers.c.modified_at > since
        with self._store().connect() as conn:
            look = select(func.count(), func.max(papers.c.modified_at)).where(window)
            count, newest = conn.execute(look).one()
            if self._window == (int(count), newest):
                return 0  # nothing committed in the window since the last look
            rows = conn.execute(select(papers.c.id, papers.c.modified_at).where(window)).all()
        todo = [r.id for r in rows if self._followed.get(r.id) != r.modified_at]
        done = 0
        for start in range(0, len(todo), 5000):
            done += self.reindex(todo[start : start + 5000])
        if done < len(todo):
            return done  # the writer is busy here: look again next time
        self._followed = {r.id: r.modified_at for r in rows}
        self._window = (int(count), newest)
        return done

    def release(self) -> None:
        """Let the writer lock go when nothing is staged or queued (another process of this node may
        write the index, e.g. ``paperfeed import``)."""
        with self._lock:
            if self._writer is None or self._staged is not None or not self._pending.empty():
                return
            writer, self._writer = self._writer, None
            writer.wait_merging_threads()

    def rebuild(self, batch_size: int = 5000) -> int:
        """Index every paper from scratch (keyset pages by id).

        The writer gets a large indexing heap (``rebuild_heap_size``, 1 GB) for this: tantivy writes a
        segment each time the heap fills, and a 1M-paper index rebuilt with the everyday 64 MB heap
        ended in 18 segments, which top-k pruning searches one by one (1M papers, k=100: p50 6.4 vs
        4.3 ms with one segment; the build also took 122 s instead of 272). Memory grows with the papers
        up to that heap, then the writer returns to the small one.
        """
        from sqlalchemy import func, select

        from paperfeed.adapters.store.schema import papers

        with self._lock:
            with self._store().connect() as conn:
                newest = conn.execute(select(func.max(papers.c.modified_at))).scalar()
            if self._writer is not None:
                self._writer.wait_merging_threads()
                self._writer = None
            writer = self._writer_now(self._rebuild_heap_size)
            writer.delete_all_documents()
            count = 0
            last = ""
            while True:
                with self._store().connect() as conn:
                    rows = conn.execute(
                        select(*_columns()).where(papers.c.id > last).order_by(papers.c.id).limit(batch_size)
                    ).all()
                if not rows:
                    break
                for row in rows:
                    writer.add_document(self._document(row))
                count += len(rows)
                last = rows[-1].id
            writer.commit()
            writer.wait_merging_threads()  # gives the large heap back; the next write opens a small one
            self._writer = None
            self._reload()
            # empty store: still mark the index as complete
            self._write_state(newest or datetime(1970, 1, 1, tzinfo=UTC), clean=True)
            self._needs_rebuild = False
        return count

    def close(self) -> None:
        """Finish queued work, let merges finish, release the writer lock (other processes may write)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            self._pending.put(None)
            worker.join()
        with self._lock:
            if self._writer is not None:
                writer, self._writer = self._writer, None
                writer.wait_merging_threads()
        self._raise_failure()

    def settle(self) -> None:
        """Read-your-writes in this process: wait for changes already handed to the listener."""
        if self._worker is not None:
            self._pending.join()
