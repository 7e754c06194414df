"""Supervisor status as small JSON files: ``<data_dir>/run/supervisor-<pid>.json``, one per ``paperfeed
run`` process, each replaced atomically (write a temporary file, then rename).

A file and not a table: ``paperfeed run`` is the single-host command (its children and every reader —
``paperfeed jobs status``, the web child's /admin/jobs — share its data folder), the status must be
writable while the database is what makes a child crash, and it needs no schema migration. A
deployment that runs the web server elsewhere uses ``paperfeed serve`` and ``paperfeed scheduler``
under its own process manager, and its /admin/jobs says that no supervisor runs here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from paperfeed.domain.supervision import SupervisorStatus

__all__ = ["JsonSupervisorStatus"]


class JsonSupervisorStatus:
    """Implements :class:`~paperfeed.domain.supervision.SupervisorStatusStore` on a folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, pid: int) -> Path:
        return self.folder / f"supervisor-{pid}.json"

    def publish(self, status: SupervisorStatus) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self._path(status.pid)
        temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(status.to_json(), indent=1) + "\n")
        os.replace(temp, target)

    def withdraw(self, pid: int) -> None:
        self._path(pid).unlink(missing_ok=True)

    def read_all(self) -> list[SupervisorStatus]:
        found = []
        for path in self.folder.glob("supervisor-*.json") if self.folder.is_dir() else ():
            try:
                value = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # removed meanwhile, or not ours
            if isinstance(value, dict):
                found.append(SupervisorStatus.from_json(value))
        return sorted(found, key=lambda s: s.started_at, reverse=True)
