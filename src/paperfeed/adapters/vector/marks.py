"""A node-local vector index's sync point, kept in a small JSON file next to the index.

On PostgreSQL with ``PAPERFEED_VECTOR_INDEX=local`` every node keeps its own folder index, so the
high-water mark that says how far that index has followed the shared embeddings table belongs to the node
too (a mark in the database would be one node's claim read by all). It lives beside, not inside, the
index folder: a fresh build replaces the folder, and the mark is written only after the index is saved.
A lost mark file means a full rebuild from the stored vectors, never a wrong answer.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["FolderMarks"]


class FolderMarks:
    """:class:`~paperfeed.domain.embedding.IndexMarks` in the JSON file ``path`` (written atomically)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def get_mark(self, name: str) -> datetime | None:
        value = self._read().get(name)
        if value is None:
            return None
        try:
            found = datetime.fromisoformat(value)
        except ValueError:
            return None  # unreadable: the index is rebuilt, as if the mark were missing
        return found if found.tzinfo is not None else found.replace(tzinfo=UTC)

    def set_mark(self, name: str, value: datetime | None) -> None:
        marks = self._read()
        if value is None:
            marks.pop(name, None)
        else:
            marks[name] = value.astimezone(UTC).isoformat()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
        tmp.write_text(json.dumps(marks))
        os.replace(tmp, self.path)
