"""Exactly once across crashes: ``paperfeed digest send`` SIGKILLed at chosen points, then run again.

The recording SMTP server kills the sending subprocess from inside the SMTP conversation, at the points
that matter: as a MAIL FROM arrives (the message is not handed over: it must be sent again), after the
server stored a message but before it replied (handed over: it must not be sent again), right after it
replied 250 (before the sender could record it), and once at an arbitrary moment. A last run finishes
the job; every subscriber must have received exactly one digest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from paperfeed.bootstrap import build_app
from paperfeed.domain.digest import DigestStatus
from tests.support.digests import BASE_URL, SECRET, digest_settings, load_papers, subscribe_active
from tests.support.smtp_server import Received, SmtpTestServer

pytestmark = pytest.mark.slow

SUBSCRIBERS = 24
NOW = "2025-03-20T09:00Z"


def environ(data_dir: Path, smtp: SmtpTestServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env.update(smtp.environ())
    env.update(
        PAPERFEED_DATA_DIR=str(data_dir),
        PAPERFEED_SECRET_KEY=SECRET,
        PAPERFEED_BASE_URL=BASE_URL,
        PAPERFEED_EMBEDDING_BACKEND="fake",
        PAPERFEED_KEYWORD_ENGINE="fts5",
    )
    return env


class Sender:
    """Runs ``paperfeed digest send`` as a subprocess that the SMTP server may kill."""

    def __init__(self, data_dir: Path, smtp: SmtpTestServer) -> None:
        self.env = environ(data_dir, smtp)
        self.smtp = smtp
        self.proc: subprocess.Popen[bytes] | None = None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)

    def run(self, *, timer: float | None = None) -> int:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "paperfeed", "digest", "send", "--now", NOW],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        killer = threading.Timer(timer, self.kill) if timer is not None else None
        if killer is not None:
            killer.start()
        try:
            out, _ = self.proc.communicate(timeout=180)
        finally:
            if killer is not None:
                killer.cancel()
            self.smtp.on_mail = None
            self.smtp.on_data = None
        self.output = out.decode(errors="replace")
        return self.proc.returncode


def kill_at_mail(sender: Sender, nth: int) -> None:
    seen = [0]

    def hook(_address: str) -> None:
        seen[0] += 1
        if seen[0] == nth:
            sender.kill()

    sender.smtp.on_mail = hook


def kill_at_data(sender: Sender, nth: int, *, after_reply: bool = False) -> None:
    start = len(sender.smtp.messages)

    def hook(_item: Received, count: int) -> None:
        if count - start != nth:
            return
        if after_reply:  # let the 250 go out first, then kill before the sender records it
            import asyncio

            asyncio.get_running_loop().call_later(0.002, sender.kill)
        else:
            sender.kill()

    sender.smtp.on_data = hook


def test_kill_9_at_every_point_then_rerun_sends_each_digest_exactly_once(
    tmp_path: Path, smtp_server: SmtpTestServer
) -> None:
    data_dir = tmp_path / "data"
    app = build_app(digest_settings(data_dir, smtp_server))
    try:
        load_papers(app)
        emails = [f"reader{i:02d}@example.org" for i in range(SUBSCRIBERS)]
        for email in emails:
            subscribe_active(app, email)
    finally:
        app.close()
    sender = Sender(data_dir, smtp_server)
    plans: list[tuple[str, Callable[[], None], float | None]] = [
        ("MAIL FROM of the 3rd message", lambda: kill_at_mail(sender, 3), None),
        ("stored the 4th message, no reply yet", lambda: kill_at_data(sender, 4), None),
        ("just after replying 250 to the 3rd", lambda: kill_at_data(sender, 3, after_reply=True), None),
        ("MAIL FROM of the 2nd message", lambda: kill_at_mail(sender, 2), None),
    ]
    for label, arm, timer in plans:
        arm()
        code = sender.run(timer=timer)
        assert code == -signal.SIGKILL, f"{label}: the run was not killed (exit {code}): {sender.output}"
    # One kill at whatever moment the timer lands (starting up, composing or sending), then finish.
    sender.run(timer=1.0)
    final = sender.run()
    assert final == 0, sender.output
    counts = smtp_server.per_recipient()
    assert dict(counts) == dict.fromkeys(emails, 1), counts
    app = build_app(digest_settings(data_dir, smtp_server))
    try:
        entries = app.digests.records.entries()
        states = {e.email: e.status for e in entries}
        assert len(entries) == SUBSCRIBERS  # one ledger row per subscriber and period
        assert set(states.values()) <= {DigestStatus.sent, DigestStatus.unconfirmed}
        # The kill between "stored" and "replied" leaves exactly that digest unconfirmed (not resent).
        assert list(states.values()).count(DigestStatus.unconfirmed) >= 1
        ids = [m["Message-ID"] for m in smtp_server.messages]
        assert len(set(ids)) == SUBSCRIBERS
    finally:
        app.close()
    rerun = sender.run()  # nothing left to do
    assert rerun == 0
    assert len(smtp_server.messages) == SUBSCRIBERS
