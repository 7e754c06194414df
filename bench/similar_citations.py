"""Similar papers measured on real citations (issue #33, parts 2 and 3): the Paperscape protocol.

Data: ``../shared/data/paperscape_1991_1996.jsonl.gz`` and ``_edges.tsv.gz``, 49,264 arXiv papers of
1991-1996 and 145,644 citation edges from their full texts. Paperscape data is ODbL 1.0: Damien P. George
and Robert Knegjens, Paperscape, doi:10.5281/zenodo.10052 (``LICENSE-paperscape-ODbL.md`` beside it).

**Store** (the product's own import, as real processes): every paper (titles for all, abstracts where
known) written as paperfeed JSONL and imported with ``paperfeed import``; the edges whose citing paper's
id month is 1995-12 or earlier (68,462) with ``paperfeed citations import``; vectors of the real model
(all-MiniLM-L6-v2, torch float32, the benches' reference space) from the bench vector cache
(bench/vector_cache.py, corpus ``paperscape``: embedded once, about half an hour on two cores) written
into the instance's vector index. Everything lives in a cache folder outside the repository
(``$PAPERFEED_BENCH_CACHE/paperscape``), built once and reused.

**Queries and judgments** (from the edges of 1996, never stored): papers of 1994-1995 with an abstract
that 1996 papers cite together with at least three stored papers of 1995 or earlier that have an
abstract (2,172 queries). Relevant: those co-cited papers, graded by how many 1996 papers cite both.
Queries are split by md5 of the id into train and test halves; settings are chosen on train only.

**Measures**: nDCG@10, recall@50 and MRR (first relevant in the top 50) of the whole store ranked for each
query, with 95 % bootstrap intervals over queries (and paired intervals of the change).

Steps (each reuses what the earlier ones built):

* ``prepare``: the inputs, the store and the vectors above (once).
* ``grid``: the graph-only designs on the train queries (SciPy on the stored edges: raw counts, the
  Salton cosine shipped before, personalised PageRank, Adamic-Adar + direct links, and the shipped one with
  the candidate's citations); the lists of every query through the real services (``HybridSearch.similar``
  with the graph off and ``GraphSimilar``, cached in the folder; ``--fresh`` makes them again); then the
  fusion on the train queries only: cosine + weight · sqrt(graph score) (``domain.fusion.blend_evidence``,
  the shipped design) over a grid of weights, beside weighted RRF of the two lists (k × weight).
* ``report``: train and test through ``HybridSearch.similar`` as shipped (the settings' defaults): text
  only (the graph off: today's list), graph only (``GraphSimilar``), fused; with ``--served`` also the
  test queries through ``GET /api/papers/{id}/similar`` of a real ``paperfeed serve`` process.
* ``text --model FOLDER``: text only (the graph off), the bundled model against another (an adapted model
  of ``paperfeed model adapt``, issue #33 part 3), the latter in a copy of the instance with its vectors.
  ``--pool judged``: by plain cosine among the judged papers only (3,413: the queries and their
  relevant papers), which embeds those only (a quarter of the store's text) rather than the whole store.

    .venv/bin/python -m bench.similar_citations prepare [--threads 2]   # ~35 min the first time (embedding)
    .venv/bin/python -m bench.similar_citations grid [--fresh]
    .venv/bin/python -m bench.similar_citations report --served
    .venv/bin/python -m bench.similar_citations text --model DATA/models/adapted/adapted-… [--pool judged]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import orjson

from bench.vector_cache import CACHE_ROOT, SHARED

if TYPE_CHECKING:
    from paperfeed.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
PAPERS = SHARED / "data" / "paperscape_1991_1996.jsonl.gz"
EDGES = SHARED / "data" / "paperscape_1991_1996_edges.tsv.gz"
ATTRIBUTION = (
    "Paperscape data, ODbL 1.0: Damien P. George and Robert Knegjens, Paperscape, doi:10.5281/zenodo.10052"
)
STORED_UNTIL = "1995-12"  # edges whose citing paper's id month is this or earlier are stored
QUERY_YEARS = ("1994", "1995")
JUDGED_YEAR = "1996"  # its edges judge; they are never stored
MIN_RELEVANT = 3
CORPUS = "paperscape"  # the vector cache's corpus name


@dataclass(frozen=True, slots=True)
class Record:
    id: str
    title: str
    abstract: str
    id_month: str


def read_papers() -> dict[str, Record]:
    out: dict[str, Record] = {}
    with gzip.open(PAPERS, "rb") as fh:
        for line in fh:
            rec = orjson.loads(line)
            out[rec["id"]] = Record(rec["id"], rec["title"], rec.get("abstract") or "", rec["id_month"])
    return out


def read_edges() -> list[tuple[str, str]]:
    with gzip.open(EDGES, "rt", encoding="utf-8") as fh:
        next(fh)  # header
        return [(a, b) for a, b in (line.rstrip("\n").split("\t") for line in fh)]


def stored_edges(papers: dict[str, Record], edges: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(a, b) for a, b in edges if papers[a].id_month <= STORED_UNTIL]


def judgments(papers: dict[str, Record], edges: Sequence[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """Query id → {relevant id: how many 1996 papers cite both} (see the module doc)."""
    references: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        if papers[a].id_month.startswith(JUDGED_YEAR):
            references[a].add(b)
    together: dict[str, Counter[str]] = defaultdict(Counter)
    for cited in references.values():
        for x in cited:
            for y in cited:
                if x != y:
                    together[x][y] += 1
    out: dict[str, dict[str, int]] = {}
    for q, counts in together.items():
        query = papers[q]
        if query.id_month[:4] not in QUERY_YEARS or not query.abstract:
            continue
        relevant = {
            p: n for p, n in counts.items() if papers[p].abstract and papers[p].id_month <= STORED_UNTIL
        }
        if len(relevant) >= MIN_RELEVANT:
            out[q] = relevant
    return out


# -- the store ----------------------------------------------------------------------------------------


def cache_folder() -> Path:
    return CACHE_ROOT / "paperscape"


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """The papers as paperfeed JSONL and the stored edges as a pairs file (written once)."""
    folder.mkdir(parents=True, exist_ok=True)
    papers_path, edges_path = folder / "papers.jsonl.gz", folder / f"edges-until-{STORED_UNTIL}.tsv.gz"
    if not papers_path.exists():
        tmp = papers_path.with_suffix(".tmp")
        with gzip.open(PAPERS, "rb") as src, gzip.open(tmp, "wb") as out:
            for line in src:
                rec = orjson.loads(line)
                row = {
                    "id": rec["id"],
                    "title": rec["title"],
                    "abstract": rec.get("abstract"),
                    "authors": rec.get("authors") or [],
                    "categories": rec.get("categories") or [],
                    "published": rec.get("published"),
                }
                out.write(orjson.dumps({k: v for k, v in row.items() if v is not None}) + b"\n")
        os.replace(tmp, papers_path)
    if not edges_path.exists():
        papers = read_papers()
        tmp = edges_path.with_suffix(".tmp")
        with gzip.open(tmp, "wt", encoding="utf-8") as out:
            out.write("citing_id\tcited_id\n")
            for a, b in stored_edges(papers, read_edges()):
                out.write(f"{a}\t{b}\n")
        os.replace(tmp, edges_path)
    return papers_path, edges_path


def cli(data_dir: Path, *args: str, engine: str = "tantivy") -> float:
    """Run ``paperfeed ARGS`` as a process on the instance at ``data_dir``; its wall seconds."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "PAPERFEED_DATA_DIR": str(data_dir),
        "PAPERFEED_KEYWORD_ENGINE": engine,
        "PAPERFEED_EMBEDDING_BACKEND": "torch",
        "HF_HUB_OFFLINE": "1",
    }
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "paperfeed", *args], env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"paperfeed {' '.join(args)} failed with exit code {done.returncode}")
    return time.perf_counter() - started


