"""/admin/jobs shows how far embedding has come, what the indexer is doing, the topics and the topics
builds run by hand, in a table that stays readable (#30 item 11).

Before, the page showed no indexing progress or coverage at all, a hand-run ``paperfeed topics build`` left
no trace in the job runs, and the runs table was cramped and misaligned. The commands run as real
processes; the page is the real app (TestClient, and a live server in chromium for the layout).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.indexing_status import IndexerReport
from paperfeed.services.jobs import process_identity
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.security import SESSION_COOKIE
from tests.community.conftest import add_reader
from tests.support.live_server import live_server
from tests.topics.conftest import add_papers

HTML = {"accept": "text/html"}
ENV = {"PAPERFEED_EMBEDDING_BACKEND": "fake", "PAPERFEED_TOPICS_MIN_PAPERS": "30", "PAPERFEED_TOPICS_K": "3"}


@dataclass
class Instance:
    settings: Settings
    app: App  # another process's App on the same data (the CLI's, the indexer's)
    session: str  # an administrator's


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[Instance]:
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=None,
        embedding_backend="fake",
        keyword_engine="fts5",
        topics_min_papers=30,
        topics_k=3,
    )
    app = build_app(settings)
    add_papers(app.core.store, 40, embed=False)  # 120 papers, none embedded yet
    admin = add_reader(app, "admin@example.org", "Ada", role="admin")
    yield Instance(settings, app, app.readers.accounts.create_session(admin).session)
    app.close()


def _cli(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paperfeed", "--data-dir", str(data_dir), *args],
        env={**os.environ, **ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _jobs_page(instance: Instance) -> tuple[str, Any]:
    with TestClient(create_app(lambda: build_app(instance.settings)), follow_redirects=False) as client:
        client.cookies.set(SESSION_COOKIE, instance.session)
        page = client.get("/admin/jobs", headers=HTML)
    assert page.status_code == 200, page.text[:300]
    return page.text, lxml.html.fromstring(page.text)


def _said(doc: Any) -> str:
    return " ".join(" ".join("".join(p.itertext()).split()) for p in doc.cssselect(".indexing-status p"))


def test_a_topics_build_by_hand_is_a_recorded_run_shown_on_the_page(instance: Instance) -> None:
    instance.app.indexes.indexer.current().run()
    built = _cli(instance.settings.data_dir, "topics", "build")
    assert built.returncode == 0, built.stderr
    assert "built 3 topics of 120 papers" in built.stdout
    [run] = instance.app.core.job_runs.runs(job="topics-build")
    assert (run.status, run.trigger) == ("ok", "manual")
    assert run.steps[0].counts["topics"] == 3
    assert run.steps[0].counts["papers"] == 120

    refused = _cli(instance.settings.data_dir, "topics", "build", env={"PAPERFEED_TOPICS_MIN_PAPERS": "5000"})
    assert refused.returncode == 2
    output = refused.stdout + refused.stderr
    assert output.count("too few papers for topics: 120 with an embedding, at least 5,000 needed") == 1
    assert "Traceback" not in output
    failed, earlier = instance.app.core.job_runs.runs(job="topics-build")
    assert earlier.status == "ok"
    assert failed.status == "failed"
    assert "too few papers for topics" in (failed.steps[0].error or "")

    _, doc = _jobs_page(instance)
    rows = [" ".join(" ".join(r.itertext()).split()) for r in doc.cssselect(".jobs-table tbody tr")]
    assert rows[0].startswith("topics-build by hand")
    assert "failed" in rows[0]
    assert "too few papers for topics" in rows[0]
    assert rows[1].startswith("topics-build by hand")
    assert "topics 3, papers 120" in rows[1]
    topics = " ".join(" ".join(doc.cssselect("#topics + p")[0].itertext()).split())
    assert topics.startswith("3 topics (")
    assert "of 120 papers, built" in topics


def test_the_page_says_how_many_papers_have_no_vector_and_how_to_embed_them(instance: Instance) -> None:
    _, doc = _jobs_page(instance)
    said = _said(doc)
    assert "0 of 120 papers have a vector of" in said
    assert "120 still have none" in said
    assert "No indexer has run yet." in said
    assert "paperfeed run starts an indexer with the server, paperfeed index embeds them once" in said
    codes = [c.text_content() for c in doc.cssselect(".indexing-status code")]
    assert {"paperfeed run", "paperfeed index"} <= set(codes)  # commands as code, not raw backticks (#40)
    assert doc.cssselect(".indexing-status progress")[0].get("value") == "0"


def test_an_indexer_reports_its_progress_and_its_end(instance: Instance) -> None:
    indexed = _cli(instance.settings.data_dir, "index")
    assert indexed.returncode == 0, indexed.stderr
    report = instance.app.indexes.embeddings.indexer_report()
    assert report is not None
    assert (report.state, report.embedded, report.remaining) == ("stopped", 120, 0)
    assert report.rate is not None
    assert report.rate > 0
    assert report.holder.startswith(f"{socket.gethostname()}:")
    assert report.holder != process_identity()  # the indexer's own process, now gone
    _, doc = _jobs_page(instance)
    said = _said(doc)
    assert "All 120 papers have a vector of" in said
    assert "The last indexer (pid" in said
    assert "stopped" in said


def test_a_running_indexer_shows_its_rate_and_the_time_left(instance: Instance) -> None:
    now = datetime.now(UTC)
    instance.app.indexes.embeddings.report_indexer(
        IndexerReport(process_identity(), "embedding", 40, 80, 12.5, now - timedelta(seconds=3))
    )
    _, doc = _jobs_page(instance)
    said = _said(doc)
    assert f"An indexer is embedding (pid {os.getpid()} on {socket.gethostname()}) at 12.5 papers/s" in said
    assert "about 10 s left" in said  # the 120 papers without a vector at 12.5 papers/s
    gone = f"{socket.gethostname()}:{2**22 + 12345}:?"  # a pid above Linux's pid_max: no such process
    instance.app.indexes.embeddings.report_indexer(IndexerReport(gone, "embedding", 40, 80, 12.5, now))
    said = _said(_jobs_page(instance)[1])
    assert "is gone (its process ended)" in said
    assert "Nothing is embedding the 120 papers without a vector" in said


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 390])
def test_the_runs_table_is_aligned_and_fits_the_screen(
    chromium_browser: Any, instance: Instance, width: int, tmp_path: Path
) -> None:
    instance.app.indexes.indexer.current().run()
    assert _cli(instance.settings.data_dir, "topics", "build").returncode == 0
    _cli(instance.settings.data_dir, "topics", "build", env={"PAPERFEED_TOPICS_MIN_PAPERS": "5000"})
    with live_server(instance.settings) as url:
        context = chromium_browser.new_context(viewport={"width": width, "height": 900})
        context.add_cookies([{"name": SESSION_COOKIE, "value": instance.session, "url": url}])
        page = context.new_page()
        page.goto(url + "/admin/jobs")
        found = page.evaluate(
            """() => ({
              scroll: document.documentElement.scrollWidth, width: document.documentElement.clientWidth,
              rows: [...document.querySelectorAll('.jobs-table tbody tr')].map(tr =>
                [...tr.children].map(td => {  // the cell, and the top of its first line of text
                  const r = td.getBoundingClientRect(), range = document.createRange();
                  range.selectNodeContents(td);
                  const first = [...range.getClientRects()].find(q => q.height > 0) || r;
                  return [r.left, first.top, r.right]; })),
              table: document.querySelector('.jobs-table').getBoundingClientRect().right,
              frame: document.querySelector('.table-scroll').getBoundingClientRect().right })"""
        )
        page.screenshot(path=str(tmp_path / f"admin-jobs-{width}.png"), full_page=True)
        context.close()
    assert found["scroll"] <= found["width"], "the page scrolls sideways"
    assert found["table"] <= found["frame"] + 1, "the table is wider than its column"
    assert len(found["rows"]) == 2
    for cells in found["rows"]:
        if width == 1280:  # a table: every cell's text starts on the run's first line
            tops = [top for _, top, _ in cells]
            assert max(tops) - min(tops) < 6, cells
        steps = cells[-1]
        assert steps[2] - steps[0] > 200, "the steps are squeezed into a narrow column"


def test_the_page_lists_the_embedding_workers_and_what_they_hold(instance: Instance) -> None:
    """Each `paperfeed index` process sharing the backlog (docs/scaling.md): what it committed, and the
    batch another machine's worker holds now, with its id range and expiry."""
    indexed = _cli(instance.settings.data_dir, "index", "--limit", "100", "--no-sentences")
    assert indexed.returncode == 0, indexed.stderr
    claims = instance.app.indexes.claims.claims
    now = datetime.now(UTC)
    claims.start_worker("gpu-b:912:77:abc", "fake-hash64", now)
    held = claims.claim(
        "fake-hash64",
        "gpu-b:912:77:abc",
        batch=1,
        after="",
        limit=8,
        now=now,
        until=now + timedelta(minutes=2),
    )
    assert len(held) == 8
    _, doc = _jobs_page(instance)
    said = [
        " ".join("".join(e.itertext()).split())
        for e in doc.cssselect(".embedding-workers p, .embedding-workers li")
    ]
    assert said[0] == "embedding workers seen in the last 24 h: 2 (1 embedding now)"
    assert said[1].startswith("pid 912 on gpu-b: embedding with fake-hash64 since")
    assert f"holds 8 papers ({held[0].paper_id} … {held[-1].paper_id}), claimed until" in said[1]
    assert said[2].startswith("pid ")
    assert ": stopped " in said[2]
    assert "100 papers in 1 batch " in said[2]
