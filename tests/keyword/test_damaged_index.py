"""A damaged tantivy index (garbled or truncated segment files) never takes the process down.

tantivy checks only a file's footer when it opens an index; damaged postings make it *panic* later
(``pyo3_runtime.PanicException``, a BaseException) in a query, or in the writer's merge threads, which
aborts the process. These tests damage real index files: on open the index is verified and rebuilt from
the store; damage that appears after opening turns into ``KeywordIndexUnavailable``, and the search
service answers with semantic matches and a note until ``paperfeed check --repair`` rebuilds it.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperfeed.adapters.keyword.tantivy_index import TantivyKeywordIndex, damaged_files
from paperfeed.adapters.store import SqlPaperStore, open_store
from paperfeed.bootstrap import build_app
from paperfeed.cli import cli_app as cli
from paperfeed.domain.ingest import Batch
from paperfeed.domain.query import parse_query
from paperfeed.domain.search import KeywordIndexUnavailable
from paperfeed.services.ingest import IngestService
from paperfeed.settings import Settings

from .corpus import CORPUS, CROWD, batches
from .sources import ListSource

QUERIES = ["zephyrine", "quokka", '"large language models"', "tokenizer", "author:Lovelace"]
SEGMENT_PARTS = ("idx", "pos", "term", "store", "fast", "fieldnorm")


def garble(folder: Path, part: str, *, seed: int = 1, in_place: bool = False) -> list[Path]:
    """Overwrite a quarter of the bytes of every ``*.<part>`` file at random, keeping tantivy's footer
    (its magic number and checksum field) intact, so only the checksum can tell. ``in_place`` writes
    through the existing file (same size) as a disk error would, safe for a process that has it mapped."""
    rng = random.Random(seed)
    hit = sorted(folder.glob(f"*.{part}"))
    for file in hit:
        data = bytearray(file.read_bytes())
        body = max(1, len(data) - 200)
        for _ in range(max(1, body // 4)):
            data[rng.randrange(body)] = rng.randrange(256)
        if in_place:
            with file.open("r+b") as fh:
                fh.write(data)
        else:
            file.write_bytes(bytes(data))
    assert hit, f"no *.{part} file in {folder}"
    return hit


@pytest.fixture
def built(tmp_path: Path) -> Iterator[tuple[SqlPaperStore, Path, dict[str, list[str]]]]:
    """A store fed the keyword corpus, its tantivy index in ``keyword/`` (closed), and what each query
    in QUERIES finds on the intact index."""
    store = open_store(f"sqlite+pysqlite:///{tmp_path / 'paperfeed.db'}")
    folder = tmp_path / "keyword"
    index = TantivyKeywordIndex(folder, store.engine)
    IngestService(store, indexes=[index]).run(ListSource(list(batches(CORPUS + CROWD))))
    index.flush()
    expected = {q: [h.paper_id for h in index.search(parse_query(q), 10)] for q in QUERIES}
    index.close()
    assert all(expected.values())
    assert not damaged_files(folder, trust_checked=False)  # nothing remembered as checked yet
    try:
        yield store, folder, expected
    finally:
        store.close()


def found(index: TantivyKeywordIndex) -> dict[str, list[str]]:
    return {q: [h.paper_id for h in index.search(parse_query(q), 10)] for q in QUERIES}


@pytest.mark.parametrize("part", SEGMENT_PARTS)
def test_garbled_segment_files_are_found_and_rebuilt_on_open(
    built: tuple[SqlPaperStore, Path, dict[str, list[str]]], part: str
) -> None:
    store, folder, expected = built
    files = garble(folder, part)
    problems = damaged_files(folder)
    assert problems == [f"{f.name}: checksum mismatch" for f in files]
    # Before the check, a garbled .idx aborted the process in tantivy's merge thread on this open.
    index = TantivyKeywordIndex(folder, store.engine)
    try:
        assert damaged_files(folder) == []
        assert len(index) == len(CORPUS + CROWD)
        assert found(index) == expected
    finally:
        index.close()


def test_files_that_passed_are_not_read_again_until_they_change(
    built: tuple[SqlPaperStore, Path, dict[str, list[str]]],
) -> None:
    _store, folder, _expected = built
    assert damaged_files(folder) == []
    remembered = json.loads((folder / "checked.json").read_text())
    segment_files = sorted(p.name for p in folder.iterdir() if p.suffix[1:] in SEGMENT_PARTS)
    assert sorted(remembered) == segment_files
    pos = next(folder.glob("*.pos"))
    before = pos.stat()
    garble(folder, "pos", in_place=True)
    os.utime(pos, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime: trusted
    assert damaged_files(folder) == []
    assert damaged_files(folder, trust_checked=False) == [f"{pos.name}: checksum mismatch"]  # paperfeed check
    os.utime(pos)  # a new mtime: read again
    assert damaged_files(folder) == [f"{pos.name}: checksum mismatch"]


def test_truncated_and_emptied_files_are_rebuilt_on_open(
    built: tuple[SqlPaperStore, Path, dict[str, list[str]]],
) -> None:
    store, folder, expected = built
    term = next(folder.glob("*.term"))
    term.write_bytes(term.read_bytes()[: term.stat().st_size // 2])
    next(folder.glob("*.store")).write_bytes(b"")
    assert sorted(damaged_files(folder)) == sorted(
        [
            f"{term.name}: no tantivy footer",
            f"{next(folder.glob('*.store')).name}: shorter than tantivy's footer",
        ]
    )
    index = TantivyKeywordIndex(folder, store.engine)
    try:
        assert found(index) == expected
    finally:
        index.close()


def test_opened_without_catch_up_the_next_reindex_is_a_full_rebuild(
    built: tuple[SqlPaperStore, Path, dict[str, list[str]]],
) -> None:
    """``paperfeed check --repair`` opens without catching up and re-indexes only what it found."""
    store, folder, expected = built
    garble(folder, "pos")
    index = TantivyKeywordIndex(folder, store.engine, catch_up=False, background=False)
    try:
        assert len(index) == 0  # wiped, not yet rebuilt
        assert index.reindex(["w.title"]) == len(CORPUS + CROWD)
        assert found(index) == expected
    finally:
        index.close()
    reopened = TantivyKeywordIndex(folder, store.engine)
    try:
        assert found(reopened) == expected
    finally:
        reopened.close()


def test_damage_after_opening_is_keyword_index_unavailable(
    built: tuple[SqlPaperStore, Path, dict[str, list[str]]],
) -> None:
    store, folder, _expected = built
    index = TantivyKeywordIndex(folder, store.engine)
    try:
        garble(folder, "idx", in_place=True)
        with pytest.raises(KeywordIndexUnavailable, match="check --repair"):
            found(index)
        assert index.highlight(parse_query("zephyrine"), "Zephyrine winds") != []  # needs no index file
    finally:
        index.close()


def test_search_service_degrades_to_semantic_results_until_check_repair(tmp_path: Path) -> None:
    from tests.search.test_hybrid_search import CORPUS as PAPERS
    from tests.search.test_hybrid_search import _paper

    settings = Settings(
        data_dir=tmp_path / "data",
        embedding_backend="fake",
        keyword_engine="tantivy",
        search_min_dense_score=0.05,
    )
    app = build_app(settings)
    try:
        app.indexes.keyword.on_papers_changed(
            app.core.store.apply_batch(Batch(papers=[_paper(r) for r in PAPERS]))
        )
        app.indexes.keyword.flush()
        app.indexes.indexer.current().run()
        intact = app.search.hybrid.search("protein folding")
        assert intact.hits[0].paper.id == "2401.00003"
        assert intact.hits[0].keyword_rank == 1
        assert not intact.notes

        garble(settings.data_dir / "keyword", "idx", in_place=True)
        page = app.search.hybrid.search("protein folding")
        assert page.hits, "semantic matches still come"
        assert page.hits[0].paper.id == "2401.00003"
        assert all(hit.keyword_rank is None and hit.dense_rank is not None for hit in page.hits)
        assert page.notes == ("keyword search is unavailable right now; showing semantic matches only",)

        result = CliRunner().invoke(
            cli,
            ["--data-dir", str(settings.data_dir), "check", "--repair"],
            env={"PAPERFEED_EMBEDDING_BACKEND": "fake"},
        )
        assert "keyword index" in result.stdout, result.stdout
        assert "re-check is clean" in result.stdout, result.stdout
        repaired = app.search.hybrid.search("protein folding")  # the same running app: no restart
        assert repaired.hits[0].paper.id == "2401.00003"
        assert repaired.hits[0].keyword_rank == 1
        assert not repaired.notes
    finally:
        app.close()