def prepare(folder: Path, engine: str, threads: int | None, model: str | None = None) -> Path:
    """The instance of the protocol (imported once; its vectors from the cache), its data folder.

    ``model``: a model folder (an adapted model): the bundled instance's store and keyword index copied
    into a folder of its own, with that model's vectors."""
    papers_path, edges_path = write_inputs(folder)
    data_dir = folder / (f"instance-{engine}" if model is None else f"instance-{engine}-{Path(model).name}")
    done = data_dir / "prepared"
    if done.exists():
        return data_dir
    if model is not None:
        bundled = prepare(folder, engine, threads)
        data_dir.mkdir(parents=True, exist_ok=True)
        for path in bundled.glob("paperfeed.db*"):
            shutil.copy2(path, data_dir / path.name)
        shutil.copytree(bundled / "keyword", data_dir / "keyword", dirs_exist_ok=True)
        fill_vectors(data_dir, engine, threads, model)
        done.write_text("ok\n")
        return data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    print(f"paperfeed import: {cli(data_dir, 'import', str(papers_path), engine=engine):.0f} s")
    print(
        f"paperfeed citations import: "
        f"{cli(data_dir, 'citations', 'import', str(edges_path), engine=engine):.0f} s"
    )
    fill_vectors(data_dir, engine, threads)
    done.write_text("ok\n")
    return data_dir


