"""Fine-tuning with sentence-transformers' trainer: MultipleNegativesRankingLoss on (anchor, positive) pairs.

Each step takes ``batch_size`` pairs; every anchor's positive must outrank the other pairs' positives
(in-batch negatives; the no-duplicates batch sampler keeps a text from being its own negative). The Hugging
Face trainer underneath saves checkpoints (model, optimizer, scheduler, RNG and data position) into
``<run_dir>/checkpoints`` every ``save_steps`` and when asked to stop, and resumes from the newest one, so a
killed run loses at most ``save_steps`` steps. The finished model is saved to ``<run_dir>/model``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from paperfeed.domain.adaptation import AdaptOptions, StepProgress, TrainingPair, TrainOutcome
from paperfeed.domain.errors import EmbedderUnavailable
from paperfeed.domain.search import Embedder

from .base import ModelSource, force_offline
from .sentence_transformers import SentenceTransformerEmbedder, quiet_transformers

__all__ = ["SentenceTransformersTrainer"]


def _training_imports() -> SimpleNamespace:
    """The training libraries, imported on first use (the CLI starts without them)."""
    force_offline()
    try:
        import torch
        from datasets import Dataset, disable_progress_bars
        from datasets.table import InMemoryTable
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.base.sampler import BatchSamplers
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
        from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
        from sentence_transformers.sentence_transformer.training_args import (
            SentenceTransformerTrainingArguments,
        )
        from transformers import PrinterCallback, TrainerCallback
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"adapting the model needs torch, sentence-transformers, datasets and accelerate "
            f"({exc.name} is missing)"
        ) from exc
    disable_progress_bars()  # the CLI draws its own bar

    def dataset(columns: dict[str, list[str]], fingerprint: str) -> Any:
        # An explicit fingerprint: datasets would otherwise hash the whole table with dill, which is
        # slow on large corpora and fails outright with some dill/pyarrow versions
        return Dataset(InMemoryTable.from_pydict(columns), fingerprint=fingerprint)

    return SimpleNamespace(
        torch=torch,
        dataset=dataset,
        model=SentenceTransformer,
        samplers=BatchSamplers,
        loss=MultipleNegativesRankingLoss,
        trainer=SentenceTransformerTrainer,
        args=SentenceTransformerTrainingArguments,
        callback=TrainerCallback,
        printer=PrinterCallback,
    )


def _step_of(checkpoint: Path) -> int:
    return int(checkpoint.name.rsplit("-", 1)[-1])


def last_complete_checkpoint(folder: Path) -> Path | None:
    """The newest checkpoint the trainer finished writing, removing any it did not finish (a kill -9
    while saving). The trainer writes ``trainer_state.json`` last, so its presence marks a whole one."""
    found = sorted(
        (p for p in folder.glob("checkpoint-*") if p.is_dir() and p.name.rsplit("-", 1)[-1].isdigit()),
        key=_step_of,
        reverse=True,
    )
    for checkpoint in found:
        try:
            json.loads((checkpoint / "trainer_state.json").read_text())
        except (OSError, ValueError):
            shutil.rmtree(checkpoint, ignore_errors=True)
            continue
        return checkpoint
    return None


def _widget_examples(pairs: Sequence[TrainingPair], count: int = 3) -> list[dict[str, Any]]:
    """A few of the shortest training pairs, as the model card's sentence-similarity widget shows them."""
    shortest = sorted(pairs, key=lambda p: len(p.anchor) + len(p.positive))[:count]
    return [{"source_sentence": p.anchor, "sentences": [p.positive]} for p in shortest]


