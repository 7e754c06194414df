"""BM25 over the papers' sentences with tantivy: ``<data_dir>/sentence-keyword/``, derived from the store.

One document per stored sentence: its text (English stems, positions for phrases), its paper's id, its
position among the paper's sentences, the content hash it was cut from, its role, and its paper's authors,
categories, day and code flag, so ``author:``, the filters and a role choice ("results only") are applied
inside the engine, before ranking. Queries are built by the papers' own
:class:`~.tantivy_query.TantivyQueries` (same analyzer, stop words and safe query building) on the
``text`` field alone.

The index follows ``paper_sentences`` by a ``(stamp, paper id)`` cursor kept in ``state.json``: the
indexer's sentence pass calls :meth:`TantivySentenceIndex.on_saved` after each stored batch, which
catches up (the batch just stored, and anything missed before it); a killed run leaves the cursor at
its last commit, so the next catch-up resumes there. Stale documents (a paper whose abstract changed
since its sentences were cut, until the pass redoes it; a deleted paper, until a rebuild) are dropped
at query time by the search service, which reads the current rows of the papers it shows.

Several processes open it; one writes at a time (tantivy's writer lock). Readers reload when
``meta.json`` changed, before each search, as the papers' index does.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import tantivy

from paperfeed.domain.evidence import EvidenceRow, EvidenceRows, IndexCheck, ScoredSentence
from paperfeed.domain.search import KeywordIndexUnavailable, ParsedQuery, Span
from paperfeed.domain.sentences import Role

from .folding import fold
from .tantivy_damage import damaged_files, tantivy_failure
from .tantivy_query import TantivyQueries
from .tantivy_writer import EPOCH
from .weights import FieldWeights

__all__ = ["SENTENCE_INDEX_VERSION", "SentenceIndexBusy", "TantivySentenceIndex"]

log = logging.getLogger(__name__)

SENTENCE_INDEX_VERSION = "1"  # bump when the schema or analyzer changes: an older index is rebuilt
# Only the text ranks: the papers' title and authors fields exist for the shared query builder (a phrase,
# ``author:``, ``-word``), with weight 0 in the ranking.
SENTENCE_WEIGHTS = FieldWeights(title=0.0, abstract=1.0, authors=0.0)
PAGE = 2000  # papers read from the store per catch-up step (one commit each)


class SentenceIndexBusy(RuntimeError):
    """Another process holds this index's writer lock."""


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    sb.add_integer_field("pos", stored=True, indexed=False)
    sb.add_text_field("hash", stored=True, tokenizer_name="raw")
    for name in ("text", "title", "authors"):
        sb.add_text_field(name, tokenizer_name="en_stem")
    sb.add_text_field("role", tokenizer_name="raw")
    sb.add_text_field("cat", tokenizer_name="raw")
    sb.add_integer_field("day", indexed=True, fast=True)
    sb.add_boolean_field("code", indexed=True)
    return sb.build()


