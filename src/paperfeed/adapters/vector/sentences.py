"""The sentence vectors as an index: ``<data_dir>/sentence-vectors/``, derived from ``paper_sentences``.

Evidence search needs the nearest sentences to a query among every stored sentence (~6.5 a paper: 1.3M
at 200k papers), which the store's one-row-per-paper blobs cannot answer. The papers' own folder index
(:class:`~.index.StoredVectorIndex`: exact below 50,000 rows, an HNSW graph from there, built at half the
papers' breadth, :data:`EF_CONSTRUCTION`; saved atomically, reloaded by readers when a newer generation
appears) holds them, one row per sentence keyed
``<paper id>#<position>``, each with its paper's day, categories and code flag, so date and category
filters apply before ranking as for papers.

**Roles** are kept as reserved categories (``~r:result``; and ``~r:result|cs.CL`` for each of the paper's
categories), so "results only" (with or without a category filter) is a category filter too, answered
from the index's per-category row lists: nothing is post-filtered, so a selective choice never starves.

**Following the store**: :class:`SentenceVectorWriter` (in the process that runs the sentence pass)
reads the rows stored after its cursor, replaces those papers' rows, and saves at most every
``save_seconds`` after the indexer's batches, every ``BULK_SAVE_ROWS`` sentences of a long catch-up, and
when asked to :meth:`~SentenceVectorWriter.flush`; the cursor (``cursor.json``)
is written after each save, so a killed run resumes from the last saved rows. One writer at a time
(a lock beside the folder); readers open it with :func:`open_sentence_vectors`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from paperfeed.domain.evidence import (
    EvidenceRow,
    EvidenceRows,
    IndexCheck,
    ScoredSentence,
    sentence_key,
    split_key,
)
from paperfeed.domain.search import SearchFilters, VectorIndexMismatch, VectorRecord, Vectors
from paperfeed.domain.sentences import Role

from .index import AUTO_HNSW_MIN_ROWS, StoredVectorIndex
from .manifest import read_manifest

__all__ = [
    "MAX_POSITIONS",
    "SentenceVectorView",
    "SentenceVectorWriter",
    "open_sentence_vectors",
    "role_filters",
]

log = logging.getLogger(__name__)

MAX_POSITIONS = 64  # sentences a paper may have in the index (the sentence pass keeps at most 40)
PAGE = 2000  # papers read from the store per catch-up step
# A save writes the whole index (and, past 50,000 sentences, extends its graph): a long catch-up saves
# after this many sentences (a kill loses at most these), the indexer's batches at most every save_seconds.
BULK_SAVE_ROWS = 500_000
_ROLE = "~r:"
HNSW_MIN_ROWS = AUTO_HNSW_MIN_ROWS  # sentences from which the index keeps an HNSW graph (as the papers')
EF_CONSTRUCTION = 64
"""The sentence graph's build breadth: half the papers' 128. ~6.5 sentences a paper make this graph the
largest build of an instance (1.3M rows at 200k papers); ``bench/sentence_index_choice.py`` (one thread,
best 100 re-scored, efSearch 512, 200 queries): on 44,645 real late-pooled MiniLM sentence vectors of
SciFact 6.7 CPU-s against 17.7 at 128, recall@10 1.000 both (40: 4.7 CPU-s, 0.999); on 200,000 of the
cost bench's hashed bag-of-words vectors 72 against 141 CPU-s, recall@10 0.797 against 0.845."""


def _kind() -> dict[str, Any]:
    """How the sentence index is kept: exact while small, then an HNSW graph of :data:`EF_CONSTRUCTION`."""
    return {"policy": "auto", "auto_hnsw_min_rows": HNSW_MIN_ROWS, "ef_construction": EF_CONSTRUCTION}


def _categories(row: EvidenceRow, role: str) -> tuple[str, ...]:
    tag = _ROLE + role
    return (*row.categories, tag, *(f"{tag}|{c}" for c in row.categories))


def _dimension(page: Sequence[EvidenceRow]) -> int:
    for row in page:
        if row.vectors is not None and row.vectors.ndim == 2 and row.vectors.shape[0]:
            return int(row.vectors.shape[1])
    raise ValueError("no stored sentence has a vector in this page")


