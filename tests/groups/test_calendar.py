"""The members' iCalendar feed, read by an independent parser (the ``ics`` package, not the ``icalendar``
library that writes it): one event per session with a stable UID, the start in UTC, the paper's title
(hostile text included) and the links; a feed dies with its member's membership."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from ics import Calendar  # type: ignore[import-untyped]

from paperfeed.bootstrap import App
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from tests.accounts.conftest import PAPER_IDS

HOSTILE = "Comma, semi; colon: back\\slash\nnewline <b>bold</b> ünïcode"


def _user(app: App, email: str) -> int:
    app.readers.accounts.sign_up(email, None, None, client="t", base_url="http://t")
    return app.readers.accounts.user_by_email(email).id


def test_a_real_parser_reads_every_session(app: App, site: TestClient) -> None:
    hostile = Paper(id="2501.00999", title=HOSTILE, abstract="a", authors=("A",), sources={"t": "x"})
    app.core.store.apply_batch(Batch(papers=[hostile]))
    owner, member = _user(app, "o@example.org"), _user(app, "m@example.org")
    g = app.readers.groups
    group = g.create(owner, "Fish; club, \\ weekly")
    g.records.add_member(group.id, member, "cal-token-of-member")
    start = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    for paper in (PAPER_IDS[0], hostile.id):
        g.queue_add(owner, group.id, paper)
    first = g.schedule(owner, group.id, start, member, PAPER_IDS[0])
    second = g.schedule(owner, group.id, start + timedelta(days=7), owner, hostile.id)

    reply = site.get(f"/groups/calendar/{g.calendar_token(member, group.id)}.ics")
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "text/calendar; charset=utf-8"
    assert reply.headers["cache-control"] == "private, max-age=300"
    calendar = Calendar(reply.text)
    events = sorted(calendar.events, key=lambda e: e.begin)
    assert [e.uid.split("@")[0] for e in events] == [
        f"group-{group.id}-session-{first.id}",
        f"group-{group.id}-session-{second.id}",
    ]
    assert events[0].begin.datetime == start
    assert events[0].end.datetime == start + timedelta(hours=1)
    assert events[0].name.startswith("Journal club: Zebrafish locomotion")
    assert " ".join(HOSTILE.split()) in events[1].name  # escaped on the wire, the same text read back
    assert f"Presenter: reader {member}" in events[0].description  # no display name: never the address
    assert f"/groups/{group.id}/sessions/{first.id}" in str(events[0].url)

    # the same feed read again: the same UIDs (a calendar updates, never duplicates)
    again = Calendar(site.get(f"/groups/calendar/{g.calendar_token(member, group.id)}.ics").text)
    assert {e.uid for e in again.events} == {e.uid for e in events}

    # a removed member's feed is gone
    token = g.calendar_token(member, group.id)
    g.remove(owner, group.id, member)
    assert site.get(f"/groups/calendar/{token}.ics").status_code == 404
