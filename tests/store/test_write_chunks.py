"""A batch is written in short transactions, so a reader's write never waits for a whole import's batch
(issue #39 item 4): each chunk of WRITE_CHUNK papers commits with its listings and ledger rows, the
source's checkpoint with the last; another writer commits between two chunks; a batch cut off between
chunks is finished by running it again, with every paper present once. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest
from sqlalchemy import event, text

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.sql_store import WRITE_CHUNK
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing
from tests.support.papers import paper

N = 2 * WRITE_CHUNK + 50  # three chunks


def _batch() -> Batch:
    papers = [paper(f"2503.{i:05d}", day=datetime(2025, 3, 1, tzinfo=UTC)) for i in range(1, N + 1)]
    listings = [Listing(date(2025, 3, 1), p.id, "hf-daily", i, i) for i, p in enumerate(papers, 1)]
    prints = {f"rec-{p.id}": (p.id, f"fp-{p.id}") for p in papers}
    return Batch(
        papers=papers,
        listings=listings,
        checkpoint=("import:test", "done"),
        fingerprints=prints,
        ledger_source="file:test",
    )


def _counts(store: SqlPaperStore) -> tuple[int, int, int, str | None]:
    with store.engine.connect() as conn:
        papers = conn.execute(text("SELECT count(*) FROM papers")).scalar_one()
        listed = conn.execute(text("SELECT count(*) FROM listings")).scalar_one()
        ledger = conn.execute(text("SELECT count(*) FROM source_records")).scalar_one()
    return int(papers), int(listed), int(ledger), store.get_checkpoint("import:test")


def test_a_batch_commits_in_chunks_with_the_checkpoint_last(store: SqlPaperStore) -> None:
    seen: list[tuple[int, int, int, str | None]] = []
    commits: list[int] = []
    event.listen(store.engine, "commit", lambda _conn: commits.append(1))

    def stage(papers: Any, _at: datetime) -> None:  # before anything is written
        seen.append(_counts(store))

    result = store.apply_batch(_batch(), before_write=stage)
    assert result.added == N
    assert seen == [(0, 0, 0, None)]
    assert len(commits) == 3  # N papers in chunks of WRITE_CHUNK
    assert _counts(store) == (N, N, N, "done")


def test_another_writer_commits_between_two_chunks_and_a_cut_batch_is_finished_by_a_rerun(
    store: SqlPaperStore,
) -> None:
    """The reader's write lands between the chunks; the batch is then cut off after its second chunk, as
    by a kill: the checkpoint has not moved, and applying the batch again completes it exactly."""
    state = {"chunks": 0, "reader": False, "inside": False}

    class Cut(Exception):
        pass

    def on_commit(_conn: Any) -> None:
        if not state["inside"]:
            state["chunks"] += 1

    def on_begin(_conn: Any) -> None:
        if state["inside"]:
            return
        if state["chunks"] == 1 and not state["reader"]:  # the first chunk is in: a reader writes now
            state["inside"] = state["reader"] = True
            try:
                with store.engine.begin() as other:
                    other.execute(
                        text("INSERT INTO checkpoints (name, value, updated_at) VALUES ('reader', 'x', :t)"),
                        {"t": datetime.now(UTC)},
                    )
            finally:
                state["inside"] = False
        if state["chunks"] >= 2:
            raise Cut

    event.listen(store.engine, "commit", on_commit)
    event.listen(store.engine, "begin", on_begin)
    with pytest.raises(Cut):
        store.apply_batch(_batch())
    event.remove(store.engine, "begin", on_begin)
    event.remove(store.engine, "commit", on_commit)
    papers, _listed, _ledger, checkpoint = _counts(store)
    assert store.get_checkpoint("reader") == "x"  # written while the batch was under way
    assert papers == 2 * WRITE_CHUNK  # cut off after two chunks ...
    assert checkpoint is None  # ... and the checkpoint did not move
    again = store.apply_batch(_batch())
    assert (again.added, again.unchanged) == (N - papers, papers)
    assert _counts(store) == (N, N, N, "done")
