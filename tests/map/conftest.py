"""An instance with topics built from the synthetic three-group papers of tests/topics (real store)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from paperfeed.settings import Settings
from paperfeed.web.topic_map import MAGIC


def settings_for(data_dir: Path, db_url: str | None = None, **extra: Any) -> Settings:
    return Settings(
        data_dir=data_dir,
        database_url=db_url,
        embedding_backend="fake",
        topics_min_papers=30,
        topics_k=3,
        **extra,
    )


def decode(body: bytes) -> dict[str, Any]:
    """The binary map answer read back as the page's script reads it (an independent reader)."""
    import orjson

    assert body[:8] == MAGIC
    (length,) = struct.unpack_from("<I", body, 8)
    header = orjson.loads(body[12 : 12 + length])
    assert (12 + length) % 4 == 0
    n = header["count"]
    offset = 12 + length
    columns = {}
    for name in ("x", "y", "topic", "day", "category"):
        columns[name] = list(struct.unpack_from(f"<{n}H", body, offset))
        offset += 2 * n
    ids: list[str] = []
    previous = b""
    for _ in range(n):
        shared, rest = body[offset], body[offset + 1]
        raw = previous[:shared] + body[offset + 2 : offset + 2 + rest]
        offset += 2 + rest
        ids.append(raw.decode())
        previous = raw
    assert offset == len(body)
    return {"header": header, "ids": ids, **columns}
