"""An abstract's sentences, each with its rhetorical role, and similar papers by facet (issue #33, parts 4-5).

A researcher often wants papers that *use the same method* or *report the same finding*, not papers on the
same topic. Each abstract is split into sentences (:class:`SentenceSplitter`), each sentence gets a role
(background, objective, method, result, other) from a classifier trained on CSAbstruct
(:class:`RoleModel`), and each sentence is embedded in the paper's own vector space. Similar papers by a
*facet* then compare the query paper's sentences of that facet with the candidates' sentences
(:func:`facet_scores`), following aspect-based scientific similarity (CSFCube, Mysore et al. 2021;
Aspire, Mysore et al. 2022): a facet is a set of roles, ``background`` taking the objective sentences too
(what problem a paper addresses), as CSFCube's facets do.

Everything here is pure: the splitter, the classifier, the store and the embedding are ports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeGuard, get_args

if TYPE_CHECKING:  # numpy only in annotations and inside functions: `paperfeed --help` imports the domain
    import numpy as np
    import numpy.typing as npt

    from .summaries import ExtractedSummary

    Vectors = npt.NDArray[np.float32]

__all__ = [
    "FACETS",
    "FACET_ROLES",
    "ROLES",
    "SENTENCE_VECTORS",
    "Facet",
    "FacetAggregate",
    "PaperSentences",
    "Role",
    "RoleModel",
    "RoleModels",
    "Sentence",
    "SentenceEmbedder",
    "SentenceSplitter",
    "SentenceStore",
    "SentencesPending",
    "embed_sentences",
    "facet_query",
    "facet_scores",
    "max_sim",
    "parse_facet",
    "pools_sentences",
    "role_weights",
    "sentence_model_id",
    "sentence_text",
    "spans_of",
]

Role = Literal["background", "objective", "method", "result", "other"]
ROLES: tuple[Role, ...] = get_args(Role)
Facet = Literal["overall", "background", "method", "result"]
FACETS: tuple[Facet, ...] = get_args(Facet)
# The roles each facet takes its sentences from: an objective ("we address X") says what problem a paper
# works on, which is its background facet, as in CSFCube's facets; "other" belongs to none.
FACET_ROLES: Mapping[Facet, frozenset[Role]] = {
    "background": frozenset({"background", "objective"}),
    "method": frozenset({"method"}),
    "result": frozenset({"result"}),
}
FacetAggregate = Literal["meanmax", "max", "mean"]

SENTENCE_VECTORS = "late1"
"""How sentence vectors are made, recorded in every stored row's model id (:func:`sentence_model_id`):
``late1`` is late chunking (issue #39): each sentence's vector is the mean of its tokens' output states
in the forward pass over the paper's own text (title + abstract, the paper vector's pass), a sentence
beyond the model's window pooled from a continuation window (the title, then the rest of the abstract).
Rows made another way (sentences embedded one by one, before) carry another id, so they are redone, and
a role model trained on other vectors is not used for these."""


def sentence_model_id(model_id: str) -> str:
    """The vector space of sentence vectors made from the embedding model ``model_id`` (what the stored
    sentence rows and the role model record; a reader asks the store for this id)."""
    return f"{model_id}+{SENTENCE_VECTORS}"


def sentence_text(
    title: str, abstract: str, spans: Sequence[tuple[int, int]]
) -> tuple[str, list[tuple[int, int]], int]:
    """The text the model reads for a paper's sentences -- its embedding text (title + ". " + abstract;
    the abstract alone without a title, as CSAbstruct's training abstracts come) -- the sentences' ``spans``
    of the abstract moved into it, and the length of its head (the title part, which a continuation
    window repeats as context)."""
    from .embedding import embedding_text

    text = embedding_text(title, abstract) if title else abstract
    head = len(text) - len(abstract)
    return text, [(a + head, b + head) for a, b in spans], head


def parse_facet(value: str | None) -> Facet:
    """``value`` as a facet (None or empty: overall); a ValueError naming the choices otherwise."""
    if value is None or not value.strip():
        return "overall"
    found = value.strip().lower()
    for facet in FACETS:
        if facet == found:
            return facet
    raise ValueError(f"unknown facet {value!r}: choose one of {', '.join(FACETS)}")


def embed_sentences(
    embedder: SentenceEmbedder, papers: Sequence[tuple[str, str, Sequence[tuple[int, int]]]]
) -> tuple[Vectors, list[Vectors]]:
    """Each paper's vector and its sentences' vectors, from one forward pass over its text: ``papers``
    are (title, abstract, the sentences' spans in the abstract). The one recipe of sentence vectors: the
    indexer, the role model's training (``adapters/sentences/roles.py``) and the benches all call it."""
    made = [sentence_text(title, abstract, spans) for title, abstract, spans in papers]
    return embedder.embed_spans([m[0] for m in made], [m[1] for m in made], [m[2] for m in made])


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of an abstract: its characters ``[start, end)``, its role and the classifier's
    probability of each role (in :data:`ROLES` order)."""

    start: int
    end: int
    role: Role
    probabilities: tuple[float, ...]

    def text(self, abstract: str) -> str:
        return abstract[self.start : self.end]

    def p(self, roles: Iterable[Role]) -> float:
        """The probability that this sentence has one of ``roles``."""
        return sum(self.probabilities[ROLES.index(r)] for r in roles)


@dataclass(frozen=True, slots=True)
class PaperSentences:
    """A paper's sentences as stored: for the text of ``content_hash``, embedded with ``model_id``,
    classified by ``role_model``; ``vectors`` (one row per sentence, unit length) when they were read."""

    paper_id: str
    content_hash: str
    model_id: str
    role_model: str
    sentences: tuple[Sentence, ...]
    vectors: Vectors | None = None

    def of(self, facet: Facet) -> list[int]:
        """Indices of the sentences whose role belongs to ``facet`` (every sentence for overall)."""
        if facet == "overall":
            return list(range(len(self.sentences)))
        roles = FACET_ROLES[facet]
        return [i for i, s in enumerate(self.sentences) if s.role in roles]


@dataclass(frozen=True, slots=True)
class SentencesPending:
    """A paper whose sentences are missing, stale (its text changed) or of another model."""

    paper_id: str
    abstract: str
    content_hash: str
    title: str = ""  # the sentences are pooled from the paper's own text, title included


def spans_of(text: str, pieces: Sequence[str]) -> list[tuple[int, int]]:
    """The character spans of a segmenter's ``pieces`` in ``text``, without their surrounding spaces.

    A piece without two letters in it ("1.", "(4)") is no sentence but the tail of an abbreviation the
    segmenter cut at ("Thm. 1."), so it joins the sentence before it."""
    spans: list[tuple[int, int]] = []
    at = 0
    for piece in pieces:
        stripped = piece.strip()
        if not stripped:
            continue
        start = text.find(stripped, at)
        if start < 0:  # the segmenter changed the text: give up on this piece rather than misplace it
            continue
        end = start + len(stripped)
        at = end
        if spans and sum(ch.isalpha() for ch in stripped) < 2:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


def role_weights(sentences: Sequence[Sentence], facet: Facet, floor: float) -> list[float]:
    """How much each of a candidate's sentences counts when matched for ``facet``: its probability of
    the facet's roles, never below ``floor`` (1.0 for every sentence: role-blind matching)."""
    if facet == "overall":
        return [1.0] * len(sentences)
    roles = FACET_ROLES[facet]
    return [max(floor, s.p(roles)) for s in sentences]


def facet_query(paper: PaperSentences, facet: Facet) -> Vectors | None:
    """The query's sentence vectors for ``facet``, or None when it has no sentence of that facet."""
    if paper.vectors is None:
        return None
    rows = paper.of(facet)
    if not rows:
        return None
    return paper.vectors[rows]


def facet_scores(
    query: Vectors,
    candidates: Sequence[tuple[Vectors, Sequence[float]]],
    aggregate: FacetAggregate = "meanmax",
) -> list[float]:
    """How well each candidate's sentences match the query's facet sentences.

    ``candidates``: each one's sentence vectors and their weights (:func:`role_weights`). Every pair is
    compared by cosine times the candidate sentence's weight; ``meanmax`` (the default) averages, over the
    query's sentences, each one's best match among the candidate's (every aspect of the facet must be
    met, as in multi-vector matching); ``max`` keeps the single best pair (Aspire's ts variant);
    ``mean`` averages all pairs. A candidate without sentences scores -1."""
    import numpy as np

    sizes = [len(vectors) for vectors, _ in candidates]
    scores = [-1.0] * len(candidates)
    present = [i for i, n in enumerate(sizes) if n]
    if not present or len(query) == 0:
        return scores
    # one product for all candidates (their rows stacked), then each candidate's block reduced
    stacked = np.vstack([candidates[i][0] for i in present]).astype(np.float32, copy=False)
    weights = np.concatenate([np.asarray(candidates[i][1], dtype=np.float32) for i in present])
    sims = (np.asarray(query, dtype=np.float32) @ stacked.T) * weights[None, :]
    starts = np.cumsum([0] + [sizes[i] for i in present[:-1]])
    if aggregate == "max":
        found = np.maximum.reduceat(sims, starts, axis=1).max(axis=0)
    elif aggregate == "mean":
        found = np.add.reduceat(sims, starts, axis=1).sum(axis=0) / (
            len(query) * np.asarray([sizes[i] for i in present], dtype=np.float32)
        )
    else:
        found = np.maximum.reduceat(sims, starts, axis=1).mean(axis=0)
    for i, value in zip(present, found.tolist(), strict=True):
        scores[i] = float(value)
    return scores


def max_sim(
    query: Vectors, candidates: Sequence[Vectors], weights: Sequence[float] | None = None
) -> list[float]:
    """Late interaction of two papers' sentences (as ColBERT-style rankers match tokens), both ways: the
    mean over ``query``'s sentences of each one's best cosine among a candidate's sentences, and the mean
    over the candidate's sentences of each one's best cosine among the query's, averaged (BERTScore's
    recall and precision). The first rewards a candidate that meets every part of the paper; the second
    keeps a long candidate that meets them all among much else from winning on its length alone (on the
    seed pages the two together beat either: bench/facet_similar.py). ``weights``: how much each of
    ``query``'s sentences counts in the first mean (a facet weighs its sentences up; None: alike). A
    candidate without sentences scores -1."""
    import numpy as np

    scores = [-1.0] * len(candidates)
    sizes = [len(v) for v in candidates]
    present = [i for i, n in enumerate(sizes) if n]
    if not present or len(query) == 0:
        return scores
    q = np.asarray(query, dtype=np.float32)
    w = np.ones(len(q), dtype=np.float32) if weights is None else np.asarray(weights, dtype=np.float32)
    stacked = np.vstack([candidates[i] for i in present]).astype(np.float32, copy=False)
    sims = q @ stacked.T  # (query sentences, every candidate sentence)
    starts = np.cumsum([0] + [sizes[i] for i in present[:-1]])
    forward = (np.maximum.reduceat(sims, starts, axis=1) * w[:, None]).sum(axis=0) / w.sum()
    backward = np.add.reduceat(sims.max(axis=0), starts) / np.asarray([sizes[i] for i in present])
    for i, f, b in zip(present, forward.tolist(), backward.tolist(), strict=True):
        scores[i] = 0.5 * (f + b)
    return scores


class SentenceSplitter(Protocol):
    """Splits an abstract into sentences: their character spans, in order."""

    def split(self, text: str) -> list[tuple[int, int]]: ...


class RoleModel(Protocol):
    """Gives each sentence of one abstract its role probabilities (rows in :data:`ROLES` order).

    ``vectors`` are the abstract's sentence vectors in order, made by the embedding model the role model
    was trained for (``embedding_model``): the role of a sentence depends on its neighbours and place."""

    @property
    def model_id(self) -> str:
        """Names this classifier (its features and weights): stored sentences record it."""
        ...

    @property
    def embedding_model(self) -> str: ...

    def probabilities(self, vectors: Vectors, texts: Sequence[str]) -> Vectors: ...


class RoleModels(Protocol):
    """Where the role model is kept (with the instance's data): the one for the current embedding model,
    trained first when there is none or it was made for another model."""

    def current(self, embedder_model: str) -> RoleModel | None:
        """The saved model for ``embedder_model``, or None when it must be trained first."""
        ...

    def train(self, embed: SentenceEmbedder) -> RoleModel:
        """Train one for the sentence vectors ``embed`` makes, save it and return it."""
        ...


def pools_sentences(embedder: object) -> TypeGuard[SentenceEmbedder]:
    """Whether ``embedder`` is a :class:`SentenceEmbedder` (looked up on its class: asking an instance
    for its ``dimension`` would load its model)."""
    return callable(getattr(type(embedder), "embed_spans", None))


class SentenceEmbedder(Protocol):
    """An embedder that also pools spans of a text from the text's own forward pass (late chunking: every
    real embedder of ``adapters/embed`` is one)."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]], heads: Sequence[int]
    ) -> tuple[Vectors, list[Vectors]]:
        """Each text's vector (as ``embed`` gives it) and, from the same forward pass, the vectors of its
        ``spans`` (character ranges, in order; unit length); ``heads[i]``: the leading characters of
        ``texts[i]`` a window past the model's first repeats as context."""
        ...


class SentenceStore(Protocol):
    """Papers' sentences, their roles and vectors, beside the papers (``paper_sentences``).

    A paper needs its sentences (re)done when it has none, or they were made for another text, another
    embedding model or another role model: the backlog is that comparison, never kept anywhere else, so
    a killed job resumes where it stopped."""

    def count_backlog(self, model_id: str, role_model: str) -> int: ...

    def count_done(self, model_id: str) -> int:
        """Papers whose sentences of ``model_id`` are current (counted in coverage)."""
        ...

    def backlog(
        self, model_id: str, role_model: str, *, after: str = "", limit: int = 64
    ) -> list[SentencesPending]: ...

    def save(self, rows: Sequence[PaperSentences], summaries: Sequence[ExtractedSummary] = ()) -> None:
        """Replace these papers' sentences, and set their extracted one-line summaries, in one transaction."""
        ...

    def count_summary_backlog(self, model_id: str, rule_id: str) -> int:
        """Papers whose sentences of ``model_id`` are current but whose summary was not chosen for their
        text by the rule ``rule_id`` (sentences made before summaries existed, or a changed rule)."""
        ...

    def summary_backlog(
        self, model_id: str, rule_id: str, *, after: str = "", limit: int = 500
    ) -> list[SentencesPending]: ...

    def save_summaries(self, summaries: Sequence[ExtractedSummary]) -> None:
        """Set these papers' extracted summaries (each only while the paper's text is the one it was
        chosen for), in one transaction."""
        ...

    def sentences(
        self, paper_ids: Sequence[str], model_id: str, *, vectors: bool = True
    ) -> dict[str, PaperSentences]:
        """The current sentences of those of ``paper_ids`` that have some of ``model_id``."""
        ...
