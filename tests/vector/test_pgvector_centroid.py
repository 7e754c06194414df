"""pgvector's mean vector (the centre of similar papers' re-ranking): read once per index version, and
sampled over the whole of a large table rather than from its first rows.

The contract test (tests/vector/test_contract.py) checks the mean itself on every index; these check what
only PostgreSQL has: a table other processes write, and a table too large to average whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest
from sqlalchemy.engine import Engine

from paperfeed.adapters.store.sql_store import make_engine
from paperfeed.adapters.vector import pgvector_index
from paperfeed.adapters.vector.pgvector_index import PgVectorIndex
from tests.support.statements import recorded_statements
from tests.vector.corpus import DIM, MODEL, make_corpus

pytestmark = pytest.mark.postgres


@pytest.fixture
def engine(pg_url: str) -> Iterator[Engine]:
    made = make_engine(pg_url)
    yield made
    made.dispose()


def test_the_mean_is_read_once_per_version_and_another_writers_save_is_seen_on_reload(
    engine: Engine,
) -> None:
    corpus = make_corpus(600, seed=5)
    reader = PgVectorIndex(engine, model_id=MODEL, dimension=DIM)
    reader.upsert(corpus.records[:300])
    reader.save()
    first = reader.centroid()
    assert first is not None
    np.testing.assert_allclose(first, corpus.vectors[:300].mean(axis=0), atol=2e-3)
    with recorded_statements(engine) as seen:
        assert reader.centroid() is first
    assert seen == [], "a kept mean still asked the database"

    writer = PgVectorIndex(engine, model_id=MODEL, dimension=DIM)  # another process's index
    writer.upsert(corpus.records[300:])
    writer.save()
    writer.close()
    assert reader.centroid() is first  # not noticed until the reader checks for a new version
    assert reader.reload_if_changed()
    now = reader.centroid()
    assert now is not None
    np.testing.assert_allclose(now, corpus.vectors.mean(axis=0), atol=2e-3)
    reader.close()


def test_a_large_table_is_averaged_over_pages_from_all_of_it_not_its_first_rows(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first half of the rows (the oldest, first in physical order) points one way, the second half
    the other: the mean of the whole has nothing of that direction, the first rows' mean all of it."""
    corpus = make_corpus(8_000, seed=9)
    axis = np.zeros(DIM, dtype=np.float32)
    axis[0] = 1.0
    unit = corpus.vectors / np.linalg.norm(corpus.vectors, axis=1, keepdims=True)
    tilted = [
        dataclasses.replace(r, vector=unit[i] + (3.0 if i < 4_000 else -3.0) * axis)
        for i, r in enumerate(corpus.records)
    ]
    index = PgVectorIndex(engine, model_id=MODEL, dimension=DIM)
    index.upsert(tilted)
    index.save()
    monkeypatch.setattr(pgvector_index, "CENTROID_SAMPLE", 1_000)
    mean = index.centroid()
    assert mean is not None
    first_rows = np.stack([r.vector / np.linalg.norm(r.vector) for r in tilted[:1_000]]).mean(axis=0)
    assert first_rows[0] > 0.9  # what averaging the first 1,000 rows would give
    assert abs(float(mean[0])) < 0.5, f"the sample leans to one end of the table: {mean[0]:.2f}"
    index.close()
