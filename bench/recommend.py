"""Quality of the "For you" ranking on simulated readers built from real arXiv listings (issue #5).

Data: ``arxiv_cats.jsonl.gz`` (arXiv new-submission listings 2025-03 → 2026-07, ``published`` = listing day).

* Train months: the first ``--train-months`` calendar months. Test window: the last ``--test-days`` days.
* Readers: the 20 categories most frequent in the train months (among those with at least 30 papers there
  and 10 in the test window). For each category and seed, a reader saves 30 random train-month papers that
  carry the category; nothing else is known about them.
* Candidates: every paper of the test window. A candidate is relevant to a reader iff it carries the
  reader's category. Other readers' categories are never used: negatives are random candidates, exactly as
  the service draws random recent papers (see :mod:`paperfeed.domain.recommend`).
* Metrics: P@10 and nDCG@10 (binary gain) of the top 10, mean over readers, and the spread over readers.
* Methods: ``recent`` (newest first), ``mean-cosine`` (cosine to the mean saved vector), and the service's
  own ranking, run end to end through :class:`~paperfeed.services.recommend.RecommendationService` on a real
  SQLite store with the real (cached) MiniLM vectors.

Vectors are real MiniLM (the default onnx-int8 embedder) cached by :mod:`bench.vector_cache` under
``$PAPERFEED_BENCH_CACHE``; only the papers the bench needs are embedded (the test window plus the saved
papers of every seed, about 9.5k)::

    nice -n 10 .venv/bin/python -m bench.recommend --embed-only   # once, in the background (minutes)
    .venv/bin/python -m bench.recommend                           # the table (seconds)
    .venv/bin/python -m bench.recommend --tune                    # hyper-parameter sweep on tuning seeds
"""

from __future__ import annotations

import argparse
import gzip
import math
import random
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import orjson

from bench.vector_cache import CORPORA, Doc, VectorCache
from paperfeed.adapters.store import open_store
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.adapters.store.feed_queries import SqlFeedQueries
from paperfeed.adapters.store.recommend_queries import SqlRecommendQueries
from paperfeed.adapters.vector import ExactVectorIndex
from paperfeed.bootstrap.readers import recommend_settings
from paperfeed.domain.embedding import PendingPaper
from paperfeed.domain.ingest import Batch
from paperfeed.domain.library import DEFAULT_TAG, ReaderSignals, SavedPaper
from paperfeed.domain.models import Paper
from paperfeed.domain.recommend import ModelParams, fit_reader_model, sample_ids
from paperfeed.domain.search import Vectors
from paperfeed.services.embedders import FixedEmbedder
from paperfeed.services.recommend import RecommendationService
from paperfeed.services.vector_reader import FixedVectors
from paperfeed.services.visible import VisiblePapers
from paperfeed.settings_model import SettingsModel

F32 = npt.NDArray[np.float32]

__all__ = ["BenchPaper", "Plan", "Reader", "load_papers", "make_plan"]

CORPUS = "arxiv_cats"
SAVES_PER_READER = 30
READERS = 20
TUNE_SEEDS = (0, 1)  # hyper-parameters are chosen on these seeds only ...
REPORT_SEEDS = (2, 3, 4)  # ... and the table is reported on these (different saved papers)


@dataclass(frozen=True, slots=True)
class BenchPaper:
    id: str
    title: str
    abstract: str
    authors: tuple[str, ...]
    categories: tuple[str, ...]
    published: date

    @property
    def doc(self) -> Doc:
        return Doc(self.id, self.title, self.abstract)


@dataclass(frozen=True, slots=True)
class Reader:
    category: str
    seed: int
    saved: tuple[str, ...]  # paper ids, train months only

    @property
    def name(self) -> str:
        return f"{self.category}/s{self.seed}"


