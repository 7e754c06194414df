"""What the web's page cache keys anonymous answers by (``web/public_cache.py``).

The store's data version (:meth:`FeedService.data_version`) and, on a node whose indexes follow a
PostgreSQL store, how far they have followed it. A search rendered after another node's write reached
the store but before this node's indexes took it in must not be kept as current: it is one version
behind, so the page cache's import grace bounds it (the node's vector index sync point, like the store's,
moves the derived part, which has no grace).

When the derived part moves (a topics build, an index save, a job's end), this process's own readers
catch up first -- the coverage counts, the citation ranking, the vector index search reads -- so the
page rendered for the new version shows the new state.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from paperfeed.domain.feed import DataVersion, NodeIndexState
from paperfeed.services.citation_trend import CitedTrending
from paperfeed.services.coverage import CoverageService
from paperfeed.services.feed import FeedService
from paperfeed.services.vector_reader import SearchVectors

__all__ = ["PageVersions"]


@dataclass
class PageVersions:
    feeds: FeedService
    node: NodeIndexState
    coverage: CoverageService
    cited: CitedTrending
    vectors: SearchVectors
    _derived_seen: str | None = field(default=None, init=False)  # the derived part, last read
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def current(self) -> DataVersion:
        version = self.feeds.data_version()
        keyword, vectors = self.node.followed()
        if keyword is not None or vectors is not None:
            version = replace(
                version,
                papers=f"{version.papers}|node:{keyword}" if keyword is not None else version.papers,
                derived=f"{version.derived}|node:{vectors}" if vectors is not None else version.derived,
            )
        with self._lock:
            seen, self._derived_seen = self._derived_seen, version.derived
        if seen is not None and seen != version.derived:
            self._catch_up()
        return version

    def _catch_up(self) -> None:
        """Forget what this process cached of the derived data, and reload the vector index."""
        self.coverage.forget()
        self.cited.forget()
        self.vectors.refresh()
