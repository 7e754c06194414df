"""The catalogue wing: the papers as readers see them. The one visible-papers lookup, the feeds, the
citation graph, citation trending, the topics (build, rising, picks, map), and the page version the web's
page cache keys answers by."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from paperfeed.bootstrap.core import Core
from paperfeed.bootstrap.indexes import IndexesWing

if TYPE_CHECKING:
    from collections.abc import Callable

    from paperfeed.adapters.store.citations import SqlCitationRecords
    from paperfeed.adapters.store.feed_queries import SqlFeedQueries
    from paperfeed.adapters.store.topics import SqlTopicRecords
    from paperfeed.domain.page_cache import SharedPageCache
    from paperfeed.domain.topics import TopicSettings
    from paperfeed.services.citation_trend import CitedTrending
    from paperfeed.services.feed import FeedService
    from paperfeed.services.library_references import ReferenceBibliography
    from paperfeed.services.page_version import PageVersions
    from paperfeed.services.paper_graph import PaperGraphService
    from paperfeed.services.topic_map import TopicMapService
    from paperfeed.services.topic_picks import TopicPickService
    from paperfeed.services.topic_rising import RisingService
    from paperfeed.services.topics import TopicService
    from paperfeed.services.visible import VisiblePapers
    from paperfeed.settings_model import SettingsModel

__all__ = ["CatalogueWing", "topic_settings"]


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


class CatalogueWing:
    def __init__(self, core: Core, indexes: IndexesWing) -> None:
        self.core = core
        self.indexes = indexes

    # -- papers ---------------------------------------------------------------------------------------

    @cached_property
    def feed_queries(self) -> SqlFeedQueries:
        """The store's reads of papers as shown: feeds, trending, papers by id (hidden left out, the local
        votes and comments counted, in SQL)."""
        from paperfeed.adapters.store.feed_queries import SqlFeedQueries

        return SqlFeedQueries(self.core.engine())

    @cached_property
    def visible(self) -> VisiblePapers:
        """The one visible-papers lookup (``services/visible.py``): papers by id, as readers see them."""
        from paperfeed.services.visible import VisiblePapers

        return VisiblePapers(self.feed_queries)

    @cached_property
    def feeds(self) -> FeedService:
        """Day/week/month feeds, trending, paper lookup (the web pages, API, RSS and MCP)."""
        from paperfeed.services.feed import FeedService

        return FeedService(self.feed_queries)

    # -- the citation graph ------------------------------------------------------------------------------

    @cached_property
    def citations(self) -> SqlCitationRecords:
        """The paper graph (works, citations, the citation harvest ledger) in the store's database."""
        from paperfeed.adapters.store.citations import SqlCitationRecords

        return SqlCitationRecords(self.core.engine())

    @cached_property
    def paper_graph(self) -> PaperGraphService:
        """The citation graph as readers see it: counts, references, cited-by and related work (#16)."""
        from paperfeed.services.paper_graph import PaperGraphService

        return PaperGraphService(self.citations, self.visible)

    @cached_property
    def cited_trending(self) -> CitedTrending:
        """Trending by citation velocity (``/trending?sort=cited``, ``sort=cited`` of the API)."""
        from paperfeed.adapters.store.cited_queries import SqlCitedQueries
        from paperfeed.services.citation_trend import CitedTrending

        return CitedTrending(SqlCitedQueries(self.core.engine()))

    @cached_property
    def references(self) -> ReferenceBibliography:
        """BibTeX of papers with their references (``library export --with-references``, the web's)."""
        from paperfeed.services.library_references import ReferenceBibliography

        return ReferenceBibliography(self.citations, self.core.store)

    # -- topics ------------------------------------------------------------------------------------------

    @cached_property
    def topic_records(self) -> SqlTopicRecords:
        from paperfeed.adapters.store.topics import SqlTopicRecords

        return SqlTopicRecords(self.core.engine())

    def topics_daily(self, report: Callable[[str], None] | None = None) -> dict[str, int | float | str]:
        """The topics step (:meth:`TopicService.daily`). For a long-lived background process (the indexer
        that follows, the scheduler: :meth:`IndexesWing.embed_in_background`) it runs in a child process,
        so scikit-learn, UMAP and numba leave with it and the process stays small while idle (issue #39
        item 6); elsewhere in this process."""
        if not self.indexes.background:
            return self.topics.daily(report)
        from paperfeed.adapters.child_call import ChildCallStopped, call_in_child
        from paperfeed.domain.job_runs import StepRefused

        try:
            counts: dict[str, int | float | str] = call_in_child(
                "paperfeed.bootstrap:topics_daily_in_child", self.core.settings, report=report, name="topics"
            )
        except ChildCallStopped as exc:  # a stop of the process group: one line, the next run builds them
            raise StepRefused(f"{exc}; the next run builds the topics") from None
        return counts

    @cached_property
    def topics(self) -> TopicService:
        """Topics (issue #17): built from the stored embeddings with scikit-learn, kept in the store."""
        from datetime import timedelta

        from paperfeed.adapters.topic_model import SklearnTermCounter, SklearnTopicModeller
        from paperfeed.services.topics import TopicService

        s = self.core.settings

        def modeller() -> SklearnTopicModeller:  # a new one per build
            return SklearnTopicModeller(s.topics_method, layout=s.topics_layout)

        return TopicService(
            self.topic_records,
            self.indexes.embeddings,
            self.core.store,
            modeller,
            SklearnTermCounter,
            topic_settings(s),
            rebuild_after=timedelta(days=s.topics_rebuild_days),
            rebuild_growth=s.topics_rebuild_growth,
            site=self.feeds,
        )

    @cached_property
    def topic_rising(self) -> RisingService:
        """Rising this week (issue #17): for the daily page, ``/api/topics/rising`` and the digest."""
        from paperfeed.services.topic_rising import RisingService

        return RisingService(self.topic_records, site=self.feeds)

    @cached_property
    def topic_picks(self) -> TopicPickService:
        """Topics a reader picked ("For you" cold start), a paper's topic, a search's topic filter."""
        from paperfeed.adapters.store.topic_picks import SqlTopicPicks
        from paperfeed.services.topic_picks import TopicPickService

        lookups = SqlTopicPicks(self.core.engine())
        return TopicPickService(self.topic_records, lookups, lookups)

    @cached_property
    def topic_map(self) -> TopicMapService:
        """The map of the papers (``/map``, a paper's small map): reads the topic build's layout."""
        from paperfeed.adapters.store.topic_map import SqlMapRecords
        from paperfeed.services.topic_map import TopicMapService

        return TopicMapService(SqlMapRecords(self.core.engine()))

    # -- the web's page cache ----------------------------------------------------------------------------

    @cached_property
    def page_versions(self) -> PageVersions:
        """What the web's page cache keys anonymous answers by (``services/page_version.py``)."""
        from paperfeed.services.page_version import PageVersions

        indexes = self.indexes
        return PageVersions(self.feeds, indexes.node, indexes.coverage, self.cited_trending, indexes.vectors)

    @cached_property
    def shared_pages(self) -> SharedPageCache | None:
        """The page cache the web workers of this node share (None: one worker, or turned off)."""
        s = self.core.settings
        if s.workers < 2 or s.page_cache_shared_mb <= 0:
            return None
        from paperfeed.adapters.page_cache import DiskPageCache

        pages = DiskPageCache(s.data_dir / "cache" / "pages", s.page_cache_shared_mb * 1024 * 1024)
        return self.core.closing(pages)
