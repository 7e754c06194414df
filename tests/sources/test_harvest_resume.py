"""Harvesting arXiv OAI-PMH over the real loopback server: paging, checkpoints, resume, kill -9, CLI.

The three real ``oai_dc`` ListRecords pages chain by resumption tokens ``6511260|1001`` and
``6511260|2001`` (1000 + 1000 + 265 records); the server answers each by its ``resumptionToken``.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from paperfeed.adapters.sources.arxiv_oai import (
    ArxivOaiSource,
    checkpoint_key,
    highwater_key,
    plan_harvest,
)
from paperfeed.adapters.sources.http import PoliteClient
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.cli import cli_app as app
from paperfeed.domain.errors import OaiError
from paperfeed.services.ingest import IngestService
from tests.support.http_server import ReplayServer, Reply

pytestmark = pytest.mark.shared

DC = "oai_dc_2023_SciXHarvester"
TOKENS = ("6511260|1001", "6511260|2001")
FIRST = {"verb": "ListRecords", "metadataPrefix": "oai_dc"}


@pytest.fixture
def pages(fixtures_dir: Path) -> list[bytes]:
    return [(fixtures_dir / "oai_pmh" / DC / f"ListRecords_data_{n}.xml").read_bytes() for n in range(3)]


@pytest.fixture
def expected_ids(pages: list[bytes]) -> set[str]:
    """The records' ids, read from the files with a regex rather than with the parser under test."""
    ids = [i.decode() for page in pages for i in re.findall(rb"<identifier>oai:arXiv\.org:([^<]+)<", page)]
    assert len(ids) == len(set(ids)) == 2265
    return set(ids)


def serve_chain(server: ReplayServer, pages: list[bytes], *, slow_second: float = 0.0) -> str:
    """Serve the three pages by resumption token; the first answer for page two can be slow."""
    server.add("/oai", Reply(200, pages[0]), params=FIRST)
    second = [Reply(200, pages[1], delay=slow_second)] if slow_second else []
    server.add("/oai", *second, Reply(200, pages[1]), params={"resumptionToken": TOKENS[0]})
    server.add("/oai", Reply(200, pages[2]), params={"resumptionToken": TOKENS[1]})
    return f"{server.base_url}/oai"


def error_page(code: str, text: str = "") -> bytes:
    return (
        '<?xml version="1.0"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
        '<responseDate>2024-01-01T00:00:00Z</responseDate><request verb="ListRecords">x</request>'
        f'<error code="{code}">{text}</error></OAI-PMH>'
    ).encode()


def client() -> PoliteClient:
    return PoliteClient(
        user_agent="paperfeed-test", timeout=10.0, retries=1, min_interval={}, backoff_base=0.01
    )


class Recorder:
    def __init__(self, crash_after: int | None = None) -> None:
        self.updates: list[tuple[int, int | None]] = []
        self.crash_after = crash_after

    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        self.updates.append((position, total))
        if self.crash_after is not None and len(self.updates) >= self.crash_after:
            raise RuntimeError("simulated crash after a committed page")


def store_ids(store: SqlPaperStore) -> list[str]:
    return [p.id for page in store.iter_papers() for p in page]


def saved(store: SqlPaperStore, key: str) -> dict[str, object]:
    raw = store.get_checkpoint(key)
    assert raw is not None, key
    value = orjson.loads(raw)
    assert isinstance(value, dict)
    return value


def test_three_chained_pages_bring_all_2265_records(
    store: SqlPaperStore, server: ReplayServer, pages: list[bytes], expected_ids: set[str]
) -> None:
    endpoint = serve_chain(server, pages)
    source = ArxivOaiSource(client(), endpoint, metadata_prefix="oai_dc")
    progress = Recorder()
    summary = IngestService(store).run(source, progress)
    assert (summary.added, summary.updated, summary.rejected) == (2265, 0, 0)
    assert (source.report.pages, source.report.records, source.report.deleted) == (3, 2265, 0)
    assert [r.params for r in server.requests] == [
        FIRST,
        {"verb": "ListRecords", "resumptionToken": TOKENS[0]},
        {"verb": "ListRecords", "resumptionToken": TOKENS[1]},
    ]
    assert progress.updates == [(1000, 2265), (2000, 2265), (2265, 2265), (2265, 2265)]
    ids = store_ids(store)
    assert len(ids) == 2265
    assert set(ids) == expected_ids
    key = checkpoint_key(endpoint, "oai_dc", None, None, None)
    assert key == f"oai:{endpoint}:oai_dc:::"
    state = saved(store, key)
    assert state["done"] is True
    assert state["resumptionToken"] is None
    assert (state["cursor"], state["completeListSize"], state["position"]) == (2000, 2265, 2265)
    assert state["datestamp"] == "2023-03-07"
    assert saved(store, highwater_key(endpoint, "oai_dc", None))["datestamp"] == "2023-03-07"
    # A finished harvest asked for again runs again from its start, and changes nothing.
    again = IngestService(store).run(ArxivOaiSource(client(), endpoint, metadata_prefix="oai_dc"))
    assert (again.added, again.updated, again.unchanged) == (0, 0, 2265)
    assert server.requests[3].params == FIRST


