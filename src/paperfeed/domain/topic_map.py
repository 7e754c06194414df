"""The map of the papers (issue #17): every placed paper at its 2-D place, the topics' labels on it.

Whatever layout the topic build chose (``x``/``y`` of ``topic_papers`` and ``topics``), the map only reads
it: :class:`MapRecords` is the port the store implements. The rules here are pure and small:

* **Columns, not objects.** 200,000 points travel as parallel columns (:class:`MapPoints`), so the web
  surface can pack them into a compact binary answer without building a dict per paper.
* **Days.** A paper's published day is its number of days since 1970-01-01, ``0`` when unknown (no arXiv
  paper predates 1991, so day 0 never means a real date); it fits an unsigned 16-bit column until 2149.
* **A small map of one paper** (:class:`PaperPlace`): a thinned sample of every point as the backdrop,
  a sample of the paper's own topic tinted, and the paper itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Protocol

__all__ = [
    "EPOCH",
    "MAX_DAY",
    "MapPoints",
    "MapRecords",
    "MapTopic",
    "PaperPlace",
    "day_number",
    "thin",
]

EPOCH = date(1970, 1, 1)
MAX_DAY = 65_535


def day_number(published: date | datetime | None) -> int:
    """Days since 1970-01-01 (``0``: unknown), clipped to ``1..65535`` for a 16-bit column."""
    if published is None:
        return 0
    d = published.date() if isinstance(published, datetime) else published
    return max(1, min((d - EPOCH).days, MAX_DAY))


@dataclass(frozen=True, slots=True)
class MapTopic:
    """A topic's label at its centre; ``level`` 0 is a fine topic, 1 a coarse one (``parent_id`` links)."""

    id: int
    label: str
    x: float
    y: float
    size: int
    level: int = 0
    parent_id: int | None = None


@dataclass(slots=True)
class MapPoints:
    """Every placed, visible paper as parallel columns, ordered by paper id."""

    ids: list[str] = field(default_factory=list)
    x: list[float] = field(default_factory=list)
    y: list[float] = field(default_factory=list)
    topic: list[int] = field(default_factory=list)  # a topic id
    day: list[int] = field(default_factory=list)  # :func:`day_number` of the published date
    category: list[str] = field(default_factory=list)  # primary category, "" when unknown

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, slots=True)
class PaperPlace:
    """One paper on a small map: the backdrop sample, its topic's sample and itself."""

    paper_id: str
    x: float
    y: float
    topic: MapTopic | None
    backdrop: Sequence[tuple[float, float]]  # a thinned sample of every point
    neighbours: Sequence[tuple[float, float]]  # a sample of the paper's own topic
    bounds: tuple[float, float, float, float]  # min x, min y, max x, max y of every point


def thin(count: int, wanted: int) -> int:
    """The step that keeps about ``wanted`` of ``count`` rows (every ``step``-th, 1 keeps all)."""
    return max(1, -(-count // max(wanted, 1)))


class MapRecords(Protocol):
    """The store's side of the map: placed papers, the topics' centres, one paper's place."""

    def generation(self) -> int | None:
        """The live topic build's number; ``None`` before the first build."""
        ...

    def map_topics(self) -> list[MapTopic]: ...

    def map_points(self) -> MapPoints:
        """Every placed paper not hidden by an administrator, ordered by id."""
        ...

    def place_of(self, paper_id: str) -> tuple[float, float, int] | None:
        """A paper's ``(x, y, topic id)``, or ``None`` when it is not placed."""
        ...

    def sample(self, step: int, topic_id: int | None = None) -> list[tuple[float, float]]:
        """Every ``step``-th placed point by paper id (of one topic when ``topic_id`` is given)."""
        ...

    def titles(self, paper_ids: Sequence[str]) -> dict[str, str]:
        """The titles of the given papers that exist and are not hidden."""
        ...

    def extent(self) -> tuple[int, float, float, float, float]:
        """``(count, min x, min y, max x, max y)`` of the placed points (zeros when there are none)."""
        ...
