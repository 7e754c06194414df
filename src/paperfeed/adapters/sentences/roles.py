"""The sentence-role classifier: logistic regression on sentence embeddings in their context, shipped
trained for the bundled embedding model, and trained by an instance only for another model.

Features of sentence *i* of an abstract of *n*: its own vector, its neighbours' (*i*-1, *i*+1; zeros past
the ends), the mean of the abstract's sentence vectors, its place (relative position, one-hot of the
first five and last five places, log *n*), and its words and word pairs hashed into 2^14 buckets
(:func:`word_buckets`); the classes are weighted by their rarity. Sequential sentence classification
needs the context: a sentence such as "We evaluate it on three datasets" is a method or a result
depending on what comes around it; and the role is often in small words ("we propose", "results show")
that a sentence vector barely keeps. The recipe was chosen on CSAbstruct's dev split; its test figures
are in docs/search.md#similar-by-facet (bench/sentence_roles.py).

The sentence vectors it reads are made by ``domain.sentences.embed_sentences`` (late chunking: pooled
from the abstract's own forward pass, ``SENTENCE_VECTORS``), and its training vectors are made by the
same function, on the CSAbstruct train split (1,668 computer-science abstracts, Apache-2.0,
allenai/sequential_sentence_classification, ``data/csabstruct_train.jsonl.gz``).

For the bundled all-MiniLM-L6-v2 the trained weights ship inside the package (``data/sentence-roles/``,
made by ``python -m bench.ship_role_model``), so a new data folder never trains one. An instance trains
its own, into ``<data>/models/sentence-roles``, only for a vector space no shipped model is for: a model
it adopted (``paperfeed model adapt``) or configured (``PAPERFEED_EMBEDDING_MODEL``, the onnx-int8 or
bf16 backends, a shorter ``PAPERFEED_EMBEDDING_MAX_TOKENS``). Weights are a plain NumPy file (no
pickle) beside a manifest naming the vector space; prediction is a matrix product and a softmax.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import os
import re
import threading
import time
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from paperfeed.domain.sentences import (
    ROLES,
    SENTENCE_VECTORS,
    SentenceEmbedder,
    embed_sentences,
    sentence_model_id,
)
from paperfeed.domain.wording import count

__all__ = [
    "FEATURES",
    "SHIPPED",
    "LinearRoleModel",
    "RoleModelFolder",
    "read_training",
    "role_features",
    "save_role_model",
    "shipped_folder",
    "shipped_role_model",
    "train_role_model",
    "training_abstracts",
    "word_buckets",
]

log = logging.getLogger(__name__)

Array = npt.NDArray[Any]

FEATURES = "ctx1-mean-pos12-words14"  # names the feature recipe: a saved model of another is retrained
_C = 1.0  # inverse regularisation of the logistic regression (chosen on CSAbstruct's dev split)
_PLACES = 5  # one-hot of the first and of the last this many places
_BUCKETS = 2**14  # hashed words and word pairs of the sentence (crc32: the same on every machine)
_TOKEN = re.compile(r"[a-z]+|\d+|[^\sa-z\d]")
TRAINING = "csabstruct_train.jsonl.gz"
MANIFEST = "manifest.json"
SHIPPED = "sentence-roles"  # the shipped model's folder inside the package data (paperfeed.data)
TRAINING_SOURCE = "CSAbstruct train split (allenai/sequential_sentence_classification, Apache-2.0)"


def read_training(data: bytes | None = None) -> list[tuple[list[str], list[str]]]:
    """The shipped CSAbstruct train split as (sentences, labels) per abstract (or that of ``data``)."""
    raw = data if data is not None else resources.files("paperfeed.data").joinpath(TRAINING).read_bytes()
    out: list[tuple[list[str], list[str]]] = []
    with gzip.open(io.BytesIO(raw), "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                record = json.loads(line)
                out.append(([" ".join(s.split()) for s in record["sentences"]], list(record["labels"])))
    return out


def training_abstracts(
    abstracts: Sequence[tuple[list[str], list[str]]],
) -> list[tuple[str, list[tuple[int, int]]]]:
    """Each training abstract as its text (the labelled sentences joined by spaces; CSAbstruct gives no
    title) and its sentences' spans in it: the input ``embed_sentences`` makes the training vectors of."""
    out = []
    for sentences, _ in abstracts:
        spans, at = [], 0
        for sentence in sentences:
            spans.append((at, at + len(sentence)))
            at += len(sentence) + 1
        out.append((" ".join(sentences), spans))
    return out


