"""The embedder an instance uses, and the indexing service of its model.

Which embedder: the configured backend, or for ``PAPERFEED_EMBEDDING_BACKEND=auto`` the one the
:class:`~paperfeed.services.calibration.BackendChooser` resolves (a stored calibration, else the stored
vectors' space, else -- when the caller may wait -- one measured now). Its model loads on first use.

Which model: the configured one, or the one ``paperfeed model adapt`` adopted (a manifest in the data
folder). A running process notices an adoption (or a ``reset``) at most once per
``PAPERFEED_VECTOR_RELOAD_SECONDS`` and then makes its embedder afresh, so a running server embeds
queries, and a running indexer papers, with the model the vectors are now being made of. Everything that
depends on the model (the vector index search reads, the indexing service) asks :class:`Embedders` at
each use and compares :attr:`Embedders.generation`, rather than being rebuilt from the outside.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from paperfeed.domain.embedding import EmbedderOpener, EmbeddingStore, IndexMarks, vector_index_mark
from paperfeed.domain.indexing_status import IndexerReports
from paperfeed.domain.search import Embedder, IndexOpener

if TYPE_CHECKING:  # NumPy comes with them, which a keyword-only ``paperfeed search`` never loads
    from paperfeed.domain.sentences import RoleModels, SentenceSplitter, SentenceStore
    from paperfeed.services.calibration import BackendChooser, Resolution
    from paperfeed.services.embed_claims import ClaimedBacklog
    from paperfeed.services.indexing import IndexingService
    from paperfeed.services.sentences import SentenceIndexer

__all__ = ["Embedders", "FixedEmbedder", "Indexer", "SentencePass"]

log = logging.getLogger(__name__)


@dataclass
class Embedders:
    """:class:`~paperfeed.domain.search.EmbedderSource` of a process (see the module doc). ``chooser``:
    only for ``auto`` (None: the configured backend as it is)."""

    opener: EmbedderOpener
    chooser: BackendChooser | None
    reload_seconds: float  # PAPERFEED_VECTOR_RELOAD_SECONDS: how often an adoption is looked for
    clock: Callable[[], float] = time.monotonic
    choice: Resolution | None = field(default=None, init=False)  # why the embedder is that one (auto)
    generation: int = field(default=0, init=False)  # moves each time another model was adopted
    _embedder: Embedder | None = field(default=None, init=False)
    _stamp: tuple[int, int] | None = field(default=None, init=False)  # the manifest as the embedder saw it
    _checked: float = field(default=0.0, init=False)
    _warming: threading.Event = field(default_factory=threading.Event, init=False)
    _stopped: threading.Event = field(default_factory=threading.Event, init=False)
    _defer: bool = field(default=False, init=False)
    _queries: bool = field(default=False, init=False)

    def serve_queries(self) -> None:
        """This process embeds queries, not papers (a web process): the lighter backend of the same
        vectors (:meth:`BackendChooser.resolve`'s ``queries``)."""
        self._queries = True

    def defer_calibration(self) -> None:
        """This process embeds before it measures the backends, where it would otherwise measure first
        (no record of this machine's yet): ``paperfeed run``'s indexer, whose user waits for the first
        vectors; it calls :meth:`measure_deferred` once its backlog is done (issue #39)."""
        self._defer = True

    def resolve(self, *, calibrate: bool) -> Embedder:
        """The configured embedder; ``auto`` resolves through the chooser (``calibrate``: it may measure
        now, for a process that may wait -- ``paperfeed index`` -- never for a web request). A provisional
        guess is not kept: it is asked again next time."""
        if self._embedder is not None:
            return self._embedder
        self._stamp = self.opener.adopted_stamp()
        choice = (
            self.chooser.resolve(calibrate=calibrate, defer=self._defer and calibrate, queries=self._queries)
            if self.chooser is not None
            else None
        )
        backend = choice.backend if choice is not None else None
        embedder = self.opener.open(backend, queries=True) if self._queries else self.opener.open(backend)
        if choice is None or choice.final:
            self._embedder, self.choice = embedder, choice
        return embedder

    def owes_measurement(self) -> bool:
        """The embedder in use was taken unmeasured (:meth:`defer_calibration`) and is not measured yet."""
        from paperfeed.services.calibration import DEFERRED

        return self.choice is not None and self.choice.reason == DEFERRED

    def measure_deferred(self) -> Resolution | None:
        """Measure the backends now if this process took its backend unmeasured (:meth:`defer_calibration`),
        within the vector space of the embedder in use, so nothing already embedded is made again; the
        fastest then embeds what comes next (recorded for later processes too). None: nothing was owed."""
        from paperfeed.services.calibration import Resolution

        taken = self.choice
        if self.chooser is None or self._embedder is None or taken is None or not self.owes_measurement():
            return None
        calibration = self.chooser.calibrate(within=self._embedder.model_id)
        if calibration.backend != taken.backend:
            self._embedder = None  # the next use opens the measured one: the same vectors, faster
        self.choice = Resolution(calibration.backend, "measured once the backlog was done", calibration)
        return self.choice

    def current(self) -> Embedder:
        """The embedder for reading (queries, model ids): follows an adoption, never waits for a
        calibration."""
        self.follow()
        return self.resolve(calibrate=False)

    def loading(self) -> bool:
        """The model is being loaded by :meth:`warm_up` right now."""
        return self._warming.is_set()

    def warm_up(
        self,
        ready: Callable[[], bool],
        *,
        poll: float = 5.0,
        loaded: Callable[[], object] | None = None,
    ) -> threading.Thread:
        """Load the model on a daemon thread, so no reader's request waits for it (a web process at start,
        issue #39 item 5): once ``ready()`` says there is something to search by meaning (vectors exist;
        an empty instance loads no model until then), the embedder is resolved and embeds one text. While
        it loads, :meth:`loading` is True and searches answer with keyword matches and a note.
        ``loaded`` runs once the model is in: loading frees what it read the model through (the file's
        bytes, the graph before optimisation), which the allocator keeps unless asked to give it back."""

        def load() -> None:
            while not ready():
                if self._stopped.wait(poll):
                    return
            self._warming.set()
            started = time.monotonic()
            try:
                embedder = self.current()
                embedder.embed(["warming up the embedding model"])
            except Exception as exc:  # searches say the model failed when they meet it themselves
                log.warning("could not load the embedding model at start: %s", exc)
                return
            finally:
                self._warming.clear()
            if loaded is not None:
                loaded()
            log.info("embedding model %s loaded in %.1f s", embedder.model_id, time.monotonic() - started)

        thread = threading.Thread(target=load, name="model-warm-up", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        """Stop a warm-up that still waits for vectors."""
        self._stopped.set()

    def follow(self) -> bool:
        """Notice ``paperfeed model adapt`` (or ``reset``) changing the adopted model since this process
        made its embedder (looked at once per ``reload_seconds``); then forget the embedder, so the next
        use makes it afresh. True when it did."""
        now = self.clock()
        if self._embedder is None or now - self._checked < self.reload_seconds:
            return False
        self._checked = now
        if self.opener.adopted_stamp() == self._stamp:
            return False
        self._embedder, self.choice = None, None
        self.generation += 1
        return True


@dataclass(frozen=True)
class FixedEmbedder:
    """An :class:`~paperfeed.domain.search.EmbedderSource` that never changes (tests, benches)."""

    embedder: Embedder

    def current(self) -> Embedder:
        return self.embedder

    def loading(self) -> bool:
        return False


@dataclass
class Indexer:
    """The :class:`IndexingService` of the embedder in use: one per model, made afresh after an adoption
    (a running service keeps its embedder for the whole of a run: a batch is never embedded with one
    model and stored as another's). Resolving the embedder here may calibrate (``auto``)."""

    store: EmbeddingStore
    embedders: Embedders
    open_index: IndexOpener | None
    batch_size: int  # PAPERFEED_EMBEDDING_BATCH_SIZE
    marks: IndexMarks | None  # a node-local index's sync point (None: in the store)
    reports: IndexerReports | None
    sentences: SentencePass | None = None  # each batch embedded with its sentences (None: vectors only)
    claims: ClaimedBacklog | None = None  # batches claimed, so several processes share the backlog
    _service: IndexingService | None = field(default=None, init=False)

    def has_papers(self) -> bool:
        """The store holds papers (an indexer that follows makes its embedder only once it does)."""
        return self.store.count_papers() > 0

    def report_idle(self) -> None:
        """Say this process is an idle indexer, before any embedder is made (a follower on an empty store)."""
        if self.reports is not None:
            from paperfeed.services.indexer_status import IndexerReporter

            IndexerReporter(self.reports, every=0).report("idle", force=True)

    def nothing_to_do(self) -> bool:
        """True when a run would embed nothing and write nothing to the vector index: no papers, or every
        paper has a vector of the model in use and the index holds the newest of them. Answered from
        counts and marks, without calibrating a backend (``auto``) or loading a model, so a daily job with
        nothing new costs a few queries, not a model in memory (issue #39 item 6)."""
        if not self.store.count_papers():
            return True
        if not self.store.model_counts():  # nothing embedded yet: the first run decides the backend
            return False
        embedder = self.embedders.resolve(calibrate=False)  # the stored vectors' space: no calibration
        model_id = embedder.model_id
        if self.store.count_backlog(model_id):
            return False
        if self.open_index is None:
            return True
        marks = self.marks if self.marks is not None else self.store
        return marks.get_mark(vector_index_mark(model_id)) == self.store.newest(model_id)

    def current(self) -> IndexingService:
        from paperfeed.services.indexing import IndexingService

        embedder = self.embedders.resolve(calibrate=True)
        if self._service is None or self._service.embedder is not embedder:
            self._service = IndexingService(
                self.store,
                embedder,
                self.open_index,
                batch_size=self.batch_size,
                marks=self.marks,
                reports=self.reports,
                sentences=self.sentences.of(embedder) if self.sentences is not None else None,
                claims=self.claims,
            )
        return self._service


@dataclass
class SentencePass:
    """The indexer's second pass (:class:`~paperfeed.services.sentences.SentenceIndexer`: abstracts split
    into sentences, embedded and given their roles) with the embedder in use, made afresh after an
    adoption as :class:`Indexer` is."""

    store: SentenceStore
    embedders: Embedders
    splitter: SentenceSplitter
    roles: RoleModels
    batch_size: int  # PAPERFEED_SENTENCES_BATCH_SIZE
    _indexer: SentenceIndexer | None = field(default=None, init=False)

    def current(self) -> SentenceIndexer:
        from paperfeed.domain.errors import EmbedderUnavailable

        embedder = self.embedders.resolve(calibrate=True)
        found = self.of(embedder)
        if found is None:
            raise EmbedderUnavailable(
                f"the embedder {embedder.model_id} cannot pool sentence vectors (no embed_spans)"
            )
        return found

    def of(self, embedder: Embedder) -> SentenceIndexer | None:
        """The sentence indexer of ``embedder`` (None: it pools no sentence vectors, e.g. a test double)."""
        from paperfeed.domain.sentences import pools_sentences
        from paperfeed.services.sentences import SentenceIndexer

        if not pools_sentences(embedder):
            return None
        if self._indexer is None or self._indexer.embedder is not embedder:
            self._indexer = SentenceIndexer(
                self.store, embedder, self.splitter, self.roles, batch_size=self.batch_size
            )
        return self._indexer