def test_a_crash_after_a_committed_page_resumes_at_the_saved_token(
    store: SqlPaperStore, server: ReplayServer, pages: list[bytes], expected_ids: set[str]
) -> None:
    endpoint = serve_chain(server, pages)
    with pytest.raises(RuntimeError, match="simulated crash"):
        IngestService(store).run(ArxivOaiSource(client(), endpoint, metadata_prefix="oai_dc"), Recorder(1))
    state = saved(store, checkpoint_key(endpoint, "oai_dc", None, None, None))
    assert state["resumptionToken"] == TOKENS[0]
    assert (state["cursor"], state["completeListSize"], state["position"], state["done"]) == (
        0,
        2265,
        1000,
        False,
    )
    assert len(store_ids(store)) == 1000  # the page and its checkpoint committed together
    before = len(server.requests)
    source = ArxivOaiSource(client(), endpoint, metadata_prefix="oai_dc")
    progress = Recorder()
    summary = IngestService(store).run(source, progress)
    assert [r.params["resumptionToken"] for r in server.requests[before:]] == list(TOKENS)
    assert source.report.resumed_from == TOKENS[0]
    assert summary.added == 1265
    assert progress.updates[0] == (2000, 2265)  # progress carries on from the saved cursor
    assert set(store_ids(store)) == expected_ids


def test_restart_ignores_saved_progress(
    store: SqlPaperStore, server: ReplayServer, pages: list[bytes]
) -> None:
    endpoint = serve_chain(server, pages)
    with pytest.raises(RuntimeError):
        IngestService(store).run(ArxivOaiSource(client(), endpoint, metadata_prefix="oai_dc"), Recorder(1))
    before = len(server.requests)
    source = plan_harvest(client(), store, endpoint, metadata_prefix="oai_dc", restart=True)
    summary = IngestService(store).run(source, resume=False)
    assert server.requests[before].params == FIRST
    assert (summary.added, summary.unchanged) == (1265, 1000)


def test_next_harvest_continues_from_the_high_water_mark(
    store: SqlPaperStore, server: ReplayServer, pages: list[bytes]
) -> None:
    endpoint = serve_chain(server, pages)
    IngestService(store).run(plan_harvest(client(), store, endpoint, metadata_prefix="oai_dc"))
    assert server.requests[0].params == FIRST  # nothing saved yet: no from
    server.add("/oai", Reply(200, error_page("noRecordsMatch")), params={"from": "2023-03-07"})
    source = plan_harvest(client(), store, endpoint, metadata_prefix="oai_dc")
    assert source.from_date == "2023-03-07"
    assert source.checkpoint_name == f"oai:{endpoint}:oai_dc::2023-03-07:"
    summary = IngestService(store).run(source)
    assert server.requests[-1].params == {**FIRST, "from": "2023-03-07"}
    assert summary.seen == 0
    assert source.report.pages == 1
    assert source.report.highwater == "2023-03-07"
    # Other formats and sets keep their own marks; --restart ignores the mark.
    assert plan_harvest(client(), store, endpoint, metadata_prefix="arXiv").from_date is None
    assert plan_harvest(client(), store, endpoint, metadata_prefix="oai_dc", set_spec="cs").from_date is None
    assert plan_harvest(client(), store, endpoint, metadata_prefix="oai_dc", restart=True).from_date is None
    # --until below the mark alone asks for everything up to that day.
    assert (
        plan_harvest(client(), store, endpoint, metadata_prefix="oai_dc", until="2022-12-31").from_date
        is None
    )
    assert plan_harvest(
        client(), store, endpoint, metadata_prefix="oai_dc", until="2024-01-01"
    ).from_date == ("2023-03-07")
    # An explicit backfill of older days never moves the mark back.
    server.add("/oai", Reply(200, error_page("noRecordsMatch")), params={"from": "2020-01-01"})
    old = plan_harvest(
        client(), store, endpoint, metadata_prefix="oai_dc", from_date="2020-01-01", until="2020-02-01"
    )
    IngestService(store).run(old)
    assert server.requests[-1].params == {**FIRST, "from": "2020-01-01", "until": "2020-02-01"}
    assert saved(store, highwater_key(endpoint, "oai_dc", None))["datestamp"] == "2023-03-07"


