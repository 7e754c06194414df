"""``paperfeed check``: what a consistency probe reports, and the port the check service reads through.

The store is the truth; the keyword index, the embeddings and the vector index are derived from it.
``adapters/consistency.py`` looks at what each engine actually holds and reports it as :class:`Probe`\\ s
of :class:`Finding`\\ s; ``services/check.py`` decides what to repair from each finding's
:class:`FindingKind`, never from its wording (the ``problem`` text is for people and may change).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

__all__ = ["EXAMPLES", "ConsistencyInspector", "EmbeddingState", "Finding", "FindingKind", "Probe"]

EXAMPLES = 5  # paper ids a finding names


class FindingKind(StrEnum):
    """What is wrong, as code can match it (the same kind may be worded per engine)."""

    # the store
    non_canonical_id = "non_canonical_id"  # a paper stored under a non-canonical id
    duplicate_id = "duplicate_id"  # one paper stored under two spellings of its id
    # an index (keyword or vector) as a whole: a rebuild, not a targeted repair
    index_missing = "index_missing"
    index_incompatible = "index_incompatible"  # another version, never completed, or another model
    index_damaged = "index_damaged"  # files that cannot be read
    index_miscounted = "index_miscounted"  # its own count disagrees with what it holds
    index_watermark_unreadable = "index_watermark_unreadable"
    index_content_differs = "index_content_differs"  # the engine's own integrity check failed
    # entries of an index against the store (keyword) or the stored vectors (vector index)
    not_indexed = "not_indexed"  # a paper (or stored vector) the index lacks
    index_orphan = "index_orphan"  # an entry for a paper (or vector) that is gone
    indexed_twice = "indexed_twice"
    index_stale = "index_stale"  # indexed before the paper (or its vector) last changed
    index_queued = "index_queued"  # changes queued but not yet applied
    # the embeddings table against the store
    no_vector = "no_vector"
    stale_vector = "stale_vector"  # made from an older version of the paper's text
    other_model_vector = "other_model_vector"  # a model change not finished
    orphan_vector = "orphan_vector"  # a vector of a paper the store no longer has


@dataclass(frozen=True, slots=True)
class Finding:
    """One inconsistency: what, how many, a few paper ids to look at, and the ids a repair needs."""

    kind: FindingKind
    problem: str  # the same, worded for the report
    count: int
    examples: tuple[str, ...] = ()
    ids: frozenset[str] = frozenset()  # every affected paper id, when the repair can use them

    def said(self) -> str:
        """The count and the problem as the report says them: ``1 paper missing from the keyword index``,
        ``3 papers missing …`` (the problem is worded for many; one gets its singular)."""
        text = self.problem
        if self.count == 1:
            for many, one in _ONE.items():
                if text.startswith(many + " "):
                    text = one + text[len(many) :]
                    break
            for many, one in _ONE_VERBS:
                text = text.replace(many, one)
        return f"{self.count:,} {text}"


# the counted nouns problems start with, and their singular; then the words that agree with them
_ONE = {
    "keyword documents": "keyword document",
    "vector index entries": "vector index entry",
    "papers": "paper",
    "vectors": "vector",
    "changes": "change",
}
_ONE_VERBS = (
    ("since they were indexed", "since it was indexed"),
    (" differ from the stored ones", " differs from the stored one"),
)


@dataclass
class Probe:
    """What one area (store, keyword index, embeddings, vector index) looks like and what is wrong."""

    area: str
    summary: str = ""
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    kind: str = ""  # engine: tantivy / fts5 / postgres / exact / hnsw / pgvector
    unusable: bool = False  # the index cannot be read at all: a rebuild, not a targeted repair

    @property
    def ok(self) -> bool:
        return not self.findings

    def add(self, kind: FindingKind, problem: str, ids: Iterable[str] = (), count: int | None = None) -> None:
        """Record a finding unless it concerns nothing (no ids and no ``count``)."""
        ordered = sorted(ids)
        n = len(ordered) if count is None else count
        if n:
            self.findings.append(Finding(kind, problem, n, tuple(ordered[:EXAMPLES]), frozenset(ordered)))


@dataclass(frozen=True, slots=True)
class EmbeddingState:
    """The configured model's vectors as the embeddings probe found them (the vector probe compares)."""

    model_id: str
    vectors: int  # rows of the configured model
    ids: frozenset[str]  # papers of the store with a vector of the configured model (current or stale)
    dimension: int | None


class ConsistencyInspector(Protocol):
    """Reads what the store and its derived indexes hold, and repairs them through the adapters' own
    operations (``adapters/consistency.py``). The check service chooses what to repair."""

    def probe(self, model_id: str) -> list[Probe]:
        """The store, the keyword index, the embeddings of ``model_id`` and the vector index, in order."""
        ...

    def vector_index_consistent(self, model_id: str) -> bool:
        """Whether the vector index agrees with the stored vectors of ``model_id`` (True when none)."""
        ...

    def repair_keyword(self, probe: Probe) -> str:
        """Fix what the keyword ``probe`` found (re-index, catch up or rebuild); says what was done."""
        ...

    def delete_vectors(self, paper_ids: Sequence[str]) -> int:
        """Drop the stored vectors of these papers; how many rows went."""
        ...
