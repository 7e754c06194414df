"""Similar papers, before → after: plain embedding neighbours vs. re-ranked and fused with a keyword query.

Three measures, all through paperfeed's real composition (``build_app``: store, keyword engine, vector
index, :class:`~paperfeed.services.search.HybridSearch`), with vectors from the benchmark cache:

* **arXiv categories** (``--corpus``, default ``arxiv_cats_4k``: 4,000 papers of
  ``../shared/data/arxiv_cats.jsonl.gz`` drawn by md5 of the id, see bench/vector_cache.py): for each
  paper, the share of its 10 most similar papers whose primary category equals its own. The papers are
  split deterministically (md5 of ``"split:" + id``, even → train, odd → test); every paper is in the
  store. A broad, noisy judgment: it rewards what is on the paper's subject.
* **SciFact co-evidence** (expert judgments of paper → similar paper, the whole 5,183-abstract corpus
  ranked): SciFact's annotators judged which abstracts are evidence for each claim, a citing sentence;
  abstracts judged for one claim are cited together for it, so they are similar papers in the strict
  sense (co-citation). For each abstract with such partners, nDCG@10 of its similar list against them.
  Claims of BEIR's train split are train, those of its test split test. A specific judgment: it rewards
  what is particular to the paper. Evaluation only (SciFact's licence): it chooses settings, never
  trains a model, and nothing of it ships.
* **Seed pages** (``../shared/seeds``, never used for tuning): for each seed paper, the share of its 10
  most similar papers that come from a page it is on, read from ``GET /api/papers/{id}/similar`` of the
  web app (Starlette's TestClient), as issue #15's baseline (0.609) was; the seeds alone in a store, and
  among the ``--corpus`` papers.

"before" is the embedding neighbours alone by plain cosine (``similar_keyword_weight=0``,
``similar_neighbourhood=0``), the behaviour issue #15 measured. The settings are chosen on the *train*
papers of the first two measures only, from cached per-paper lists fused by the service's own function
(the tables' train column), in two stages: the neighbourhood re-ranking of the dense list
(``domain/neighbourhood.py``: neighbourhood size, weight power, blend with the plain cosine), then the
keyword fusion on top of it (RRF k, keyword weight, terms of the more-like-this query). A setting is worth
its *smallest* relative gain over plain cosine on the two train sets, so a gain on the broad judgments
cannot buy a loss on the specific ones. The tables report the *test* papers, each run through
``HybridSearch.similar``.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import orjson
from fastapi.testclient import TestClient

from bench.ir_metrics import ndcg_at_k
from bench.vector_cache import CORPORA, SAMPLES, SHARED, Doc, VectorCache, load_corpus
from paperfeed.adapters.embed.cpu import cpu_info
from paperfeed.bootstrap import App, build_app
from paperfeed.bootstrap.search import similar_settings
from paperfeed.domain.fusion import WeightedList, fuse_weighted
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.neighbourhood import rerank_by_neighbourhood
from paperfeed.domain.search import ScoredId, VectorRecord
from paperfeed.services.search import SimilarSettings
from paperfeed.settings import Settings
from paperfeed.settings_model import SettingsModel
from paperfeed.web import create_app

POOL = 200  # candidates cached per list for tuning (the largest candidates setting tried)
TOP = 10
GRID_K = [5.0, 10.0, 20.0, 30.0, 60.0, 100.0]
GRID_WEIGHT = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0]  # keyword weight; dense weight stays 1
GRID_TERMS = [10, 25, 50]
GRID_NEIGHBOURHOOD = [0, 5, 10, 20, 50, 100]  # 0: plain cosine
GRID_POWER = [1.0, 3.0]  # 5 never won in session 12's grid
GRID_BLEND = [0.25, 0.5, 0.75, 1.0]  # share of the neighbourhood cosine; the rest is the plain one
GRID_NEIGHBOURHOOD_CANDIDATES = [100]  # 200 lost to 100 in session 12's grid
DUPLICATE = 0.9999  # HybridSettings.duplicate_cosine
SHIPPED = similar_settings(SettingsModel())  # PAPERFEED_SIMILAR_*'s defaults: what an instance runs
BEFORE = replace(
    SHIPPED, keyword_weight=0.0, neighbourhood=0
)  # plain cosine neighbours: issue #15's baseline
LANDED = replace(SHIPPED, rrf_k=10.0, keyword_weight=0.25, neighbourhood=0)  # the fusion of session 8
# session 12's default: the whole pool's neighbourhoods alone, no keyword list
NEIGHBOURHOODS = replace(
    SHIPPED, keyword_weight=0.0, neighbourhood=100, neighbourhood_power=3.0, neighbourhood_blend=1.0
)


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
    root: Path,
    backend: str,
    engine: str,
    settings: SimilarSettings | None = None,
    graph_weight: float | None = None,
) -> Settings:
    """``graph_weight``: ``PAPERFEED_SIMILAR_GRAPH_WEIGHT`` (bench/similar_graph.py compares it); None:
    the shipped default (these corpora have no citations, so the graph adds nothing there)."""
    s = settings or SHIPPED
    graph = {} if graph_weight is None else {"similar_graph_weight": graph_weight}
    return Settings(
        **graph,  # type: ignore[arg-type]
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
        similar_neighbourhood_blend=s.neighbourhood_blend,
    )


def populate(settings: Settings, papers: Sequence[Paper], vectors: np.ndarray, model_id: str) -> None:
    """Write the papers to a new instance's store, its keyword index and a vector index of ``vectors``."""
    app = build_app(settings)
    try:
        for start in range(0, len(papers), 1000):
            result = app.core.store.apply_batch(Batch(papers=list(papers[start : start + 1000])))
            app.indexes.keyword.on_papers_changed(result)
        app.indexes.keyword.flush()
        index = app.indexes.vector_index(model_id=model_id, dimension=int(vectors.shape[1]), fresh=True)
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
            blend=s.neighbourhood_blend,
        )


