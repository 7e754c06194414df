"""The indexes follow the store: FTS5 through its trigger-fed queue, tantivy through the ingest listener."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import orjson
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from paperfeed.adapters.keyword.fts5 import Fts5KeywordIndex
from paperfeed.adapters.keyword.tantivy_index import TantivyKeywordIndex
from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store import SqlPaperStore, migrate
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing
from paperfeed.domain.query import parse_query
from paperfeed.services.ingest import IngestService
from tests.support.defaults import DEFAULTS

from .corpus import CORPUS, batches
from .sources import ListSource

BY_ID = {p.id: p for p in CORPUS}


def ids(index: Fts5KeywordIndex | TantivyKeywordIndex, q: str) -> list[str]:
    return [h.paper_id for h in index.search(parse_query(q), 20)]


def _revise(pid: str, **changes: object) -> Batch:
    old = BY_ID[pid]
    return Batch(papers=[replace(old, version=(old.version or 1) + 1, **changes)])  # type: ignore[arg-type]


def _delete(store: SqlPaperStore, pid: str) -> None:
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM papers WHERE id = :id"), {"id": pid})


# -- FTS5 ---------------------------------------------------------------------------------------------


def test_fts5_triggers_queue_changes_atomically_and_sync_applies_them(store: SqlPaperStore) -> None:
    index = Fts5KeywordIndex(store.engine)
    for batch in batches(CORPUS):
        store.apply_batch(batch)
    assert index.pending() == len(CORPUS)
    assert ids(index, "quokka") == []  # not applied yet: searches read the index, never write
    assert index.sync() == len(CORPUS)
    assert index.pending() == 0
    assert set(ids(index, "quokka")) == {"ex.keep", "ex.drop"}
    assert len(index) == len(CORPUS)


def test_fts5_update_and_delete_stay_in_sync(store: SqlPaperStore) -> None:
    index = Fts5KeywordIndex(store.engine)
    service = IngestService(store, listeners=[index.on_papers_changed])
    service.run(ListSource(list(batches(CORPUS))))
    service.run(ListSource([_revise("ex.keep", title="Wombat tracking with drones")]))
    assert ids(index, "quokka") == ["ex.drop"]
    assert ids(index, "wombat") == ["ex.keep"]
    _delete(store, "ex.drop")
    index.sync()
    assert ids(index, "quokka") == []
    assert "ex.drop" not in ids(index, "tracking")
    _assert_fts_integrity(store)


def test_fts5_several_changes_to_one_row_before_a_sync(store: SqlPaperStore) -> None:
    """Only the text the index really holds is removed: the first queued change's, not later ones'."""
    index = Fts5KeywordIndex(store.engine)
    store.apply_batch(Batch(papers=[BY_ID["ex.keep"], BY_ID["ex.drop"]]))
    index.sync()
    store.apply_batch(_revise("ex.keep", title="Wombat tracking"))
    store.apply_batch(Batch(papers=[replace(BY_ID["ex.keep"], version=3, title="Platypus tracking")]))
    new = replace(BY_ID["ex.keep"], id="new.one", title="Echidna tracking")
    store.apply_batch(Batch(papers=[new]))
    store.apply_batch(Batch(papers=[replace(new, version=2, title="Numbat tracking")]))
    _delete(store, "ex.drop")
    index.sync()
    assert ids(index, "quokka") == []
    assert ids(index, "wombat") == []
    assert ids(index, "platypus") == ["ex.keep"]
    assert ids(index, "echidna") == []
    assert ids(index, "numbat") == ["new.one"]
    _assert_fts_integrity(store)


def test_fts5_unchanged_text_queues_nothing(store: SqlPaperStore) -> None:
    index = Fts5KeywordIndex(store.engine)
    store.apply_batch(Batch(papers=[BY_ID["ex.keep"]]))
    index.sync()
    store.apply_batch(Batch(papers=[replace(BY_ID["ex.keep"], upvotes=5)]))  # enrichment only
    assert index.pending() == 0


def test_fts5_rebuild_and_papers_present_before_the_migration(store: SqlPaperStore) -> None:
    for batch in batches(CORPUS):
        store.apply_batch(batch)
    migrate.downgrade(store.engine, "0002")
    migrate.upgrade(store.engine)
    index = Fts5KeywordIndex(store.engine)  # opening applies the queue the migration filled
    assert set(ids(index, "quokka")) == {"ex.keep", "ex.drop"}
    index.rebuild()
    assert set(ids(index, "quokka")) == {"ex.keep", "ex.drop"}
    assert index.pending() == 0
    _assert_fts_integrity(store)


def _assert_fts_integrity(store: SqlPaperStore) -> None:
    with store.engine.begin() as conn:  # raises "database disk image is malformed" if out of sync
        conn.execute(text("INSERT INTO papers_fts(papers_fts, rank) VALUES ('integrity-check', 1)"))


# -- tantivy ------------------------------------------------------------------------------------------


def test_tantivy_listener_keeps_the_index_in_sync(store: SqlPaperStore, tmp_path: Path) -> None:
    index = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    service = IngestService(store, listeners=[index.on_papers_changed])
    service.run(ListSource(list(batches(CORPUS))))
    index.flush()
    assert len(index) == len(CORPUS)
    service.run(ListSource([_revise("ex.keep", title="Wombat tracking with drones")]))
    index.flush()
    assert ids(index, "quokka") == ["ex.drop"]
    assert ids(index, "wombat") == ["ex.keep"]
    assert len(index) == len(CORPUS)  # replaced, not duplicated
    index.close()


def test_tantivy_indexes_the_papers_a_batch_result_carries(store: SqlPaperStore, tmp_path: Path) -> None:
    """The ingest listener indexes the papers as the store wrote them, without reading them back."""
    index = TantivyKeywordIndex(tmp_path / "kw", store.engine, background=False)
    result = store.apply_batch(Batch(papers=CORPUS[:3]))
    written = replace(BY_ID["ex.keep"], title="Numbat census")  # differs from the store: not re-read
    index.on_papers_changed(replace(result, changed=(written,), changed_ids=(written.id,)))
    assert ids(index, "numbat") == ["ex.keep"]
    assert result.written_at is not None
    state = (tmp_path / "kw" / "state.json").read_text()
    assert result.written_at.isoformat() in state  # the watermark is the batch's modified_at
    index.on_papers_changed(["ex.keep"])  # bare ids are re-read from the store
    assert ids(index, "numbat") == []
    index.close()


def test_tantivy_staged_with_the_batch_is_findable_once_the_batch_is_done(
    store: SqlPaperStore, tmp_path: Path
) -> None:
    """As an import wires it: each batch's papers are committed to tantivy before the batch is done."""
    index = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    other = TantivyKeywordIndex(tmp_path / "kw", store.engine, catch_up=False)  # e.g. the web server
    seen: list[int] = []

    def after_each_batch(_result: object) -> None:
        other._index.reload()
        seen.append(len(other))  # committed, not merely visible to the importing process

    service = IngestService(store, listeners=[after_each_batch], indexes=[index])
    service.run(ListSource(list(batches(CORPUS, size=4))))
    assert seen == [min(4 * (i + 1), len(CORPUS)) for i in range(len(seen))]
    assert seen[-1] == len(CORPUS)
    service.run(ListSource([_revise("ex.keep", title="Wombat tracking with drones")]))
    other._index.reload()
    assert ids(other, "wombat") == ["ex.keep"]
    assert ids(other, "quokka") == ["ex.drop"]
    assert len(other) == len(CORPUS)  # replaced, not duplicated
    other.close()
    index.close()


