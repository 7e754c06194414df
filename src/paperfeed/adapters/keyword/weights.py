"""BM25 weights per field, shared by the keyword engines (a module of its own: tantivy's reader imports
it without FTS5's SQLAlchemy)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FieldWeights"]


@dataclass(frozen=True, slots=True)
class FieldWeights:
    """BM25 weight per field; title matters most, authors least.

    FTS5 defaults chosen on SciFact train (bench/keyword_quality.py): title 3 → train nDCG@10 0.699,
    test 0.689 (Porter stemming: +0.03 over plain unicode61).
    """

    title: float = 3.0
    abstract: float = 1.0
    authors: float = 0.5

    def __post_init__(self) -> None:
        for name in ("title", "abstract", "authors"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 <= value < 1e6):
                raise ValueError(f"field weight {name}={value!r}: must be a number in [0, 1e6)")
