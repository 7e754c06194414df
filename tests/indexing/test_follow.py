"""`paperfeed index --follow`, the indexer `paperfeed run` supervises: it embeds the backlog, waits, and
embeds what arrives later, until SIGTERM."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.importing.conftest import rec, write_jsonl

pytestmark = pytest.mark.slow


def _import(data: Path, env: dict[str, str], path: Path) -> None:
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "import", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr


def test_follow_embeds_new_papers_as_they_arrive_and_stops_on_sigterm(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "PAPERFEED_EMBEDDING_BACKEND": "fake", "PAPERFEED_KEYWORD_ENGINE": "fts5"}
    _import(data, env, write_jsonl(tmp_path / "a.jsonl", [rec(f"2503.{i:05d}") for i in range(1, 6)]))
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "index", "--follow"]
    proc = subprocess.Popen(
        [*command, "--limit", "3", "--poll", "0.3", "--nice", "5"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.strip())

    def expect(text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                assert proc.poll() is None, f"index --follow exited: {seen}"
                continue
            seen.append(line)
            if text in line:
                return
        raise AssertionError(f"{text!r} never came: {seen}")

    threading.Thread(target=read, daemon=True).start()
    try:
        expect("embedded 3 papers")  # slices of --limit
        assert seen[-1].endswith("; 2 still to embed")
        expect("embedded 2 papers")
        expect("all 5 papers are embedded; checking for new ones every 0.3 s")
        assert Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[-1].split()[16] == "5"  # nice
        _import(data, env, write_jsonl(tmp_path / "b.jsonl", [rec("2503.00100"), rec("2503.00101")]))
        expect("embedded 2 papers")  # it was waiting, not gone
        expect("all 7 papers are embedded")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    expect("indexer stopped", timeout=5)
    assert proc.returncode == 0
    assert not any("Traceback" in line for line in seen)


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
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "index", "--follow"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while "libtorch" not in Path(f"/proc/{proc.pid}/maps").read_text():  # torch is being imported
        assert proc.poll() is None, "index --follow exited before torch was loaded"
        assert time.monotonic() < deadline, "torch was never loaded"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "Traceback" not in out
    assert "indexer stopped" in out