@pytest.mark.parametrize("workers", [0, 1])
def test_tantivy_file_import_reports_a_batch_only_once_it_is_searchable(
    store: SqlPaperStore, tmp_path: Path, workers: int
) -> None:
    """A file's batch is committed to the index after the next batch is read, but before it is reported."""
    lines = [
        orjson.dumps({"id": f"2501.{i:05d}", "title": f"Numbat {i}", "abstract": "Marsupial census."})
        for i in range(1, 12)
    ]
    path = tmp_path / "papers.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    index = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    other = TantivyKeywordIndex(tmp_path / "kw", store.engine, catch_up=False)

    searchable: list[int] = []

    class Check:
        def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
            other._index.reload()
            assert len(other) == added  # all counted so far are committed to the index
            searchable.append(added)

    source = JsonlFileSource(path, batch_size=4)
    IngestService(store, indexes=[index]).run(source, Check(), workers=workers)
    assert searchable == [4, 8, 11]
    other._index.reload()
    assert len(ids(other, "numbat")) == 11
    other.close()
    index.close()


def test_tantivy_batch_stored_before_a_read_error_is_still_published(
    store: SqlPaperStore, tmp_path: Path
) -> None:
    path = tmp_path / "papers.jsonl"
    path.write_bytes(orjson.dumps({"id": "2501.00001", "title": "Numbat", "abstract": "A census."}) + b"\n")

    class FailingAfterOneBatch(JsonlFileSource):
        def batches(self, resume_from: str | None = None) -> Iterator[Batch]:
            yield from super().batches(resume_from)
            raise OSError("disk went away")

    index = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    with pytest.raises(OSError, match="disk went away"):
        IngestService(store, indexes=[index]).run(FailingAfterOneBatch(path, batch_size=DEFAULTS.batch_size))
    other = TantivyKeywordIndex(tmp_path / "kw", store.engine, catch_up=False)
    assert ids(other, "numbat") == ["2501.00001"]
    other.close()
    index.close()


