"""The citation harvest (services/citations.py) on a real store against the recorded S2 and OpenAlex
answers on loopback: batches saved with their checkpoint, fresh papers skipped, refresh, offline, resume,
and the CLI's lines and exit codes."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from paperfeed.adapters.sources.http import PoliteClient
from paperfeed.adapters.sources.openalex import OpenAlexSource
from paperfeed.adapters.sources.semantic_scholar import SemanticScholarSource
from paperfeed.adapters.store import SqlPaperStore, open_store
from paperfeed.adapters.store.citation_candidates import SqlPublishedPapers
from paperfeed.adapters.store.citations import SqlCitationRecords
from paperfeed.bootstrap.sources import harvest_settings
from paperfeed.cli import cli_app as app
from paperfeed.domain.citation_harvest import due
from paperfeed.domain.paper_graph import CitationSort
from paperfeed.services.citations import CitationHarvest, UnknownPapers, checkpoint_name
from paperfeed.services.pipeline import DailyPipeline
from tests.support.defaults import DEFAULTS, comma_list
from tests.support.http_server import ReplayServer, Reply

from .harvest_support import BATCH, add_papers, serve_s2
from .scholarly_replay import S2_BASE, s2

pytestmark = pytest.mark.shared

NOW = datetime(2026, 11, 24, 6, 0, tzinfo=UTC)
IDS = ["2611.00001", "2611.00002", "2611.00003", "2611.00004"]
DAYS = {IDS[0]: "2026-11-01", IDS[1]: "2026-11-02", IDS[2]: "2026-10-01", IDS[3]: "2025-01-05"}


class Recorder:
    def __init__(self) -> None:
        self.updates: list[tuple[int, int | None, int, int, int]] = []

    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        self.updates.append((position, total, added, updated, rejected))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def client() -> PoliteClient:
    return PoliteClient(
        user_agent="paperfeed-test", timeout=10.0, retries=1, min_interval={}, backoff_base=0.001
    )


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqlPaperStore]:
    s = open_store(f"sqlite+pysqlite:///{tmp_path / 'paperfeed.db'}")
    add_papers(s, DAYS)
    try:
        yield s
    finally:
        s.close()


def harvest_for(store: SqlPaperStore, base_url: str, clock: Clock, **kw: Any) -> CitationHarvest:
    return CitationHarvest(
        SqlCitationRecords(store.engine),
        store,
        SqlPublishedPapers(store.engine),
        sources={
            "s2": lambda: SemanticScholarSource(client(), f"{base_url}{S2_BASE}", api_key=None),
            "openalex": lambda: OpenAlexSource(client(), base_url, mailto=None, api_key=None),
        },
        settings=replace(harvest_settings(DEFAULTS), **{"batch_size": 2, **kw}),
        now=clock,
    )


def test_batches_are_saved_and_a_rerun_skips_them(
    store: SqlPaperStore, server: ReplayServer, fixtures_dir: Path
) -> None:
    """On both backends: two batches of two, each saved with the checkpoint; the graph is readable."""
    add_papers(store, DAYS)
    papers = serve_s2(server, fixtures_dir, batch_size=2)
    clock = Clock(NOW)
    harvest = harvest_for(store, server.base_url, clock)
    progress = Recorder()

    report = harvest.run(harvest.plan("s2", IDS, refresh=False), progress)

    assert (report.planned, report.papers, report.unknown, report.error) == (4, 4, 1, None)
    assert report.unkeyed == 3 * (9 + 4)  # each known paper: 9 null references, 4 null citing papers
    assert report.edges_added > 0
    assert [u[:2] for u in progress.updates] == [(0, 4), (2, 4), (4, 4)]
    assert store.get_checkpoint(checkpoint_name("s2")) is None  # done: cleared
    records = SqlCitationRecords(store.engine)
    assert set(records.harvested(IDS, "s2")) == set(IDS)  # the unknown one too: not asked again daily
    page = records.references(IDS[1], sort=CitationSort.DATE, in_store_only=False, offset=0, limit=5)
    assert page.total == len({p["citedPaper"]["paperId"] for p in _refs(fixtures_dir)} - {None})
    assert len([r for r in server.requests if r.path == BATCH]) == 2
    assert papers[0] is None

    # a rerun within 30 days asks nothing; a refresh after 7 days asks all four again
    server.requests.clear()
    again = harvest.run(harvest.plan("s2", IDS, refresh=False), Recorder())
    assert (again.planned, again.skipped, server.requests) == (0, 4, [])
    clock.now = NOW + timedelta(days=8)
    assert len(harvest.plan("s2", IDS, refresh=True).due) == 4
    assert harvest.plan("s2", IDS, refresh=False).due == ()


def _refs(fixtures_dir: Path) -> list[Any]:
    import json

    out: list[Any] = []
    for name in ("references_full_page1_offset0_next100.json", "references_full_page2_offset100_last.json"):
        out.extend(json.loads((fixtures_dir / "s2_api" / name).read_text())["body"]["data"])
    return out


def test_offline_changes_nothing(sqlite_store: SqlPaperStore) -> None:
    harvest = harvest_for(sqlite_store, f"http://127.0.0.1:{closed_port()}", Clock(NOW))
    for name in ("s2", "openalex"):
        report = harvest.run(harvest.plan(name, IDS, refresh=False), Recorder())
        assert report.offline
        assert report.unreachable
        assert report.papers == 0
        assert "unreachable after 2 attempts (ConnectError" in (report.error or "")
        assert sqlite_store.get_checkpoint(checkpoint_name(name)) is None
        assert SqlCitationRecords(sqlite_store.engine).harvested(IDS, name) == {}


def test_a_failure_mid_way_keeps_the_saved_batch_and_a_rerun_resumes(
    sqlite_store: SqlPaperStore, server: ReplayServer, fixtures_dir: Path
) -> None:
    papers = serve_s2(server, fixtures_dir, batch_size=2)
    broken = f"{S2_BASE}/paper/{papers[2]['paperId']}/references"
    server.add(broken, s2(fixtures_dir, "citations_504_timeout.json"))  # the second batch's first paper: 504s
    harvest = harvest_for(sqlite_store, server.base_url, Clock(NOW))

    first = harvest.run(harvest.plan("s2", IDS, refresh=False), Recorder())
    assert first.unreachable
    assert not first.offline
    assert first.papers == 2
    assert "HTTP 504" in (first.error or "")
    assert "/references" in (first.error or "")
    assert sqlite_store.get_checkpoint(checkpoint_name("s2")) == "2/4"
    records = SqlCitationRecords(sqlite_store.engine)
    assert set(records.harvested(IDS, "s2")) == set(IDS[:2])  # the batch in flight: not stored half-way
    assert records.counts([IDS[2]], as_of=date(2026, 11, 24)) == {}

    serve_s2(server, fixtures_dir, batch_size=2)  # healthy again (later routes win)
    server.add(
        BATCH,
        Reply(
            200, f"[{_json(papers[2])}, {_json(papers[3])}]".encode(), {"Content-Type": "application/json"}
        ),
    )
    server.requests.clear()
    second = harvest.run(harvest.plan("s2", IDS, refresh=False), Recorder())
    assert second.resumed
    assert (second.planned, second.skipped, second.papers, second.error) == (2, 2, 2, None)
    assert sqlite_store.get_checkpoint(checkpoint_name("s2")) is None
    assert set(records.harvested(IDS, "s2")) == set(IDS)


def _json(value: object) -> str:
    import json

    return json.dumps(value)


def test_candidates_by_ids_date_and_refresh_window(sqlite_store: SqlPaperStore) -> None:
    harvest = harvest_for(sqlite_store, "http://127.0.0.1:9", Clock(NOW))
    assert harvest.candidates(["arXiv:2611.00002v3", "2611.00001", "2611.00002"]) == [
        "2611.00002",
        "2611.00001",
    ]
    with pytest.raises(UnknownPapers, match=r"not papers of this instance: 2611\.09999"):
        harvest.candidates(["2611.00001", "2611.09999"])
    with pytest.raises(UnknownPapers, match=r"not arXiv ids: 'not-an-id'"):
        harvest.candidates(["not-an-id"])
    assert harvest.candidates(since=date(2026, 10, 1)) == [IDS[2], IDS[0], IDS[1]]  # oldest first
    assert harvest.candidates(refresh=True) == [IDS[2], IDS[0], IDS[1]]  # published in the last 90 days


def test_due_serves_new_papers_before_stale_ones() -> None:
    seen = {"b": NOW - timedelta(days=10), "c": NOW - timedelta(days=20), "d": NOW - timedelta(days=1)}
    assert due(["a", "b", "c", "d", "e"], seen, now=NOW, max_age=timedelta(days=7)) == ["a", "e", "c", "b"]


def test_the_daily_step_reports_offline_and_moves_on(sqlite_store: SqlPaperStore) -> None:
    harvest = harvest_for(sqlite_store, f"http://127.0.0.1:{closed_port()}", Clock(NOW))

    def unused() -> object:
        raise AssertionError("not part of this step")

    pipeline = DailyPipeline(
        unused,  # type: ignore[arg-type]
        unused,  # type: ignore[arg-type]
        unused,  # type: ignore[arg-type]
        unused,  # type: ignore[arg-type]
        unused,  # type: ignore[arg-type]
        daily_steps=comma_list(DEFAULTS.jobs_daily_steps),
        citation_sources=comma_list(DEFAULTS.citation_sources),
        citations=harvest,
    )
    counts = pipeline.step("harvest-citations").run()
    assert counts["s2_papers"] == 0
    assert counts["s2_due"] == 3  # the refresh window's papers
    assert "ConnectError" in str(counts["s2_offline"])
    assert "ConnectError" in str(counts["openalex_offline"])


def test_the_daily_step_fails_on_an_unusable_answer(
    sqlite_store: SqlPaperStore, server: ReplayServer, fixtures_dir: Path
) -> None:
    server.add(BATCH, s2(fixtures_dir, "paper_bad_fields_400.json"))
    server.add("/works", Reply(200, b'{"meta": {}, "results": []}', {"Content-Type": "application/json"}))
    harvest = harvest_for(sqlite_store, server.base_url, Clock(NOW))

    def unused() -> object:
        raise AssertionError("not part of this step")

    pipeline = DailyPipeline(
        unused,  # type: ignore[arg-type]
        unused,  # type: ignore[arg-type]
        unused,  # type: ignore[arg-type]
        unused,  # type: ignore[arg-type]
        unused,  # type: ignore[arg-type]
        daily_steps=comma_list(DEFAULTS.jobs_daily_steps),
        citation_sources=comma_list(DEFAULTS.citation_sources),
        citations=harvest,
    )
    with pytest.raises(RuntimeError, match=r"s2: Semantic Scholar answered HTTP 400"):
        pipeline.step("harvest-citations").run()
    assert SqlCitationRecords(sqlite_store.engine).harvested(IDS, "openalex").keys() == {
        IDS[0],
        IDS[1],
        IDS[2],
    }


# -- the CLI ------------------------------------------------------------------------------------------


def _env(tmp_path: Path, base_url: str) -> dict[str, str]:
    return {
        "PAPERFEED_DATA_DIR": str(tmp_path / "data"),
        "PAPERFEED_S2_API_URL": f"{base_url}{S2_BASE}",
        "PAPERFEED_OPENALEX_API_URL": base_url,
        "PAPERFEED_S2_DELAY": "0",
        "PAPERFEED_OPENALEX_DELAY": "0",
        "PAPERFEED_HTTP_RETRIES": "1",
        "PAPERFEED_CITATIONS_BATCH_SIZE": "2",
    }


def _cli_store(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    s = open_store(f"sqlite+pysqlite:///{tmp_path / 'data' / 'paperfeed.db'}")
    add_papers(s, DAYS)
    s.close()


def test_cli_harvests_and_prints_one_line_per_source(
    tmp_path: Path, server: ReplayServer, fixtures_dir: Path
) -> None:
    _cli_store(tmp_path)
    serve_s2(server, fixtures_dir, batch_size=2)
    result = CliRunner().invoke(
        app, ["harvest", "citations", *IDS, "--source", "s2"], env=_env(tmp_path, server.base_url)
    )
    assert result.exit_code == 0, result.output
    assert "Semantic Scholar: 4 papers to ask, 0 harvested recently (skipped)" in result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("Semantic Scholar:"))
    assert "4 papers asked (1 unknown to it)" in line
    assert "39 list entries without a usable id (not stored)" in line
    again = CliRunner().invoke(
        app, ["harvest", "citations", *IDS, "--source", "s2"], env=_env(tmp_path, server.base_url)
    )
    assert again.exit_code == 0
    assert "0 papers to ask, 4 harvested recently (skipped)" in again.stderr


def test_cli_offline_says_so_in_one_line_and_changes_nothing(tmp_path: Path) -> None:
    _cli_store(tmp_path)
    result = CliRunner().invoke(
        app,
        ["harvest", "citations", "--since", "2026-01-01"],
        env=_env(tmp_path, f"http://127.0.0.1:{closed_port()}"),
    )
    assert result.exit_code == 3
    assert "Traceback" not in result.output
    errors = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 2  # one per source, each one line
    assert errors[0].startswith("error: cannot reach Semantic Scholar: 127.0.0.1:")
    assert errors[0].endswith("; nothing was changed")
    assert errors[1].startswith("error: cannot reach OpenAlex: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["2611.09999"], "error: not papers of this instance: 2611.09999; nothing was harvested"),
        (["2611.00001", "--since", "2026-01-01"], "error: give either paper ids or --since, not both"),
        (["--since", "yesterday"], "error: --since: not a date (expected YYYY-MM-DD): 'yesterday'"),
        ([], "error: say which papers: arXiv ids, --since YYYY-MM-DD, or --refresh"),
        (
            ["2611.00001", "--source", "crossref"],
            "error: --source: expected s2, openalex or all, got 'crossref'",
        ),
    ],
)
def test_cli_bad_usage_is_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    _cli_store(tmp_path)
    result = CliRunner().invoke(
        app, ["harvest", "citations", *args], env=_env(tmp_path, "http://127.0.0.1:9")
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == message


def test_bootstrap_spaces_requests_to_each_scholarly_api(tmp_path: Path) -> None:
    """1 request/s to S2 by default (with or without a key), OpenAlex 10/s; the key and mailto travel."""
    from paperfeed.bootstrap import build_app
    from paperfeed.settings import Settings

    app = build_app(Settings(data_dir=tmp_path, contact_email="ops@example.org", s2_api_key="k"))  # type: ignore[arg-type]
    try:
        assert app.core.http.min_interval["api.semanticscholar.org"] == 1.0
        assert app.core.http.min_interval["api.openalex.org"] == 0.1
        s2_source = app.sources.citation_source("s2")
        oa_source = app.sources.citation_source("openalex")
        assert isinstance(s2_source, SemanticScholarSource)
        assert isinstance(oa_source, OpenAlexSource)
        assert s2_source.api_key == "k"
        assert oa_source.mailto == "ops@example.org"
        assert s2_source.client is oa_source.client is app.core.http  # one polite client for every source
    finally:
        app.close()
