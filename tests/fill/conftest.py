"""Recorded Hugging Face and arXiv responses replayed on loopback, mapped into a window of days."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from paperfeed.bootstrap import App, build_app
from paperfeed.services.fill import FillService
from paperfeed.settings import Settings
from tests.support.http_server import ReplayServer, Reply

HF_PATH = "/api/daily_papers"
ARXIV_PATH = "/api/query"
JSON = {"content-type": "application/json"}
ATOM = {"content-type": "application/atom+xml"}
RECORDED_DAYS = ("2026-08-21", "2026-08-20", "2025-03-14", "2024-05-27")
_RECORDED_JSON = "arxiv_atom_api/new_format_2026_lukasschwab_arxiv.py_recorded_json"
_BODIES = "arxiv_atom_api/new_format_2026_lukasschwab_arxiv.py_extracted_bodies"


def hf_body(fixtures: Path, recorded_day: str) -> bytes:
    return (fixtures / "hf_daily_api" / f"{recorded_day}.json").read_bytes()


def hf_count(fixtures: Path, recorded_day: str) -> int:
    return len(json.loads(hf_body(fixtures, recorded_day)))


def arxiv_body(fixtures: Path, name: str) -> bytes:
    return (fixtures / _BODIES / f"{name}.xml").read_bytes()


def arxiv_recorded(fixtures: Path, name: str) -> Reply:
    """A recorded arXiv interaction (status and body as arXiv sent them)."""
    data = json.loads((fixtures / _RECORDED_JSON / f"{name}.json").read_text(encoding="utf-8"))
    return Reply(int(data["status_code"]), data["body"].encode(), ATOM)


def primaries(body: bytes) -> list[str]:
    """Primary categories of a feed's entries, read with a regex (independently of our parser)."""
    return [t.decode() for t in re.findall(rb'<arxiv:primary_category[^>]*term="([^"]+)"', body)]


def published(body: bytes) -> list[datetime]:
    return [
        datetime.fromisoformat(t.decode().replace("Z", "+00:00"))
        for t in re.findall(rb"<published>([^<]+)</published>", body)
    ]


def expected_top(body: bytes, limit: int = 5) -> list[str]:
    counts = Counter(primaries(body))
    return [c for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 2][:limit]


def serve_days(server: ReplayServer, fixtures: Path, mapping: dict[date, str | None]) -> None:
    """Answer ``date=D`` with the recording ``mapping[D]`` (its real body), or ``[]`` when None."""
    for day, recorded in mapping.items():
        body = hf_body(fixtures, recorded) if recorded else b"[]"
        server.add(HF_PATH, Reply(200, body, JSON), params={"date": day.isoformat()})


def hf_dates(server: ReplayServer) -> list[str]:
    return [r.params["date"] for r in server.requests if r.path == HF_PATH]


def arxiv_requests(server: ReplayServer) -> list[dict[str, str]]:
    return [r.params for r in server.requests if r.path == ARXIV_PATH]


def env_for(server: ReplayServer, **extra: str) -> dict[str, str]:
    env = {
        "PAPERFEED_HF_API_URL": f"{server.base_url}/api",
        "PAPERFEED_ARXIV_API_URL": f"{server.base_url}{ARXIV_PATH}",
        "PAPERFEED_HF_DELAY": "0",
        "PAPERFEED_ARXIV_DELAY": "0",
        "PAPERFEED_HTTP_RETRIES": "0",
        "PAPERFEED_HTTP_TIMEOUT": "10",
        "PAPERFEED_KEYWORD_ENGINE": "fts5",
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
    }
    env.update(extra)
    return env


Builder = Callable[..., tuple[App, FillService]]


@pytest.fixture
def build(tmp_path: Path, server: ReplayServer) -> Iterator[Builder]:
    """An App on a real store talking to the loopback server, and its FillService on a fixed clock."""
    apps: list[App] = []

    def make(now: datetime, *, db_url: str | None = None, **settings: object) -> tuple[App, FillService]:
        values: dict[str, object] = {
            "data_dir": tmp_path / "data",
            "database_url": db_url,
            "hf_api_url": f"{server.base_url}/api",
            "arxiv_api_url": f"{server.base_url}{ARXIV_PATH}",
            "hf_delay": 0,
            "arxiv_delay": 0,
            "http_retries": 0,
            "http_timeout": 10,
            "keyword_engine": "postgres" if (db_url or "").startswith("postgresql") else "fts5",
            "embedding_backend": "fake",
        }
        values.update(settings)
        app = build_app(Settings(**values))  # type: ignore[arg-type]
        apps.append(app)
        return app, replace(app.sources.fill, now=lambda: now)

    yield make
    for app in apps:
        app.close()


NOW = datetime(2026, 8, 22, 12, 0, tzinfo=UTC)


def week_mapping() -> dict[date, str | None]:
    """A 7-day window: the recorded 08-20 and 08-21 on their own days, the two older recordings mapped
    to 08-19 and 08-18, the other days empty (as Hugging Face answers a day without papers)."""
    today = NOW.date()
    mapping: dict[date, str | None] = {today - timedelta(days=i): None for i in range(7)}
    mapping[date(2026, 8, 21)] = "2026-08-21"
    mapping[date(2026, 8, 20)] = "2026-08-20"
    mapping[date(2026, 8, 19)] = "2025-03-14"
    mapping[date(2026, 8, 18)] = "2024-05-27"
    return mapping
