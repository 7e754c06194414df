"""The arXiv API client, source and ``paperfeed fetch`` against recorded responses on a loopback server."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson
import pytest
from typer.testing import CliRunner

from paperfeed.adapters.sources.arxiv_api import ArxivApiClient, ArxivApiSource
from paperfeed.adapters.sources.arxiv_atom import parse_feed
from paperfeed.adapters.sources.http import PoliteClient
from paperfeed.adapters.store import SqlPaperStore, open_store
from paperfeed.cli import cli_app as app
from paperfeed.domain.errors import ArxivApiError, MalformedFeed, SourceUnavailable
from paperfeed.domain.ingest import Batch
from paperfeed.services.ingest import IngestService
from tests.support.defaults import polite_client
from tests.support.http_server import ReplayServer, Reply, replay_server

RECORDED = "new_format_2026_lukasschwab_arxiv.py_recorded_json"
PATH = "/api/query"
# Every recorded {url, status_code, body} response, with the number of <entry> elements in its body.
RECORDED_FILES = {
    "id_0000.0000_s0_m100_8b51d9633a68.json": 0,
    "id_0808.05394_1707.08567_s0_m100_42e5aa0ec3af.json": 1,
    "id_0808.05394_s0_m100_7b0c7d0a7cdd.json": 0,
    "id_1605.08386_s0_m100_199195aa31ad.json": 1,
    "id_1707.08567_s0_m100_6a1afebfc6a3.json": 1,
    "id_2104.12255v1_s0_m100_6ae69987ffe1.json": 1,
    "id_abc_s0_m100_b79c8dcf6bc3.json": 1,  # the HTTP 400 error feed
    "id_astro-ph_0601001_s0_m100_3150dca9dc76.json": 1,
    "id_quant-ph_0201082v1_s0_m100_86989fe779ef.json": 1,
    "q_testing_s0_m100_cfe7536492ca.json": 100,
    "q_testing_s0_m10_bc5a6c384fe9.json": 10,
    "q_testing_s0_m15_80c242b59d59.json": 15,
    "q_testing_s10_m10_34e56e15aaac.json": 10,
    "q_testing_s20_m10_348a237fecab.json": 10,
    "q_testing_s30_m10_f2e39f0143dc.json": 10,
    "q_testing_s40_m10_96dd32eb854c.json": 10,
    "q_testing_s50_m10_7f488ab8598c.json": 10,
    "q_testing_s5_m10_c0e94a259d4a.json": 10,
    "q_testing_s5_m15_bbcf6b23085b.json": 15,
    "q_testing_s9_m15_0b78d4b4d476.json": 15,
}
_ENTRY = re.compile(rb"<entry[\s>]")


class Recorded:
    """One recorded arXiv response: the query it answered, its status and body."""

    def __init__(self, path: Path) -> None:
        raw: dict[str, Any] = orjson.loads(path.read_bytes())
        self.params = dict(parse_qsl(urlsplit(raw["url"]).query, keep_blank_values=True))
        self.status: int = raw["status_code"]
        self.body: bytes = raw["body"].encode("utf-8")

    @property
    def entries(self) -> int:
        return len(_ENTRY.findall(self.body))

    def serve(self, server: ReplayServer, **override: str) -> None:
        """Answer requests carrying this response's own id_list or search_query/start/max_results."""
        keys = ("id_list",) if self.params["id_list"] else ("search_query", "start", "max_results")
        params = {k: self.params[k] for k in keys} | override
        server.add(
            PATH, Reply(self.status, self.body, {"Content-Type": "application/atom+xml"}), params=params
        )


@pytest.fixture(scope="module")
def recorded_dir(shared_dir: Path) -> Path:
    return shared_dir / "fixtures" / "arxiv_atom_api" / RECORDED


@pytest.fixture(scope="module")
def recorded(recorded_dir: Path) -> dict[str, Recorded]:
    return {name: Recorded(recorded_dir / name) for name in RECORDED_FILES}


@pytest.fixture(scope="module")
def recorded_server(recorded: dict[str, Recorded]) -> Iterator[ReplayServer]:
    """One loopback server answering every recorded query (their parameters never overlap).

    Module-scoped because stopping a server takes half a second; each test clears ``requests``.
    """
    with replay_server() as srv:
        for rec in recorded.values():
            rec.serve(srv)
        yield srv


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(server: ReplayServer, sleeps: list[float]) -> Iterator[ArxivApiClient]:
    http = PoliteClient(
        user_agent="paperfeed-tests", timeout=5, retries=2, min_interval={}, sleep=sleeps.append
    )
    yield ArxivApiClient(http, server.base_url + PATH)
    http.close()


