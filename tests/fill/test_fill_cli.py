"""``paperfeed harvest fill`` as a user runs it: plain progress lines off a terminal, kill -9 and resume,
and an offline start that says so in one line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from paperfeed.adapters.store import open_store
from paperfeed.domain.fill import hf_day_key
from tests.support.http_server import ReplayServer, Reply

from .conftest import (
    ARXIV_PATH,
    HF_PATH,
    JSON,
    RECORDED_DAYS,
    arxiv_recorded,
    env_for,
    hf_body,
    hf_count,
    hf_dates,
)

pytestmark = pytest.mark.shared
ROOT = Path(__file__).resolve().parents[2]


def _cli(data: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    full = {**os.environ, **env, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "harvest", "fill", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full,
    )


def _window(days: int) -> list[date]:
    today = datetime.now(UTC).date()
    return [today - timedelta(days=i) for i in range(days)]


def _serve_cycle(server: ReplayServer, fixtures: Path, days: list[date]) -> dict[date, int]:
    """Day i of the window gets recording i mod 5 (the fifth: a day without papers, ``[]``)."""
    expected: dict[date, int] = {}
    for i, day in enumerate(days):
        recorded = (*RECORDED_DAYS, None)[i % 5]
        body = hf_body(fixtures, recorded) if recorded else b"[]"
        server.add(HF_PATH, Reply(200, body, JSON), params={"date": day.isoformat()})
        expected[day] = hf_count(fixtures, recorded) if recorded else 0
    return expected


def test_a_fill_killed_mid_way_resumes_where_it_stopped(
    tmp_path: Path, server: ReplayServer, fixtures_dir: Path
) -> None:
    days = _window(7)
    expected = _serve_cycle(server, fixtures_dir, days)
    hang = days[4]  # the fifth day never answers: the process is killed while waiting for it
    server.add(HF_PATH, Reply(200, b"[]", JSON, delay=60), params={"date": hang.isoformat()})
    server.add(ARXIV_PATH, arxiv_recorded(fixtures_dir, "id_0000.0000_s0_m100_8b51d9633a68"))
    env = env_for(server, PAPERFEED_ARXIV_CATEGORIES="cs.SE", PAPERFEED_HTTP_TIMEOUT="120")
    data = tmp_path / "data"

    proc = _cli(data, env, "--days", "7")
    deadline = time.monotonic() + 60
    while hang.isoformat() not in hf_dates(server):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the fill never reached the fifth day"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert hf_dates(server) == [d.isoformat() for d in days[:5]]
    store = open_store(f"sqlite+pysqlite:///{data / 'paperfeed.db'}")
    try:
        complete = [d for d in days if store.get_checkpoint(hf_day_key(d)) is not None]
        assert complete == days[2:4]  # settled days committed before the kill
    finally:
        store.close()

    _serve_cycle(server, fixtures_dir, days)  # the fifth day answers now
    server.requests.clear()
    proc = _cli(data, env, "--days", "7")
    _out, err = proc.communicate(timeout=120)

    assert proc.returncode == 0, err
    # today and yesterday again, never the two completed days, then from the day the kill interrupted
    assert hf_dates(server) == [d.isoformat() for d in (days[0], days[1], *days[4:])]
    assert "Traceback" not in err
    lines = err.splitlines()
    assert "Hugging Face days: 5 to fetch" in lines  # plain lines off a terminal
    assert any(line.startswith("Hugging Face days 5/5: ") for line in lines)
    assert "arXiv categories 1/1: cs.SE: 0 papers" in lines
    assert any("5 days fetched, 2 complete already" in line for line in lines)
    store = open_store(f"sqlite+pysqlite:///{data / 'paperfeed.db'}")
    try:
        for day, count in expected.items():
            assert len(store.listings_for_day(day, "hf-daily")) == count, day
        assert store.stats().listings == sum(expected.values())  # nothing twice
    finally:
        store.close()


def test_offline_fill_says_so_in_one_line_without_hanging(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {
        "PAPERFEED_HF_API_URL": f"http://127.0.0.1:{port}/api",
        "PAPERFEED_ARXIV_API_URL": f"http://127.0.0.1:{port}/api/query",
    }
    started = time.monotonic()
    proc = _cli(tmp_path / "data", env, "--probe-timeout", "2")
    _out, err = proc.communicate(timeout=60)

    assert time.monotonic() - started < 30
    assert proc.returncode == 3
    assert "Traceback" not in err
    text = [line for line in err.splitlines() if line.strip()]
    assert len(text) == 2, err
    assert text[0].startswith("sources unreachable (127.0.0.1")
    assert "make run DATA=papers.jsonl.gz" in text[1]
