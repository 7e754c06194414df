"""A reading group's sessions as an iCalendar file (RFC 5545), written by the ``icalendar`` library.

One ``VEVENT`` per session: a stable ``UID`` (so a calendar updates an event rather than adding another
when the feed is read again), the start in UTC, an hour long, the paper's title in the summary, the
presenter and the paper's address in the description and ``URL``. Titles come from papers (untrusted
text): the library escapes what RFC 5545 needs escaped, and nothing here is HTML.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from urllib.parse import urlsplit

from icalendar import Calendar, Event

from paperfeed.domain.groups import Group
from paperfeed.services.groups import SessionItem

__all__ = ["SESSION_LENGTH", "calendar_bytes"]

SESSION_LENGTH = timedelta(hours=1)


def calendar_bytes(group: Group, sessions: Sequence[SessionItem], base_url: str) -> bytes:
    site = base_url.rstrip("/")
    host = urlsplit(site).hostname or "paperfeed"
    cal = Calendar()
    cal.add("prodid", "-//paperfeed//reading groups//EN")
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("x-wr-calname", f"{group.name} (journal club)")
    for item in sessions:
        session = item.session
        title = " ".join(item.paper.title.split()) if item.paper else "a paper no longer shown"
        event = Event()
        event.add("uid", f"group-{group.id}-session-{session.id}@{host}")
        event.add("dtstamp", session.created_at)
        event.add("dtstart", session.starts_at)
        event.add("dtend", session.starts_at + SESSION_LENGTH)
        event.add("summary", f"Journal club: {title}")
        page = f"{site}/groups/{group.id}/sessions/{session.id}"
        paper = f"{site}/papers/{session.paper_id}"
        event.add("description", f"Presenter: {session.presenter_name}\nPaper: {paper}\nNotes: {page}")
        event.add("url", page)
        cal.add_component(event)
    ical: bytes = cal.to_ical()
    return ical
