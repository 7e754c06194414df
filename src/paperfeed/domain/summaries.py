"""A one-line summary for every paper: Hugging Face's own where it gave one, else a sentence of the paper's
own abstract (issue #33, part 5).

Hugging Face writes a one-sentence AI summary for the papers on its Daily Papers page (``Paper.ai_summary``);
arXiv listings have none. For those the summary is *extracted*, never generated: the abstract's sentence
that best states what the paper does or finds, chosen by :func:`pick_summary` from the sentences the
indexer already split, embedded and gave roles (:mod:`paperfeed.domain.sentences`). Each sentence is
scored by its role probabilities (objective, result, method, background), how central it is to the
abstract (cosine with the mean of the abstract's sentence vectors) and its place; sentences too short or
too long for one line are passed over when another fits. The weights (:data:`SUMMARY_RULE`) were chosen on
one half of papers that have both summaries and reported on the other (bench/one_line_summary.py,
docs/search.md).

Everything here is pure; surfaces ask :func:`one_line` which summary to show and whose it is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .sentences import ROLES, Sentence

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

__all__ = [
    "SUMMARIES_CHECKPOINT",
    "SUMMARY_RULE",
    "ExtractedSummary",
    "OneLine",
    "SummaryRule",
    "SummarySource",
    "current_summary",
    "extract_summary",
    "one_line",
    "pick_summary",
    "sentence_features",
    "summary_key",
    "summary_scores",
]

SummarySource = Literal["hugging_face", "extracted"]
SUMMARIES_CHECKPOINT = "summaries:written"  # when extracted summaries were last written (the data version)

# Columns of :func:`sentence_features`, in order.
FEATURES: tuple[str, ...] = (
    "objective",
    "result",
    "method",
    "background",
    "centrality",
    "position",
    "first",
    "last",
)


@dataclass(frozen=True, slots=True)
class SummaryRule:
    """How a sentence of an abstract is scored as its one-line summary: a weight per feature of
    :data:`FEATURES`; sentences of fewer than ``min_words`` or more than ``max_words`` words are chosen
    only when no other sentence fits."""

    objective: float = 0.0
    result: float = 0.0
    method: float = 0.0
    background: float = 0.0
    centrality: float = 0.0
    position: float = 0.0
    first: float = 0.0
    last: float = 0.0
    min_words: int = 6
    max_words: int = 60

    def weights(self) -> tuple[float, ...]:
        return tuple(float(getattr(self, name)) for name in FEATURES)

    @property
    def rule_id(self) -> str:
        """Names the rule (stored with each summary it chose)."""
        text = repr((self.weights(), self.min_words, self.max_words))
        return "r" + hashlib.sha256(text.encode()).hexdigest()[:10]


# The shipped rule, from bench/one_line_summary.py's grid of 1,296 on the selection half (2,896) of the 5,711
# Hugging Face papers with both an abstract and an ai_summary (docs/search.md, "One-line summaries"): the
# sentence most central to the abstract, towards objective (and a little method) statements, the first
# sentence and earlier places, of 6 to 60 words (the grid's second best; its best, without a word limit,
# scored 0.0002 ROUGE-L higher). Result sentences did not help: HF's lines say what a paper does.
SUMMARY_RULE = SummaryRule(objective=1.0, method=0.5, centrality=2.0, position=-0.2, first=0.3, max_words=60)


@dataclass(frozen=True, slots=True)
class ExtractedSummary:
    """A paper's extracted one-line summary as stored: ``line`` (None: its abstract has no sentence) chosen
    for the text of ``content_hash`` under the rule ``key`` names (:func:`summary_key`)."""

    paper_id: str
    content_hash: str
    line: str | None
    key: str


@dataclass(frozen=True, slots=True)
class OneLine:
    """The one-line summary a surface shows: its text and whose it is."""

    text: str
    source: SummarySource

    @property
    def label(self) -> str:
        """What a reader is told about where the line comes from."""
        if self.source == "hugging_face":
            return "AI summary by Hugging Face"
        return "Extracted from the abstract"

    @property
    def labelled(self) -> str:
        """The line with its label in front, for plain text (feeds, digest mails)."""
        return f"{self.label}: {self.text}"


def one_line(ai_summary: str | None, extracted: str | None, *, show_extracted: bool = True) -> OneLine | None:
    """The summary to show: Hugging Face's own when it gave one, else the extracted sentence (when
    ``show_extracted``), else None."""
    if ai_summary is not None and ai_summary.strip():
        return OneLine(" ".join(ai_summary.split()), "hugging_face")
    if show_extracted and extracted is not None and extracted.strip():
        return OneLine(" ".join(extracted.split()), "extracted")
    return None


def summary_key(text_hash: str, rule: SummaryRule = SUMMARY_RULE) -> str:
    """What a stored summary was chosen for: the paper's text and the rule (a changed rule chooses again)."""
    return f"{text_hash}/{rule.rule_id}"


