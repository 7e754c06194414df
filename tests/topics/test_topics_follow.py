"""`paperfeed run`'s indexer keeps the topics up with what it embeds (issue #30, item 6).

Topics used to wait for the next 05:00 UTC daily job (or a hand-run `paperfeed topics build`): after an
import the map and the topics pages stayed empty for hours. The indexer (`paperfeed index --follow`) now
runs the topics step once it has embedded what arrived: the first build, a rebuild once the papers have
outgrown the build (`PAPERFEED_TOPICS_REBUILD_GROWTH`), else placing the new papers. Real processes,
real store, the fake embedder (topics are built from whatever vectors are stored).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from tests.importing.conftest import rec, write_jsonl
from tests.support.follower import import_file, index_follow

pytestmark = pytest.mark.slow

WORDS = ["graph networks molecules", "speech transformers audio", "dark matter halos", "protein folding"]


def _records(first: int, n: int) -> list[dict[str, object]]:
    return [
        rec(f"2503.{i:05d}", title=f"Paper {i} on {WORDS[i % 4]}", abstract=f"We study {WORDS[i % 4]} ({i}).")
        for i in range(first, first + n)
    ]


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
    import_file(data, env, write_jsonl(tmp_path / "a.jsonl", _records(1, 30)))
    with index_follow(data, env, "--poll", "0.3") as follower:
        # topics and the map as soon as the vectors cover what arrived: before the sentences (the fake
        # model has no shipped role model, so its sentences are a backlog of their own), issue #39
        assert "of 30 papers" in follower.expect("topics: built", timeout=120)
        assert not any(line.startswith("sentences:") for line in follower.seen)
        follower.expect("sentences: 30 papers", timeout=400)  # the fake model's role model trained first
        follower.expect("all 30 papers are embedded", timeout=120)
        watcher = build_app(Settings(data_dir=data, embedding_backend="fake", keyword_engine="fts5"))
        try:
            waiting = watcher.indexes.activity.activity()  # readers know a follower is there, waiting
            assert waiting is not None
            assert waiting.state == "idle"
            assert waiting.holder.split(":")[1] == str(follower.proc.pid)
        finally:
            watcher.close()
        import_file(data, env, write_jsonl(tmp_path / "b.jsonl", _records(100, 5)))
        # 35 < 2 x 30: placed, not rebuilt
        assert "placed 5 new papers" in follower.expect("topics: placed", timeout=120)
        import_file(data, env, write_jsonl(tmp_path / "c.jsonl", _records(200, 30)))
        # 65 >= 2 x 30: outgrown, rebuilt
        assert "of 65 papers" in follower.expect("topics: built", timeout=120)
    assert follower.proc.returncode == 0, follower.seen
    assert not any("Traceback" in line for line in follower.seen), follower.seen

    app = build_app(Settings(data_dir=data, embedding_backend="fake", keyword_engine="fts5"))
    try:
        runs = app.maintenance.jobs.status(job="topics")
        assert [r.trigger for r in runs] == ["indexer"] * 3
        assert all(r.status == "ok" for r in runs)
        assert app.catalogue.topics.records.current() is not None
        assert app.indexes.activity.activity() is None  # the stopped follower took its entry away
    finally:
        app.close()
