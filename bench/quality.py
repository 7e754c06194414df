"""Search quality: BM25, dense and hybrid on SciFact (BEIR protocol) and on the seed pages.

SciFact: corpus = scifact_corpus, queries + judgments = qrels_scifact rows with ``beir_split`` train
(tuning) and test (reported). Published anchors on test: BM25 0.665, all-MiniLM-L6-v2 about 0.64, plain
RRF of the two about 0.695. Fusion settings (RRF k, the keyword list's weight, the dense cut-off) are
chosen on the train split only, by fusing the cached per-query lists with the same function the service
uses; the chosen setting is then run through the real :class:`~paperfeed.services.search.HybridSearch`
on both splits. The row "as shipped" runs the settings' own defaults (``PAPERFEED_SEARCH_*`` in
settings_model.py, the one place they live): what an instance runs unless configured otherwise. When
train chooses something else, the bench says so: the defaults are then out of date.
``python -m bench.served_quality`` measures the shipped setting through a served instance's HTTP API.

Seed pages: the four Hugging Face search result pages (one topic each). For every seed paper, the share
of its 10 most similar papers that come from a page it is on, with BM25 (its title + abstract as the
query), dense (nearest neighbours) and hybrid (the two lists fused).

    HF_HUB_OFFLINE=1 .venv/bin/python -m bench.quality [--engine fts5|tantivy] [--backend onnx-int8]
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import orjson

from bench.ir_metrics import evaluate, load_qrels
from bench.vector_cache import SHARED, Doc, VectorCache, load_corpus
from paperfeed.adapters.embed.cpu import cpu_info
from paperfeed.adapters.keyword.factory import open_keyword_index
from paperfeed.adapters.store import SqlPaperStore, open_store
from paperfeed.adapters.store.feed_queries import SqlFeedQueries
from paperfeed.adapters.vector import open_vector_index
from paperfeed.bootstrap.search import search_settings, similar_settings
from paperfeed.domain.fusion import reciprocal_rank_fusion
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.query import parse_query
from paperfeed.domain.search import Embedder, KeywordIndex, ScoredId, VectorIndex, VectorRecord
from paperfeed.services.embedders import FixedEmbedder
from paperfeed.services.search import HybridSearch, HybridSettings
from paperfeed.services.vector_reader import FixedVectors
from paperfeed.services.visible import VisiblePapers
from paperfeed.settings_model import SettingsModel

POOL = 100
SHIPPED = search_settings(SettingsModel())  # the PAPERFEED_SEARCH_* defaults: what an instance runs
GRID_K = [5, 10, 20, 30, 60, 100]
GRID_KEYWORD_WEIGHT = [0.5, 0.7, 0.85, 1.0, 1.2, 1.5, 2.0]  # the dense weight stays 1: RRF's order depends
# only on the ratio of the two weights, so 1 is the dense list's and the keyword weight is the ratio
GRID_FLOOR = [0.1, 0.15, 0.2, 0.25, 0.3]
Lists = dict[str, tuple[list[ScoredId], list[ScoredId]]]  # query id -> (keyword, dense)


def build(
    root: Path,
    name: str,
    docs: Sequence[Doc],
    vectors: np.ndarray,
    model_id: str,
    engine: str,
    prefix: str = "",
) -> tuple[SqlPaperStore, KeywordIndex, VectorIndex]:
    (root / name).mkdir()
    store = open_store(f"sqlite+pysqlite:///{root / name / 'paperfeed.db'}")
    papers = [Paper(id=prefix + d.id, title=d.title or "(untitled)", abstract=d.abstract) for d in docs]
    keyword = open_keyword_index(engine, store.engine, root / name)  # type: ignore[arg-type]
    for start in range(0, len(papers), 1000):
        result = store.apply_batch(Batch(papers=papers[start : start + 1000]))
        keyword.on_papers_changed(result.changed_ids)
    index = open_vector_index(
        root / name / "vectors", kind="exact", model_id=model_id, dimension=vectors.shape[1]
    )
    index.upsert(VectorRecord(p.id, v, None, (), False) for p, v in zip(papers, vectors, strict=True))
    index.save()
    return store, keyword, index


def lists_for(
    queries: dict[str, str], keyword: KeywordIndex, index: VectorIndex, embedder: Embedder
) -> Lists:
    qids = list(queries)
    qvecs = embedder.embed([parse_query(queries[q]).text or queries[q] for q in qids])
    out: Lists = {}
    for qid, qv in zip(qids, qvecs, strict=True):
        out[qid] = (keyword.search(parse_query(queries[qid]), POOL), index.search(qv, POOL))
    return out


def fuse(lists: Lists, s: HybridSettings, which: str = "hybrid") -> dict[str, list[str]]:
    run: dict[str, list[str]] = {}
    for qid, (kw, dense) in lists.items():
        dense = [d for d in dense if d.score >= s.min_dense_score]
        if which == "bm25":
            run[qid] = [x.paper_id for x in kw]
        elif which == "dense":
            run[qid] = [x.paper_id for x in dense]
        else:
            fused = reciprocal_rank_fusion([kw, dense], [s.keyword_weight, s.dense_weight], k=s.rrf_k)
            run[qid] = [f.paper_id for f in fused]
    return run


def tune(train: Lists, rel: dict[str, dict[str, int]]) -> tuple[HybridSettings, float]:
    """Best RRF k and keyword weight on train; then the highest cosine floor that costs < 0.002 nDCG.

    The floor is the relevance cut-off: it exists for nonsense queries (see :func:`nonsense`), not for
    nDCG, which it can only lower; so it is set as high as it can go without hurting relevant results.
    It is capped at 0.3: SciFact's long claims score high cosines, but short real queries do not (with
    all-MiniLM-L6-v2 on Hugging Face abstracts, "graph neural networks" has its 10th neighbour at 0.37 and
    random letter strings top out below 0.3), so a higher floor would cut good matches of short queries.
    """
    best: tuple[float, HybridSettings] | None = None
    for k, wk in itertools.product(GRID_K, GRID_KEYWORD_WEIGHT):
        s = replace(SHIPPED, rrf_k=k, keyword_weight=wk, dense_weight=1.0, min_dense_score=-1.0)
        score = evaluate(fuse(train, s), rel)["ndcg@10"]
        if best is None or score > best[0]:
            best = (score, s)
    assert best is not None
    at60 = max(
        (evaluate(fuse(train, replace(best[1], rrf_k=60, keyword_weight=w)), rel)["ndcg@10"], w)
        for w in GRID_KEYWORD_WEIGHT
    )
    print(f"best with k=60 on train: keyword_weight={at60[1]:g} nDCG@10 {at60[0]:.4f}")
    top, chosen = best
    for floor in GRID_FLOOR:
        s = replace(chosen, min_dense_score=floor)
        if evaluate(fuse(train, s), rel)["ndcg@10"] >= top - 0.002:
            chosen = s
    return chosen, evaluate(fuse(train, chosen), rel)["ndcg@10"]


def nonsense(search: HybridSearch, n: int = 50) -> float:
    """Mean number of results (of up to 100) for random letter strings: the cut-off at work."""
    rng = np.random.default_rng(3)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    counts = []
    for _ in range(n):
        words = ["".join(rng.choice(letters, rng.integers(4, 9))) for _ in range(rng.integers(1, 4))]
        counts.append(len(search.search(" ".join(words), limit=100).hits))
    return float(np.mean(counts))


def service(
    store: SqlPaperStore, keyword: KeywordIndex, index: VectorIndex, embedder: Embedder, s: HybridSettings
) -> HybridSearch:
    """The real search service over the bench's store and indexes, with the fusion setting ``s``."""
    papers = VisiblePapers(SqlFeedQueries(store.engine))
    vectors, embedders = FixedVectors(index), FixedEmbedder(embedder)
    return HybridSearch(papers, keyword, vectors, embedders, s, similar_settings(SettingsModel()))


