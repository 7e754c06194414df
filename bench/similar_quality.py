"""Similar papers, before → after: embedding neighbours alone vs. fused with a more-like-this keyword query.

Two measures, both through paperfeed's real composition (``build_app``: store, keyword engine, vector
index, :class:`~paperfeed.services.search.HybridSearch`), with vectors from the benchmark cache:

* **arXiv categories** (``--corpus``, default ``arxiv_cats_4k``: 4,000 papers of
  ``../shared/data/arxiv_cats.jsonl.gz`` drawn by md5 of the id, see bench/vector_cache.py): for each
  paper, the share of its 10 most similar papers whose primary category equals its own. The papers are
  split deterministically (md5 of ``"split:" + id``, even → train, odd → test); every paper is in the
  corpus, but the fusion settings (RRF k, keyword weight, terms of the more-like-this query, candidates
  per list) are chosen on the *train* papers only, from cached per-paper lists fused by the service's
  own function (the table's train column), and the table reports the *test* papers, each run through
  ``HybridSearch.similar``.
* **Seed pages** (``../shared/seeds``, never used for tuning): for each seed paper, the share of its 10
  most similar papers that come from a page it is on, read from ``GET /api/papers/{id}/similar`` of the
  web app (Starlette's TestClient), as issue #15's baseline (0.609) was.

"before" is the embedding neighbours alone by plain cosine (``similar_keyword_weight=0``,
``similar_neighbourhood=0``), the behaviour issue #15 measured. The settings are chosen in two stages on
the train papers: first the neighbourhood re-ranking of the dense list (``domain/neighbourhood.py``:
neighbourhood size, weight power, candidates), then the keyword fusion on top of the chosen dense list.

    .venv/bin/python -m bench.similar_quality [--engine auto|fts5|tantivy] [--backend torch]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import itertools
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import orjson
from fastapi.testclient import TestClient

from bench.vector_cache import CORPORA, SAMPLES, SHARED, Doc, VectorCache, load_corpus
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.fusion import WeightedList, fuse_weighted
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.neighbourhood import rerank_by_neighbourhood
from paperfeed.domain.search import ScoredId, VectorRecord
from paperfeed.services.search import SimilarSettings
from paperfeed.settings import Settings
from paperfeed.web import create_app

POOL = 200  # candidates cached per list for tuning (the largest candidates setting tried)
TOP = 10
GRID_K = [5.0, 10.0, 20.0, 30.0, 60.0, 100.0]
GRID_WEIGHT = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0]  # keyword weight; dense weight stays 1
GRID_TERMS = [10, 25, 50]
GRID_NEIGHBOURHOOD = [0, 10, 20, 30, 50, 75, 100]  # 0: plain cosine
GRID_POWER = [1.0, 3.0, 5.0]
GRID_NEIGHBOURHOOD_CANDIDATES = [100, 200]
DUPLICATE = 0.9999  # HybridSettings.duplicate_cosine
BEFORE = SimilarSettings(keyword_weight=0.0, neighbourhood=0)  # plain cosine neighbours: issue #15's baseline
LANDED = SimilarSettings(rrf_k=10.0, keyword_weight=0.25, neighbourhood=0)  # the fusion of session 8


def split_of(doc_id: str) -> str:
    return "train" if int(hashlib.md5(f"split:{doc_id}".encode()).hexdigest(), 16) % 2 == 0 else "test"


def primary_categories(corpus: str) -> dict[str, str]:
    base = SAMPLES[corpus][0] if corpus in SAMPLES else corpus
    out: dict[str, str] = {}
    with gzip.open(CORPORA[base], "rb") as f:
        for line in f:
            rec = orjson.loads(line)
            cats = rec.get("categories") or []
            primary = rec.get("primary_category") or (cats[0] if cats else None)
            if primary:
                out[str(rec["id"])] = str(primary)
    return out


def instance(
    root: Path, backend: str, engine: str, settings: SimilarSettings | None = None, graph_weight: float = 0.0
) -> Settings:
    """``graph_weight``: ``PAPERFEED_SIMILAR_GRAPH_WEIGHT`` (bench/similar_graph.py compares it)."""
    s = settings or SimilarSettings()
    return Settings(
        similar_graph_weight=graph_weight,
        data_dir=root,
        embedding_backend=backend,  # type: ignore[arg-type]
        keyword_engine=engine,  # type: ignore[arg-type]
        similar_rrf_k=s.rrf_k,
        similar_dense_weight=s.dense_weight,
        similar_keyword_weight=s.keyword_weight,
        similar_candidates=s.candidates,
        similar_keyword_terms=s.keyword_terms,
        similar_neighbourhood=s.neighbourhood,
        similar_neighbourhood_power=s.neighbourhood_power,
    )


def populate(settings: Settings, papers: Sequence[Paper], vectors: np.ndarray, model_id: str) -> None:
    """Write the papers to a new instance's store, its keyword index and a vector index of ``vectors``."""
    app = build_app(settings)
    try:
        for start in range(0, len(papers), 1000):
            result = app.store.apply_batch(Batch(papers=list(papers[start : start + 1000])))
            app.keyword_index.on_papers_changed(result)
        app.keyword_index.flush()
        index = app._open_vector_index(model_id=model_id, dimension=int(vectors.shape[1]), fresh=True)
        index.upsert(
            VectorRecord(p.id, v, None, p.categories, False) for p, v in zip(papers, vectors, strict=True)
        )
        index.save()
    finally:
        app.close()


