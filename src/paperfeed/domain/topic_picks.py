"""The topics a reader picked as a cold start for "For you", and the topic reads around a paper and a search.

A reader with no (or few) saved papers can pick topics (``/topics``); "For you" then offers recent papers
of those topics, each saying which topic it came from. A pick names a topic id; a rebuild may remove that
id, so every read of the picks follows the lineage to the live successor (the pick moves with it) or drops
the pick when there is none: a reader never sees an error for a topic that went away.

The ports live here, beside :mod:`.topics` (which owns the topics themselves): :class:`TopicPicks` stores
the picks, :class:`TopicLookups` answers the reads the paper page, the search filter and "For you" need.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from .topics import Topic

__all__ = [
    "PickedTopic",
    "PickedTopicSource",
    "TopicCandidate",
    "TopicLookups",
    "TopicPicks",
    "UnknownTopic",
    "rank_candidates",
]


class UnknownTopic(LookupError):
    """A topic id that is not live and has no successor (or topics were never built)."""

    def __init__(self, topic_id: int) -> None:
        self.topic_id = topic_id
        super().__init__(f"there is no topic {topic_id}")


@dataclass(frozen=True, slots=True)
class PickedTopic:
    """One of a reader's picks, resolved to a live topic; ``asked`` is the id the reader picked."""

    topic: Topic
    picked_at: datetime
    asked: int


@dataclass(frozen=True, slots=True)
class TopicCandidate:
    """A recent paper of a picked topic: its cosine to the topic's centroid and its upvotes."""

    paper_id: str
    topic_id: int
    similarity: float
    upvotes: int
    published: datetime | None


class TopicPicks(Protocol):
    """The reader's picked topic ids (stored as picked: the service resolves removed ones)."""

    def picks(self, user_id: int) -> list[tuple[int, datetime]]:
        """``(topic id, picked at)``, oldest pick first."""
        ...

    def pick(self, user_id: int, topic_id: int, at: datetime) -> bool:
        """Record a pick; False when it was already there (nothing changes)."""
        ...

    def unpick(self, user_id: int, topic_id: int) -> bool:
        """Remove a pick; False when there was none."""
        ...

    def move(self, user_id: int, old_id: int, new_id: int | None) -> None:
        """One transaction: the pick of ``old_id`` becomes ``new_id`` (kept once), or goes (``None``)."""
        ...


class TopicLookups(Protocol):
    """Reads of the live topics for pages, search and "For you" (papers an administrator hid left out)."""

    def parent_of(self, topic_id: int) -> Topic | None:
        """A fine topic's coarse topic, when the build made two levels."""
        ...

    def members(self, topic_id: int) -> frozenset[str]:
        """The topic's paper ids; a coarse topic's are its fine topics' papers."""
        ...

    def candidates(
        self, topic_ids: Sequence[int], since: datetime, until: datetime, per_topic: int
    ) -> list[TopicCandidate]:
        """Up to ``per_topic`` papers of each topic published in ``[since, until)``, in the order of
        :func:`rank_candidates` (upvotes, then nearest to the centroid, then newest)."""
        ...


class PickedTopicSource(Protocol):
    """What "For you" needs of the picks (the topic-pick service implements it)."""

    def picked(self, user_id: int) -> list[PickedTopic]: ...

    def candidates(
        self, topic_ids: Sequence[int], since: datetime, until: datetime, per_topic: int
    ) -> list[TopicCandidate]: ...


def rank_candidates(found: Sequence[TopicCandidate], per_topic: int) -> list[TopicCandidate]:
    """Interleave the topics' papers: every topic's best paper, then every topic's second, ...

    Within a topic the order is upvotes (the community's signal, as on the topic page), then the cosine
    to the centroid (the most typical papers of the topic), then the newest. Interleaving keeps one big
    topic from filling a reader's page when they picked several.
    """
    by_topic: dict[int, list[TopicCandidate]] = {}
    for c in found:
        by_topic.setdefault(c.topic_id, []).append(c)
    ordered = {
        tid: sorted(
            items,
            key=lambda c: (
                -c.upvotes,
                -c.similarity,
                -(c.published.timestamp() if c.published else 0.0),
                c.paper_id,
            ),
        )[:per_topic]
        for tid, items in by_topic.items()
    }
    out: list[TopicCandidate] = []
    seen: set[str] = set()
    for rank in range(per_topic):
        for tid in sorted(ordered):
            items = ordered[tid]
            if rank < len(items) and items[rank].paper_id not in seen:
                seen.add(items[rank].paper_id)
                out.append(items[rank])
    return out