def service_run(search: HybridSearch, queries: dict[str, str]) -> tuple[dict[str, list[str]], float]:
    run: dict[str, list[str]] = {}
    started = time.perf_counter()
    for qid, text in queries.items():
        run[qid] = [h.paper.id for h in search.search(text, limit=100).hits]
    return run, (time.perf_counter() - started) * 1000 / max(len(queries), 1)


def seeds(root: Path, cache: VectorCache, engine: str) -> dict[str, float]:
    docs = load_corpus("seeds")
    pages: dict[str, set[str]] = defaultdict(set)
    for line in (SHARED / "seeds" / "seed_papers.jsonl").read_bytes().splitlines():
        row = orjson.loads(line)
        pages[str(row["id"])].add(row["seed_page"])
    unique = list({d.id: d for d in docs}.values())
    vectors = cache.vectors("seeds", unique)
    store, keyword, index = build(root, "seeds", unique, vectors, cache.embedder.model_id, engine, "seed:")
    scores: dict[str, list[float]] = defaultdict(list)
    for doc, vec in zip(unique, vectors, strict=True):
        me = "seed:" + doc.id
        kw = [s for s in keyword.search(parse_query(f"{doc.title} {doc.abstract}"), 40) if s.paper_id != me]
        dense = index.search(vec, 40, exclude=[me])
        fused = [ScoredId(f.paper_id, f.score) for f in reciprocal_rank_fusion([kw, dense])]
        for name, ranked in (("bm25", kw), ("dense", dense), ("hybrid", fused)):
            top = [s.paper_id.removeprefix("seed:") for s in ranked[:10]]
            same = sum(1 for other in top if pages[other] & pages[doc.id])
            scores[name].append(same / 10)
    store.close()
    return {name: float(np.mean(v)) for name, v in scores.items()}


