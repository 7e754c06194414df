"""Adapting the embedding model to an instance's own papers: the split, the measures, the gate, the ports.

``paperfeed model adapt`` fine-tunes the base model on pairs mined from the store without labels (a
paper's title and its abstract; citing and cited papers once a citation graph exists), then compares the
base and adapted models on papers held out of training. Everything here is pure: which papers are held
out, the retrieval and category measures, and the decision to adopt; training and the manifest that
makes an adapted model the instance's embedder are ports, implemented in ``adapters/embed``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .embedding import embedding_text
from .search import Embedder
from .wording import count

if TYPE_CHECKING:  # numpy is imported where it is used: `paperfeed --help` imports this module
    from typing import TypeAlias

    import numpy as np
    import numpy.typing as npt

    Vectors: TypeAlias = npt.NDArray[np.float32]

__all__ = [
    "MIN_HELD_OUT",
    "MIN_PAPERS",
    "MIN_TRAIN",
    "ActiveModel",
    "AdaptOptions",
    "AdaptedModels",
    "CitationLinks",
    "CitationPairs",
    "CorpusPaper",
    "GateDecision",
    "ModelTrainer",
    "PairSource",
    "Quality",
    "Split",
    "StepProgress",
    "TrainOutcome",
    "TrainingPair",
    "cap_pairs",
    "decide",
    "measure",
    "split_corpus",
    "title_abstract_pairs",
]


MIN_HELD_OUT = 8  # fewer held-out queries and the gate's measures are noise
MIN_TRAIN = 32  # fewer pairs and in-batch negatives teach nothing
MIN_PAPERS = MIN_HELD_OUT + MIN_TRAIN
HELD_OUT_SHARE = 5  # one paper in five is held out, between MIN_HELD_OUT and AdaptOptions.eval_papers
K = 10


@dataclass(frozen=True, slots=True)
class CorpusPaper:
    """What adaptation reads of a paper: its text and (when known) its primary category."""

    paper_id: str
    title: str
    abstract: str
    category: str | None = None


@dataclass(frozen=True, slots=True)
class TrainingPair:
    """Two texts about the same thing: the model learns to rank ``positive`` first for ``anchor``."""

    anchor: str
    positive: str


class PairSource(Protocol):
    """Mines training pairs from the training papers (``AdaptationService(pair_sources=...)``): title ↔
    abstract from every paper, citing ↔ cited from the stored citation graph."""

    def __call__(self, papers: Sequence[CorpusPaper]) -> list[TrainingPair]: ...


def title_abstract_pairs(papers: Sequence[CorpusPaper]) -> list[TrainingPair]:
    """A paper's title as the query for its own abstract: the unlabelled signal every paper carries."""
    return [TrainingPair(p.title, p.abstract) for p in papers if p.title and p.abstract]


class CitationLinks(Protocol):
    """The stored citation graph, read for training (implemented by the citation records adapter)."""

    def links_among(self, paper_ids: Sequence[str]) -> list[tuple[str, str]]:
        """Every stored (citing, cited) edge whose two ends are both among ``paper_ids``, each once."""
        ...


@dataclass(frozen=True, slots=True)
class CitationPairs:
    """Citing ↔ cited papers as pairs: a paper's text as the query for the text of a paper it cites.

    Both ends must be training papers, so no held-out paper is ever seen in training. The text is what
    the index embeds (title and abstract), since similar papers compare exactly those vectors. A paper
    is an anchor in at most ``per_paper`` pairs, so a survey's long bibliography cannot fill the batches.
    """

    links: CitationLinks
    per_paper: int = 8

    def __call__(self, papers: Sequence[CorpusPaper]) -> list[TrainingPair]:
        by_id = {p.paper_id: p for p in papers if p.title and p.abstract}
        used: dict[str, int] = {}
        pairs: list[TrainingPair] = []
        for citing, cited in sorted(self.links.links_among(list(by_id))):
            if citing == cited or citing not in by_id or cited not in by_id:
                continue
            if used.get(citing, 0) >= self.per_paper:
                continue
            used[citing] = used.get(citing, 0) + 1
            a, b = by_id[citing], by_id[cited]
            anchor, positive = embedding_text(a.title, a.abstract), embedding_text(b.title, b.abstract)
            pairs.append(TrainingPair(anchor, positive))
        return pairs


