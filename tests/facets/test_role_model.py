"""The sentence-role model kept with the instance's data: trained on the shipped CSAbstruct train split in
the current embedder's space, saved with a manifest naming that model, loaded by every process, noticed
when another process trains it again, and retrained for another embedding model or an unreadable file."""

from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest

from paperfeed.adapters.embed.fake import FakeEmbedder
from paperfeed.adapters.sentences.roles import (
    FEATURES,
    LinearRoleModel,
    RoleModelFolder,
    read_training,
    role_features,
    word_buckets,
)
from paperfeed.domain.sentences import ROLES, SENTENCE_VECTORS, sentence_model_id


def _small(n: int = 120) -> bytes:
    """The first ``n`` abstracts of the shipped training set (a whole fit is seconds, not needed here)."""
    out = io.BytesIO()
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        for sentences, labels in read_training()[:n]:
            fh.write(json.dumps({"sentences": sentences, "labels": labels}) + "\n")
    return out.getvalue()


def test_the_shipped_training_set_is_csabstructs_train_split() -> None:
    abstracts = read_training()
    assert len(abstracts) == 1668
    assert sum(len(s) for s, _ in abstracts) > 10_000
    assert all(len(s) == len(labels) and set(labels) <= set(ROLES) for s, labels in abstracts)


def test_features_carry_the_neighbours_the_abstract_and_the_place() -> None:
    e = np.eye(4, dtype=np.float32)[:3]
    x = role_features(e)
    assert x.shape == (3, 4 * 4 + 12)
    np.testing.assert_array_equal(x[1, 4:8], e[0])  # the sentence before
    np.testing.assert_array_equal(x[1, 8:12], e[2])  # the one after
    np.testing.assert_array_equal(x[0, 4:8], 0)  # nothing before the first
    np.testing.assert_allclose(x[0, 12:16], e.mean(axis=0))
    assert x[2, 16] == 1.0  # relative place of the last
    assert role_features(np.zeros((0, 4), dtype=np.float32)).shape == (0, 28)


def test_the_words_of_a_sentence_decide_what_its_vector_cannot() -> None:
    """Two abstracts whose sentence vectors are the same: only the words tell a method from a result."""
    assert word_buckets("We propose X.") == word_buckets("we  PROPOSE x .")  # lower-cased, stable
    assert word_buckets("We propose X.") != word_buckets("Results show X.")
    v = np.ones((2, 8), dtype=np.float32) / np.sqrt(8)
    texts = [["We propose a graph network.", "Results show higher accuracy."]] * 30
    texts += [["Results show higher accuracy.", "We propose a graph network."]] * 30
    labels = [["method", "result"]] * 30 + [["result", "method"]] * 30
    model = LinearRoleModel.fit(list(zip([v] * 60, labels, strict=True)), embedding_model="m", texts=texts)
    found = model.probabilities(v, ["Results show it works.", "We propose a new loss."]).argmax(axis=1)
    assert [ROLES[int(i)] for i in found] == ["result", "method"]
    blind = model.probabilities(v, [])  # without texts only the vectors and places count: a coin toss
    np.testing.assert_allclose(blind[0], blind[1], atol=1e-3)
    with pytest.raises(ValueError, match="1 text for 2 sentences"):
        LinearRoleModel.fit([(v, ["method", "result"])], embedding_model="m", texts=[["one"]])


def test_trained_saved_loaded_and_retrained_for_another_model(tmp_path: Path) -> None:
    folder = tmp_path / "models" / "sentence-roles"
    roles = RoleModelFolder(folder, training=_small())
    fake = FakeEmbedder()
    assert roles.current(fake.model_id) is None
    model = roles.train(fake)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["embedding_model"] == sentence_model_id(fake.model_id)  # the sentence vectors' space
    assert manifest["sentence_vectors"] == SENTENCE_VECTORS
    assert manifest["features"] == FEATURES
    assert manifest["model_id"] == model.model_id
    assert manifest["abstracts"] == 120
    assert (folder / manifest["weights"]).is_file()
    again = RoleModelFolder(folder).current(fake.model_id)  # another process reads the same files
    assert again is not None
    assert again.model_id == model.model_id
    vectors = fake.embed(["We propose a new parser.", "It beats the baselines by two points."])
    np.testing.assert_allclose(again.probabilities(vectors, []), model.probabilities(vectors, []), atol=1e-6)
    assert list(model.probabilities(vectors, []).sum(axis=1)) == pytest.approx([1.0, 1.0], abs=1e-5)

    other = FakeEmbedder(name="adapted")
    assert roles.current(other.model_id) is None  # made for another vector space: retrain
    retrained = roles.train(other)
    assert retrained.embedding_model == sentence_model_id(other.model_id)
    assert retrained.model_id != model.model_id
    assert len(list(folder.glob("roles-*.npz"))) == 1  # the old weights are gone


def test_a_process_notices_a_model_trained_by_another(tmp_path: Path) -> None:
    folder = tmp_path / "roles"
    fake = FakeEmbedder()
    web, indexer = RoleModelFolder(folder, training=_small(60)), RoleModelFolder(folder, training=_small(80))
    first = indexer.train(fake)
    assert web.current(fake.model_id) is not None
    assert web.current(fake.model_id).model_id == first.model_id  # type: ignore[union-attr]
    second = RoleModelFolder(folder, training=_small(100)).train(fake)
    os.utime(folder / "manifest.json", ns=(1, 1))  # a same-size manifest: the time alone must do
    found = web.current(fake.model_id)
    assert found is not None
    assert found.model_id == second.model_id != first.model_id


def test_unreadable_weights_mean_train_again(tmp_path: Path) -> None:
    folder = tmp_path / "roles"
    fake = FakeEmbedder()
    model = RoleModelFolder(folder, training=_small(60)).train(fake)
    weights = folder / json.loads((folder / "manifest.json").read_text())["weights"]
    weights.write_bytes(b"not a numpy file")
    assert RoleModelFolder(folder).current(fake.model_id) is None
    assert isinstance(model, LinearRoleModel)
