"""The readers wing: accounts, a reader's data (export, deletion), mute rules, the library (its import,
its search), the community (votes, submissions, comments), the "For you" recommendations, and reading
groups with "For the group"."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from paperfeed.bootstrap.catalogue import CatalogueWing
from paperfeed.bootstrap.core import Core
from paperfeed.bootstrap.indexes import IndexesWing
from paperfeed.bootstrap.mail import MailWing
from paperfeed.bootstrap.search import SearchWing
from paperfeed.bootstrap.sources import SourcesWing

if TYPE_CHECKING:
    from paperfeed.domain.recommend import MailedPapers, SignalsSource, Upvotes
    from paperfeed.domain.topic_picks import PickedTopicSource
    from paperfeed.services.account_data import AccountDataService
    from paperfeed.services.accounts import AccountService
    from paperfeed.services.community import CommunityService
    from paperfeed.services.groups import GroupService
    from paperfeed.services.library import LibraryService
    from paperfeed.services.library_import import LibraryImporter, ReaderWork
    from paperfeed.services.library_search import LibrarySearch
    from paperfeed.services.mutes import MuteService
    from paperfeed.services.recommend import RecommendationService, RecommendSettings
    from paperfeed.settings_model import SettingsModel

__all__ = ["ReadersWing", "recommend_settings"]


def recommend_settings(s: SettingsModel) -> RecommendSettings:
    """The "For you" feed's window (``PAPERFEED_RECOMMEND_WINDOW_DAYS``)."""
    from paperfeed.services.recommend import RecommendSettings

    return RecommendSettings(window_days=s.recommend_window_days)


