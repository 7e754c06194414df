"""The faiss graph wrapper on its own: the index's exact fall-back would hide a graph that finds nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paperfeed.adapters.vector.hnsw import HnswGraph
from paperfeed.domain.search import VectorIndexUnavailable
from tests.support.fresh_python import checkout_env
from tests.vector.corpus import DIM, Corpus


@pytest.fixture(scope="module")
def graph(corpus: Corpus) -> HnswGraph:
    return HnswGraph.build(DIM, corpus.vectors)


@pytest.mark.parametrize("method", ["search", "scan"])
def test_finds_each_vector_itself_and_honours_the_mask(graph: HnswGraph, corpus: Corpus, method: str) -> None:
    mask = np.zeros(len(corpus.vectors), dtype=np.bool_)
    mask[::7] = True
    for row in range(0, 3000, 70):
        found = (
            graph.scan(corpus.vectors[row], 20, mask)
            if method == "scan"
            else (graph.search(corpus.vectors[row], 20, mask, ef=64))
        )
        assert len(found) == 20
        assert mask[found].all()
        exact = np.flatnonzero(mask)[np.argmax(corpus.vectors[mask] @ corpus.vectors[row])]
        assert exact in found[:3]  # int8 ranking: the true best is at the very top, re-scoring fixes order
        if row % 7 == 0:
            assert found[0] == row


def test_unmasked_search_and_scan_agree_on_the_nearest(graph: HnswGraph, corpus: Corpus) -> None:
    for row in (1, 500, 2999):
        assert graph.search(corpus.vectors[row], 5, None, ef=64)[0] == row
        assert graph.scan(corpus.vectors[row], 5, None)[0] == row


def test_save_load_round_trip_and_shape_check(graph: HnswGraph, corpus: Corpus, tmp_path: Path) -> None:
    graph.save(tmp_path / "g.faiss")
    again = HnswGraph.load(tmp_path / "g.faiss", DIM, 3000, trained_on=3000)
    assert len(again) == 3000
    assert again.search(corpus.vectors[42], 1, None, ef=64)[0] == 42
    with pytest.raises(VectorIndexUnavailable, match="does not match its rows"):
        HnswGraph.load(tmp_path / "g.faiss", DIM, 2999, trained_on=3000)


def test_a_graph_keeps_its_build_breadth_through_a_save_and_a_load(corpus: Corpus, tmp_path: Path) -> None:
    narrow = HnswGraph.build(DIM, corpus.vectors[:500], ef_construction=64)
    assert narrow.ef_construction == 64
    assert "efConstruction=64 " in narrow.describe()
    narrow.save(tmp_path / "g.faiss")
    again = HnswGraph.load(tmp_path / "g.faiss", DIM, 500, trained_on=500)
    assert again.ef_construction == 64  # rows added to it later are linked as broadly as the first
    assert HnswGraph.empty(DIM).ef_construction == 128  # the papers' graph


def test_a_bulk_add_of_ten_thousand_rows_uses_every_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """A catch-up of the sentence vectors adds pages of ~13,000 sentences: each must use every core."""

    from paperfeed.adapters.vector import hnsw

    threads: list[int] = []
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    real = hnsw.faiss.omp_set_num_threads

    def recorded(n: int) -> None:
        threads.append(n)
        real(min(n, 2))

    monkeypatch.setattr(hnsw.faiss, "omp_set_num_threads", recorded)
    rows = np.random.default_rng(3).standard_normal((10_000, 8)).astype(np.float32)
    graph = HnswGraph.empty(8, ef_construction=16)
    graph.add(np.arange(9_000, dtype=np.int64), rows[:9_000])
    assert threads == [1, 1]  # a small add: one thread (then back to one for the queries)
    graph.add(np.arange(9_000, 10_000, dtype=np.int64), rows[9_000:])
    graph = HnswGraph.empty(8, ef_construction=16)
    threads.clear()
    graph.add(np.arange(10_000, dtype=np.int64), rows)
    assert threads == [4, 1]


def test_an_exact_index_never_loads_faiss_and_a_graph_does(tmp_path: Path) -> None:
    """faiss is imported when a graph is built or read, not with the index module: a store too small for
    a graph (every new instance) serves without it (~13 MB of each web process, issue #39 item 6)."""
    script = """
import sys
import os
import subprocess
import sys
from pathlib import Path
import numpy as np
from paperfeed.adapters.vector import open_vector_index
from paperfeed.domain.search import VectorRecord
rng = np.random.default_rng(7)
vectors = rng.standard_normal((50, 8)).astype(np.float32)
vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
for kind in ("exact", "hnsw"):
    index = open_vector_index(Path(sys.argv[1]) / kind, kind=kind, model_id="m", dimension=8)
    index.upsert(VectorRecord(f"p{i}", v, None, (), False) for i, v in enumerate(vectors))
    index.save()
    reopened = open_vector_index(Path(sys.argv[1]) / kind, kind=kind, model_id="m", dimension=8)
    assert reopened.search(vectors[3], 1)[0].paper_id == "p3"
    print(kind, "faiss" in sys.modules)
"""
    env = checkout_env()
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["exact", "False", "hnsw", "True"]
