"""The composition root: the one place that turns settings into concrete adapters and services."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from paperfeed.adapters.sources.arxiv_api import ArxivApiClient
from paperfeed.adapters.sources.arxiv_oai import ArxivOaiSource, plan_harvest
from paperfeed.adapters.sources.http import PoliteClient
from paperfeed.adapters.store import SqlPaperStore, open_store
from paperfeed.services.feed import FeedService
from paperfeed.services.ingest import IngestService
from paperfeed.settings import Settings

if TYPE_CHECKING:
    from datetime import date
    from pathlib import Path

    from paperfeed.adapters.keyword.factory import SyncedKeywordIndex
    from paperfeed.adapters.store.digests import SqlDigestStore
    from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
    from paperfeed.domain.digest_links import LinkSigner
    from paperfeed.domain.library import SavedSearch
    from paperfeed.domain.mail import SessionMailer
    from paperfeed.domain.models import Paper
    from paperfeed.domain.search import Embedder, VectorIndex
    from paperfeed.services.accounts import AccountService
    from paperfeed.services.community import CommunityService
    from paperfeed.services.digest import SubscriptionService
    from paperfeed.services.digest_send import DigestService
    from paperfeed.services.indexing import IndexingService
    from paperfeed.services.library import LibraryService
    from paperfeed.services.library_import import LibraryImporter
    from paperfeed.services.recommend import RecommendationService
    from paperfeed.services.search import HybridSearch

__all__ = ["App", "build_app"]


@dataclass
class App:
    """Lazily built adapters and services for one process; close it when done."""

    settings: Settings
    _closers: list[object] = field(default_factory=list, init=False)
    _vectors_for_search: VectorIndex | None = field(default=None, init=False)

    @cached_property
    def store(self) -> SqlPaperStore:
        if self.settings.database_url is None:
            self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = open_store(self.settings.db_url)
        self._closers.append(store)
        return store

    @cached_property
    def keyword_index(self) -> SyncedKeywordIndex:
        """BM25 search; opening it brings it up to date with the store (a full build the first time)."""
        from paperfeed.adapters.keyword.factory import open_keyword_index

        index = open_keyword_index(self.settings.keyword_engine, self.store.engine, self.settings.data_dir)
        self._closers.append(index)
        return index

    @cached_property
    def ingest(self) -> IngestService:
        return IngestService(self.store, indexes=[self.keyword_index])

    @cached_property
    def feeds(self) -> FeedService:
        """Day/week/month feeds, trending, paper lookup (used by the web pages, API and RSS)."""
        from paperfeed.adapters.store.feed_queries import SqlFeedQueries

        return FeedService(SqlFeedQueries(self.store.engine))

    @cached_property
    def library(self) -> LibraryService:
        """Readers' tags, saves, notes, marks, followed authors and saved searches."""
        from paperfeed.adapters.store.library import SqlLibraryStore
        from paperfeed.services.library import LibraryService

        return LibraryService(SqlLibraryStore(self.store.engine), self.store, lambda: self.search)

    @cached_property
    def library_import(self) -> LibraryImporter:
        """BibTeX / CSL-JSON / id-list import into a library; missing papers come from the arXiv API."""
        from paperfeed.services.library_import import LibraryImporter

        return LibraryImporter(self.library, self.ingest, lambda: self.arxiv_api)

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
        from paperfeed.services.recommend import RecommendationService, RecommendSettings, with_window

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
            settings=RecommendSettings(window_days=self.settings.recommend_window_days),
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
    def embedder(self) -> Embedder:
        """The configured embedder; its model loads on first use (ONNX files are built once, cached)."""
        from paperfeed.adapters.embed import EmbedderConfig, open_embedder

        s = self.settings
        config = EmbedderConfig(
            backend=s.embedding_backend,
            model=s.embedding_model,
            cache_dir=s.data_dir / "models",
            threads=s.embedding_threads,
            bf16=s.torch_bf16,
        )
        return open_embedder(config)

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
            self.embedder,
            self._open_vector_index,
            batch_size=self.settings.embedding_batch_size,
        )

    @cached_property
    def search(self) -> HybridSearch:
        """Hybrid keyword + semantic search; semantic parts load on the first query that needs them."""
        from paperfeed.services.search import HybridSearch, HybridSettings

        s = self.settings
        tuning = HybridSettings(
            rrf_k=s.search_rrf_k,
            keyword_weight=s.search_keyword_weight,
            dense_weight=s.search_dense_weight,
            min_dense_score=s.search_min_dense_score,
        )
        from paperfeed.adapters.store.accounts import hidden_paper_ids

        search = HybridSearch(
            self.store,
            self.keyword_index,
            self._search_vectors,
            lambda: self.embedder,
            tuning,
            hidden=lambda: hidden_paper_ids(self.store.engine),
        )
        self._closers.append(search)
        return search

    def _search_vectors(self) -> VectorIndex | None:
        """The stored vector index for reading, opened once (it reloads itself when a new one is saved)."""
        if self._vectors_for_search is None:
            from paperfeed.adapters.vector.base import MANIFEST_NAME, StoredManifest

            if self.store.engine.dialect.name == "postgresql":
                from paperfeed.adapters.vector.pgvector_index import stored_manifest

                found = stored_manifest(self.store.engine)
                if found is None:
                    return None  # nothing embedded yet: keyword search only
                dimension = found.dimension
            else:
                manifest_path = self.vector_index_path / MANIFEST_NAME
                if not manifest_path.exists():
                    return None  # nothing embedded yet: keyword search only
                stored = StoredManifest.from_json(manifest_path.read_bytes(), manifest_path)
                dimension = stored.manifest.dimension
            self._vectors_for_search = self._open_vector_index(
                model_id=self.embedder.model_id, dimension=dimension, fresh=False
            )
        return self._vectors_for_search

    @property
    def vector_index_path(self) -> Path:
        return self.settings.data_dir / "vectors"

    def _open_vector_index(self, *, model_id: str, dimension: int, fresh: bool) -> VectorIndex:
        """The index ``paperfeed index`` maintains (exact while small, HNSW once large; pgvector on
        PostgreSQL).

        ``fresh`` is asked for when the stored index is another model's, damaged, or out of step: no reader
        can use it as it is, so a new one starts in its place and is complete when saved.
        """
        import shutil

        from paperfeed.adapters.vector import open_vector_index

        if self.store.engine.dialect.name == "postgresql":  # pgvector, in the store's own database
            from paperfeed.adapters.vector.pgvector_index import PgVectorIndex

            return PgVectorIndex(self.store.engine, model_id=model_id, dimension=dimension, fresh=fresh)
        path = self.vector_index_path
        if fresh and path.exists():
            shutil.rmtree(path)
        return open_vector_index(path, kind="auto", model_id=model_id, dimension=dimension)

    @cached_property
    def mailer(self) -> SessionMailer:
        """SMTP when ``PAPERFEED_SMTP_HOST`` is set; otherwise ``.eml`` files in ``<data_dir>/outbox``."""
        from paperfeed.adapters.mail import OutboxMailer, SmtpConfig, SmtpMailer

        s = self.settings
        if not s.smtp_host:
            return OutboxMailer(s.data_dir / "outbox", s.mail_from)
        config = SmtpConfig(
            host=s.smtp_host,
            sender=s.mail_from,
            port=s.smtp_port,
            security=s.smtp_security,
            username=s.smtp_username,
            password=s.smtp_password.get_secret_value() if s.smtp_password else None,
            timeout=s.smtp_timeout,
            ca_file=s.smtp_ca_file,
        )
        return SmtpMailer(config)

    @property
    def public_url(self) -> str:
        """Where links in mail point: ``PAPERFEED_BASE_URL``, else this instance's own host and port
        (never a request's Host header: see :mod:`paperfeed.public_url`)."""
        from paperfeed.public_url import public_url

        return public_url(self.settings)

    @cached_property
    def digest_store(self) -> SqlDigestStore:
        """Digest subscriptions, the send ledger, bounces, job runs and leases."""
        from paperfeed.adapters.store.digests import SqlDigestStore

        return SqlDigestStore(self.store.engine)

    @cached_property
    def digest_links(self) -> LinkSigner:
        """Signs the confirm / preferences / one-click unsubscribe links of digest mail."""
        from paperfeed.domain.digest_links import LinkSigner

        return LinkSigner(self.secret_key)

    @cached_property
    def subscriptions(self) -> SubscriptionService:
        """Digest subscriptions: double opt-in, preferences and unsubscribe links."""
        from paperfeed.services.digest import SubscriptionService

        return SubscriptionService(
            self.digest_store,
            lambda: self.mailer,
            lambda: self.digest_links,
            user_for_email=self.library.user_id_for_email,
            limit_mail=lambda address, client: self.accounts.limit_mail(address, client),
        )

    @cached_property
    def digests(self) -> DigestService:
        """Composes due digests into the send ledger and sends them exactly once."""
        from paperfeed.adapters.store.accounts import hidden_paper_ids
        from paperfeed.domain.digest import Section, SectionProvider
        from paperfeed.services.digest_personal import AlertsSection, AuthorsSection, ForYouSection
        from paperfeed.services.digest_render import DigestRenderer
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
            lambda: DigestRenderer(self.public_url, self.digest_links),
            DigestSettings(base_url=self.public_url),
            latest_activity=self.feeds.queries.latest_activity,
            hidden=lambda: hidden_paper_ids(self.store.engine),
        )

    @cached_property
    def http(self) -> PoliteClient:
        from urllib.parse import urlsplit

        s = self.settings
        intervals = {
            urlsplit(s.arxiv_oai_url).netloc: s.arxiv_delay,
            urlsplit(s.arxiv_api_url).netloc: s.arxiv_delay,
            urlsplit(s.hf_api_url).netloc: s.hf_delay,
        }
        client = PoliteClient(
            user_agent=s.user_agent(), timeout=s.http_timeout, retries=s.http_retries, min_interval=intervals
        )
        self._closers.append(client)
        return client

    @cached_property
    def arxiv_api(self) -> ArxivApiClient:
        return ArxivApiClient(self.http, self.settings.arxiv_api_url)

    @cached_property
    def arxiv_interactive(self) -> ArxivApiClient:
        """The arXiv API for a person waiting on a page (submissions): one attempt, a short timeout.

        The harvest client's retries and 30 s timeouts held such a request for half a minute while arXiv
        was down; this one gives up after ``PAPERFEED_SUBMIT_TIMEOUT`` (still spacing its requests)."""
        from urllib.parse import urlsplit

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
        metadata_prefix: str = "arXiv",
        set_spec: str | None = None,
        from_date: str | None = None,
        until: str | None = None,
        restart: bool = False,
        notify: Callable[[str], None] | None = None,
    ) -> ArxivOaiSource:
        """An arXiv OAI-PMH harvest; without ``from_date`` it continues from the last completed one."""
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

    def close(self) -> None:
        for item in reversed(self._closers):
            item.close()  # type: ignore[attr-defined]
        self._closers.clear()


def build_app(settings: Settings | None = None) -> App:
    return App(settings or Settings())
