"""``paperfeed harvest citations`` killed with SIGKILL mid-harvest, as a user's machine would: the real CLI
in a subprocess against the recorded S2 answers on loopback. The saved batch stays whole, the batch in
flight leaves nothing, and the same command run again resumes with the papers not yet saved."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import pytest

from paperfeed.adapters.store import open_store
from paperfeed.adapters.store.citations import SqlCitationRecords
from paperfeed.services.citations import checkpoint_name
from tests.support.http_server import ReplayServer, Reply

from .harvest_support import BATCH, add_papers, serve_s2
from .scholarly_replay import S2_BASE, s2

pytestmark = pytest.mark.shared
ROOT = Path(__file__).resolve().parents[2]
IDS = ["2611.00001", "2611.00002", "2611.00003", "2611.00004"]


def _cli(data: Path, base_url: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "PAPERFEED_S2_API_URL": f"{base_url}{S2_BASE}",
        "PAPERFEED_S2_DELAY": "0",
        "PAPERFEED_HTTP_TIMEOUT": "120",
        "PAPERFEED_CITATIONS_BATCH_SIZE": "2",
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paperfeed",
            "--data-dir",
            str(data),
            "harvest",
            "citations",
            *IDS,
            "--source",
            "s2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_a_harvest_killed_mid_batch_keeps_the_saved_batch_and_resumes(
    tmp_path: Path, server: ReplayServer, fixtures_dir: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    url = f"sqlite+pysqlite:///{data / 'paperfeed.db'}"
    store = open_store(url)
    add_papers(store, dict.fromkeys(IDS, "2026-11-01"))
    store.close()
    papers = serve_s2(server, fixtures_dir, batch_size=2)
    # the second batch's first paper: its references never come (the process is killed while waiting)
    hang = f"{S2_BASE}/paper/{papers[2]['paperId']}/references"
    whole = s2(fixtures_dir, "references_full_page1_offset0_next100.json")
    server.add(hang, Reply(whole.status, whole.body, whole.headers, delay=60), params={"offset": "0"})

    proc = _cli(data, server.base_url)
    deadline = time.monotonic() + 60
    while not any(r.path == hang for r in server.requests):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the harvest never reached the second batch"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)

    store = open_store(url)
    try:
        records = SqlCitationRecords(store.engine)
        assert set(records.harvested(IDS, "s2")) == set(IDS[:2])  # the first batch, whole
        assert store.get_checkpoint(checkpoint_name("s2")) == "2/4"
        counts = records.counts(IDS, as_of=date(2026, 11, 24))
        assert IDS[1] in counts  # the saved paper's links
        assert IDS[2] not in counts  # the batch in flight left nothing
        saved_refs = counts[IDS[1]].references
    finally:
        store.close()

    server.add(hang, whole, params={"offset": "0"})  # answers now
    server.requests.clear()
    proc = _cli(data, server.base_url)
    out, err = proc.communicate(timeout=120)

    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "Semantic Scholar: 2 papers to ask, 2 harvested recently (skipped)" in err
    assert "Semantic Scholar: resumed an interrupted harvest" in err
    assert "2 papers asked (0 unknown to it)" in out
    posts = [r for r in server.requests if r.path == BATCH]
    assert len(posts) == 1
    assert b"arXiv:2611.00003" in posts[0].body
    assert b"arXiv:2611.00002" not in posts[0].body  # the saved batch is not asked again
    store = open_store(url)
    try:
        records = SqlCitationRecords(store.engine)
        assert set(records.harvested(IDS, "s2")) == set(IDS)
        assert store.get_checkpoint(checkpoint_name("s2")) is None
        counts = records.counts(IDS, as_of=date(2026, 11, 24))
        assert counts[IDS[2]].references == counts[IDS[3]].references == saved_refs
    finally:
        store.close()