class ReadersWing:
    def __init__(
        self,
        core: Core,
        mail: MailWing,
        indexes: IndexesWing,
        catalogue: CatalogueWing,
        sources: SourcesWing,
        search: SearchWing,
    ) -> None:
        self.core = core
        self.mail = mail
        self.indexes = indexes
        self.catalogue = catalogue
        self.sources = sources
        self.search = search

    @cached_property
    def accounts(self) -> AccountService:
        """Sign-up, sign-in, sessions, API tokens and moderation; mail goes out through the mail wing."""
        from paperfeed.adapters.store.accounts import SqlAccountStore
        from paperfeed.services.accounts import AccountService

        core = self.core
        store = SqlAccountStore(core.engine())
        return core.closing(AccountService(store, self.mail.mailer, core.secret_key, self.mail.limits))

    @cached_property
    def account_data(self) -> AccountDataService:
        """A reader's data export (a zip) and self-service account deletion."""
        from paperfeed.adapters.store.account_data import SqlReaderDataStore
        from paperfeed.domain.citation import bibtex
        from paperfeed.services.account_data import AccountDataService

        core = self.core
        return AccountDataService(
            SqlReaderDataStore(core.engine()),
            self.accounts.store,
            papers=core.store,
            bibtex=bibtex,
            mailer=self.mail.mailer,
            secret=core.secret_key,
        )

    @cached_property
    def library(self) -> LibraryService:
        """Readers' tags, saves, notes, marks, followed authors and saved searches."""
        from paperfeed.adapters.store.library import SqlLibraryStore
        from paperfeed.services.library import LibraryService

        store = SqlLibraryStore(self.core.engine())
        return LibraryService(store, self.catalogue.visible, self.search.hybrid, mutes=self.mutes)

    @cached_property
    def mutes(self) -> MuteService:
        """Readers' and groups' mute rules (authors, categories, words), compiled once per request."""
        from paperfeed.adapters.store.mutes import SqlMuteStore
        from paperfeed.services.mutes import MuteService

        return MuteService(SqlMuteStore(self.core.engine()))

    @cached_property
    def library_search(self) -> LibrarySearch:
        """Search my library: a reader's saved papers, tags and notes, by words and by meaning."""
        from paperfeed.adapters.store.library import SqlLibraryStore
        from paperfeed.services.library_search import LibrarySearch
        from paperfeed.services.rate_limits import ClientRateLimiter

        indexes = self.indexes
        store = SqlLibraryStore(self.core.engine())
        limiter = ClientRateLimiter(self.core.settings.library_search_rate_per_minute)
        search = LibrarySearch(
            store,
            self.catalogue.visible,
            indexes.embeddings,
            indexes.embedders,
            limiter,
            self.core.settings.library_search_indexed_papers,
        )
        return self.core.closing_first(search)  # its background worker embeds notes: stopped first

    @cached_property
    def reader_work(self) -> ReaderWork:
        """The thread that runs readers' slow work one job at a time; closing the App stops it first (its
        jobs use the store and the HTTP clients)."""
        from paperfeed.services.library_import import ReaderWork

        return self.core.closing_first(ReaderWork())

    @cached_property
    def library_import(self) -> LibraryImporter:
        """BibTeX / CSL-JSON / id-list import into a library; missing papers come from the arXiv API (for
        the site's imports in the background, on :attr:`reader_work`, followed as job runs)."""
        from datetime import UTC, datetime

        from paperfeed.adapters.sources.bibliography import read_bibliography_stream
        from paperfeed.services.library_import import ImportJobs, LibraryImporter

        jobs = ImportJobs(self.core.job_runs, self.reader_work, lambda: datetime.now(UTC))
        sources = self.sources
        return LibraryImporter(
            self.library, sources.ingest, sources.arxiv_api, read_bibliography_stream, jobs
        )

    @cached_property
    def community(self) -> CommunityService:
        """Upvotes, submissions to the daily feed (fetched from the arXiv API) and comments."""
        from paperfeed.adapters.store.community import SqlCommunityStore
        from paperfeed.services.community import CommunityLimits, CommunityService

        s = self.core.settings
        limits = CommunityLimits(s.submissions_per_day, s.comments_per_hour)
        store = SqlCommunityStore(self.core.engine())
        return CommunityService(store, self.sources.ingest, self.sources.arxiv_interactive, limits)

    def _recommender(
        self,
        signals: SignalsSource,
        *,
        upvotes: Upvotes | None = None,
        mailed: MailedPapers | None = None,
        topics: PickedTopicSource | None = None,
    ) -> RecommendationService:
        """The "For you" model over ``signals``: a reader's (their library) or a group's (its queue and
        sessions); only a reader's feed also weighs their upvotes, what their digests carried and the
        topics they picked."""
        from paperfeed.adapters.store.recommend_queries import SqlRecommendQueries
        from paperfeed.services.recommend import RecommendationService

        indexes, catalogue = self.indexes, self.catalogue
        return RecommendationService(
            signals=signals,
            papers=catalogue.visible,
            embeddings=indexes.embeddings,
            queries=SqlRecommendQueries(self.core.engine()),
            vectors=indexes.vectors,
            embedder=indexes.embedders,
            trending=catalogue.feeds,
            alerts=self.search.alerts,
            upvotes=upvotes,
            mailed=mailed,
            topics=topics,
            settings=recommend_settings(self.core.settings),
        )

    @cached_property
    def recommendations(self) -> RecommendationService:
        """The "For you" feed: recent papers ranked per reader by a linear model on their vectors."""
        from paperfeed.adapters.store.digests import SqlDigestStore

        return self._recommender(
            self.library,
            upvotes=self.community,
            mailed=SqlDigestStore(
                self.core.engine()
            ),  # what the reader's digests already carried: never again
            topics=self.catalogue.topic_picks,
        )

    # -- reading groups ----------------------------------------------------------------------------------

    @cached_property
    def group_recommendations(self) -> RecommendationService:
        """ "For the group": the "For you" model over a group's queue and sessions (signals by group id)."""
        from paperfeed.adapters.store.groups import SqlGroupStore
        from paperfeed.services.groups import GroupSignals

        return self._recommender(GroupSignals(SqlGroupStore(self.core.engine())))

    @cached_property
    def groups(self) -> GroupService:
        """Reading groups: members, invitations, the shared queue, journal-club sessions (docs/groups.md)."""
        from datetime import timedelta

        from paperfeed.adapters.store.groups import SqlGroupStore
        from paperfeed.services.groups import GroupService, InviteLimits

        s = self.core.settings
        limits = self.mail.limits
        return GroupService(
            SqlGroupStore(self.core.engine()),
            self.catalogue.visible,
            self.mail.mailer,
            limits,
            InviteLimits(
                limits.log,
                limits.secret,
                per_account=s.group_invites_per_account_per_day,
                per_group=s.group_invites_per_group_per_day,
            ),
            invite_lifetime=timedelta(days=s.group_invite_days),
            mutes=self.mutes,
            recommend=self.group_recommendations,
        )
