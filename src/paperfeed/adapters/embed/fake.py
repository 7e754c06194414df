"""A tiny deterministic embedder for tests and demos: the hashing trick over word tokens.

Each lower-cased word token adds +1 or -1 to one of ``dimension`` buckets chosen by a keyed hash, so texts
sharing words get similar vectors and unrelated texts nearly orthogonal ones. ``name`` keys the hash: two
fake models with different names live in different vector spaces, like two real models would.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paperfeed.domain.embedding import MAX_TOKENS

from .base import normalise_rows

if TYPE_CHECKING:  # NumPy on the first embed, not when a search only asks for the model id
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

__all__ = ["FakeEmbedder"]

_TOKEN = re.compile(r"\w+")


class FakeEmbedder:
    """:class:`~paperfeed.domain.search.Embedder` with no model: instant, deterministic, normalised."""

    def __init__(self, dimension: int = 64, name: str = "fake") -> None:
        if dimension < 2:
            raise ValueError("dimension must be at least 2")
        self._dimension = dimension
        self._name = name
        self._key = name.encode()[:64]
        self._cache: dict[str, tuple[int, float]] = {}

    @property
    def model_id(self) -> str:
        return f"{self._name}-hash{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _bucket(self, token: str) -> tuple[int, float]:
        found = self._cache.get(token)
        if found is None:
            digest = hashlib.blake2b(token.encode(), digest_size=8, key=self._key).digest()
            value = int.from_bytes(digest, "little")
            found = (value % self._dimension, 1.0 if (value >> 63) & 1 else -1.0)
            if len(self._cache) < 200_000:
                self._cache[token] = found
        return found

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = _TOKEN.findall(text.lower())[:MAX_TOKENS]
            if not tokens:
                out[row, 0] = 1.0  # an empty text still gets a unit vector, the same one every time
                continue
            for token in tokens:
                index, sign = self._bucket(token)
                out[row, index] += sign
            if not out[row].any():  # every token cancelled out: fall back to the first token's bucket
                out[row, self._bucket(tokens[0])[0]] = 1.0
        return normalise_rows(out)

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]], heads: Sequence[int]
    ) -> tuple[Vectors, list[Vectors]]:
        """The texts' vectors and each span's own (a hashing model has no context to pool from)."""
        del heads
        pieces = [[text[a:b] for a, b in found] for text, found in zip(texts, spans, strict=True)]
        return self.embed(texts), [self.embed(p) for p in pieces]
