"""Late chunking with the real model (issue #39): one forward pass a paper gives its vector -- the model's
own embedding of its text -- and its sentences' vectors, pooled from that pass; sentences past the
256-token window from a continuation window; the same on torch and ONNX to float precision."""

from __future__ import annotations

import numpy as np
import pytest

from paperfeed.adapters.embed.late import PADDING, _batches
from paperfeed.adapters.embed.onnx import OnnxEmbedder
from paperfeed.adapters.embed.sentence_transformers import SentenceTransformerEmbedder
from paperfeed.adapters.sentences.splitter import SentencexSplitter
from paperfeed.domain.embedding import embedding_text
from paperfeed.domain.sentences import embed_sentences, sentence_text

pytestmark = pytest.mark.shared

TITLE = "Graph neural networks for protein structure"
SENTENCES = [
    "Predicting the structure of a protein from its sequence is a central problem of biology.",
    "We propose a graph network that passes messages between residues close in space.",
    "It is trained on ten thousand structures from the Protein Data Bank.",
    "Our model improves the accuracy of the predicted contacts by twelve percent.",
]


def _papers(n_repeats: int) -> list[tuple[str, str, list[tuple[int, int]]]]:
    abstract = " ".join(SENTENCES * n_repeats)
    return [(TITLE, abstract, SentencexSplitter().split(abstract))]


def test_the_paper_vector_is_the_models_own_embedding_of_its_text(
    torch_embedder: SentenceTransformerEmbedder, onnx_fp32: OnnxEmbedder
) -> None:
    papers = _papers(1) + _papers(12)  # one inside the window, one far past it
    for embedder in (torch_embedder, onnx_fp32):
        vectors, pooled = embed_sentences(embedder, papers)
        plain = embedder.embed([embedding_text(t, a) for t, a, _ in papers])
        np.testing.assert_allclose(vectors, plain, atol=1e-5)
        assert [len(p) for p in pooled] == [4, 48]
        for p in pooled:
            np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)


def test_torch_and_onnx_pool_the_same_sentence_vectors(
    torch_embedder: SentenceTransformerEmbedder, onnx_fp32: OnnxEmbedder
) -> None:
    papers = _papers(1) + _papers(12)
    _, by_torch = embed_sentences(torch_embedder, papers)
    _, by_onnx = embed_sentences(onnx_fp32, papers)
    for a, b in zip(by_torch, by_onnx, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_a_sentence_is_pooled_in_its_context_not_on_its_own(
    torch_embedder: SentenceTransformerEmbedder,
) -> None:
    """Its vector is near, but not, the sentence embedded alone: the title and the neighbours are in it;
    and the same sentence in a paper on another subject gets another vector."""
    papers = _papers(1)
    _, pooled = embed_sentences(torch_embedder, papers)
    alone = torch_embedder.embed(SENTENCES)
    cosines = (pooled[0] * alone).sum(axis=1)
    assert (cosines > 0.4).all(), cosines  # 0.53-0.80 measured: the context moves a sentence a lot
    assert (cosines < 0.999).all(), cosines
    other = "Speech recognition for low-resource languages"
    _, elsewhere = embed_sentences(torch_embedder, [(other, papers[0][1], papers[0][2])])
    assert float(pooled[0][1] @ elsewhere[0][1]) < 0.999


def test_sentences_past_the_window_are_pooled_from_a_continuation_window(
    torch_embedder: SentenceTransformerEmbedder,
) -> None:
    """The sentences the first window holds whole are pooled from it; the next ones from a window of the
    title followed by the abstract from the first sentence left over: exactly the first window of that
    shorter paper."""
    ((title, abstract, spans),) = _papers(12)
    text, moved, head = sentence_text(title, abstract, spans)
    assert text == f"{TITLE}. {abstract}"
    assert head == len(TITLE) + 2
    assert [(a - head, b - head) for a, b in moved] == spans
    _, (pooled,) = embed_sentences(torch_embedder, [(title, abstract, spans)])
    starts = []
    for k in range(1, len(spans)):
        start = spans[k][0]
        rest = [(a - start, b - start) for a, b in spans[k:]]
        _, (tail,) = embed_sentences(torch_embedder, [(title, abstract[start:], rest)])
        if np.allclose(pooled[k], tail[0], atol=1e-5):
            starts.append(k)
    # 48 sentences of ~14 tokens in windows of 256 (the title's ~10 and two specials included): a new
    # window every 17 sentences, each the first window of the paper that starts there
    assert starts == [17, 34]


def test_continuation_windows_are_batched_with_windows_of_similar_length() -> None:
    """A batch is padded to its widest window: windows of 256 and 20 tokens in one batch ran the model over
    as much padding as text. Batches keep the longest-first order, at most ``batch`` windows, and a
    widest window at most ``PADDING`` times the narrowest."""
    lengths = np.array([20, 256, 130, 250, 24, 120, 256, 21, 60, 64])
    order = np.argsort(-lengths, kind="stable")
    found = _batches(order, lengths, 3)
    assert [i for rows in found for i in rows] == list(order)  # every window once, in order
    for rows in found:
        assert 1 <= len(rows) <= 3
        assert lengths[rows].max() <= PADDING * lengths[rows].min()
    assert [list(lengths[rows]) for rows in found] == [[256, 256, 250], [130, 120], [64, 60], [24, 21, 20]]
    assert len(_batches(order, np.full(10, 100), 128)) == 1  # equal lengths: one batch