def fill_vectors(data_dir: Path, engine: str, threads: int | None, model: str | None = None) -> None:
    """Every stored paper's vector, from the bench cache (embedded there once), into the vector index."""
    from bench.vector_cache import Doc, VectorCache
    from paperfeed.bootstrap import build_app
    from paperfeed.domain.search import VectorRecord

    cache = VectorCache.default("torch", threads, model)
    app = build_app(settings_for(data_dir, engine, model))
    try:
        papers = [p for batch in app.core.store.iter_papers() for p in batch]
        if not papers:
            raise SystemExit("the store has no papers")
        docs = [Doc(p.id, p.title, p.abstract) for p in papers]
        started = time.perf_counter()
        vectors = cache.vectors(
            CORPUS, docs, report=lambda m: print(time.strftime("%H:%M:%S"), m, flush=True)
        )
        print(
            f"vectors: {len(docs):,} in {time.perf_counter() - started:.0f} s "
            f"(cached in {cache.folder(CORPUS)})"
        )
        index = app.indexes.vector_index(
            model_id=cache.embedder.model_id, dimension=int(vectors.shape[1]), fresh=True
        )
        index.upsert(
            VectorRecord(p.id, v, p.published, p.categories, p.github_repo is not None)
            for p, v in zip(papers, vectors, strict=True)
        )
        index.save()
    finally:
        app.close()


def settings_for(data_dir: Path, engine: str, model: str | None = None, **overrides: object) -> Settings:
    from paperfeed.settings import Settings

    return Settings(
        data_dir=data_dir,
        embedding_model=model,
        keyword_engine=engine,  # type: ignore[arg-type]
        embedding_backend="torch",
        **overrides,  # type: ignore[arg-type]
    )


# -- lists, measures ------------------------------------------------------------------------------------

POOL = 100  # the service's candidates per list (PAPERFEED_SIMILAR_CANDIDATES)
DEPTH = 50  # ranks measured: nDCG@10, recall@50, MRR within the first 50


def split_of(paper_id: str) -> str:
    return "train" if int(hashlib.md5(f"split:{paper_id}".encode()).hexdigest(), 16) % 2 == 0 else "test"


@dataclass(frozen=True, slots=True)
class Measures:
    ndcg: list[float]
    recall: list[float]
    mrr: list[float]

    @classmethod
    def of(
        cls, runs: dict[str, list[str]], qrels: dict[str, dict[str, int]], queries: Sequence[str]
    ) -> Measures:
        from bench.ir_metrics import mrr_at_k, ndcg_at_k, recall_at_k

        return cls(
            [ndcg_at_k(runs.get(q, []), qrels[q], 10) for q in queries],
            [recall_at_k(runs.get(q, []), qrels[q], DEPTH) for q in queries],
            [mrr_at_k(runs.get(q, []), qrels[q], DEPTH) for q in queries],
        )

    def means(self) -> tuple[float, float, float]:
        return (float(np.mean(self.ndcg)), float(np.mean(self.recall)), float(np.mean(self.mrr)))


def interval(values: Sequence[float], rounds: int = 2000, seed: int = 7) -> tuple[float, float]:
    """95 % bootstrap interval of the mean over queries."""
    data = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(rounds, len(data)))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def paired_interval(
    after: Sequence[float], before: Sequence[float], rounds: int = 2000
) -> tuple[float, float, float]:
    """The relative change of the mean and its 95 % paired bootstrap interval."""
    a, b = np.asarray(after), np.asarray(before)
    rng = np.random.default_rng(11)
    picks = rng.integers(0, len(a), size=(rounds, len(a)))
    ratios = a[picks].mean(axis=1) / np.maximum(b[picks].mean(axis=1), 1e-12) - 1
    return (
        float(a.mean() / b.mean() - 1),
        float(np.percentile(ratios, 2.5)),
        float(np.percentile(ratios, 97.5)),
    )


@dataclass(frozen=True, slots=True)
class QueryLists:
    """One query's lists as the service makes them: today's similar list (the graph off) and the graph
    list (``GraphSimilar.related``), each paper with its cosine to the query; the graph's with its score."""

    text: list[tuple[str, float]]  # id, cosine
    graph: list[tuple[str, float, float]]  # id, graph score, cosine


