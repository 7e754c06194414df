"""Topics for a reader and around a paper: picks for "For you", a paper's topic, a search's topic filter.

* ``pick`` / ``unpick``: a reader's cold start for "For you" (``/topics``). Picking a removed id picks its
  successor (the form may come from a page older than the last rebuild); an id that never existed, or
  has no successor, is :class:`~paperfeed.domain.topic_picks.UnknownTopic`.
* ``picked``: the picks resolved to live topics. A pick of a removed topic moves to its successor or is
  dropped (in the store, so it is resolved once); never an error.
* ``paper_topic``: a paper's topic and, when the build made two levels, its coarse parent.
* ``members``: the paper ids a search's ``topic`` filter allows (a removed id followed to its successor).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from paperfeed.domain.topic_picks import (
    PickedTopic,
    TopicCandidate,
    TopicLookups,
    TopicPicks,
    UnknownTopic,
)
from paperfeed.domain.topics import Topic, TopicRecords

__all__ = ["PaperTopic", "TopicPickService"]


@dataclass(frozen=True, slots=True)
class PaperTopic:
    topic: Topic
    parent: Topic | None  # the coarse topic, when topics have two levels


@dataclass
class TopicPickService:
    records: TopicRecords
    picks: TopicPicks
    lookups: TopicLookups
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    def resolve(self, topic_id: int) -> Topic | None:
        """The live topic ``topic_id`` is or became (its successor after a rebuild), if any."""
        topic = self.records.topic(topic_id)
        if topic is not None:
            return topic
        successor = self.records.successor(topic_id)
        return self.records.topic(successor) if successor is not None else None

    def pick(self, user_id: int, topic_id: int) -> Topic:
        """Pick ``topic_id`` (or its successor); returns the topic picked. Picking twice changes nothing."""
        topic = self.resolve(topic_id)
        if topic is None:
            raise UnknownTopic(topic_id)
        self.picks.pick(user_id, topic.id, self.clock())
        return topic

    def unpick(self, user_id: int, topic_id: int) -> bool:
        """Remove the pick of ``topic_id`` (or of the topic it became); False when there was none."""
        if self.picks.unpick(user_id, topic_id):
            return True
        topic = self.resolve(topic_id)
        return topic is not None and topic.id != topic_id and self.picks.unpick(user_id, topic.id)

    def picked(self, user_id: int) -> list[PickedTopic]:
        """The reader's picks as live topics, oldest first; removed ones followed or dropped for good."""
        out: list[PickedTopic] = []
        seen: set[int] = set()
        for topic_id, at in self.picks.picks(user_id):
            topic = self.resolve(topic_id)
            if topic is None or topic.id != topic_id:
                self.picks.move(user_id, topic_id, topic.id if topic is not None else None)
            if topic is not None and topic.id not in seen:
                seen.add(topic.id)
                out.append(PickedTopic(topic, at, topic_id))
        return out

    def picked_ids(self, user_id: int) -> frozenset[int]:
        return frozenset(p.topic.id for p in self.picked(user_id))

    def candidates(
        self, topic_ids: Sequence[int], since: datetime, until: datetime, per_topic: int
    ) -> list[TopicCandidate]:
        return self.lookups.candidates(topic_ids, since, until, per_topic)

    def paper_topic(self, paper_id: str) -> PaperTopic | None:
        """The paper's topic and its coarse parent; None when topics were never built or it is unplaced."""
        topic = self.records.topic_of(paper_id)
        if topic is None:
            return None
        return PaperTopic(topic, self.lookups.parent_of(topic.id))

    def members(self, topic_id: int) -> frozenset[str] | None:
        """The paper ids of ``topic_id`` (or its successor); None when there is no such topic."""
        topic = self.resolve(topic_id)
        return None if topic is None else self.lookups.members(topic.id)