def _papers(batches: Iterator[Batch]) -> tuple[list[str], list[str], list[Batch]]:
    done = list(batches)
    ids = [p.id for b in done for p in b.papers]
    rejects = [str(r) for b in done for r in b.rejects]
    return ids, rejects, done


def test_every_recorded_fixture_is_listed(recorded_dir: Path) -> None:
    assert {p.name for p in recorded_dir.iterdir()} == set(RECORDED_FILES)


@pytest.mark.parametrize(("name", "expected"), sorted(RECORDED_FILES.items()))
def test_recorded_response_over_loopback(
    recorded: dict[str, Recorded], recorded_server: ReplayServer, name: str, expected: int
) -> None:
    rec = recorded[name]
    assert rec.entries == expected
    server = recorded_server
    server.requests.clear()
    http = PoliteClient(
        user_agent="paperfeed-tests", timeout=5, retries=2, min_interval={}, sleep=lambda _: None
    )
    client = ArxivApiClient(http, server.base_url + PATH)
    try:
        _check_recorded(rec, server, client, expected)
    finally:
        http.close()


def _check_recorded(rec: Recorded, server: ReplayServer, client: ArxivApiClient, expected: int) -> None:
    if rec.params["id_list"]:
        requested = rec.params["id_list"].split(",")
        if rec.status == 400:
            with pytest.raises(ArxivApiError, match=r"^incorrect id format for abc$"):
                list(client.by_ids(requested))
            assert len(server.requests) == 1  # an error feed is an answer, not retried
            return
        ids, rejects, batches = _papers(client.by_ids(requested))
        assert len(ids) == expected
        assert len(rejects) == len(requested) - expected  # unknown ids, reported once each
        assert server.requests[0].params["id_list"] == rec.params["id_list"]
    else:
        start, size = int(rec.params["start"]), int(rec.params["max_results"])
        ids, rejects, batches = _papers(client.search("testing", start, size, page_size=size))
        assert (len(ids), rejects) == (expected, [])
        assert batches[-1].total == size
    assert len(server.requests) == 1
    assert ids == [p.id for p in parse_feed(rec.body, seen_at=client.now()).papers]


def test_unknown_ids_are_rejects_not_errors(
    recorded: dict[str, Recorded], server: ReplayServer, client: ArxivApiClient
) -> None:
    recorded["id_0808.05394_1707.08567_s0_m100_42e5aa0ec3af.json"].serve(server)
    recorded["id_0000.0000_s0_m100_8b51d9633a68.json"].serve(server)
    ids, rejects, _ = _papers(client.by_ids(["0808.05394", "1707.08567"]))
    assert ids == ["1707.08567"]
    assert rejects == ["0808.05394: id: not found on arXiv"]
    ids, rejects, batches = _papers(client.by_ids(["0000.0000"]))
    assert (ids, rejects) == ([], ["0000.0000: id: not found on arXiv"])
    assert (batches[0].position, batches[0].total) == (1, 1)


def test_versioned_and_old_style_ids(
    recorded: dict[str, Recorded], server: ReplayServer, client: ArxivApiClient
) -> None:
    recorded["id_quant-ph_0201082v1_s0_m100_86989fe779ef.json"].serve(server)
    recorded["id_2104.12255v1_s0_m100_6ae69987ffe1.json"].serve(server)
    _, _, batches = _papers(client.by_ids(["quant-ph/0201082v1"]))
    [paper] = batches[0].papers
    assert (paper.id, paper.version, paper.authors) == ("quant-ph/0201082", 1, ("Stephen Blaha",))
    ids, rejects, _ = _papers(client.by_ids(["2104.12255v1", "2104.12255v1"]))  # duplicates asked once
    assert (ids, rejects) == (["2104.12255"], [])
    assert server.requests[-1].params["id_list"] == "2104.12255v1"