def make_lists(
    data_dir: Path, engine: str, queries: Sequence[str]
) -> tuple[dict[str, QueryLists], float, float]:
    """Every query's lists through the real services; with the ms per query of each."""
    from paperfeed.bootstrap import build_app
    from paperfeed.services.similar_graph import GraphSimilar

    app = build_app(settings_for(data_dir, engine, similar_graph_weight=0.0))
    try:
        index = app.indexes.vectors.current()
        if index is None:
            raise SystemExit("the instance has no vector index (run the prepare step)")
        graph = GraphSimilar(app.catalogue.citations, app.core.store)
        out: dict[str, QueryLists] = {}
        text_s = graph_s = 0.0
        for q in queries:
            started = time.perf_counter()
            hits = app.search.hybrid.similar(q, limit=POOL)
            text_s += time.perf_counter() - started
            started = time.perf_counter()
            items = graph.related(q, POOL)
            graph_s += time.perf_counter() - started
            vector = index.vector(q)
            stored = index.vectors([x.paper_id for x in items]) if items else {}
            cos = {pid: float(np.dot(vector, v)) for pid, v in stored.items()} if vector is not None else {}
            out[q] = QueryLists(
                [(h.paper.id, h.similarity or 0.0) for h in hits],
                [(x.paper_id, x.score, cos.get(x.paper_id, 0.0)) for x in items],
            )
    finally:
        app.close()
    n = max(len(queries), 1)
    return out, text_s * 1000 / n, graph_s * 1000 / n


def cached_lists(cache: Path, data_dir: Path, engine: str, queries: Sequence[str]) -> dict[str, QueryLists]:
    """:func:`make_lists`, kept in ``cache`` (``--fresh`` makes them again after a change of the services)."""
    path = cache / f"lists-{engine}.json.gz"
    if path.exists():
        raw = orjson.loads(gzip.decompress(path.read_bytes()))
        if set(raw["lists"]) == set(queries):
            print(f"lists of {len(queries):,} queries from {path} (made {raw['made']})")
            return {
                q: QueryLists(
                    [(a, float(b)) for a, b in v["text"]], [(a, float(b), float(c)) for a, b, c in v["graph"]]
                )
                for q, v in raw["lists"].items()
            }
    started = time.perf_counter()
    lists, text_ms, graph_ms = make_lists(data_dir, engine, queries)
    made = (
        f"{time.strftime('%Y-%m-%d %H:%M')}, {time.perf_counter() - started:.0f} s; "
        f"text list {text_ms:.1f} ms/query, graph list {graph_ms:.1f} ms/query"
    )
    print(f"lists of {len(queries):,} queries: {made}")
    body = {"made": made, "lists": {q: {"text": v.text, "graph": v.graph} for q, v in lists.items()}}
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(gzip.compress(orjson.dumps(body)))
    os.replace(tmp, path)
    return lists


# -- fusion: the grid on train ----------------------------------------------------------------------------

GRID_BLEND = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.6, 0.8]  # PAPERFEED_SIMILAR_GRAPH_WEIGHT
GRID_RRF_K = [5.0, 20.0, 60.0]
GRID_RRF_WEIGHT = [1.0, 2.0, 3.0, 4.0]


def blended(lists: QueryLists, weight: float) -> list[str]:
    """The service's ranking for a graph weight (``domain.fusion.blend_evidence``): a query without graph
    evidence keeps its text list."""
    from paperfeed.domain.fusion import blend_evidence

    if not lists.graph or weight <= 0:
        return [pid for pid, _ in lists.text][:DEPTH]
    cosines = dict(lists.text) | {pid: c for pid, _, c in lists.graph}
    candidates = list(dict.fromkeys([pid for pid, _ in lists.text] + [pid for pid, _, _ in lists.graph]))
    evidence = [(weight, {pid: score for pid, score, _ in lists.graph})]
    return [x.paper_id for x in blend_evidence(candidates, cosines, evidence)][:DEPTH]


def rank_fused(lists: QueryLists, k: float, weight: float) -> list[str]:
    """The alternative: weighted RRF of the text list and the graph list."""
    from paperfeed.domain.fusion import WeightedList, fuse_weighted
    from paperfeed.domain.search import ScoredId

    named = [
        WeightedList("dense", 1.0, [ScoredId(pid, c) for pid, c in lists.text]),
        WeightedList("graph", weight, [ScoredId(pid, g) for pid, g, _ in lists.graph]),
    ]
    return [f.paper_id for f in fuse_weighted(named, k=k)][:DEPTH]


