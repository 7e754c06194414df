"""Small synthetic corpora for the reliability tests: JSONL in paperfeed's own import format."""

from __future__ import annotations

from pathlib import Path

import orjson

TOPICS = (
    "graph neural networks for molecules",
    "speech recognition with transformers",
    "dark matter halo simulations",
    "protein folding with diffusion models",
    "reinforcement learning for robot grasping",
)


def record(i: int, *, revision: int = 0) -> dict[str, object]:
    """Paper ``i`` (ids 2501.00001 ...); ``revision`` changes its abstract (a new version of its text)."""
    topic = TOPICS[i % len(TOPICS)]
    extra = f" Revised {revision} times." if revision else ""
    return {
        "id": f"2501.{i:05d}",
        "title": f"Paper {i} on {topic}",
        "abstract": f"We study {topic}. Result number {i}.{extra}",
        "authors": ["Ada Lovelace", f"Author {i % 7}"],
        "categories": ["cs.LG"] if i % 2 else ["astro-ph.CO"],
        "published": f"2025-01-{1 + i % 28:02d}",
        "version": 1 + revision,
    }


def write_jsonl(path: Path, ids: range, *, revision: int = 0) -> Path:
    with path.open("wb") as fh:
        for i in ids:
            fh.write(orjson.dumps(record(i, revision=revision)) + b"\n")
    return path
