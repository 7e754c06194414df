"""The sources wing: papers in. The ingest service, the arXiv (OAI-PMH and API), Hugging Face and citation
sources, files and uploads of papers, the first fill and catch-up, the citation harvest and import.

The wing is also the :class:`~paperfeed.domain.fill.FillSources` the fill service reads from: a source is
planned per day or per category when a fill asks for it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING

from paperfeed.bootstrap.catalogue import CatalogueWing
from paperfeed.bootstrap.core import Core, intervals
from paperfeed.bootstrap.indexes import IndexesWing

if TYPE_CHECKING:
    from datetime import date, datetime
    from pathlib import Path

    from paperfeed.adapters.sources.arxiv_api import ArxivApiClient, ArxivApiSource, ArxivListingSource
    from paperfeed.adapters.sources.arxiv_oai import ArxivOaiSource
    from paperfeed.adapters.sources.hf_daily import HfDailySource
    from paperfeed.domain.citation_harvest import HarvestSettings
    from paperfeed.domain.paper_graph import CitationSource
    from paperfeed.domain.ports import PaperSource
    from paperfeed.services.citation_import import CitationImport
    from paperfeed.services.citations import CitationHarvest
    from paperfeed.services.fill import FillService
    from paperfeed.services.ingest import IngestService
    from paperfeed.services.paper_upload import PaperUploads
    from paperfeed.settings_model import SettingsModel

__all__ = ["SourcesWing", "harvest_settings"]


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


class SourcesWing:
    def __init__(self, core: Core, indexes: IndexesWing, catalogue: CatalogueWing) -> None:
        self.core = core
        self.indexes = indexes
        self.catalogue = catalogue

    @cached_property
    def ingest(self) -> IngestService:
        """Applies a source's batches to the store; the keyword index follows each batch."""
        from paperfeed.services.ingest import IngestService

        return IngestService(self.core.store, indexes=[self.indexes.keyword])

    # -- arXiv ---------------------------------------------------------------------------------------

    @cached_property
    def arxiv_api(self) -> ArxivApiClient:
        from paperfeed.adapters.sources.arxiv_api import ArxivApiClient

        return ArxivApiClient(self.core.http, self.core.settings.arxiv_api_url)

    @cached_property
    def arxiv_interactive(self) -> ArxivApiClient:
        """The arXiv API for a person waiting on a page (submissions): one attempt, a short timeout.

        The harvest client's retries and 30 s timeouts held such a request for half a minute while arXiv
        was down; this one gives up after ``PAPERFEED_SUBMIT_TIMEOUT`` (still spacing its requests)."""
        from paperfeed.adapters.sources.arxiv_api import ArxivApiClient
        from paperfeed.adapters.sources.http import PoliteClient

        s = self.core.settings
        delays = intervals(((s.arxiv_api_url, s.arxiv_delay),))
        client = PoliteClient(
            user_agent=s.user_agent(), timeout=s.submit_timeout, retries=0, min_interval=delays
        )
        return ArxivApiClient(self.core.closing(client), s.arxiv_api_url)

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
            self.core.http,
            self.core.store,
            self.core.settings.arxiv_oai_url,
            metadata_prefix=metadata_prefix,
            set_spec=set_spec,
            from_date=from_date,
            until=until,
            restart=restart,
            notify=notify or (lambda _message: None),
        )

    def daily_arxiv_harvest(self) -> ArxivOaiSource:
        """The daily job's harvest of ``PAPERFEED_JOBS_ARXIV_SET``, from where the last one ended."""
        return self.arxiv_oai_harvest(set_spec=self.core.settings.jobs_arxiv_set)

    def arxiv_ids(self, ids: tuple[str, ...]) -> ArxivApiSource:
        """The arXiv API as a source of the papers with these (canonical) ids, 100 per request."""
        from paperfeed.adapters.sources.arxiv_api import ArxivApiSource

        return ArxivApiSource(self.arxiv_api, ids=ids)

    def arxiv_papers(self) -> ArxivApiClient:
        """:class:`~paperfeed.domain.fill.FillSources`: papers by id."""
        return self.arxiv_api

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

    # -- Hugging Face ------------------------------------------------------------------------------------

    def hf_daily(self, first: date, last: date) -> HfDailySource:
        """Hugging Face Daily Papers of the days ``first``..``last`` (inclusive)."""
        from paperfeed.adapters.sources.hf_daily import HfDailySource

        return HfDailySource(self.core.http, self.core.settings.hf_api_url, first, last)

    def hf_day(self, day: date) -> HfDailySource:
        return self.hf_daily(day, day)

    @contextmanager
    def hf_probe(self, day: date, timeout: float) -> Iterator[HfDailySource]:
        """Hugging Face Daily Papers of ``day`` through a client that tries once within ``timeout``
        seconds: a quick refresh that gives up at once when the network is not there."""
        from paperfeed.adapters.sources.hf_daily import HfDailySource
        from paperfeed.adapters.sources.http import PoliteClient

        s = self.core.settings
        probe = PoliteClient(
            user_agent=s.user_agent(),
            timeout=timeout,
            retries=0,
            min_interval=intervals(((s.hf_api_url, s.hf_delay),)),
        )
        try:
            yield HfDailySource(probe, s.hf_api_url, day, day)
        finally:
            probe.close()

    @cached_property
    def fill(self) -> FillService:
        """First-start fill of the window and the catch-up of missed days (``paperfeed harvest fill``,
        ``paperfeed run``, the daily job's harvest steps)."""
        from datetime import timedelta

        from paperfeed.domain.fill import parse_categories
        from paperfeed.services.fill import FillService, FillSettings

        s = self.core.settings
        config = FillSettings(
            days=s.fill_days,
            categories=parse_categories(s.arxiv_categories),
            listing_max=s.arxiv_listing_max,
            rederive_after=timedelta(days=7),
        )
        return FillService(self.core.store, self.ingest, self, config)

    # -- files ---------------------------------------------------------------------------------------

    def paper_file(self, path: Path, *, batch_size: int, namespace: str | None = None) -> PaperSource:
        """A file of papers for ``paperfeed import``: BibTeX (``.bib``, ``.bib.gz``: each entry's own
        fields, as the web's upload reads it), else JSONL (ours or the arXiv snapshot, gzip or plain)."""
        if path.name.lower().endswith((".bib", ".bib.gz")):
            from paperfeed.adapters.sources.bibtex_papers import BibtexPaperSource

            return BibtexPaperSource(path, batch_size=batch_size)
        from paperfeed.adapters.sources.jsonl_file import JsonlFileSource

        return JsonlFileSource(path, batch_size=batch_size, namespace=namespace)

    @cached_property
    def paper_uploads(self) -> PaperUploads:
        """An administrator's upload of a JSONL or BibTeX file of papers (the web's drag-and-drop)."""
        from paperfeed.domain.paper_upload import UploadKind
        from paperfeed.services.paper_upload import PaperUploads

        size = self.core.settings.batch_size

        def open_source(path: Path, kind: UploadKind, name: str) -> PaperSource:
            if kind == "jsonl":
                from paperfeed.adapters.sources.jsonl_file import JsonlFileSource

                return JsonlFileSource(path, batch_size=size, label=name)
            from paperfeed.adapters.sources.bibtex_papers import BibtexPaperSource

            return BibtexPaperSource(path, label=name, batch_size=size)

        return PaperUploads(self.ingest, open_source, coverage=self.indexes.coverage)

    # -- citations ---------------------------------------------------------------------------------------

    def citation_source(self, name: str) -> CitationSource:
        """A scholarly API as a citation source: ``s2`` (Semantic Scholar) or ``openalex``."""
        s = self.core.settings
        if name == "s2":
            from paperfeed.adapters.sources.semantic_scholar import SemanticScholarSource

            key = s.s2_api_key.get_secret_value() if s.s2_api_key else None
            return SemanticScholarSource(self.core.http, s.s2_api_url, api_key=key)
        if name == "openalex":
            from paperfeed.adapters.sources.openalex import OpenAlexSource

            key = s.openalex_api_key.get_secret_value() if s.openalex_api_key else None
            mailto = s.openalex_mailto or s.contact_email
            return OpenAlexSource(self.core.http, s.openalex_api_url, mailto=mailto, api_key=key)
        raise ValueError(f"unknown citation source {name!r} (known: s2, openalex)")

    @cached_property
    def citation_harvest(self) -> CitationHarvest:
        """``paperfeed harvest citations`` and the daily job's ``harvest-citations`` step."""
        from functools import partial

        from paperfeed.adapters.store.citation_candidates import SqlPublishedPapers
        from paperfeed.services.citations import CitationHarvest

        store = self.core.store
        sources = {name: partial(self.citation_source, name) for name in ("s2", "openalex")}
        return CitationHarvest(
            self.catalogue.citations,
            store,
            SqlPublishedPapers(store.engine),
            sources=sources,
            settings=harvest_settings(self.core.settings),
        )

    @cached_property
    def citation_import(self) -> CitationImport:
        """``paperfeed citations import``: files of citations into the paper graph (issue #33)."""
        from paperfeed.adapters.sources.citation_files import LocalCitationFiles
        from paperfeed.adapters.store.citation_import import SqlCitationImport
        from paperfeed.services.citation_import import CitationImport

        return CitationImport(LocalCitationFiles(), SqlCitationImport(self.core.engine()))