def role_filters(filters: SearchFilters | None, roles: frozenset[Role] | None) -> SearchFilters | None:
    """The index's filter for the paper ``filters`` and a choice of ``roles`` (see the module): the
    paper-id allow-list becomes the papers' sentence keys, roles become reserved categories."""
    if filters is None and roles is None:
        return None
    f = filters or SearchFilters()
    categories = f.categories
    if roles is not None:
        tags = [_ROLE + r for r in sorted(roles)]
        categories = tuple(f"{t}|{c}" for t in tags for c in f.categories) if f.categories else tuple(tags)
    allowed = None
    if f.paper_ids is not None:
        allowed = frozenset(sentence_key(pid, i) for pid in f.paper_ids for i in range(MAX_POSITIONS))
    return SearchFilters(f.date_from, f.date_to, categories, f.has_code, None, allowed)


class SentenceVectorView:
    """:class:`~paperfeed.domain.evidence.SentenceVectorIndex` over a stored folder index of sentences."""

    def __init__(self, index: StoredVectorIndex) -> None:
        self.index = index

    @property
    def model_id(self) -> str:
        return self.index.manifest.model_id

    def __len__(self) -> int:
        return len(self.index)

    def search(
        self,
        vector: Vectors,
        k: int,
        filters: SearchFilters | None = None,
        roles: frozenset[Role] | None = None,
    ) -> list[ScoredSentence]:
        found = self.index.search(vector, k, role_filters(filters, roles))
        out = []
        for hit in found:
            paper_id, position = split_key(hit.paper_id)
            out.append(ScoredSentence(paper_id, position, hit.score))
        return out

    def vectors(self, keys: Sequence[str]) -> dict[str, Vectors]:
        return self.index.vectors(keys)

    def reload_if_changed(self) -> bool:
        return self.index.reload_if_changed()


def open_sentence_vectors(path: Path, model_id: str) -> SentenceVectorView | None:
    """The sentence index in ``path`` for reading; None while nothing was saved there. Raises
    :class:`~paperfeed.domain.search.VectorIndexMismatch` for another model's index (before loading it)."""
    found = read_manifest(path)
    if found is None:
        return None
    manifest = found.manifest
    if manifest.model_id != model_id:
        raise VectorIndexMismatch(
            f"{path}: the sentence vectors are of {manifest.model_id}, the model in use is {model_id} "
            "(the indexer's sentence pass redoes them)"
        )
    return SentenceVectorView(
        StoredVectorIndex(path, model_id=model_id, dimension=manifest.dimension, **_kind())
    )


