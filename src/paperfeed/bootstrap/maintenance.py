"""The maintenance wing: the jobs and their schedules, store administration (stats, backup, restore, copy,
schema), the consistency check and its repair, what ``paperfeed run`` publishes of its children, and
fine-tuning the embedding model on this instance (above the catalogue, whose citation graph gives it
citing ↔ cited pairs: the indexes wing only follows the model it adopts)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from paperfeed.bootstrap.catalogue import CatalogueWing
from paperfeed.bootstrap.core import Core
from paperfeed.bootstrap.digests import DigestsWing
from paperfeed.bootstrap.indexes import IndexesWing
from paperfeed.bootstrap.sources import SourcesWing

if TYPE_CHECKING:
    from paperfeed.adapters.store import SqlPaperStore
    from paperfeed.domain.ports import StoreReads
    from paperfeed.domain.supervision import SupervisorStatusStore
    from paperfeed.services.adaptation import AdaptationService
    from paperfeed.services.check import CheckService
    from paperfeed.services.jobs import JobSchedule, JobService
    from paperfeed.services.store_admin import StoreAdmin
    from paperfeed.services.topic_outlook import TopicOutlookService

__all__ = ["MaintenanceWing"]


class MaintenanceWing:
    def __init__(
        self,
        core: Core,
        indexes: IndexesWing,
        catalogue: CatalogueWing,
        sources: SourcesWing,
        digests: DigestsWing,
    ) -> None:
        self.core = core
        self.indexes = indexes
        self.catalogue = catalogue
        self.sources = sources
        self.digests = digests

    @cached_property
    def jobs(self) -> JobService:
        """The daily pipeline and the hourly digests as recorded, leased jobs."""
        from paperfeed.services.jobs import JobService
        from paperfeed.services.pipeline import DailyPipeline

        s = self.core.settings
        sources = self.sources
        pipeline = DailyPipeline(
            ingest=sources.ingest,
            arxiv_harvest=sources.daily_arxiv_harvest,
            fill=sources.fill,
            indexer=self.indexes.indexer,
            digests=self.digests.sender,
            daily_steps=[n.strip() for n in s.jobs_daily_steps.split(",") if n.strip()],
            citations=sources.citation_harvest,
            citation_sources=[n.strip() for n in s.citation_sources.split(",") if n.strip()],
            topics_daily=self.catalogue.topics_daily,
        )
        return JobService(self.core.job_runs, pipeline.jobs())

    @property
    def schedules(self) -> dict[str, JobSchedule]:
        """When the scheduler runs each job (``PAPERFEED_JOBS_*_AT``)."""
        from paperfeed.services.jobs import JobSchedule

        s = self.core.settings
        return {"daily": JobSchedule.parse(s.jobs_daily_at), "digests": JobSchedule.parse(s.jobs_digests_at)}

    @cached_property
    def topic_outlook(self) -> TopicOutlookService:
        """When the running instance builds its topics (what /topics and /map say before the first build)."""
        from paperfeed.services.topic_outlook import TopicOutlookService

        return TopicOutlookService(
            embeddings=self.indexes.embeddings,
            indexer=self.indexes.activity,
            jobs=self.jobs,
            needed=self.core.settings.topics_min_papers,
            daily=self.schedules["daily"],
        )

    @cached_property
    def store(self) -> StoreAdmin:
        """Stats, backup and restore, copies into another database, the schema."""
        from paperfeed.adapters.store_admin import SqlStoreAdmin
        from paperfeed.services.store_admin import StoreAdmin

        core = self.core
        s = core.settings

        def store() -> SqlPaperStore:  # opened on first use: a restore comes before it
            return core.store

        def reads() -> StoreReads:
            return core.reads

        admin = SqlStoreAdmin(
            s.db_url, s.data_dir, configured_url=s.database_url is not None, store=store, reads=reads
        )
        return StoreAdmin(admin)

    @cached_property
    def check(self) -> CheckService:
        """``paperfeed check``: the indexes against the store, and their repair."""
        from paperfeed.adapters.consistency import StoreInspector
        from paperfeed.services.check import CheckService

        s = self.core.settings
        inspector = StoreInspector(self.core.engine(), s.data_dir, s.keyword_engine, s.vector_index)
        return CheckService(inspector, self.indexes.embedders, self.indexes.indexer, self.indexes.evidence)

    @cached_property
    def supervisors(self) -> SupervisorStatusStore:
        """What ``paperfeed run`` publishes about its children (files in ``<data_dir>/run``, no database)."""
        return self.core.supervisors

    @cached_property
    def adaptation(self) -> AdaptationService:
        """``paperfeed model adapt|status|reset``: fine-tuning the embedding model on this instance."""
        from paperfeed.adapters.embed.adapted import ModelFolder
        from paperfeed.adapters.embed.base import resolve_model
        from paperfeed.adapters.embed.trainer import SentenceTransformersTrainer
        from paperfeed.domain.adaptation import CitationPairs, title_abstract_pairs
        from paperfeed.services.adaptation import AdaptationService

        s = self.core.settings
        base = resolve_model(s.embedding_model)
        return AdaptationService(
            self.core.store.iter_papers,
            SentenceTransformersTrainer(base),
            ModelFolder(s.data_dir / "models"),
            base_spec=(s.embedding_model or "").strip(),
            base_name=base.name,
            pair_sources=(
                ("title ↔ abstract", title_abstract_pairs),
                ("citing ↔ cited", CitationPairs(self.catalogue.citations)),
            ),
        )