@dataclass(frozen=True, slots=True)
class AdaptOptions:
    """The bounds of one adaptation run (the CLI's options)."""

    max_papers: int = 10_000  # training papers at most
    max_pairs: int | None = None  # training pairs at most, a stable sample of every source (None: all)
    epochs: int = 1
    batch_size: int = 32  # pairs per step: each anchor sees batch_size - 1 in-batch negatives
    max_seq_length: int = 128  # tokens per text while training (the abstract's opening carries its gist)
    learning_rate: float = 2e-5
    threads: int | None = None
    eval_papers: int = 300  # held-out queries at most
    distractors: int = 2_000  # other papers' abstracts the held-out ones compete with, at most
    min_gain: float = 0.0  # adopt only if adapted nDCG@10 exceeds the base's by more than this
    save_steps: int = 100  # a checkpoint every this many steps
    seed: int = 42
    stop_after: int | None = None  # stop (saving a checkpoint) after this many steps: bounded runs, tests

    def training_key(self) -> dict[str, object]:
        """The options that change what is trained (a run resumes only with the same ones)."""
        return {
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "max_seq_length": self.max_seq_length,
            "learning_rate": self.learning_rate,
            "seed": self.seed,
        }


def cap_pairs(
    mined: Sequence[tuple[str, list[TrainingPair]]], limit: int | None
) -> list[tuple[str, list[TrainingPair]]]:
    """At most ``limit`` pairs in all, each source keeping its share (rounded, at least one pair when it
    has any), the pairs of a source picked by a stable hash of their texts: a bounded run on a small CPU
    still sees every kind of pair, and the same store gives the same sample (so a capped run resumes)."""
    total = sum(len(pairs) for _, pairs in mined)
    if limit is None or total <= limit:
        return [(name, list(pairs)) for name, pairs in mined]
    out: list[tuple[str, list[TrainingPair]]] = []
    for name, pairs in mined:
        share = max(1, round(limit * len(pairs) / total)) if pairs else 0
        picked = sorted(pairs, key=lambda p: _order(f"{p.anchor}\x00{p.positive}"))[:share]
        keep = set(map(id, picked))
        out.append((name, [p for p in pairs if id(p) in keep]))  # in the source's own order
    return out


def _order(paper_id: str) -> str:
    """A stable pseudo-random order of papers: a paper's place depends on its id only."""
    return hashlib.blake2b(paper_id.encode(), digest_size=8).hexdigest()


@dataclass(frozen=True, slots=True)
class Split:
    train: list[CorpusPaper]
    held_out: list[CorpusPaper]
    distractors: list[CorpusPaper]  # papers not held out whose abstracts compete in the evaluation