def test_tantivy_staged_papers_of_a_failed_batch_are_discarded(store: SqlPaperStore, tmp_path: Path) -> None:
    index = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    service = IngestService(store, indexes=[index])
    bad = Batch(
        papers=[replace(BY_ID["ex.keep"], title="Numbat census")],
        listings=[Listing(date(2026, 1, 1), "no.such.paper", "hf-daily")],  # foreign key: batch fails
    )
    with pytest.raises(IntegrityError):
        service.run(ListSource([bad]))
    assert store.get_paper("ex.keep") is None
    service.run(ListSource([Batch(papers=[BY_ID["ex.drop"]])]))  # the next commit must not carry it
    assert ids(index, "numbat") == []
    assert ids(index, "quokka") == ["ex.drop"]
    index.close()


def test_tantivy_staging_while_another_process_writes_defers_to_catch_up(
    store: SqlPaperStore, tmp_path: Path
) -> None:
    holder = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    holder.stage_papers([], datetime.now(UTC))  # takes the writer lock, as an import does
    importer = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    IngestService(store, indexes=[importer]).run(ListSource([Batch(papers=CORPUS[:3])]))
    assert "dirty_since" in (tmp_path / "kw" / "state.json").read_text()
    holder.discard_staged()
    holder.close()
    importer.close()
    reopened = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    assert len(reopened) == 3
    reopened.close()


def test_tantivy_catches_up_on_changes_made_without_it(store: SqlPaperStore, tmp_path: Path) -> None:
    index = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    IngestService(store, listeners=[index.on_papers_changed]).run(ListSource(list(batches(CORPUS[:5]))))
    index.close()  # flushes
    for batch in batches(CORPUS[5:]):  # e.g. a harvest run by a process without the listener
        store.apply_batch(batch)
    store.apply_batch(_revise("w.title", title="Wombat estimation"))
    reopened = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    assert len(reopened) == len(CORPUS)
    assert set(ids(reopened, "quokka")) == {"ex.keep", "ex.drop"}
    assert ids(reopened, "wombat") == ["w.title"]
    reopened.close()


def test_tantivy_builds_from_an_existing_store_and_rebuild_drops_deleted(
    store: SqlPaperStore, tmp_path: Path
) -> None:
    for batch in batches(CORPUS):
        store.apply_batch(batch)
    index = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    assert len(index) == len(CORPUS)
    _delete(store, "ex.drop")
    assert index.rebuild() == len(CORPUS) - 1
    assert ids(index, "quokka") == ["ex.keep"]
    index.close()