def test_id_lists_are_chunked_by_100(
    recorded: dict[str, Recorded], server: ReplayServer, client: ArxivApiClient
) -> None:
    server.add(PATH, Reply(200, recorded["id_0000.0000_s0_m100_8b51d9633a68.json"].body))
    wanted = [f"2401.{n:05d}" for n in range(1, 251)]
    ids, rejects, batches = _papers(client.by_ids(wanted))
    sizes = [len(r.params["id_list"].split(",")) for r in server.requests]
    assert sizes == [100, 100, 50]
    assert [r.params["max_results"] for r in server.requests] == ["100", "100", "50"]
    assert [r.params["id_list"].split(",")[0] for r in server.requests] == wanted[::100]
    assert (ids, len(rejects)) == ([], 250)
    assert [(b.position, b.total) for b in batches] == [(100, 250), (200, 250), (250, 250)]


def test_search_pages_until_the_limit(
    recorded: dict[str, Recorded], server: ReplayServer, client: ArxivApiClient
) -> None:
    for rec in recorded.values():
        if not rec.params["id_list"]:
            rec.serve(server)
    ids, rejects, batches = _papers(client.search("testing", 0, 60, page_size=10))
    assert [r.params["start"] for r in server.requests] == ["0", "10", "20", "30", "40", "50"]
    assert {r.params["max_results"] for r in server.requests} == {"10"}
    assert {r.params["sortBy"] for r in server.requests} == {"relevance"}
    whole = parse_feed(recorded["q_testing_s0_m100_cfe7536492ca.json"].body, seen_at=client.now())
    assert ids == [p.id for p in whole.papers[:60]]
    assert rejects == []
    assert [b.position for b in batches] == [10, 20, 30, 40, 50, 60]
    assert {b.total for b in batches} == {60}
    # Offsets that do not fall on a page boundary.
    server.requests.clear()
    ids, _, _ = _papers(client.search("testing", 5, 15, page_size=15))
    assert ids == [p.id for p in whole.papers[5:20]]
    ids, _, _ = _papers(client.search("testing", 9, 15, page_size=15))
    assert ids == [p.id for p in whole.papers[9:24]]


def test_search_never_exceeds_the_limit(
    recorded: dict[str, Recorded], server: ReplayServer, client: ArxivApiClient
) -> None:
    for name in ("q_testing_s0_m10_bc5a6c384fe9.json", "q_testing_s10_m10_34e56e15aaac.json"):
        recorded[name].serve(server)
    # Asked for 5, this server sends its recorded 10: only 5 are kept.
    recorded["q_testing_s20_m10_348a237fecab.json"].serve(server, max_results="5")
    ids, _, batches = _papers(client.search("testing", 0, 25, page_size=10))
    assert [r.params["max_results"] for r in server.requests] == ["10", "10", "5"]
    assert len(ids) == 25
    assert batches[-1].position == 25


def test_search_stops_at_total_results(
    recorded: dict[str, Recorded], server: ReplayServer, client: ArxivApiClient
) -> None:
    # A feed whose totalResults is 1: no second page is asked for even without a limit.
    server.add(PATH, Reply(200, recorded["id_1605.08386_s0_m100_199195aa31ad.json"].body))
    ids, _, batches = _papers(client.search("ti:heat-bath"))
    assert ids == ["1605.08386"]
    assert len(server.requests) == 1
    assert server.requests[0].params["search_query"] == "ti:heat-bath"
    assert (batches[0].position, batches[0].total) == (1, 1)


def test_search_with_no_results(
    recorded: dict[str, Recorded], server: ReplayServer, client: ArxivApiClient
) -> None:
    server.add(PATH, Reply(200, recorded["id_0000.0000_s0_m100_8b51d9633a68.json"].body))
    assert _papers(client.search("ti:nothing", max_results=500))[:2] == ([], [])
    assert len(server.requests) == 1


def test_503_with_retry_after_is_retried(
    recorded: dict[str, Recorded], server: ReplayServer, client: ArxivApiClient, sleeps: list[float]
) -> None:
    body = recorded["id_1707.08567_s0_m100_6a1afebfc6a3.json"].body
    server.add(PATH, Reply(503, b"busy", {"Retry-After": "0"}), Reply(200, body))
    ids, rejects, _ = _papers(client.by_ids(["1707.08567"]))
    assert (ids, rejects) == (["1707.08567"], [])
    assert len(server.requests) == 2
    assert sleeps == [0.0]  # waited what Retry-After said, not a random backoff


