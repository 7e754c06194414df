"""The sentence indexes follow the stored sentences: a catch-up killed midway resumes without doubling
anything, ``paperfeed check`` finds an index that fell behind or lost rows and ``--repair`` mends it, and
the sentence vectors of another model are never mixed with the current model's. SQLite (tantivy) and
PostgreSQL (its full-text search) alike."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from paperfeed.adapters.keyword import sentences_postgres, sentences_tantivy
from paperfeed.adapters.vector import sentences as sentence_vectors
from paperfeed.bootstrap import App
from paperfeed.domain.sentences import sentence_model_id
from tests.evidence.support import PAPERS, QUESTION, evidence_app

STORED = 3 * len(PAPERS)


@pytest.fixture
def url(db_url: str) -> str | None:
    return None if db_url.startswith("sqlite") else db_url


@pytest.fixture
def fresh(tmp_path: Path, url: str | None) -> Iterator[App]:
    """Sentences stored, both indexes emptied: what an older data folder looks like when evidence
    search arrives."""
    app = evidence_app(tmp_path, url)
    if url is None:
        app.indexes.sentence_keyword.close()
        shutil.rmtree(tmp_path / "data" / "sentence-keyword")
        del app.indexes.__dict__["sentence_keyword"], app.indexes.__dict__["evidence"]
    else:
        with app.core.engine().begin() as conn:
            conn.execute(text("DELETE FROM sentence_search"))
            conn.execute(text("DELETE FROM checkpoints WHERE name = 'sentence_search'"))
    shutil.rmtree(tmp_path / "data" / "sentence-vectors")
    app.indexes.__dict__.pop("evidence", None)
    try:
        yield app
    finally:
        app.close()


class Killed(BaseException):
    """Stands for the process dying between two commits (not an Exception: nothing catches it)."""


def test_a_catch_up_killed_midway_resumes_where_it_stopped(
    fresh: App, tmp_path: Path, url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = sentences_postgres if url else sentences_tantivy
    monkeypatch.setattr(module, "PAGE", 2)
    monkeypatch.setattr(sentence_vectors, "PAGE", 2)
    keyword = fresh.indexes.sentence_keyword
    cls: Any = type(keyword)
    real = cls._replace
    commits: list[int] = []

    def dies_on_the_third(self: object, *args: object) -> None:
        if len(commits) == 2:
            raise Killed
        real(self, *args)
        commits.append(1)

    monkeypatch.setattr(cls, "_replace", dies_on_the_third)
    with pytest.raises(Killed):
        keyword.catch_up()
    monkeypatch.setattr(cls, "_replace", real)
    words = fresh.indexes.evidence.check()[0]
    assert (words.behind, words.indexed) == (True, 4 * 3)  # two pages of two papers made it
    assert keyword.catch_up() == len(PAPERS) - 4  # the rest, not the first four again
    vectors = fresh.indexes.evidence.vectors()
    writer: Any = type(vectors)
    save = writer._save
    saves: list[int] = []

    def dies_after_one_save(self: object, index: object) -> None:
        if saves:
            raise Killed
        save(self, index)
        saves.append(1)

    monkeypatch.setattr(sentence_vectors, "BULK_SAVE_ROWS", 1)  # a save after every page
    monkeypatch.setattr(writer, "_save", dies_after_one_save)
    with pytest.raises(Killed):
        vectors.catch_up()
    monkeypatch.setattr(writer, "_save", save)
    fresh.indexes.__dict__.pop("evidence")  # the next process: only what was saved
    again = fresh.indexes.evidence.vectors()
    assert again.check().indexed == 2 * 3
    assert again.check().behind
    assert again.catch_up() == len(PAPERS) - 2
    checks = fresh.indexes.evidence.check()
    assert [(c.consistent, c.indexed) for c in checks] == [(True, STORED), (True, STORED)], checks
    assert fresh.search.evidence.search(QUESTION, limit=5).hits


def test_check_finds_what_fell_behind_and_repair_mends_it(fresh: App) -> None:
    report = fresh.maintenance.check.check()
    sentence_probes = [p for p in report.probes if p.area.startswith("sentence")]
    assert len(sentence_probes) == 2
    assert not any(p.ok for p in sentence_probes)
    assert not report.ok
    repaired = fresh.maintenance.check.repair(report)
    assert repaired.after is not None
    assert all(p.ok for p in repaired.after if p.area.startswith("sentence")), repaired.after
    caught = (
        f"sentence indexes caught up: the sentences of {len(PAPERS)} papers into the keyword index, of "
        f"{len(PAPERS)} papers into the vector index, in "
    )
    assert any(a.startswith(caught) for a in repaired.actions), repaired.actions
    assert fresh.search.evidence.search(QUESTION, limit=5).hits


def test_lost_rows_are_found_by_count_and_a_repair_rebuilds(tmp_path: Path, url: str | None) -> None:
    app = evidence_app(tmp_path, url)
    try:
        assert all(c.consistent for c in app.indexes.evidence.check())
        if url is None:
            keyword = app.indexes.sentence_keyword
            writer = keyword._writer_now()  # type: ignore[attr-defined]
            writer.delete_documents_by_term("id", PAPERS[0].id)
            writer.commit()
            keyword._release()  # type: ignore[attr-defined]
        else:
            with app.core.engine().begin() as conn:
                conn.execute(text("DELETE FROM sentence_search WHERE paper_id = :p"), {"p": PAPERS[0].id})
        words = app.indexes.evidence.check()[0]
        assert (words.behind, words.indexed, words.stored) == (False, STORED - 3, STORED)
        report = app.maintenance.check.repair()
        assert any("sentence keyword index rebuilt" in a for a in report.actions)
        assert all(c.consistent for c in app.indexes.evidence.check())
    finally:
        app.close()


def test_sentence_vectors_of_another_model_are_started_afresh(tmp_path: Path) -> None:
    app = evidence_app(tmp_path)
    try:
        path = tmp_path / "data" / "sentence-vectors"
        other = sentence_vectors.SentenceVectorWriter(
            path, app.indexes.evidence_rows, model_id="another-model"
        )
        assert other.check().indexed == 0  # the stored index is not counted as this model's
        assert other.catch_up() == 0  # no sentence of that model is stored: nothing to index, nothing mixed
        with pytest.raises(Exception, match=r"another-model|fake"):
            sentence_vectors.open_sentence_vectors(path, "another-model")
    finally:
        app.close()


def test_rows_read_for_search_are_the_sentence_stores_own(tmp_path: Path) -> None:
    """Search decodes the stored rows in bulk; what it reads must be what the sentence store reads."""
    app = evidence_app(tmp_path)
    try:
        model = sentence_model_id(app.indexes.embedders.current().model_id)
        ids = [p.id for p in PAPERS]
        fast = {r.paper_id: r.sentences for r in app.indexes.evidence_rows.rows(ids, vectors=False)}
        own = {pid: row.sentences for pid, row in app.indexes.sentences.sentences(ids, model).items()}
        assert fast.keys() == own.keys() == set(ids)
        for pid in ids:
            assert [(s.start, s.end, s.role) for s in fast[pid]] == [
                (s.start, s.end, s.role) for s in own[pid]
            ]
            for a, b in zip(fast[pid], own[pid], strict=True):
                assert max(abs(x - y) for x, y in zip(a.probabilities, b.probabilities, strict=True)) < 1e-3
    finally:
        app.close()


def test_a_failing_index_never_fails_the_sentence_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sentences are stored whatever an index does with the batch; the index catches up later."""
    app = evidence_app(tmp_path, index=False)
    try:
        evidence = app.indexes.evidence

        def broken(model_id: str) -> Any:
            raise OSError(f"disk full for {model_id}")

        monkeypatch.setattr(evidence, "vector_writer", broken)
        summary = app.indexes.sentence_indexer.current().run()
        assert summary.papers == len(PAPERS)  # every batch stored
        assert app.indexes.evidence_rows.counts() == (len(PAPERS), STORED)
        assert evidence.keyword.check().consistent  # the other index took every batch
        monkeypatch.undo()
        evidence._writer = None
        assert all(c.consistent for c in [evidence.keyword.check()])
        assert evidence.vectors().catch_up() == len(PAPERS)
        assert all(c.consistent for c in evidence.check())
    finally:
        app.close()


