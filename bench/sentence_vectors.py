"""Papers' sentences for benches: the product's own sentence pass, its embedding served from the cache.

Sentence vectors cost about as much CPU again as the papers' (bench/facet_cost.py), and every bench of
similar papers by sentences (bench/facet_similar.py, bench/similar_citations.py) needs them for the
same corpora. :class:`CachingEmbedder` is an :class:`~paperfeed.domain.search.Embedder` whose vectors
come from the bench vector cache (bench/vector_cache.py; a text is embedded once, by the real model,
and kept by its content hash), so :func:`fill_sentences` can run the indexer's real second pass
(:class:`~paperfeed.services.sentences.SentenceIndexer`: the shipped splitter, the role model trained in
the instance's data folder, the store's rows) on any bench instance at the cost of a cache read.
Sentence vectors are pooled late (from the paper's own forward pass, as the indexer makes them since
issue #39), cached under the sentence vector space (``sentence_model_id``) by text, spans and head.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.vector_cache import Doc, VectorCache, load_corpus, sample_key

__all__ = ["CachingEmbedder", "corpus_docs", "fill_sentences", "sentence_texts"]

F32 = npt.NDArray[np.float32]

MAX_SENTENCES = 40  # services.sentences.MAX_SENTENCES


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+_-]", "_", name)


class CachingEmbedder:
    """The cache's embedder (same ``model_id``): each text's vector read from the corpus ``corpus``, and
    (``embed_spans``, late chunking as the indexer pools sentences) each text's vector and its spans'
    from the sentence vector space's folder of that corpus, keyed by the text, its spans and its head."""

    def __init__(self, cache: VectorCache, corpus: str, report: Callable[[str], None] | None = None) -> None:
        self.cache = cache
        self.corpus = corpus
        self.report = report
        self._late: dict[str, tuple[F32, F32]] | None = None

    @property
    def model_id(self) -> str:
        return self.cache.embedder.model_id

    @property
    def dimension(self) -> int:
        return self.cache.embedder.dimension

    def embed(self, texts: Sequence[str]) -> F32:
        docs = [Doc(str(i), t, "") for i, t in enumerate(texts)]  # embedding_text(t, "") is t
        return self.cache.vectors(self.corpus, docs, report=self.report)

    def _folder(self) -> Path:
        from paperfeed.domain.sentences import sentence_model_id

        return self.cache.root / _safe(sentence_model_id(self.model_id)) / _safe(self.corpus)

    def _read_late(self) -> dict[str, tuple[F32, F32]]:
        if self._late is None:
            self._late = {}
            for path in sorted(self._folder().glob("late-*.npz")):
                with np.load(path, allow_pickle=False) as data:
                    keys, counts = data["keys"], data["counts"]
                    papers, flat = data["papers"].astype(np.float32), data["spans"].astype(np.float32)
                at = 0
                for k, n, v in zip(keys, counts, papers, strict=True):
                    self._late[str(k)] = (v, flat[at : at + int(n)])
                    at += int(n)
        return self._late

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]], heads: Sequence[int]
    ) -> tuple[F32, list[F32]]:
        """The real embedder's ``embed_spans`` for what the cache lacks (one shard per call)."""
        from paperfeed.domain.sentences import pools_sentences

        def key(text: str, found: Sequence[tuple[int, int]], head: int) -> str:
            body = f"{head}:{','.join(f'{a}-{b}' for a, b in found)}:{text}"
            return hashlib.blake2b(body.encode(), digest_size=16).hexdigest()

        keys = [key(t, s, h) for t, s, h in zip(texts, spans, heads, strict=True)]
        known = self._read_late()
        missing: list[int] = []  # the first text of each key the cache lacks
        for i, k in enumerate(keys):
            if k not in known and all(keys[j] != k for j in missing):
                missing.append(i)
        if missing:
            embedder = self.cache.embedder
            if not pools_sentences(embedder):
                raise SystemExit(f"{embedder.model_id}: this embedder does not pool sentence vectors")
            if self.report:
                self.report(f"{self.corpus}: pooling the sentences of {len(missing):,} texts late")
            papers, pooled = embedder.embed_spans(
                [texts[i] for i in missing], [spans[i] for i in missing], [heads[i] for i in missing]
            )
            folder = self._folder()
            folder.mkdir(parents=True, exist_ok=True)
            token = f"{time.time_ns()}-{uuid.uuid4().hex[:6]}"
            tmp, path = folder / f".tmp-{token}.npz", folder / f"late-{token}.npz"
            dim = self.dimension
            np.savez(
                tmp,
                keys=np.array([keys[i] for i in missing]),
                counts=np.array([len(v) for v in pooled], dtype=np.int64),
                papers=np.asarray(papers, dtype=np.float32),
                spans=np.vstack([np.asarray(v, dtype=np.float32).reshape(-1, dim) for v in pooled]),
            )
            os.replace(tmp, path)
            for i, v, found in zip(missing, papers, pooled, strict=True):
                known[keys[i]] = (np.asarray(v, dtype=np.float32), np.asarray(found, dtype=np.float32))
        return (
            np.stack([known[k][0] for k in keys]).astype(np.float32),
            [known[k][1] for k in keys],
        )