def grid(
    lists: dict[str, QueryLists], qrels: dict[str, dict[str, int]], train: Sequence[str]
) -> tuple[float, tuple[float, float]]:
    """The blend weight (the shipped design) and, for comparison, the best weighted RRF, on train only."""
    best = (-1.0, 0.0)
    print("\nscore blend, cosine + weight · sqrt(graph score), train queries:")
    for weight in GRID_BLEND:
        ndcg, recall, mrr = Measures.of({q: blended(lists[q], weight) for q in train}, qrels, train).means()
        print(f"  weight {weight:<5g} nDCG@10 {ndcg:.4f}  recall@50 {recall:.4f}  MRR {mrr:.4f}")
        if ndcg > best[0] + 1e-9:
            best = (ndcg, weight)
    rrf = (-1.0, (0.0, 0.0))
    print("weighted RRF of the text and graph lists, train queries (the alternative):")
    for k in GRID_RRF_K:
        for weight in GRID_RRF_WEIGHT:
            runs = {q: rank_fused(lists[q], k, weight) for q in train}
            ndcg, recall, mrr = Measures.of(runs, qrels, train).means()
            print(
                f"  k {k:<4g} graph weight {weight:<3g} "
                f"nDCG@10 {ndcg:.4f}  recall@50 {recall:.4f}  MRR {mrr:.4f}"
            )
            if ndcg > rrf[0] + 1e-9:
                rrf = (ndcg, (k, weight))
    print(
        f"chosen on train: blend weight {best[1]:g} (nDCG@10 {best[0]:.4f}); best RRF k {rrf[1][0]:g} "
        f"weight {rrf[1][1]:g} (nDCG@10 {rrf[0]:.4f})"
    )
    return best[1], rrf[1]


# -- graph designs (graph only, train), from the stored edges in SciPy --------------------------------------


def designs(
    papers: dict[str, Record],
    edges: Sequence[tuple[str, str]],
    qrels: dict[str, dict[str, int]],
    train: Sequence[str],
) -> None:
    """The graph-only rankings the design was chosen among, computed on the stored edges with SciPy (the
    shipped one is also measured through the service in the report: the two agree)."""
    import scipy.sparse as sp  # type: ignore[import-untyped]

    ids = sorted(papers)
    at = {pid: i for i, pid in enumerate(ids)}
    stored = stored_edges(papers, edges)
    n = len(ids)
    cites = sp.csr_matrix(
        (np.ones(len(stored)), ([at[a] for a, _ in stored], [at[b] for _, b in stored])), shape=(n, n)
    )
    cited = cites.T.tocsr()
    refs_n = np.asarray(cites.sum(axis=1)).ravel()
    cites_n = np.asarray(cites.sum(axis=0)).ravel()
    degree = refs_n + cites_n
    hub = 1.0 / np.log1p(np.maximum(degree, 1))
    pop = 1.0 + np.log1p(cites_n)
    undirected = (cites + cited).tocsr()
    walk = (sp.diags(1.0 / np.maximum(degree, 1)) @ undirected).T.tocsr()

    def row(m: object, i: int) -> np.ndarray:
        return np.asarray(m[i].todense()).ravel()  # type: ignore[index]

    def counts(i: int) -> np.ndarray:
        r, c = row(cites, i), row(cited, i)
        return np.asarray(cites @ r + cited @ c + r + c)

    def salton(i: int) -> np.ndarray:
        r, c = row(cites, i), row(cited, i)
        coupling = (cites @ r) / np.sqrt(np.maximum(refs_n[i], 1) * np.maximum(refs_n, 1))
        co_citation = (cited @ c) / np.sqrt(np.maximum(cites_n[i], 1) * np.maximum(cites_n, 1))
        return np.asarray(coupling + co_citation)

    def adamic_adar(i: int) -> np.ndarray:
        g = row(undirected, i)
        return np.asarray(undirected @ (g * hub) + g)

    def ppr(i: int, alpha: float = 0.15, steps: int = 8) -> np.ndarray:
        x = np.zeros(n)
        x[i] = 1.0
        out, cur = alpha * x, x
        for _ in range(steps):
            cur = (1 - alpha) * (walk @ cur)
            out = out + alpha * cur
        return out

    variants: dict[str, Callable[[int], np.ndarray]] = {
        "counts: coupling + co-citation + direct links": counts,
        "Salton's cosine of coupling and co-citation (the list before)": salton,
        "personalised PageRank (restart 0.15)": ppr,
        "shared neighbours 1/ln(1+degree) + direct (Adamic-Adar)": adamic_adar,
        "the same × (1 + ln(1 + citations)) (shipped)": lambda i: adamic_adar(i) * pop,
    }
    print("\ngraph only, train queries (SciPy on the stored edges):")
    for name, score in variants.items():
        runs: dict[str, list[str]] = {}
        for q in train:
            s = score(at[q]).astype(np.float64)
            s[at[q]] = 0.0
            top = np.argpartition(-s, DEPTH)[:DEPTH]
            top = top[np.argsort(-s[top], kind="stable")]
            runs[q] = [ids[t] for t in top if s[t] > 0]
        ndcg, recall, mrr = Measures.of(runs, qrels, train).means()
        print(f"  {name:64s} nDCG@10 {ndcg:.4f}  recall@50 {recall:.4f}  MRR {mrr:.4f}")


