"""The proxies similar lists are chosen on (issue #43), each a judgment of a paper's similar list, with
the facet(s) it speaks for and why. Used by bench/facet_similar.py.

* **seed pages coherence@10**: the share of the 10 on a Hugging Face search page the paper is on. Speaks
  for overall, and for the topic every facet list must keep (each page is a topic, often a method:
  8-bit matrix multiplication, mixtures of transformers).
* **Paperscape co-citation nDCG@10**: the papers 1996's papers cite together with it, graded by how many
  do. Overall, and background: papers cited side by side in later work share the problem they address.
* **SciFact co-evidence nDCG@10**: the abstracts annotators judged evidence for a claim it is evidence
  for. Overall, and result: a claim is a finding, its evidence reports it.
* **SciFact claim → abstract nDCG@10**: a claim (one sentence stating a finding) as the query's only
  sentence, its judged abstracts: the sentence-level match of a finding (the result facet, and max-sim
  in the overall list).
* **CSAbstruct role agreement@10**: for each of the 10, the share of the query's facet sentences whose
  best-matching sentence in it has that facet's role by CSAbstruct's human labels: the facet itself,
  that the list's papers match on their background, method or result and not elsewhere.

Every proxy but the last rewards topic; the last rewards only the facet. A facet list is chosen to gain on
its facet's proxies without losing on any topical one (the expert judgments the facets are checked on
favour topic: a paper with the same method on another subject is rarely judged similar).
"""

from __future__ import annotations

import gzip
import hashlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import orjson

from bench.facet_lists import FACET_ROLES, Corpus
from bench.ir_metrics import ndcg_at_k
from bench.vector_cache import SHARED

TOP = 10


def split_of(paper_id: str) -> str:
    """Train or test by md5 (bench/similar_quality.py's and bench/similar_citations.py's rule)."""
    return "train" if int(hashlib.md5(f"split:{paper_id}".encode()).hexdigest(), 16) % 2 == 0 else "test"


# score(query, ranked ids, facet whose agreement is asked (csabstruct only)) -> value in [0, 1]
Score = Callable[[str, Sequence[str], str], float]


@dataclass
class Proxy:
    name: str
    corpus: Corpus
    queries: dict[str, list[str]]  # split -> query ids
    score: Score
    topical: bool  # rewards topic (every proxy but role agreement)
    facets: tuple[str, ...]  # the facets it speaks for (besides overall)


def seed_pages() -> dict[str, set[str]]:
    pages: dict[str, set[str]] = defaultdict(set)
    for line in (SHARED / "seeds" / "seed_papers.jsonl").read_bytes().splitlines():
        row = orjson.loads(line)
        pages["seed:" + str(row["id"])].add(row["seed_page"])
    return dict(pages)


def seeds_proxy(corpus: Corpus) -> Proxy:
    pages = seed_pages()

    def score(q: str, ranked: Sequence[str], _facet: str) -> float:
        return sum(1 for o in ranked[:TOP] if pages.get(o, set()) & pages[q]) / TOP

    ids = sorted(q for q in corpus.lists if q in pages)
    split = {s: [q for q in ids if split_of(q) == s] for s in ("train", "test")}
    return Proxy("seed pages coherence@10", corpus, split, score, True, ("background", "method", "result"))


def paperscape_proxy(corpus: Corpus) -> Proxy:
    from bench.similar_citations import judgments, read_edges, read_papers

    qrels = judgments(read_papers(), read_edges())

    def score(q: str, ranked: Sequence[str], _facet: str) -> float:
        return ndcg_at_k(ranked, qrels[q], TOP)

    ids = sorted(q for q in qrels if q in corpus.lists)
    split = {s: [q for q in ids if split_of(q) == s] for s in ("train", "test")}
    return Proxy("Paperscape co-citation nDCG@10", corpus, split, score, True, ("background",))


