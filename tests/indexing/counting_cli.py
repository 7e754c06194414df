"""Run by test_three_workers.py: the real ``paperfeed`` command line, with the fake embedder counted.

    python -m tests.indexing.counting_cli LEDGER DELAY BLOCK_AT -- paperfeed-args...

Every call of the fake embedder (``PAPERFEED_EMBEDDING_BACKEND=fake``) first appends one line per text to
``LEDGER`` (``pid<TAB>call<TAB>text``, one ``write`` on an ``O_APPEND`` file, so the lines of several
processes never interleave), then takes ``DELAY`` seconds, like a real model on a busy CPU. The ``BLOCK_AT``th
call (0: none) never returns: the process is stuck mid-batch, its claim renewed, until it is killed.
The ledger is the oracle of "embedded twice": written when a batch's embedding *starts*, so a batch a
killed worker had begun counts once for it and once for whoever redoes it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any


def main() -> None:
    ledger, delay, block_at = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    args = sys.argv[sys.argv.index("--") + 1 :]
    from paperfeed.adapters.embed.fake import FakeEmbedder

    original = FakeEmbedder.embed
    calls = 0

    def embed(self: FakeEmbedder, texts: Sequence[str]) -> Any:
        nonlocal calls
        calls += 1
        lines = "".join(f"{os.getpid()}\t{calls}\t{text}\n" for text in texts)
        fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, lines.encode())
        finally:
            os.close(fd)
        if calls == block_at:
            while True:
                time.sleep(60)
        time.sleep(delay)
        return original(self, texts)

    FakeEmbedder.embed = embed  # type: ignore[method-assign]
    from paperfeed.cli import cli_app

    sys.argv = ["paperfeed", *args]
    cli_app()


if __name__ == "__main__":
    main()