# -- the report -----------------------------------------------------------------------------------------


def service_runs(
    data_dir: Path, engine: str, queries: Sequence[str], weight: float | None, model: str | None = None
) -> tuple[dict[str, list[str]], float]:
    """Each query's first 50 similar papers from ``HybridSearch.similar`` (``weight``: the graph weight,
    ``None``: the shipped default), and the ms per query."""
    from paperfeed.bootstrap import build_app

    extra = {} if weight is None else {"similar_graph_weight": weight}
    app = build_app(settings_for(data_dir, engine, model, **extra))
    try:
        started = time.perf_counter()
        runs = {q: [h.paper.id for h in app.search.hybrid.similar(q, limit=DEPTH)] for q in queries}
        ms = (time.perf_counter() - started) * 1000 / max(len(queries), 1)
    finally:
        app.close()
    return runs, ms


def graph_runs(data_dir: Path, engine: str, queries: Sequence[str]) -> dict[str, list[str]]:
    from paperfeed.bootstrap import build_app
    from paperfeed.services.similar_graph import GraphSimilar

    app = build_app(settings_for(data_dir, engine))
    try:
        graph = GraphSimilar(app.catalogue.citations, app.core.store)
        return {q: [x.paper_id for x in graph.related(q, DEPTH)] for q in queries}
    finally:
        app.close()


def served_runs(
    data_dir: Path, engine: str, queries: Sequence[str], port: int
) -> tuple[dict[str, list[str]], float]:
    """The shipped list as a served instance gives it: ``paperfeed serve`` (a real process, the shipped
    settings) and ``GET /api/papers/{id}/similar?limit=50``; with the ms per request."""
    import httpx

    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "PAPERFEED_DATA_DIR": str(data_dir),
        "PAPERFEED_KEYWORD_ENGINE": engine,
        "PAPERFEED_EMBEDDING_BACKEND": "torch",
        "PAPERFEED_DEBUG": "1",
        "HF_HUB_OFFLINE": "1",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "paperfeed", "serve", "--port", str(port), "--log-level", "warning"], env=env
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            for _ in range(600):
                try:
                    if client.get("/api/papers", params={"limit": 1}).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
            runs: dict[str, list[str]] = {}
            started = time.perf_counter()
            for q in queries:
                answer = client.get(f"/api/papers/{q}/similar", params={"limit": DEPTH})
                answer.raise_for_status()
                runs[q] = [item["paper"]["id"] for item in answer.json()]
            ms = (time.perf_counter() - started) * 1000 / max(len(queries), 1)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return runs, ms


def show(label: str, m: Measures, ms: float | None = None) -> None:
    cells = []
    for values in (m.ndcg, m.recall, m.mrr):
        low, high = interval(values)
        cells.append(f"{float(np.mean(values)):.4f} [{low:.3f}, {high:.3f}]")
    cost = f"{ms:8.1f}" if ms is not None else " " * 8
    print(f"  {label:34s} {cells[0]:>23s} {cells[1]:>23s} {cells[2]:>23s} {cost}")


