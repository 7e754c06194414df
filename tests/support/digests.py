"""The digest tests' synthetic world, shared with bench/faults.py: settings, papers, active subscriptions.

``tests/digests/data/papers.jsonl`` holds 60 synthetic papers listed on the weekdays 10-21 March 2025
(6 a day, in cs.CL, cs.LG, cs.CV, math.ST and cs.AI), imported by the real import code. ``Clock`` is the
time the services see: tests move it to make digests due.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store.schema_accounts import users
from paperfeed.bootstrap import App
from paperfeed.domain.digest import Preferences, Section, Subscription
from paperfeed.settings import Settings
from tests.support.smtp_server import SmtpTestServer

__all__ = [
    "BASE_URL",
    "PAPERS",
    "SECRET",
    "Clock",
    "add_user",
    "digest_settings",
    "load_papers",
    "subscribe_active",
]

PAPERS = Path(__file__).resolve().parent.parent / "digests" / "data" / "papers.jsonl"
BASE_URL = "https://papers.example.org"
SECRET = "digest-tests-secret-0123456789abcdefghij"


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def digest_settings(data_dir: Path, smtp: SmtpTestServer | None = None, **extra: object) -> Settings:
    values: dict[str, object] = {
        "data_dir": data_dir,
        "database_url": None,
        "embedding_backend": "fake",
        "keyword_engine": "fts5",
        "base_url": BASE_URL,
        "secret_key": SECRET,
        "mail_from": "paperfeed <digest@papers.example.org>",
    }
    if smtp is not None:
        values.update(smtp.settings())
    values.update(extra)
    return Settings(**values)  # type: ignore[arg-type]


def load_papers(app: App) -> None:
    summary = app.sources.ingest.run(JsonlFileSource(PAPERS, batch_size=app.settings.batch_size))
    assert summary.rejected == 0, summary.rejects[:3]


def add_user(app: App, email: str) -> int:
    with app.core.store.engine.begin() as conn:
        result = conn.execute(
            insert(users).values(
                email=email,
                display_name=None,
                email_verified_at=datetime.now(UTC),
                created_at=datetime.now(UTC),
            )
        )
        key = result.inserted_primary_key
        assert key is not None
        return int(key[0])


def subscribe_active(app: App, email: str, *, user_id: int | None = None, **prefs: object) -> Subscription:
    """An active subscription written straight to the store (the double opt-in is tested elsewhere)."""
    from paperfeed.domain.digest import SubscriptionStatus

    options: dict[str, object] = {"sections": (Section.trending,), "timezone": "UTC", "send_hour": 7}
    options.update(prefs)
    checked = Preferences(**options).checked()  # type: ignore[arg-type]
    created = app.digests.records.create_subscription(
        email,
        checked,
        status=SubscriptionStatus.active,
        user_id=user_id,
        now=datetime(2025, 3, 1, tzinfo=UTC),
    )
    return created.subscription