@contextlib.contextmanager
def _opening(path: Path) -> Iterator[None]:
    """Take turns opening (and building) the index at ``path`` across this node's processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent / f".{path.name}.opening.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class TantivySentenceIndex:
    """:class:`~paperfeed.domain.evidence.SentenceKeywordIndex` on tantivy (see the module)."""

    name = "tantivy"

    def __init__(self, path: Path, rows: EvidenceRows, *, heap_size: int = 128_000_000) -> None:
        self.path = path
        self.rows = rows
        self._heap_size = heap_size
        self._lock = threading.RLock()
        self._writer: Any = None
        self._schema = _schema()
        with _opening(path):
            path.mkdir(parents=True, exist_ok=True)
            state = self._state()
            fresh = state.get("version") != SENTENCE_INDEX_VERSION
            if not fresh and (damaged := damaged_files(path)):
                log.warning("%s: sentence index damaged (%s); rebuilding it", path, "; ".join(damaged[:3]))
                fresh = True
            if fresh:
                self._wipe()
            try:
                self._index = tantivy.Index(self._schema, path=str(path), reuse=not fresh)
            except BaseException as exc:
                if not tantivy_failure(exc):
                    raise
                log.warning("%s: sentence index unreadable (%s); rebuilding it", path, exc)
                self._wipe()
                self._index = tantivy.Index(self._schema, path=str(path), reuse=False)
            if fresh or self._state().get("version") != SENTENCE_INDEX_VERSION:
                self._write_state(None)
        self._index.config_reader("manual")
        self._meta_seen = self._read_meta()
        self._reload_lock = threading.Lock()
        self.queries = TantivyQueries(self._schema, SENTENCE_WEIGHTS, stemming=True)

    # -- state ---------------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        try:
            data = json.loads((self.path / "state.json").read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_state(self, cursor: tuple[datetime, str] | None) -> None:
        state: dict[str, Any] = {"version": SENTENCE_INDEX_VERSION}
        if cursor is not None:
            state["watermark"] = [cursor[0].isoformat(), cursor[1]]
        tmp = self.path / f"state.json.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp"
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.path / "state.json")

    def watermark(self) -> tuple[datetime, str] | None:
        """The ``(stamp, paper id)`` of the last stored row indexed (None: nothing yet)."""
        found = self._state().get("watermark")
        if not (isinstance(found, list) and len(found) == 2):
            return None
        return datetime.fromisoformat(found[0]), str(found[1])

    def _wipe(self) -> None:
        for leftover in self.path.iterdir():
            if leftover.is_file():
                leftover.unlink()

    def _read_meta(self) -> bytes | None:
        try:
            return (self.path / "meta.json").read_bytes()
        except OSError:
            return None

    def follow_commits(self, *, force: bool = False) -> None:
        """Reload the reader if another process committed (``meta.json`` changed), as the papers' index."""
        if not force and self._read_meta() in (None, self._meta_seen):
            return
        with self._reload_lock:
            meta = self._read_meta()
            if force or (meta is not None and meta != self._meta_seen):
                self._index.reload()
                self._meta_seen = meta

    # -- writing ---------------------------------------------------------------------------------------

    def _writer_now(self) -> Any:
        if self._writer is None:
            try:
                self._writer = self._index.writer(heap_size=self._heap_size, num_threads=1)
            except ValueError as exc:
                if "LockBusy" not in str(exc):
                    raise
                raise SentenceIndexBusy(
                    f"{self.path}: another process is writing the sentence index"
                ) from exc
        return self._writer

    def _documents(self, row: EvidenceRow) -> Iterator[tantivy.Document]:
        authors = [fold(name, "latin") for name in row.authors]
        day = None if row.published is None else (row.published - EPOCH).days
        for position, sentence in enumerate(row.sentences):
            doc = tantivy.Document()
            doc.add_text("id", row.paper_id)
            doc.add_integer("pos", position)
            doc.add_text("hash", row.content_hash)
            doc.add_text("text", fold(sentence.text(row.abstract), "latin"))
            for name in authors:
                doc.add_text("authors", name)
            doc.add_text("role", sentence.role)
            for cat in row.categories:
                doc.add_text("cat", cat)
            if day is not None:
                doc.add_integer("day", day)
            doc.add_boolean("code", row.has_code)
            yield doc

    def _replace(self, rows: Sequence[EvidenceRow], cursor: tuple[datetime, str] | None) -> None:
        """One commit: these papers' documents replaced by their rows' sentences, then the cursor."""
        writer = self._writer_now()
        for row in rows:
            writer.delete_documents_by_term("id", row.paper_id)
        for row in rows:
            for doc in self._documents(row):
                writer.add_document(doc)
        writer.commit()
        self.follow_commits(force=True)
        if cursor is not None:
            self._write_state(cursor)

    def on_saved(self, paper_ids: Sequence[str]) -> None:
        """After a stored batch: catch up (that batch and anything stored before it and not indexed)."""
        if paper_ids:
            self.catch_up()

    def catch_up(self) -> int:
        """Index the rows stored after the cursor, a page per commit (resumable: the cursor moves with
        each commit). 0 when another process holds the writer (it catches up itself)."""
        done = 0
        with self._lock:
            try:
                self._writer_now()
            except SentenceIndexBusy as exc:
                log.info("%s; leaving the catch-up to it", exc)
                return 0
            try:
                while True:
                    page = self.rows.changed(self.watermark(), limit=PAGE, vectors=False)
                    if not page:
                        break
                    self._replace(page, (page[-1].stamp, page[-1].paper_id))
                    done += len(page)
            finally:
                self._release()
        return done

    def rebuild(self) -> int:
        """Every stored sentence indexed from scratch (the cursor starts over)."""
        with self._lock:
            writer = self._writer_now()
            try:
                writer.delete_all_documents()
                writer.commit()
                self._write_state(None)
            except BaseException:
                self._release()
                raise
            self._release()
        return self.catch_up()

    def _release(self) -> None:
        """Let the writer lock go (another process of this node may write next)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.wait_merging_threads()

    def close(self) -> None:
        with self._lock:
            self._release()

    # -- reading ---------------------------------------------------------------------------------------

    def __len__(self) -> int:
        self.follow_commits()
        return int(self._index.searcher().num_docs)

    def check(self) -> IndexCheck:
        """Sentences indexed against those stored, and whether rows were stored after the cursor."""
        _, stored = self.rows.counts(current=False)
        newest, mark = self.rows.newest(), self.watermark()
        behind = newest is not None and (mark is None or (newest[0], newest[1]) > mark)
        return IndexCheck("sentence keyword index (tantivy)", stored, len(self), behind, str(self.path))

    def search(
        self, query: ParsedQuery, k: int, roles: frozenset[Role] | None = None
    ) -> list[ScoredSentence]:
        built = self.queries.build(query)
        if built is None or k <= 0:
            return []
        if roles is not None:
            clauses = [
                (tantivy.Occur.Must, built),
                (
                    tantivy.Occur.Must,
                    tantivy.Query.const_score_query(
                        tantivy.Query.term_set_query(self._schema, "role", sorted(roles)), 0.0
                    ),
                ),
            ]
            built = tantivy.Query.boolean_query(clauses)
        try:
            self.follow_commits()
            searcher = self._index.searcher()
            result = searcher.search(built, limit=int(k), count=False)
            hits = []
            for score, address in result.hits:
                doc = searcher.doc(address)
                hits.append(ScoredSentence(doc["id"][0], int(doc["pos"][0]), float(score)))
        except BaseException as exc:
            if not tantivy_failure(exc):
                raise
            raise KeywordIndexUnavailable(
                f"{self.path}: the sentence index cannot be read ({str(exc)[:200]}); "
                "`paperfeed index --keyword` rebuilds it"
            ) from exc
        hits.sort(key=lambda h: (-h.score, h.paper_id, h.position))
        return hits

    def highlight(self, query: ParsedQuery, text: str) -> list[Span]:
        return self.queries.highlight(query, text)