def report(
    data_dir: Path,
    engine: str,
    qrels: dict[str, dict[str, int]],
    split: dict[str, list[str]],
    served: bool,
    port: int,
) -> None:
    from paperfeed.settings_model import SettingsModel

    shipped = SettingsModel.model_fields["similar_graph_weight"].default
    print(f"\nthe service as shipped: PAPERFEED_SIMILAR_GRAPH_WEIGHT={shipped:g} (default)")
    header = f"  {'':34s} {'nDCG@10':>23s} {'recall@50':>23s} {'MRR (first 50)':>23s} {'ms/query':>8s}"
    for name, queries in split.items():
        print(f"\n{name} queries ({len(queries):,}), 95 % bootstrap intervals:\n{header}")
        text, text_ms = service_runs(data_dir, engine, queries, 0.0)
        graph = graph_runs(data_dir, engine, queries)
        fused, fused_ms = service_runs(data_dir, engine, queries, None)
        mt, mg, mf = (Measures.of(r, qrels, queries) for r in (text, graph, fused))
        show("text only (today)", mt, text_ms)
        show("graph only", mg)
        show("fused (shipped)", mf, fused_ms)
        if served and name == "test":
            runs, served_ms = served_runs(data_dir, engine, queries, port)
            ms_ = Measures.of(runs, qrels, queries)
            show("fused, via GET /api/…/similar", ms_, served_ms)
            same = sum(runs[q] == fused[q] for q in queries)
            print(f"  the served lists equal the in-process ones for {same:,} of {len(queries):,} queries")
        for what, a, b in (
            ("nDCG@10", mf.ndcg, mt.ndcg),
            ("recall@50", mf.recall, mt.recall),
            ("MRR", mf.mrr, mt.mrr),
        ):
            change, low, high = paired_interval(a, b)
            print(
                f"  fused vs text only, {what}: {change * 100:+.1f} % [{low * 100:+.1f}, {high * 100:+.1f}]"
                f" (×{1 + change:.2f})"
            )
        with_graph = sum(1 for q in queries if graph[q])
        unchanged = sum(1 for q in queries if not graph[q] and fused[q] == text[q])
        print(
            f"  {with_graph:,} queries have graph evidence; of the {len(queries) - with_graph:,} without, "
            f"{unchanged:,} keep exactly today's list"
        )


def compare_models(
    mb: Measures, ma: Measures, model: str, before_ms: float | None = None, after_ms: float | None = None
) -> None:
    """The bundled model's and ``model``'s rows, and the paired change of each measure with its interval."""
    show("bundled all-MiniLM-L6-v2", mb, before_ms)
    show(f"adapted ({Path(model).name})", ma, after_ms)
    for what, a, b in (
        ("nDCG@10", ma.ndcg, mb.ndcg),
        ("recall@50", ma.recall, mb.recall),
        ("MRR", ma.mrr, mb.mrr),
    ):
        change, low, high = paired_interval(a, b)
        print(f"  adapted vs bundled, {what}: {change * 100:+.1f} % [{low * 100:+.1f}, {high * 100:+.1f}]")


def text_models(
    folder: Path,
    engine: str,
    threads: int | None,
    model: str,
    qrels: dict[str, dict[str, int]],
    split: dict[str, list[str]],
) -> None:
    """Text only (the graph off), the bundled model against ``model`` (part 3: an adapted model)."""
    bundled_dir = prepare(folder, engine, threads)
    model_dir = prepare(folder, engine, threads, model)
    header = f"  {'':34s} {'nDCG@10':>23s} {'recall@50':>23s} {'MRR (first 50)':>23s} {'ms/query':>8s}"
    for name, queries in split.items():
        print(f"\ntext only, {name} queries ({len(queries):,}), 95 % bootstrap intervals:\n{header}")
        before, before_ms = service_runs(bundled_dir, engine, queries, 0.0)
        after, after_ms = service_runs(model_dir, engine, queries, 0.0, model)
        compare_models(
            Measures.of(before, qrels, queries),
            Measures.of(after, qrels, queries),
            model,
            before_ms,
            after_ms,
        )


