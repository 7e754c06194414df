"""The map of the papers (issue #17): the points for ``/map`` and one paper's place on a small map.

The layout itself is the topic build's (``paperfeed topics build``); this service only reads it. A small
map's backdrop (a thinned sample of every point and the bounds of the whole map) is the same for every
paper page of one topic build, so it is read once per build and process and kept with the build's topics
(``backdrop_ttl`` bounds how long daily placements, which never move the bounds or rename a topic but do
grow its size, can go unseen). Reading the ~1,300 topics of a 200k-paper build for every paper page was
most of that page's map cost (29 of 35 ms).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from paperfeed.domain.topic_map import MapPoints, MapRecords, MapTopic, PaperPlace, thin

__all__ = ["MapData", "TopicMapService"]


@dataclass(frozen=True, slots=True)
class MapData:
    """What ``/api/map/points`` serves: the build, its topics (both levels) and every visible point."""

    generation: int | None
    topics: list[MapTopic]
    points: MapPoints


@dataclass(frozen=True, slots=True)
class _Backdrop:
    generation: int
    made: float
    points: list[tuple[float, float]]
    bounds: tuple[float, float, float, float]
    topics: dict[int, MapTopic]


class TopicMapService:
    def __init__(
        self,
        records: MapRecords,
        *,
        backdrop_points: int = 1500,
        topic_points: int = 400,
        backdrop_ttl: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.records = records
        self.backdrop_points, self.topic_points = backdrop_points, topic_points
        self.backdrop_ttl, self.clock = backdrop_ttl, clock
        self._backdrop: _Backdrop | None = None

    def generation(self) -> int | None:
        return self.records.generation()

    def data(self) -> MapData:
        """Every placed paper and every topic; empty (generation ``None``) before the first build."""
        generation = self.records.generation()
        if generation is None:
            return MapData(None, [], MapPoints())
        return MapData(generation, self.records.map_topics(), self.records.map_points())

    def titles(self, paper_ids: Sequence[str]) -> dict[str, str]:
        return self.records.titles(paper_ids)

    def place(self, paper_id: str) -> PaperPlace | None:
        """``paper_id`` on a small map, or ``None`` when it has no place (no build, not placed yet)."""
        where = self.records.place_of(paper_id)
        if where is None:
            return None
        x, y, topic_id = where
        backdrop = self._current_backdrop()
        if backdrop is None:
            return None
        topic = backdrop.topics.get(topic_id)
        size = topic.size if topic is not None else self.topic_points
        neighbours = self.records.sample(thin(size, self.topic_points), topic_id)
        return PaperPlace(paper_id, x, y, topic, backdrop.points, neighbours, backdrop.bounds)

    def _current_backdrop(self) -> _Backdrop | None:
        generation = self.records.generation()
        if generation is None:
            return None
        kept = self._backdrop
        fresh = kept is not None and self.clock() - kept.made < self.backdrop_ttl
        if kept is not None and fresh and kept.generation == generation:
            return kept
        count, x0, y0, x1, y1 = self.records.extent()
        if count == 0:
            return None
        points = self.records.sample(thin(count, self.backdrop_points))
        topics = {t.id: t for t in self.records.map_topics()}
        self._backdrop = _Backdrop(generation, self.clock(), points, (x0, y0, x1, y1), topics)
        return self._backdrop