def describe(s: HybridSettings) -> str:
    return (
        f"rrf_k={s.rrf_k:g} keyword_weight={s.keyword_weight:g} dense_weight={s.dense_weight:g} "
        f"min_dense_score={s.min_dense_score:g}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engine", default="auto", choices=["auto", "fts5", "tantivy"])
    parser.add_argument("--backend", default=None, help="embedding backend (default: torch, the reference)")
    parser.add_argument("--no-seeds", action="store_true", help="skip the seed pages")
    parser.add_argument(
        "--model", default=None, help="a model folder, e.g. an adapted one (default: bundled)"
    )
    args = parser.parse_args()
    cache = VectorCache.default(args.backend, model=args.model)
    model_id = cache.embedder.model_id
    qrels = SHARED / "data" / "qrels_scifact.jsonl.gz"
    train_q, train_rel = load_qrels(qrels, "train", "scifact:")
    test_q, test_rel = load_qrels(qrels, "test", "scifact:")
    docs = load_corpus("scifact")
    print(f"{cpu_info().describe()}, {time.strftime('%Y-%m-%d')}")
    print(f"model {model_id}; SciFact {len(docs):,} docs, {len(train_q)} train / {len(test_q)} test queries")
    vectors = cache.vectors("scifact", docs, report=print)
    with tempfile.TemporaryDirectory(prefix="pf-quality-") as tmp:
        root = Path(tmp)
        store, keyword, index = build(root, "scifact", docs, vectors, model_id, args.engine, "scifact:")
        train = lists_for(train_q, keyword, index, cache.embedder)
        test = lists_for(test_q, keyword, index, cache.embedder)
        chosen, train_best = tune(train, train_rel)
        plain = replace(SHIPPED, rrf_k=60, keyword_weight=1.0, dense_weight=1.0, min_dense_score=-1.0)
        print(f"\nchosen on train: {describe(chosen)} (train nDCG@10 {train_best:.4f})")
        print(f"shipped (settings_model.py): {describe(SHIPPED)}")
        if (chosen.rrf_k, chosen.keyword_weight, chosen.dense_weight, chosen.min_dense_score) != (
            SHIPPED.rrf_k,
            SHIPPED.keyword_weight,
            SHIPPED.dense_weight,
            SHIPPED.min_dense_score,
        ):
            print(
                "  -> train chose another setting than the shipped one: update settings_model.py's defaults"
            )
        header = f"\n{'SciFact':28s} {'train nDCG@10':>14s} {'test nDCG@10':>13s} {'test R@100':>11s}"
        print(header + f" {'ms/query':>9s}\n" + "-" * (len(header) + 9))
        for label, which, s in (
            ("BM25", "bm25", chosen),
            ("dense", "dense", plain),
            ("hybrid, plain RRF k=60", "hybrid", plain),
        ):
            tr, te = evaluate(fuse(train, s, which), train_rel), evaluate(fuse(test, s, which), test_rel)
            print(f"{label:28s} {tr['ndcg@10']:14.4f} {te['ndcg@10']:13.4f} {te['recall@100']:11.4f}")
        rows = [("hybrid (service, tuned)", chosen), ("hybrid as shipped (service)", SHIPPED)]
        for label, s in rows:
            search = service(store, keyword, index, cache.embedder, replace(s, candidates=POOL))
            tr_run, _ = service_run(search, train_q)
            te_run, ms = service_run(search, test_q)
            tr, te = evaluate(tr_run, train_rel), evaluate(te_run, test_rel)
            print(
                f"{label:28s} {tr['ndcg@10']:14.4f} {te['ndcg@10']:13.4f} {te['recall@100']:11.4f} {ms:9.1f}"
            )
        shipped = service(store, keyword, index, cache.embedder, SHIPPED)
        loose = service(store, keyword, index, cache.embedder, plain)
        print(
            f"\nnonsense queries, mean results of 100: {nonsense(shipped):.1f} with the cut-off, "
            f"{nonsense(loose):.1f} without"
        )
        store.close()
        if not args.no_seeds:
            print("\nSeed pages: share of each paper's 10 most similar papers from its own page")
            for name, value in seeds(root, cache, args.engine).items():
                print(f"  {name:7s} {value:.3f}")


if __name__ == "__main__":
    main()