def test_requests_to_arxiv_are_spaced(recorded: dict[str, Recorded], server: ReplayServer) -> None:
    """The host's minimum interval applies between pages (sleeps recorded, not slept)."""
    sleeps: list[float] = []
    host = urlsplit(server.base_url).netloc
    http = PoliteClient(user_agent="t", timeout=5, retries=0, min_interval={host: 3.0}, sleep=sleeps.append)
    for name in ("q_testing_s0_m10_bc5a6c384fe9.json", "q_testing_s10_m10_34e56e15aaac.json"):
        recorded[name].serve(server)
    try:
        ids, _, _ = _papers(
            ArxivApiClient(http, server.base_url + PATH).search("testing", 0, 20, page_size=10)
        )
    finally:
        http.close()
    assert len(ids) == 20
    assert len(sleeps) == 1
    assert 2.5 < sleeps[0] <= 3.0


def test_non_feed_answers_are_clear_errors(server: ReplayServer, client: ArxivApiClient) -> None:
    server.add(PATH, Reply(200, b"<html><body>maintenance</body></html>"), params={"id_list": "2401.00001"})
    server.add(PATH, Reply(400, b"Bad Request"), params={"id_list": "2401.00002"})
    server.add(PATH, Reply(404, b"Not Found"), params={"id_list": "2401.00003"})
    with pytest.raises(MalformedFeed, match=r"arXiv API response for http://127\.0\.0\.1.*not an Atom feed"):
        list(client.by_ids(["2401.00001"]))
    with pytest.raises(ArxivApiError, match="arXiv answered HTTP 400 for"):
        list(client.by_ids(["2401.00002"]))
    with pytest.raises(SourceUnavailable, match="HTTP 404"):
        list(client.by_ids(["2401.00003"]))


def test_bad_arguments() -> None:
    client = ArxivApiClient(polite_client("t"), "http://127.0.0.1:9/api/query")  # never asked
    with pytest.raises(ValueError, match="empty search query"):
        list(client.search("  "))
    with pytest.raises(ValueError, match="sort_by"):
        list(client.search("x", sort_by="random"))
    with pytest.raises(ValueError, match="chunk_size"):
        list(client.by_ids(["2401.00001"], chunk_size=101))
    with pytest.raises(ValueError, match="either ids or a query"):
        ArxivApiSource(client)


def test_source_ingests_into_the_store(
    recorded: dict[str, Recorded], server: ReplayServer, client: ArxivApiClient, store: SqlPaperStore
) -> None:
    recorded["id_astro-ph_0601001_s0_m100_3150dca9dc76.json"].serve(server)
    for name in ("q_testing_s0_m10_bc5a6c384fe9.json", "q_testing_s10_m10_34e56e15aaac.json"):
        recorded[name].serve(server)
    service = IngestService(store)
    by_id = ArxivApiSource(client, ids=("astro-ph/0601001",))
    assert (by_id.name, by_id.checkpoint_name) == ("arxiv-api", None)
    summary = service.run(by_id)
    assert (summary.added, summary.rejected) == (1, 0)
    paper = store.get_paper("astro-ph/0601001")
    assert paper is not None
    assert paper.authors[0] == "Andrew Gould"
    assert paper.journal_ref == "ActaAstron.56:1-50,2006"
    assert "arxiv-api" in paper.sources
    search = ArxivApiSource(client, query="testing", max_results=20, page_size=10)
    assert service.run(search).added == 20
    again = service.run(search)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 20)
    assert store.stats().papers == 21


# --- paperfeed fetch, end to end ----------------------------------------------------------------------


def _env(tmp_path: Path, api_url: str, **extra: str) -> dict[str, str | None]:
    return {
        "PAPERFEED_DATA_DIR": str(tmp_path / "data"),
        "PAPERFEED_DATABASE_URL": None,
        "PAPERFEED_ARXIV_API_URL": api_url,
        "PAPERFEED_ARXIV_DELAY": "0",
        "PAPERFEED_HTTP_RETRIES": "0",
        "PAPERFEED_HTTP_TIMEOUT": "2",
        **extra,
    }


def _stored(tmp_path: Path) -> SqlPaperStore:
    return open_store(f"sqlite+pysqlite:///{tmp_path / 'data' / 'paperfeed.db'}")


def _flat(text: str) -> str:
    return " ".join(text.split())  # rich wraps long lines