class SentenceTransformersTrainer:
    """:class:`~paperfeed.domain.adaptation.ModelTrainer` on the CPU with sentence-transformers."""

    def __init__(self, base: ModelSource) -> None:
        self.base = base

    def embedder(self, model_dir: Path | None, threads: int | None = None) -> Embedder:
        source = self.base if model_dir is None else ModelSource(model_dir.name, model_dir, str(model_dir))
        return SentenceTransformerEmbedder(source, threads=threads)

    def train(
        self,
        pairs: Sequence[TrainingPair],
        run_dir: Path,
        options: AdaptOptions,
        *,
        progress: StepProgress | None = None,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> TrainOutcome:
        started = time.monotonic()
        final = run_dir / "model"
        if (final / "config.json").is_file():  # finished before (e.g. killed while evaluating)
            return TrainOutcome(True, 0, 0, 0, 0.0, final)
        lib = _training_imports()
        torch = lib.torch
        quiet_transformers()
        if options.threads:
            torch.set_num_threads(options.threads)
        checkpoints = run_dir / "checkpoints"
        checkpoints.mkdir(parents=True, exist_ok=True)
        resume = last_complete_checkpoint(checkpoints)
        try:
            model = lib.model(self.base.location, device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise EmbedderUnavailable(f"cannot load base model {self.base.spec!r} offline: {exc}") from exc
        serving_length = model.max_seq_length
        model.max_seq_length = options.max_seq_length  # shorter while training: cheaper steps
        data = lib.dataset(
            {"anchor": [p.anchor for p in pairs], "positive": [p.positive for p in pairs]},
            fingerprint=f"paperfeed-adapt-{run_dir.name}",
        )
        args = lib.args(
            output_dir=str(checkpoints),
            num_train_epochs=options.epochs,
            per_device_train_batch_size=options.batch_size,
            learning_rate=options.learning_rate,
            warmup_steps=0.1,  # a ratio of the total steps
            batch_sampler=lib.samplers.NO_DUPLICATES,
            save_strategy="steps",
            save_steps=options.save_steps,
            save_total_limit=2,
            eval_strategy="no",
            logging_strategy="no",
            report_to="none",
            disable_tqdm=True,
            use_cpu=True,
            seed=options.seed,
            dataloader_num_workers=0,
        )
        state: dict[str, int] = {"step": 0, "total": 0}

        class _Steps(lib.callback):  # type: ignore[misc, name-defined]
            """Reports each step, and turns a stop request into save-and-stop."""

            def on_train_begin(self, args: Any, st: Any, control: Any, **kwargs: Any) -> None:
                state["total"] = int(st.max_steps)
                state["step"] = int(st.global_step)
                if progress is not None:
                    progress.step(state["step"], state["total"])

            def on_step_end(self, args: Any, st: Any, control: Any, **kwargs: Any) -> Any:
                state["step"] = int(st.global_step)
                if progress is not None:
                    progress.step(state["step"], state["total"])
                limit = options.stop_after
                asked = should_stop() or (limit is not None and st.global_step >= limit)
                if asked and st.global_step < st.max_steps:
                    control.should_save = True
                    control.should_training_stop = True
                return control

        # The model card's widget examples, given, so the trainer does not pick them itself: it would sample
        # the dataset behind a tqdm bar on stderr. (Swapping the process's sys.stderr to hide that bar lost
        # whatever else was printed meanwhile, such as the Ctrl+C handler's message: exit 130 with an
        # empty stderr, the flaky tests/adapt/test_interrupt.py.)
        model.model_card_data.widget = _widget_examples(pairs)
        trainer = lib.trainer(
            model=model, args=args, train_dataset=data, loss=lib.loss(model), callbacks=[_Steps()]
        )
        trainer.remove_callback(lib.printer)  # it prints the trainer's logs as dicts
        resumed_from = 0
        if resume is not None:
            resumed_from = _step_of(resume)
        trainer.train(resume_from_checkpoint=None if resume is None else str(resume))
        steps, total = state["step"], state["total"]
        seconds = time.monotonic() - started
        if steps < total:
            return TrainOutcome(False, steps, total, resumed_from, seconds, None)
        model.max_seq_length = serving_length  # embed as the base model does (MAX_TOKENS)
        tmp = run_dir / f".model-{uuid.uuid4().hex[:8]}"
        model.save_pretrained(str(tmp))
        os.replace(tmp, final)
        shutil.rmtree(checkpoints, ignore_errors=True)  # the finished model supersedes them
        return TrainOutcome(True, steps, total, resumed_from, seconds, final)