@dataclass(frozen=True, slots=True)
class Plan:
    papers: dict[str, BenchPaper]
    candidates: tuple[str, ...]  # the test window, newest first (the recent-first baseline's order)
    readers: tuple[Reader, ...]
    train_end: date  # exclusive
    test_start: date

    def needed(self) -> list[BenchPaper]:
        """Every paper that needs a vector: the candidates and every reader's saves."""
        ids = dict.fromkeys(self.candidates)
        for reader in self.readers:
            ids.update(dict.fromkeys(reader.saved))
        return [self.papers[i] for i in ids]


class _VectorSpace:
    """The stored vectors' model (the service bench embeds nothing: only the id is read)."""

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.dimension = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise AssertionError("the service bench embeds nothing")


class _NoTrending:
    def trending_papers(self, limit: int) -> list[Paper]:
        return []


def _clean(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def load_papers(path: Path = CORPORA[CORPUS]) -> dict[str, BenchPaper]:
    papers: dict[str, BenchPaper] = {}
    with gzip.open(path, "rb") as f:
        for line in f:
            rec = orjson.loads(line)
            title = _clean(rec.get("title"))
            if not title or not rec.get("published") or not rec.get("categories"):
                continue
            papers[rec["id"]] = BenchPaper(
                id=rec["id"],
                title=title,
                abstract=_clean(rec.get("abstract")),
                authors=tuple(rec.get("authors") or ()),
                categories=tuple(rec["categories"]),
                published=date.fromisoformat(rec["published"][:10]),
            )
    return papers


def _month_after(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def make_plan(
    papers: dict[str, BenchPaper],
    seeds: Sequence[int],
    *,
    train_months: int = 3,
    test_days: int = 30,
    readers: int = READERS,
    saves: int = SAVES_PER_READER,
) -> Plan:
    first = min(p.published for p in papers.values())
    last = max(p.published for p in papers.values())
    train_end = _month_after(first, train_months)
    test_start = last - timedelta(days=test_days - 1)
    train = sorted((p for p in papers.values() if p.published < train_end), key=lambda p: p.id)
    test = sorted(
        (p for p in papers.values() if p.published >= test_start), key=lambda p: (p.published, p.id)
    )
    in_train = Counter(c for p in train for c in p.categories)
    in_test = Counter(c for p in test for c in p.categories)
    eligible = [c for c, n in in_train.most_common() if n >= max(saves, 30) and in_test[c] >= 10]
    chosen = eligible[:readers]
    people: list[Reader] = []
    for seed in seeds:
        for category in chosen:
            pool = [p.id for p in train if category in p.categories]
            rng = random.Random(f"{seed}:{category}")
            people.append(Reader(category, seed, tuple(rng.sample(pool, saves))))
    return Plan(
        papers=papers,
        candidates=tuple(p.id for p in reversed(test)),
        readers=tuple(people),
        train_end=train_end,
        test_start=test_start,
    )


def embed_needed(plan: Plan, cache: VectorCache) -> dict[str, F32]:
    """Vectors of every paper the plan needs, by id (embedding what the cache lacks)."""

    def report(message: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)

    papers = plan.needed()
    vectors = cache.vectors(CORPUS, [p.doc for p in papers], chunk=512, report=report)
    return {p.id: v for p, v in zip(papers, vectors, strict=True)}


# -- metrics --------------------------------------------------------------------------------------------


def precision_at(ranked: Sequence[str], relevant: frozenset[str], k: int = 10) -> float:
    return sum(1 for p in ranked[:k] if p in relevant) / k


def ndcg_at(ranked: Sequence[str], relevant: frozenset[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, p in enumerate(ranked[:k]) if p in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


# -- methods --------------------------------------------------------------------------------------------

Ranker = Callable[[Reader, int], list[str]]  # (reader, number of saves used) -> top 10


@dataclass
class Bench:
    plan: Plan
    vectors: dict[str, F32]

    def __post_init__(self) -> None:
        self.ids = list(self.plan.candidates)
        self.matrix = np.vstack([self.vectors[p] for p in self.ids])
        self.relevant = {
            r.category: frozenset(p for p in self.ids if r.category in self.plan.papers[p].categories)
            for r in self.plan.readers
        }

    def saved(self, reader: Reader, n: int) -> F32:
        return np.vstack([self.vectors[p] for p in reader.saved[:n]])

    def top(self, scores: npt.NDArray[np.float64], k: int = 10) -> list[str]:
        order = np.lexsort((np.arange(len(scores)), -scores))[:k]
        return [self.ids[i] for i in order]

    def recent(self, reader: Reader, n: int) -> list[str]:
        return self.ids[:10]  # the plan keeps candidates newest first

    def mean_cosine(self, reader: Reader, n: int) -> list[str]:
        centre = self.saved(reader, n).astype(np.float64).mean(axis=0)
        centre /= np.linalg.norm(centre)
        return self.top(self.matrix @ centre)

    def max_cosine(self, reader: Reader, n: int) -> list[str]:
        return self.top((self.matrix.astype(np.float64) @ self.saved(reader, n).T).max(axis=1))

    def model(self, params: ModelParams) -> Ranker:
        """The domain model exactly as the service runs it, scoring every candidate."""

        def rank(reader: Reader, n: int) -> list[str]:
            random_ids = sample_ids(self.ids, params.negatives, f"{reader.name}|{n}")
            random_vectors = np.vstack([self.vectors[p] for p in random_ids])
            model = fit_reader_model(self.saved(reader, n), random_ids, random_vectors, params)
            return self.top(model.score(self.ids, self.matrix))

        return rank

    def run(self, ranker: Ranker, readers: Sequence[Reader], n: int = SAVES_PER_READER) -> Result:
        result = Result()
        for reader in readers:
            ranked = ranker(reader, n)
            relevant = self.relevant[reader.category]
            result.add(reader, precision_at(ranked, relevant), ndcg_at(ranked, relevant))
        return result


@dataclass
class Result:
    rows: list[tuple[Reader, float, float]] = field(default_factory=list)

    def add(self, reader: Reader, p: float, ndcg: float) -> None:
        self.rows.append((reader, p, ndcg))

    def mean(self) -> tuple[float, float]:
        return (
            statistics.fmean(r[1] for r in self.rows),
            statistics.fmean(r[2] for r in self.rows),
        )

    def per_category(self) -> dict[str, tuple[float, float]]:
        """Each reader category's mean over seeds (the spread is taken over these)."""
        by: dict[str, list[tuple[float, float]]] = {}
        for reader, p, ndcg in self.rows:
            by.setdefault(reader.category, []).append((p, ndcg))
        return {
            c: (statistics.fmean(x[0] for x in v), statistics.fmean(x[1] for x in v)) for c, v in by.items()
        }

    def spread(self) -> str:
        values = sorted(v[1] for v in self.per_category().values())
        q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        return f"{values[0]:.2f} / {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f} / {values[-1]:.2f}"


# -- the service, end to end ----------------------------------------------------------------------------


@dataclass
class _Signals:
    """The library's view of a simulated reader: their saves, nothing else."""

    saves: dict[int, tuple[str, ...]]

    def signals(self, user_id: int) -> ReaderSignals:
        at = datetime(2025, 1, 1, tzinfo=UTC)
        saved = tuple(SavedPaper(p, (DEFAULT_TAG,), at) for p in self.saves[user_id])
        return ReaderSignals(user_id=user_id, saved=saved)


def service_ranker(
    bench: Bench, readers: Sequence[Reader], folder: Path, model_id: str
) -> tuple[Ranker, list[tuple[float, float]]]:
    """Load the candidates and saves into a real SQLite store, vector store and exact index, and rank
    through :class:`RecommendationService` (with the default settings) exactly as the web page does.

    Each reader is asked twice: the first request trains their model, the second finds it cached; the
    list of (first, second) durations in seconds fills as the ranker runs."""
    timings: list[tuple[float, float]] = []
    plan = bench.plan
    store = open_store(f"sqlite+pysqlite:///{folder / 'bench.db'}")
    papers = [plan.papers[p] for p in {**dict.fromkeys(plan.candidates), **bench.vectors}]
    batch = [
        Paper(
            id=p.id,
            title=p.title,
            abstract=p.abstract,
            authors=p.authors,
            categories=p.categories,
            published=datetime.combine(p.published, datetime.min.time(), UTC) + timedelta(hours=20),
        )
        for p in papers
    ]
    store.apply_batch(Batch(papers=batch))
    embeddings = SqlEmbeddingStore(store.engine)
    pending = [PendingPaper(p.id, p.title, p.abstract, p.content_hash, False) for p in batch]
    embeddings.save_vectors(model_id, pending, np.vstack([bench.vectors[p.id] for p in batch]))
    index = ExactVectorIndex(folder / "vectors", model_id=model_id, dimension=bench.matrix.shape[1])
    for records in embeddings.records(model_id):
        index.upsert(records)
    signals = _Signals({i: r.saved for i, r in enumerate(readers)})
    user_of = {r.name: i for i, r in enumerate(readers)}
    service = RecommendationService(
        signals=signals,
        papers=VisiblePapers(SqlFeedQueries(store.engine)),
        embeddings=embeddings,
        queries=SqlRecommendQueries(store.engine),
        vectors=FixedVectors(index),
        embedder=FixedEmbedder(_VectorSpace(model_id)),
        trending=_NoTrending(),
        settings=recommend_settings(SettingsModel()),
        clock=lambda: datetime(2026, 11, 1, tzinfo=UTC),
    )

    def rank(reader: Reader, n: int) -> list[str]:
        if n != len(reader.saved):
            raise ValueError("the service bench uses every save")
        started = time.perf_counter()
        first = [r.paper.id for r in service.for_you(user_of[reader.name], limit=10)]
        middle = time.perf_counter()
        again = [r.paper.id for r in service.for_you(user_of[reader.name], limit=10)]
        timings.append((middle - started, time.perf_counter() - middle))
        assert again == first, "a cached model must rank the same"
        return first

    return rank, timings


# -- reports --------------------------------------------------------------------------------------------


def _table(title: str, results: dict[str, Result]) -> None:
    print(f"\n{title}\n")
    print("| method | P@10 | nDCG@10 | nDCG@10 per category: min / q1 / median / q3 / max |")
    print("|---|---|---|---|")
    for name, result in results.items():
        p, ndcg = result.mean()
        print(f"| {name} | {p:.3f} | {ndcg:.3f} | {result.spread()} |")


def report(bench: Bench, seeds: Sequence[int], folder: Path, model_id: str, per_category: bool) -> None:
    readers = [r for r in bench.plan.readers if r.seed in seeds]
    started = time.perf_counter()
    chosen = ModelParams()
    service, timings = service_ranker(bench, readers, folder, model_id)
    results = {
        "recent-first": bench.run(bench.recent, readers),
        "mean-embedding cosine": bench.run(bench.mean_cosine, readers),
        "max cosine (cold-start mode)": bench.run(bench.max_cosine, readers),
        f"For you: service end to end ({chosen.learner}, C={chosen.c:g})": bench.run(service, readers),
        "  ablation: linear SVM, C=0.1": bench.run(
            bench.model(replace(chosen, learner="svm", c=0.1)), readers
        ),
        "  ablation: no cross-fitting": bench.run(bench.model(replace(chosen, cross_fit=False)), readers),
    }
    elapsed = time.perf_counter() - started
    _table(
        f"{len(readers)} readers ({len(readers) // len(seeds)} categories x seeds {list(seeds)}), "
        f"{len(bench.ids):,} candidates, {SAVES_PER_READER} saves each ({elapsed:.0f} s)",
        results,
    )
    first = statistics.median(t[0] for t in timings) * 1000
    cached = statistics.median(t[1] for t in timings) * 1000
    print(
        f"\nService latency over {len(timings)} readers ({len(bench.ids):,} recent papers, exact index): "
        f"median {first:.0f} ms with training, {cached:.0f} ms with the model cached"
    )
    print("\nFewer saves (the first n of each reader's 30), nDCG@10:\n")
    print("| saves | mean cosine | max cosine | model |")
    print("|---|---|---|---|")
    for n in (1, 3, 5, 10, 30):
        row = [bench.run(m, readers, n).mean()[1] for m in (bench.mean_cosine, bench.max_cosine)]
        model = bench.run(bench.model(replace(chosen, min_positives=1)), readers, n).mean()[1] if n > 1 else 0
        print(
            f"| {n} | {row[0]:.3f} | {row[1]:.3f} | {model:.3f} |"
            if n > 1
            else f"| {n} | {row[0]:.3f} | {row[1]:.3f} | - |"
        )
    if per_category:
        print("\nPer category (mean over seeds), P@10 / nDCG@10:\n")
        names = list(results)[:4]
        print("| category | relevant | " + " | ".join(names) + " |")
        print("|---|---|" + "---|" * len(names))
        tables = {n: results[n].per_category() for n in names}
        for category in tables[names[0]]:
            cells = [f"{tables[n][category][0]:.2f} / {tables[n][category][1]:.2f}" for n in names]
            print(f"| {category} | {len(bench.relevant[category])} | " + " | ".join(cells) + " |")


def tune(bench: Bench, seeds: Sequence[int]) -> None:
    readers = [r for r in bench.plan.readers if r.seed in seeds]
    grid: dict[str, ModelParams] = {}
    for c in (0.1, 0.3, 1.0, 3.0, 10.0):
        grid[f"logistic C={c:g}"] = ModelParams(learner="logistic", c=c)
    for c in (0.01, 0.03, 0.1, 0.3, 1.0):
        grid[f"svm C={c:g}"] = ModelParams(learner="svm", c=c)
    for n in (100, 400, 1000):
        grid[f"logistic C=1 negatives={n}"] = ModelParams(negatives=n)
    grid["logistic C=1, no cross-fitting"] = ModelParams(cross_fit=False)
    results = {"mean-embedding cosine": bench.run(bench.mean_cosine, readers)}
    for name, params in grid.items():
        started = time.perf_counter()
        results[name] = bench.run(bench.model(params), readers)
        print(f"{name}: {results[name].mean()[1]:.3f} ({time.perf_counter() - started:.1f} s)", flush=True)
    _table(f"Tuning on seeds {list(seeds)} ({len(readers)} readers)", results)
    print("\nCold start on the tuning seeds (the first n saves), nDCG@10: mean cosine / max cosine / model\n")
    for n in (1, 2, 3, 5, 10):
        row = [bench.run(m, readers, n).mean()[1] for m in (bench.mean_cosine, bench.max_cosine)]
        model = bench.run(bench.model(ModelParams(min_positives=1)), readers, n).mean()[1]
        print(f"| {n} | {row[0]:.3f} | {row[1]:.3f} | {model:.3f} |", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--embed-only", action="store_true", help="fill the vector cache and stop")
    parser.add_argument("--tune", action="store_true", help=f"sweep hyper-parameters on seeds {TUNE_SEEDS}")
    parser.add_argument("--per-category", action="store_true", help="also print each category's figures")
    parser.add_argument("--threads", type=int, default=None, help="embedding threads (default: all cores)")
    args = parser.parse_args(argv)
    papers = load_papers()
    plan = make_plan(papers, TUNE_SEEDS + REPORT_SEEDS)
    print(
        f"{len(plan.candidates):,} candidates from {plan.test_start}, "
        f"{len(plan.readers)} readers, {len(plan.needed()):,} papers need vectors",
        flush=True,
    )
    cache = VectorCache.default(threads=args.threads)
    vectors = embed_needed(plan, cache)
    if args.embed_only:
        return
    bench = Bench(plan, vectors)
    if args.tune:
        tune(bench, TUNE_SEEDS)
        return
    with tempfile.TemporaryDirectory(prefix="paperfeed-recommend-") as tmp:
        report(bench, REPORT_SEEDS, Path(tmp), cache.embedder.model_id, args.per_category)


if __name__ == "__main__":
    main()