def test_an_expired_saved_token_restarts_the_list_from_its_from_date(
    store: SqlPaperStore, server: ReplayServer, pages: list[bytes], expected_ids: set[str]
) -> None:
    endpoint = serve_chain(server, pages)
    start = ArxivOaiSource(client(), endpoint, metadata_prefix="oai_dc", from_date="2023-03-07")
    with pytest.raises(RuntimeError):
        IngestService(store).run(start, Recorder(1))
    # The server has forgotten the token since: the first use answers badResumptionToken.
    bad = Reply(200, error_page("badResumptionToken", "expired"))
    server.add("/oai", bad, Reply(200, pages[1]), params={"resumptionToken": TOKENS[0]})
    before = len(server.requests)
    notes: list[str] = []
    source = ArxivOaiSource(
        client(), endpoint, metadata_prefix="oai_dc", from_date="2023-03-07", notify=notes.append
    )
    summary = IngestService(store).run(source)
    assert [r.params for r in server.requests[before:]] == [
        {"verb": "ListRecords", "resumptionToken": TOKENS[0]},
        {**FIRST, "from": "2023-03-07"},
        {"verb": "ListRecords", "resumptionToken": TOKENS[0]},
        {"verb": "ListRecords", "resumptionToken": TOKENS[1]},
    ]
    assert source.report.restarted is True
    assert len(notes) == 2
    assert notes[0].startswith("resuming an interrupted harvest after record 1,000 of 2,265")
    assert "has expired on the server (badResumptionToken)" in notes[1]
    assert "restarting this harvest from 2023-03-07" in notes[1]
    assert (summary.added, summary.unchanged) == (1265, 1000)
    assert set(store_ids(store)) == expected_ids


def test_a_token_refused_mid_run_is_an_error_and_keeps_committed_pages(
    store: SqlPaperStore, server: ReplayServer, pages: list[bytes]
) -> None:
    endpoint = serve_chain(server, pages)
    server.add(
        "/oai",
        Reply(200, error_page("badResumptionToken", "no such token")),
        params={"resumptionToken": TOKENS[0]},
    )
    with pytest.raises(OaiError, match="badResumptionToken: no such token"):
        IngestService(store).run(ArxivOaiSource(client(), endpoint, metadata_prefix="oai_dc"))
    assert len(store_ids(store)) == 1000


# -- the real command, in a subprocess ----------------------------------------------------------------

CLI = [sys.executable, "-c", "from paperfeed.cli import main; main()", "harvest", "arxiv"]