def train_role_model(
    embed: SentenceEmbedder, training: bytes | None = None, *, batch: int = 64
) -> tuple[LinearRoleModel, dict[str, Any]]:
    """The role model for ``embed``'s sentence vectors, trained on the CSAbstruct train split (or on
    ``training``), its sentence vectors made as the indexer makes them; with the facts of its training
    (for the manifest). ``batch``: abstracts per forward-pass call."""
    started = time.monotonic()
    abstracts = read_training(training)
    inputs = training_abstracts(abstracts)
    rows: list[tuple[Array, Sequence[str]]] = []
    for begin in range(0, len(inputs), batch):
        part = inputs[begin : begin + batch]
        _, pooled = embed_sentences(embed, [("", text, spans) for text, spans in part])
        rows.extend(
            (v, labels) for v, (_, labels) in zip(pooled, abstracts[begin : begin + batch], strict=True)
        )
    model = LinearRoleModel.fit(
        rows, embedding_model=sentence_model_id(embed.model_id), texts=[s for s, _ in abstracts]
    )
    raw = (
        training
        if training is not None
        else resources.files("paperfeed.data").joinpath(TRAINING).read_bytes()
    )
    facts = {
        "abstracts": len(abstracts),
        "sentences": sum(len(s) for s, _ in abstracts),
        "seconds": round(time.monotonic() - started, 1),
        "training_sha256": hashlib.sha256(raw).hexdigest(),
        "c": _C,
    }
    return model, facts


def role_features(vectors: Array) -> Array:
    """The feature rows of one abstract's sentences (``vectors`` in order): see the module doc."""
    e = np.asarray(vectors, dtype=np.float32)
    n, d = e.shape if e.ndim == 2 else (0, 0)
    if n == 0:
        return np.zeros((0, 4 * d + 2 * _PLACES + 2), dtype=np.float32)
    prev = np.zeros_like(e)
    prev[1:] = e[:-1]
    nxt = np.zeros_like(e)
    nxt[:-1] = e[1:]
    mean = np.repeat(e.mean(axis=0, keepdims=True), n, axis=0)
    place = np.zeros((n, 2 * _PLACES + 2), dtype=np.float32)
    for i in range(n):
        place[i, 0] = i / max(n - 1, 1)
        place[i, 1 + min(i, _PLACES - 1)] = 1.0
        place[i, 1 + _PLACES + min(n - 1 - i, _PLACES - 1)] = 1.0
        place[i, -1] = np.log(n) / 3.0
    return np.hstack([e, prev, nxt, mean, place]).astype(np.float32)


def word_buckets(text: str) -> list[int]:
    """The hashed buckets of a sentence's lower-cased words and word pairs (with start and end marks).

    Sentence vectors say what a sentence is about; its role is often in small words the embedding barely
    keeps ("we propose", "results show", "in this paper"), so they are features of their own: on
    CSAbstruct's dev split they raised macro-F1 from 0.578 to 0.621 (bench/sentence_roles.py)."""
    tokens = ["<s>", *_TOKEN.findall(text.lower()), "</s>"]
    grams = set(tokens) | {f"{a} {b}" for a, b in pairwise(tokens)}
    return sorted({zlib.crc32(g.encode("utf-8")) % _BUCKETS for g in grams})


def _word_rows(texts: Sequence[str]) -> tuple[list[list[int]], list[float]]:
    """Each sentence's buckets and the weight of each (1/sqrt(count): a unit-length binary row)."""
    rows = [word_buckets(t) for t in texts]
    return rows, [1.0 / float(np.sqrt(len(r))) if r else 0.0 for r in rows]


