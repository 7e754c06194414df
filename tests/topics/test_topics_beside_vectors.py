"""A paper that arrives while the indexer builds the topics gets its vector at once, not after the build.

The follower (`paperfeed index --follow`) used to run the topics step in its own loop: a paper imported
meanwhile waited for the whole build (203 s in one run on a large store). The build now runs beside the
papers' vectors. Decided by order, not by time: the test holds PostgreSQL's lock on the topics' table, so
the build cannot end (it waits at its first read); the new paper must be embedded while it waits, and
the build finishes once the lock is let go. Real processes, a real PostgreSQL server, the fake embedder.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.importing.conftest import rec, write_jsonl
from tests.support.follower import import_file, index_follow

pytestmark = pytest.mark.slow

WORDS = ["graph networks molecules", "speech transformers audio", "dark matter halos", "protein folding"]
_WAITING = text(
    "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
    "WHERE c.relname = 'topic_builds' AND NOT l.granted"
)


def _records(first: int, n: int) -> list[dict[str, object]]:
    return [
        rec(f"2503.{i:05d}", title=f"Paper {i} on {WORDS[i % 4]}", abstract=f"We study {WORDS[i % 4]} ({i}).")
        for i in range(first, first + n)
    ]


def test_a_paper_imported_during_a_topics_build_is_embedded_before_the_build_ends(
    tmp_path: Path, pg_url: str
) -> None:
    data = tmp_path / "data"
    env = {
        **os.environ,
        "PAPERFEED_DATABASE_URL": pg_url,
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PAPERFEED_KEYWORD_ENGINE": "tantivy",
        "PAPERFEED_TOPICS_MIN_PAPERS": "20",
        "PAPERFEED_TOPICS_PAPERS_PER_TOPIC": "10",
        "PAPERFEED_TOPICS_LAYOUT": "pca",
    }
    import_file(data, env, write_jsonl(tmp_path / "a.jsonl", _records(1, 30)))
    engine = create_engine(pg_url)
    try:
        with engine.connect() as holder, index_follow(data, env, "--poll", "0.3") as follower:
            held = holder.begin()
            holder.execute(text("LOCK TABLE topic_builds IN ACCESS EXCLUSIVE MODE"))
            follower.expect("embedded 30 papers", timeout=120)
            with engine.connect() as looking:  # the build has begun, and waits for the table
                deadline = time.monotonic() + 120
                while not looking.execute(_WAITING).scalar():
                    assert time.monotonic() < deadline, (
                        f"the topics build never reached the table: {follower.seen}"
                    )
                    time.sleep(0.1)
            import_file(data, env, write_jsonl(tmp_path / "b.jsonl", _records(100, 1)))
            follower.expect("embedded 1 paper", timeout=120)  # before the fix: never, behind the build
            assert not any("topics: built" in line for line in follower.seen), follower.seen
            held.rollback()  # the lock goes: the build goes on, with the new paper's vector stored
            assert "of 31 papers" in follower.expect("topics: built", timeout=120)
    finally:
        engine.dispose()
    assert follower.proc.returncode == 0, follower.seen
    assert not any("Traceback" in line for line in follower.seen), follower.seen
