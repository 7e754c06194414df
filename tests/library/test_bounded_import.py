"""What one reader's upload may cost the server (#31, findings 2 and 3): the probe's files, made here.

A 19.7 MB ``.bib`` of 520,000 ``@article{kN, eprint={2401.NNNNN}}`` entries raised the server's memory
by 786 MiB, and a 20 MB id list answered with a 167 MB JSON list. Now the upload is read as a stream and
at most ``PAPERFEED_LIBRARY_IMPORT_MAX_ENTRIES`` entries of it are parsed (the answer says the file had
more), the answer counts and names a bounded sample, the slow part (fetching unknown papers from arXiv)
is a background job the reader follows, one import per reader at a time, and a CSL-JSON nested 100,000
deep is a 400 naming the problem, not a ``RecursionError`` (500).
"""

from __future__ import annotations

import io
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from paperfeed.adapters.sources.bibliography import read_bibliography_stream
from paperfeed.bootstrap import App, build_app
from paperfeed.web import create_app
from paperfeed.web.security import SESSION_COOKIE
from tests.support.authz import csrf_from
from tests.support.http_server import ReplayServer, Reply

from .conftest import API_PATH
from .test_import import serve_recorded

HTML = {"accept": "text/html"}


def probe_bib(entries: int) -> bytes:
    """The probe's BibTeX: one short entry per paper id, as a script writes it."""
    return "".join(f"@article{{k{n}, eprint={{2401.{n % 100_000:05d}}}}}\n" for n in range(entries)).encode()


def probe_ids(lines: int) -> bytes:
    return "".join(f"2401.{n % 100_000:05d}\n" for n in range(lines)).encode()


@pytest.fixture
def capped(app: App) -> Iterator[Callable[..., TestClient]]:
    """``capped(user_id, **settings)``: a client signed in as that reader on a site with these settings."""
    with ExitStack() as stack:

        def open_as(user_id: int, *, raise_errors: bool = True, **settings: Any) -> TestClient:
            tuned = app.settings.model_copy(update=settings)
            web = create_app(lambda: build_app(tuned))
            client = stack.enter_context(
                TestClient(web, follow_redirects=False, raise_server_exceptions=raise_errors)
            )
            user = app.readers.accounts.user_by_id(user_id)
            assert user is not None
            client.headers["authorization"] = f"Bearer {app.readers.accounts.create_api_token(user, 't')[1]}"
            return client

        yield open_as


def _upload(client: TestClient, name: str, body: bytes, **form: str) -> Any:
    return client.post("/api/me/library/import", files={"file": (name, body, "text/plain")}, data=form)


