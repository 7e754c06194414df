"""What ``paperfeed run`` reports about the processes it supervises (web, scheduler, indexer), and the port
through which it publishes that for ``paperfeed jobs status`` and /admin/jobs to read
(``adapters/supervisor_status.py`` keeps it as small JSON files in the data folder).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["ChildStatus", "SupervisorStatus", "SupervisorStatusStore", "describe_supervisors", "served_url"]

# What a child can be doing: ``starting``/``running``; ``restarting`` (waiting out its back-off after it
# died); ``standby`` (the scheduler's lease is held by another process: retried later); ``failed`` (it
# kept crashing and is not restarted any more); ``stopping``/``stopped``.
CHILD_STATES = ("starting", "running", "restarting", "standby", "failed", "stopping", "stopped")


def _time(value: object) -> datetime:
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        return datetime.fromtimestamp(0, UTC)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class ChildStatus:
    """One supervised process: its current pid, state, how often it was restarted and its last exit."""

    name: str
    pid: int | None
    state: str
    restarts: int
    last_exit: int | None
    since: datetime
    note: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "pid": self.pid,
            "state": self.state,
            "restarts": self.restarts,
            "last_exit": self.last_exit,
            "since": self.since.isoformat(),
            "note": self.note,
        }

    @staticmethod
    def from_json(value: dict[str, object]) -> ChildStatus:
        note = value.get("note")
        return ChildStatus(
            name=str(value.get("name", "?")),
            pid=_int(value.get("pid")),
            state=str(value.get("state", "?")),
            restarts=_int(value.get("restarts")) or 0,
            last_exit=_int(value.get("last_exit")),
            since=_time(value.get("since")),
            note=str(note) if note is not None else None,
        )

    def phrase(self) -> str:
        """``scheduler running (pid 12, restarted 2x, last exit -9)``: one child for a status line."""
        bits = [f"pid {self.pid}"] if self.pid is not None and self.state in ("starting", "running") else []
        if self.restarts:
            bits.append(f"restarted {self.restarts}x")
        if self.last_exit is not None and (self.restarts or self.state not in ("starting", "running")):
            bits.append(f"last exit {self.last_exit}")
        if self.note:
            bits.append(self.note)
        return f"{self.name} {self.state}" + (f" ({', '.join(bits)})" if bits else "")


@dataclass(frozen=True, slots=True)
class SupervisorStatus:
    """One ``paperfeed run`` supervisor: who it is (``host:pid:start``, so a dead one is recognised), and
    ``url``, the site's public URL as it serves it (where its links in mail point: ``PAPERFEED_BASE_URL``,
    else the host and port it listens on), for commands in another shell (``paperfeed users add --link``)
    whose settings cannot know a ``--port`` given to it."""

    identity: str
    pid: int
    started_at: datetime
    updated_at: datetime
    children: tuple[ChildStatus, ...] = field(default_factory=tuple)
    url: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "identity": self.identity,
            "pid": self.pid,
            "started_at": self.started_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "children": [c.to_json() for c in self.children],
            "url": self.url,
        }

    @staticmethod
    def from_json(value: dict[str, object]) -> SupervisorStatus:
        children = value.get("children")
        entries = children if isinstance(children, list) else []
        url = value.get("url")
        return SupervisorStatus(
            identity=str(value.get("identity", "")),
            pid=_int(value.get("pid")) or 0,
            started_at=_time(value.get("started_at")),
            updated_at=_time(value.get("updated_at")),
            children=tuple(ChildStatus.from_json(c) for c in entries if isinstance(c, dict)),
            url=url if isinstance(url, str) and url else None,
        )


class SupervisorStatusStore(Protocol):
    """Where supervisors publish their status: one entry per supervisor process."""

    def publish(self, status: SupervisorStatus) -> None:
        """Replace this supervisor's entry atomically (a reader sees the old or the new, never half)."""
        ...

    def withdraw(self, pid: int) -> None:
        """Remove the entry of supervisor ``pid`` (it stopped cleanly)."""
        ...

    def read_all(self) -> list[SupervisorStatus]:
        """Every entry, newest first; unreadable ones are skipped."""
        ...


def describe_supervisors(statuses: list[SupervisorStatus], is_dead: Callable[[str], bool]) -> list[str]:
    """Lines for ``paperfeed jobs status`` and /admin/jobs: the live supervisors with their children, or
    that none runs (and which one is gone, when a killed one left its entry)."""
    live = [s for s in statuses if not is_dead(s.identity)]
    if live:
        return [
            f"supervised by paperfeed run pid {s.pid} (since {s.started_at:%Y-%m-%d %H:%M:%S} UTC): "
            + ", ".join(c.phrase() for c in s.children)
            for s in live
        ]
    gone = f" (the last one, pid {statuses[0].pid}, is gone)" if statuses else ""
    return [
        "no paperfeed run supervisor is running on this data folder"
        + gone
        + ": the web server, scheduler and indexer are not supervised here"
    ]


def served_url(statuses: list[SupervisorStatus], is_dead: Callable[[str], bool]) -> str | None:
    """The public URL of the newest live supervisor on this data folder that said one, else None."""
    return next((s.url for s in statuses if s.url and not is_dead(s.identity)), None)
