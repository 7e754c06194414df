"""The extracted one-line summary against Hugging Face's own (issue #33, part 5).

On the Hugging Face Daily Papers that have both an abstract and HF's ``ai_summary`` (5,711 in
../shared/data/hf_daily.jsonl.gz), each abstract is split, embedded and given its sentence roles exactly as
the indexer does (sentencex, the bundled MiniLM, the role model trained on CSAbstruct's train split), and a
rule picks one sentence. The pick is scored against HF's summary by ROUGE-L F1 (Google's rouge-score,
Porter stemming) and by the cosine of the two sentences' embeddings with the bundled model. Papers are
halved by md5(id): the rule is chosen on the *selection* half (a small grid of role, centrality, place and
length weights) and reported on the *report* half, beside the first-sentence and last-sentence baselines,
with 95 % bootstrap intervals (papers resampled; the differences paired).

    PYTHONPATH=src .venv/bin/python -m bench.one_line_summary [--papers N] [--threads 2]

Sentence vectors are pooled from each paper's own forward pass, as the indexer makes them (late chunking),
and cached by bench/vector_cache.py (first run: ~5.7k papers to embed).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import orjson

from bench.vector_cache import CACHE_ROOT, SHARED, Doc, VectorCache, default_embedder
from paperfeed.adapters.sentences.roles import RoleModelFolder
from paperfeed.adapters.sentences.splitter import SentencexSplitter
from paperfeed.domain.sentences import ROLES, Sentence, pools_sentences
from paperfeed.domain.summaries import (
    SUMMARY_RULE,
    SummaryRule,
    sentence_features,
    summary_scores,
)
from paperfeed.services.sentences import MAX_SENTENCES

F32 = npt.NDArray[np.float32]
CACHE = CACHE_ROOT / "one-line"
DATA = SHARED / "data" / "hf_daily.jsonl.gz"


@dataclass
class Item:
    id: str
    abstract: str
    reference: str  # HF's ai_summary
    title: str = ""  # the sentences are pooled from the paper's own text, title and abstract
    sentences: tuple[Sentence, ...] = ()
    vectors: F32 | None = None
    rouge: F32 | None = None  # ROUGE-L F1 of each sentence against the reference
    cosine: F32 | None = None  # cosine of each sentence with the reference
    features: F32 | None = None
    words: tuple[int, ...] = ()

    @property
    def half(self) -> str:
        return "select" if int(hashlib.md5(self.id.encode()).hexdigest(), 16) % 2 == 0 else "report"


def cpu() -> str:
    text = Path("/proc/cpuinfo").read_text()
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if "model name" in ln), "?")
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
    wanted = sorted(f for f in flags if f.startswith(("avx", "fma")))
    return f"{model}; {os.cpu_count()} cores; flags {' '.join(wanted)}"


def load(limit: int | None) -> list[Item]:
    items: dict[str, Item] = {}
    with gzip.open(DATA, "rb") as fh:
        for line in fh:
            d = orjson.loads(line)
            summary, abstract = d.get("ai_summary"), d.get("abstract")
            if summary and abstract and d["id"] not in items:
                items[d["id"]] = Item(
                    d["id"],
                    " ".join(abstract.split()),
                    " ".join(summary.split()),
                    " ".join(str(d.get("title") or "").split()),
                )
    found = sorted(items.values(), key=lambda i: hashlib.md5(i.id.encode()).hexdigest())
    return found[:limit] if limit else found


def embed_cached(name: str, texts: list[str], embed: Callable[[list[str]], F32]) -> F32:
    """``texts`` embedded, cached under a hash of the texts and the model."""
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"{name}-{key}.npy"
    if path.exists():
        loaded: F32 = np.load(path)
        return loaded
    CACHE.mkdir(parents=True, exist_ok=True)
    out = np.zeros((len(texts), 0), dtype=np.float32)
    parts = [np.asarray(embed(texts[i : i + 2048]), dtype=np.float32) for i in range(0, len(texts), 2048)]
    out = np.vstack(parts) if parts else out
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, out)
    os.replace(tmp, path)
    return out


def prepare(items: list[Item], threads: int | None) -> dict[str, float]:
    """Split, embed and classify as the indexer does; score every sentence against the reference."""
    from rouge_score import rouge_scorer

    seconds: dict[str, float] = {}
    embedder = default_embedder(threads=threads)
    started = time.perf_counter()
    splitter = SentencexSplitter()
    spans = [splitter.split(i.abstract)[:MAX_SENTENCES] for i in items]
    seconds["split"] = time.perf_counter() - started
    started = time.perf_counter()
    papers = [(Doc(i.id, i.title, i.abstract), found) for i, found in zip(items, spans, strict=True)]
    pooled = VectorCache(embedder).sentence_vectors("hf_daily_summaries", papers, report=print)
    vectors = np.vstack([v.reshape(-1, embedder.dimension) for v in pooled])  # as the indexer makes them
    references = embed_cached(f"references-{len(items)}", [i.reference for i in items], embedder.embed)
    seconds["embed (or load)"] = time.perf_counter() - started
    started = time.perf_counter()
    folder = RoleModelFolder(CACHE / "roles")  # the shipped one for the bundled model
    assert pools_sentences(embedder)
    roles = folder.current(embedder.model_id) or folder.train(embedder)
    seconds["role model (load or train)"] = time.perf_counter() - started
    started = time.perf_counter()
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    at = 0
    for n, (item, found) in enumerate(zip(items, spans, strict=True)):
        own = vectors[at : at + len(found)]
        at += len(found)
        sentence_texts = [item.abstract[a:b] for a, b in found]
        probabilities = roles.probabilities(own, sentence_texts)
        item.sentences = tuple(
            Sentence(a, b, ROLES[int(p.argmax())], tuple(float(x) for x in p))
            for (a, b), p in zip(found, probabilities, strict=True)
        )
        item.vectors = own
        item.features = sentence_features(item.sentences, own)
        item.words = tuple(len(t.split()) for t in sentence_texts)
        item.rouge = np.array(
            [scorer.score(item.reference, t)["rougeL"].fmeasure for t in sentence_texts], dtype=np.float32
        )
        item.cosine = (own @ references[n]).astype(np.float32) if len(own) else np.zeros(0, np.float32)
    seconds["roles + ROUGE-L"] = time.perf_counter() - started
    return seconds


Picker = Callable[[Item], int]


def by_rule(rule: SummaryRule) -> Picker:
    def pick(item: Item) -> int:
        assert item.features is not None
        scores = summary_scores(item.features, rule)
        fits = [i for i, w in enumerate(item.words) if rule.min_words <= w <= rule.max_words]
        pool = fits or list(range(len(item.words)))
        return max(pool, key=lambda i: (float(scores[i]), -i))

    return pick


def first(_: Item) -> int:
    return 0


def last(item: Item) -> int:
    return len(item.sentences) - 1


def oracle(item: Item) -> int:
    assert item.rouge is not None
    return int(item.rouge.argmax())


def figures(items: Sequence[Item], pick: Picker) -> tuple[F32, F32]:
    picks = [pick(i) for i in items]
    rouge = np.array([i.rouge[p] for i, p in zip(items, picks, strict=True) if i.rouge is not None])
    cosine = np.array([i.cosine[p] for i, p in zip(items, picks, strict=True) if i.cosine is not None])
    return rouge.astype(np.float32), cosine.astype(np.float32)


def interval(values: F32, rng: np.random.Generator, rounds: int = 2000) -> tuple[float, float, float]:
    n = len(values)
    means = values[rng.integers(0, n, size=(rounds, n))].mean(axis=1)
    return float(values.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def fmt(v: tuple[float, float, float]) -> str:
    return f"{v[0]:.4f} [{v[1]:.4f}, {v[2]:.4f}]"


def grid() -> list[SummaryRule]:
    rules: list[SummaryRule] = []
    for obj, res, meth, cent, pos, fst, max_words in itertools.product(
        (0.0, 0.5, 1.0),
        (0.0, 0.5, 1.0),
        (0.0, 0.5),
        (0.0, 0.5, 1.0, 2.0),
        (-0.2, 0.0, 0.2),
        (0.0, 0.3),
        (40, 60, 1000),
    ):
        rules.append(
            SummaryRule(
                objective=obj,
                result=res,
                method=meth,
                centrality=cent,
                position=pos,
                first=fst,
                max_words=max_words,
            )
        )
    return rules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=None, help="at most this many papers (default all)")
    parser.add_argument("--threads", type=int, default=None, help="embedding threads (default: the cores)")
    args = parser.parse_args()
    print(f"CPU: {cpu()}")
    wall = time.perf_counter()
    items = [i for i in load(args.papers) if i.abstract]
    seconds = prepare(items, args.threads)
    items = [i for i in items if i.sentences]
    select = [i for i in items if i.half == "select"]
    report = [i for i in items if i.half == "report"]
    sentences = sum(len(i.sentences) for i in items)
    print(
        f"{len(items):,} HF papers with an abstract and ai_summary ({sentences:,} sentences); "
        f"selection half {len(select):,}, report half {len(report):,}"
    )
    print("time: " + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))

    started = time.perf_counter()
    scored: list[tuple[float, float, SummaryRule]] = []
    for rule in grid():
        rouge, cosine = figures(select, by_rule(rule))
        scored.append((float(rouge.mean()), float(cosine.mean()), rule))
    scored.sort(key=lambda t: (t[0], t[1]), reverse=True)
    best = scored[0][2]
    print(f"grid of {len(scored)} rules on the selection half in {time.perf_counter() - started:.1f} s")
    print("best five on the selection half (ROUGE-L F1, cosine):")
    for r, c, rule in scored[:5]:
        print(f"  {r:.4f} {c:.4f}  {rule}")
    print(f"chosen: {best}")
    print(f"shipped (domain/summaries.py SUMMARY_RULE): {SUMMARY_RULE}")

    simple = replace(SummaryRule(), max_words=1000, min_words=0)
    rows: list[tuple[str, Picker]] = [
        ("first sentence (baseline)", first),
        ("last sentence (baseline)", last),
        ("max p(objective)", by_rule(replace(simple, objective=1.0))),
        ("max p(result)", by_rule(replace(simple, result=1.0))),
        ("max p(objective)+p(result)", by_rule(replace(simple, objective=1.0, result=1.0))),
        ("most central (cosine to the mean)", by_rule(replace(simple, centrality=1.0))),
        ("chosen on the selection half", by_rule(best)),
        ("shipped rule", by_rule(SUMMARY_RULE)),
        ("oracle (best ROUGE-L sentence; ceiling)", oracle),
    ]
    rng = np.random.default_rng(33)
    print(f"\nreport half ({len(report):,} papers): mean with 95 % bootstrap interval (2,000 resamples)")
    print(f"{'rule':42s} {'ROUGE-L F1':>26s} {'cosine (MiniLM)':>26s}")
    results: dict[str, tuple[F32, F32]] = {}
    for name, pick in rows:
        rouge, cosine = figures(report, pick)
        results[name] = (rouge, cosine)
        print(f"{name:42s} {fmt(interval(rouge, rng)):>26s} {fmt(interval(cosine, rng)):>26s}")
    shipped = results["shipped rule"]
    print("\npaired differences, shipped rule minus baseline (95 % bootstrap interval):")
    for name in ("first sentence (baseline)", "last sentence (baseline)"):
        base = results[name]
        dr = (shipped[0] - base[0]).astype(np.float32)
        dc = (shipped[1] - base[1]).astype(np.float32)
        print(f"  vs {name:28s} ROUGE-L {fmt(interval(dr, rng))}  cosine {fmt(interval(dc, rng))}")
    picks = [by_rule(SUMMARY_RULE)(i) for i in report]
    at_first = sum(p == 0 for p in picks) / len(picks)
    at_last = sum(p == len(i.sentences) - 1 for p, i in zip(picks, report, strict=True)) / len(picks)
    words = np.array([i.words[p] for p, i in zip(picks, report, strict=True)])
    theirs = int(np.median([len(i.reference.split()) for i in report]))
    print(
        f"shipped picks: first sentence {at_first:.0%}, last {at_last:.0%}; "
        f"words median {int(np.median(words))} (HF's: {theirs})"
    )
    print(f"wall {time.perf_counter() - wall:.1f} s")


if __name__ == "__main__":
    main()
