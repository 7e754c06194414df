"""Papers' sentences for benches: the product's own sentence pass, its embedding served from the cache.

Sentence vectors cost about as much CPU again as the papers' (bench/facet_cost.py), and every bench of
similar papers by sentences (bench/facet_similar.py, bench/similar_citations.py) needs them for the
same corpora. :class:`CachingEmbedder` is an :class:`~paperfeed.domain.search.Embedder` whose vectors
come from the bench vector cache (bench/vector_cache.py; a text is embedded once, by the real model,
and kept by its content hash), so :func:`fill_sentences` can run the indexer's real second pass
(:class:`~paperfeed.services.sentences.SentenceIndexer`: the shipped splitter, the role model trained in
the instance's data folder, the store's rows) on any bench instance at the cost of a cache read.

    .venv/bin/python -m bench.sentence_vectors seeds scifact_1800 csabstruct   # fill the cache once
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from bench.vector_cache import Doc, VectorCache, load_corpus, sample_key

__all__ = ["CachingEmbedder", "corpus_docs", "fill_sentences", "sentence_texts"]

F32 = npt.NDArray[np.float32]

MAX_SENTENCES = 40  # services.sentences.MAX_SENTENCES


class CachingEmbedder:
    """The cache's embedder (same ``model_id``), each text's vector read from the corpus ``corpus``."""

    def __init__(self, cache: VectorCache, corpus: str, report: Callable[[str], None] | None = None) -> None:
        self.cache = cache
        self.corpus = corpus
        self.report = report

    @property
    def model_id(self) -> str:
        return self.cache.embedder.model_id

    @property
    def dimension(self) -> int:
        return self.cache.embedder.dimension

    def embed(self, texts: Sequence[str]) -> F32:
        docs = [Doc(str(i), t, "") for i, t in enumerate(texts)]  # embedding_text(t, "") is t
        return self.cache.vectors(self.corpus, docs, report=self.report)


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
    model's training sentences from ``csabstruct_sentences``; the papers done."""
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fill the cache with corpora's sentence vectors.")
    parser.add_argument("corpora", nargs="+", help="seeds, scifact_1800, csabstruct, paperscape, …")
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    cache = VectorCache.default(args.backend, args.threads)

    def report(message: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)

    for name in args.corpora:
        if name == "csabstruct":  # the dataset's own sentences (the role model's training and tests)
            import gzip

            import orjson

            from bench.vector_cache import SHARED

            texts = []
            with gzip.open(SHARED / "data" / "csabstruct.jsonl.gz", "rb") as fh:
                for line in fh:
                    texts.extend(orjson.loads(line)["sentences"])
            CachingEmbedder(cache, "csabstruct_sentences", report).embed(texts)
            report(f"csabstruct: {len(texts):,} sentences cached")
            continue
        if name == "paperscape":
            from bench.similar_citations import read_papers

            abstracts = [r.abstract for r in read_papers().values() if r.abstract]
        else:
            abstracts = [d.abstract for d in corpus_docs(name) if d.abstract]
        texts = sentence_texts(abstracts)
        CachingEmbedder(cache, f"{name.split('_')[0]}_sentences", report).embed(texts)
        report(f"{name}: {len(texts):,} sentences of {len(abstracts):,} abstracts cached")


if __name__ == "__main__":
    main()