def test_tantivy_index_of_another_version_is_rebuilt(store: SqlPaperStore, tmp_path: Path) -> None:
    for batch in batches(CORPUS):
        store.apply_batch(batch)
    TantivyKeywordIndex(tmp_path / "kw", store.engine).close()
    state = tmp_path / "kw" / "state.json"
    state.write_text(state.read_text().replace('"version": "1"', '"version": "0"'))
    index = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    assert len(index) == len(CORPUS)
    assert set(ids(index, "quokka")) == {"ex.keep", "ex.drop"}
    index.close()


@pytest.mark.parametrize("garbage", ["", "{", "[]", '{"version": "1"}'])
def test_tantivy_unreadable_state_means_rebuild(store: SqlPaperStore, tmp_path: Path, garbage: str) -> None:
    for batch in batches(CORPUS):
        store.apply_batch(batch)
    TantivyKeywordIndex(tmp_path / "kw", store.engine).close()
    (tmp_path / "kw" / "state.json").write_text(garbage)
    index = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    assert len(index) == len(CORPUS)
    index.close()


def test_tantivy_second_writer_defers_to_the_next_catch_up(store: SqlPaperStore, tmp_path: Path) -> None:
    for batch in batches(CORPUS):
        store.apply_batch(batch)
    writer = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    writer.on_papers_changed(["ex.keep"])  # now holds the writer lock, as an import does
    writer.flush()
    reader = TantivyKeywordIndex(tmp_path / "kw", store.engine)  # e.g. the web server starting
    assert set(ids(reader, "quokka")) == {"ex.keep", "ex.drop"}
    # a third process changes a paper while the lock is held: its listener cannot index it...
    store.apply_batch(_revise("ex.drop", title="Numbat tracking"))
    reader.on_papers_changed(["ex.drop"])
    reader.flush()  # no failure: the store has the change, the index is marked to catch up
    assert ids(reader, "numbat") == []
    writer.on_papers_changed(["ex.keep"])  # ...and the lock holder's later commits do not hide it
    writer.close()
    reader.close()
    reopened = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    assert ids(reopened, "numbat") == ["ex.drop"]
    assert "dirty_since" not in (tmp_path / "kw" / "state.json").read_text()
    reopened.close()


def test_tantivy_search_sees_another_processs_commit_at_once(store: SqlPaperStore, tmp_path: Path) -> None:
    """A running server's index answers its next search from another process's latest commit (an
    import, ``paperfeed check --repair``), not from what tantivy's 500 ms reload timer last picked up,
    which could be the empty index a repair creates before its rebuild commit."""
    for batch in batches(CORPUS[:5]):
        store.apply_batch(batch)
    folder = tmp_path / "kw"
    server = TantivyKeywordIndex(folder, store.engine)  # builds, then releases the writer
    assert len(server) == 5
    for n, paper in enumerate(CORPUS[5:8], start=6):  # imports by another process, one commit each
        store.apply_batch(Batch(papers=[paper]))
        importer = TantivyKeywordIndex(folder, store.engine, catch_up=False, background=False)
        assert importer.reindex([paper.id]) == 1
        importer.close()
        assert len(server) == n
    expected = ids(server, "quokka")
    assert expected
    # check --repair: wipe the files, create an empty index, rebuild it with one commit
    for item in folder.iterdir():
        item.unlink()
    assert ids(server, "quokka") == expected  # mid-wipe: the segments already open still answer
    repair = TantivyKeywordIndex(folder, store.engine, catch_up=False, background=False)
    time.sleep(0.7)  # tantivy's timer (500 ms) would move a reader onto this empty commit meanwhile
    assert repair.rebuild() == 8
    repair.close()
    assert ids(server, "quokka") == expected
    assert len(server) == 8
    server.close()


def test_tantivy_synchronous_mode_and_coalesced_batches(store: SqlPaperStore, tmp_path: Path) -> None:
    for batch in batches(CORPUS):
        store.apply_batch(batch)
    sync = TantivyKeywordIndex(tmp_path / "kw", store.engine, background=False)
    store.apply_batch(_revise("ex.keep", title="Wombat tracking"))
    sync.on_papers_changed(["ex.keep"])  # committed before it returns
    assert ids(sync, "wombat") == ["ex.keep"]
    sync.close()
    index = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    for paper in CORPUS:  # many small batches queue up faster than one commit: all land
        index.on_papers_changed([paper.id])
    index.flush()
    assert len(index) == len(CORPUS)
    assert ids(index, "wombat") == ["ex.keep"]
    index.close()


