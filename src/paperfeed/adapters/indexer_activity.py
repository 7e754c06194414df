"""Indexer activity as small JSON files: ``<data_dir>/run/indexer-<pid>.json``, one per indexing process,
each replaced atomically (a temporary file, then a rename), like the supervisor's status beside it.

A file and not a table: an indexer writes it every few seconds while it embeds, and a row updated that
often would be a write on the database every reader's transaction competes with. Readers on the same
host tell a dead process by its pid (:func:`~paperfeed.domain.indexer_activity.current_activity`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from paperfeed.domain.indexer_activity import IndexerActivity

__all__ = ["JsonIndexerActivity"]


class JsonIndexerActivity:
    """Implements :class:`~paperfeed.domain.indexer_activity.IndexerActivityStore` on a folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, holder: str) -> Path:
        parts = holder.split(":")
        pid = parts[1] if len(parts) > 1 and parts[1].isdigit() else "0"
        return self.folder / f"indexer-{pid}.json"

    def publish(self, activity: IndexerActivity) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self._path(activity.holder)
        temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(activity.to_json()) + "\n")
        os.replace(temp, target)

    def withdraw(self, holder: str) -> None:
        self._path(holder).unlink(missing_ok=True)

    def read_all(self) -> list[IndexerActivity]:
        found = []
        for path in self.folder.glob("indexer-*.json") if self.folder.is_dir() else ():
            try:
                value = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # removed meanwhile, or not ours
            entry = IndexerActivity.from_json(value) if isinstance(value, dict) else None
            if entry is not None:
                found.append(entry)
        return found
