"""Run by test_kill.py in a subprocess: the indexing job with a slowed fake embedder, printing progress.

python -m tests.indexing.slow_indexer SQLALCHEMY_URL BATCH_SIZE DELAY_SECONDS
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

import numpy as np

from paperfeed.adapters.embed.fake import FakeEmbedder
from paperfeed.adapters.store import open_store
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.services.indexing import IndexingService


class SlowEmbedder(FakeEmbedder):
    """A model that takes ``delay`` seconds per batch, like a real one on a busy CPU."""

    def __init__(self, delay: float) -> None:
        super().__init__(64)
        self.delay = delay

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(self.delay)
        return super().embed(texts)


class PrintProgress:
    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        print(position, flush=True)  # printed after the batch committed


def main() -> None:
    url, batch, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    store = open_store(url)
    try:
        IndexingService(SqlEmbeddingStore(store.engine), SlowEmbedder(delay), batch_size=batch).run(
            PrintProgress()
        )
    finally:
        store.close()


if __name__ == "__main__":
    main()
