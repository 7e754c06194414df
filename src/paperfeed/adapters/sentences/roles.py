"""The sentence-role classifier: logistic regression on sentence embeddings in their context, kept with the
instance's data and retrained when the embedding model changes.

Features of sentence *i* of an abstract of *n*: its own vector, its neighbours' (*i*-1, *i*+1; zeros past
the ends), the mean of the abstract's sentence vectors, its place (relative position, one-hot of the
first five and last five places, log *n*), and its words and word pairs hashed into 2^14 buckets
(:func:`word_buckets`); the classes are weighted by their rarity. Sequential sentence classification
needs the context: a sentence such as "We evaluate it on three datasets" is a method or a result
depending on what comes around it; and the role is often in small words ("we propose", "results show")
that a sentence vector barely keeps. Chosen on CSAbstruct's dev split (macro-F1 0.621; vectors in
context alone 0.578, the own vector with its place 0.593), it reaches accuracy 0.774 and macro-F1 0.775
on the test split (bench/sentence_roles.py, docs/search.md#similar-by-facet).

The model is trained on the CSAbstruct train split (1,668 computer-science abstracts, Apache-2.0,
allenai/sequential_sentence_classification), shipped in the package (``data/csabstruct_train.jsonl.gz``)
so that an instance can train it again in its own vector space: after ``paperfeed model adapt`` or a change
of ``PAPERFEED_EMBEDDING_MODEL`` the old classifier's weights mean nothing. Weights are a plain NumPy file
(no pickle) beside a manifest naming the embedding model; prediction is a matrix product and a softmax.
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

from paperfeed.domain.sentences import ROLES, EmbedTexts
from paperfeed.domain.wording import count

__all__ = [
    "FEATURES",
    "LinearRoleModel",
    "RoleModelFolder",
    "read_training",
    "role_features",
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


class RoleModelFolder:
    """:class:`~paperfeed.domain.sentences.RoleModels` in a folder of the data folder
    (``<data>/models/sentence-roles``): ``roles.npz`` and ``manifest.json``, both replaced atomically
    (weights first, the manifest naming them last). A loaded model is kept until the manifest changes on
    disk, so a process notices a model another one trained."""

    def __init__(self, folder: Path, training: bytes | None = None) -> None:
        self.folder = folder
        self._training = training  # tests pass a small set; None: the shipped CSAbstruct train split
        self._lock = threading.Lock()
        self._loaded: tuple[tuple[int, int], LinearRoleModel] | None = None

    def _stamp(self) -> tuple[int, int] | None:
        try:
            found = (self.folder / MANIFEST).stat()
        except OSError:
            return None
        return found.st_mtime_ns, found.st_size

    def manifest(self) -> dict[str, Any] | None:
        """The saved model's manifest, or None (none saved, or unreadable)."""
        try:
            found = json.loads((self.folder / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None

    def current(self, embedder_model: str) -> LinearRoleModel | None:
        stamp = self._stamp()
        if stamp is None:
            return None
        with self._lock:
            if self._loaded is not None and self._loaded[0] == stamp:
                model = self._loaded[1]
                return model if model.embedding_model == embedder_model else None
        manifest = self.manifest()
        if (
            manifest is None
            or manifest.get("embedding_model") != embedder_model
            or manifest.get("features") != FEATURES
        ):
            return None
        try:
            with np.load(self.folder / str(manifest["weights"]), allow_pickle=False) as data:
                model = LinearRoleModel(
                    data["weights"], data["bias"], embedding_model=embedder_model, features=FEATURES
                )
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

    def train(self, embed: EmbedTexts) -> LinearRoleModel:
        started = time.monotonic()
        abstracts = read_training(self._training)
        texts = [s for sentences, _ in abstracts for s in sentences]
        vectors = np.asarray(embed.embed(texts), dtype=np.float32)
        rows: list[tuple[Array, Sequence[str]]] = []
        at = 0
        for sentences, labels in abstracts:
            rows.append((vectors[at : at + len(sentences)], labels))
            at += len(sentences)
        model = LinearRoleModel.fit(
            rows, embedding_model=embed.model_id, texts=[sentences for sentences, _ in abstracts]
        )
        self._save(model, abstracts=len(abstracts), sentences=len(texts), seconds=time.monotonic() - started)
        log.info(
            "trained the sentence-role model for %s on %s", embed.model_id, count(len(texts), "sentence")
        )
        return model

    def _save(self, model: LinearRoleModel, **facts: Any) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        weights = f"roles-{model.model_id[-12:]}.npz"
        tmp = self.folder / f".{weights}.tmp"
        with open(tmp, "wb") as fh:
            np.savez(fh, weights=model.weights, bias=model.bias)
        os.replace(tmp, self.folder / weights)
        manifest = {
            "model_id": model.model_id,
            "embedding_model": model.embedding_model,
            "features": FEATURES,
            "classes": list(ROLES),
            "weights": weights,
            "training": "CSAbstruct train split (allenai/sequential_sentence_classification, Apache-2.0)",
            "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
            **facts,
        }
        tmp = self.folder / f".{MANIFEST}.tmp"
        tmp.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        os.replace(tmp, self.folder / MANIFEST)
        for old in self.folder.glob("roles-*.npz"):
            if old.name != weights:
                old.unlink(missing_ok=True)
