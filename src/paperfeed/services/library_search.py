"""Search my library (issue #34): a reader's saved papers, tags and private notes, by words and by meaning.

The library is one reader's (hundreds or thousands of papers), so it is scored in memory from one read of
their rows and the stored vectors of their papers (``domain/library_search.py``); the query and the notes
are embedded by the site's embedder (notes once per text, kept in a bounded cache). Without an embedder
or vectors the search is by words alone, and says so.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from paperfeed.domain.embedding import EmbeddingStore
from paperfeed.domain.library import InvalidLibraryInput, LibraryRecords
from paperfeed.domain.library_search import (
    MAX_LIBRARY_QUERY_CHARS,
    LibraryDoc,
    Vectors,
    dense_scores,
    fuse,
    keyword_scores,
)
from paperfeed.domain.models import Paper
from paperfeed.domain.search import MODEL_LOADING_NOTE, EmbedderSource
from paperfeed.domain.wording import count
from paperfeed.services.visible import VisiblePapers

__all__ = ["LibraryHit", "LibrarySearch", "LibrarySearchPage"]

log = logging.getLogger("paperfeed.library")
NOTE_CACHE = 5000


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
class LibrarySearch:
    records: LibraryRecords
    papers: VisiblePapers  # existing and not hidden by an admin
    embeddings: EmbeddingStore  # the papers' stored vectors
    embedder: EmbedderSource | None  # the model in use (None: no embedder, words only)
    _notes: OrderedDict[str, Vectors] = field(default_factory=OrderedDict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def search(self, user_id: int, query: str, *, limit: int = 50) -> LibrarySearchPage:
        text = " ".join(query.split())
        if not text:
            raise InvalidLibraryInput("q", "type some words to search your library for")
        if len(text) > MAX_LIBRARY_QUERY_CHARS:
            raise InvalidLibraryInput(
                "q", f"a query has at most {count(MAX_LIBRARY_QUERY_CHARS, 'character')}"
            )
        texts = self.records.library_texts(user_id)
        found = self.papers.get(list(texts))
        docs = [LibraryDoc(found[pid], *texts[pid]) for pid in texts if pid in found]
        keyword, why = keyword_scores(text, docs)
        notes: list[str] = []
        dense = []
        try:
            loading = self.embedder is not None and self.embedder.loading()  # the web's start: no waiting
            query_vector = None if loading else self._embed([text])
            if loading:
                notes.append(MODEL_LOADING_NOTE)
            elif query_vector is None:
                notes.append("meaning search is unavailable here: matching your words only")
            else:
                papers = self._vectors([d.paper.id for d in docs])
                note_vectors = self._note_vectors({d.paper.id: d.note for d in docs if d.note})
                dense = dense_scores(query_vector[0], papers, note_vectors)
        except Exception as exc:  # a model that cannot load must not take word search down with it
            log.warning("library search: embedding failed: %s", exc)
            notes.append("meaning search failed (the embedding model): matching your words only")
        by_id = {d.paper.id: d for d in docs}
        meaning = {s.paper_id for s in dense}
        hits = []
        for pid in fuse(keyword, dense)[: max(1, min(limit, 200))]:
            doc = by_id[pid]
            matched = sorted(why.get(pid, set())) + (["meaning"] if pid in meaning else [])
            hits.append(LibraryHit(doc.paper, doc.tags, doc.note, tuple(matched)))
        return LibrarySearchPage(text, tuple(hits), len(docs), tuple(notes))

    def _embed(self, texts: Sequence[str]) -> Vectors | None:
        """``texts`` embedded by the model in use, one row each; None without an embedder."""
        if self.embedder is None:
            return None
        import numpy as np

        return np.asarray(self.embedder.current().embed(list(texts)), dtype=np.float32)

    def _vectors(self, paper_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of these papers under the model in use."""
        if self.embedder is None:
            return {}
        return self.embeddings.vectors(self.embedder.current().model_id, paper_ids)

    def _note_vectors(self, notes: dict[str, str]) -> dict[str, Vectors]:
        with self._lock:
            missing = sorted({body for body in notes.values() if body not in self._notes})
        if missing:
            made = self._embed(missing)
            if made is not None:
                with self._lock:
                    for body, vector in zip(missing, made, strict=True):
                        self._notes[body] = vector
                    while len(self._notes) > NOTE_CACHE:
                        self._notes.popitem(last=False)
        with self._lock:
            return {pid: self._notes[body] for pid, body in notes.items() if body in self._notes}
