"""Keyword search with tantivy: a derived index in ``<data_dir>/keyword/``, rebuilt from the store at will.

Why: at 1M abstracts FTS5 needs ~200 ms for a common-word OR query, tantivy a few ms (see
bench/keyword_speed.py). The store stays the source of truth; this index follows it:

* an import (:class:`~paperfeed.services.ingest.IngestService`) keeps it in step batch by batch: inside
  each batch's transaction :meth:`TantivyKeywordIndex.stage_papers` hands the papers as the store will
  write them to tantivy's indexing thread, which analyses them while SQLite writes the rows; once the
  store has committed, :meth:`~TantivyKeywordIndex.on_papers_changed` commits them too, so a paper is
  searchable (from any process) as soon as its batch is done; a failed batch's staged documents are
  rolled back. Called with bare ids (or a result nothing was staged for), it re-indexes those papers
  on a background thread (batches that queued up meanwhile are committed together; a search in the
  same process first waits for that queue, and :meth:`close` flushes it);
* ``state.json`` records the newest ``papers.modified_at`` indexed; on open, papers modified since then
  (a crash between the store's commit and ours, or a writer that ran without this listener) are
  re-indexed, and a missing or incompatible index is rebuilt in full;
* :meth:`rebuild` re-reads everything (deletions in the store are only picked up by a rebuild).

Queries are built from :class:`~paperfeed.domain.search.ParsedQuery` with tantivy's query objects (never
its query-string parser), tokenised by the same analyzer as the documents.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import queue
import re
import struct
import threading
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import tantivy
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from paperfeed.adapters.store.schema import papers
from paperfeed.domain.ingest import BatchResult
from paperfeed.domain.models import Paper
from paperfeed.domain.search import KeywordIndexUnavailable, ParsedQuery, ScoredId, SearchFilters, Span

from .fts5 import FieldWeights

__all__ = ["TANTIVY_WEIGHTS", "KeywordIndexBusy", "TantivyKeywordIndex", "analyzer", "damaged_files", "fold"]

log = logging.getLogger(__name__)

INDEX_VERSION = "3"  # bump when the schema or analyzer changes: an older index is then rebuilt
_EPOCH = date(1970, 1, 1)
_CHUNK = 900
_FIELDS = ("text", "title", "authors")  # text = title + abstract (see _document)
# A change handed to the indexing thread: ids to re-read from the store, or papers as stored + their time.
_Change = list[str] | tuple[list[Paper], datetime | None]


# Scoring is BM25 on a catch-all ``text`` field (title + abstract, weight ``abstract``) plus ``title``
# times the BM25 of the title field alone, plus ``authors`` times the authors field's: a title match
# always adds to a text match, so title > abstract > authors holds whatever the field lengths (tantivy has
# no BM25F; summing separate title and abstract scores let short titles swamp everything). Chosen on
# SciFact train with bench/keyword_quality.py (title 0.2: train nDCG@10 0.697, test 0.692).
TANTIVY_WEIGHTS = FieldWeights(title=0.2, abstract=1.0, authors=0.2)


def analyzer(stemming: bool = True, *, stop_words: bool = False) -> tantivy.TextAnalyzer:
    """Query-side twin of tantivy's built-in ``en_stem`` (``default`` without stemming) analyzer: runs of
    letters/digits, tokens over 40 bytes dropped, lower-cased, English Snowball stems.

    Documents are analysed by the built-in one, which costs ~25% less CPU than the same chain registered
    from Python; accents are folded beforehand by :func:`fold`.

    ``stop_words`` adds tantivy's English stop-word list, for a query's loose words only: "the", "of",
    "and" match nearly every abstract and add next to nothing to a BM25 ranking, yet each one is a long
    posting list that defeats top-k pruning (at 1M papers, dropping them from 3-6-word title queries took
    the keyword leg, k=100, from p50 11 / p99 44 ms to 4.3 / 18.5 ms). Phrases keep them ("the the" is a
    band), and a query of nothing but stop words still searches for them.
    """
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
    )
    if stop_words:
        builder = builder.filter(tantivy.Filter.stopword("english"))
    if stemming:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()


_POSSESSIVE = re.compile(r"['\u2019]s\b", re.IGNORECASE)


def _fold_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for cp in range(0x80, 0x250):  # Latin-1 Supplement, Latin Extended-A and -B
        base = "".join(c for c in unicodedata.normalize("NFKD", chr(cp)) if not unicodedata.combining(c))
        if len(base) == 1 and base.isascii() and base != chr(cp):
            table[cp] = base
    # letters with a stroke have no Unicode decomposition
    table.update({ord(a): b for a, b in zip("ŁłØøĐđĦħıŦŧ", "LlOoDdHhiTt", strict=True)})
    return table


_FOLD = _fold_table()


def fold(text: str) -> str:
    """Accented Latin letters to their base letter ("Naïve résumé" → "Naive resume"), one character for
    one, so offsets into the folded text are offsets into the original (highlighting relies on it)."""
    return text if text.isascii() else text.translate(_FOLD)


def _schema(tokenizer: str) -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    for name in _FIELDS:
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
    return int((value - _EPOCH).days)


_COLUMNS = (
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


# tantivy's file footer: <body> <JSON {"version": ..., "crc": CRC32(body)}> <u32 JSON length> <u32 magic>
_FOOTER_MAGIC = 1337


def _tantivy_failure(exc: BaseException) -> bool:
    """How tantivy reports damaged files: a ValueError, or a Rust panic, which pyo3 raises as
    ``pyo3_runtime.PanicException``, a BaseException (so ``except Exception`` does not see it)."""
    return isinstance(exc, ValueError) or type(exc).__name__ == "PanicException"


def _file_problem(file: Path) -> str | None:
    """Why a segment file fails tantivy's own footer check (magic number, CRC32 of the body), or None.

    tantivy writes the checksum but never verifies it when opening; damaged postings then panic in a
    query (catchable) or, worse, in the writer's merge threads, which aborts the whole process.
    """
    with file.open("rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size < 8:
            return "shorter than tantivy's footer"
        fh.seek(size - 8)
        length, magic = struct.unpack("<II", fh.read(8))
        if magic != _FOOTER_MAGIC or length + 8 > size:
            return "no tantivy footer"
        fh.seek(size - 8 - length)
        try:
            expected = json.loads(fh.read(length))["crc"]
        except (ValueError, KeyError, TypeError):
            return "unreadable footer"
        fh.seek(0)
        remaining, crc = size - 8 - length, 0
        while remaining > 0:
            chunk = fh.read(min(1 << 20, remaining))
            if not chunk:
                break
            crc = zlib.crc32(chunk, crc)
            remaining -= len(chunk)
        return None if crc == expected else "checksum mismatch"


_CHECKED = "checked.json"  # segment files whose checksum held: name -> [size, mtime_ns]


def damaged_files(path: Path, *, trust_checked: bool = True) -> list[str]:
    """Problems with the files of the index committed in ``path`` (empty: all check out, or no index).

    Reading every segment file costs ~0.1 s for the 96 MB index of 200k papers and ~0.6 s at 1M (1 GB,
    page cache warm), so files that passed before, unchanged since (size and mtime, in ``checked.json``;
    segment files are never rewritten), are skipped unless ``trust_checked`` is False (``paperfeed
    check``). A segment merged away by another process meanwhile is not damage: the listing is re-read.
    """
    checked: dict[str, list[int]] = {}
    if trust_checked:
        try:
            loaded = json.loads((path / _CHECKED).read_text())
            checked = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            pass
    passed: dict[str, list[int]] = {}
    problems: list[str] = []
    for _attempt in range(3):
        try:
            meta_text = (path / "meta.json").read_text()
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            return [f"meta.json: {exc}"]
        try:
            segments = json.loads(meta_text)["segments"]
            names = os.listdir(path)
            problems = []
            for segment in segments:
                prefix = str(segment["segment_id"]).replace("-", "")
                deletes = segment.get("deletes")
                wanted = f"{prefix}.{deletes['opstamp']}.del" if deletes else None
                for name in names:
                    if not name.startswith(prefix + ".") or (name.endswith(".del") and name != wanted):
                        continue
                    try:
                        stat = (path / name).stat()
                        seen = [stat.st_size, stat.st_mtime_ns]
                        problem = None if checked.get(name) == seen else _file_problem(path / name)
                    except FileNotFoundError:
                        problem = "missing"
                    if problem:
                        problems.append(f"{name}: {problem}")
                    else:
                        passed[name] = seen
        except (ValueError, KeyError, TypeError) as exc:
            return [f"meta.json: unreadable ({exc})"]
        try:
            unchanged = (path / "meta.json").read_text() == meta_text
        except OSError:
            unchanged = False
        if not problems or unchanged:
            break
    if trust_checked and not problems and passed != checked:
        tmp = path / f"{_CHECKED}.{os.getpid()}.tmp"
        try:
            tmp.write_text(json.dumps(passed))
            os.replace(tmp, path / _CHECKED)
        except OSError:
            pass  # a read-only folder: check again next time
    return problems


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _unavailable_when_damaged(
    method: Callable[Concatenate[TantivyKeywordIndex, _P], _R],
) -> Callable[Concatenate[TantivyKeywordIndex, _P], _R]:
    """Turn tantivy's damaged-file failures (a ValueError or a panic) into
    :class:`~paperfeed.domain.search.KeywordIndexUnavailable`, which the search service degrades on.

    Before giving up it reloads the index once and retries: if another process (``paperfeed check
    --repair``) has rebuilt the files meanwhile, this one recovers without a restart.
    """

    def guarded(self: TantivyKeywordIndex, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except BaseException as first:
            if not _tantivy_failure(first):
                raise
        try:
            self._index.reload()
            return method(self, *args, **kwargs)
        except BaseException as exc:
            if not _tantivy_failure(exc):
                raise
            message = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            log.error("%s: keyword index unreadable (%s); run `paperfeed check --repair`", self.path, message)
            raise KeywordIndexUnavailable(
                f"{self.path}: the keyword index cannot be read ({message}); "
                "`paperfeed check --repair` rebuilds it"
            ) from exc

    functools.update_wrapper(guarded, method)  # name and docstring (the decorator form confuses mypy)
    return guarded


class TantivyKeywordIndex:
    """:class:`~paperfeed.domain.search.KeywordIndex` on a tantivy index derived from the paper store."""

    name = "tantivy"

    def __init__(
        self,
        path: Path,
        engine: Engine,
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
        self.weights = weights or TANTIVY_WEIGHTS
        self._heap_size = heap_size
        self._rebuild_heap_size = max(heap_size, rebuild_heap_size)
        self._writer_threads = writer_threads
        self._analyzer = analyzer(stemming)
        self._word_analyzer = analyzer(stemming, stop_words=True)
        self._highlight_cache: dict[ParsedQuery, tuple[frozenset[str], tuple[tuple[str, ...], ...]]] = {}
        self._analyzer_name = "stem" if stemming else "plain"
        self._lock = threading.RLock()
        self._writer: Any = None
        self._background = background
        self._pending: queue.Queue[_Change | None] = queue.Queue(maxsize=16)
        self._worker: threading.Thread | None = None
        self._staged: bool | None = None  # papers staged in the writer (False: could not, lock busy)
        self._failure: BaseException | None = None
        self._needs_rebuild = False  # damaged files were wiped: the next reindex/catch-up is a rebuild
        path.mkdir(parents=True, exist_ok=True)
        state = self._read_state()
        fresh = state.get("version") != INDEX_VERSION or state.get("analyzer") != self._analyzer_name
        if fresh:
            self._wipe()  # an index of another version: start over
        elif damaged := damaged_files(path):  # derived data: rebuild it rather than let tantivy panic
            problems = "; ".join(damaged[:3])
            log.warning("%s: keyword index damaged (%s); rebuilding it from the store", path, problems)
            self._wipe()
            fresh = self._needs_rebuild = True
        self._schema = _schema("en_stem" if stemming else "default")
        try:
            self._index = tantivy.Index(self._schema, path=str(path), reuse=not fresh)
        except BaseException as exc:  # damaged files (e.g. a disk filled up mid-commit): rebuild them
            if not _tantivy_failure(exc):
                raise
            log.warning("%s: keyword index unreadable (%s); rebuilding it from the store", path, exc)
            self._wipe()
            fresh = self._needs_rebuild = True
            self._index = tantivy.Index(self._schema, path=str(path), reuse=False)
        if catch_up:
            try:
                if fresh or "watermark" not in state:
                    self.rebuild()
                else:
                    self.catch_up()
            except KeywordIndexBusy:
                pass  # the process holding the writer is updating the index; it catches up itself
            self.close()  # a reader must not keep the writer lock from the process that imports

    def _wipe(self) -> None:
        for leftover in self.path.iterdir():
            if leftover.is_file():
                leftover.unlink()

    # -- state --------------------------------------------------------------------------------------

    @property
    def _state_file(self) -> Path:
        return self.path / "state.json"

    def _read_state(self) -> dict[str, str]:
        try:
            data = json.loads(self._state_file.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_state(
        self, watermark: datetime | None, *, dirty_since: datetime | None = None, clean: bool = False
    ) -> None:
        """``watermark`` only moves forward; ``dirty_since`` (changes another process's lock kept us from
        indexing) only moves back, until a catch-up covering it clears it (``clean``)."""
        state = self._read_state()
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
        tmp = self._state_file.with_suffix(f".{os.getpid()}.tmp")
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
        title = fold(row.title)
        doc.add_text("text", title)
        doc.add_text("text", fold(row.abstract))
        doc.add_text("title", title)
        for name in row.authors:
            doc.add_text("authors", fold(name))
        for cat in row.categories:
            doc.add_text("cat", cat)
        day = _day(row.published)
        if day is not None:
            doc.add_integer("day", day)
        doc.add_boolean("code", row.github_repo is not None)
        return doc

    def _rows(self, ids: Sequence[str]) -> Iterator[Any]:
        with self.engine.connect() as conn:
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                yield from conn.execute(select(*_COLUMNS, papers.c.modified_at).where(papers.c.id.in_(chunk)))

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
            log.warning("%s; %d changed paper(s) left for the next catch-up", exc, len(ids))
            return 0
        for pid in ids:
            writer.delete_documents_by_term("id", pid)
        for doc in docs:
            writer.add_document(self._document(doc))
        writer.commit()
        self._index.reload()
        self._write_state(max(stamps) if stamps else None)
        return len(ids)

    def stage_papers(self, papers: Sequence[Paper], written_at: datetime) -> None:
        """Inside the store's transaction: replace these papers' documents in the writer, uncommitted.

        tantivy's indexing thread analyses them while the store writes its rows; :meth:`on_papers_changed`
        commits them once the store has committed, :meth:`discard_staged` drops them if it did not.
        """
        self._raise_failure()
        self._settle()  # earlier changes first
        with self._lock:
            try:
                writer = self._writer_now()
            except KeywordIndexBusy as exc:
                self._write_state(None, dirty_since=written_at)
                log.warning("%s; %d changed paper(s) left for the next catch-up", exc, len(papers))
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
                    self._index.reload()
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
        if self._needs_rebuild:
            return self.rebuild()
        state = self._read_state()
        mark, dirty = state.get("watermark"), state.get("dirty_since")
        if dirty is not None and (mark is None or dirty <= mark):
            condition = papers.c.modified_at >= datetime.fromisoformat(dirty)
        elif mark is not None:
            condition = papers.c.modified_at > datetime.fromisoformat(mark)
        else:
            return 0
        with self.engine.connect() as conn:
            ids = list(conn.execute(select(papers.c.id).where(condition)).scalars())
        count = 0
        for start in range(0, len(ids), 5000):
            count += self.reindex(ids[start : start + 5000])
        if count == len(ids):
            self._write_state(None, clean=True)
        return count

    def rebuild(self, batch_size: int = 5000) -> int:
        """Index every paper from scratch (keyset pages by id).

        The writer gets a large indexing heap (``rebuild_heap_size``, 1 GB) for this: tantivy writes a
        segment each time the heap fills, and a 1M-paper index rebuilt with the everyday 64 MB heap
        ended in 18 segments, which top-k pruning searches one by one (1M papers, k=100: p50 6.4 vs
        4.3 ms with one segment; the build also took 122 s instead of 272). Memory grows with the papers
        up to that heap, then the writer returns to the small one.
        """
        with self._lock:
            with self.engine.connect() as conn:
                newest = conn.execute(select(func.max(papers.c.modified_at))).scalar()
            if self._writer is not None:
                self._writer.wait_merging_threads()
                self._writer = None
            writer = self._writer_now(self._rebuild_heap_size)
            writer.delete_all_documents()
            count = 0
            last = ""
            while True:
                with self.engine.connect() as conn:
                    rows = conn.execute(
                        select(*_COLUMNS).where(papers.c.id > last).order_by(papers.c.id).limit(batch_size)
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
            self._index.reload()
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

    def _settle(self) -> None:
        """Read-your-writes in this process: wait for changes already handed to the listener."""
        if self._worker is not None:
            self._pending.join()

    @_unavailable_when_damaged
    def __len__(self) -> int:
        self._settle()
        return int(self._index.searcher().num_docs)

    # -- queries ------------------------------------------------------------------------------------

    def _tokens(self, words: str) -> list[str]:
        return list(self._analyzer.analyze(fold(words)))

    def _word_tokens(self, query: ParsedQuery) -> list[list[str]]:
        """The analysed loose words, without stop words, single letters and possessive 's ("that's")
        unless nothing else is left to search for.

        A word that analyses into several tokens ("GPT-4", "state-of-the-art") becomes its content tokens
        as separate words ("gpt", "4"; "state", "art"): a phrase there would take the whole query off
        tantivy's pruned path and read position lists of common tokens (at 1M papers ~280 MB of them
        mapped in); papers with all the parts still rank first, and quotes keep the exact phrase.
        """
        words = [_POSSESSIVE.sub("", fold(term)) for term in query.terms]
        kept = [[t] for word in words for t in self._word_analyzer.analyze(word) if len(t) > 1 or t.isdigit()]
        if kept or query.phrases or query.authors:
            return kept
        return [tokens for word in words if (tokens := self._tokens(word))]

    def _match(self, field: str, tokens: Sequence[str]) -> tantivy.Query:
        if len(tokens) == 1:
            return tantivy.Query.term_query(self._schema, field, tokens[0])
        return tantivy.Query.phrase_query(self._schema, field, list(tokens))

    def _field_clauses(self, tokens: Sequence[str]) -> list[tuple[tantivy.Occur, tantivy.Query]]:
        """One boosted Should clause per weighted field: the weighted sum of the fields' BM25."""
        w = self.weights
        boosts = {"text": w.abstract, "title": w.title, "authors": w.authors}
        return [
            (tantivy.Occur.Should, tantivy.Query.boost_query(self._match(f, tokens), boosts[f]))
            for f in _FIELDS
            if boosts[f] > 0
        ]

    def _fields_query(self, tokens: Sequence[str]) -> tantivy.Query:
        """Match in any field; the score is the weighted sum of the fields' BM25 (see TANTIVY_WEIGHTS)."""
        return tantivy.Query.boolean_query(self._field_clauses(tokens))

    def _filter_queries(self, filters: SearchFilters) -> list[tantivy.Query]:
        out: list[tantivy.Query] = []
        if filters.date_from is not None or filters.date_to is not None:
            out.append(
                tantivy.Query.range_query(
                    self._schema,
                    "day",
                    tantivy.FieldType.Integer,
                    (filters.date_from - _EPOCH).days if filters.date_from else None,
                    (filters.date_to - _EPOCH).days if filters.date_to else None,
                )
            )
        if filters.categories:
            out.append(tantivy.Query.term_set_query(self._schema, "cat", list(filters.categories)))
        if filters.has_code is not None:
            out.append(tantivy.Query.term_query(self._schema, "code", filters.has_code))
        return out

    def build_query(self, query: ParsedQuery) -> tantivy.Query | None:
        """The tantivy query for ``query``, or None when nothing in it can match."""
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        filters = self._filter_queries(query.filters)
        must = False
        for phrase in query.phrases:
            tokens = self._tokens(" ".join(phrase))
            if tokens:
                clauses.append((tantivy.Occur.Must, self._fields_query(tokens)))
                must = True
        for name in query.authors:
            tokens = self._tokens(name)
            if tokens:
                clauses.append((tantivy.Occur.Must, self._match("authors", tokens)))
                must = True
        # The words' (term, field) clauses go into ONE flat disjunction, not a disjunction of per-word
        # disjunctions: the score is the same sum, but a flat union of term scorers is what tantivy's
        # block-max WAND prunes (top-k without scoring every match). At 1M papers it took 3-6-word
        # queries from p50 37 to 17 ms at k=100 (the bench/speed.py 1M index), with identical results.
        shoulds = []
        for tokens in self._word_tokens(query):
            shoulds.extend(self._field_clauses(tokens))
        if not must and not shoulds:
            return None
        if must:
            clauses.extend(shoulds)  # next to a Must, a Should only adds to the score
        elif not query.excluded and not filters:
            return tantivy.Query.boolean_query(shoulds)  # the plain OR query: pruned top-k
        else:
            clauses.append((tantivy.Occur.Must, tantivy.Query.boolean_query(shoulds)))
        for word in query.excluded:
            tokens = self._tokens(word)
            if tokens:
                for field in ("text", "authors"):
                    clauses.append((tantivy.Occur.MustNot, self._match(field, tokens)))
        for flt in filters:
            clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(flt, 0.0)))
        return tantivy.Query.boolean_query(clauses)

    @_unavailable_when_damaged
    def search(self, query: ParsedQuery, k: int) -> list[ScoredId]:
        tq = self.build_query(query)
        if tq is None or k <= 0:
            return []
        self._settle()
        searcher = self._index.searcher()
        result = searcher.search(tq, limit=int(k), count=False)
        hits = [(score, searcher.doc(addr)["id"][0]) for score, addr in result.hits]
        hits.sort(key=lambda h: (-h[0], h[1]))  # stable order for equal scores
        return [ScoredId(pid, float(score)) for score, pid in hits]

    def _highlight_terms(self, query: ParsedQuery) -> tuple[frozenset[str], tuple[tuple[str, ...], ...]]:
        """The query's single stems and multi-token runs, analysed once per query (a results page
        highlights twenty texts with the same query)."""
        found = self._highlight_cache.get(query)
        if found is None:
            singles: set[str] = set()
            sequences: list[tuple[str, ...]] = []
            for seq in [*self._word_tokens(query), *(self._tokens(" ".join(p)) for p in query.phrases)]:
                if len(seq) == 1:
                    singles.add(seq[0])
                elif seq:
                    sequences.append(tuple(seq))
            found = (frozenset(singles), tuple(sequences))
            if len(self._highlight_cache) >= 256:
                self._highlight_cache.clear()
            self._highlight_cache[query] = found
        return found

    def highlight(self, query: ParsedQuery, text: str) -> list[Span]:
        """Tokens of ``text`` whose analysed form (stem) equals a query term's, and phrase runs."""
        if not text:
            return []
        singles, sequences = self._highlight_terms(query)
        tokens = self._analyzer.pre_tokenize(fold(text)).tokens
        stems = [t.text for t in tokens]
        marked = [stem in singles for stem in stems]
        for seq in sequences:
            n, first = len(seq), seq[0]
            for i, stem in enumerate(stems):
                if stem == first and tuple(stems[i : i + n]) == seq:
                    marked[i : i + n] = [True] * n
        spans: list[Span] = []
        for i, token in enumerate(tokens):
            if not marked[i]:
                continue
            start, end = token.char_offset_from, token.char_offset_to
            if spans and i > 0 and marked[i - 1] and _joined(text, spans[-1].end, start):
                spans[-1] = Span(spans[-1].start, end)  # one span per phrase, as FTS5 gives
            else:
                spans.append(Span(start, end))
        return spans


def _joined(text: str, end: int, start: int) -> bool:
    return start >= end and not text[end:start].strip(" -")
