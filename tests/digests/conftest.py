"""A real app on a real SQLite store with synthetic papers, its mail going to the recording SMTP server.

The papers, settings and helpers are in :mod:`tests.support.digests` (bench/faults.py uses them too).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from paperfeed.bootstrap import App, build_app
from tests.support.digests import Clock, digest_settings, load_papers
from tests.support.smtp_server import SmtpTestServer


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2025, 3, 20, 9, 0, tzinfo=UTC))  # a Thursday, after 07:00 UTC


@pytest.fixture
def app(tmp_path: Path, smtp_server: SmtpTestServer, clock: Clock) -> Iterator[App]:
    built = build_app(digest_settings(tmp_path / "data", smtp_server))
    load_papers(built)
    built.digests.sender.clock = clock
    built.digests.subscriptions.clock = clock
    try:
        yield built
    finally:
        built.close()