class LinearRoleModel:
    """:class:`~paperfeed.domain.sentences.RoleModel`: softmax(features @ weights + bias), the features
    being :func:`role_features` of the vectors followed by the :func:`word_buckets` of the texts (no
    words when no texts are given: the word weights are then zero, or not used)."""

    def __init__(
        self, weights: Array, bias: Array, *, embedding_model: str, features: str = FEATURES
    ) -> None:
        self.weights = np.asarray(weights, dtype=np.float32)
        self.bias = np.asarray(bias, dtype=np.float32)
        self._embedding_model = embedding_model
        self.features = features
        digest = hashlib.sha256(self.weights.tobytes() + self.bias.tobytes() + embedding_model.encode())
        self._id = f"roles-{features}-{digest.hexdigest()[:12]}"

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def embedding_model(self) -> str:
        return self._embedding_model

    def probabilities(self, vectors: Array, texts: Sequence[str]) -> Array:
        x = role_features(vectors)
        if len(x) == 0:
            return np.zeros((0, len(ROLES)), dtype=np.float32)
        dense = x.shape[1]
        logits = x @ self.weights[:dense] + self.bias
        if len(self.weights) > dense and len(texts) == len(x):
            words = self.weights[dense:]
            buckets, scale = _word_rows(texts)
            for i, (found, w) in enumerate(zip(buckets, scale, strict=True)):
                if found:
                    logits[i] += words[found].sum(axis=0) * w
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        out: Array = (p / p.sum(axis=1, keepdims=True)).astype(np.float32)
        return out

    @classmethod
    def fit(
        cls,
        abstracts: Sequence[tuple[Array, Sequence[str]]],
        *,
        embedding_model: str,
        c: float = _C,
        texts: Sequence[Sequence[str]] | None = None,
    ) -> LinearRoleModel:
        """Trained on ``abstracts``: each one's sentence vectors and their labels (:data:`ROLES` names),
        with ``texts`` (each abstract's sentences) for the word features; classes weighted by their
        rarity, as macro-F1 counts each role the same (the rare objective and other roles matter)."""
        from scipy import sparse  # type: ignore[import-untyped]
        from sklearn.linear_model import LogisticRegression

        dense = sparse.csr_matrix(np.vstack([role_features(v) for v, _ in abstracts]))
        n = dense.shape[0]
        indices: list[int] = []
        data: list[float] = []
        indptr = [0]
        if texts is not None:
            flat = [t for sentences in texts for t in sentences]
            if len(flat) != n:
                raise ValueError(f"{count(len(flat), 'text')} for {count(n, 'sentence')}")
            buckets, scale = _word_rows(flat)
            for found, w in zip(buckets, scale, strict=True):
                indices.extend(found)
                data.extend([w] * len(found))
                indptr.append(len(indices))
        else:
            indptr = [0] * (n + 1)
        words = sparse.csr_matrix(
            (np.asarray(data, dtype=np.float32), np.asarray(indices, dtype=np.int64), indptr),
            shape=(n, _BUCKETS),
        )
        x = sparse.hstack([dense, words]).tocsr()
        y = np.array([ROLES.index(label) for _, labels in abstracts for label in labels])
        model = LogisticRegression(C=c, max_iter=3000, class_weight="balanced").fit(x, y)
        weights = np.zeros((x.shape[1], len(ROLES)), dtype=np.float32)
        bias = np.full(len(ROLES), -1e4, dtype=np.float32)  # a role absent from the labels is never given
        if len(model.classes_) == 2:  # one row for the second class: softmax(0, z) is its sigmoid
            first, second = (int(r) for r in model.classes_)
            weights[:, second], bias[second] = model.coef_[0], model.intercept_[0]
            bias[first] = 0.0
        else:
            for column, role in enumerate(model.classes_):
                weights[:, int(role)] = model.coef_[column]
                bias[int(role)] = model.intercept_[column]
        return cls(weights, bias, embedding_model=embedding_model)


def _load(folder: Path, manifest: dict[str, Any], space: str) -> LinearRoleModel:
    with np.load(folder / str(manifest["weights"]), allow_pickle=False) as data:
        return LinearRoleModel(data["weights"], data["bias"], embedding_model=space, features=FEATURES)


def _usable(manifest: dict[str, Any] | None, space: str) -> bool:
    return (
        manifest is not None
        and manifest.get("embedding_model") == space
        and manifest.get("features") == FEATURES
        and manifest.get("sentence_vectors", SENTENCE_VECTORS) == SENTENCE_VECTORS
    )


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def shipped_folder() -> Path:
    """Where the shipped role model lies in the installed package (``paperfeed/data/sentence-roles``)."""
    return Path(str(resources.files("paperfeed.data").joinpath(SHIPPED)))