def text_models_judged(
    folder: Path,
    engine: str,
    threads: int | None,
    model: str,
    qrels: dict[str, dict[str, int]],
    split: dict[str, list[str]],
) -> None:
    """Text only, the bundled model against ``model``, by plain cosine among the judged papers (every
    query and every paper relevant to one: 3,413): the cheap form of :func:`text_models` for a CPU that
    cannot re-embed the whole store. Fewer distractors than the store, so the figures are higher than the
    service's over the whole store; both models rank the same pool, so the change is what compares."""
    from bench.vector_cache import Doc, VectorCache
    from paperfeed.bootstrap import build_app

    pool_ids = sorted(set(qrels) | {p for rel in qrels.values() for p in rel})
    app = build_app(settings_for(prepare(folder, engine, threads), engine))
    try:
        wanted = set(pool_ids)
        stored = {p.id: p for batch in app.core.store.iter_papers() for p in batch if p.id in wanted}
    finally:
        app.close()
    docs = [Doc(pid, stored[pid].title, stored[pid].abstract) for pid in pool_ids]
    at = {pid: i for i, pid in enumerate(pool_ids)}
    print(f"\ntext only by plain cosine among the {len(docs):,} judged papers (queries and relevant papers)")

    def runs_of(name: str, spec: str | None) -> dict[str, list[str]]:
        cache = VectorCache.default("torch", threads, spec)
        wall, cpu = time.perf_counter(), time.process_time()
        vectors = cache.vectors(
            CORPUS, docs, report=lambda m: print(time.strftime("%H:%M:%S"), m, flush=True)
        )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"  {name}: vectors of {cache.embedder.model_id} in {wall:.0f} s wall, {cpu:.0f} s CPU")
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        runs: dict[str, list[str]] = {}
        for q in qrels:
            sims = vectors @ vectors[at[q]]
            sims[at[q]] = -np.inf
            top = np.argpartition(-sims, DEPTH)[:DEPTH]
            runs[q] = [pool_ids[t] for t in top[np.argsort(-sims[top], kind="stable")]]
        return runs

    before, after = runs_of("bundled", None), runs_of("adapted", model)
    header = f"  {'':34s} {'nDCG@10':>23s} {'recall@50':>23s} {'MRR (first 50)':>23s}"
    for name, queries in split.items():
        print(f"\n{name} queries ({len(queries):,}), 95 % bootstrap intervals:\n{header}")
        compare_models(Measures.of(before, qrels, queries), Measures.of(after, qrels, queries), model)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("step", choices=["prepare", "grid", "report", "all", "text"])
    parser.add_argument("--engine", default="tantivy", choices=["tantivy", "fts5"])
    parser.add_argument("--threads", type=int, default=None, help="embedding threads (prepare)")
    parser.add_argument("--fresh", action="store_true", help="make the cached lists again")
    parser.add_argument(
        "--served", action="store_true", help="also the test queries through a served instance"
    )
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--model", default=None, help="text: a model folder to compare with the bundled one")
    parser.add_argument(
        "--pool",
        default="store",
        choices=["store", "judged"],
        help="text: rank the whole store through the service (re-embeds it with --model), or the judged "
        "papers by plain cosine (embeds those only)",
    )
    args = parser.parse_args(argv)
    from paperfeed.adapters.embed.cpu import cpu_info

    print(ATTRIBUTION)
    print(f"CPU: {cpu_info().describe()}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f} (1-min)")
    papers = read_papers()
    edges = read_edges()
    qrels = judgments(papers, edges)
    sizes = sorted(len(r) for r in qrels.values())
    print(
        f"{len(papers):,} papers, {sum(1 for p in papers.values() if p.abstract):,} with an abstract; "
        f"{len(edges):,} edges, {len(stored_edges(papers, edges)):,} stored "
        f"(citing id month ≤ {STORED_UNTIL}); "
        f"{len(qrels):,} queries, median {sizes[len(sizes) // 2]} relevant (mean {np.mean(sizes):.1f})"
    )
    queries = sorted(qrels)
    split = {
        "train": [q for q in queries if split_of(q) == "train"],
        "test": [q for q in queries if split_of(q) == "test"],
    }
    print(f"split by md5 of the id: {len(split['train']):,} train, {len(split['test']):,} test queries")
    data_dir = prepare(cache_folder(), args.engine, args.threads)
    if args.step in ("grid", "all"):
        designs(papers, edges, qrels, split["train"])
        if args.fresh:
            (cache_folder() / f"lists-{args.engine}.json.gz").unlink(missing_ok=True)
        lists = cached_lists(cache_folder(), data_dir, args.engine, queries)
        grid(lists, qrels, split["train"])
    if args.step in ("report", "all"):
        report(data_dir, args.engine, qrels, split, args.served, args.port)
    if args.step == "text":
        if args.model is None:
            raise SystemExit("text: --model names the model folder to compare with the bundled one")
        if args.pool == "judged":
            text_models_judged(cache_folder(), args.engine, args.threads, args.model, qrels, split)
        else:
            text_models(cache_folder(), args.engine, args.threads, args.model, qrels, split)


if __name__ == "__main__":
    main()