def test_the_sentence_graph_is_built_at_half_the_papers_breadth(
    fresh: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sentence vectors are the largest graph an instance builds (~6.5 a paper): efConstruction 64,
    which halves its build against the papers' 128 (bench/sentence_index_choice.py)."""
    import faiss

    monkeypatch.setattr(sentence_vectors, "HNSW_MIN_ROWS", 10)  # a graph from 10 sentences, not 50,000
    vectors = fresh.indexes.evidence.vectors()
    assert vectors.catch_up() == len(PAPERS)
    folder = tmp_path / "data" / "sentence-vectors"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["kind"] == "hnsw"
    assert "efConstruction=64 " in manifest["extra"]["graph"]
    graph: Any = faiss.read_index(str(folder / manifest["generation"] / "hnsw.faiss"))
    assert graph.hnsw.efConstruction == 64
    assert fresh.search.evidence.search(QUESTION, limit=5).hits


def test_a_page_of_the_catch_up_is_a_seek_in_the_cursors_index_not_a_scan(
    fresh: App, url: str | None
) -> None:
    """Each page of a catch-up asked SQLite for every sentence row of the model, sorted, to keep 2,000:
    at 200k papers the sentence vectors' catch-up read 56 GB and did not end. The page is now a seek in
    ``ix_paper_sentences_stored`` by the cursor (a row value), the model a filter on the rows it walks."""
    if url is not None:
        pytest.skip("SQLite's query plan (PostgreSQL plans by its statistics)")
    from sqlalchemy import event

    engine = fresh.core.engine()
    rows = fresh.indexes.evidence_rows
    first = rows.changed(None, limit=2, vectors=False, model_id=None)
    model = first[0].model_id
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if "FROM paper_sentences" in statement:
            seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        page = rows.changed((first[-1].stamp, first[-1].paper_id), limit=2, vectors=True, model_id=model)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert [r.paper_id for r in page] == [
        r.paper_id for r in rows.changed(None, limit=4, vectors=False, model_id=model)[2:]
    ]
    statement, parameters = seen[-1]
    with engine.connect() as conn:
        plan = " ".join(
            str(r[-1]) for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
        )
    assert "USING INDEX ix_paper_sentences_stored ((created_at,paper_id)>(?,?))" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
