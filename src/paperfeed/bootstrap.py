"""The composition root: the one place that turns settings into concrete adapters and services."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import date, datetime
    from pathlib import Path

    from sqlalchemy.engine import Engine

    from paperfeed.adapters.backup import BackupInfo
    from paperfeed.adapters.embed import EmbedderConfig
    from paperfeed.adapters.mail import SmtpConfig
    from paperfeed.adapters.sentences.roles import RoleModelFolder
    from paperfeed.adapters.sources.arxiv_api import ArxivApiClient, ArxivApiSource, ArxivListingSource
    from paperfeed.adapters.sources.arxiv_oai import ArxivOaiSource
    from paperfeed.adapters.sources.hf_daily import HfDailySource
    from paperfeed.adapters.sources.http import PoliteClient
    from paperfeed.adapters.store import SqlPaperStore
    from paperfeed.adapters.store.citations import SqlCitationRecords
    from paperfeed.adapters.store.copy import CopySummary, Progress
    from paperfeed.adapters.store.digests import SqlDigestStore
    from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
    from paperfeed.adapters.store.job_runs import SqlJobStore
    from paperfeed.adapters.store.sentences import SqlSentenceStore
    from paperfeed.domain.citation_harvest import HarvestSettings
    from paperfeed.domain.digest_links import LinkSigner
    from paperfeed.domain.digest_mail import DigestRenderer
    from paperfeed.domain.embedding import EmbedWorkers, IndexMarks
    from paperfeed.domain.feed import DataVersion
    from paperfeed.domain.indexing_status import IndexerReport
    from paperfeed.domain.library import SavedSearch
    from paperfeed.domain.library_search import Vectors
    from paperfeed.domain.mail import KeptMail, OutgoingMail, SessionMailer
    from paperfeed.domain.models import Paper
    from paperfeed.domain.page_cache import SharedPageCache
    from paperfeed.domain.paper_graph import CitationSource
    from paperfeed.domain.ports import PaperLookup, PaperSource, StoreReads
    from paperfeed.domain.search import Embedder, KeywordIndex, SimilarSource, SyncedKeywordIndex, VectorIndex
    from paperfeed.domain.supervision import SupervisorStatusStore
    from paperfeed.domain.topics import TopicSettings
    from paperfeed.services.account_data import AccountDataService
    from paperfeed.services.accounts import AccountService
    from paperfeed.services.adaptation import AdaptationService
    from paperfeed.services.calibration import BackendChooser, Resolution
    from paperfeed.services.check import CheckService
    from paperfeed.services.citation_import import CitationImport
    from paperfeed.services.citation_trend import CitedTrending
    from paperfeed.services.citations import CitationHarvest
    from paperfeed.services.community import CommunityService
    from paperfeed.services.coverage import CoverageService
    from paperfeed.services.digest import SubscriptionService
    from paperfeed.services.digest_send import DigestService
    from paperfeed.services.facets import FacetedSimilar, FacetSettings
    from paperfeed.services.feed import FeedService
    from paperfeed.services.fill import FillService
    from paperfeed.services.group_digest import GroupDigests
    from paperfeed.services.groups import GroupService
    from paperfeed.services.index_follow import IndexFollower
    from paperfeed.services.indexer_status import IndexingStatusService
    from paperfeed.services.indexing import IndexingService
    from paperfeed.services.ingest import IngestService
    from paperfeed.services.jobs import JobSchedule, JobService
    from paperfeed.services.library import LibraryService
    from paperfeed.services.library_import import LibraryImporter, ReaderWork
    from paperfeed.services.library_references import ReferenceBibliography
    from paperfeed.services.library_search import LibrarySearch
    from paperfeed.services.mutes import MuteService
    from paperfeed.services.paper_graph import PaperGraphService
    from paperfeed.services.paper_upload import PaperUploads
    from paperfeed.services.rate_limits import ClientRateLimiter
    from paperfeed.services.recommend import RecommendationService, RecommendSettings
    from paperfeed.services.search import HybridSearch, HybridSettings, SimilarSettings
    from paperfeed.services.sentences import SentenceIndexer
    from paperfeed.services.topic_map import TopicMapService
    from paperfeed.services.topic_picks import TopicPickService
    from paperfeed.services.topic_rising import RisingService
    from paperfeed.services.topics import TopicService
    from paperfeed.services.vector_reader import VectorReader
    from paperfeed.settings_model import SettingsModel

__all__ = [
    "App",
    "build_app",
    "embedder_config",
    "facet_settings",
    "harvest_settings",
    "recommend_settings",
    "search_settings",
    "similar_settings",
    "smtp_config",
    "topic_settings",
]

_NODE_VECTOR_MARKS = "vector-marks.json"  # a node-local vector index's sync point, in the data folder


# -- settings -> the configuration types of services and adapters ----------------------------------------
# The settings hold every default (settings_model.py); these types have none for what a setting gives
# (tests/test_settings_defaults_once.py). Tests and benches build them here too, from SettingsModel().


def search_settings(s: SettingsModel) -> HybridSettings:
    """How search fuses its keyword and semantic lists (``PAPERFEED_SEARCH_*``)."""
    from paperfeed.services.search import HybridSettings

    return HybridSettings(
        rrf_k=s.search_rrf_k,
        keyword_weight=s.search_keyword_weight,
        dense_weight=s.search_dense_weight,
        min_dense_score=s.search_min_dense_score,
    )


def similar_settings(s: SettingsModel) -> SimilarSettings:
    """How "similar papers" ranks and fuses its lists (``PAPERFEED_SIMILAR_*``)."""
    from paperfeed.services.search import SimilarSettings

    return SimilarSettings(
        rrf_k=s.similar_rrf_k,
        dense_weight=s.similar_dense_weight,
        keyword_weight=s.similar_keyword_weight,
        candidates=s.similar_candidates,
        keyword_terms=s.similar_keyword_terms,
        neighbourhood=s.similar_neighbourhood,
        neighbourhood_power=s.similar_neighbourhood_power,
        neighbourhood_blend=s.similar_neighbourhood_blend,
    )


def facet_settings(s: SettingsModel) -> FacetSettings:
    """How similar papers by facet match sentences (``PAPERFEED_SIMILAR_FACET_*``)."""
    from paperfeed.services.facets import FacetSettings

    return FacetSettings(
        candidates=s.similar_facet_candidates,
        blend=s.similar_facet_blend,
        role_floor=s.similar_facet_role_floor,
        aggregate=s.similar_facet_aggregate,
    )


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


def topic_settings(s: SettingsModel) -> TopicSettings:
    """How topics are built (``PAPERFEED_TOPICS_*``)."""
    from paperfeed.domain.topics import TopicSettings

    return TopicSettings(
        min_papers=s.topics_min_papers,
        papers_per_topic=s.topics_papers_per_topic,
        k=s.topics_k or None,
        coarse_k=s.topics_coarse_k or None,
        layout_sample=s.topics_layout_sample,
    )


def harvest_settings(s: SettingsModel) -> HarvestSettings:
    """The citation harvest's batches, caps and refresh windows (``PAPERFEED_CITATIONS_*``)."""
    from datetime import timedelta

    from paperfeed.domain.citation_harvest import HarvestSettings

    return HarvestSettings(
        batch_size=s.citations_batch_size,
        max_citations=s.citations_max,
        refresh_after=timedelta(days=s.citations_refresh_after_days),
        refresh_window=timedelta(days=s.citations_refresh_days),
        daily_max=s.citations_daily_max,
    )


def recommend_settings(s: SettingsModel) -> RecommendSettings:
    """The "For you" feed's window (``PAPERFEED_RECOMMEND_WINDOW_DAYS``)."""
    from paperfeed.services.recommend import RecommendSettings

    return RecommendSettings(window_days=s.recommend_window_days)


