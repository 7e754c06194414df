"""``paperfeed copy --to postgresql://…``: a SQLite data folder's whole store lands in PostgreSQL, the copy
resumes after an interruption and a repeat duplicates nothing; the copied instance searches at once."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from paperfeed.adapters.store import open_store
from paperfeed.adapters.store.copy import copy_store
from paperfeed.adapters.store.schema import metadata
from paperfeed.adapters.store.schema_accounts import users
from paperfeed.bootstrap import build_app
from paperfeed.cli import cli_app as cli
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper
from paperfeed.settings import Settings
from tests.keyword.sources import ListSource
from tests.support.papers import paper as make_paper

pytestmark = pytest.mark.postgres

TOPICS = ["quokka tracking with drones", "protein folding", "galaxy clusters", "speech recognition"]
N = 120


def _paper(i: int) -> Paper:
    topic = TOPICS[i % len(TOPICS)]
    return make_paper(
        f"2402.{i:05d}",
        f"{topic.title()} number {i}",
        day=datetime(2024, 1, 1 + i % 28, 9, 30, tzinfo=UTC),
        source="2024-02-01T00:00:00+00:00",
        abstract=f"We study {topic}. Résumé {i}.",
        authors=(f"Author {i}", "Ada Lovelace"),
        categories=("cs.LG", "stat.ML") if i % 2 else ("astro-ph.CO",),
        upvotes=i,
    )


@pytest.fixture
def sqlite_data(tmp_path: Path) -> Path:
    """A data folder as `paperfeed run` leaves it: papers, listings, embeddings, a user."""
    data = tmp_path / "data"
    app = build_app(Settings(data_dir=data, database_url=None, embedding_backend="fake"))
    try:
        papers = [_paper(i) for i in range(N)]
        listings = [
            Listing(date(2024, 2, 1 + i % 5), p.id, "hf-daily", i, i % 7) for i, p in enumerate(papers)
        ]
        app.sources.ingest.run(
            ListSource(
                [
                    Batch(papers=papers[:60], listings=listings[:60]),
                    Batch(papers=papers[60:], listings=listings[60:]),
                ]
            )
        )
        app.indexes.indexer.current().run()
        with app.core.store.engine.begin() as conn:
            for n in range(3):
                conn.execute(
                    insert(users).values(
                        email=f"u{n}@example.org", created_at=datetime(2024, 1, 1, tzinfo=UTC)
                    )
                )
    finally:
        app.close()
    return data


def _counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            t.name: int(conn.execute(select(func.count()).select_from(t)).scalar_one())
            for t in metadata.sorted_tables
        }


def test_copy_then_repeat_then_resume_after_an_interruption(sqlite_data: Path, pg_url: str) -> None:
    source = open_store(f"sqlite+pysqlite:///{sqlite_data / 'paperfeed.db'}")
    target = open_store(pg_url)
    try:
        want = _counts(source.engine)
        assert want["papers"] == N
        assert want["embeddings"] == N
        assert want["users"] == 3
        summary = copy_store(source.engine, target.engine, batch_size=50)
        assert _counts(target.engine) == want
        assert summary.tables["papers"] == N
        assert source.get_papers([p.id for p in map(_paper, range(N))]) == target.get_papers(
            [p.id for p in map(_paper, range(N))]
        )
        assert source.listings_for_day(date(2024, 2, 3)) == target.listings_for_day(date(2024, 2, 3))

        # A repeat rewrites the same rows: nothing doubles, nothing is left behind.
        copy_store(source.engine, target.engine, batch_size=50)
        assert _counts(target.engine) == want

        # Interrupted after the first papers batch: the next run resumes from there.
        with target.engine.begin() as conn:
            for table in reversed(metadata.sorted_tables):
                conn.execute(table.delete())
        seen: list[tuple[str, int]] = []

        def stop_after_first_papers_batch(table: str, done: int, total: int) -> None:
            seen.append((table, done))
            if table == "papers" and done >= 50:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            copy_store(source.engine, target.engine, batch_size=50, progress=stop_after_first_papers_batch)
        assert _counts(target.engine)["papers"] == 50
        resumed = copy_store(source.engine, target.engine, batch_size=50)
        assert "papers" in resumed.resumed
        assert resumed.tables["papers"] == N - 50
        assert _counts(target.engine) == want

        # Ids were copied as they were; the sequences moved past them, so new rows do not collide.
        with target.engine.begin() as conn:
            new_id = conn.execute(
                insert(users)
                .values(email="new@example.org", created_at=datetime.now(UTC))
                .returning(users.c.id)
            ).scalar_one()
        with source.engine.connect() as conn:
            assert new_id > conn.execute(select(func.max(users.c.id))).scalar_one()
    finally:
        source.close()
        target.close()


def test_copy_command_builds_a_searchable_postgresql_instance(sqlite_data: Path, pg_url: str) -> None:
    env = {"PAPERFEED_EMBEDDING_BACKEND": "fake", "PAPERFEED_DATABASE_URL": None}
    runner = CliRunner()
    result = runner.invoke(
        cli, ["--data-dir", str(sqlite_data), "copy", "--to", pg_url, "--batch-size", "40"], env=env
    )
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "papers" in out
    assert f"vector index: {N} vectors of fake-hash64 (pgvector HNSW)" in out

    settings = Settings(data_dir=sqlite_data, database_url=pg_url, embedding_backend="fake")
    app = build_app(settings)
    try:
        page = app.search.hybrid.search("quokka drones")
        assert page.hits
        assert all("Quokka" in h.paper.title for h in page.hits[:10])
        assert any(h.dense_rank is not None for h in page.hits)
        assert app.indexes.indexer.current().plan().backlog == 0  # nothing to embed again
        assert (
            app.indexes.indexer.current().sync_index().mode == "incremental"
        )  # the copied mark is the index's
    finally:
        app.close()

    result = runner.invoke(cli, ["--database-url", pg_url, "migrate"])
    assert result.exit_code == 0, result.output
    assert "schema already at" in " ".join(result.stdout.split())
    result = runner.invoke(cli, ["--database-url", pg_url, "migrate", "--check"])
    assert result.exit_code == 0


def test_copy_and_migrate_fail_cleanly(tmp_path: Path, pg_server: object) -> None:
    runner = CliRunner()
    result = runner.invoke(
        cli, ["--data-dir", str(tmp_path / "none"), "copy", "--to", "postgresql://x@127.0.0.1:1/db"]
    )
    assert result.exit_code == 2
    assert "nothing to copy" in result.stderr
    data = tmp_path / "data"
    data.mkdir()
    open_store(f"sqlite+pysqlite:///{data / 'paperfeed.db'}").close()
    result = runner.invoke(
        cli, ["--data-dir", str(data), "copy", "--to", "postgresql://nobody@127.0.0.1:1/db"]
    )
    assert result.exit_code == 3
    assert "cannot open postgresql://nobody@127.0.0.1:1/db" in " ".join(result.stderr.split())
    assert "Traceback" not in result.output
    result = runner.invoke(
        cli, ["--data-dir", str(data), "copy", "--to", f"sqlite+pysqlite:///{data / 'paperfeed.db'}"]
    )
    assert result.exit_code == 2
    result = runner.invoke(cli, ["--database-url", "postgresql://nobody@127.0.0.1:1/db", "migrate"])
    assert result.exit_code == 3
    assert "Traceback" not in result.output
