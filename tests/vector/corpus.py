"""A synthetic corpus for the vector index contract tests: clustered unit vectors with known facets.

Everything is derived from a seed, so each test can recompute the exact expected answer with plain NumPy
(brute force over the original float32 vectors) and compare the index against it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np
import numpy.typing as npt

from paperfeed.domain.search import SearchFilters, VectorRecord

DIM = 48
MODEL = "test-model-v1"
COMMON = [f"cs.{c}" for c in ("LG", "CL", "CV", "AI", "IR", "RO", "NE", "DB")]
RARE = "q-bio.RARE"  # carried by exactly 0.1 % of the papers
START = date(2020, 1, 1)


@dataclass
class Corpus:
    records: list[VectorRecord]
    vectors: npt.NDArray[np.float32]  # row i belongs to records[i]

    @property
    def ids(self) -> list[str]:
        return [r.paper_id for r in self.records]

    def expected(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        keep: Callable[[VectorRecord], bool] = lambda _r: True,
        exclude: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> list[str]:
        """Brute-force top ``k`` ids among records passing ``keep`` and not excluded."""
        scores = self.vectors @ (query / np.linalg.norm(query))
        order = np.lexsort((np.arange(len(scores)), -scores))
        out = []
        for i in order.tolist():
            record = self.records[i]
            if record.paper_id not in exclude and keep(record):
                out.append(record.paper_id)
                if len(out) == k:
                    break
        return out


def make_corpus(n: int, *, seed: int = 0, dim: int = DIM) -> Corpus:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((max(4, n // 60), dim)).astype(np.float32)
    labels = rng.integers(0, len(centers), n)
    vectors = centers[labels] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rare_rows = set(rng.choice(n, size=max(1, n // 1000), replace=False).tolist())
    records = []
    for i in range(n):
        cats = [COMMON[int(c)] for c in rng.choice(len(COMMON), size=int(rng.integers(1, 4)), replace=False)]
        if i in rare_rows:
            cats = [RARE]
        published = None if i % 97 == 0 else START + timedelta(days=int(rng.integers(0, 5 * 365)))
        records.append(
            VectorRecord(
                paper_id=f"2401.{i:05d}",
                vector=vectors[i],
                published=published,
                categories=tuple(cats),
                has_code=bool(rng.random() < 0.3),
            )
        )
    return Corpus(records, vectors)


def passes(filters: SearchFilters) -> Callable[[VectorRecord], bool]:
    """The reference meaning of a filter, written independently of the index's facet arrays."""

    def keep(r: VectorRecord) -> bool:
        if (filters.date_from or filters.date_to) and r.published is None:
            return False
        if filters.date_from and r.published is not None and r.published < filters.date_from:
            return False
        if filters.date_to and r.published is not None and r.published > filters.date_to:
            return False
        if filters.categories and not set(filters.categories) & set(r.categories):
            return False
        if filters.paper_ids is not None and r.paper_id not in filters.paper_ids:
            return False
        return filters.has_code is None or r.has_code == filters.has_code

    return keep
