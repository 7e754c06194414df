"""Sentence indexing: each abstract split into sentences, each sentence given a vector and a role (issue
#33, part 4); from those, each paper's one-line summary is chosen and stored beside it (part 5,
domain/summaries.py).

The sentence vectors are pooled from the paper's own forward pass (late chunking, issue #39:
``domain.sentences.embed_sentences``), so they cost little beyond the paper's vector: the indexer makes
both in one pass (:meth:`SentenceIndexer.with_papers`, called by ``IndexingService`` for each batch) and
saves the sentences right after the batch's vectors. What is left for this second pass is the backlog
of papers embedded without their sentences: vectors made by worker processes (``--workers``), by an
older version (sentences made another way carry another id: ``sentence_model_id``), or for a model
whose role model had to be trained first. ``paperfeed index`` runs it after the papers, ``paperfeed
index --follow`` in slices whenever no paper waits for its vector, and a slice yields between batches
as soon as one does. The backlog is a join (``SentenceStore``), each batch one transaction: a killed run
resumes where it stopped. Changing the embedding model makes every row stale (another id); the role
model ships trained for the bundled model and is trained only for another vector space.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from paperfeed.domain.embedding import PendingPaper
from paperfeed.domain.ports import ProgressReporter
from paperfeed.domain.sentences import (
    ROLES,
    PaperSentences,
    RoleModel,
    RoleModels,
    Sentence,
    SentenceEmbedder,
    SentencesPending,
    SentenceSplitter,
    SentenceStore,
    embed_sentences,
    sentence_model_id,
)
from paperfeed.domain.summaries import SUMMARY_RULE, ExtractedSummary, SummaryRule, extract_summary
from paperfeed.domain.wording import agree, count, every

if TYPE_CHECKING:
    from paperfeed.domain.embedding import Vectors

__all__ = ["MAX_SENTENCES", "PapersWithSentences", "SentenceIndexer", "SentencePlan", "SentenceSummary"]

log = logging.getLogger(__name__)

_SUMMARY_BATCH = 500  # papers per transaction when summaries are chosen from stored sentences
MAX_SENTENCES = 40  # per abstract: a longer one is a pasted paper, its first 40 sentences say enough


@dataclass(frozen=True, slots=True)
class SentencePlan:
    model_id: str
    papers: int  # papers whose sentences are current
    backlog: int  # papers to (re)do
    summaries: int = 0  # papers with current sentences whose one-line summary is still to choose

    @property
    def pending(self) -> bool:
        """Anything for :meth:`SentenceIndexer.run` to do."""
        return bool(self.backlog or self.summaries)

    def message(self) -> str:
        if not self.backlog:
            if not self.papers:
                return f"sentences: no papers yet: nothing to split with {self.model_id}"
            done = (
                f"sentences: {every(self.papers, 'paper')} {agree(self.papers, 'is', 'are')} split and "
                f"embedded with {self.model_id}"
            )
            if self.summaries:
                return f"{done}; choosing the one-line summary of {count(self.summaries, 'paper')}"
            return done
        return (
            f"sentences: splitting and embedding the abstracts of {count(self.backlog, 'paper')} with "
            f"{self.model_id} ({self.papers:,} done)"
        )


@dataclass
class SentenceSummary:
    model_id: str
    papers: int = 0
    sentences: int = 0
    remaining: int = 0
    seconds: float = 0.0
    trained: bool = False  # the role model was (re)trained first
    stopped: bool = False
    summaries: int = 0  # one-line summaries chosen from sentences already stored (no embedding)

    @property
    def rate(self) -> float:
        """Papers per second."""
        return self.papers / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class PapersWithSentences:
    """One batch of papers embedded with their sentences (:meth:`SentenceIndexer.with_papers`): the
    papers' vectors, to commit first, then their sentences and one-line summaries
    (:meth:`SentenceIndexer.save`)."""

    vectors: Vectors
    rows: list[PaperSentences]
    summaries: list[ExtractedSummary]


class SentenceIndexer:
    """Splits, embeds and classifies the sentences of the papers in the backlog, in committed batches."""

    def __init__(
        self,
        store: SentenceStore,
        embedder: SentenceEmbedder,
        splitter: SentenceSplitter,
        roles: RoleModels,
        *,
        batch_size: int,
        clock: Callable[[], float] = time.monotonic,
        rule: SummaryRule = SUMMARY_RULE,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.store = store
        self.embedder = embedder
        self.splitter = splitter
        self.roles = roles
        self.batch_size = batch_size
        self._clock = clock
        self.rule = rule  # how the one-line summary is chosen from the sentences

    @property
    def model_id(self) -> str:
        """The sentence vectors' space (the embedding model and how sentences are pooled): what the stored
        rows record and readers ask for."""
        return sentence_model_id(self.embedder.model_id)

    def role_model(self) -> tuple[RoleModel, bool]:
        """The role model of the current embedding model (shipped for the bundled one), trained first when
        there is none (True)."""
        found = self.roles.current(self.embedder.model_id)
        if found is not None:
            return found, False
        log.info("training the sentence-role model for %s", self.embedder.model_id)
        return self.roles.train(self.embedder), True

    def with_papers(self, papers: Sequence[PendingPaper]) -> PapersWithSentences | None:
        """These papers' vectors and their sentences from one forward pass each (the indexer's batch), or
        None when the role model must be trained first (the sentences are then left to :meth:`run`)."""
        role_model = self.roles.current(self.embedder.model_id)
        if role_model is None:
            return None
        pending = [SentencesPending(p.paper_id, p.abstract, p.content_hash, p.title) for p in papers]
        vectors, rows = self._embed(pending, role_model)
        return PapersWithSentences(vectors, rows, self.summaries_of(pending, rows))

    def save(self, made: PapersWithSentences) -> None:
        """Store a batch's sentences and summaries (one transaction), after its vectors were committed."""
        self.store.save(made.rows, made.summaries)

    def plan(self) -> SentencePlan:
        """How far the sentences are (the backlog against the saved role model; all papers when none)."""
        model_id = self.model_id
        found = self.roles.current(self.embedder.model_id)
        done = self.store.count_done(model_id)
        backlog = self.store.count_backlog(model_id, found.model_id if found is not None else "")
        summaries = self.store.count_summary_backlog(model_id, self.rule.rule_id)
        return SentencePlan(model_id, done, backlog, summaries)

    def run(
        self,
        progress: ProgressReporter | None = None,
        *,
        limit: int | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> SentenceSummary:
        """Do up to ``limit`` papers of the backlog (all by default); ``stop`` is asked between batches."""
        started = self._clock()
        model_id = self.model_id
        summary = SentenceSummary(model_id)
        summary.summaries = self.fill_summaries(limit=limit, stop=stop)
        backlog = self.store.count_backlog(model_id, self._saved_role_model())
        target = backlog if limit is None else min(backlog, max(0, limit))
        untrained = target and self.roles.current(self.embedder.model_id) is None
        if untrained and stop is not None and stop():  # asked before a training too: it takes minutes
            summary.stopped = True
            target = 0
        if target:
            role_model, summary.trained = self.role_model()
            backlog = self.store.count_backlog(model_id, role_model.model_id)
            target = backlog if limit is None else min(backlog, max(0, limit))
            if progress is not None:
                progress.update(0, target, 0, 0, 0)
            after = ""
            while summary.papers < target and not (stop is not None and stop()):
                batch = self.store.backlog(
                    model_id,
                    role_model.model_id,
                    after=after,
                    limit=min(self.batch_size, target - summary.papers),
                )
                if not batch:
                    break
                rows = self.sentences_of(batch, role_model)
                self.store.save(rows, self.summaries_of(batch, rows))
                summary.papers += len(rows)
                summary.sentences += sum(len(r.sentences) for r in rows)
                after = batch[-1].paper_id
                if progress is not None:
                    progress.update(summary.papers, target, summary.papers, 0, 0)
            summary.stopped = summary.papers < target and stop is not None and stop()
        summary.remaining = max(0, backlog - summary.papers)
        summary.seconds = self._clock() - started
        return summary

    def summaries_of(
        self, papers: list[SentencesPending], rows: list[PaperSentences]
    ) -> list[ExtractedSummary]:
        """Each paper's one-line summary, chosen from its sentences (domain/summaries.py)."""
        return [
            extract_summary(p.paper_id, p.abstract, p.content_hash, r.sentences, r.vectors, self.rule)
            for p, r in zip(papers, rows, strict=True)
        ]

    def fill_summaries(self, *, limit: int | None = None, stop: Callable[[], bool] | None = None) -> int:
        """Choose the summaries of papers whose sentences are stored but whose summary is missing or was
        chosen by another rule: from the stored sentences, roles and vectors, without embedding anything.
        Returns how many papers it did."""
        model_id = self.model_id
        done = 0
        after = ""
        while limit is None or done < limit:
            if after and stop is not None and stop():  # asked between batches, as the main pass does
                break
            size = _SUMMARY_BATCH if limit is None else min(_SUMMARY_BATCH, limit - done)
            batch = self.store.summary_backlog(model_id, self.rule.rule_id, after=after, limit=size)
            if not batch:
                break
            stored = self.store.sentences([p.paper_id for p in batch], model_id, vectors=True)
            found = [p for p in batch if p.paper_id in stored]
            self.store.save_summaries(self.summaries_of(found, [stored[p.paper_id] for p in found]))
            done += len(found)
            after = batch[-1].paper_id
        return done

    def _saved_role_model(self) -> str:
        found = self.roles.current(self.embedder.model_id)
        return found.model_id if found is not None else ""

    def sentences_of(self, papers: list[SentencesPending], role_model: RoleModel) -> list[PaperSentences]:
        """Split these papers' abstracts, pool their sentences' vectors (one forward pass per paper, for
        the whole batch) and classify them."""
        return self._embed(papers, role_model)[1]

    def _embed(
        self, papers: Sequence[SentencesPending], role_model: RoleModel
    ) -> tuple[Vectors, list[PaperSentences]]:
        """The papers' vectors and their sentences (split, pooled late, classified)."""
        spans = [self.splitter.split(p.abstract)[:MAX_SENTENCES] for p in papers]
        vectors, pooled = embed_sentences(
            self.embedder, [(p.title, p.abstract, found) for p, found in zip(papers, spans, strict=True)]
        )
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape[0] != len(papers) or not all(
            np.isfinite(v).all() and len(v) == len(found) for v, found in zip(pooled, spans, strict=True)
        ):
            raise RuntimeError(
                f"embedder {self.embedder.model_id} returned {vectors.shape} for "
                f"{count(len(papers), 'paper')} (or wrong or non-finite sentence vectors) around paper "
                f"{papers[0].paper_id}"
            )
        rows: list[PaperSentences] = []
        for paper, found, own in zip(papers, spans, pooled, strict=True):
            probabilities = role_model.probabilities(own, [paper.abstract[a:b] for a, b in found])
            sentences = tuple(
                Sentence(a, b, ROLES[int(p.argmax())], tuple(float(x) for x in p))
                for (a, b), p in zip(found, probabilities, strict=True)
            )
            rows.append(
                PaperSentences(
                    paper.paper_id, paper.content_hash, self.model_id, role_model.model_id, sentences, own
                )
            )
        return vectors, rows
