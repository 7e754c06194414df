"""``paperfeed model adapt|status|reset`` with the real model on 48 real papers: stop and resume, the gate's
two outcomes (forced by its threshold, not by faked numbers), the factory loading the adopted model, the
resumable re-embedding that follows, and the clear errors of a store that is too small."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from paperfeed.bootstrap import build_app
from paperfeed.domain.adaptation import MIN_PAPERS, AdaptOptions
from paperfeed.settings import Settings
from tests.citations.conftest import HARVESTED, cite, links

from .conftest import EVAL_OPTIONS, TRAIN_OPTIONS, make_instance, run

pytestmark = [pytest.mark.shared, pytest.mark.slow]

N_PAPERS = 48  # 9 held out, 39 trained on: 5 steps of 8 pairs


@dataclass(frozen=True)
class Trained:
    data: Path
    stopped: str
    resumed: str
    model_id: str


def _models(data: Path) -> Path:
    return data / "models"


def _vector_models(data: Path) -> dict[str, int]:
    with sqlite3.connect(data / "paperfeed.db") as conn:
        return dict(conn.execute("SELECT model_id, count(*) FROM embeddings GROUP BY 1").fetchall())


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, shared_dir: Path) -> Trained:
    """Index with the base model, start adapting, stop after 2 steps, resume to the end; the gate's
    threshold (+1.0: nDCG cannot rise that much) keeps the model aside."""
    data = make_instance(tmp_path_factory.mktemp("adapt"), shared_dir, N_PAPERS)
    code, _, err = run(data, "index")
    assert code == 0, err
    assert _vector_models(data) == {"all-MiniLM-L6-v2": N_PAPERS}
    code, stopped, err = run(data, "model", "adapt", *TRAIN_OPTIONS, *EVAL_OPTIONS, "--stop-after", "2")
    assert code == 0, err
    model_id = re.search(r"training (adapted-[0-9a-f]{12}) on 39 papers", stopped)
    assert model_id is not None, stopped
    code, resumed, err = run(data, "model", "adapt", *TRAIN_OPTIONS, *EVAL_OPTIONS, "--min-gain", "1")
    assert code == 0, err
    return Trained(data, stopped, resumed, model_id.group(1))


def test_a_stopped_run_saves_a_checkpoint_and_says_how_to_resume(trained: Trained) -> None:
    assert "stopped at step 2 of 5" in trained.stopped
    assert "Run the same `paperfeed model adapt` command again to resume" in trained.stopped
    assert "9 papers held out for the evaluation" in trained.stopped


def test_the_same_command_resumes_from_the_checkpoint_and_finishes(trained: Trained) -> None:
    assert f"resuming {trained.model_id} on 39 papers" in trained.resumed
    assert "resumed at step 2, trained to step 5 of 5" in trained.resumed
    assert (_models(trained.data) / "adapted" / trained.model_id / "model.safetensors").is_file()
    assert not (_models(trained.data) / "adapt-runs").exists() or not any(
        (_models(trained.data) / "adapt-runs").iterdir()
    ), "a finished run leaves no checkpoints behind"


def test_the_gate_prints_both_models_side_by_side_and_keeps_a_loser_aside(trained: Trained) -> None:
    out = trained.resumed
    number = r"│ \d\.\d{4} "
    assert re.search(rf"title→abstract nDCG@10 {number}{number}│ [+-]\d\.\d{{4}}", out), out
    assert re.search(rf"title→abstract MRR {number}{number}", out), out
    assert "kept aside, not adopted" in out
    assert "does not beat the base model by more than +1.0000" in out
    assert not (_models(trained.data) / "active-model.json").exists()
    code, status, _ = run(trained.data, "model", "status")
    assert code == 0
    assert "embedder in use: all-MiniLM-L6-v2" in status
    assert f"kept aside: {trained.model_id}" in status


def test_adopting_switches_the_embedder_and_index_re_embeds_resumably_then_reset(
    trained: Trained, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(trained.data, data)
    # the same options find the finished model: only the evaluation runs again, with a threshold any
    # model passes (-1.0), so the gate adopts it
    code, out, err = run(data, "model", "adapt", *TRAIN_OPTIONS, *EVAL_OPTIONS, "--min-gain", "-1")
    assert code == 0, err
    assert f"{trained.model_id} was trained before; evaluating it" in out
    assert f"adopted {trained.model_id}" in out
    manifest = json.loads((_models(data) / "active-model.json").read_text())
    assert manifest["model_id"] == trained.model_id
    assert manifest["papers"] == 39

    app = build_app(Settings(data_dir=data, embedding_backend="torch"))
    try:
        assert app.indexes.embedders.current().model_id == trained.model_id  # the factory reads the manifest
        base = build_app(Settings(data_dir=tmp_path / "other", embedding_backend="torch"))
        text = ["Dark matter halos in cosmological simulations"]
        assert not np.array_equal(
            app.indexes.embedders.current().embed(text), base.indexes.embedders.current().embed(text)
        )
        base.close()
    finally:
        app.close()

    code, status, _ = run(data, "model", "status")
    assert f"embedder in use: {trained.model_id}" in status
    assert f"adopted: {trained.model_id}" in status

    # the new model_id makes every paper stale: a bounded run, then the rest
    code, out, _ = run(data, "index", "--limit", "20")
    assert code == 0
    assert f"model changed from all-MiniLM-L6-v2 to {trained.model_id}: re-embedding {N_PAPERS} papers" in out
    assert "embedded 20 papers (0 new, 20 re-embedded" in out
    assert f"{N_PAPERS - 20} papers still to embed" in out
    code, out, _ = run(data, "index")
    assert f"embedded {N_PAPERS - 20} papers (0 new, {N_PAPERS - 20} re-embedded" in out
    assert _vector_models(data) == {trained.model_id: N_PAPERS}

    code, out, _ = run(data, "model", "reset")
    assert code == 0
    assert f"{trained.model_id} is no longer used; the embedder is all-MiniLM-L6-v2 again" in out
    assert not (_models(data) / "active-model.json").exists()
    code, status, _ = run(data, "model", "status")
    assert "embedder in use: all-MiniLM-L6-v2" in status
    assert f"kept aside: {trained.model_id}" in status
    code, out, _ = run(data, "model", "reset")
    assert "no adapted model was adopted" in out


@pytest.mark.parametrize("papers", [0, 12])
def test_too_few_papers_is_a_clear_error(tmp_path: Path, shared_dir: Path, papers: int) -> None:
    data = make_instance(tmp_path, shared_dir, papers)
    code, out, err = run(data, "model", "adapt")
    assert code == 2
    assert f"needs at least {MIN_PAPERS} papers with a title and an abstract" in err
    assert f"the store has {papers}" in err
    assert "Traceback" not in out + err
    assert not (data / "models" / "adapt-runs").exists()


def test_papers_of_the_store_that_cite_each_other_become_training_pairs(
    tmp_path: Path, shared_dir: Path
) -> None:
    """A citation graph in the store adds citing ↔ cited pairs; a pair never touches a held-out paper."""
    data = make_instance(tmp_path, shared_dir, N_PAPERS)
    app = build_app(Settings(data_dir=data, embedding_backend="torch"))
    try:
        ids = sorted(p.id for page in app.core.store.iter_papers() for p in page)
        chain = list(itertools.pairwise(ids))  # each paper cites the next
        app.catalogue.citations.save_links(
            [links(ids[0], [cite(a, b) for a, b in chain])], harvested_at=HARVESTED
        )
        train = {p.paper_id for p in app.maintenance.adaptation.plan(AdaptOptions()).split.train}
    finally:
        app.close()
    expected = sum(1 for a, b in chain if a in train and b in train)
    assert 0 < expected < len(chain)  # the edges of held-out papers are left out
    code, out, err = run(data, "model", "adapt", *TRAIN_OPTIONS, *EVAL_OPTIONS, "--stop-after", "1")
    assert code == 0, err
    assert f"on 39 papers ({39 + expected} pairs: 39 title ↔ abstract, {expected} citing ↔ cited)" in out
    assert "stopped at step 1" in out