def split_corpus(papers: Sequence[CorpusPaper], options: AdaptOptions) -> Split:
    """Hold out one paper in five (at least MIN_HELD_OUT, at most ``eval_papers``); train on up to
    ``max_papers`` of the rest. Raises ValueError saying how many papers are needed when too few."""
    usable = sorted((p for p in papers if p.title and p.abstract), key=lambda p: _order(p.paper_id))
    if len(usable) < MIN_PAPERS:
        raise ValueError(
            f"adapting the model needs at least {count(MIN_PAPERS, 'paper')} with a title and an abstract "
            f"({MIN_HELD_OUT} held out for the evaluation, {MIN_TRAIN} to train on); the store has "
            f"{len(usable)}"
        )
    held = max(MIN_HELD_OUT, min(options.eval_papers, len(usable) // HELD_OUT_SHARE))
    held_out, rest = usable[:held], usable[held:]
    if len(rest) < MIN_TRAIN:
        raise ValueError(f"after holding out {count(held, 'paper')} only {len(rest)} remain to train on")
    train = rest[: max(MIN_TRAIN, options.max_papers)]
    return Split(train, held_out, rest[: options.distractors])


@dataclass(frozen=True, slots=True)
class Quality:
    """One model on the held-out papers."""

    mrr: float  # title -> own abstract, among held-out and distractor abstracts
    ndcg10: float
    category_at10: float | None  # share of the 10 nearest abstracts with the same primary category
    queries: int
    candidates: int


def _rank_of_own(queries: Vectors, docs: Vectors) -> npt.NDArray[np.int64]:
    """1-based rank of doc ``i`` for query ``i`` (ties count against the query)."""
    import numpy as np

    scores = queries @ docs.T
    own = scores[np.arange(len(queries)), np.arange(len(queries))]
    ranks: npt.NDArray[np.int64] = (scores >= own[:, None]).sum(axis=1).astype(np.int64)
    return ranks


def measure(
    embed: Callable[[Sequence[str]], Vectors],
    held_out: Sequence[CorpusPaper],
    distractors: Sequence[CorpusPaper],
) -> Quality:
    """Title → abstract retrieval (MRR, nDCG@10 with one relevant abstract) over the held-out papers, the
    distractors' abstracts competing; and primary-category agreement of each held-out abstract's 10
    nearest abstracts (held-out and distractors alike), over the papers whose category is known."""
    import numpy as np

    candidates = [*held_out, *distractors]
    titles = embed([p.title for p in held_out])
    abstracts = embed([p.abstract for p in candidates])
    ranks = _rank_of_own(titles, abstracts)
    mrr = float(np.mean(1.0 / ranks))
    ndcg = float(np.mean(np.where(ranks <= K, 1.0 / np.log2(ranks + 1.0), 0.0)))
    agreement: float | None = None
    known = [i for i, p in enumerate(held_out) if p.category]
    if known:
        sims = abstracts[known] @ abstracts.T
        sims[np.arange(len(known)), known] = -np.inf  # not itself
        k = min(K, len(candidates) - 1)
        nearest = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        shares = [
            np.mean([candidates[j].category == held_out[i].category for j in row])
            for i, row in zip(known, nearest, strict=True)
        ]
        agreement = float(np.mean(shares))
    return Quality(mrr, ndcg, agreement, len(held_out), len(candidates))


@dataclass(frozen=True, slots=True)
class GateDecision:
    adopt: bool
    reason: str


def decide(base: Quality, adapted: Quality, min_gain: float) -> GateDecision:
    """Adopt when held-out nDCG@10 rises by more than ``min_gain`` and category agreement (when known)
    does not fall: the adapted model must be better at the instance's own retrieval without getting worse
    at grouping its fields."""
    gain = adapted.ndcg10 - base.ndcg10
    if gain <= min_gain:
        return GateDecision(
            False,
            f"held-out nDCG@10 {base.ndcg10:.4f} -> {adapted.ndcg10:.4f} ({gain:+.4f}) does not beat the "
            f"base model by more than {min_gain:+.4f}",
        )
    before, after = base.category_at10, adapted.category_at10
    if before is not None and after is not None and after < before:
        return GateDecision(False, f"category agreement@10 fell {before:.4f} -> {after:.4f}")
    return GateDecision(True, f"held-out nDCG@10 {base.ndcg10:.4f} -> {adapted.ndcg10:.4f} ({gain:+.4f})")


class StepProgress(Protocol):
    """Told how training advances (the CLI draws a bar with steps and ETA)."""

    def step(self, done: int, total: int) -> None: ...


@dataclass(frozen=True, slots=True)
class TrainOutcome:
    """What a training call did: finished (``model_dir`` holds the model) or stopped at a checkpoint."""

    finished: bool
    steps_done: int
    steps_total: int
    resumed_from: int  # the step it resumed from (0: a fresh start)
    seconds: float
    model_dir: Path | None


class ModelTrainer(Protocol):
    """Fine-tunes the base model on pairs with in-batch negatives, checkpointing into ``run_dir`` so a
    stopped or killed run resumes from its last checkpoint; ``should_stop`` is polled after each step (a
    true answer saves a checkpoint and returns unfinished)."""

    def train(
        self,
        pairs: Sequence[TrainingPair],
        run_dir: Path,
        options: AdaptOptions,
        *,
        progress: StepProgress | None = None,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> TrainOutcome: ...

    def embedder(self, model_dir: Path | None, threads: int | None = None) -> Embedder:
        """An embedder for a trained model folder (``None``: the base model), to evaluate it."""
        ...


@dataclass(frozen=True, slots=True)
class ActiveModel:
    """The manifest entry that makes an adapted model the instance's embedder."""

    model_id: str  # "adapted-<hash>": a new id, so every vector of the base model is re-embedded
    path: Path
    base: str  # the base model it was trained from
    created: str  # ISO-8601, UTC
    papers: int  # training papers
    base_quality: Quality | None = None
    adapted_quality: Quality | None = None
    extra: dict[str, object] = field(default_factory=dict)


class AdaptedModels(Protocol):
    """Where adapted models, training runs and the manifest naming the active one live (the data dir)."""

    def run_dir(self, key: str) -> Path: ...

    def model_dir(self, model_id: str) -> Path: ...

    def active(self) -> ActiveModel | None: ...

    def adopt(self, model: ActiveModel) -> None: ...

    def reset(self) -> ActiveModel | None:
        """Forget the active adapted model (its folder stays); returns what was active."""
        ...

    def kept_aside(self) -> list[Path]: ...