def smtp_config(s: SettingsModel, host: str) -> SmtpConfig:
    """Where and how to reach the SMTP server ``host`` (``PAPERFEED_SMTP_*``)."""
    from paperfeed.adapters.mail import SmtpConfig

    return SmtpConfig(
        host=host,
        sender=s.mail_from,
        port=s.smtp_port,
        security=s.smtp_security,
        username=s.smtp_username,
        password=s.smtp_password.get_secret_value() if s.smtp_password else None,
        timeout=s.smtp_timeout,
        ca_file=s.smtp_ca_file,
    )


@dataclass
class App:
    """Lazily built adapters and services for one process; close it when done."""

    settings: SettingsModel
    _closers: list[object] = field(default_factory=list, init=False)
    _embedder: Embedder | None = field(default=None, init=False)
    _derived_seen: str | None = field(default=None, init=False)  # the page version's derived part, last read
    embedding_choice: Resolution | None = field(default=None, init=False)  # why the embedder is that one
    # the adopted-model manifest as the embedder saw it, and when it was last looked at (follow_model)
    _model_stamp: tuple[int, int] | None = field(default=None, init=False)
    _model_checked: float = field(default=0.0, init=False)

    @cached_property
    def store(self) -> SqlPaperStore:
        from paperfeed.adapters.store import open_store

        self.secure_data_folder()
        store = open_store(self.settings.db_url)
        self._closers.append(store)
        return store

    @cached_property
    def reads(self) -> StoreReads:
        """The store for commands that only look (``stats``, search): on SQLite a reader on Python's own
        driver when the file exists at the current schema, which starts without SQLAlchemy; otherwise the
        SQL store (which creates or migrates the database first)."""
        from paperfeed.adapters.sqlite_reads import open_sqlite_reads

        reads = open_sqlite_reads(self.settings.db_url)
        if reads is None:
            return self.store
        self._closers.append(reads)
        return reads

    @cached_property
    def keyword_index(self) -> SyncedKeywordIndex:
        """BM25 search; opening it brings it up to date with the store (a full build the first time)."""
        from paperfeed.adapters.keyword.factory import open_keyword_index

        index = open_keyword_index(self.settings.keyword_engine, self.store.engine, self.settings.data_dir)
        self._closers.append(index)
        return index

    @cached_property
    def ingest(self) -> IngestService:
        from paperfeed.services.ingest import IngestService

        return IngestService(self.store, indexes=[self.keyword_index])

    @cached_property
    def paper_uploads(self) -> PaperUploads:
        """An administrator's upload of a JSONL or BibTeX file of papers (the web's drag-and-drop)."""
        from paperfeed.domain.paper_upload import UploadKind
        from paperfeed.services.paper_upload import PaperUploads

        def open_source(path: Path, kind: UploadKind, name: str) -> PaperSource:
            size = self.settings.batch_size
            if kind == "jsonl":
                from paperfeed.adapters.sources.jsonl_file import JsonlFileSource

                return JsonlFileSource(path, batch_size=size, label=name)
            from paperfeed.adapters.sources.bibtex_papers import BibtexPaperSource

            return BibtexPaperSource(path, label=name, batch_size=size)

        return PaperUploads(self.ingest, open_source, after_import=self.coverage.forget)

    @cached_property
    def coverage(self) -> CoverageService:
        """How many papers meaning search covers (the vector index) of those in the store, cached."""
        from paperfeed.services.coverage import CoverageService

        return CoverageService(
            papers=self.embeddings.count_papers, indexed=self._indexed_papers, activity=self.indexer_activity
        )

    def indexer_activity(self) -> IndexerReport | None:
        """The indexer at work, if one runs (its newest report, when its process is alive and it did not
        stop): what the coverage notice says it is doing (issue #30, item 12)."""
        from paperfeed.adapters.sqlite_reads import SqliteReads
        from paperfeed.services.jobs import holder_is_dead

        reads = self.reads
        report = (
            reads.indexer_report() if isinstance(reads, SqliteReads) else self.embeddings.indexer_report()
        )
        if report is None or report.state == "stopped" or holder_is_dead(report.holder):
            return None
        return report

    @cached_property
    def one_shot_coverage(self) -> CoverageService:
        """:attr:`coverage` for a process that answers one query (``paperfeed search``): the papers are
        counted through :attr:`reads`, so a SQLite store is read without SQLAlchemy (docs/cli.md)."""
        from paperfeed.services.coverage import CoverageService

        return CoverageService(
            papers=lambda: self.reads.stats().papers,
            indexed=self._indexed_papers,
            activity=self.indexer_activity,
        )

    @cached_property
    def indexing_status(self) -> IndexingStatusService:
        """How far embedding has come and what the indexer is doing (/admin/jobs)."""
        from paperfeed.services.indexer_status import IndexingStatusService
        from paperfeed.services.jobs import holder_is_dead

        return IndexingStatusService(
            self.embeddings,
            self.embeddings,
            lambda: self.embedder.model_id,
            self._indexed_papers,
            holder_is_dead,
        )

    def _indexed_papers(self) -> int | None:
        """Papers in the vector index search reads (0 before anything is embedded); None if unreadable."""
        import logging

        try:
            index = self._search_vectors()
        except Exception as exc:  # a notice must never take a page down; search itself says what failed
            logging.getLogger(__name__).warning("cannot count the vector index: %s", exc)
            return None
        return 0 if index is None else len(index)

    @cached_property
    def feeds(self) -> FeedService:
        """Day/week/month feeds, trending, paper lookup (used by the web pages, API and RSS)."""
        from paperfeed.adapters.store.feed_queries import SqlFeedQueries
        from paperfeed.services.feed import FeedService

        return FeedService(SqlFeedQueries(self.store.engine))

    @cached_property
    def paper_graph(self) -> PaperGraphService:
        """The citation graph as readers see it: counts, references, cited-by and related work (#16)."""
        from paperfeed.adapters.store.accounts import hidden_paper_ids
        from paperfeed.services.paper_graph import PaperGraphService

        def visible(ids: Sequence[str]) -> dict[str, Paper]:
            found = self.store.get_papers(ids) if ids else {}
            hidden = hidden_paper_ids(self.store.engine) if found else frozenset()
            return {pid: paper for pid, paper in found.items() if pid not in hidden}

        return PaperGraphService(self.citation_records, paper=self.feeds.queries.paper, papers=visible)

    @cached_property
    def library(self) -> LibraryService:
        """Readers' tags, saves, notes, marks, followed authors and saved searches."""
        from paperfeed.adapters.store.library import SqlLibraryStore
        from paperfeed.services.library import LibraryService

        return LibraryService(
            SqlLibraryStore(self.store.engine),
            self.store,
            lambda: self.search,
            mutes=lambda user_id: self.mutes.filter_for(user_id).muted,
        )

    @cached_property
    def groups(self) -> GroupService:
        """Reading groups: members, invitations, the shared queue, journal-club sessions (docs/groups.md)."""
        from datetime import timedelta

        from paperfeed.adapters.store.groups import SqlGroupStore
        from paperfeed.services.groups import GroupService

        return GroupService(
            SqlGroupStore(self.store.engine),
            self._visible_papers,
            mailer=lambda: self.mailer,
            limit_mail=lambda address, client: self.accounts.limit_mail(address, client),
            invite_lifetime=timedelta(days=self.settings.group_invite_days),
            group_mutes=lambda group_id: self.mutes.group_filter(group_id).muted,
            recommend=lambda group_id, limit: self.group_recommendations.feed(group_id, limit=limit),
        )

    @cached_property
    def group_recommendations(self) -> RecommendationService:
        """ "For the group": the "For you" model over a group's queue and sessions (signals by group id)."""
        from paperfeed.adapters.store.recommend_queries import SqlRecommendQueries
        from paperfeed.services.recommend import RecommendationService, RecommendSettings, with_window

        def alerts(saved: SavedSearch, first: date, last: date, k: int) -> list[str]:
            page = self.search.search(saved.query, with_window(saved.filters, first, last), limit=k)
            return [hit.paper.id for hit in page.hits]

        return RecommendationService(
            signals=self.groups,
            store=self.store,
            embeddings=self.embeddings,
            queries=SqlRecommendQueries(self.store.engine),
            vectors=self._search_vectors,
            model_id=lambda: self.embedder.model_id,
            trending=lambda n: [t.paper for t in self.feeds.trending(limit=n).items],
            alerts=alerts,
            hidden=lambda: [h.paper_id for h in self.accounts.hidden_papers()],
            settings=RecommendSettings(window_days=self.settings.recommend_window_days),
        )

    @cached_property
    def mutes(self) -> MuteService:
        """Readers' and groups' mute rules (authors, categories, words), compiled once per request."""
        from paperfeed.adapters.store.mutes import SqlMuteStore
        from paperfeed.services.mutes import MuteService

        return MuteService(SqlMuteStore(self.store.engine))

    def _visible_papers(self, ids: Sequence[str]) -> dict[str, Paper]:
        """The papers among ``ids`` that exist and that no administrator hid."""
        from paperfeed.adapters.store.accounts import hidden_paper_ids

        found = self.store.get_papers(ids) if ids else {}
        hidden = hidden_paper_ids(self.store.engine) if found else frozenset()
        return {pid: paper for pid, paper in found.items() if pid not in hidden}

    @cached_property
    def library_search(self) -> LibrarySearch:
        """Search my library: a reader's saved papers, tags and notes, by words and by meaning."""
        from paperfeed.adapters.store.library import SqlLibraryStore
        from paperfeed.services.library_search import LibrarySearch

        def embed(texts: Sequence[str]) -> Vectors | None:
            import numpy as np

            return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)

        return LibrarySearch(
            SqlLibraryStore(self.store.engine),
            self._visible_papers,
            embed=embed,
            vectors=lambda ids: self.embeddings.vectors(self.embedder.model_id, ids),
        )

    @cached_property
    def library_import(self) -> LibraryImporter:
        """BibTeX / CSL-JSON / id-list import into a library; missing papers come from the arXiv API (for
        the site's imports in the background, on :attr:`reader_work`, followed as job runs)."""
        from datetime import UTC, datetime

        from paperfeed.adapters.sources.bibliography import read_bibliography_stream
        from paperfeed.services.library_import import ImportJobs, LibraryImporter

        jobs = ImportJobs(self.job_store, self.reader_work, lambda: datetime.now(UTC))
        parse = read_bibliography_stream
        return LibraryImporter(self.library, self.ingest, lambda: self.arxiv_api, parse, jobs)

    def secure_data_folder(self) -> None:
        """The data folder ``0700``, the SQLite database, its WAL and the secret key ``0600``, whatever the
        umask; looser existing ones are tightened and logged (``adapters/data_folder.py`` says why)."""
        from paperfeed.adapters.data_folder import secure_data_folder

        secure_data_folder(self.settings.data_dir, sqlite=self.settings.database_url is None)

    @staticmethod
    def write_private_file(path: Path, content: bytes) -> None:
        """Write ``content`` to ``path`` readable by its owner only (``0600``): a reader's data export."""
        from paperfeed.adapters.data_folder import private_file

        with private_file(path) as out:
            out.write(content)

    @cached_property
    def search_limiter(self) -> ClientRateLimiter:
        """Anonymous searches per client address (``PAPERFEED_SEARCH_RATE_PER_MINUTE``), per process."""
        from paperfeed.services.rate_limits import ClientRateLimiter

        return ClientRateLimiter(self.settings.search_rate_per_minute)

    @staticmethod
    def release_free_memory() -> None:
        """Give the allocator's free pages back to the system after a large request (glibc)."""
        from paperfeed.adapters.memory import release_free_memory

        release_free_memory()

    @cached_property
    def reader_work(self) -> ReaderWork:
        """The thread that runs readers' slow work one job at a time; closing the App stops it."""
        from paperfeed.services.library_import import ReaderWork

        return ReaderWork()  # closed first by close(): its jobs use the store and the HTTP clients

    def _digest_papers_of(self, user_id: int) -> set[str]:
        """Every paper the reader's digest subscription already mailed them (For you never repeats one)."""
        stored = self.digest_store.subscription_of_user(user_id)
        if stored is None:
            return set()
        sid = stored.subscription.id
        return self.digest_store.sent_papers([sid]).get(sid, set())

    @cached_property
    def recommendations(self) -> RecommendationService:
        """The "For you" feed: recent papers ranked per reader by a linear model on their vectors."""
        from paperfeed.adapters.store.recommend_queries import SqlRecommendQueries
        from paperfeed.services.recommend import RecommendationService, with_window

        def alerts(saved: SavedSearch, first: date, last: date, k: int) -> list[str]:
            page = self.search.search(saved.query, with_window(saved.filters, first, last), limit=k)
            return [hit.paper.id for hit in page.hits]

        return RecommendationService(
            signals=self.library,
            store=self.store,
            embeddings=self.embeddings,
            queries=SqlRecommendQueries(self.store.engine),
            vectors=self._search_vectors,
            model_id=lambda: self.embedder.model_id,
            trending=lambda n: [t.paper for t in self.feeds.trending(limit=n).items],
            alerts=alerts,
            hidden=lambda: [h.paper_id for h in self.accounts.hidden_papers()],
            upvoted=lambda user_id: self.community.upvoted_ids(user_id),
            shown=self._digest_papers_of,
            topics=self.topic_picks,
            settings=recommend_settings(self.settings),
        )

    @cached_property
    def secret_key(self) -> bytes:
        """Keys CSRF tokens and rate-limit digests (``secret_key.py`` says where it comes from)."""
        from paperfeed.secret_key import resolve_secret

        return resolve_secret(self.settings)

    @cached_property
    def community(self) -> CommunityService:
        """Upvotes, submissions to the daily feed (fetched from the arXiv API) and comments."""
        from paperfeed.adapters.store.community import SqlCommunityStore
        from paperfeed.services.community import CommunityLimits, CommunityService

        limits = CommunityLimits(self.settings.submissions_per_day, self.settings.comments_per_hour)
        return CommunityService(
            SqlCommunityStore(self.store.engine), lambda: self.ingest, lambda: self.arxiv_interactive, limits
        )

    @cached_property
    def accounts(self) -> AccountService:
        """Sign-up, sign-in, sessions, API tokens and moderation (mail goes through ``self.mailer``)."""
        from paperfeed.adapters.store.accounts import SqlAccountStore
        from paperfeed.services.accounts import AccountService

        service = AccountService(
            SqlAccountStore(self.store.engine), mailer=lambda: self.mailer, secret=lambda: self.secret_key
        )
        self._closers.append(service)
        return service

    @cached_property
    def account_data(self) -> AccountDataService:
        """A reader's data export (a zip) and self-service account deletion."""
        from paperfeed.adapters.store.account_data import SqlReaderDataStore
        from paperfeed.domain.citation import bibtex
        from paperfeed.services.account_data import AccountDataService

        return AccountDataService(
            SqlReaderDataStore(self.store.engine),
            self.accounts.store,
            papers=self.store.get_papers,
            bibtex=bibtex,
            mailer=lambda: self.mailer,
            secret=lambda: self.secret_key,
        )

    def embedder_config(self, backend: str | None = None) -> EmbedderConfig:
        """How to build ``backend`` (default: the configured one) with this process's thread budget."""
        from paperfeed.adapters.embed.cpu import available_cores, runs_in_background

        s = self.settings
        background = runs_in_background()
        cores = available_cores()
        threads = s.embedding_threads or (max(1, cores // 2) if background else cores)
        return embedder_config(s, backend=backend, threads=threads, spinning=not background)

    def embed_workers(self, workers: int) -> EmbedWorkers:
        """``workers`` embedding processes sharing this process's thread budget (``index --workers``)."""
        from paperfeed.adapters.embed.cpu import available_cores
        from paperfeed.adapters.embed.pool import ProcessEmbedWorkers

        choice = self.embedding_choice
        config = self.embedder_config(choice.backend if choice is not None else None)
        return ProcessEmbedWorkers(
            config, workers, total_threads=self.settings.embedding_threads or available_cores()
        )

    @cached_property
    def backend_chooser(self) -> BackendChooser:
        """Measures the embedding backends on this machine (``PAPERFEED_EMBEDDING_BACKEND=auto``)."""
        from paperfeed.adapters.embed import open_embedder, resolve_model
        from paperfeed.adapters.embed.calibration_file import CALIBRATION_FILE, CalibrationFile
        from paperfeed.adapters.embed.cpu import cpu_info
        from paperfeed.adapters.embed.probe_texts import PROBE_TEXTS
        from paperfeed.services.calibration import BackendChooser

        def probe_texts(n: int) -> tuple[list[str], str]:
            own = [p.text for p in self.embeddings.backlog("", limit=n)]  # "": no model, every paper
            if len(own) >= n:
                return own, "instance papers"
            return list(PROBE_TEXTS[:n]), "bundled sentences"

        config = self.embedder_config()
        return BackendChooser(
            open_backend=lambda backend: open_embedder(self.embedder_config(backend)),
            records=CalibrationFile(self.settings.data_dir / CALIBRATION_FILE),
            probe_texts=probe_texts,
            stored_models=self.embeddings.model_counts,
            model=resolve_model(config.model).name + f"@{config.max_tokens}",
            cpu=cpu_info().describe(),
            threads=config.threads or 0,
        )

    def resolve_embedder(self, *, calibrate: bool) -> Embedder:
        """The configured embedder; ``auto`` resolves through :attr:`backend_chooser` (a stored
        calibration, else the stored vectors' space, else -- when ``calibrate`` -- one measured now).
        Its model loads on first use (ONNX files are built once, cached)."""
        if self._embedder is not None:
            return self._embedder
        from paperfeed.adapters.embed import open_embedder

        self._model_stamp = self._adopted_stamp()
        choice = None
        if self.settings.embedding_backend == "auto":
            choice = self.backend_chooser.resolve(calibrate=calibrate)
        embedder = open_embedder(self.embedder_config(choice.backend if choice is not None else None))
        if choice is None or choice.final:  # a provisional guess is asked again next time
            self._embedder, self.embedding_choice = embedder, choice
        return embedder

    @property
    def embedder(self) -> Embedder:
        """The embedder for reading (queries, model ids): never waits for a calibration."""
        self.follow_model()
        return self.resolve_embedder(calibrate=False)

    def _adopted_stamp(self) -> tuple[int, int] | None:
        try:
            found = (self.settings.data_dir / "models" / "active-model.json").stat()
        except OSError:
            return None
        return found.st_mtime_ns, found.st_size

    def follow_model(self) -> bool:
        """Notice ``paperfeed model adapt`` (or ``reset``) changing the adopted model since this process
        made its embedder -- looked at once per ``PAPERFEED_VECTOR_RELOAD_SECONDS`` -- and then make the
        embedder, the indexing service and the vector reader afresh, so a running server embeds queries,
        and a running indexer papers, with the model the vectors are now being made of. True when it did."""
        import time

        now = time.monotonic()
        if self._embedder is None or now - self._model_checked < self.settings.vector_reload_seconds:
            return False
        self._model_checked = now
        if self._adopted_stamp() == self._model_stamp:
            return False
        self._embedder, self.embedding_choice = None, None
        for made in ("indexing", "sentence_indexing", "_vector_reader"):
            self.__dict__.pop(made, None)
        return True

    @cached_property
    def adaptation(self) -> AdaptationService:
        """``paperfeed model adapt|status|reset``: fine-tuning the embedding model on this instance."""
        from paperfeed.adapters.embed.adapted import ModelFolder
        from paperfeed.adapters.embed.base import resolve_model
        from paperfeed.adapters.embed.trainer import SentenceTransformersTrainer
        from paperfeed.domain.adaptation import CitationPairs, title_abstract_pairs
        from paperfeed.services.adaptation import AdaptationService

        base = resolve_model(self.settings.embedding_model)
        return AdaptationService(
            self.store.iter_papers,
            SentenceTransformersTrainer(base),
            ModelFolder(self.settings.data_dir / "models"),
            base_spec=(self.settings.embedding_model or "").strip(),
            base_name=base.name,
            pair_sources=(
                ("title ↔ abstract", title_abstract_pairs),
                ("citing ↔ cited", CitationPairs(self.citation_records)),
            ),
        )

    @cached_property
    def embeddings(self) -> SqlEmbeddingStore:
        from paperfeed.adapters.store.embeddings import SqlEmbeddingStore

        return SqlEmbeddingStore(self.store.engine)

    @cached_property
    def indexing(self) -> IndexingService:
        """Background embedding of new and changed papers (``paperfeed index``)."""
        from paperfeed.services.indexing import IndexingService

        return IndexingService(
            self.embeddings,
            self.resolve_embedder(calibrate=True),
            self._open_vector_index,
            batch_size=self.settings.embedding_batch_size,
            marks=self._node_marks(),
            reports=self.embeddings,
        )

    def _local_indexes_on_postgres(self) -> tuple[bool, bool]:
        """(keyword, vectors): the derived indexes this node keeps on its own disk for a PostgreSQL store."""
        from paperfeed.adapters.keyword.factory import resolve_engine
        from paperfeed.adapters.vector.factory import uses_pgvector

        engine = self.store.engine
        if engine.dialect.name != "postgresql":
            return False, False
        keyword = resolve_engine(self.settings.keyword_engine, engine) == "tantivy"
        return keyword, not uses_pgvector(engine, self.settings.vector_index)

    def page_version(self) -> DataVersion:
        """What the web's page cache keys anonymous answers by: the store's data version and, on a node
        whose indexes follow a PostgreSQL store, how far they have followed it. A search rendered after
        another node's write reached the store but before this node's indexes took it in must not be
        kept as current: it is one version behind, so the page cache's import grace bounds it (its vector
        index's sync point, like the store's, moves the derived part, which has no grace).

        When the derived part moves, this process's own readers catch up first (the coverage counts, the
        vector index search reads), so the page rendered for the new version shows the new state."""
        version = self.feeds.data_version()
        keyword, vectors = self._followed_state_files
        if keyword or vectors:
            from dataclasses import replace

            from paperfeed.adapters.files import fingerprint

            version = replace(
                version,
                papers=f"{version.papers}|node:{fingerprint(keyword)}" if keyword else version.papers,
                derived=f"{version.derived}|node:{fingerprint(vectors)}" if vectors else version.derived,
            )
        if version.derived != self._derived_seen:
            if self._derived_seen is not None:
                self._catch_up_readers()
            self._derived_seen = version.derived
        return version

    def _catch_up_readers(self) -> None:
        """Forget what this process cached of the derived data (a topics build, an index save, a job's
        end): the coverage counts, the citation ranking, and reload the vector index search reads."""
        import logging

        built = self.__dict__
        if "coverage" in built:
            self.coverage.forget()
        if "cited_trending" in built:
            self.cited_trending.forget()
        if "_vector_reader" in built:
            try:
                self._vector_reader.refresh()
            except Exception as exc:  # search itself says what is wrong with its index; a page must render
                logging.getLogger(__name__).warning("could not reload the vector index: %s", exc)

    @cached_property
    def _followed_state_files(self) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
        """The small files that move when this node's own indexes catch up with the store: (the keyword
        index's state, its watermark; the vector index's mark)."""
        keyword, vectors = self._local_indexes_on_postgres()
        data = self.settings.data_dir
        return (
            (data / "keyword" / "state.json",) if keyword else (),
            (data / _NODE_VECTOR_MARKS,) if vectors else (),
        )

    def _node_marks(self) -> IndexMarks | None:
        """A node-local vector index on PostgreSQL keeps its sync point on the node (None: in the store)."""
        if not self._local_indexes_on_postgres()[1]:
            return None
        from paperfeed.adapters.vector.marks import FolderMarks

        return FolderMarks(self.settings.data_dir / _NODE_VECTOR_MARKS)

    def open_local_keyword_index(self) -> None:
        """On SQLite with tantivy, open the keyword index before the first request: opening builds it when
        it is missing, damaged or of an older version (~35 s at 200k papers), and a paper page or search
        that met it first would wait that long. PostgreSQL nodes do the same in
        :meth:`start_index_follower`; FTS5 and PostgreSQL full-text search live in the store."""
        from paperfeed.adapters.keyword.factory import resolve_engine

        engine = self.store.engine
        if (
            engine.dialect.name == "sqlite"
            and resolve_engine(self.settings.keyword_engine, engine) == "tantivy"
        ):
            _ = self.keyword_index

    @cached_property
    def shared_pages(self) -> SharedPageCache | None:
        """The page cache the web workers of this node share (None: one worker, or turned off)."""
        settings = self.settings
        if settings.workers < 2 or settings.page_cache_shared_mb <= 0:
            return None
        from paperfeed.adapters.page_cache import DiskPageCache

        pages = DiskPageCache(
            settings.data_dir / "cache" / "pages", settings.page_cache_shared_mb * 1024 * 1024
        )
        self._closers.append(pages)
        return pages

    def start_index_follower(self) -> IndexFollower | None:
        """On PostgreSQL with node-local indexes: build what is missing now (the cold start, timed and
        logged), then follow the database every ``PAPERFEED_INDEX_FOLLOW_SECONDS`` (docs/deployment.md).

        One process per node follows (a lock in the data folder; the others read the same folders and
        reload when they change, and take over if that process dies). None when there is nothing to follow.
        """
        keyword_local, vectors_local = self._local_indexes_on_postgres()
        if not (keyword_local or vectors_local):
            return None
        from paperfeed.adapters.node_lock import NodeLock
        from paperfeed.services.index_follow import IndexFollower
        from paperfeed.services.indexing import IndexingService, IndexSync

        lock = NodeLock(self.settings.data_dir / "index-follower.lock")
        self._closers.append(lock)
        follow_keyword: Callable[[], int] | None = None
        follow_vectors: Callable[[], IndexSync | None] | None = None
        if keyword_local:
            from paperfeed.adapters.keyword.tantivy_index import TantivyKeywordIndex

            index = self.keyword_index  # opening it builds it when missing or damaged
            if isinstance(index, TantivyKeywordIndex):
                keyword_index = index

                def follow_keyword() -> int:
                    return keyword_index.follow_store() if lock.held() else 0

        if vectors_local:
            vectors = IndexingService(
                self.embeddings,
                self.embedder,
                self._open_vector_index,
                batch_size=self.settings.embedding_batch_size,
                marks=self._node_marks(),
            )

            def follow_vectors() -> IndexSync | None:
                return vectors.follow_index() if lock.held() else None

        follower = IndexFollower(
            keyword=follow_keyword, vectors=follow_vectors, every=self.settings.index_follow_seconds
        )
        follower.start()
        self._closers.append(follower)
        return follower

    @cached_property
    def check(self) -> CheckService:
        """``paperfeed check``: the indexes against the store, and their repair."""
        from paperfeed.adapters.consistency import StoreInspector
        from paperfeed.services.check import CheckService

        inspector = StoreInspector(
            self.store.engine,
            self.settings.data_dir,
            self.settings.keyword_engine,
            self.settings.vector_index,
        )
        return CheckService(
            inspector, model_id=lambda: self.embedder.model_id, indexing=lambda: self.indexing
        )

    @cached_property
    def search(self) -> HybridSearch:
        """Hybrid keyword + semantic search; semantic parts load on the first query that needs them."""
        from paperfeed.adapters.store.accounts import hidden_paper_ids

        search = self._hybrid_search(
            self.store, self.keyword_index, lambda: hidden_paper_ids(self.store.engine), similar=True
        )
        self._closers.append(search)
        return search

    @cached_property
    def one_shot_search(self) -> HybridSearch:
        """The search of a process that answers one query and exits (``paperfeed search``): the papers
        come from :attr:`reads` and, when it is provably current, the tantivy index is opened for
        searching only, so a keyword search on SQLite starts without SQLAlchemy (docs/cli.md). Anything
        else (PostgreSQL, FTS5, an index behind the store) is :attr:`search`'s own parts."""
        from paperfeed.adapters.sqlite_reads import SqliteReads

        reads = self.reads
        keyword: KeywordIndex | None = None
        if self.settings.keyword_engine in ("auto", "tantivy") and isinstance(reads, SqliteReads):
            import importlib.util

            if importlib.util.find_spec("tantivy") is not None:
                from paperfeed.adapters.keyword.tantivy_index import TantivyKeywordIndex

                keyword = TantivyKeywordIndex.open_current(self.settings.data_dir / "keyword", reads)
        if keyword is None:
            return self.search
        self._closers.append(keyword)
        search = self._hybrid_search(reads, keyword, reads.hidden_paper_ids, similar=False)
        self._closers.append(search)
        return search

    def _hybrid_search(
        self,
        papers: PaperLookup,
        keyword: KeywordIndex,
        hidden: Callable[[], frozenset[str]],
        *,
        similar: bool,
    ) -> HybridSearch:
        from paperfeed.services.search import HybridSearch

        return HybridSearch(
            papers,
            keyword,
            self._search_vectors,
            lambda: self.embedder,
            search_settings(self.settings),
            similar_settings(self.settings),
            hidden=hidden,
            similar_evidence=self._similar_evidence() if similar else (),
            topic_members=lambda topic_id: self.topic_picks.members(topic_id),
        )

    def _similar_evidence(self) -> tuple[tuple[SimilarSource, float], ...]:
        """What "similar papers" adds to the cosine: the citation graph, when its weight is above 0."""
        if self.settings.similar_graph_weight <= 0:
            return ()
        from paperfeed.services.similar_graph import GraphSimilar

        return ((GraphSimilar(self.citation_records, self.store), self.settings.similar_graph_weight),)

    # -- sentences and similar papers by facet (issue #33, parts 4-5) --------------------------------------

    @cached_property
    def sentence_store(self) -> SqlSentenceStore:
        """Papers' sentences, their roles and vectors (``paper_sentences``)."""
        from paperfeed.adapters.store.sentences import SqlSentenceStore

        return SqlSentenceStore(self.store.engine)

    @cached_property
    def role_models(self) -> RoleModelFolder:
        """The sentence-role classifier, kept in ``<data>/models/sentence-roles`` for the current model."""
        from paperfeed.adapters.sentences.roles import RoleModelFolder

        return RoleModelFolder(self.settings.data_dir / "models" / "sentence-roles")

    @cached_property
    def sentence_indexing(self) -> SentenceIndexer:
        """The indexer's second pass: abstracts split into sentences, embedded and given their roles."""
        from paperfeed.adapters.sentences.splitter import SentencexSplitter
        from paperfeed.services.sentences import SentenceIndexer

        return SentenceIndexer(
            self.sentence_store,
            self.resolve_embedder(calibrate=True),
            SentencexSplitter(),
            self.role_models,
            batch_size=self.settings.sentences_batch_size,
        )

    @cached_property
    def facets(self) -> FacetedSimilar:
        """Similar papers by background, method or result (``overall``: :attr:`search`'s own list)."""
        from paperfeed.services.facets import FacetedSimilar

        return FacetedSimilar(
            self.search, self.sentence_store, lambda: self.embedder.model_id, facet_settings(self.settings)
        )

    @cached_property
    def cited_trending(self) -> CitedTrending:
        """Trending by citation velocity (``/trending?sort=cited``, ``sort=cited`` of the API)."""
        from paperfeed.adapters.store.cited_queries import SqlCitedQueries
        from paperfeed.services.citation_trend import CitedTrending

        return CitedTrending(SqlCitedQueries(self.store.engine))

    @cached_property
    def reference_bibliography(self) -> ReferenceBibliography:
        """BibTeX of papers with their references (``paperfeed library export --with-references``)."""
        from paperfeed.services.library_references import ReferenceBibliography

        return ReferenceBibliography(self.citation_records, self.store)

    def _search_vectors(self) -> VectorIndex | None:
        """The stored vector index for reading: found once it exists, reloaded when another process saves
        a newer generation (:class:`~paperfeed.services.vector_reader.VectorReader`), made afresh when the
        adopted model changed (:meth:`follow_model`)."""
        self.follow_model()
        return self._vector_reader()

    @cached_property
    def _vector_reader(self) -> VectorReader:
        from paperfeed.services.vector_reader import VectorReader

        return VectorReader(self._open_search_vectors, every=self.settings.vector_reload_seconds)

    def _open_search_vectors(self) -> VectorIndex | None:
        """The stored vector index, opened for reading; None while nothing has been embedded."""
        if self._folder_vectors_only():
            # a SQLite store's folder index: found and checked without the store's engine (docs/cli.md)
            from paperfeed.adapters.vector import open_vector_index
            from paperfeed.adapters.vector.factory import check_folder_model, folder_dimension

            folder_dim = folder_dimension(self.vector_index_path)
            if folder_dim is None:
                return None
            model_id = self.embedder.model_id
            check_folder_model(self.vector_index_path, model_id=model_id)
            return open_vector_index(
                self.vector_index_path, kind="auto", model_id=model_id, dimension=folder_dim
            )
        from paperfeed.adapters.vector.factory import check_stored_model, stored_dimension

        dimension = stored_dimension(self.store.engine, self.vector_index_path, self.settings.vector_index)
        if dimension is None:
            return None  # nothing embedded yet: keyword search only
        model_id = self.embedder.model_id
        check_stored_model(
            self.store.engine, self.vector_index_path, model_id=model_id, choice=self.settings.vector_index
        )
        return self._open_vector_index(model_id=model_id, dimension=dimension, fresh=False)

    def _folder_vectors_only(self) -> bool:
        """A SQLite store whose vectors can only be a folder index (PAPERFEED_VECTOR_INDEX auto/local)."""
        from paperfeed.adapters.sqlite_reads import sqlite_path

        choice = self.settings.vector_index
        return choice in ("auto", "local") and sqlite_path(self.settings.db_url) is not None

    @property
    def vector_index_path(self) -> Path:
        return self.settings.data_dir / "vectors"

    def _open_vector_index(self, *, model_id: str, dimension: int, fresh: bool) -> VectorIndex:
        """The index ``paperfeed index`` maintains (the factory chooses pgvector or a folder index)."""
        from paperfeed.adapters.vector.factory import open_deployment_index

        return open_deployment_index(
            self.store.engine,
            self.vector_index_path,
            model_id=model_id,
            dimension=dimension,
            fresh=fresh,
            choice=self.settings.vector_index,
        )

    @property
    def mail_is_kept(self) -> bool:
        """No mail server (``PAPERFEED_SMTP_HOST``): mail is kept in :attr:`outbox_folder`, not sent."""
        return not self.settings.smtp_host

    @property
    def outbox_folder(self) -> Path:
        return self.settings.data_dir / "outbox"

    def kept_mail(self) -> list[KeptMail]:
        """What the outbox kept, oldest first, with its links decoded (``paperfeed mail outbox``)."""
        from paperfeed.adapters.mail.outbox import read_outbox

        return read_outbox(self.outbox_folder)

    @cached_property
    def mailer(self) -> SessionMailer:
        """SMTP when ``PAPERFEED_SMTP_HOST`` is set; otherwise ``.eml`` files in ``<data_dir>/outbox``."""
        from paperfeed.adapters.mail import OutboxMailer, SmtpMailer

        s = self.settings
        if not s.smtp_host:  # mail_is_kept
            return OutboxMailer(self.outbox_folder, s.mail_from)
        config = smtp_config(s, s.smtp_host)
        return SmtpMailer(config)

    def eml_bytes(self, mail: OutgoingMail) -> bytes:
        """``mail`` as the ``.eml`` file the mailer would send (for previews written to a file)."""
        from paperfeed.adapters.mail.message import build_message, to_bytes

        return to_bytes(build_message(mail, self.settings.mail_from), utf8=True, linesep="\n")

    @property
    def public_url(self) -> str:
        """Where links in mail point: ``PAPERFEED_BASE_URL``, else this instance's own host and port
        (never a request's Host header: see :mod:`paperfeed.public_url`)."""
        from paperfeed.public_url import public_url

        return public_url(self.settings)

    @cached_property
    def digest_store(self) -> SqlDigestStore:
        """Digest subscriptions, the send ledger, bounces (and the sender's lease)."""
        from paperfeed.adapters.store.digests import SqlDigestStore

        return SqlDigestStore(self.store.engine)

    @cached_property
    def citation_records(self) -> SqlCitationRecords:
        """The paper graph (works, citations, the citation harvest ledger) in the store's database."""
        from paperfeed.adapters.store.citations import SqlCitationRecords

        return SqlCitationRecords(self.store.engine)

    @cached_property
    def topics(self) -> TopicService:
        """Topics (issue #17): built from the stored embeddings with scikit-learn, kept in the store."""
        from datetime import timedelta

        from paperfeed.adapters.store.topics import SqlTopicRecords
        from paperfeed.adapters.topic_model import SklearnTermCounter, SklearnTopicModeller
        from paperfeed.services.topics import TopicService

        s = self.settings
        return TopicService(
            SqlTopicRecords(self.store.engine),
            self.embeddings,
            self.store.get_papers,
            lambda: SklearnTopicModeller(s.topics_method, layout=s.topics_layout),
            SklearnTermCounter,
            topic_settings(s),
            rebuild_after=timedelta(days=s.topics_rebuild_days),
            rebuild_growth=s.topics_rebuild_growth,
            now=self.feeds.now,
        )

    @cached_property
    def topic_rising(self) -> RisingService:
        """Rising this week (issue #17): for the daily page, ``/api/topics/rising`` and the digest."""
        from paperfeed.adapters.store.topics import SqlTopicRecords
        from paperfeed.services.topic_rising import RisingService

        return RisingService(SqlTopicRecords(self.store.engine), now=self.feeds.now)

    @cached_property
    def topic_picks(self) -> TopicPickService:
        """Topics a reader picked ("For you" cold start), a paper's topic, a search's topic filter."""
        from paperfeed.adapters.store.topic_picks import SqlTopicPicks
        from paperfeed.services.topic_picks import TopicPickService

        lookups = SqlTopicPicks(self.store.engine)
        return TopicPickService(self.topics.records, lookups, lookups)

    @cached_property
    def job_store(self) -> SqlJobStore:
        """Job runs and the leases that keep one runner per job and one scheduler."""
        from paperfeed.adapters.store.job_runs import SqlJobStore

        return SqlJobStore(self.store.engine)

    @cached_property
    def supervisor_status(self) -> SupervisorStatusStore:
        """What ``paperfeed run`` publishes about its children (files in ``<data_dir>/run``, no database)."""
        from paperfeed.adapters.supervisor_status import JsonSupervisorStatus

        return JsonSupervisorStatus(self.settings.data_dir / "run")

    @cached_property
    def topic_map(self) -> TopicMapService:
        """The map of the papers (``/map``, a paper's small map): reads the topic build's layout."""
        from paperfeed.adapters.store.topic_map import SqlMapRecords
        from paperfeed.services.topic_map import TopicMapService

        return TopicMapService(SqlMapRecords(self.store.engine))

    @cached_property
    def digest_links(self) -> LinkSigner:
        """Signs the confirm / preferences / one-click unsubscribe links of digest mail."""
        from paperfeed.domain.digest_links import LinkSigner

        return LinkSigner(self.secret_key)

    def digest_renderer(self, base_url: str) -> DigestRenderer:
        """Digest and subscription mail (Jinja templates) with links under ``base_url``."""
        from paperfeed.adapters.mail.digest_render import JinjaDigestRenderer

        return JinjaDigestRenderer(base_url, self.digest_links)

    @cached_property
    def subscriptions(self) -> SubscriptionService:
        """Digest subscriptions: double opt-in, preferences and unsubscribe links."""
        from paperfeed.services.digest import SubscriptionService

        return SubscriptionService(
            self.digest_store,
            lambda: self.mailer,
            lambda: self.digest_links,
            self.digest_renderer,
            user_for_email=self.library.user_id_for_email,
            limit_mail=lambda address, client: self.accounts.limit_mail(address, client),
        )

    @cached_property
    def digests(self) -> DigestService:
        """Composes due digests into the send ledger and sends them exactly once."""
        from paperfeed.adapters.store.accounts import hidden_paper_ids
        from paperfeed.domain.digest import Section, SectionProvider
        from paperfeed.services.digest_personal import AlertsSection, AuthorsSection, ForYouSection
        from paperfeed.services.digest_sections import CategorySection, TrendingSection
        from paperfeed.services.digest_send import DigestService, DigestSettings
        from paperfeed.services.recommend import with_window

        def alert_matches(saved: SavedSearch, first: date, last: date, k: int) -> list[Paper]:
            page = self.search.search(saved.query, with_window(saved.filters, first, last), limit=k)
            return [hit.paper for hit in page.hits]

        providers: dict[Section, SectionProvider] = {
            Section.trending: TrendingSection(self.feeds),
            Section.categories: CategorySection(
                self.digest_store.paper_times_in_window, self.store.get_papers
            ),
            Section.for_you: ForYouSection(lambda: self.recommendations),
            Section.alerts: AlertsSection(self.library.searches, alert_matches),
            Section.authors: AuthorsSection(
                self.library.followed, lambda name, k: self.library.author(name, limit=k).papers
            ),
        }
        return DigestService(
            self.digest_store,
            self.store,
            providers,
            lambda: self.mailer,
            lambda: self.digest_renderer(self.public_url),
            DigestSettings(base_url=self.public_url),
            latest_activity=self.feeds.queries.latest_activity,
            hidden=lambda: hidden_paper_ids(self.store.engine),
            rising=self.topic_rising,
            mutes=lambda user_id: self.mutes.filter_for(user_id).muted,
            groups=lambda: self.group_digests,
        )

    @cached_property
    def group_digests(self) -> GroupDigests:
        """Reading groups' weekly digests, composed into the digest send ledger (docs/groups.md)."""
        from paperfeed.adapters.store.groups import SqlGroupStore
        from paperfeed.domain.search import SearchFilters
        from paperfeed.services.group_digest import GroupDigests, GroupDigestSettings

        def matches(query: str, since: datetime, until: datetime, k: int) -> list[Paper]:
            window = SearchFilters(date_from=since.date(), date_to=until.date())
            page = self.search.search(query, window, limit=k)
            return [h.paper for h in page.hits if h.paper.published and since <= h.paper.published < until]

        s = self.settings
        return GroupDigests(
            SqlGroupStore(self.store.engine),
            self.digest_store,
            self._visible_papers,
            matches,
            group_mutes=self.mutes.group_filter,
            reader_mutes=self.mutes.filter_for,
            signer=lambda: self.digest_links,
            settings=GroupDigestSettings(self.public_url, s.group_digest_weekday, s.group_digest_hour),
        )

    @cached_property
    def http(self) -> PoliteClient:
        from urllib.parse import urlsplit

        from paperfeed.adapters.sources.http import PoliteClient

        s = self.settings
        intervals = {
            urlsplit(s.arxiv_oai_url).netloc: s.arxiv_delay,
            urlsplit(s.arxiv_api_url).netloc: s.arxiv_delay,
            urlsplit(s.hf_api_url).netloc: s.hf_delay,
            urlsplit(s.s2_api_url).netloc: s.s2_delay,
            urlsplit(s.openalex_api_url).netloc: s.openalex_delay,
        }
        client = PoliteClient(
            user_agent=s.user_agent(), timeout=s.http_timeout, retries=s.http_retries, min_interval=intervals
        )
        self._closers.append(client)
        return client

    @cached_property
    def arxiv_api(self) -> ArxivApiClient:
        from paperfeed.adapters.sources.arxiv_api import ArxivApiClient

        return ArxivApiClient(self.http, self.settings.arxiv_api_url)

    @cached_property
    def arxiv_interactive(self) -> ArxivApiClient:
        """The arXiv API for a person waiting on a page (submissions): one attempt, a short timeout.

        The harvest client's retries and 30 s timeouts held such a request for half a minute while arXiv
        was down; this one gives up after ``PAPERFEED_SUBMIT_TIMEOUT`` (still spacing its requests)."""
        from urllib.parse import urlsplit

        from paperfeed.adapters.sources.arxiv_api import ArxivApiClient
        from paperfeed.adapters.sources.http import PoliteClient

        s = self.settings
        client = PoliteClient(
            user_agent=s.user_agent(),
            timeout=s.submit_timeout,
            retries=0,
            min_interval={urlsplit(s.arxiv_api_url).netloc: s.arxiv_delay},
        )
        self._closers.append(client)
        return ArxivApiClient(client, s.arxiv_api_url)

    def arxiv_oai_harvest(
        self,
        *,
        set_spec: str | None,
        metadata_prefix: str = "arXiv",
        from_date: str | None = None,
        until: str | None = None,
        restart: bool = False,
        notify: Callable[[str], None] | None = None,
    ) -> ArxivOaiSource:
        """An arXiv OAI-PMH harvest; without ``from_date`` it continues from the last completed one."""
        from paperfeed.adapters.sources.arxiv_oai import plan_harvest

        return plan_harvest(
            self.http,
            self.store,
            self.settings.arxiv_oai_url,
            metadata_prefix=metadata_prefix,
            set_spec=set_spec,
            from_date=from_date,
            until=until,
            restart=restart,
            notify=notify or (lambda _message: None),
        )

    # -- sources ------------------------------------------------------------------------------------------

    def arxiv_ids(self, ids: tuple[str, ...]) -> ArxivApiSource:
        """The arXiv API as a source of the papers with these (canonical) ids, 100 per request."""
        from paperfeed.adapters.sources.arxiv_api import ArxivApiSource

        return ArxivApiSource(self.arxiv_api, ids=ids)

    def hf_daily(self, first: date, last: date) -> HfDailySource:
        """Hugging Face Daily Papers of the days ``first``..``last`` (inclusive)."""
        from paperfeed.adapters.sources.hf_daily import HfDailySource

        return HfDailySource(self.http, self.settings.hf_api_url, first, last)

    @contextmanager
    def hf_daily_probe(self, day: date, timeout: float) -> Iterator[HfDailySource]:
        """Hugging Face Daily Papers of ``day`` through a client that tries once within ``timeout``
        seconds: a quick refresh that gives up at once when the network is not there."""
        from urllib.parse import urlsplit

        from paperfeed.adapters.sources.hf_daily import HfDailySource
        from paperfeed.adapters.sources.http import PoliteClient

        s = self.settings
        probe = PoliteClient(
            user_agent=s.user_agent(),
            timeout=timeout,
            retries=0,
            min_interval={urlsplit(s.hf_api_url).netloc: s.hf_delay},
        )
        try:
            yield HfDailySource(probe, s.hf_api_url, day, day)
        finally:
            probe.close()

    def arxiv_listing(
        self, category: str, since: datetime, max_results: int, clock: Callable[[], datetime]
    ) -> ArxivListingSource:
        """The newest arXiv submissions of ``category`` back to ``since`` (resumable, arXiv API)."""
        from paperfeed.adapters.sources.arxiv_api import ArxivListingSource

        return ArxivListingSource(
            self.arxiv_api,
            category,
            since,
            max_results=max_results,
            page_size=min(200, max_results),
            clock=clock,
        )

    @cached_property
    def fill(self) -> FillService:
        """First-start fill of the window and the catch-up of missed days (``paperfeed harvest fill``,
        ``paperfeed run``, the daily job's harvest steps)."""
        from datetime import timedelta

        from paperfeed.domain.fill import parse_categories
        from paperfeed.services.fill import FillService, FillSettings

        s = self.settings
        config = FillSettings(
            days=s.fill_days,
            categories=parse_categories(s.arxiv_categories),
            listing_max=s.arxiv_listing_max,
            rederive_after=timedelta(days=7),
        )
        return FillService(
            self.store,
            ingest=lambda: self.ingest,
            hf_day=lambda day: self.hf_daily(day, day),
            hf_probe=self.hf_daily_probe,
            arxiv_papers=lambda: self.arxiv_api,
            arxiv_listing=self.arxiv_listing,
            settings=config,
        )

    def citation_source(self, name: str) -> CitationSource:
        """A scholarly API as a citation source: ``s2`` (Semantic Scholar) or ``openalex``."""
        s = self.settings
        if name == "s2":
            from paperfeed.adapters.sources.semantic_scholar import SemanticScholarSource

            key = s.s2_api_key.get_secret_value() if s.s2_api_key else None
            return SemanticScholarSource(self.http, s.s2_api_url, api_key=key)
        if name == "openalex":
            from paperfeed.adapters.sources.openalex import OpenAlexSource

            key = s.openalex_api_key.get_secret_value() if s.openalex_api_key else None
            return OpenAlexSource(
                self.http, s.openalex_api_url, mailto=s.openalex_mailto or s.contact_email, api_key=key
            )
        raise ValueError(f"unknown citation source {name!r} (known: s2, openalex)")

    @cached_property
    def citation_harvest(self) -> CitationHarvest:
        """``paperfeed harvest citations`` and the daily job's ``harvest-citations`` step."""
        from paperfeed.adapters.store.citation_candidates import SqlPublishedPapers
        from paperfeed.services.citations import CitationHarvest

        return CitationHarvest(
            self.citation_records,
            self.store,
            SqlPublishedPapers(self.store.engine),
            sources={
                "s2": lambda: self.citation_source("s2"),
                "openalex": lambda: self.citation_source("openalex"),
            },
            settings=harvest_settings(self.settings),
        )

    @cached_property
    def citation_import(self) -> CitationImport:
        """``paperfeed citations import``: files of citations into the paper graph (issue #33)."""
        from paperfeed.adapters.sources.citation_files import LocalCitationFiles
        from paperfeed.adapters.store.citation_import import SqlCitationImport
        from paperfeed.services.citation_import import CitationImport

        return CitationImport(LocalCitationFiles(), SqlCitationImport(self.store.engine))

    def paper_file(self, path: Path, *, batch_size: int, namespace: str | None = None) -> PaperSource:
        """A file of papers for ``paperfeed import``: BibTeX (``.bib``, ``.bib.gz``: each entry's own
        fields, as the web's upload reads it), else JSONL (ours or the arXiv snapshot, gzip or plain)."""
        if path.name.lower().endswith((".bib", ".bib.gz")):
            from paperfeed.adapters.sources.bibtex_papers import BibtexPaperSource

            return BibtexPaperSource(path, batch_size=batch_size)
        from paperfeed.adapters.sources.jsonl_file import JsonlFileSource

        return JsonlFileSource(path, batch_size=batch_size, namespace=namespace)

    # -- maintenance and jobs ------------------------------------------------------------------------------

    @cached_property
    def jobs(self) -> JobService:
        """The daily pipeline and the hourly digests as recorded, leased jobs."""
        from paperfeed.services.jobs import JobService
        from paperfeed.services.pipeline import DailyPipeline

        s = self.settings
        pipeline = DailyPipeline(
            ingest=lambda: self.ingest,
            arxiv_harvest=lambda: self.arxiv_oai_harvest(set_spec=s.jobs_arxiv_set),
            fill=lambda: self.fill,
            indexing=lambda: self.indexing,
            digests=lambda: self.digests,
            daily_steps=[n.strip() for n in s.jobs_daily_steps.split(",") if n.strip()],
            citations=lambda: self.citation_harvest,
            citation_sources=[n.strip() for n in s.citation_sources.split(",") if n.strip()],
            topic_service=lambda: self.topics,
        )
        return JobService(self.job_store, pipeline.jobs())

    @property
    def schedules(self) -> dict[str, JobSchedule]:
        """When the scheduler runs each job (``PAPERFEED_JOBS_*_AT``)."""
        from paperfeed.services.jobs import JobSchedule

        s = self.settings
        return {"daily": JobSchedule.parse(s.jobs_daily_at), "digests": JobSchedule.parse(s.jobs_digests_at)}

    # -- store maintenance: backup, restore, copy, schema ----------------------------------------------------

    def backup(self, dest: Path) -> BackupInfo:
        """A consistent snapshot of the SQLite database (and the data folder's secret key) in ``dest``."""
        from pathlib import Path

        from paperfeed.adapters.backup import BACKUP_DB, backup_sqlite

        s = self.settings
        database = s.data_dir / BACKUP_DB
        if s.database_url is not None:
            database = Path(s.db_url.split(":///", 1)[1])
        return backup_sqlite(database, s.data_dir, dest)

    def restore(self, src: Path, *, force: bool) -> BackupInfo:
        """Put the backup in ``src`` in place as the data folder's database (before the store is opened)."""
        from paperfeed.adapters.backup import restore_sqlite

        return restore_sqlite(src, self.settings.data_dir, force=force)

    @staticmethod
    def canonical_database_url(url: str) -> str:
        """``url`` as the store opens it (``postgresql://`` means psycopg 3), to compare two URLs."""
        from paperfeed.adapters.store.sql_store import normalise_url

        return normalise_url(url)

    @staticmethod
    def open_other_store(url: str) -> SqlPaperStore:
        """Another database as a store (migrated to this version), e.g. the target of a copy."""
        from paperfeed.adapters.store import open_store

        return open_store(url)

    def copy_store_into(
        self, target: SqlPaperStore, *, batch_size: int, progress: Progress, restart: bool
    ) -> CopySummary:
        """Copy every table of this store into ``target``, resuming where an earlier copy stopped."""
        from paperfeed.adapters.store.copy import copy_store

        return copy_store(
            self.store.engine, target.engine, batch_size=batch_size, progress=progress, restart=restart
        )

    def schema_engine(self) -> Engine:
        """An engine on the configured database that does not migrate it on open (``paperfeed migrate``);
        the caller disposes of it."""
        from paperfeed.adapters.store.sql_store import make_engine

        self.secure_data_folder()
        return make_engine(self.settings.db_url)

    @staticmethod
    def schema_revisions(engine: Engine) -> tuple[str | None, str | None]:
        """The schema revision of the database behind ``engine``, and the one this version needs."""
        from paperfeed.adapters.store import migrate

        return migrate.current_revision(engine), migrate.head_revision()

    @staticmethod
    def upgrade_schema(engine: Engine) -> None:
        from paperfeed.adapters.store import migrate

        migrate.upgrade(engine)

    def close(self) -> None:
        work = self.__dict__.get("reader_work")
        if work is not None:  # a background job stops at its next batch while what it uses is still open
            work.close()
        for item in reversed(self._closers):
            item.close()  # type: ignore[attr-defined]
        self._closers.clear()


def build_app(settings: SettingsModel | None = None) -> App:
    """The composition root for ``settings`` (default: the environment's, read by pydantic-settings)."""
    if settings is None:
        from paperfeed.settings import Settings

        settings = Settings()
    return App(settings)