# -- the parser reads what the cap needs, not the file ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("probe.bib", probe_bib(100_000)),
        ("probe.txt", probe_ids(200_000)),
        (
            "probe.ris",
            b"".join(
                b"TY  - JOUR\nUR  - https://arxiv.org/abs/2401.%05d\nER  - \n" % n for n in range(50_000)
            ),
        ),
        (
            "probe.json",
            b"["
            + b",".join(
                b'{"id":"k%d","URL":"https://arxiv.org/abs/2401.%05d"}' % (n, n) for n in range(50_000)
            )
            + b"]",
        ),
    ],
)
def test_a_capped_read_stops_early_and_holds_little(name: str, body: bytes) -> None:
    stream = io.BytesIO(body)
    tracemalloc.start()
    try:
        read = read_bibliography_stream(stream, name, max_entries=1_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (len(read.works), read.more) == (1_000, True)
    assert read.works[0].arxiv_id == "2401.00000"
    assert read.works[-1].arxiv_id == "2401.00999"
    if not name.endswith(".json"):  # CSL-JSON is read whole (at most the body limit), items decoded lazily
        assert stream.tell() <= 2 * 2**20, stream.tell()  # a megabyte or two of a multi-megabyte file
    assert peak < 3 * len(body) + 8 * 2**20, peak


def test_a_file_within_the_cap_is_read_whole_and_not_marked_cut() -> None:
    read = read_bibliography_stream(io.BytesIO(probe_bib(1_000)), "x.bib", max_entries=1_000)
    assert (len(read.works), read.more) == (1_000, False)


def test_bibtex_laid_out_to_fool_a_line_counter_is_still_cut() -> None:
    """Every entry on one line: bibtexparser would split them all; the cap counts every place a block
    can start, so nothing past it is parsed (here nothing at all: no clean place to cut)."""
    one_line = "".join(f"@article{{k{n}, eprint={{2401.{n:05d}}}}}" for n in range(50_000)).encode()
    read = read_bibliography_stream(io.BytesIO(one_line), "x.bib", max_entries=1_000)
    assert read.more
    assert len(read.works) <= 1_000
    mixed = probe_bib(999) + b"@string{s = {x}} @article{tail, eprint={2401.99999}}\n" + probe_bib(5_000)
    cut = read_bibliography_stream(io.BytesIO(mixed), "m.bib", max_entries=1_000)
    assert cut.more
    assert len(cut.works) == 1_000


# -- the web and the API ----------------------------------------------------------------------------------


def test_the_probes_bib_answers_with_counts_and_a_sample_and_says_it_was_cut(
    app: App, ada: int, capped: Callable[..., TestClient]
) -> None:
    client = capped(ada, library_import_max_entries=5_000, library_import_max_fetch=0)
    tracemalloc.start()
    try:
        got = _upload(client, "probe.bib", probe_bib(100_000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.status_code == 200, got.text[:300]
    body = got.json()
    assert (body["entries"], body["moreEntries"], body["maxEntries"]) == (5_000, True, 5_000)
    assert (body["saved"], body["notSavedCount"]) == (1, 4_999)  # 2401.00001 is here; none may be fetched
    assert len(body["notSaved"]) == 100
    assert "too many papers to fetch at once" in body["notSaved"][0]["reason"]
    assert len(got.content) < 40_000  # the probe's id list got a 167 MB answer
    assert peak < 60 * 2**20, f"{peak / 2**20:.0f} MiB"  # the whole 100,000 entries took hundreds


def test_an_id_list_of_20_mb_is_read_to_the_cap_only(
    app: App, ada: int, capped: Callable[..., TestClient]
) -> None:
    client = capped(ada, library_import_max_fetch=0)
    body = probe_ids(1_900_000)  # 20.9 MB: the probe's list, just under the 20 MiB body limit
    assert len(body) <= 20 * 2**20
    started = time.monotonic()
    got = _upload(client, "ids.txt", body)
    assert got.status_code == 200, got.text[:300]
    assert (got.json()["entries"], got.json()["moreEntries"]) == (10_000, True)  # the default cap
    assert len(got.content) < 40_000
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b"[" + b"[" * 100_000,
        b'[{"id": "a", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]",
        b'{"items": [{"id": "a", "x": ' + b'{"y": ' * 50_000 + b"1" + b"}" * 50_000 + b"}]}",
        b'{"config": ' + b"[" * 100_000 + b"]" * 100_000 + b', "items": []}',
    ],
    ids=["nested-arrays", "unclosed", "nested-in-an-item", "nested-objects", "nested-other-key"],
)
def test_a_deeply_nested_csl_json_is_a_400_naming_it(
    app: App, ada: int, capped: Callable[..., TestClient], body: bytes
) -> None:
    got = _upload(capped(ada, raise_errors=False), "deep.json", body)
    assert got.status_code == 400, (got.status_code, got.text[:300])
    message = got.json()["error"]
    assert message.startswith("deep.json"), message
    assert "nothing was imported" in message
    assert "nested more than 32 levels deep" in message or "is a list, not an object" in message, message


def test_a_huge_csl_item_is_refused_before_it_is_built(
    app: App, ada: int, capped: Callable[..., TestClient]
) -> None:
    item = b'{"id": "a", "note": "' + b"x" * (3 * 2**20) + b'"}'
    got = _upload(capped(ada), "big.json", b"[" + item + b"]")
    assert got.status_code == 400
    assert "item 1 is longer than 1,048,576 characters" in got.json()["error"]


def test_fetching_is_a_background_job_one_per_reader_with_visible_progress(
    app: App, ada: int, capped: Callable[..., TestClient], server: ReplayServer, recorded_dir: Path
) -> None:
    serve_recorded(server, recorded_dir, "id_1605.08386_s0_m100_199195aa31ad.json", "1605.08386")
    for _, replies in server.routes:
        for reply in replies:
            reply.delay = 1.5  # arXiv takes its time (under the 2 s timeout): the upload answers meanwhile
    client = capped(ada)
    ids = b"2401.00001\n1605.08386\n"
    got = _upload(client, "ids.txt", ids, tag="Later")
    assert got.status_code == 202, got.text
    body = got.json()
    assert (body["saved"], body["fetching"]) == (1, 1)  # the paper already here is saved at once
    running = client.get("/api/me/library/import").json()["job"]
    assert running["id"] == body["job"]
    assert (running["state"], running["total"], running["tag"]) == ("running", 1, "Later")
    busy = _upload(client, "other.txt", b"2402.00002\n")
    assert busy.status_code == 429
    assert "already running" in busy.json()["error"]
    assert busy.json()["job"]["state"] == "running"
    page = client.get("/library/import", headers=HTML)
    assert "Fetching from arXiv" in page.text
    assert 'http-equiv="refresh"' in page.text
    deadline = time.monotonic() + 30
    while (job := client.get("/api/me/library/import").json()["job"])["state"] == "running":
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    assert job["state"] == "ok", job
    assert (job["done"], job["fetched"], job["saved"], job["notFound"]) == (1, 1, 1, 0)
    assert set(app.readers.library.signals(ada).in_tag("Later")) == {"2401.00001", "1605.08386"}
    again = _upload(client, "other.txt", b"2402.00002\n")  # the reader's turn is back
    assert again.status_code == 200
    done_page = client.get("/library/import", headers=HTML)
    assert "Your last fetch from arXiv" in done_page.text
    assert 'http-equiv="refresh"' not in done_page.text


def test_arxiv_down_fails_the_job_with_its_reason_and_keeps_what_was_saved(
    app: App, ada: int, capped: Callable[..., TestClient], server: ReplayServer
) -> None:
    server.add(API_PATH, Reply(503, b"down for maintenance"))
    client = capped(ada)
    got = _upload(client, "ids.txt", b"2401.00001\n1605.08386\n")
    assert got.status_code == 202
    deadline = time.monotonic() + 30
    while (job := client.get("/api/me/library/import").json()["job"])["state"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert job["state"] == "failed"
    assert "import the file again" in job["error"]
    assert app.readers.library.signals(ada).in_tag("Saved") == ("2401.00001",)


def _finished(client: TestClient) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while (job := client.get("/api/me/library/import").json()["job"])["state"] == "running":
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    return dict(job)


def test_an_import_answers_for_a_hidden_paper_exactly_as_for_an_unknown_one(
    app: App, ada: int, capped: Callable[..., TestClient], server: ReplayServer, recorded_dir: Path
) -> None:
    """No oracle of what moderation hid: both are asked of arXiv, fetched, and saved (the hidden one out
    of sight, as a paper hidden after it was saved)."""
    serve_recorded(server, recorded_dir, "id_1605.08386_s0_m100_199195aa31ad.json", "1605.08386")
    serve_recorded(server, recorded_dir, "id_1707.08567_s0_m100_6a1afebfc6a3.json", "1707.08567")
    client = capped(ada)
    assert _upload(client, "first.txt", b"1605.08386\n").status_code == 202
    _finished(client)
    app.readers.accounts.hide_paper("1605.08386")
    app.readers.library.records.unsave(ada, "1605.08386", None)
    answers, jobs = [], []
    for paper_id in ("1605.08386", "1707.08567"):  # hidden here; unknown here
        got = _upload(client, "one.txt", f"{paper_id}\n".encode())
        answers.append({k: v for k, v in got.json().items() if k != "job"} | {"status": got.status_code})
        jobs.append(
            {k: v for k, v in _finished(client).items() if k not in ("id", "startedAt", "finishedAt")}
        )
    assert answers[0] == answers[1]
    assert jobs[0] == jobs[1]
    assert (jobs[0]["fetched"], jobs[0]["saved"]) == (1, 1)
    page = client.get("/library", headers=HTML)
    assert "1605.08386" not in page.text


def test_the_page_says_a_file_was_cut(app: App, ada: int) -> None:
    settings = app.settings.model_copy(update={"library_import_max_entries": 10})
    with TestClient(create_app(lambda: build_app(settings)), follow_redirects=False) as client:
        user = app.readers.accounts.user_by_id(ada)
        assert user is not None
        client.cookies.set(SESSION_COOKIE, app.readers.accounts.create_session(user).session)
        token = csrf_from(client.get("/library/import", headers=HTML).text)
        got = client.post(
            "/library/import",
            data={"csrf_token": token},
            files={"file": ("many.txt", probe_ids(50), "text/plain")},
            headers=HTML,
        )
    assert got.status_code == 200
    assert "The file has more than 10 entries: only the first 10 were read." in got.text


def test_a_fetch_running_when_the_server_stops_is_recorded_as_interrupted(
    app: App, ada: int, server: ReplayServer, recorded_dir: Path
) -> None:
    serve_recorded(server, recorded_dir, "id_1605.08386_s0_m100_199195aa31ad.json", "1605.08386")
    for _, replies in server.routes:
        for reply in replies:
            reply.delay = 1.0
    other = build_app(app.settings)  # the web process, stopped while its job waits on arXiv
    report = other.readers.library_import.start(
        ada, io.BytesIO(b"1605.08386\n"), "ids.txt", max_entries=10, max_fetch=10
    )
    assert report.job is not None
    time.sleep(0.3)
    other.close()  # waits for the job, which stops at its next batch
    status = app.readers.library_import.status(ada)
    assert status is not None
    assert status.state == "interrupted", status
    assert status.error is not None
    assert "import the file again" in status.error
    again = app.readers.library_import.start(
        ada, io.BytesIO(b"1605.08386\n"), "ids.txt", max_entries=10, max_fetch=10
    )
    assert again.fetching == 0  # fetched before the stop: here now, saved at once
    assert "1605.08386" in app.readers.library.signals(ada).in_tag("Saved")
