"""The weekly group digest through the digest send ledger and the real SMTP test server (aiosmtpd): sent
exactly once per member and week — run again, or after a restart, nothing more goes out — with the next
session, the queue's newest and most voted papers and the new matches of the group's searches, without a
member's muted papers; RFC 8058 one-click unsubscribe stops it; a member who left is not mailed."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from paperfeed.adapters.store.schema_digests import digests
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.services.group_digest import group_period, group_slot
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.accounts.conftest import PAPER_IDS, load_papers, make_settings
from tests.support.smtp_server import SmtpTestServer

OWNER, MEMBER, LEAVER = "olga@example.org", "mehdi@example.org", "lena@example.org"
NOW = datetime.now(UTC)
SLOT = group_slot(NOW, 0, 8)


def _user(app: App, email: str, name: str) -> int:
    app.readers.accounts.sign_up(email, None, name, client="t", base_url="http://t")
    return app.readers.accounts.user_by_email(email).id


@pytest.fixture
def world(tmp_path: Path, smtp_server: SmtpTestServer) -> tuple[Settings, dict[str, int], int]:
    smtp_server.clear()
    settings = make_settings(tmp_path / "data", smtp_server, base_url="https://papers.example.org")
    app = build_app(settings)
    try:
        load_papers(app)
        fresh = Paper(
            id="2511.00001",
            title="Zebrafish larvae hunt in the dark",
            abstract="Zebrafish larvae find prey without light.",
            authors=("Ines Dark",),
            categories=("q-bio.NC",),
            published=SLOT - timedelta(days=2),
            sources={"t": "x"},
        )
        app.indexes.keyword.on_papers_changed(app.core.store.apply_batch(Batch(papers=[fresh])))
        app.indexes.keyword.flush()
        ids = {e: _user(app, e, e.split("@")[0].title()) for e in (OWNER, MEMBER, LEAVER)}
        g = app.readers.groups
        group = g.create(ids[OWNER], "Zebrafish club")
        for email in (MEMBER, LEAVER):
            g.records.add_member(group.id, ids[email], f"cal-{email}")
        g.queue_add(ids[MEMBER], group.id, PAPER_IDS[0], "three gaits")
        g.queue_add(ids[OWNER], group.id, PAPER_IDS[1])
        g.queue_add(ids[OWNER], group.id, PAPER_IDS[3])
        g.vote(ids[MEMBER], group.id, PAPER_IDS[1])
        g.vote(ids[OWNER], group.id, PAPER_IDS[1])
        g.schedule(ids[OWNER], group.id, NOW + timedelta(days=3), ids[MEMBER], PAPER_IDS[3])
        g.add_search(ids[MEMBER], group.id, "zebrafish")
        for email in (OWNER, MEMBER, LEAVER):
            g.set_digest(ids[email], group.id, True)
        app.readers.mutes.add(ids[MEMBER], "author", "Carla Nieve")  # PAPER_IDS[1], the most voted
    finally:
        app.close()
    return settings, ids, group.id


def _digests(server: SmtpTestServer) -> dict[str, int]:
    """Group digests received, per address (the accounts' confirmation mails are not counted)."""
    counts: dict[str, int] = {}
    for m in server.messages:
        if m.subject.endswith("the week in your reading group"):
            counts[m.to] = counts.get(m.to, 0) + 1
    return counts


def _mine(server: SmtpTestServer, email: str) -> list[Any]:
    return [m for m in server.to(email) if m.subject.endswith("the week in your reading group")]


def _run(settings: Settings, when: datetime) -> None:
    """One run of the digests job as `paperfeed digest send` does it, in a fresh process-like App."""
    app = build_app(settings)
    try:
        app.digests.sender.clock = app.digests.groups.clock = lambda: when
        app.digests.sender.run()
    finally:
        app.close()


def test_sent_once_per_member_and_week_even_after_a_restart(
    world: tuple[Settings, dict[str, int], int], smtp_server: SmtpTestServer
) -> None:
    settings, ids, gid = world
    app = build_app(settings)
    try:
        app.readers.groups.leave(ids[LEAVER], gid)  # opted in, then left: nothing for them
    finally:
        app.close()
    when = SLOT + timedelta(hours=1)
    _run(settings, when)
    assert _digests(smtp_server) == {OWNER: 1, MEMBER: 1}
    mine = _mine(smtp_server, MEMBER)[0]
    assert mine.subject == "Zebrafish club: the week in your reading group"
    text = mine.text
    assert "Next session:" in text
    assert "presented by Mehdi" in text
    assert "New in the queue" in text
    assert "Zebrafish locomotion with sparse transformers (added by Mehdi: three gaits)" in text
    assert "Zebrafish larvae hunt in the dark (matches “zebrafish”)" in text
    assert "Glacier melt" not in text  # the member mutes its author
    assert "Glacier melt forecasting from satellite radar (2 votes)" in _mine(smtp_server, OWNER)[0].text
    assert mine["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert (mine["List-Unsubscribe"] or "").startswith(
        "<https://papers.example.org/groups/digest/unsubscribe?t="
    )

    _run(settings, when + timedelta(minutes=5))  # the job again
    _run(settings, when + timedelta(hours=20))  # "after a restart": a new App on the same store
    assert _digests(smtp_server) == {OWNER: 1, MEMBER: 1}
    app = build_app(settings)
    try:
        with app.core.store.engine.connect() as conn:
            rows = conn.execute(select(digests.c.user_id, digests.c.period, digests.c.status)).all()
    finally:
        app.close()
    assert sorted(rows) == sorted(
        [(ids[OWNER], group_period(SLOT), "sent"), (ids[MEMBER], group_period(SLOT), "sent")]
    )


def test_one_click_unsubscribe_stops_next_weeks(
    world: tuple[Settings, dict[str, int], int], smtp_server: SmtpTestServer
) -> None:
    settings = world[0]
    _run(settings, SLOT + timedelta(hours=1))
    link = (_mine(smtp_server, MEMBER)[0]["List-Unsubscribe"] or "").strip("<>")
    path = link.removeprefix("https://papers.example.org")
    with TestClient(create_app(lambda: build_app(settings)), follow_redirects=False) as client:
        shown = client.get(path, headers={"accept": "text/html"})  # a mail scanner opening it: nothing
        assert shown.status_code == 200
        assert "Stop it" in shown.text
        stopped = client.post(
            path,
            content="List-Unsubscribe=One-Click",
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert stopped.status_code == 200
        forged = client.post(path[:-3] + "AAA", content="List-Unsubscribe=One-Click")
        assert forged.status_code == 404
    _run(settings, SLOT + timedelta(days=7, hours=1))
    assert _digests(smtp_server) == {OWNER: 2, MEMBER: 1, LEAVER: 2}


def test_two_runs_of_the_real_command_send_each_members_digest_once(
    world: tuple[Settings, dict[str, int], int], smtp_server: SmtpTestServer
) -> None:
    """`paperfeed digest send` twice, each a new process (a restart between them): one mail a member."""
    settings = world[0]
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env.update(
        smtp_server.environ(),
        PYTHONPATH=str(root / "src"),
        PAPERFEED_DATA_DIR=str(settings.data_dir),
        PAPERFEED_EMBEDDING_BACKEND="fake",
        PAPERFEED_BASE_URL="https://papers.example.org",
    )
    when = (SLOT + timedelta(hours=2)).isoformat()
    outputs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "paperfeed", "digest", "send", "--now", when],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert "composed 3 reading groups' weekly digests" in outputs[0]
    assert "reading groups" not in outputs[1]
    assert _digests(smtp_server) == {OWNER: 1, MEMBER: 1, LEAVER: 1}
