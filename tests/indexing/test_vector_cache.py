"""bench.vector_cache: embed once, load afterwards; keyed by model and content, resumable by shard."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from bench.vector_cache import Doc, VectorCache, read_jsonl

from paperfeed.adapters.embed.fake import FakeEmbedder


class CountingEmbedder(FakeEmbedder):
    def __init__(self, name: str = "fake") -> None:
        super().__init__(32, name=name)
        self.calls = 0
        self.embedded = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.embedded += len(texts)
        return super().embed(texts)


DOCS = [Doc(f"d{i}", f"Title {i}", f"Abstract about topic {i % 3}.") for i in range(7)]


def test_embeds_once_then_loads(tmp_path: Path) -> None:
    first = CountingEmbedder()
    vectors = VectorCache(first, tmp_path).vectors("demo", DOCS, chunk=3)
    assert vectors.shape == (7, 32)
    assert (first.calls, first.embedded) == (3, 7)  # shards of 3, 3 and 1
    assert np.array_equal(vectors, FakeEmbedder(32).embed([d.text for d in DOCS]))
    again = CountingEmbedder()
    assert np.array_equal(VectorCache(again, tmp_path).vectors("demo", DOCS[::-1]), vectors[::-1])
    assert again.calls == 0
    shards = sorted((tmp_path / "fake-hash32" / "demo").iterdir())
    assert len(shards) == 3
    assert all(p.name.startswith("part-") and p.suffix == ".npz" for p in shards)


def test_changed_text_duplicates_and_other_models(tmp_path: Path) -> None:
    VectorCache(CountingEmbedder(), tmp_path).vectors("demo", DOCS)
    edited = [
        *DOCS[:6],
        Doc("d6", "Title 6", "A corrected abstract."),
        Doc("d7", "Title 0", DOCS[0].abstract),
    ]
    counting = CountingEmbedder()
    VectorCache(counting, tmp_path).vectors("demo", edited)
    assert counting.embedded == 1  # only the edited text; the duplicate of d0 shares its hash
    other = CountingEmbedder("other")
    VectorCache(other, tmp_path).vectors("demo", DOCS)
    assert other.embedded == 7  # another vector space: nothing shared


def test_a_second_filler_skips_what_the_first_already_stored(tmp_path: Path) -> None:
    class Racing(CountingEmbedder):
        """Before its first chunk, "another process" stores every doc of the corpus."""

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            if self.calls == 0:
                VectorCache(FakeEmbedder(32), tmp_path).vectors("demo", DOCS, chunk=7)
            return super().embed(texts)

    racing = Racing()
    vectors = VectorCache(racing, tmp_path).vectors("demo", DOCS, chunk=2)
    assert racing.calls == 1  # its first chunk, then nothing: the rest was found in the other's shard
    assert np.array_equal(vectors, FakeEmbedder(32).embed([d.text for d in DOCS]))


def test_read_jsonl_normalises_and_skips_untitled(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"id": "a", "title": " A  title ", "abstract": "Some\\n text"}\n\n{"id": "b", "title": ""}\n'
    )
    assert read_jsonl(path) == [Doc("a", "A title", "Some text")]
