"""Every surface says the same of the indexer, the sentence pass included, and its time left holds
(issue #39 item 5).

During the sentence pass the search pages, the API's ``X-Search-Notes`` and the CLI said "no indexer is
running … start one with `paperfeed index`" while ``jobs status`` said the indexer runs: each embedding
run ended by reporting "stopped", and the sentence pass reported nothing. The "about 12 min left"
estimate stood still for minutes and then jumped: it was the backlog of the vector index (saved every
600 s) over the rate since the run began (the model's loading included).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import build_app
from paperfeed.domain.indexing_status import IndexerReport, RateWindow
from paperfeed.services.indexer_status import IndexerReporter
from paperfeed.settings import Settings
from paperfeed.web.app import create_app
from tests.importing.conftest import rec, write_jsonl
from tests.indexing.conftest import add_papers, paper
from tests.support.follower import import_file, index_follow


class _Kept:
    """:class:`~paperfeed.domain.indexing_status.IndexerReports` in memory: every report kept."""

    def __init__(self) -> None:
        self.all: list[IndexerReport] = []

    def report_indexer(self, report: IndexerReport) -> None:
        self.all.append(report)

    def indexer_report(self) -> IndexerReport | None:
        return self.all[-1] if self.all else None


def _run(
    paces: list[tuple[int, float]], load: float = 40.0
) -> tuple[list[IndexerReport], list[float], float]:
    """A simulated run: the model loads for ``load`` s during the first batch, then batches of 128 at
    ``(until_done, papers_per_second)`` paces; the reports, when each batch ended, and when the run did."""
    now = [0.0]
    reports = _Kept()
    reporter = IndexerReporter(reports, every=0, clock=lambda: now[0], identity=lambda: "host:1:1")
    total = paces[-1][0]
    reporter.report("embedding", done=0, remaining=total, force=True)
    now[0] += load
    done, times = 0, []
    for until, pace in paces:
        while done < until:
            step = min(128, until - done)
            now[0] += step / pace
            done += step
            times.append(now[0])
            reporter.report("embedding", done=done, remaining=total - done)
    said = [r for r in reports.all if r.state == "embedding"][1:]  # one per batch
    return said, times, now[0]


def test_the_time_left_is_within_a_quarter_of_the_truth_from_the_second_batch_on() -> None:
    """As on a loaded machine: the model loads for 40 s during the first batch, then 10 papers/s. Every
    estimate from the second batch on is within 25 % of the time the run really had left; the old one
    (the rate since the run began, the model's loading included) was not."""
    said, times, end = _run([(3000, 10.0)])
    checked = 0
    for report, at in list(zip(said, times, strict=True))[1:-1]:
        left = report.seconds_left(report.at)
        assert left is not None, report
        assert abs(left - (end - at)) <= 0.25 * (end - at), (at, left, end - at)
        checked += 1
    assert checked > 20
    second, at = said[1], times[1]
    run_average = second.embedded / at  # the old estimate's rate
    old = (3000 - second.embedded) / run_average
    assert abs(old - (end - at)) > 0.25 * (end - at)


def test_after_the_pace_changes_the_time_left_follows_within_the_window() -> None:
    """Another process takes a core half-way: once the window (120 s) holds only the new pace, the
    estimate is within 25 % again (an estimate cannot foresee a change of pace, only follow it)."""
    said, times, end = _run([(1500, 10.0), (3000, 5.0)])
    changed = times[next(i for i, r in enumerate(said) if r.embedded >= 1500)]
    late = [(r, at) for r, at in zip(said, times, strict=True) if at >= changed + 120 + 26 and r.remaining]
    assert len(late) > 5
    for report, at in late:
        left = report.seconds_left(report.at)
        assert left is not None
        assert abs(left - (end - at)) <= 0.25 * (end - at), (at, left, end - at)


def test_a_rate_window_forgets_what_is_older_than_its_span() -> None:
    window = RateWindow(window=10.0)
    window.add(0.0, 100)  # the anchor: its papers' time is not known
    assert window.rate() is None
    window.add(10.0, 100)
    assert window.rate() == 10.0
    for t in range(11, 31):
        window.add(float(t), 1)  # much slower now
    rate = window.rate()
    assert rate is not None
    assert 0.9 <= rate <= 1.1


def _say_sentences(data: Path, settings: Settings) -> None:
    """This process reports the sentence pass as the follower does (it is alive, so it counts)."""
    app = build_app(settings)
    try:
        reporter = IndexerReporter(app.indexes.embeddings, every=0)
        reporter.report("sentences", done=0, remaining=0, sentences_left=40, force=True)
        reporter.report("sentences", done=10, remaining=0, sentences_left=30)
    finally:
        app.close()


def test_during_the_sentence_pass_every_surface_says_an_indexer_runs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data, embedding_backend="fake", keyword_engine="fts5", database_url=None)
    app = build_app(settings)
    try:
        add_papers(app.core.store, [paper(i) for i in range(1, 9)])
        app.indexes.indexer.current().run()  # every paper has a vector and the index holds them
        add_papers(app.core.store, [paper(i) for i in range(9, 11)])  # two arrive during the sentence pass
        app.indexes.coverage.forget()
        _say_sentences(data, settings)
        note = app.indexes.coverage.note()
        assert note is not None
        assert "no indexer is running" not in note
        assert "the indexer is making the papers' sentences" in note
        assert "embeds the 2 new ones next (the sentences yield to them)" in note
        admin = " ".join(app.indexes.status.status().lines())
        assert "An indexer is making the papers' sentences" in admin
        assert "the 2 papers without a vector come next" in admin
        assert "Sentences: 0 papers done, 10 to do" in admin
    finally:
        app.close()
    with TestClient(create_app(lambda: build_app(settings))) as client:
        reply = client.get("/api/papers/search", params={"q": "graph neural networks"})
        assert reply.status_code == 200
        assert "the indexer is making the papers' sentences" in reply.headers["X-Search-Notes"]
    env = {**os.environ, "PAPERFEED_EMBEDDING_BACKEND": "fake", "PAPERFEED_KEYWORD_ENGINE": "fts5"}
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data)]
    status = subprocess.run(
        [*command, "jobs", "status"], env=env, capture_output=True, text=True, timeout=120
    )
    assert status.returncode == 0, status.stderr
    assert "An indexer is making the papers' sentences" in status.stdout, status.stdout
    found = subprocess.run(
        [*command, "search", "graph neural networks"], env=env, capture_output=True, text=True, timeout=120
    )
    assert found.returncode == 0, found.stderr
    assert "the indexer is making the papers' sentences" in found.stdout + found.stderr
    assert "no indexer is running" not in found.stdout + found.stderr


