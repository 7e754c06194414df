"""``paperfeed model adapt``: fine-tune the embedding model on the instance's papers, and adopt it only if
it beats the base model on papers it never saw.

A run is identified by its base model, its training options and the ids of its training papers; its
checkpoints live under that key, so running the same command again after a stop or a crash resumes it.
The finished model is measured against the base on the held-out papers (see
:func:`paperfeed.domain.adaptation.measure`) and either adopted — the manifest names it, its new model_id
makes ``paperfeed index`` re-embed every paper, resumably — or kept aside with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from paperfeed.domain.adaptation import (
    ActiveModel,
    AdaptedModels,
    AdaptOptions,
    CorpusPaper,
    GateDecision,
    ModelTrainer,
    PairSource,
    Quality,
    Split,
    StepProgress,
    TrainingPair,
    TrainOutcome,
    cap_pairs,
    decide,
    measure,
    split_corpus,
    title_abstract_pairs,
)
from paperfeed.domain.models import Paper
from paperfeed.domain.wording import count

__all__ = ["AdaptPlan", "AdaptResult", "AdaptationService", "NotEnoughPapers"]


class NotEnoughPapers(ValueError):
    """The store has too few papers with a title and an abstract (the message says how many are needed)."""


@dataclass(frozen=True, slots=True)
class AdaptPlan:
    key: str
    model_id: str
    run_dir: Path
    split: Split
    pairs: list[TrainingPair]
    resuming: bool  # a checkpoint of this very run exists
    pair_counts: dict[str, int] = field(default_factory=dict)  # pairs per source, by the source's name

    def message(self) -> str:
        s = self.split
        verb = "resuming" if self.resuming else "training"
        sources = ", ".join(f"{n:,} {name}" for name, n in self.pair_counts.items())
        return (
            f"{verb} {self.model_id} on {count(len(s.train), 'paper')} ({count(len(self.pairs), 'pair')}"
            f"{': ' + sources if sources else ''}); "
            f"{count(len(s.held_out), 'paper')} held out for the evaluation, "
            f"{count(len(s.distractors), 'distractor')}"
        )


@dataclass(frozen=True, slots=True)
class AdaptResult:
    model_id: str
    model_dir: Path
    base: Quality
    adapted: Quality
    decision: GateDecision
    train_seconds: float
    eval_seconds: float


class AdaptationService:
    """Plans, trains, evaluates and gates one adaptation of the embedding model."""

    def __init__(
        self,
        papers: Callable[[], Iterator[list[Paper]]],
        trainer: ModelTrainer,
        models: AdaptedModels,
        *,
        base_spec: str,
        base_name: str,
        pair_sources: Sequence[tuple[str, PairSource]] = (("title ↔ abstract", title_abstract_pairs),),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._papers = papers
        self.trainer = trainer
        self.models = models
        self.base_spec = base_spec  # as configured ("" for the packaged model): recorded in the manifest
        self.base_name = base_name
        self.pair_sources = pair_sources  # (name, source): the plan counts each source's pairs by name
        self._clock = clock

    def corpus(self) -> list[CorpusPaper]:
        return [
            CorpusPaper(p.id, p.title, p.abstract, p.primary_category)
            for page in self._papers()
            for p in page
            if p.title and p.abstract
        ]

    def plan(self, options: AdaptOptions) -> AdaptPlan:
        """Split the store's papers and name the run; raises :class:`NotEnoughPapers` when too few."""
        try:
            split = split_corpus(self.corpus(), options)
        except ValueError as exc:
            raise NotEnoughPapers(str(exc)) from None
        pairs: list[TrainingPair] = []
        counts: dict[str, int] = {}
        mined = [(name, source(split.train)) for name, source in self.pair_sources]
        for name, kept in cap_pairs(mined, options.max_pairs):
            counts[name] = counts.get(name, 0) + len(kept)
            pairs.extend(kept)
        texts = hashlib.blake2b(digest_size=8)  # edges harvested since change the pairs: a new run, never
        for pair in pairs:
            texts.update(f"{pair.anchor}\x00{pair.positive}\x01".encode())  # a resume on other pairs
        ident = {
            "base": self.base_spec or self.base_name,
            "options": options.training_key(),
            "train": [p.paper_id for p in split.train],
            "pairs": texts.hexdigest(),
        }
        key = hashlib.blake2b(json.dumps(ident, sort_keys=True).encode(), digest_size=6).hexdigest()
        run_dir = self.models.run_dir(key)
        resuming = (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").glob("checkpoint-*"))
        return AdaptPlan(key, f"adapted-{key}", run_dir, split, pairs, resuming, counts)

    def train(
        self,
        plan: AdaptPlan,
        options: AdaptOptions,
        *,
        progress: StepProgress | None = None,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> TrainOutcome:
        """Train (or resume) the run; a model this run already produced is reused, not retrained."""
        done = self.models.model_dir(plan.model_id)
        if (done / "config.json").is_file():
            return TrainOutcome(True, 0, 0, 0, 0.0, done)
        return self.trainer.train(
            plan.pairs, plan.run_dir, options, progress=progress, should_stop=should_stop
        )

    def evaluate(self, plan: AdaptPlan, outcome: TrainOutcome, options: AdaptOptions) -> AdaptResult:
        """Measure base and adapted models on the held-out papers; adopt the adapted one if it wins,
        otherwise keep it aside (its folder stays, the manifest is untouched)."""
        if not outcome.finished or outcome.model_dir is None:
            raise ValueError("training has not finished")
        started = self._clock()
        held, distractors = plan.split.held_out, plan.split.distractors
        base = measure(self.trainer.embedder(None, options.threads).embed, held, distractors)
        adapted = measure(self.trainer.embedder(outcome.model_dir, options.threads).embed, held, distractors)
        decision = decide(base, adapted, options.min_gain)
        target = self.models.model_dir(plan.model_id)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(outcome.model_dir, target)
        shutil.rmtree(plan.run_dir, ignore_errors=True)
        if decision.adopt:
            self.models.adopt(
                ActiveModel(
                    model_id=plan.model_id,
                    path=target.resolve(),
                    base=self.base_spec,
                    created=datetime.now(UTC).isoformat(timespec="seconds"),
                    papers=len(plan.split.train),
                    base_quality=base,
                    adapted_quality=adapted,
                    extra={
                        "options": options.training_key(),
                        "pairs": len(plan.pairs),
                        "pair_sources": plan.pair_counts,
                    },
                )
            )
        return AdaptResult(
            plan.model_id, target, base, adapted, decision, outcome.seconds, self._clock() - started
        )

    def status(self) -> tuple[ActiveModel | None, list[Path]]:
        """The adopted model (None: the base model is in use) and the models kept aside."""
        return self.models.active(), self.models.kept_aside()

    def reset(self) -> ActiveModel | None:
        return self.models.reset()
