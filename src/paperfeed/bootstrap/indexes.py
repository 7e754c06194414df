"""The indexes wing: the keyword index, the embedding store, the embedder in use, the vector index search
reads, indexing and what is said about it (status, coverage), and a node's index follower.

Everything slow to open is lazy inside its adapter or service (the keyword index opens on first use, the
embedder's model loads on first embed, the vector index is found on first read), so every service here
is built without waiting for it."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from paperfeed.bootstrap.core import Core

if TYPE_CHECKING:
    from pathlib import Path

    from paperfeed.adapters.embed import EmbedderConfig, EmbedderFactory
    from paperfeed.adapters.embed.child import ChildProcessOpener
    from paperfeed.adapters.keyword.lazy import LazyKeywordIndex
    from paperfeed.adapters.node_indexes import NodeIndexes
    from paperfeed.adapters.sentences.roles import RoleModelFolder
    from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
    from paperfeed.adapters.store.evidence_rows import SqlEvidenceRows
    from paperfeed.adapters.store.sentences import SqlSentenceStore
    from paperfeed.adapters.vector.factory import DeploymentVectors
    from paperfeed.adapters.vector.sentences import SentenceVectorView
    from paperfeed.domain.embedding import EmbedWorkers
    from paperfeed.domain.evidence import SentenceKeywordIndex
    from paperfeed.domain.indexing_status import IndexerReportReader
    from paperfeed.domain.search import SyncedKeywordIndex
    from paperfeed.services.calibration import BackendChooser
    from paperfeed.services.coverage import CoverageService
    from paperfeed.services.embed_claims import ClaimedBacklog
    from paperfeed.services.embedders import Embedders, Indexer, SentencePass
    from paperfeed.services.evidence_index import EvidenceIndexes, SentenceVectorReader
    from paperfeed.services.index_follow import IndexFollower
    from paperfeed.services.indexer_status import IndexerActivity, IndexingStatusService
    from paperfeed.services.keyword_index import KeywordIndexService
    from paperfeed.services.vector_reader import SearchVectors
    from paperfeed.settings_model import SettingsModel

__all__ = ["IndexesWing", "embedder_config"]


def embedder_config(
    s: SettingsModel, *, threads: int | None, backend: str | None = None, spinning: bool = True
) -> EmbedderConfig:
    """How to build the embedder: ``backend`` (default: the setting; ``auto`` is resolved by the
    caller); ``threads`` (None: the runtime's default, all cores) and ``spinning`` are the process's."""
    from paperfeed.adapters.embed import EmbedderConfig
    from paperfeed.settings_model import default_model_cache

    return EmbedderConfig(
        backend=backend or s.embedding_backend,
        model=s.embedding_model,
        cache_dir=s.model_cache or default_model_cache(),
        legacy_cache_dirs=(s.data_dir / "models",),
        threads=threads,
        spinning=spinning,
        bf16=s.torch_bf16,
        max_tokens=s.embedding_max_tokens,
        adapted_manifest=s.data_dir / "models" / "active-model.json",
    )


class IndexesWing:
    def __init__(self, core: Core) -> None:
        self.core = core
        self.background = False  # embed in a child process released when idle: embed_in_background()

    def embed_in_background(self) -> None:
        """This process is a long-lived background one (an indexer that follows, the scheduler): embed in a
        child process ended ``PAPERFEED_EMBEDDER_IDLE_SECONDS`` after its last batch, so the model is not
        kept in memory while idle. Called by the command before anything is embedded."""
        if "factory" in self.__dict__:
            raise RuntimeError("embed_in_background() must come before the first embedder is made")
        self.background = self.core.settings.embedder_idle_seconds > 0

    # -- the keyword index -----------------------------------------------------------------------------

    @cached_property
    def keyword(self) -> LazyKeywordIndex:
        """BM25 search; opened on first use, which brings it up to date with the store (a full build the
        first time)."""
        from paperfeed.adapters.keyword.factory import open_keyword_index
        from paperfeed.adapters.keyword.lazy import LazyKeywordIndex

        core = self.core

        def open_index() -> SyncedKeywordIndex:
            return open_keyword_index(core.settings.keyword_engine, core.engine(), core.data_dir)

        return core.closing(LazyKeywordIndex(open_index))

    @cached_property
    def keyword_maintenance(self) -> KeywordIndexService:
        """Rebuilding the keyword index, or bringing it up to date (``index --keyword``, ``restore``)."""
        from paperfeed.services.keyword_index import KeywordIndexService

        return KeywordIndexService(self.keyword)

    def open_local_keyword_index(self) -> None:
        """On SQLite with tantivy, open the keyword index before the first request: opening builds it when
        it is missing, damaged or of an older version (~35 s at 200k papers), and a paper page or search
        that met it first would wait that long. PostgreSQL nodes do the same in :meth:`start_follower`;
        FTS5 and PostgreSQL full-text search live in the store."""
        from paperfeed.adapters.keyword.factory import resolve_engine

        engine = self.core.engine()
        if (
            engine.dialect.name == "sqlite"
            and resolve_engine(self.core.settings.keyword_engine, engine) == "tantivy"
        ):
            self.keyword.opened()

    # -- embedding --------------------------------------------------------------------------------------

    @cached_property
    def embeddings(self) -> SqlEmbeddingStore:
        """The stored vectors, the embedding backlog, the indexer's reports."""
        from paperfeed.adapters.store.embeddings import SqlEmbeddingStore

        return SqlEmbeddingStore(self.core.engine())

    def embedder_config(self, backend: str | None = None) -> EmbedderConfig:
        """How to build ``backend`` (default: the configured one) with this process's thread budget: every
        core it may use. A niced process (``paperfeed run``'s indexer) takes them too, since its priority
        already gives the web server and the scheduler the CPU whenever they want it, but its threads never
        busy-wait: a spinning thread would hold a core the others could use (issue #39 item 4; it took
        half the cores before, leaving one idle on a 2-core machine)."""
        from paperfeed.adapters.embed.cpu import available_cores, runs_in_background

        s = self.core.settings
        background = runs_in_background()
        threads = s.embedding_threads or available_cores()
        return embedder_config(s, backend=backend, threads=threads, spinning=not background)

    @cached_property
    def factory(self) -> EmbedderFactory | ChildProcessOpener:
        """Opens the embedder of a backend: in this process, or for a background process
        (:meth:`embed_in_background`) in a child process released when idle."""
        from paperfeed.adapters.embed import EmbedderFactory

        factory = EmbedderFactory(self.embedder_config())
        if not self.background:
            return factory
        from paperfeed.adapters.embed.child import ChildProcessOpener

        idle = self.core.settings.embedder_idle_seconds
        return self.core.closing_first(ChildProcessOpener(factory, idle))

    @cached_property
    def chooser(self) -> BackendChooser:
        """Measures the embedding backends on this machine (``PAPERFEED_EMBEDDING_BACKEND=auto``)."""
        from paperfeed.adapters.embed import resolve_model
        from paperfeed.adapters.embed.calibration_file import CALIBRATION_FILE, CalibrationFile
        from paperfeed.adapters.embed.cpu import cpu_info
        from paperfeed.adapters.embed.probe_texts import PROBE_TEXTS
        from paperfeed.services.calibration import BackendChooser

        embeddings = self.embeddings

        def probe_texts(n: int) -> tuple[list[str], str]:
            own = [p.text for p in embeddings.backlog("", limit=n)]  # "": no model, every paper
            if len(own) >= n:
                return own, "instance papers"
            return list(PROBE_TEXTS[:n]), "bundled sentences"

        config = self.factory.config
        return BackendChooser(
            open_backend=self.factory.open,
            records=CalibrationFile(self.core.data_dir / CALIBRATION_FILE),
            machine=CalibrationFile(config.cache_dir / CALIBRATION_FILE),  # beside the ONNX exports
            probe_texts=probe_texts,
            stored_models=embeddings.model_counts,
            model=resolve_model(config.model).name + f"@{config.max_tokens}",
            cpu=cpu_info().describe(),
            threads=config.threads or 0,
        )

    @cached_property
    def embedders(self) -> Embedders:
        """The embedder in use: configured, calibrated (``auto``) or adopted, followed across adoptions."""
        from paperfeed.services.embedders import Embedders

        s = self.core.settings
        chooser = self.chooser if s.embedding_backend == "auto" else None
        return Embedders(self.factory, chooser, reload_seconds=s.vector_reload_seconds)

    def embed_workers(self, workers: int) -> EmbedWorkers:
        """``workers`` embedding processes sharing this process's thread budget (``index --workers``)."""
        from paperfeed.adapters.embed.cpu import available_cores
        from paperfeed.adapters.embed.pool import ProcessEmbedWorkers

        choice = self.embedders.choice
        config = self.factory.config_for(choice.backend if choice is not None else None)
        total = self.core.settings.embedding_threads or available_cores()
        return ProcessEmbedWorkers(config, workers, total_threads=total)

    def warm_up(self) -> None:
        """Load the embedding model in the background once there are vectors to search (a web process at
        start; searches meanwhile answer with keyword matches, domain/search.py's MODEL_LOADING_NOTE)."""
        vectors = self.vectors

        def ready() -> bool:
            try:
                return bool(vectors.count())
            except Exception:  # an unreadable index: searches say so; nothing to warm for
                return False

        embedders = self.embedders
        embedders.serve_queries()  # a web process embeds queries only: the lighter backend of its vectors
        self.core.closing_first(embedders)
        from paperfeed.adapters.memory import release_free_memory

        embedders.warm_up(ready, loaded=release_free_memory)

    # -- the vector index --------------------------------------------------------------------------------

    @property
    def vector_path(self) -> Path:
        return self.core.data_dir / "vectors"

    @cached_property
    def node(self) -> NodeIndexes:
        """The indexes this node keeps on its own disk for a PostgreSQL store, and how far they followed."""
        from paperfeed.adapters.node_indexes import NodeIndexes

        s = self.core.settings
        return NodeIndexes(self.core.engine, self.core.data_dir, s.keyword_engine, s.vector_index)

    @cached_property
    def vector_index(self) -> DeploymentVectors:
        """Opens the index ``paperfeed index`` maintains (pgvector or a folder index), and the one search
        reads (on SQLite found without the store's engine: docs/cli.md)."""
        from paperfeed.adapters.sqlite_reads import sqlite_path
        from paperfeed.adapters.vector.factory import DeploymentVectors

        s = self.core.settings
        folder_only = s.vector_index in ("auto", "local") and sqlite_path(s.db_url) is not None
        return DeploymentVectors(self.core.engine, self.vector_path, s.vector_index, folder_only=folder_only)

    @cached_property
    def vectors(self) -> SearchVectors:
        """The stored vector index search reads: found once it exists, reloaded when another process saves
        a newer generation, made afresh when the adopted model changed."""
        from paperfeed.services.vector_reader import SearchVectors

        every = self.core.settings.vector_reload_seconds
        return SearchVectors(self.embedders, self.vector_index, every=every)

    @cached_property
    def indexer(self) -> Indexer:
        """Background embedding of new and changed papers (``paperfeed index``), with the model in use."""
        from paperfeed.services.embedders import Indexer

        return Indexer(
            self.embeddings,
            self.embedders,
            self.vector_index,
            batch_size=self.core.settings.embedding_batch_size,
            marks=self.node.marks(),
            reports=self.embeddings,
            sentences=self.sentence_indexer,  # one forward pass per paper: its vector and its sentences
            claims=self.claims,
        )

    @cached_property
    def claims(self) -> ClaimedBacklog:
        """Batches of the backlog claimed in the store, so several ``paperfeed index`` processes (on one
        machine, or on many against one PostgreSQL) never embed a paper twice (docs/scaling.md)."""
        from paperfeed.adapters.store.claims import open_claims
        from paperfeed.services.embed_claims import ClaimedBacklog
        from paperfeed.services.jobs import holder_is_dead

        seconds = self.core.settings.embedding_claim_seconds
        return ClaimedBacklog(
            open_claims(self.core.engine()), self.core.job_runs, seconds=seconds, is_dead=holder_is_dead
        )

    # -- the papers' sentences (issue #33, parts 4-5) -------------------------------------------------------

    @cached_property
    def sentences(self) -> SqlSentenceStore:
        """Papers' sentences, their roles and vectors (``paper_sentences``), and one-line summaries."""
        from paperfeed.adapters.store.sentences import SqlSentenceStore

        return SqlSentenceStore(self.core.engine())

    @cached_property
    def role_models(self) -> RoleModelFolder:
        """The sentence-role classifier, kept in ``<data>/models/sentence-roles`` for the current model."""
        from paperfeed.adapters.sentences.roles import RoleModelFolder

        return RoleModelFolder(self.core.data_dir / "models" / "sentence-roles")

    @cached_property
    def sentence_indexer(self) -> SentencePass:
        """The indexer's second pass: abstracts split into sentences, embedded and given their roles; each
        stored batch is handed on to the evidence indexes (:attr:`evidence`)."""
        from paperfeed.adapters.sentences.splitter import SentencexSplitter
        from paperfeed.services.embedders import SentencePass
        from paperfeed.services.evidence_index import IndexedSentences

        batch = self.core.settings.sentences_batch_size
        store = IndexedSentences(self.sentences, self.evidence)
        return SentencePass(store, self.embedders, SentencexSplitter(), self.role_models, batch)

    # -- evidence search's sentence indexes (issue #42) ------------------------------------------------------

    @cached_property
    def evidence_rows(self) -> SqlEvidenceRows:
        """The stored sentences with their papers' text and facets, as the sentence indexes read them."""
        from paperfeed.adapters.store.evidence_rows import SqlEvidenceRows

        return SqlEvidenceRows(self.core.engine())

    @cached_property
    def sentence_keyword(self) -> SentenceKeywordIndex:
        """BM25 over the sentences: tantivy in ``<data>/sentence-keyword`` on SQLite, PostgreSQL's
        full-text search (``sentence_search``) on PostgreSQL."""
        engine = self.core.engine()
        if engine.dialect.name == "postgresql":
            from paperfeed.adapters.keyword.sentences_postgres import PostgresSentenceIndex

            return PostgresSentenceIndex(engine, self.evidence_rows)
        from paperfeed.adapters.keyword.sentences_tantivy import TantivySentenceIndex

        return self.core.closing(
            TantivySentenceIndex(self.core.data_dir / "sentence-keyword", self.evidence_rows)
        )

    @property
    def sentence_vector_path(self) -> Path:
        return self.core.data_dir / "sentence-vectors"

    @cached_property
    def evidence(self) -> EvidenceIndexes:
        """Keeping both sentence indexes in step with the stored sentences (the indexer, the commands)."""
        from paperfeed.adapters.vector.sentences import SentenceVectorWriter
        from paperfeed.services.evidence_index import EvidenceIndexes

        path, rows = self.sentence_vector_path, self.evidence_rows

        def writer(model_id: str) -> SentenceVectorWriter:
            return SentenceVectorWriter(path, rows, model_id=model_id)

        return self.core.closing(EvidenceIndexes(self.sentence_keyword, self.embedders, writer))

    @cached_property
    def sentence_vectors(self) -> SentenceVectorReader:
        """The sentence vector index as search reads it: found once saved, reloaded when the indexer saves
        a newer generation (``PAPERFEED_VECTOR_RELOAD_SECONDS``), made afresh after an adoption."""
        from paperfeed.adapters.vector.sentences import open_sentence_vectors
        from paperfeed.services.evidence_index import SentenceVectorReader

        path = self.sentence_vector_path

        def opener(model_id: str) -> SentenceVectorView | None:
            return open_sentence_vectors(path, model_id)

        return SentenceVectorReader(self.embedders, opener, every=self.core.settings.vector_reload_seconds)

    # -- what is said about it -----------------------------------------------------------------------------

    @cached_property
    def activity(self) -> IndexerActivity:
        """The indexer at work, if one runs (read without SQLAlchemy on SQLite: ``paperfeed search``)."""
        from paperfeed.adapters.sqlite_reads import SqliteReads
        from paperfeed.services.indexer_status import IndexerActivity
        from paperfeed.services.jobs import holder_is_dead

        reads = self.core.reads
        reports: IndexerReportReader = reads if isinstance(reads, SqliteReads) else self.embeddings
        return IndexerActivity(reports, holder_is_dead)

    @cached_property
    def status(self) -> IndexingStatusService:
        """How far embedding has come and what the indexer is doing (/admin/jobs)."""
        from paperfeed.services.indexer_status import IndexingStatusService
        from paperfeed.services.jobs import holder_is_dead

        embeddings = self.embeddings
        return IndexingStatusService(
            embeddings,
            embeddings,
            self.embedders,
            self.vectors,
            holder_is_dead,
            sentences=self.sentences,
            roles=self.role_models,
        )

    @cached_property
    def coverage(self) -> CoverageService:
        """How many papers meaning search covers (the vector index) of those in the store, cached."""
        from paperfeed.services.coverage import CoverageService

        return CoverageService(self.embeddings, self.vectors, self.activity)

    @cached_property
    def one_shot_coverage(self) -> CoverageService:
        """:attr:`coverage` for a process that answers one query (``paperfeed search``): the papers are
        counted through the core's reads, so a SQLite store is read without SQLAlchemy (docs/cli.md)."""
        from paperfeed.services.coverage import CoverageService

        return CoverageService(self.core.reads, self.vectors, self.activity)

    # -- a node's follower ---------------------------------------------------------------------------------

    def start_follower(self) -> IndexFollower | None:
        """On PostgreSQL with node-local indexes: build what is missing now (the cold start, timed and
        logged), then follow the database every ``PAPERFEED_INDEX_FOLLOW_SECONDS`` (docs/deployment.md).

        One process per node follows (a lock in the data folder; the others read the same folders and
        reload when they change, and take over if that process dies). None when there is nothing to follow.
        """
        keyword_local, vectors_local = self.node.local
        if not (keyword_local or vectors_local):
            return None
        from collections.abc import Callable

        from paperfeed.adapters.keyword.tantivy_index import TantivyKeywordIndex
        from paperfeed.adapters.node_lock import NodeLock
        from paperfeed.services.index_follow import IndexFollower
        from paperfeed.services.indexing import IndexingService, IndexSync

        s = self.core.settings
        lock = self.core.closing(NodeLock(s.data_dir / "index-follower.lock"))
        follow_keyword: Callable[[], int] | None = None
        follow_vectors: Callable[[], IndexSync | None] | None = None
        index = self.keyword.opened() if keyword_local else None  # opening builds it when missing or damaged
        if isinstance(index, TantivyKeywordIndex):
            tantivy = index

            def follow_keyword() -> int:
                return tantivy.follow_store() if lock.held() else 0

        if vectors_local:
            vectors = IndexingService(
                self.embeddings,
                self.embedders.current(),
                self.vector_index,
                batch_size=s.embedding_batch_size,
                marks=self.node.marks(),
            )

            def follow_vectors() -> IndexSync | None:
                return vectors.follow_index() if lock.held() else None

        follower = IndexFollower(keyword=follow_keyword, vectors=follow_vectors, every=s.index_follow_seconds)
        follower.start()
        return self.core.closing(follower)
