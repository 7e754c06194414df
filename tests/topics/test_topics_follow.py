"""`paperfeed run`'s indexer keeps the topics up with what it embeds (issue #30, item 6).

Topics used to wait for the next 05:00 UTC daily job (or a hand-run `paperfeed topics build`): after an
import the map and the topics pages stayed empty for hours. The indexer (`paperfeed index --follow`) now
runs the topics step once it has embedded what arrived: the first build, a rebuild once the papers have
outgrown the build (`PAPERFEED_TOPICS_REBUILD_GROWTH`), else placing the new papers. Real processes,
real store, the fake embedder (topics are built from whatever vectors are stored).
"""

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

from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from tests.importing.conftest import rec, write_jsonl

pytestmark = pytest.mark.slow

WORDS = ["graph networks molecules", "speech transformers audio", "dark matter halos", "protein folding"]


def _records(first: int, n: int) -> list[dict[str, object]]:
    return [
        rec(f"2503.{i:05d}", title=f"Paper {i} on {WORDS[i % 4]}", abstract=f"We study {WORDS[i % 4]} ({i}).")
        for i in range(first, first + n)
    ]


def _import(data: Path, env: dict[str, str], path: Path) -> None:
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "import", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr


def test_the_indexer_builds_topics_after_embedding_rebuilds_when_outgrown_and_places_new_papers(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    env = {
        **os.environ,
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PAPERFEED_KEYWORD_ENGINE": "fts5",
        "PAPERFEED_TOPICS_MIN_PAPERS": "20",
        "PAPERFEED_TOPICS_PAPERS_PER_TOPIC": "10",
        "PAPERFEED_TOPICS_LAYOUT": "pca",
    }
    _import(data, env, write_jsonl(tmp_path / "a.jsonl", _records(1, 30)))
    command = [
        sys.executable,
        "-m",
        "paperfeed",
        "--data-dir",
        str(data),
        "index",
        "--follow",
        "--poll",
        "0.3",
    ]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip())

    def expect(text: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                assert proc.poll() is None, f"index --follow exited: {seen}"
                continue
            seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"{text!r} never came: {seen}")

    threading.Thread(target=read, daemon=True).start()
    try:
        expect("all 30 papers are embedded")
        assert "of 30 papers" in expect("topics: built")
        watcher = build_app(Settings(data_dir=data, embedding_backend="fake", keyword_engine="fts5"))
        try:
            waiting = watcher.indexes.activity.activity()  # readers know a follower is there, waiting
            assert waiting is not None
            assert waiting.state == "idle"
            assert waiting.holder.split(":")[1] == str(proc.pid)
        finally:
            watcher.close()
        _import(data, env, write_jsonl(tmp_path / "b.jsonl", _records(100, 5)))
        assert "placed 5 new papers" in expect("topics: placed")  # 35 < 2 x 30: placed, not rebuilt
        _import(data, env, write_jsonl(tmp_path / "c.jsonl", _records(200, 30)))
        assert "of 65 papers" in expect("topics: built")  # 65 >= 2 x 30: outgrown, rebuilt
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0, seen
    assert not any("Traceback" in line for line in seen), seen

    app = build_app(Settings(data_dir=data, embedding_backend="fake", keyword_engine="fts5"))
    try:
        runs = app.maintenance.jobs.status(job="topics")
        assert [r.trigger for r in runs] == ["indexer"] * 3
        assert all(r.status == "ok" for r in runs)
        assert app.catalogue.topics.records.current() is not None
        assert app.indexes.activity.activity() is None  # the stopped follower took its entry away
    finally:
        app.close()
