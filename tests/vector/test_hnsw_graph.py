"""The faiss graph wrapper on its own: the index's exact fall-back would hide a graph that finds nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paperfeed.adapters.vector.hnsw import HnswGraph
from paperfeed.domain.search import VectorIndexUnavailable
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
