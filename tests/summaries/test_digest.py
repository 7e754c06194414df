"""Digest mails carry each paper's one-line summary with its label: Hugging Face's where it gave one, else
the abstract's sentence extracted as one. A real app on SQLite, the real sentence pass (roles by place),
mail through the real SMTP adapter to the recording server on loopback."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from tests.facets.support import PositionalRoles
from tests.support.digests import Clock, digest_settings, load_papers, subscribe_active
from tests.support.smtp_server import SmtpTestServer


@pytest.fixture
def app(tmp_path: Path, smtp_server: SmtpTestServer) -> Iterator[App]:
    built = build_app(digest_settings(tmp_path / "data", smtp_server))
    load_papers(built)
    clock = Clock(datetime(2025, 3, 20, 9, 0, tzinfo=UTC))
    built.digests.sender.clock = clock
    built.digests.subscriptions.clock = clock
    built.indexes.__dict__["role_models"] = PositionalRoles()
    try:
        yield built
    finally:
        built.close()


def _odd(paper_id: str) -> bool:
    return int(paper_id[-1]) % 2 == 1


def test_digest_text_and_html_carry_the_labelled_line(app: App, smtp_server: SmtpTestServer) -> None:
    every = [p for page in app.core.store.iter_papers() for p in page]
    hf = [
        Paper(id=p.id, title=p.title, abstract=p.abstract, ai_summary=f"Hugging Face's line for {p.id}.")
        for p in every
        if _odd(p.id)
    ]
    app.core.store.apply_batch(Batch(papers=hf))
    app.indexes.indexer.current().run()
    done = app.indexes.sentence_indexer.current().run()
    assert done.papers == len(every)
    stored = app.core.store.get_papers([p.id for p in every])
    subscribe_active(app, "reader@example.org")
    app.digests.sender.run()
    mail = smtp_server.wait_for(1)[0]
    shown = re.findall(r"/papers/([\d.]+)", mail.text)
    assert {_odd(pid) for pid in shown} == {True, False}  # both kinds are in this digest
    for pid in shown:
        paper = stored[pid]
        if _odd(pid):
            assert f"  AI summary by Hugging Face: Hugging Face's line for {pid}.\n" in mail.text
        else:
            assert paper.extracted_summary is not None
            assert paper.extracted_summary in paper.abstract
            assert f"  Extracted from the abstract: {paper.extracted_summary}\n" in mail.text
    assert mail.html is not None
    assert "Extracted from the abstract:</span>" in mail.html
    assert "AI summary by Hugging Face:</span>" in mail.html