@dataclass
class Lists:
    """Per query paper: its dense neighbours (plain cosine, and re-ranked by neighbourhoods once
    :meth:`reranked` is asked for a setting) and, per terms setting, its more-like-this list."""

    dense: dict[str, list[ScoredId]]
    keyword: dict[int, dict[str, list[ScoredId]]]
    vectors: dict[str, np.ndarray]
    centre: np.ndarray | None

    def reranked(self, pid: str, s: SimilarSettings) -> list[ScoredId]:
        """The dense list as the service builds it for ``s`` (duplicates out, then re-ranked)."""
        dense = [x for x in self.dense[pid][: max(s.candidates, TOP + 10)] if x.score < DUPLICATE]
        if s.neighbourhood <= 0 or len(dense) < 2:
            return dense
        return rerank_by_neighbourhood(
            self.vectors[pid],
            dense,
            self.vectors,
            centre=self.centre,
            k=s.neighbourhood,
            power=s.neighbourhood_power,
        )


def cached_lists(app: App, docs: Sequence[Paper], vectors: np.ndarray) -> Lists:
    index = app._search_vectors()
    assert index is not None
    dense = {p.id: index.search(v, POOL, exclude=[p.id]) for p, v in zip(docs, vectors, strict=True)}
    stored = index.vectors([p.id for p in docs])
    keyword: dict[int, dict[str, list[ScoredId]]] = {}
    for terms in GRID_TERMS:
        keyword[terms] = {
            p.id: [
                s
                for s in app.keyword_index.more_like_this(p.title, p.abstract, POOL + 1, max_terms=terms)
                if s.paper_id != p.id
            ]
            for p in docs
        }
    return Lists(dense, keyword, stored, index.centroid())


def fused_top(lists: Lists, pid: str, s: SimilarSettings, dense: list[ScoredId] | None = None) -> list[str]:
    """The service's fusion for ``s``; ``dense`` is the (re-ranked) dense list when already computed."""
    same = {x.paper_id for x in lists.dense[pid][: s.candidates] if x.score >= DUPLICATE}
    dense = lists.reranked(pid, s) if dense is None else dense
    named = [
        WeightedList("dense", s.dense_weight, dense),
        WeightedList("keyword", s.keyword_weight, lists.keyword[s.keyword_terms][pid][: s.candidates]),
    ]
    return [f.paper_id for f in fuse_weighted(named, k=s.rrf_k) if f.paper_id not in same][:TOP]


def agreement(runs: dict[str, list[str]], category: dict[str, str]) -> float:
    shares = [sum(category.get(o) == category[q] for o in top[:TOP]) / TOP for q, top in runs.items()]
    return float(np.mean(shares)) if shares else 0.0