def test_fetch_command_stores_papers(
    recorded: dict[str, Recorded], server: ReplayServer, tmp_path: Path
) -> None:
    recorded["id_1605.08386_s0_m100_199195aa31ad.json"].serve(server)
    recorded["id_astro-ph_0601001_s0_m100_3150dca9dc76.json"].serve(server)
    env = _env(tmp_path, server.base_url + PATH)
    runner = CliRunner()
    result = runner.invoke(app, ["fetch", "https://arxiv.org/abs/1605.08386"], env=env)
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["fetch", "arXiv:astro-ph/0601001"], env=env)
    assert result.exit_code == 0, result.output
    assert [r.params["id_list"] for r in server.requests] == ["1605.08386", "astro-ph/0601001"]
    store = _stored(tmp_path)
    try:
        heat = store.get_paper("1605.08386")
        assert heat is not None
        assert (heat.title, heat.version) == ("Heat-bath random walks with Markov bases", 1)
        assert heat.categories == ("math.CO", "math.ST")
        assert store.get_paper("astro-ph/0601001") is not None
    finally:
        store.close()


def test_fetch_command_unknown_id(
    recorded: dict[str, Recorded], server: ReplayServer, tmp_path: Path
) -> None:
    # arXiv answers a list with an unknown id with only the known papers, as in this recording.
    body = recorded["id_0808.05394_1707.08567_s0_m100_42e5aa0ec3af.json"].body
    server.add(PATH, Reply(200, recorded["id_0000.0000_s0_m100_8b51d9633a68.json"].body))
    server.add(PATH, Reply(200, body), params={"id_list": "1707.08567,2501.99999"})  # checked first
    env = _env(tmp_path, server.base_url + PATH)
    runner = CliRunner()
    result = runner.invoke(app, ["fetch", "1707.08567", "2501.99999"], env=env)
    assert result.exit_code == 1
    assert "2501.99999: id: not found on arXiv" in _flat(result.stderr)
    assert "Traceback" not in result.output
    store = _stored(tmp_path)
    try:
        assert store.get_paper("1707.08567") is not None
        assert store.get_paper("2501.99999") is None
    finally:
        store.close()
    result = runner.invoke(app, ["fetch", "--keep-going", "2501.99998"], env=env)
    assert result.exit_code == 0
    assert "2501.99998: id: not found on arXiv" in _flat(result.stderr)


def test_fetch_command_rejects_malformed_ids_before_asking(server: ReplayServer, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["fetch", "2401.00001", "abc"], env=_env(tmp_path, server.base_url + PATH)
    )
    assert result.exit_code == 2
    assert "error: not an arXiv id: 'abc'" in _flat(result.stderr)
    assert server.requests == []


def test_fetch_command_reports_arxivs_error(
    recorded: dict[str, Recorded], server: ReplayServer, tmp_path: Path
) -> None:
    # The recorded error feed, served for an id our parser accepts, to reach arXiv's own refusal.
    rec = recorded["id_abc_s0_m100_b79c8dcf6bc3.json"]
    server.add(PATH, Reply(rec.status, rec.body))
    result = CliRunner().invoke(app, ["fetch", "2401.00001"], env=_env(tmp_path, server.base_url + PATH))
    assert result.exit_code == 2
    assert "error: arXiv rejected the request: incorrect id format for abc" in _flat(result.stderr)
    assert "Traceback" not in result.output


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_fetch_command_unreachable_server(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}{PATH}"
    started = time.monotonic()
    result = CliRunner().invoke(app, ["fetch", "2401.00001"], env=_env(tmp_path, url))
    assert time.monotonic() - started < 10
    assert result.exit_code == 3
    err = _flat(result.stderr)
    assert err.startswith("error: arXiv API unreachable:")
    assert "ConnectError" in err
    assert "Traceback" not in result.output


def test_fetch_command_server_too_slow(server: ReplayServer, tmp_path: Path) -> None:
    # the reply would take 10 s: the 0.3 s timeout (and its retries) must end the command well before it;
    # the margin is wide so a loaded machine's start-up (imports, the app) cannot look like a wait
    server.add(PATH, Reply(200, b"", delay=10.0))
    started = time.monotonic()
    result = CliRunner().invoke(
        app, ["fetch", "2401.00001"], env=_env(tmp_path, server.base_url + PATH, PAPERFEED_HTTP_TIMEOUT="0.3")
    )
    assert time.monotonic() - started < 8.0
    assert result.exit_code == 3
    assert "error: arXiv API unreachable:" in _flat(result.stderr)
    assert "ReadTimeout" in _flat(result.stderr)