@pytest.mark.slow
def test_a_follower_never_says_it_stopped_while_it_works_on(tmp_path: Path) -> None:
    """The states the running indexer reports, watched from outside: embedding, the sentences, the topics
    and idle, never "stopped" until it is stopped (the old run reported "stopped" after each slice)."""
    data = tmp_path / "data"
    env = {**os.environ, "PAPERFEED_EMBEDDING_BACKEND": "fake", "PAPERFEED_KEYWORD_ENGINE": "fts5"}
    import_file(data, env, write_jsonl(tmp_path / "a.jsonl", [rec(f"2503.{i:05d}") for i in range(1, 8)]))
    settings = Settings(data_dir=data, embedding_backend="fake", keyword_engine="fts5", database_url=None)
    app = build_app(settings)
    seen: list[str] = []
    watching = threading.Event()

    def watch() -> None:
        while not watching.is_set():
            report = app.indexes.embeddings.indexer_report()
            if report is not None and (not seen or seen[-1] != report.state):
                seen.append(report.state)
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with index_follow(data, env, "--limit", "3", "--poll", "0.3") as follower:
            follower.expect("sentences:", timeout=900)  # the role model is trained first for this model
            follower.expect("checking for new ones every 0.3 s", timeout=300)
            deadline = time.monotonic() + 30
            while not seen or seen[-1] != "idle":
                assert time.monotonic() < deadline, seen
                time.sleep(0.05)
            watching.set()
            watcher.join()
            assert "stopped" not in seen, seen
            assert "embedding" in seen, seen
            assert "sentences" in seen, seen
            assert app.indexes.activity.activity() is not None  # readers: an indexer is running
        done = " ".join(app.indexes.status.status().lines())  # what /admin/jobs and jobs status say now
        assert "Sentences: every paper's abstract is split into sentences" in done, done
        report = app.indexes.embeddings.indexer_report()
        assert report is not None
        assert report.state == "stopped"
    finally:
        watching.set()
        watcher.join()
        app.close()


def test_an_idle_follower_and_one_gone_are_told_apart(tmp_path: Path) -> None:
    app = build_app(Settings(data_dir=tmp_path / "data", embedding_backend="fake", keyword_engine="fts5"))
    try:
        add_papers(app.core.store, [paper(1), paper(2)])
        now = datetime.now(UTC)
        gone = IndexerReport("vm:4194303:1", "sentences", 5, 0, 3.0, now - timedelta(seconds=5), 10)
        app.indexes.embeddings.report_indexer(gone)
        lines = " ".join(app.indexes.status.status().lines())
        assert "Nothing is embedding the 2 papers without a vector" in lines
    finally:
        app.close()
