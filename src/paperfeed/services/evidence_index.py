"""Keeping the sentence indexes of evidence search in step with the stored sentences (issue #42).

Two derived indexes follow ``paper_sentences``: the sentence keyword index (tantivy on SQLite,
PostgreSQL full-text search on PostgreSQL) and the sentence vector index (a folder index in the data
folder). Both follow the store by the time rows were stored, so:

* the indexer's sentence pass stores through :class:`IndexedSentences`, which tells both indexes after
  each committed batch (they catch up, so a batch missed before is taken along);
* ``paperfeed index`` catches both up before and after its sentence pass, and saves the vectors at the
  end (:meth:`EvidenceIndexes.catch_up`, :meth:`~EvidenceIndexes.flush`); a kill anywhere loses at most
  what was not yet committed or saved, and the next run resumes from the indexes' own cursors;
* ``paperfeed index --keyword`` rebuilds them (:meth:`~EvidenceIndexes.rebuild`), and ``paperfeed
  check`` compares each with the store (:meth:`~EvidenceIndexes.check`).

A failing index never fails the sentence pass: the sentences are stored, the index catches up later.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from paperfeed.domain.evidence import IndexCheck, SentenceKeywordIndex, SentenceVectorIndex, sentence_space
from paperfeed.domain.search import VectorIndexError
from paperfeed.domain.sentences import PaperSentences, SentencesPending, SentenceStore
from paperfeed.domain.summaries import ExtractedSummary
from paperfeed.domain.wording import count

if TYPE_CHECKING:
    from paperfeed.services.embedders import Embedders

__all__ = [
    "CaughtUp",
    "EvidenceIndexes",
    "IndexedSentences",
    "SentenceVectorMaintenance",
    "SentenceVectorOpener",
    "SentenceVectorReader",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CaughtUp:
    """What :meth:`EvidenceIndexes.catch_up` did; its :meth:`message` is the one wording every surface
    (``paperfeed index``, ``index --follow``, ``restore``, ``check --repair``) says it in."""

    words: int  # papers whose sentences went into the sentence keyword index
    vectors: int  # papers whose sentences went into the sentence vector index
    seconds: float = 0.0

    def __bool__(self) -> bool:
        return bool(self.words or self.vectors)

    def message(self) -> str:
        return (
            f"sentence indexes caught up: the sentences of {count(self.words, 'paper')} into the keyword "
            f"index, of {count(self.vectors, 'paper')} into the vector index, in {self.seconds:,.1f} s"
        )


class SentenceVectorMaintenance(Protocol):
    """The writer of the sentence vector index of one embedding model."""

    def on_saved(self, paper_ids: Sequence[str]) -> None: ...

    def catch_up(self, *, save: bool = True) -> int: ...

    def flush(self) -> None: ...

    def rebuild(self) -> int: ...

    def check(self) -> IndexCheck: ...


class SentenceIndexSink(Protocol):
    """Either sentence index, as a stored batch is handed to it."""

    def on_saved(self, paper_ids: Sequence[str]) -> None: ...


class SentenceVectorOpener(Protocol):
    """Opens the saved sentence vector index of a model for reading (None: nothing saved yet)."""

    def __call__(self, model_id: str) -> SentenceVectorIndex | None: ...


@dataclass
class EvidenceIndexes:
    """Both sentence indexes as the indexer and the commands keep them (see the module)."""

    keyword: SentenceKeywordIndex
    embedders: Embedders
    vector_writer: Callable[[str], SentenceVectorMaintenance]  # a model id -> the writer of its vectors
    _writer: tuple[str, SentenceVectorMaintenance] | None = field(default=None, init=False)

    def vectors(self) -> SentenceVectorMaintenance:
        """The writer of the current embedding model's sentence vectors (a new one after an adoption)."""
        model_id = sentence_space(self.embedders.current().model_id)
        if self._writer is None or self._writer[0] != model_id:
            self._writer = (model_id, self.vector_writer(model_id))
        return self._writer[1]

    def on_saved(self, paper_ids: Sequence[str]) -> None:
        """After a committed batch of sentences: both indexes take it (failures are logged, not raised)."""
        steps: tuple[tuple[str, Callable[[], SentenceIndexSink]], ...] = (
            ("keyword", lambda: self.keyword),
            ("vector", self.vectors),
        )
        for name, index in steps:
            try:
                index().on_saved(paper_ids)
            except Exception as exc:  # the sentences are stored; the index catches up on its next run
                log.warning(
                    "evidence: the sentence %s index did not take a batch (%s); it catches up later",
                    name,
                    exc,
                )

    def catch_up(self) -> CaughtUp:
        """Both indexes caught up with the store (the vectors saved): the papers each one took."""
        started = time.monotonic()
        words, vectors = self.keyword.catch_up(), self.vectors().catch_up(save=True)
        return CaughtUp(words, vectors, time.monotonic() - started)

    def flush(self) -> None:
        self.vectors().flush()

    def rebuild(self) -> tuple[int, int]:
        return self.keyword.rebuild(), self.vectors().rebuild()

    def rebuild_keyword(self) -> tuple[int, str]:
        """The sentence keyword index from scratch (``paperfeed index --keyword``): papers, engine."""
        return self.keyword.rebuild(), self.keyword.name

    def check(self) -> list[IndexCheck]:
        return [self.keyword.check(), self.vectors().check()]

    def close(self) -> None:
        """Save sentence vectors upserted since the last save (the App closes)."""
        if self._writer is not None:
            try:
                self._writer[1].flush()
            except Exception as exc:  # closing must go on; the next catch-up redoes them
                log.warning("evidence: could not save the sentence vectors on closing (%s)", exc)


