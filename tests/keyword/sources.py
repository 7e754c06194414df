"""A real (in-memory) PaperSource for driving IngestService in tests."""

from __future__ import annotations

from collections.abc import Iterator

from paperfeed.domain.ingest import Batch


class ListSource:
    """Yields prepared batches; no checkpoint, so every run applies them all."""

    name = "test-list"
    checkpoint_name: str | None = None

    def __init__(self, items: list[Batch]) -> None:
        self._items = items

    def batches(self, resume_from: str | None) -> Iterator[Batch]:
        yield from self._items