def coevidence_proxy(corpus: Corpus) -> Proxy:
    from bench.similar_quality import coevidence

    train, test = coevidence()
    related = train | test

    def score(q: str, ranked: Sequence[str], _facet: str) -> float:
        return ndcg_at_k(ranked, related[q], TOP)

    split = {
        "train": sorted(q for q in train if q in corpus.lists),
        "test": sorted(q for q in test if q in corpus.lists),
    }
    return Proxy("SciFact co-evidence nDCG@10", corpus, split, score, True, ("result",))


def claims_proxy(corpus: Corpus) -> Proxy:
    from bench.facet_similar import judgments

    claims, claim_split, _ = judgments()
    rel = {f"claim:{c}": {f"scifact:{d}": 1 for d in docs} for c, docs in claims.items()}

    def score(q: str, ranked: Sequence[str], _facet: str) -> float:
        return ndcg_at_k(ranked, rel[q], TOP)

    split = {
        s: sorted(q for q in corpus.lists if claim_split[q.split(":", 1)[1]] == s) for s in ("train", "test")
    }
    return Proxy("SciFact claim → abstract nDCG@10", corpus, split, score, True, ("result",))


def csabstruct_gold() -> dict[str, tuple[list[tuple[int, int]], list[str], str]]:
    """Each CSAbstruct abstract's sentence spans in the joined text, their human roles, and its split."""
    out = {}
    with gzip.open(SHARED / "data" / "csabstruct.jsonl.gz", "rb") as fh:
        for n, line in enumerate(fh):  # its abstract_id is 0 for all: the line number names each
            row = orjson.loads(line)
            spans, at = [], 0
            for sentence in row["sentences"]:
                spans.append((at, at + len(sentence)))
                at += len(sentence) + 1
            out[f"csabstruct:{n}"] = (spans, list(row["labels"]), row["split"])
    return out


def csabstruct_proxy(corpus: Corpus) -> Proxy:
    gold = csabstruct_gold()
    stored_roles: dict[str, list[str]] = {}
    for (
        pid,
        s,
    ) in corpus.sentences.items():  # each stored sentence's human role: the gold sentence it overlaps most
        if pid not in gold:
            continue
        spans, labels, _ = gold[pid]
        roles = []
        for a, b in s.spans:
            overlap = [max(0, min(b, d) - max(a, c)) for c, d in spans]
            roles.append(labels[int(np.argmax(overlap))])
        stored_roles[pid] = roles

    def score(q: str, ranked: Sequence[str], facet: str) -> float:
        own = corpus.sentences[q]
        wanted = FACET_ROLES[facet]
        rows = [
            i for i, r in enumerate(own.roles) if r in wanted
        ]  # the query's facet, as the service sees it
        if not rows:
            return 0.0
        shares = []
        for pid in ranked[:TOP]:
            other = corpus.sentences.get(pid)
            if other is None or pid not in stored_roles:
                shares.append(0.0)
                continue
            best = (own.vectors[rows] @ other.vectors.T).argmax(axis=1)
            shares.append(float(np.mean([stored_roles[pid][j] in wanted for j in best])))
        return float(np.mean(shares))

    ids = sorted(q for q in corpus.lists if q in gold and gold[q][2] != "train" and q in corpus.sentences)
    split = {
        "train": [q for q in ids if gold[q][2] == "dev"],
        "test": [q for q in ids if gold[q][2] == "test"],
    }
    return Proxy(
        "CSAbstruct role agreement@10", corpus, split, score, False, ("background", "method", "result")
    )


def interval(values: Sequence[float], rounds: int = 2000, seed: int = 7) -> tuple[float, float]:
    """95 % bootstrap interval of the mean over queries."""
    data = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(rounds, len(data)))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def paired(after: Sequence[float], before: Sequence[float], rounds: int = 2000) -> tuple[float, float, float]:
    """The change of the mean (after - before) and its 95 % paired bootstrap interval."""
    a, b = np.asarray(after, dtype=np.float64), np.asarray(before, dtype=np.float64)
    rng = np.random.default_rng(11)
    picks = rng.integers(0, len(a), size=(rounds, len(a)))
    diffs = a[picks].mean(axis=1) - b[picks].mean(axis=1)
    return float(a.mean() - b.mean()), float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5))
