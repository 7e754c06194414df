"""The daily job with nothing to do costs a few queries, not a model in memory (issue #39 item 6).

With zero papers the scheduler's daily job spent 108 s in "index ok (embedded 0)": the index step asked
for the indexing service, which with ``PAPERFEED_EMBEDDING_BACKEND=auto`` measured torch, ONNX and ONNX
int8 on the probe texts (loading all three; the scheduler then held 920 MB) to embed nothing. With
every paper embedded and the index current it did the same, "within the stored vectors' space". Here the
job runs in a fresh process, as the scheduler runs it, and no model library may be imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

_JOB = """
import json, sys
from pathlib import Path
from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings

data, prepare = Path(sys.argv[1]), sys.argv[2] == "embedded"
app = build_app(Settings(data_dir=data, database_url=None, embedding_backend="auto"))
if prepare:  # every paper embedded in the space auto would keep, the vector index current
    from paperfeed.adapters.embed.fake import FakeEmbedder
    from paperfeed.services.indexing import IndexingService
    from tests.indexing.conftest import add_papers, paper

    space = app.indexes.factory.open("onnx").model_id  # the model's id, read without loading it

    class Stored(FakeEmbedder):
        @property
        def model_id(self):
            return space

    add_papers(app.core.store, [paper(i) for i in range(1, 13)])
    IndexingService(app.indexes.embeddings, Stored(384), app.indexes.vector_index, batch_size=64).run()
    app.close()
    app = build_app(Settings(data_dir=data, database_url=None, embedding_backend="auto"))
run = app.maintenance.jobs.run("daily")
models = ("torch", "onnxruntime", "sentence_transformers", "transformers")
heavy = sorted(m for m in models if m in sys.modules)
print(json.dumps({"status": run.status, "steps": [[s.name, s.counts] for s in run.steps], "heavy": heavy}))
app.close()
"""


@pytest.mark.parametrize("store", ["empty", "embedded"])
def test_the_daily_job_with_nothing_to_do_loads_no_model(store: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env |= {
        "PAPERFEED_JOBS_DAILY_STEPS": "index,topics,digests",  # the steps that need no network
        "PAPERFEED_MODEL_CACHE": str(tmp_path / "models"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    done = subprocess.run(
        [sys.executable, "-c", _JOB, str(data), store], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["status"] == "ok", said
    assert said["steps"][0] == ["index", {"embedded": 0, "remaining": 0}]
    assert said["heavy"] == [], said  # no backend measured, no model loaded
    assert not (data / "embedding-calibration.json").exists()


def test_an_indexer_on_an_empty_store_measures_no_backend_and_loads_no_model(tmp_path: Path) -> None:
    """`paperfeed run`'s indexer on a fresh, empty instance measured the three backends at start (three
    model processes, 1.6 GB for two minutes) to embed nothing; it now waits for papers first."""
    from tests.indexing.test_follow import _children
    from tests.support.follower import index_follow

    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env |= {
        "PAPERFEED_EMBEDDING_BACKEND": "auto",
        "PAPERFEED_MODEL_CACHE": str(tmp_path / "models"),
        "HF_HUB_OFFLINE": "1",
    }
    with index_follow(data, env, "--poll", "0.2") as follower:
        follower.expect("no papers yet; checking for new ones every 0.2 s")
        time.sleep(1.0)  # a few looks
        assert _children(follower.proc.pid) == []  # no embedding process was started
        assert not (data / "embedding-calibration.json").exists()
        from paperfeed.bootstrap import build_app
        from paperfeed.settings import Settings

        app = build_app(Settings(data_dir=data, database_url=None, embedding_backend="fake"))
        try:
            report = app.indexes.activity.activity()
            assert report is not None  # readers are told an indexer runs, waiting for papers
            assert report.state == "idle"
        finally:
            app.close()


_TOPICS = """
import json, sys
from pathlib import Path
from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from tests.topics.conftest import add_papers

data, background = Path(sys.argv[1]), sys.argv[2] == "background"
settings = Settings(data_dir=data, database_url=None, embedding_backend="fake", topics_min_papers=10,
                    topics_papers_per_topic=15)
app = build_app(settings)
add_papers(app.core.store, 15)  # 45 papers in three groups, with vectors
app.close()
app = build_app(settings)
if background:
    app.indexes.embed_in_background()  # as `paperfeed run`'s indexer and the scheduler do
said = []
counts = app.catalogue.topics_daily(said.append)
libraries = ("sklearn", "umap", "numba", "llvmlite", "pynndescent")
heavy = sorted(m for m in libraries if m in sys.modules)
print(json.dumps({"counts": counts, "said": said, "heavy": heavy}))
app.close()
"""


@pytest.mark.parametrize("process", ["background", "foreground"])
def test_a_background_process_builds_the_topics_in_a_child_and_stays_small(
    process: str, tmp_path: Path
) -> None:
    """After an import, `paperfeed run`'s indexer held 533 MB idle (93 MB before the import): it had
    built the topics in its own process, and scikit-learn, UMAP and numba stay once imported. A
    background process now builds them in a child process that goes with them; its lines still come."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env |= {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", _TOPICS, str(tmp_path / "data"), process],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["counts"]["built"] == 1, said
    assert said["counts"]["papers"] == 45
    assert any("laying out" in line for line in said["said"]), said  # the child's progress reached us
    if process == "background":
        assert said["heavy"] == [], said
    else:  # a one-off command builds them in its own process: the check can see the libraries
        assert "sklearn" in said["heavy"], said