def tune(lists: Lists, train: Iterable[str], category: dict[str, str]) -> tuple[SimilarSettings, float]:
    """Stage 1: the neighbourhood re-ranking of the dense list alone (and the candidates per list);
    stage 2: the keyword fusion (k, weight, terms) on top of the chosen dense list. Train papers only."""
    train = list(train)
    best: tuple[float, SimilarSettings] | None = None
    for size, power, cand in itertools.product(GRID_NEIGHBOURHOOD, GRID_POWER, GRID_NEIGHBOURHOOD_CANDIDATES):
        if size == 0 and power != GRID_POWER[0]:
            continue
        s = SimilarSettings(
            keyword_weight=0.0, candidates=cand, neighbourhood=size, neighbourhood_power=power
        )
        score = agreement({q: fused_top(lists, q, s) for q in train}, category)
        print(f"  stage 1: neighbourhood {size:>2} power {power:g} candidates {cand}: train {score:.4f}")
        if best is None or score > best[0] + 1e-12:
            best = (score, s)
    assert best is not None
    chosen = best[1]
    dense = {q: lists.reranked(q, chosen) for q in train}
    for k, w, terms in itertools.product(GRID_K, GRID_WEIGHT, GRID_TERMS):
        s = replace(chosen, rrf_k=k, keyword_weight=w, keyword_terms=terms)
        score = agreement({q: fused_top(lists, q, s, dense[q]) for q in train}, category)
        if score > best[0] + 1e-12:
            best = (score, s)
    return best[1], best[0]


def service_agreement(app: App, ids: Sequence[str], category: dict[str, str]) -> tuple[float, float]:
    started = time.perf_counter()
    runs = {pid: [h.paper.id for h in app.search.similar(pid, limit=TOP)] for pid in ids}
    ms = (time.perf_counter() - started) * 1000 / max(len(ids), 1)
    return agreement(runs, category), ms


def seed_coherence(
    root: Path,
    cache: VectorCache,
    backend: str,
    engine: str,
    configs: dict[str, SimilarSettings],
    graph: dict[str, float] | None = None,
    background: str | None = None,
) -> dict[str, float]:
    """``graph``: label → weight of the citation-graph list (``PAPERFEED_SIMILAR_GRAPH_WEIGHT``).
    ``background``: a corpus whose papers share the store with the seed papers, as a real instance's
    other papers would (only seed papers are asked; a background paper in a top 10 counts as a miss)."""
    docs = load_corpus("seeds")
    pages: dict[str, set[str]] = defaultdict(set)
    for line in (SHARED / "seeds" / "seed_papers.jsonl").read_bytes().splitlines():
        row = orjson.loads(line)
        pages["seed:" + str(row["id"])].add(row["seed_page"])
    unique = list({d.id: d for d in docs}.values())
    vectors = cache.vectors("seeds", unique)
    papers = [Paper(id="seed:" + d.id, title=d.title, abstract=d.abstract) for d in unique]
    stored, stored_vectors = list(papers), vectors
    if background is not None:
        others = [d for d in load_corpus(background) if d.title and d.abstract]
        stored += [Paper(id="bg:" + d.id, title=d.title, abstract=d.abstract) for d in others]
        stored_vectors = np.vstack([vectors, cache.vectors(background, others)])
    folder = root / ("seeds" if background is None else f"seeds-in-{background}")
    populate(instance(folder, backend, engine), stored, stored_vectors, cache.embedder.model_id)
    out: dict[str, float] = {}
    for label, s in configs.items():
        settings = instance(folder, backend, engine, s, (graph or {}).get(label, 0.0))
        with TestClient(create_app(functools.partial(build_app, settings))) as client:
            shares = []
            for p in papers:
                answer = client.get(f"/api/papers/{p.id}/similar", params={"limit": TOP})
                assert answer.status_code == 200, (p.id, answer.status_code, answer.text[:200])
                top = [item["paper"]["id"] if "paper" in item else item["id"] for item in answer.json()]
                shares.append(sum(1 for o in top[:TOP] if pages[o] & pages[p.id]) / TOP)
        out[label] = float(np.mean(shares))
    return out


