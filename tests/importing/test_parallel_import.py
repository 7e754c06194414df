"""Validation in a worker process gives exactly what the single-process import gives."""

from __future__ import annotations

import gc
from pathlib import Path

import orjson

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store import open_store
from paperfeed.services.ingest import IngestService
from tests.support.defaults import DEFAULTS

from .conftest import rec, write_jsonl


def test_worker_process_import_matches_sequential(tmp_path: Path) -> None:
    records = [rec(f"2503.{i:05d}", upvotes=i % 5, daily_dates=["2025-03-19"]) for i in range(1, 3001)]
    records[10] = {"id": "bad", "title": "x"}
    records[20] = rec("2503.00001", title="Duplicate id, later record")
    f = write_jsonl(tmp_path / "p.jsonl.gz", records, gz=True)
    results = []
    for workers in (0, 1):
        store = open_store(f"sqlite+pysqlite:///{tmp_path / f'w{workers}.db'}")
        try:
            summary = IngestService(store).run(JsonlFileSource(f, batch_size=250), workers=workers)
            again = IngestService(store).run(JsonlFileSource(f, batch_size=250), workers=workers)
            papers = [p for page in store.iter_papers() for p in page]
            results.append(
                (summary, again, [(p.id, p.title, p.upvotes) for p in papers], store.stats().listings)
            )
        finally:
            store.close()
    (s0, a0, p0, l0), (s1, a1, p1, l1) = results
    assert (a0.added, a0.updated, a0.unchanged) == (0, 0, 2999)
    assert (s0.added, s0.updated, s0.rejected) == (s1.added, s1.updated, s1.rejected) == (2998, 0, 1)
    assert [str(r) for r in s0.rejects] == [str(r) for r in s1.rejects]
    assert (a1.added, a1.updated, a1.unchanged) == (0, 0, 2999)
    assert p0 == p1
    assert l0 == l1 == 2998


def test_import_relaxes_the_cycle_collector_only_while_it_runs(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "p.jsonl", [rec(f"2503.{i:05d}") for i in range(1, 6)])
    store = open_store(f"sqlite+pysqlite:///{tmp_path / 'gc.db'}")
    before = gc.get_threshold()
    during: list[tuple[int, int, int]] = []
    try:
        service = IngestService(store, listeners=[lambda _result: during.append(gc.get_threshold())])
        service.run(JsonlFileSource(f, batch_size=DEFAULTS.batch_size))
    finally:
        store.close()
    assert during
    assert during[0][0] > before[0]
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_records_whose_id_is_not_first_are_keyed_by_parsing(tmp_path: Path) -> None:
    """The key is read off the line's start when the id comes first, else parsed: both skip on re-import."""
    lines = [
        orjson.dumps({"id": "2503.00001", "title": "Id first"}),
        orjson.dumps({"title": "Id last", "id": "2503.00002"}),
        b'{ "id" : "2503.00003", "title": "Spaced"}',
    ]
    f = tmp_path / "mixed.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    store = open_store(f"sqlite+pysqlite:///{tmp_path / 'keys.db'}")
    try:
        first = IngestService(store).run(JsonlFileSource(f, batch_size=DEFAULTS.batch_size))
        source = JsonlFileSource(f, batch_size=DEFAULTS.batch_size)
        known = store.known_fingerprints(source.ledger, ["2503.00001", "2503.00002", "2503.00003"])
        again = IngestService(store).run(source)
    finally:
        store.close()
    assert first.added == 3
    assert set(known) == {"2503.00001", "2503.00002", "2503.00003"}
    assert (again.added, again.updated, again.unchanged) == (0, 0, 3)