def test_damaged_tantivy_files_are_rebuilt(store: SqlPaperStore, tmp_path: Path) -> None:
    for batch in batches(CORPUS):
        store.apply_batch(batch)
    TantivyKeywordIndex(tmp_path / "kw", store.engine).close()
    (tmp_path / "kw" / "meta.json").write_text("{ not json")
    index = TantivyKeywordIndex(tmp_path / "kw", store.engine)
    assert len(index) == len(CORPUS)
    index.close()


def test_auto_falls_back_to_fts5_when_tantivy_cannot_be_opened(store: SqlPaperStore, tmp_path: Path) -> None:
    from paperfeed.adapters.keyword.factory import open_keyword_index

    for batch in batches(CORPUS):
        store.apply_batch(batch)
    (tmp_path / "keyword").write_text("a file where the index folder should be")
    index = open_keyword_index("auto", store.engine, tmp_path)
    assert index.name == "fts5"
    assert set(ids(index, "quokka")) == {"ex.keep", "ex.drop"}  # type: ignore[arg-type]
    index.close()
    with pytest.raises(FileExistsError):
        open_keyword_index("tantivy", store.engine, tmp_path)


def test_fts5_suspended_while_tantivy_serves_then_rebuilt_on_open(
    store: SqlPaperStore, tmp_path: Path
) -> None:
    from paperfeed.adapters.keyword.factory import open_keyword_index
    from paperfeed.adapters.keyword.fts5 import suspend_fts5

    fts = Fts5KeywordIndex(store.engine)
    store.apply_batch(Batch(papers=CORPUS[:5]))
    fts.sync()
    tv = open_keyword_index("tantivy", store.engine, tmp_path)  # tantivy serves: FTS5 goes idle
    assert suspend_fts5(store.engine) is False  # already suspended by the factory
    assert len(fts) == 0  # emptied: no stale index, no disk spent on it
    for batch in batches(CORPUS[5:]):
        store.apply_batch(batch)
    store.apply_batch(_revise("w.title", title="Wombat estimation"))
    assert fts.pending() == 0  # the triggers cost nothing meanwhile
    tv.close()
    reopened = Fts5KeywordIndex(store.engine)  # e.g. the fallback: rebuilt from papers, live again
    assert len(reopened) == len(CORPUS)
    assert set(ids(reopened, "quokka")) == {"ex.keep", "ex.drop"}
    assert ids(reopened, "wombat") == ["w.title"]
    store.apply_batch(_revise("ex.keep", title="Numbat tracking"))
    assert reopened.pending() == 1
    reopened.sync()
    assert ids(reopened, "numbat") == ["ex.keep"]
    _assert_fts_integrity(store)


def test_tantivy_reopening_does_not_reindex_papers_at_the_watermark(
    store: SqlPaperStore, tmp_path: Path
) -> None:
    """A bulk write gives many papers one ``modified_at``; reopening must not re-index them every time
    (it did with an inclusive watermark: 819k papers at each start of the 1M bench)."""
    for batch in batches(CORPUS):
        store.apply_batch(batch)
    with store.engine.begin() as conn:  # one timestamp for all, as a bulk write leaves them
        conn.execute(text("UPDATE papers SET modified_at = '2026-01-02 03:04:05.000000'"))
    TantivyKeywordIndex(tmp_path / "kw", store.engine).close()  # builds: watermark = that timestamp
    again = TantivyKeywordIndex(tmp_path / "kw", store.engine, catch_up=False)
    assert again.catch_up() == 0
    store.apply_batch(_revise("w.title", title="Wombat estimation"))  # a later change is caught up
    assert again.catch_up() == 1
    assert ids(again, "wombat") == ["w.title"]
    again.close()