def cached_lists(app: App, docs: Sequence[Paper], vectors: np.ndarray) -> Lists:
    index = app.indexes.vectors.current()
    assert index is not None
    dense = {p.id: index.search(v, POOL, exclude=[p.id]) for p, v in zip(docs, vectors, strict=True)}
    stored = index.vectors(list({*dense, *(x.paper_id for xs in dense.values() for x in xs)}))
    keyword: dict[int, dict[str, list[ScoredId]]] = {}
    for terms in GRID_TERMS:
        keyword[terms] = {
            p.id: [
                s
                for s in app.indexes.keyword.more_like_this(p.title, p.abstract, POOL + 1, max_terms=terms)
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


def coevidence_ndcg(runs: dict[str, list[str]], related: dict[str, dict[str, int]]) -> float:
    """Mean nDCG@10 of each paper's similar list against the papers judged with it for one claim."""
    scores = [ndcg_at_k(top, related[q], TOP) for q, top in runs.items()]
    return float(np.mean(scores)) if scores else 0.0


@dataclass
class Corpus:
    """A store of papers with similar-paper judgments, split into train and test papers."""

    name: str
    folder: Path
    papers: list[Paper]
    vectors: np.ndarray
    train: list[str]
    test: list[str]
    score: Callable[[dict[str, list[str]]], float]


@dataclass
class Judged:
    """One corpus to tune on with the lists its train papers have cached."""

    corpus: Corpus
    lists: Lists

    def measure(self, s: SimilarSettings, dense: dict[str, list[ScoredId]] | None = None) -> float:
        train = self.corpus.train
        return self.corpus.score({q: fused_top(self.lists, q, s, dense[q] if dense else None) for q in train})


def tune(sets: Sequence[Judged]) -> tuple[SimilarSettings, float]:
    """Stage 1: the neighbourhood re-ranking of the dense list alone (size, power, blend, candidates);
    stage 2: the keyword fusion (k, weight, terms) on top of the chosen dense list. Train papers only.

    A setting's worth is its *smallest* relative gain over plain cosine across ``sets``: it must help
    on every kind of judgment (the broad arXiv categories and the specific expert pairs), not trade one
    for the other."""
    base = {j.corpus.name: j.measure(BEFORE) for j in sets}

    def worth(
        s: SimilarSettings, dense: dict[str, dict[str, list[ScoredId]]] | None = None
    ) -> tuple[float, str]:
        gains = {
            j.corpus.name: j.measure(s, dense[j.corpus.name] if dense else None) / base[j.corpus.name] - 1
            for j in sets
        }
        return min(gains.values()), " ".join(f"{n} {g * 100:+.1f}%" for n, g in gains.items())

    best: tuple[float, SimilarSettings] = (0.0, BEFORE)
    stage1 = itertools.product(GRID_NEIGHBOURHOOD, GRID_POWER, GRID_BLEND, GRID_NEIGHBOURHOOD_CANDIDATES)
    for size, power, blend, cand in stage1:
        if size == 0:
            continue
        s = replace(
            SHIPPED,
            keyword_weight=0.0,
            candidates=cand,
            neighbourhood=size,
            neighbourhood_power=power,
            neighbourhood_blend=blend,
        )
        score, gains = worth(s)
        print(
            f"  stage 1: neighbourhood {size:>3} power {power:g} blend {blend:g} candidates {cand}: {gains}"
        )
        if score > best[0] + 1e-12:
            best = (score, s)
    chosen = best[1]
    dense = {j.corpus.name: {q: j.lists.reranked(q, chosen) for q in j.corpus.train} for j in sets}
    for k, w, terms in itertools.product(GRID_K, GRID_WEIGHT, GRID_TERMS):
        s = replace(chosen, rrf_k=k, keyword_weight=w, keyword_terms=terms)
        score, _ = worth(s, dense)
        if score > best[0] + 1e-12:
            best = (score, s)
    return best[1], best[0]


def service_runs(app: App, ids: Sequence[str]) -> tuple[dict[str, list[str]], float]:
    """Each paper's 10 similar papers from the real service, and the milliseconds per call."""
    started = time.perf_counter()
    runs = {pid: [h.paper.id for h in app.search.hybrid.similar(pid, limit=TOP)] for pid in ids}
    return runs, (time.perf_counter() - started) * 1000 / max(len(ids), 1)


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
        settings = instance(folder, backend, engine, s, (graph or {}).get(label))
        with TestClient(create_app(functools.partial(build_app, settings))) as client:
            shares = []
            for p in papers:
                answer = client.get(f"/api/papers/{p.id}/similar", params={"limit": TOP})
                assert answer.status_code == 200, (p.id, answer.status_code, answer.text[:200])
                top = [item["paper"]["id"] if "paper" in item else item["id"] for item in answer.json()]
                shares.append(sum(1 for o in top[:TOP] if pages[o] & pages[p.id]) / TOP)
        out[label] = float(np.mean(shares))
    return out


def category_corpus(root: Path, cache: VectorCache, corpus: str, limit: int | None) -> Corpus:
    """arXiv papers; a paper's similar list is judged by the share with its own primary category."""
    docs: list[Doc] = load_corpus(corpus, limit)
    primary = primary_categories(corpus)
    docs = [d for d in docs if d.id in primary]
    vectors = cache.vectors(corpus, docs, report=print)
    papers = [Paper(id="arxiv:" + d.id, title=d.title, abstract=d.abstract) for d in docs]
    category = {"arxiv:" + d.id: primary[d.id] for d in docs}
    train = [p.id for p in papers if split_of(p.id) == "train"]
    test = [p.id for p in papers if split_of(p.id) == "test"]
    print(f"{corpus}: {len(papers):,} papers ({len(train):,} train / {len(test):,} test)")
    return Corpus(
        "category@10",
        root / "cats",
        papers,
        vectors,
        train,
        test,
        functools.partial(agreement, category=category),
    )


def train_lists(app: App, c: Corpus) -> Lists:
    """The lists the tuning reads: those of the train papers only."""
    train = set(c.train)
    rows = [i for i, p in enumerate(c.papers) if p.id in train]
    return cached_lists(app, [c.papers[i] for i in rows], c.vectors[rows])


def coevidence() -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """SciFact abstracts judged (by its annotators) as evidence for one claim are similar papers: the
    claim is a citing sentence and they are cited together for it. Each abstract of a claim with two or
    more in the corpus → the others of its claims (relevance 1), for BEIR's train and test splits (in
    that order); an abstract that also has a test claim is kept out of train."""
    claims: dict[str, set[str]] = defaultdict(set)
    split_of_claim: dict[str, str] = {}
    with gzip.open(SHARED / "data" / "qrels_scifact.jsonl.gz", "rb") as fh:
        for line in fh:
            row = orjson.loads(line)
            if row.get("doc_in_corpus", True):
                claims[row["query_id"]].add("scifact:" + str(row["doc_id"]))
                split_of_claim[row["query_id"]] = row["beir_split"]
    related: dict[str, dict[str, dict[str, int]]] = {"train": defaultdict(dict), "test": defaultdict(dict)}
    for claim, docs in claims.items():
        for doc in docs:
            for other in docs - {doc}:
                related[split_of_claim[claim]][doc][other] = 1
    test = dict(related["test"])
    return {d: r for d, r in related["train"].items() if d not in test}, test


def coevidence_corpus(root: Path, cache: VectorCache) -> Corpus:
    """The whole SciFact corpus (5,183 abstracts) ranked for each abstract with co-evidence partners:
    expert judgments of paper → similar paper, the kind issue #15 measured. Evaluation only (licence)."""
    docs = [d for d in load_corpus("scifact") if d.title]
    vectors = cache.vectors("scifact", docs, report=print)
    papers = [Paper(id="scifact:" + d.id, title=d.title, abstract=d.abstract) for d in docs]
    train, test = coevidence()
    related = train | test
    print(f"scifact co-evidence: {len(papers):,} abstracts, {len(train)} train / {len(test)} test papers")
    return Corpus(
        "co-evidence nDCG@10",
        root / "scifact",
        papers,
        vectors,
        sorted(train),
        sorted(test),
        functools.partial(coevidence_ndcg, related=related),
    )


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
    print(f"CPU: {cpu_info().describe()}")
    with tempfile.TemporaryDirectory(prefix="pf-similar-") as tmp:
        root = Path(tmp)
        corpora = [category_corpus(root, cache, args.corpus, args.limit), coevidence_corpus(root, cache)]
        apps: dict[str, App] = {}
        try:
            for c in corpora:
                populate(
                    instance(c.folder, args.backend, args.engine),
                    c.papers,
                    c.vectors,
                    cache.embedder.model_id,
                )
                apps[c.name] = build_app(instance(c.folder, args.backend, args.engine))
            sets = [Judged(c, train_lists(apps[c.name], c)) for c in corpora]
            chosen, worth = tune(sets)
            print(
                f"chosen on train: neighbourhood={chosen.neighbourhood} power={chosen.neighbourhood_power:g} "
                f"blend={chosen.neighbourhood_blend:g} candidates={chosen.candidates} rrf_k={chosen.rrf_k:g} "
                f"keyword_weight={chosen.keyword_weight:g} keyword_terms={chosen.keyword_terms} "
                f"(smallest train gain {worth * 100:+.1f}%)"
            )
            configs = {
                "dense alone (before)": BEFORE,
                "keyword alone": replace(chosen, dense_weight=0.0, keyword_weight=1.0),
                "landed fusion (k 10, kw 0.25)": LANDED,
                "whole-pool neighbourhoods": NEIGHBOURHOODS,
                "tuned (after)": chosen,
            }
            for judged in sets:
                c, app = judged.corpus, apps[judged.corpus.name]
                header = f"{c.name:30s} {'train (lists)':>13s} {'test (service)':>14s} {'ms/paper':>9s}"
                print("\n" + header + "\n" + "-" * len(header))
                held_out: dict[str, float] = {}
                for label, s in configs.items():
                    app.search.hybrid.similar_settings = s
                    runs, ms = service_runs(app, c.test)
                    held_out[label] = c.score(runs)
                    print(f"{label:30s} {judged.measure(s):13.4f} {held_out[label]:14.4f} {ms:9.1f}")
                b, a = held_out["dense alone (before)"], held_out["tuned (after)"]
                print(f"test: {b:.4f} → {a:.4f} ({(a / b - 1) * 100:+.1f}% relative)")
        finally:
            for app in apps.values():
                app.close()
        if not args.skip_seeds:
            configs = {
                "dense alone (before)": BEFORE,
                "whole-pool neighbourhoods": NEIGHBOURHOODS,
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