def shipped_role_model(space: str, folder: Path | None = None) -> LinearRoleModel | None:
    """The role model shipped in the package for the sentence vector space ``space`` (None: none is)."""
    where = folder if folder is not None else shipped_folder()
    manifest = _read_manifest(where / MANIFEST)
    if manifest is None or not _usable(manifest, space):
        return None
    try:
        return _load(where, manifest, space)
    except (OSError, KeyError, ValueError) as exc:  # a broken install: say so, then train one as before
        log.warning("the shipped sentence-role model in %s cannot be read (%s)", where, exc)
        return None


class RoleModelFolder:
    """:class:`~paperfeed.domain.sentences.RoleModels`: the model shipped in the package when it is for
    the vector space asked for (the bundled model's), else one this instance trained, kept in a folder
    of the data folder (``<data>/models/sentence-roles``): ``roles-*.npz`` and ``manifest.json``, both
    replaced atomically (weights first, the manifest naming them last). A loaded model is kept until the
    manifest changes on disk, so a process notices a model another one trained."""

    def __init__(self, folder: Path, training: bytes | None = None, shipped: Path | None = None) -> None:
        """``training``: tests pass a small set (None: the shipped CSAbstruct train split); ``shipped``:
        the folder of the shipped model (None: the package's)."""
        self.folder = folder
        self._training = training
        self._shipped_folder = shipped
        self._lock = threading.Lock()
        self._loaded: tuple[tuple[int, int], LinearRoleModel] | None = None
        self._shipped: dict[str, LinearRoleModel | None] = {}

    def _stamp(self) -> tuple[int, int] | None:
        try:
            found = (self.folder / MANIFEST).stat()
        except OSError:
            return None
        return found.st_mtime_ns, found.st_size

    def manifest(self) -> dict[str, Any] | None:
        """The manifest of the model this instance trained, or None (none saved, or unreadable)."""
        return _read_manifest(self.folder / MANIFEST)

    def shipped(self, space: str) -> LinearRoleModel | None:
        """The shipped model for ``space``, read once (None: none ships for it)."""
        with self._lock:
            if space not in self._shipped:
                self._shipped[space] = shipped_role_model(space, self._shipped_folder)
            return self._shipped[space]

    def current(self, embedder_model: str) -> LinearRoleModel | None:
        """The model for the sentence vectors of ``embedder_model`` (an embedding model id), or None when
        one must be trained first."""
        space = sentence_model_id(embedder_model)
        shipped = self.shipped(space)
        if shipped is not None:
            return shipped
        stamp = self._stamp()
        if stamp is None:
            return None
        with self._lock:
            if self._loaded is not None and self._loaded[0] == stamp:
                model = self._loaded[1]
                return model if model.embedding_model == space else None
        manifest = self.manifest()
        if manifest is None or not _usable(manifest, space):
            return None
        try:
            model = _load(self.folder, manifest, space)
        except (OSError, KeyError, ValueError) as exc:
            log.warning(
                "the sentence-role model in %s cannot be read (%s): it will be trained again",
                self.folder,
                exc,
            )
            return None
        with self._lock:
            self._loaded = (stamp, model)
        return model

    def train(self, embed: SentenceEmbedder) -> LinearRoleModel:
        model, facts = train_role_model(embed, self._training)
        save_role_model(self.folder, model, **facts)
        trained_on = count(int(facts["sentences"]), "sentence")
        log.info("trained the sentence-role model for %s on %s", embed.model_id, trained_on)
        return model


def save_role_model(folder: Path, model: LinearRoleModel, **facts: Any) -> Path:
    """Write ``model`` into ``folder`` (weights, then the manifest naming them; older weights removed);
    returns the manifest's path. ``facts``: what the manifest records of its training."""
    folder.mkdir(parents=True, exist_ok=True)
    weights = f"roles-{model.model_id[-12:]}.npz"
    tmp = folder / f".{weights}.tmp"
    with open(tmp, "wb") as fh:
        np.savez(fh, weights=model.weights, bias=model.bias)
    os.replace(tmp, folder / weights)
    manifest = {
        "model_id": model.model_id,
        "embedding_model": model.embedding_model,
        "features": FEATURES,
        "sentence_vectors": SENTENCE_VECTORS,
        "classes": list(ROLES),
        "weights": weights,
        "training": TRAINING_SOURCE,
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **facts,
    }
    tmp = folder / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)
    for old in folder.glob("roles-*.npz"):
        if old.name != weights:
            old.unlink(missing_ok=True)
    return folder / MANIFEST
