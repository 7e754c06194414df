"""Background sentence indexing: each abstract split into sentences, each sentence embedded and given its
role, after the papers themselves are embedded (issue #33, part 4); from those, each paper's one-line
summary is chosen and stored beside it (part 5, domain/summaries.py).

It is a second pass of the indexer, not a job of its own: ``paperfeed index`` runs it once the papers'
vectors are done, and ``paperfeed index --follow`` (what ``paperfeed run`` keeps going) runs it in slices
whenever no paper waits for its vector, so the paper vectors that search needs always come first and
the sentences, about as much CPU again as the papers (bench/facet_cost.py), fill in behind them. The
backlog is a join (``SentenceStore``), each batch one transaction: a killed run resumes where it stopped.
Changing the embedding model makes every row stale (another ``model_id``), and the role model is trained
again for the new vector space before any sentence is classified.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from paperfeed.domain.ports import ProgressReporter
from paperfeed.domain.search import Embedder
from paperfeed.domain.sentences import (
    ROLES,
    PaperSentences,
    RoleModel,
    RoleModels,
    Sentence,
    SentencesPending,
    SentenceSplitter,
    SentenceStore,
)
from paperfeed.domain.summaries import SUMMARY_RULE, ExtractedSummary, SummaryRule, extract_summary
from paperfeed.domain.wording import agree, count, every

__all__ = ["MAX_SENTENCES", "SentenceIndexer", "SentencePlan", "SentenceSummary"]

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


class SentenceIndexer:
    """Splits, embeds and classifies the sentences of the papers in the backlog, in committed batches."""

    def __init__(
        self,
        store: SentenceStore,
        embedder: Embedder,
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

    def role_model(self) -> tuple[RoleModel, bool]:
        """The role model of the current embedding model, trained first when there is none (True)."""
        found = self.roles.current(self.embedder.model_id)
        if found is not None:
            return found, False
        log.info("training the sentence-role model for %s", self.embedder.model_id)
        return self.roles.train(self.embedder), True

    def plan(self) -> SentencePlan:
        """How far the sentences are (the backlog against the saved role model; all papers when none)."""
        model_id = self.embedder.model_id
        found = self.roles.current(model_id)
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
        model_id = self.embedder.model_id
        summary = SentenceSummary(model_id)
        summary.summaries = self.fill_summaries(limit=limit, stop=stop)
        backlog = self.store.count_backlog(model_id, self._saved_role_model())
        target = backlog if limit is None else min(backlog, max(0, limit))
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
        model_id = self.embedder.model_id
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
        """Split, embed (one call for the whole batch) and classify these papers' abstracts."""
        spans = [self.splitter.split(p.abstract)[:MAX_SENTENCES] for p in papers]
        texts = [p.abstract[a:b] for p, found in zip(papers, spans, strict=True) for a, b in found]
        dimension = 0
        vectors = np.zeros((0, 0), dtype=np.float32)
        if texts:
            vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
            dimension = vectors.shape[1]
            if vectors.shape[0] != len(texts) or not np.isfinite(vectors).all():
                raise RuntimeError(
                    f"embedder {self.embedder.model_id} returned {vectors.shape} for "
                    f"{count(len(texts), 'sentence')} "
                    f"(or non-finite values) around paper {papers[0].paper_id}"
                )
        rows: list[PaperSentences] = []
        at = 0
        for paper, found in zip(papers, spans, strict=True):
            own = vectors[at : at + len(found)] if found else np.zeros((0, dimension), dtype=np.float32)
            at += len(found)
            probabilities = role_model.probabilities(own, [paper.abstract[a:b] for a, b in found])
            sentences = tuple(
                Sentence(a, b, ROLES[int(p.argmax())], tuple(float(x) for x in p))
                for (a, b), p in zip(found, probabilities, strict=True)
            )
            rows.append(
                PaperSentences(
                    paper.paper_id,
                    paper.content_hash,
                    self.embedder.model_id,
                    role_model.model_id,
                    sentences,
                    own,
                )
            )
        return rows