@contextlib.contextmanager
def _writer_lock(path: Path) -> Iterator[bool]:
    """This node's one writer of the folder: True when taken, False when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent / f".{path.name}.writer.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


class SentenceVectorWriter:
    """Keeps ``<data_dir>/sentence-vectors`` in step with the stored sentences of one embedding model."""

    def __init__(
        self,
        path: Path,
        rows: EvidenceRows,
        *,
        model_id: str,
        save_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self.rows = rows
        self.model_id = model_id
        self.save_seconds = save_seconds
        self._clock = clock
        self._index: StoredVectorIndex | None = None
        self._pending: tuple[datetime, str] | None = None  # cursor of rows upserted but not saved
        self._unsaved = 0  # sentences upserted since the last save
        self._saved_at = clock()

    # -- the cursor --------------------------------------------------------------------------------------

    def watermark(self) -> tuple[datetime, str] | None:
        try:
            data = json.loads((self.path / "cursor.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("model_id") != self.model_id:
            return None
        found = data.get("watermark")
        if not (isinstance(found, list) and len(found) == 2):
            return None
        return datetime.fromisoformat(found[0]), str(found[1])

    def _write_cursor(self, cursor: tuple[datetime, str]) -> None:
        tmp = self.path / f"cursor.json.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp"
        tmp.write_text(
            json.dumps({"model_id": self.model_id, "watermark": [cursor[0].isoformat(), cursor[1]]})
        )
        os.replace(tmp, self.path / "cursor.json")

    # -- the index ---------------------------------------------------------------------------------------

    def _opened(self, dimension: int) -> StoredVectorIndex:
        """The index (its dimension: the stored vectors'), a fresh one in place of another model's."""
        if self._index is None:
            found = read_manifest(self.path)
            fresh = found is not None and (
                found.manifest.model_id != self.model_id or found.manifest.dimension != dimension
            )
            if fresh or (found is None and self.path.exists()):
                shutil.rmtree(self.path, ignore_errors=True)  # another model's, or half-made: start over
            self.path.mkdir(parents=True, exist_ok=True)
            self._index = StoredVectorIndex(self.path, model_id=self.model_id, dimension=dimension, **_kind())
        return self._index

    @staticmethod
    def _records(row: EvidenceRow) -> Iterable[VectorRecord]:
        if row.vectors is None:
            return
        for position, sentence in enumerate(row.sentences[:MAX_POSITIONS]):
            yield VectorRecord(
                sentence_key(row.paper_id, position),
                np.asarray(row.vectors[position], dtype=np.float32),
                row.published,
                _categories(row, sentence.role),
                row.has_code,
            )

    def _apply(self, index: StoredVectorIndex, page: Sequence[EvidenceRow]) -> int:
        """These papers' rows replaced by their stored sentences; how many sentences were written."""
        records = [record for row in page if row.model_id == self.model_id for record in self._records(row)]
        index.remove(sentence_key(r.paper_id, i) for r in page for i in range(MAX_POSITIONS))
        index.upsert(records)
        return len(records)

    def on_saved(self, paper_ids: Sequence[str]) -> None:
        """After a stored batch: catch up, saving when the last save is ``save_seconds`` old."""
        if paper_ids:
            self.catch_up(save=False)

    def catch_up(self, *, save: bool = True) -> int:
        """Upsert the rows stored after the cursor; save at the end (``save``) or when one is due.
        0 when another process is the writer."""
        done = 0
        with _writer_lock(self.path) as mine:
            if not mine:
                log.info(
                    "%s: another process writes the sentence vectors; leaving the catch-up to it", self.path
                )
                return 0
            index = self._index
            while True:
                cursor = self._pending or self.watermark()
                page = self.rows.changed(cursor, limit=PAGE, vectors=True, model_id=self.model_id)
                if not page:
                    break
                if index is None:
                    index = self._opened(_dimension(page))
                self._unsaved += self._apply(index, page)
                self._pending = (page[-1].stamp, page[-1].paper_id)
                done += len(page)
                if self._unsaved >= BULK_SAVE_ROWS:  # a long catch-up keeps what it did, now and then
                    self._save(index)
            if index is not None and (save or self._clock() - self._saved_at >= self.save_seconds):
                self._save(index)
        return done

    def flush(self) -> None:
        """Save what was upserted since the last save (the end of a sentence run)."""
        if self._index is None or self._pending is None:
            return
        with _writer_lock(self.path) as mine:
            if mine:
                self._save(self._index)

    def _save(self, index: StoredVectorIndex) -> None:
        index.save()
        if self._pending is not None:
            self._write_cursor(self._pending)
            self._pending = None
        self._saved_at = self._clock()
        self._unsaved = 0

    def rebuild(self) -> int:
        """Every stored sentence vector of the model, from scratch."""
        with _writer_lock(self.path) as mine:
            if not mine:
                raise RuntimeError(f"{self.path}: another process is writing the sentence vectors")
            self._index = None
            self._pending = None
            shutil.rmtree(self.path, ignore_errors=True)
        return self.catch_up()

    def check(self) -> IndexCheck:
        _, stored = self.rows.counts(self.model_id, current=False)
        found = read_manifest(self.path)
        indexed = 0 if found is None or found.manifest.model_id != self.model_id else found.manifest.count
        newest = self.rows.changed(self.watermark(), limit=1, vectors=False, model_id=self.model_id)
        return IndexCheck("sentence vector index", stored, indexed, bool(newest), str(self.path))

    def close(self) -> None:
        self.flush()