def sentence_texts(abstracts: Sequence[str]) -> list[str]:
    """Every sentence of ``abstracts`` as the indexer splits them (the shipped splitter, 40 at most)."""
    from paperfeed.adapters.sentences.splitter import SentencexSplitter

    splitter = SentencexSplitter()
    out: list[str] = []
    for text in abstracts:
        out.extend(text[a:b] for a, b in splitter.split(text)[:MAX_SENTENCES])
    return out


def corpus_docs(name: str) -> list[Doc]:
    """``scifact_N``: every judged SciFact abstract plus others in md5 order up to N (bench/facet_similar.py's
    corpus); ``csabstruct``: the CSAbstruct abstracts (its sentences joined by spaces; titled "Abstract",
    the same for all, since CSAbstruct has none); else a corpus of bench/vector_cache.py."""
    if name.startswith("scifact_"):
        from bench.facet_similar import judgments

        size = int(name.split("_", 1)[1])
        claims, _, _ = judgments()
        judged = set().union(*claims.values())
        every = [d for d in load_corpus("scifact") if d.title]
        others = sorted((d for d in every if d.id not in judged), key=lambda d: sample_key(d.id))
        return [d for d in every if d.id in judged] + others[: max(0, size - len(judged))]
    if name == "csabstruct":
        import gzip

        import orjson

        from bench.vector_cache import SHARED

        docs = []
        with gzip.open(SHARED / "data" / "csabstruct.jsonl.gz", "rb") as fh:
            for n, line in enumerate(fh):  # its abstract_id is 0 for all: the line number names each
                row = orjson.loads(line)
                docs.append(Doc(f"csabstruct:{n}", "Abstract", " ".join(row["sentences"])))
        return docs
    return [d for d in load_corpus(name) if d.title]


def fill_sentences(
    store: object,
    role_models: object,
    cache: VectorCache,
    corpus: str,
    *,
    batch_size: int = 256,
    report: Callable[[str], None] | None = None,
) -> int:
    """Run the indexer's sentence pass over an instance's backlog (``store``: its SentenceStore,
    ``role_models``: its RoleModels), sentence vectors from the cache corpus ``corpus`` and the role
    model: the one shipped for the bundled model, else trained on vectors from ``csabstruct_sentences``;
    the papers done."""
    from paperfeed.adapters.sentences.splitter import SentencexSplitter
    from paperfeed.services.sentences import SentenceIndexer

    roles_embedder = CachingEmbedder(cache, "csabstruct_sentences", report)
    found = role_models.current(cache.embedder.model_id)  # type: ignore[attr-defined]
    if found is None:
        role_models.train(roles_embedder)  # type: ignore[attr-defined]
    indexer = SentenceIndexer(
        store,  # type: ignore[arg-type]
        CachingEmbedder(cache, corpus, report),
        SentencexSplitter(),
        role_models,  # type: ignore[arg-type]
        batch_size=batch_size,
    )
    return indexer.run().papers
