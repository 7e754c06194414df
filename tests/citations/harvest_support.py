"""Shared by the harvest tests and the bench: papers of a store, and the recorded S2 answers served on
loopback for them (the recordings are of non-arXiv papers, so they are served under our papers' ids)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from tests.support.http_server import ReplayServer, Reply

from .scholarly_replay import S2_BASE, recording, s2

JSON = {"Content-Type": "application/json"}
BATCH = f"{S2_BASE}/paper/batch"


def add_papers(store: SqlPaperStore, days: dict[str, str]) -> None:
    """Papers ``id -> published day`` in the store."""
    papers = []
    for pid, day in days.items():
        when = datetime.fromisoformat(day).replace(tzinfo=UTC)
        papers.append(
            Paper(
                id=pid,
                title=f"Paper {pid}",
                abstract="An abstract.",
                published=when,
                updated=when,
                sources={"t": day},
            )
        )
    store.apply_batch(Batch(papers=papers))


def s2_papers(fixtures_dir: Path) -> list[Any]:
    """The recorded batch answer: ``[null, paper, paper, paper]``."""
    body = recording(fixtures_dir, "s2_api", "batch_full_fields_with_null_for_unknown_id.json")["body"]
    assert isinstance(body, list)
    return body


def serve_s2(server: ReplayServer, fixtures_dir: Path, batch_size: int) -> list[Any]:
    """The recorded batch answer cut into answers of ``batch_size`` entries (S2 answers one entry per id
    asked, in order), each known paper's references and citations from the recorded pages."""
    papers = s2_papers(fixtures_dir)
    chunks = [papers[i : i + batch_size] for i in range(0, len(papers), batch_size)]
    server.add(BATCH, *(Reply(200, json.dumps(c).encode(), JSON) for c in chunks))
    for paper in papers[1:]:
        pid = paper["paperId"]
        refs = f"{S2_BASE}/paper/{pid}/references"
        server.add(
            refs, s2(fixtures_dir, "references_full_page1_offset0_next100.json"), params={"offset": "0"}
        )
        server.add(
            refs, s2(fixtures_dir, "references_full_page2_offset100_last.json"), params={"offset": "100"}
        )
        cites = f"{S2_BASE}/paper/{pid}/citations"
        server.add(
            cites, s2(fixtures_dir, "citations_title_page1_offset0_next100.json"), params={"offset": "0"}
        )
        server.add(
            cites, s2(fixtures_dir, "citations_title_page19_offset1800_last.json"), params={"offset": "100"}
        )
    return papers
