"""Late chunking: a text's vector and its spans' (sentences') vectors from one forward pass (issue #39).

Embedding each sentence of an abstract on its own, after the abstract was embedded, runs the transformer
over every token twice. Late chunking (Günther et al. 2024, "Late Chunking: Contextual Chunk Embeddings
Using Long-Context Embedding Models") runs it once over the whole text and mean-pools the output token
states of each span, located by the tokenizer's character offsets; the text's own vector is the mean of
all its tokens, exactly what the model's mean pooling gives. A sentence's vector then also carries its
context (the title, the sentences around it).

The model reads at most its window (MiniLM: 256 tokens, specials included). Sentences the first window
holds entirely are pooled from it; the rest are pooled from *continuation windows*: the text's head (the
title: ``heads``) followed by the text from the first sentence not yet done, as many such windows as the
text needs. A sentence longer than a whole window is pooled from the tokens that fit.

One implementation for every backend: the tokenizer is the model's own fast tokenizer (the ONNX export
saves exactly it), ``forward`` returns the last hidden states, and pooling is NumPy's, so torch and ONNX
float32 give the same vectors to float precision (tests/embedding/test_late_chunking.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .base import normalise_rows

__all__ = ["Forward", "late_vectors"]

Vectors = npt.NDArray[np.float32]
Forward = Callable[[dict[str, npt.NDArray[np.int64]]], npt.NDArray[Any]]
"""(batch, tokens) input_ids / attention_mask / token_type_ids → (batch, tokens, dimension) hidden states."""


@dataclass
class _Window:
    """One forward pass over ``text``: the spans it may pool (``todo``, in order), placed by ``shift``
    (a span's characters in ``text`` are its characters in the whole text minus ``shift``)."""

    text_index: int
    text: str
    first: bool  # the text's own first window: its mean is the text's vector
    todo: list[int]
    shift: int = 0
    spans: list[tuple[int, int, int]] = field(default_factory=list)  # pooled here: (span, local start, end)
    encoding: Any = None


def _covered(encoding: Any, text: str) -> int:
    """How many leading characters of ``text`` the (possibly truncated) encoding holds whole: all of them,
    or up to the end of its last ordinary token."""
    ends = [
        e
        for (_, e), special in zip(encoding.offsets, encoding.special_tokens_mask, strict=True)
        if not special
    ]
    if not ends:
        return len(text)
    last = max(ends)
    return len(text) if not text[last:].strip() else last


def _assign(w: _Window, spans: Sequence[tuple[int, int]]) -> list[int]:
    """Give ``w`` the spans of its ``todo`` it holds whole (a continuation window always takes its first:
    a span longer than a window is pooled from what fits); returns the spans left for the next window."""
    covered = _covered(w.encoding, w.text)
    for at, k in enumerate(w.todo):
        a, b = spans[k][0] - w.shift, spans[k][1] - w.shift
        if b <= covered:
            w.spans.append((k, a, b))
        elif not w.first and not w.spans:
            w.spans.append((k, a, covered))
        else:
            return w.todo[at:]
    return []


def late_vectors(
    tokenizer: Any,
    forward: Forward,
    texts: Sequence[str],
    spans: Sequence[Sequence[tuple[int, int]]],
    heads: Sequence[int],
    *,
    input_names: Sequence[str],
    batch: int,
    dimension: int,
) -> tuple[Vectors, list[Vectors]]:
    """Each text's vector (its mean-pooled first window, unit length: the model's own embedding of it) and
    its spans' vectors (``spans[i]``: character ranges of ``texts[i]``, in order, not overlapping), pooled
    late. ``heads[i]``: how many leading characters of ``texts[i]`` (its title) each continuation window
    repeats as context. ``tokenizer``: a ``tokenizers.Tokenizer`` truncating at the model's window, without
    padding; ``forward`` runs the model over ``input_names`` in batches of at most ``batch`` windows."""
    n = len(texts)
    vectors = np.zeros((n, dimension), dtype=np.float32)
    pooled: list[Vectors] = [np.zeros((len(s), dimension), dtype=np.float32) for s in spans]
    windows = [_Window(i, t, True, list(range(len(spans[i])))) for i, t in enumerate(texts)]
    while windows:
        encodings = tokenizer.encode_batch([w.text for w in windows])
        following: list[_Window] = []
        for w, enc in zip(windows, encodings, strict=True):
            w.encoding = enc
            left = _assign(w, spans[w.text_index])
            if left:
                i, start = w.text_index, spans[w.text_index][left[0]][0]
                head = heads[i]
                following.append(_Window(i, texts[i][:head] + texts[i][start:], False, left, start - head))
        _run(windows, forward, input_names, batch, vectors, pooled)
        windows = following
    return normalise_rows(vectors), [normalise_rows(p) for p in pooled]


PADDING = 1.25
"""A batch's widest window is at most this many times its narrowest: continuation windows vary in length
(a title and an abstract's last sentences), and a batch padded to its widest would run the model over
as many padding tokens as text (64 seed papers: 16,384 tokens instead of 7,662, 0.62 against 0.37 ms a
token)."""


def _batches(order: npt.NDArray[np.intp], lengths: npt.NDArray[np.int_], batch: int) -> list[Any]:
    """``order`` (windows, longest first) cut into batches of at most ``batch`` windows whose widest is at
    most :data:`PADDING` times their narrowest."""
    found: list[Any] = []
    begin = 0
    for at in range(1, len(order) + 1):
        if at == len(order) or at - begin >= batch or lengths[order[begin]] > PADDING * lengths[order[at]]:
            found.append(order[begin:at])
            begin = at
    return found


def _run(
    windows: list[_Window],
    forward: Forward,
    input_names: Sequence[str],
    batch: int,
    vectors: Vectors,
    pooled: list[Vectors],
) -> None:
    """Forward passes over ``windows`` (similar lengths together: little padding), pooling as they come."""
    lengths = np.array([len(w.encoding.ids) for w in windows])
    order = np.argsort(-lengths, kind="stable")
    for rows in _batches(order, lengths, batch):
        width = int(lengths[rows].max())
        feed = {name: np.zeros((len(rows), width), dtype=np.int64) for name in input_names}
        for r, row in enumerate(rows):
            enc = windows[row].encoding
            m = len(enc.ids)
            feed["input_ids"][r, :m] = enc.ids
            feed["attention_mask"][r, :m] = enc.attention_mask
            if "token_type_ids" in feed:
                feed["token_type_ids"][r, :m] = enc.type_ids
        hidden = np.asarray(forward(feed), dtype=np.float32)
        for r, row in enumerate(rows):
            w = windows[row]
            enc = w.encoding
            m = len(enc.ids)
            states = hidden[r, :m]
            if w.first:
                mask = np.asarray(enc.attention_mask, dtype=np.float32)
                vectors[w.text_index] = (states * mask[:, None]).sum(axis=0) / max(float(mask.sum()), 1e-9)
            if not w.spans:
                continue
            offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(m, 2)
            ordinary = ~np.asarray(enc.special_tokens_mask, dtype=bool)
            for k, a, b in w.spans:
                pick = ordinary & (offsets[:, 0] < b) & (offsets[:, 1] > a)
                if not pick.any():  # characters the tokenizer drops: the window's mean stands for it
                    pick = ordinary if ordinary.any() else np.ones(m, dtype=bool)
                pooled[w.text_index][k] = states[pick].mean(axis=0)