class IndexedSentences:
    """A :class:`~paperfeed.domain.sentences.SentenceStore` that tells the evidence indexes after each
    stored batch; everything else is the store's."""

    def __init__(self, store: SentenceStore, indexes: EvidenceIndexes) -> None:
        self.store = store
        self.indexes = indexes

    def count_backlog(self, model_id: str, role_model: str) -> int:
        return self.store.count_backlog(model_id, role_model)

    def count_done(self, model_id: str) -> int:
        return self.store.count_done(model_id)

    def backlog(
        self, model_id: str, role_model: str, *, after: str = "", limit: int = 64
    ) -> list[SentencesPending]:
        return self.store.backlog(model_id, role_model, after=after, limit=limit)

    def save(self, rows: Sequence[PaperSentences], summaries: Sequence[ExtractedSummary] = ()) -> None:
        self.store.save(rows, summaries)
        if rows:
            self.indexes.on_saved([r.paper_id for r in rows])

    def count_summary_backlog(self, model_id: str, rule_id: str) -> int:
        return self.store.count_summary_backlog(model_id, rule_id)

    def summary_backlog(
        self, model_id: str, rule_id: str, *, after: str = "", limit: int = 500
    ) -> list[SentencesPending]:
        return self.store.summary_backlog(model_id, rule_id, after=after, limit=limit)

    def save_summaries(self, summaries: Sequence[ExtractedSummary]) -> None:
        self.store.save_summaries(summaries)

    def sentences(
        self, paper_ids: Sequence[str], model_id: str, *, vectors: bool = True
    ) -> dict[str, PaperSentences]:
        return self.store.sentences(paper_ids, model_id, vectors=vectors)


@dataclass
class SentenceVectorReader:
    """The saved sentence vector index of the model in use, as search reads it: found once it exists,
    reloaded (at most every ``every`` seconds, on use) when the writer saved a newer generation, opened
    afresh when another model is adopted."""

    embedders: Embedders
    opener: SentenceVectorOpener
    every: float  # PAPERFEED_VECTOR_RELOAD_SECONDS
    clock: Callable[[], float] = time.monotonic
    _index: SentenceVectorIndex | None = field(default=None, init=False)
    _model: str | None = field(default=None, init=False)
    _checked: float = field(default=-math.inf, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def current(self) -> SentenceVectorIndex | None:
        self.embedders.follow()
        model_id = sentence_space(self.embedders.current().model_id)
        now = self.clock()
        with self._lock:
            due = now - self._checked >= self.every
            if due:
                self._checked = now
            if self._model != model_id:
                self._index, self._model, due = None, model_id, True
            index = self._index
        if index is None:
            if not due:
                return None
            index = self.opener(model_id)  # may raise VectorIndexError: the caller says so
            with self._lock:
                self._index = index
            return index
        if due:
            try:
                index.reload_if_changed()
            except VectorIndexError as exc:
                log.warning("could not reload the sentence vectors, keeping the loaded ones: %s", exc)
        return index
