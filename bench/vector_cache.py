"""Embed-or-load a benchmark corpus through paperfeed's Embedder, cached outside the repository.

Embedding the 185k benchmark papers takes about an hour on two cores, so every bench that needs real
vectors goes through this cache instead of re-embedding. Vectors are keyed by ``model_id`` (one folder
per vector space) and by each text's content hash (so an edited record is re-embedded and a duplicate is
embedded once). Each corpus is a folder of shards, ``part-*.npz`` (``ids``, ``hashes``, ``vectors``), each
written atomically under a unique name: an interrupted run keeps every finished shard, the next run
resumes, and two processes filling one corpus at once share the work.

    from bench.vector_cache import VectorCache, load_corpus
    docs = load_corpus("scifact")
    vectors = VectorCache.default().vectors("scifact", docs)  # (len(docs), 384), row i for docs[i]

    .venv/bin/python -m bench.vector_cache [--backend onnx-int8] [--threads 1] [CORPUS ...]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from paperfeed.adapters.embed import EmbedderConfig, open_embedder
from paperfeed.bootstrap.indexes import embedder_config
from paperfeed.domain.embedding import embedding_text
from paperfeed.domain.models import content_hash
from paperfeed.domain.search import Embedder
from paperfeed.settings_model import SettingsModel

__all__ = [
    "CORPORA",
    "SAMPLES",
    "Doc",
    "VectorCache",
    "bench_embedder_config",
    "default_embedder",
    "load_corpus",
    "read_jsonl",
    "sample_key",
]

F32 = npt.NDArray[np.float32]

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PAPERFEED_SHARED", ROOT.parent / "shared"))
CACHE_ROOT = Path(os.environ.get("PAPERFEED_BENCH_CACHE", "/work/bench-cache"))

CORPORA: dict[str, Path] = {  # in the order the background job fills them: small, needed first
    "scifact": SHARED / "data" / "scifact_corpus.jsonl.gz",
    "seeds": SHARED / "seeds" / "seed_papers.jsonl",
    "hf_daily": SHARED / "data" / "hf_daily.jsonl.gz",
    "arxiv_cats": SHARED / "data" / "arxiv_cats.jsonl.gz",
    "arxiv_oai": SHARED / "data" / "arxiv_oai_2007_2017_sample100k.jsonl.gz",
}

SAMPLES: dict[str, tuple[str, int]] = {  # name -> (corpus it is drawn from, size)
    # arXiv papers with known categories for the similar-papers benchmark (bench/similar_quality.py):
    # small enough to embed on two cores in about a quarter of an hour
    "arxiv_cats_4k": ("arxiv_cats", 4000),
}


@dataclass(frozen=True, slots=True)
class Doc:
    id: str
    title: str
    abstract: str

    @property
    def text(self) -> str:
        return embedding_text(self.title, self.abstract)

    @property
    def hash(self) -> str:
        return content_hash(self.title, self.abstract)


def _clean(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""  # as the importer normalises text


def read_jsonl(path: Path, limit: int | None = None) -> list[Doc]:
    """Records of a (gzipped) JSONL file as docs; those without a title are skipped."""
    opener = gzip.open if path.suffix == ".gz" else open
    docs: list[Doc] = []
    with opener(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            rec = orjson.loads(line)
            title = _clean(rec.get("title"))
            if not title:
                continue
            docs.append(Doc(str(rec.get("id") or len(docs)), title, _clean(rec.get("abstract"))))
            if limit is not None and len(docs) >= limit:
                break
    return docs


def sample_key(doc_id: str) -> str:
    """The order a sample is drawn in: md5 of the id, so a sample is the same on every machine."""
    return hashlib.md5(doc_id.encode()).hexdigest()  # an ordering, not security


def load_corpus(name: str, limit: int | None = None) -> list[Doc]:
    """A corpus's docs, or a sample's: the ``size`` docs of its base corpus lowest by :func:`sample_key`."""
    if name in SAMPLES:
        base, size = SAMPLES[name]
        docs = sorted(read_jsonl(CORPORA[base]), key=lambda d: sample_key(d.id))[:size]
        return docs[:limit] if limit is not None else docs
    if name not in CORPORA:
        names = ", ".join([*CORPORA, *SAMPLES])
        raise SystemExit(f"unknown corpus {name!r} (choose from {names})")
    return read_jsonl(CORPORA[name], limit)


def bench_embedder_config(backend: str, threads: int | None = None, **settings: Any) -> EmbedderConfig:
    """The shipped embedding settings (``settings`` overriding them, e.g. ``embedding_max_tokens=128``)
    for ``backend``, with ONNX exports cached beside the vector cache and no adopted model."""
    shipped = SettingsModel(data_dir=CACHE_ROOT, model_cache=CACHE_ROOT / "models", **settings)
    config = embedder_config(shipped, backend=backend, threads=threads)
    return replace(config, legacy_cache_dirs=(), adapted_manifest=None)


def default_embedder(
    backend: str | None = None, threads: int | None = None, model: str | None = None
) -> Embedder:
    """``backend`` (default: torch float32, the reference), with ONNX exports cached beside the cache;
    ``model``: a model folder (an adapted model of ``paperfeed model adapt``), default the bundled one.

    paperfeed's own default, ``auto``, picks a backend per machine; a bench needs one fixed vector space,
    so it takes the reference, whose vectors ONNX float32 reproduces (cosine > 0.999)."""
    configured = SettingsModel.model_fields["embedding_backend"].default
    chosen = backend or ("torch" if configured == "auto" else configured)
    config = bench_embedder_config(chosen, threads)
    return open_embedder(replace(config, model=model) if model else config)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+_-]", "_", name)


class VectorCache:
    """Per-model, per-corpus shards of vectors keyed by content hash; see the module docstring."""

    def __init__(self, embedder: Embedder, root: Path = CACHE_ROOT) -> None:
        self.embedder = embedder
        self.root = root

    @classmethod
    def default(
        cls, backend: str | None = None, threads: int | None = None, model: str | None = None
    ) -> VectorCache:
        return cls(default_embedder(backend, threads, model))

    def folder(self, corpus: str) -> Path:
        return self.root / _safe(self.embedder.model_id) / _safe(corpus)

    def _refresh(self, corpus: str, found: dict[str, F32], seen: set[str]) -> None:
        """Add the vectors of shards not read yet (another process may be filling the same corpus)."""
        for path in sorted(self.folder(corpus).glob("part-*.npz")):
            if path.name in seen:
                continue
            with np.load(path, allow_pickle=False) as data:
                hashes, vectors = data["hashes"], data["vectors"].astype(np.float32)
            for h, v in zip(hashes, vectors, strict=True):
                found[str(h)] = v
            seen.add(path.name)

    def cached(self, corpus: str) -> dict[str, F32]:
        """Every vector stored for ``corpus``, by content hash."""
        found: dict[str, F32] = {}
        self._refresh(corpus, found, set())
        return found

    def _write_shard(self, corpus: str, docs: Sequence[Doc], vectors: F32) -> Path:
        folder = self.folder(corpus)
        folder.mkdir(parents=True, exist_ok=True)
        token = f"{time.time_ns()}-{uuid.uuid4().hex[:6]}"  # unique: concurrent writers never collide
        tmp, path = folder / f".tmp-{token}.npz", folder / f"part-{token}.npz"
        np.savez(
            tmp,
            ids=np.array([d.id for d in docs]),
            hashes=np.array([d.hash for d in docs]),
            vectors=vectors.astype(np.float32),
        )
        os.replace(tmp, path)
        return path

    def vectors(
        self,
        corpus: str,
        docs: Sequence[Doc],
        *,
        chunk: int = 1024,
        report: Callable[[str], None] | None = None,
    ) -> F32:
        """Vectors for ``docs`` (row ``i`` for ``docs[i]``), embedding only what the cache lacks.

        Chunks are taken in random order and the cache is re-read before each one, so two processes
        filling the same corpus at once mostly share the work instead of both doing all of it.
        """
        found: dict[str, F32] = {}
        seen: set[str] = set()
        self._refresh(corpus, found, seen)
        todo: dict[str, Doc] = {}
        for doc in docs:
            if doc.hash not in found:
                todo.setdefault(doc.hash, doc)
        missing = list(todo.values())
        if report and missing:
            model = self.embedder.model_id
            report(f"{corpus}: {len(found):,} cached, embedding {len(missing):,} with {model}")
        chunks = [missing[i : i + chunk] for i in range(0, len(missing), chunk)]
        random.shuffle(chunks)
        started, done = time.perf_counter(), 0
        for part in chunks:
            self._refresh(corpus, found, seen)
            part = [d for d in part if d.hash not in found]
            if not part:
                continue
            vectors = self.embedder.embed([d.text for d in part])
            seen.add(self._write_shard(corpus, part, vectors).name)
            for doc, vector in zip(part, vectors, strict=True):
                found[doc.hash] = vector
            done += len(part)
            if report:
                rate = done / max(time.perf_counter() - started, 1e-9)
                left = sum(1 for d in missing if d.hash not in found)
                report(f"{corpus}: {done:,} embedded here ({rate:,.1f}/s), {left:,} left")
        if not docs:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        return np.stack([found[d.hash] for d in docs]).astype(np.float32)

    def sentence_vectors(
        self,
        corpus: str,
        papers: Sequence[tuple[Doc, Sequence[tuple[int, int]]]],
        *,
        chunk: int = 256,
        report: Callable[[str], None] | None = None,
    ) -> list[F32]:
        """Each paper's sentence vectors as the indexer makes them (``domain.sentences.embed_sentences``:
        late chunking over the paper's own text), for the spans given (of its abstract), cached under
        the sentence vector space (``sentence_model_id``) by the paper's text and spans."""
        from paperfeed.domain.sentences import embed_sentences, pools_sentences, sentence_model_id

        embedder = self.embedder
        if not pools_sentences(embedder):
            raise SystemExit(f"{embedder.model_id}: this embedder does not pool sentence vectors")
        folder = self.root / _safe(sentence_model_id(embedder.model_id)) / _safe(corpus)

        def key(doc: Doc, spans: Sequence[tuple[int, int]]) -> str:
            text = f"{doc.hash}:" + ",".join(f"{a}-{b}" for a, b in spans)
            return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()

        found: dict[str, F32] = {}
        for path in sorted(folder.glob("part-*.npz")):
            with np.load(path, allow_pickle=False) as data:
                keys, counts, flat = data["keys"], data["counts"], data["vectors"].astype(np.float32)
            at = 0
            for k, n in zip(keys, counts, strict=True):
                found[str(k)] = flat[at : at + int(n)]
                at += int(n)
        keys = [key(d, s) for d, s in papers]
        missing = list({k: p for k, p in zip(keys, papers, strict=True) if k not in found}.items())
        if report and missing:
            report(
                f"{corpus}: {len(papers) - len(missing):,} cached, pooling {len(missing):,} papers' sentences"
            )
        started = time.perf_counter()
        for begin in range(0, len(missing), chunk):
            part = missing[begin : begin + chunk]
            _, pooled = embed_sentences(embedder, [(d.title, d.abstract, s) for _, (d, s) in part])
            folder.mkdir(parents=True, exist_ok=True)
            token = f"{time.time_ns()}-{uuid.uuid4().hex[:6]}"
            tmp, path = folder / f".tmp-{token}.npz", folder / f"part-{token}.npz"
            dim = embedder.dimension
            np.savez(
                tmp,
                keys=np.array([k for k, _ in part]),
                counts=np.array([len(v) for v in pooled], dtype=np.int64),
                vectors=np.vstack([v.reshape(-1, dim) for v in pooled]).astype(np.float32),
            )
            os.replace(tmp, path)
            for (k, _), v in zip(part, pooled, strict=True):
                found[k] = v
            if report:
                done = begin + len(part)
                rate = done / max(time.perf_counter() - started, 1e-9)
                report(f"{corpus}: {done:,} papers pooled here ({rate:,.1f}/s), {len(missing) - done:,} left")
        return [found[k] for k in keys]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fill the benchmark vector cache (resumable).")
    parser.add_argument(
        "corpora", nargs="*", default=list(CORPORA), help=f"any of {', '.join([*CORPORA, *SAMPLES])}"
    )
    parser.add_argument("--backend", default=None, help="embedding backend (default: paperfeed's default)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    parser.add_argument("--chunk", type=int, default=1024, help="papers per shard")
    parser.add_argument("--model", default=None, help="a model folder (default: the bundled model)")
    args = parser.parse_args(argv)
    cache = VectorCache.default(args.backend, args.threads, args.model)

    def report(message: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)

    for name in args.corpora:
        docs = load_corpus(name)
        vectors = cache.vectors(name, docs, chunk=args.chunk, report=report)
        report(f"{name}: {len(docs):,} docs, {vectors.shape} ready in {cache.folder(name)}")


if __name__ == "__main__":
    main()
