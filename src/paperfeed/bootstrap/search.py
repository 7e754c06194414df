"""The search wing: hybrid search (and the one-shot search of ``paperfeed search``), similar papers,
alerts (a saved search within a window), and the anonymous search rate limit."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from paperfeed.bootstrap.catalogue import CatalogueWing
from paperfeed.bootstrap.core import Core
from paperfeed.bootstrap.indexes import IndexesWing

if TYPE_CHECKING:
    from paperfeed.adapters.keyword.tantivy_index import TantivyKeywordIndex
    from paperfeed.domain.evidence import EvidenceWeights
    from paperfeed.domain.search import SimilarSource
    from paperfeed.services.alerts import AlertSearch
    from paperfeed.services.evidence import EvidenceSearch
    from paperfeed.services.facets import FacetedSimilar, FacetSettings
    from paperfeed.services.rate_limits import ClientRateLimiter
    from paperfeed.services.search import HybridSearch, HybridSettings, SimilarSettings
    from paperfeed.services.similar import SentenceStage, SimilarPapers
    from paperfeed.settings_model import SettingsModel

__all__ = [
    "SearchWing",
    "evidence_settings",
    "facet_settings",
    "search_settings",
    "sentence_stage",
    "similar_settings",
]


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


def sentence_stage(s: SettingsModel) -> SentenceStage:
    """How similar papers re-rank their first candidates by sentences (``PAPERFEED_SIMILAR_SENTENCE_*``)."""
    from paperfeed.services.similar import SentenceStage

    return SentenceStage(
        weight=s.similar_sentence_weight,
        keyword_weight=s.similar_sentence_keyword_weight,
        rrf_k=s.similar_sentence_rrf_k,
        depth=s.similar_sentence_depth,
    )


def facet_settings(s: SettingsModel) -> FacetSettings:
    """How similar papers by facet match sentences (``PAPERFEED_SIMILAR_FACET_*``)."""
    from paperfeed.services.facets import FacetSettings

    return FacetSettings(
        candidates=s.similar_facet_candidates,
        weight=s.similar_facet_weight,
        rrf_k=s.similar_facet_rrf_k,
        role_floor=s.similar_facet_role_floor,
        aggregate=s.similar_facet_aggregate,
    )


def evidence_settings(s: SettingsModel) -> EvidenceWeights:
    """How evidence search fuses its lists and how deep it looks (``PAPERFEED_EVIDENCE_*``)."""
    from paperfeed.domain.evidence import EvidenceWeights

    return EvidenceWeights(
        rrf_k=s.evidence_rrf_k,
        keyword=s.evidence_keyword_weight,
        dense=s.evidence_dense_weight,
        paper=s.evidence_paper_weight,
        paper_k=s.evidence_paper_k,
        keyword_depth=s.evidence_keyword_depth,
        dense_depth=s.evidence_dense_depth,
        paper_depth=s.evidence_paper_depth,
        per_paper=s.evidence_per_paper,
        min_cosine=s.evidence_min_cosine,
    )


class _TopicsOnDemand:
    """The one-shot search's topic filter: the catalogue's topic picks, made (and the SQL store opened)
    only when a query names a topic, so a plain ``paperfeed search`` on SQLite never loads SQLAlchemy."""

    def __init__(self, catalogue: CatalogueWing) -> None:
        self.catalogue = catalogue

    def members(self, topic_id: int) -> frozenset[str] | None:
        return self.catalogue.topic_picks.members(topic_id)


class SearchWing:
    def __init__(self, core: Core, indexes: IndexesWing, catalogue: CatalogueWing) -> None:
        self.core = core
        self.indexes = indexes
        self.catalogue = catalogue

    @cached_property
    def hybrid(self) -> HybridSearch:
        """Hybrid keyword + semantic search; semantic parts load on the first query that needs them."""
        from paperfeed.services.search import HybridSearch

        s = self.core.settings
        search = HybridSearch(
            self.catalogue.visible,
            self.indexes.keyword,
            self.indexes.vectors,
            self.indexes.embedders,
            search_settings(s),
            similar_settings(s),
            similar_evidence=self._similar_evidence(),
            topics=self.catalogue.topic_picks,
        )
        return self.core.closing(search)

    def _similar_evidence(self) -> tuple[tuple[SimilarSource, float], ...]:
        """What "similar papers" adds to the cosine: the citation graph, when its weight is above 0."""
        weight = self.core.settings.similar_graph_weight
        if weight <= 0:
            return ()
        from paperfeed.services.similar_graph import GraphSimilar

        return ((GraphSimilar(self.catalogue.citations, self.core.store), weight),)

    @cached_property
    def one_shot(self) -> HybridSearch:
        """The search of a process that answers one query and exits (``paperfeed search``): the papers
        come from the core's stdlib reader and, when it is provably current, the tantivy index is opened
        for searching only, so a keyword search on SQLite starts without SQLAlchemy (docs/cli.md).
        Anything else (PostgreSQL, FTS5, an index behind the store) is :attr:`hybrid`."""
        from paperfeed.adapters.sqlite_reads import SqliteReads
        from paperfeed.services.search import HybridSearch
        from paperfeed.services.visible import VisiblePapers

        s = self.core.settings
        reads = self.core.reads
        keyword: TantivyKeywordIndex | None = None
        if s.keyword_engine in ("auto", "tantivy") and isinstance(reads, SqliteReads):
            import importlib.util

            if importlib.util.find_spec("tantivy") is not None:
                from paperfeed.adapters.keyword.tantivy_index import TantivyKeywordIndex

                keyword = TantivyKeywordIndex.open_current(s.data_dir / "keyword", reads)
        if keyword is None or not isinstance(reads, SqliteReads):
            return self.hybrid
        self.core.closing(keyword)
        search = HybridSearch(
            VisiblePapers(reads),
            keyword,
            self.indexes.vectors,
            self.indexes.embedders,
            search_settings(s),
            similar_settings(s),
            topics=_TopicsOnDemand(self.catalogue),
        )
        return self.core.closing(search)

    @cached_property
    def similar(self) -> SimilarPapers:
        """Similar papers as every surface shows them."""
        from paperfeed.services.similar import SimilarPapers

        return SimilarPapers(
            self.catalogue.visible,
            self.hybrid,
            self.indexes.sentences,
            self.indexes.embedders,
            sentence_stage(self.core.settings),
        )

    @cached_property
    def facets(self) -> FacetedSimilar:
        """Similar papers by background, method or result (``overall``: :attr:`similar`'s own list)."""
        from paperfeed.services.facets import FacetedSimilar

        sentences = self.indexes.sentences
        return FacetedSimilar(
            self.similar, sentences, self.indexes.embedders, facet_settings(self.core.settings)
        )

    @cached_property
    def evidence(self) -> EvidenceSearch:
        """Evidence search: the papers' own sentences that bear on a question (issue #42)."""
        from paperfeed.services.evidence import EvidenceSearch

        search = EvidenceSearch(
            self.catalogue.visible,
            self.hybrid,
            self.indexes.sentence_keyword,
            self.indexes.sentence_vectors,
            self.indexes.evidence_rows,
            evidence_settings(self.core.settings),
            topics=self.catalogue.topic_picks,
        )
        return self.core.closing(search)

    @cached_property
    def alerts(self) -> AlertSearch:
        """A saved search's matches within a window ("For you"'s boosts, a digest's Alerts section)."""
        from paperfeed.services.alerts import AlertSearch

        return AlertSearch(self.hybrid)

    @cached_property
    def limiter(self) -> ClientRateLimiter:
        """Anonymous searches per client address (``PAPERFEED_SEARCH_RATE_PER_MINUTE``), per process."""
        from paperfeed.services.rate_limits import ClientRateLimiter

        return ClientRateLimiter(self.core.settings.search_rate_per_minute)