def cli_env(data_dir: Path, endpoint: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env.update(
        PAPERFEED_DATA_DIR=str(data_dir),
        PAPERFEED_ARXIV_OAI_URL=endpoint,
        PAPERFEED_ARXIV_DELAY="0",
        **extra,
    )
    return env


def saved_token(db: Path) -> str | None:
    """The resumption token the harvest has committed, read straight from SQLite."""
    if not db.exists():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            rows = conn.execute("SELECT value FROM checkpoints WHERE name LIKE 'oai:%'").fetchall()
    except sqlite3.OperationalError:  # not created yet, or locked for a moment
        return None
    tokens = [orjson.loads(value).get("resumptionToken") for (value,) in rows]
    return tokens[0] if tokens else None


def paper_rows(db: Path) -> tuple[int, int, set[str]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        ((count, distinct),) = conn.execute("SELECT count(*), count(DISTINCT id) FROM papers").fetchall()
        ids = {row[0] for row in conn.execute("SELECT id FROM papers")}
    return count, distinct, ids


def test_kill_9_mid_harvest_then_rerun_loses_and_duplicates_nothing(
    tmp_path: Path, server: ReplayServer, pages: list[bytes], expected_ids: set[str]
) -> None:
    endpoint = serve_chain(server, pages, slow_second=20.0)
    env = cli_env(tmp_path, endpoint)
    db = tmp_path / "paperfeed.db"
    first = subprocess.Popen(
        [*CLI, "--format", "oai_dc"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        # Wait until page one is committed and the (slow) request for page two is in flight.
        while saved_token(db) != TOKENS[0] or len(server.requests) < 2:
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "harvest did not commit its first page in time"
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate()
    assert first.returncode == -signal.SIGKILL
    assert paper_rows(db)[0] == 1000
    before = len(server.requests)
    second = subprocess.run(
        [*CLI, "--format", "oai_dc"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert second.returncode == 0, second.stderr
    assert [r.params for r in server.requests[before:]] == [
        {"verb": "ListRecords", "resumptionToken": TOKENS[0]},
        {"verb": "ListRecords", "resumptionToken": TOKENS[1]},
    ]
    count, distinct, ids = paper_rows(db)
    assert count == distinct == 2265
    assert ids == expected_ids
    assert (
        "resuming an interrupted harvest after record 1,000 of 2,265 (resumption token '6511260|1001')"
        in (" ".join(second.stderr.split()))
    )
    assert "Traceback" not in second.stderr
    assert "next harvest starts at: 2023-03-07" in second.stdout


def test_unreachable_endpoint_exits_3_with_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}/oai"
    env = cli_env(tmp_path, endpoint, PAPERFEED_HTTP_RETRIES="1", PAPERFEED_HTTP_TIMEOUT="2")
    started = time.monotonic()
    done = subprocess.run(CLI, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert time.monotonic() - started < 30
    assert done.returncode == 3
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: arXiv OAI-PMH at {endpoint} is unreachable: ")
    assert lines[0].endswith("; to import a file instead: paperfeed import FILE")
    assert "Traceback" not in done.stderr + done.stdout


# -- the command in-process, for its messages and exit codes ------------------------------------------


def invoke(tmp_path: Path, endpoint: str, *args: str) -> tuple[int, str, str]:
    runner = CliRunner()
    env = {
        "PAPERFEED_DATA_DIR": str(tmp_path),
        "PAPERFEED_ARXIV_OAI_URL": endpoint,
        "PAPERFEED_ARXIV_DELAY": "0",
    }
    result = runner.invoke(app, ["harvest", "arxiv", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def test_cli_harvest_summary_and_incremental_note(
    tmp_path: Path, server: ReplayServer, pages: list[bytes]
) -> None:
    endpoint = serve_chain(server, pages)
    code, out, err = invoke(tmp_path, endpoint, "--format", "oai_dc")
    assert code == 0, err
    assert "harvest arxiv" in out
    assert "2,265" in out
    assert "deleted (skipped): 0   pages: 3   next harvest starts at: 2023-03-07" in out
    server.add("/oai", Reply(200, error_page("noRecordsMatch")), params={"from": "2023-03-07"})
    code, out, err = invoke(tmp_path, endpoint, "--format", "oai_dc")
    assert code == 0, err
    assert "continuing from 2023-03-07, where the last completed harvest ended" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "2024-13-01"], "--from: not a date (expected YYYY-MM-DD): '2024-13-01'"),
        (["--until", "yesterday"], "--until: not a date"),
        (["--from", "2024-02-01", "--until", "2024-01-01"], "--until 2024-01-01 is before --from 2024-02-01"),
    ],
)
def test_cli_rejects_bad_dates_before_any_request(
    tmp_path: Path, server: ReplayServer, args: list[str], message: str
) -> None:
    code, _out, err = invoke(tmp_path, f"{server.base_url}/oai", *args)
    assert code == 2
    assert message in err
    assert server.requests == []


def test_cli_oai_error_exits_2_naming_the_code(tmp_path: Path, server: ReplayServer) -> None:
    server.add("/oai", Reply(200, error_page("noSetHierarchy", "no such set: bogus")))
    code, _out, err = invoke(tmp_path, f"{server.base_url}/oai", "--set", "bogus")
    assert code == 2
    assert "refused the request: noSetHierarchy: no such set: bogus" in err
    assert server.requests[0].params == {"verb": "ListRecords", "metadataPrefix": "arXiv", "set": "bogus"}
