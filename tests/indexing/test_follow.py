"""`paperfeed index --follow`, the indexer `paperfeed run` supervises: it embeds the backlog, waits, and
embeds what arrives later, until SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.importing.conftest import rec, write_jsonl
from tests.support.follower import import_file, index_follow

pytestmark = pytest.mark.slow


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[-1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _maps(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return ""


def test_follow_embeds_new_papers_as_they_arrive_and_stops_on_sigterm(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "PAPERFEED_EMBEDDING_BACKEND": "fake", "PAPERFEED_KEYWORD_ENGINE": "fts5"}
    import_file(data, env, write_jsonl(tmp_path / "a.jsonl", [rec(f"2503.{i:05d}") for i in range(1, 6)]))
    with index_follow(data, env, "--limit", "3", "--poll", "0.3", "--nice", "5") as follower:
        follower.expect("embedded 3 papers")  # slices of --limit
        assert follower.seen[-1].endswith("; 2 still to embed")
        follower.expect("embedded 2 papers")
        # after the vectors, the sentences: the fake model ships no role model, so it is trained first
        # (~30 CPU-s of logistic regression, minutes of wall time on a loaded machine)
        follower.expect("all 5 papers are embedded; checking for new ones every 0.3 s", timeout=400)
        pid = follower.proc.pid
        assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[16] == "5"  # nice
        import_file(data, env, write_jsonl(tmp_path / "b.jsonl", [rec("2503.00100"), rec("2503.00101")]))
        follower.expect("embedded 2 papers")  # it was waiting, not gone
        follower.expect("all 7 papers are embedded")
    # nothing was pending: no promise of a resume (issue #40 item 2)
    assert (
        follower.expect("indexer stopped", timeout=5)
        == "indexer stopped: every paper is embedded, nothing was pending"
    )
    assert follower.proc.returncode == 0
    assert not any("Traceback" in line for line in follower.seen)


def test_a_stop_while_the_model_is_still_loading_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """Ctrl+C in the first seconds of `paperfeed run` reached the indexer while it was importing torch to
    measure the backends; the stop handler then asked for the indexing service again, which began loading
    the model once more and died with two tracebacks (seen by tests/first_hour in CI)."""
    data = tmp_path / "data"
    env = {  # auto: the first start measures the backends, which imports torch
        **os.environ,
        "PAPERFEED_EMBEDDING_BACKEND": "auto",
        "PAPERFEED_MODEL_CACHE": str(tmp_path / "models"),
        "HF_HUB_OFFLINE": "1",
    }
    # a paper to embed: on an empty store the follower waits for papers without measuring the backends
    import_file(data, env, write_jsonl(tmp_path / "a.jsonl", [rec("2503.00001")]))
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "index", "--follow"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        # torch is being imported, in the embedding child that keeps the model (adapters/embed/child.py)
        while not any("libtorch" in _maps(pid) for pid in (proc.pid, *_children(proc.pid))):
            assert proc.poll() is None, "index --follow exited before torch was loaded"
            assert time.monotonic() < deadline, "torch was never loaded"
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # a failed wait must not leave the follower running after the test
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    assert "Traceback" not in out
    assert "indexer stopped" in out