def categories(
    root: Path, cache: VectorCache, backend: str, engine: str, corpus: str, limit: int | None = None
) -> tuple[SimilarSettings, dict[str, dict[str, float]], float]:
    docs: list[Doc] = load_corpus(corpus, limit)
    primary = primary_categories(corpus)
    docs = [d for d in docs if d.id in primary]
    vectors = cache.vectors(corpus, docs, report=print)
    papers = [Paper(id="arxiv:" + d.id, title=d.title, abstract=d.abstract) for d in docs]
    category = {"arxiv:" + d.id: primary[d.id] for d in docs}
    split = {p.id: split_of(p.id) for p in papers}
    train = [p.id for p in papers if split[p.id] == "train"]
    test = [p.id for p in papers if split[p.id] == "test"]
    print(f"{corpus}: {len(papers):,} papers ({len(train):,} train / {len(test):,} test), engine {engine}")
    folder = root / "cats"
    populate(instance(folder, backend, engine), papers, vectors, cache.embedder.model_id)
    app = build_app(instance(folder, backend, engine))
    try:
        lists = cached_lists(app, papers, vectors)
        chosen, train_best = tune(lists, train, category)
        print(
            f"chosen on train: neighbourhood={chosen.neighbourhood} power={chosen.neighbourhood_power:g} "
            f"candidates={chosen.candidates} rrf_k={chosen.rrf_k:g} keyword_weight={chosen.keyword_weight:g} "
            f"keyword_terms={chosen.keyword_terms} (train category@10 {train_best:.4f})"
        )
        configs = {
            "dense alone (before)": BEFORE,
            "keyword alone": replace(chosen, dense_weight=0.0, keyword_weight=1.0),
            "plain RRF k=60, 1:1": replace(BEFORE, rrf_k=60.0, keyword_weight=1.0),
            "landed fusion (k 10, kw 0.25)": LANDED,
            "neighbourhoods alone": replace(chosen, keyword_weight=0.0),
            "tuned (after)": chosen,
        }
        table: dict[str, dict[str, float]] = {}
        for label, s in configs.items():
            tr = agreement({q: fused_top(lists, q, s) for q in train}, category)  # the tuning lists
            app.search.similar_settings = s
            te, ms = service_agreement(app, test, category)  # the real service
            table[label] = {"train": tr, "test": te, "ms": ms}
    finally:
        app.close()
    return chosen, table, train_best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engine", default="auto", choices=["auto", "fts5", "tantivy"])
    parser.add_argument("--backend", default="torch", help="embedding backend of the cached vectors")
    parser.add_argument("--corpus", default="arxiv_cats_4k", help="a corpus of bench/vector_cache.py")
    parser.add_argument("--limit", type=int, default=None, help="first N papers only (a quick try)")
    parser.add_argument("--skip-seeds", action="store_true")
    args = parser.parse_args()
    cache = VectorCache.default(args.backend, threads=1)
    print(f"model {cache.embedder.model_id} (backend {args.backend}); keyword engine {args.engine}")
    with tempfile.TemporaryDirectory(prefix="pf-similar-") as tmp:
        root = Path(tmp)
        chosen, table, _ = categories(root, cache, args.backend, args.engine, args.corpus, args.limit)
        header = f"{'arXiv primary category@10':28s} {'train (lists)':>13s} {'test (service)':>14s}"
        header += f" {'ms/paper':>9s}"
        print("\n" + header + "\n" + "-" * len(header))
        for label, row in table.items():
            print(f"{label:28s} {row['train']:13.4f} {row['test']:14.4f} {row['ms']:9.1f}")
        before, after = table["dense alone (before)"]["test"], table["tuned (after)"]["test"]
        print(f"test: {before:.4f} → {after:.4f} ({(after / before - 1) * 100:+.1f}% relative)")
        if not args.skip_seeds:
            configs = {
                "dense alone (before)": BEFORE,
                "landed fusion (k 10, kw 0.25)": LANDED,
                "tuned (after)": chosen,
            }
            for background in (None, args.corpus):
                seeds = seed_coherence(root, cache, args.backend, args.engine, configs, background=background)
                where = "alone in the store" if background is None else f"among the {background} papers"
                print(f"\nSeed pages (held out) {where}, coherence@10 through GET /api/papers/{{id}}/similar")
                for label, value in seeds.items():
                    print(f"  {label:28s} {value:.4f}")
                b, a = seeds["dense alone (before)"], seeds["tuned (after)"]
                print(f"  {b:.4f} → {a:.4f} ({(a / b - 1) * 100:+.1f}% relative)")


if __name__ == "__main__":
    main()
