"""The recorded Semantic Scholar and OpenAlex answers (../shared/fixtures/s2_api, openalex_api) as
loopback replies: each file's status, Content-Type and body exactly as recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.http_server import Reply

S2_BASE = "/graph/v1"


def recording(fixtures_dir: Path, api: str, name: str) -> dict[str, Any]:
    data = json.loads((fixtures_dir / api / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def body_bytes(record: dict[str, Any]) -> bytes:
    body = record["body"]
    return body.encode() if isinstance(body, str) else json.dumps(body, ensure_ascii=False).encode()


def reply(fixtures_dir: Path, api: str, name: str, **headers: str) -> Reply:
    """The recording as a reply; ``headers`` adds what no recording carries (a ``Retry-After``)."""
    record = recording(fixtures_dir, api, name)
    return Reply(record["status"], body_bytes(record), {**record["headers"], **headers})


def s2(fixtures_dir: Path, name: str, **headers: str) -> Reply:
    return reply(fixtures_dir, "s2_api", name, **headers)


def openalex(fixtures_dir: Path, name: str, **headers: str) -> Reply:
    return reply(fixtures_dir, "openalex_api", name, **headers)