def current_summary(line: str | None, key: str | None, text_hash: str) -> str | None:
    """A stored extracted summary when it was chosen for the paper's present text (by any rule), else None:
    a changed abstract never shows the old abstract's sentence."""
    return line if line is not None and key is not None and key.startswith(f"{text_hash}/") else None


def extract_summary(
    paper_id: str,
    abstract: str,
    text_hash: str,
    sentences: Sequence[Sentence],
    vectors: Vectors | None,
    rule: SummaryRule = SUMMARY_RULE,
) -> ExtractedSummary:
    """The stored form of :func:`pick_summary`'s choice for one paper (whitespace collapsed)."""
    chosen = pick_summary(abstract, sentences, vectors, rule)
    line = " ".join(sentences[chosen].text(abstract).split()) if chosen is not None else None
    return ExtractedSummary(paper_id, text_hash, line or None, summary_key(text_hash, rule))


def _words(text: str) -> int:
    return len(text.split())


def sentence_features(sentences: Sequence[Sentence], vectors: Vectors | None) -> Vectors:
    """One row of :data:`FEATURES` per sentence: role probabilities, cosine with the abstract's mean
    sentence vector (0 without vectors), relative place, first, last."""
    import numpy as np

    n = len(sentences)
    out = np.zeros((n, len(FEATURES)), dtype=np.float32)
    if n == 0:
        return out
    at = {role: ROLES.index(role) for role in ROLES}
    for i, s in enumerate(sentences):
        p = s.probabilities
        out[i, 0] = p[at["objective"]]
        out[i, 1] = p[at["result"]]
        out[i, 2] = p[at["method"]]
        out[i, 3] = p[at["background"]]
        out[i, 5] = i / (n - 1) if n > 1 else 0.0
        out[i, 6] = 1.0 if i == 0 else 0.0
        out[i, 7] = 1.0 if i == n - 1 else 0.0
    if vectors is not None and len(vectors) == n:
        v = np.asarray(vectors, dtype=np.float32)
        mean = v.mean(axis=0)
        norm = float(np.linalg.norm(mean))
        if norm > 0:
            rows = np.linalg.norm(v, axis=1)
            rows[rows == 0] = 1.0
            out[:, 4] = (v @ (mean / norm)) / rows
    return out


def summary_scores(features: Vectors, rule: SummaryRule) -> Vectors:
    """Each sentence's score under ``rule`` (before the length limits)."""
    import numpy as np

    result: Vectors = features @ np.asarray(rule.weights(), dtype=np.float32)
    return result


def pick_summary(
    abstract: str,
    sentences: Sequence[Sentence],
    vectors: Vectors | None,
    rule: SummaryRule = SUMMARY_RULE,
) -> int | None:
    """The index of the sentence of ``abstract`` that best states what the paper does or finds, or None
    when it has no sentence. Ties go to the earlier sentence."""
    if not sentences:
        return None
    scores = summary_scores(sentence_features(sentences, vectors), rule)
    words = [_words(s.text(abstract)) for s in sentences]
    fits = [i for i, w in enumerate(words) if rule.min_words <= w <= rule.max_words]
    pool = fits or list(range(len(sentences)))
    return max(pool, key=lambda i: (float(scores[i]), -i))
