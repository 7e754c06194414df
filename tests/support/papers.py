"""The one way tests make a :class:`~paperfeed.domain.models.Paper` (there were sixteen ``paper()``
helpers, each with its own idea of a date, a source and an abstract: issue #32).

Give what the test is about; the rest is plain: the title ``Paper <id>``, no abstract, no authors,
no date. ``day`` is the published time (``"2024-01-02"`` is that midnight UTC; a ``date`` too; an aware
``datetime`` as it is; or pass ``published=`` itself); ``updated=True`` makes it the updated time too,
and ``updated=<a time>`` gives that time its own value. ``source`` records the paper as seen by the
``test`` source then (``sources={"test": source}``). Any other field of ``Paper`` by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from paperfeed.domain.models import Paper

__all__ = ["at", "paper"]


def at(day: str | date | datetime | None) -> datetime | None:
    """``day`` as an aware datetime (midnight UTC for a day)."""
    if day is None or isinstance(day, datetime):
        return day
    if isinstance(day, str):
        return datetime.fromisoformat(day).replace(tzinfo=UTC)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def paper(
    pid: str = "2401.00001",
    title: str | None = None,
    *,
    day: str | date | datetime | None = None,
    updated: bool | str | date | datetime | None = False,
    source: str | None = None,
    abstract: str = "",
    authors: Sequence[str] = (),
    categories: Sequence[str] = (),
    **fields: Any,
) -> Paper:
    published = at(day) if day is not None else fields.pop("published", None)
    if updated is True:
        fields["updated"] = published
    elif updated is not False:
        fields["updated"] = at(updated)
    if source is not None:
        fields["sources"] = {"test": source}
    return Paper(
        id=pid,
        title=f"Paper {pid}" if title is None else title,
        abstract=abstract,
        authors=tuple(authors),
        categories=tuple(categories),
        published=published,
        **fields,
    )
