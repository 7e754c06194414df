"""Evidence search on every surface, served for real: the JSON API (with its refusals, mute rules and the
anonymous rate limit), the search page's Evidence view in chromium at 1280 and 390 px, the MCP tool over
streamable HTTP with the official client, and ``paperfeed evidence`` as a process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from paperfeed.settings_model import SettingsModel
from paperfeed.web import create_app
from tests.evidence.support import (
    ANSWER,
    ANSWER_RESULT,
    HOPPER,
    LONE,
    MUTED,
    OTHER,
    QUESTION,
    evidence_app,
)
from tests.mcp_server.conftest import http_client, run_async
from tests.support.browser import watch_problems
from tests.support.follower import index_follow
from tests.support.live_server import live_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    app = evidence_app(tmp_path_factory.mktemp("evidence"))
    try:
        return app.settings  # type: ignore[return-value]
    finally:
        app.close()


@pytest.fixture(scope="module")
def url(settings: Settings) -> Iterator[str]:
    with live_server(settings) as found:
        yield found


@pytest.fixture(scope="module")
def token(settings: Settings) -> str:
    """A reader who mutes the word "quokka", and their API token."""
    app = build_app(settings)
    try:
        user = app.readers.accounts.add_confirmed("muter@example.org", "a long enough password")
        app.readers.mutes.add(user.id, "word", "quokka")
        return app.readers.accounts.create_api_token(user, "evidence tests")[1]
    finally:
        app.close()


def _sentences(body: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(
        (s | {"paper": p["id"]} for p in body["papers"] for s in p["sentences"]), key=lambda s: s["rank"]
    )


def test_api_answers_sentences_grouped_under_papers(url: str) -> None:
    got = httpx.get(f"{url}/api/evidence", params={"q": QUESTION, "limit": 10})
    assert got.status_code == 200
    body = got.json()
    assert "not generated" in body["notice"]
    assert "not a verdict" in body["notice"]
    first = _sentences(body)[0]
    assert (first["paper"], first["text"], first["role"], first["rank"]) == (
        ANSWER,
        ANSWER_RESULT,
        "result",
        1,
    )
    assert first["before"].startswith("We compare layer normalization")
    assert first["after"] is None
    assert "<mark>" in first["highlighted"]
    paper = body["papers"][0]
    assert (paper["id"], paper["url"], paper["published"]) == (ANSWER, f"/papers/{ANSWER}", "2025-01-10")
    assert paper["authors"] == ["Ada Lovelace"]
    ids = [p["id"] for p in body["papers"]]
    assert len(ids) == len(set(ids))
    results = httpx.get(f"{url}/api/evidence", params={"q": QUESTION, "role": "results"}).json()
    assert {s["role"] for s in _sentences(results)} == {"result"}
    assert results["roles"] == ["result"]
    old = httpx.get(f"{url}/api/evidence", params={"q": QUESTION, "to": "2022-01-01"}).json()
    assert {p["id"] for p in old["papers"]} == {HOPPER}
    cl = httpx.get(f"{url}/api/evidence", params={"q": "layer normalization", "cat": "cs.CL"}).json()
    assert cl["papers"][0]["id"] == HOPPER
    assert {p["id"] for p in cl["papers"]} <= {HOPPER, OTHER}  # the two papers in cs.CL


def test_markup_in_abstracts_and_queries_stays_text(url: str) -> None:
    body = httpx.get(f"{url}/api/evidence", params={"q": "speech recognition <b>data</b>"}).json()
    hit = next(s for s in _sentences(body) if s["paper"] == OTHER and s["position"] == 0)
    assert "<img src=x onerror=alert('evidence-xss')>" in hit["text"]  # verbatim
    assert "<img" not in hit["highlighted"]
    assert "&lt;img src=x onerror=alert('evidence-xss')&gt;" in hit["highlighted"]
    assert body["query"] == "speech recognition <b>data</b>"  # JSON, never HTML


@pytest.mark.parametrize(
    ("params", "param", "words"),
    [
        ({"q": ""}, "q", "question or claim"),
        ({"q": "x" * 251}, "q", "the limit is 250"),
        ({"q": QUESTION, "role": "findings"}, "role", "background, objective, method, result, other"),
        ({"q": QUESTION, "from": "yesterday"}, "from", "2025-03-18"),
        ({"q": QUESTION, "from": "2025-02-01", "to": "2025-01-01"}, "from", "after to"),
        ({"q": QUESTION, "cat": "not a category!"}, "cat", "arXiv category"),
        ({"q": QUESTION, "limit": "0"}, "limit", ""),
        ({"q": QUESTION, "limit": "101"}, "limit", ""),
    ],
)
def test_api_refuses_bad_input_naming_the_parameter(
    url: str, params: dict[str, str], param: str, words: str
) -> None:
    got = httpx.get(f"{url}/api/evidence", params=params)
    assert got.status_code == 400, got.text
    body = got.json()
    assert body["errors"][0]["param"] == param
    assert words in body["error"]


def test_api_applies_the_readers_mute_rules(url: str, token: str) -> None:
    anyone = httpx.get(f"{url}/api/evidence", params={"q": "quokka populations small batches"})
    assert MUTED in {p["id"] for p in anyone.json()["papers"]}
    reader = httpx.get(
        f"{url}/api/evidence",
        params={"q": "quokka populations small batches"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert reader.status_code == 200
    assert MUTED not in {p["id"] for p in reader.json()["papers"]}
    assert int(reader.headers["X-Muted-Hidden"]) == 1
    shown = httpx.get(
        f"{url}/api/evidence",
        params={"q": "quokka populations small batches", "muted": "show"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert MUTED in {p["id"] for p in shown.json()["papers"]}


def test_anonymous_evidence_searches_are_rate_limited(settings: Settings) -> None:
    limited = settings.model_copy(update={"search_rate_per_minute": 2})
    with TestClient(create_app(lambda: build_app(limited))) as client:
        codes = [
            client.get("/api/evidence", params={"q": f"small batches {n}"}).status_code for n in range(4)
        ]
    assert codes[:2] == [200, 200]
    assert codes[-1] == 429


def _no_sideways_scroll(page: Any, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("width", [1280, 390])
def test_the_evidence_view_in_a_browser(url: str, chromium_browser: Any, width: int) -> None:
    page = chromium_browser.new_page(viewport={"width": width, "height": 900})
    problems = watch_problems(page)
    try:
        page.goto(f"{url}/search?q={QUESTION}")
        offer = page.locator(".evidence-offer")  # a question-shaped query is offered the Evidence view
        assert offer.is_visible()
        offer.get_by_role("link").click()
        page.wait_for_url("**view=evidence**")
        assert page.locator(".view-switch [aria-current]").inner_text().startswith("Evidence")
        assert "not generated" in page.locator(".evidence-notice").inner_text()
        first = page.locator("ol.evidence > li").first
        assert first.locator(".card-title a").get_attribute("href") == f"/papers/{ANSWER}"
        hit = first.locator(".evidence-hit").first
        assert hit.locator(".role-chip").inner_text().strip().lower() == "result"
        assert hit.locator(".evidence-sentence").inner_text() == ANSWER_RESULT
        assert hit.locator(".evidence-sentence mark").count() >= 2  # the query's words
        before = hit.locator(".evidence-context").first
        assert before.inner_text().startswith("We compare layer normalization")
        dim = before.evaluate("el => getComputedStyle(el).color")
        plain = hit.locator(".evidence-sentence").evaluate("el => getComputedStyle(el).color")
        assert dim != plain  # the context is dimmed
        _no_sideways_scroll(page, width)
        page.select_option("#f-role", label="Results only")
        page.locator(".search-form button[type=submit]").click()
        page.wait_for_url("**role=result**")
        roles = {r.strip().lower() for r in page.locator(".evidence-hit .role-chip").all_inner_texts()}
        assert roles == {"result"}
        page.goto(f"{url}/search?view=evidence&q=speech+recognition+data")
        xss = page.locator(f"ol.evidence a[href='/papers/{OTHER}']")
        assert xss.count() == 1
        assert "onerror=alert('evidence-xss')" in page.locator("ol.evidence").inner_text()
        _no_sideways_scroll(page, width)
        # Nothing bears on it: no paper in this category (meaning alone always finds nearest sentences)
        page.goto(f"{url}/search?view=evidence&q=zzzz+qqqq+xxxx&cat=astro-ph.EP")
        assert "No sentences bear on" in page.locator("h2#help-title").inner_text()
        page.locator(".view-switch").get_by_role("link", name="Papers").click()
        page.wait_for_load_state()
        assert "view=evidence" not in page.url
        assert problems == []  # no script ran from an abstract, no console error
    finally:
        page.close()
    bad = httpx.get(f"{url}/search", params={"view": "evidence", "q": QUESTION, "role": "findings"})
    assert bad.status_code == 200  # a page says what it did not understand, as the other filters
    assert "showing every role" in bad.text


def test_mcp_tool_search_evidence(url: str) -> None:
    async def body(client: Client) -> None:
        found = await client.call_tool("search_evidence", {"question": QUESTION, "limit": 5})
        assert not found.is_error
        assert found.structured_content is not None
        content = found.structured_content
        assert "not generated" in content["notice"]
        first = content["papers"][0]
        assert first["id"] == ANSWER
        assert first["sentences"][0] == {
            "rank": 1,
            "text": ANSWER_RESULT,
            "before": "We compare layer normalization with batch normalization for small batches of images.",
            "role": "result",
        }
        text = found.content[0].text  # type: ignore[union-attr]
        assert f"[result] “{ANSWER_RESULT}”" in text
        methods = await client.call_tool("search_evidence", {"question": QUESTION, "roles": ["method"]})
        assert methods.structured_content is not None
        assert {s["role"] for p in methods.structured_content["papers"] for s in p["sentences"]} == {"method"}
        bad = await client.call_tool("search_evidence", {"question": QUESTION, "roles": ["findings"]})
        assert bad.is_error
        too_many = await client.call_tool("search_evidence", {"question": QUESTION, "limit": 51})
        assert too_many.is_error

    async def run() -> None:
        async with http_client(f"{url}/mcp") as client:
            await body(client)

    run_async(run)


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env = {
        **clean,
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PAPERFEED_DATA_DIR": str(settings.data_dir),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "paperfeed", *args], capture_output=True, text=True, timeout=180, env=env
    )


def test_cli_evidence_in_every_format(settings: Settings) -> None:
    found = _cli(settings, "evidence", QUESTION, "--format", "json", "--limit", "5")
    assert found.returncode == 0, found.stderr
    rows = orjson.loads(found.stdout)
    assert (rows[0]["rank"], rows[0]["id"], rows[0]["text"], rows[0]["role"]) == (
        1,
        ANSWER,
        ANSWER_RESULT,
        "result",
    )
    lines = _cli(settings, "evidence", QUESTION, "--json", "--role", "method").stdout.splitlines()
    assert lines
    assert {orjson.loads(line)["role"] for line in lines} == {"method"}
    table = _cli(settings, "evidence", QUESTION)
    assert table.returncode == 0
    assert ANSWER_RESULT in table.stdout
    assert "not generated" in table.stderr
    csv = _cli(settings, "evidence", QUESTION, "--format", "csv").stdout.splitlines()
    assert csv[0].startswith("rank,id,title,authors,published,role")
    bib = _cli(settings, "evidence", QUESTION, "--format", "bibtex").stdout
    assert bib.count("@misc{") == len({r["id"] for r in orjson.loads(found.stdout)}) or "@" in bib
    bad = _cli(settings, "evidence", QUESTION, "--role", "findings")
    assert bad.returncode == 2
    assert "--role: unknown role 'findings'" in bad.stderr
    assert "Traceback" not in bad.stderr
    empty = _cli(settings, "evidence", "  ")
    assert empty.returncode == 2
    assert "the question is empty" in empty.stderr


def test_cli_check_reports_the_sentence_indexes_and_index_keyword_rebuilds_them(settings: Settings) -> None:
    found = _cli(settings, "check", "--json")
    assert found.returncode == 0, found.stdout + found.stderr
    probes = {p["area"]: p for p in orjson.loads(found.stdout)["probes"]}
    words = probes["sentence keyword index (tantivy)"]
    assert words["ok"]
    assert words["summary"] == "18 of 18 stored sentences"
    assert probes["sentence vector index"]["ok"]
    rebuilt = _cli(settings, "index", "--keyword")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "sentence keyword index rebuilt: the sentences of 6 papers (tantivy)" in rebuilt.stdout
    again = _cli(settings, "check")
    assert again.returncode == 0
    assert "consistent" in again.stdout


def test_index_and_check_repair_say_the_sentence_catch_up_in_one_wording(tmp_path: Path) -> None:
    """``paperfeed index`` (and ``--follow``, ``restore``) and ``check --repair`` report a catch-up of the
    sentence indexes in the same words (:meth:`CaughtUp.message`)."""
    app = evidence_app(tmp_path)
    settings: Settings = app.settings  # type: ignore[assignment]
    app.close()
    caught = (
        "sentence indexes caught up: the sentences of 0 papers into the keyword index, of 6 papers into "
        "the vector index, in "
    )
    shutil.rmtree(settings.data_dir / "sentence-vectors")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env["PAPERFEED_EMBEDDING_BACKEND"] = "fake"
    with index_follow(settings.data_dir, env) as follower:  # the catch-up comes before its first round
        assert follower.expect("sentence indexes caught up").startswith(caught)
    shutil.rmtree(settings.data_dir / "sentence-vectors")
    repaired = _cli(settings, "check", "--repair")
    assert "repair: " + caught in repaired.stdout, repaired.stdout + repaired.stderr
    assert "the re-check is clean" in repaired.stdout


FAR = "echoes zxqv blorf wibble quux frobnicate"  # one word of a sentence, nothing of its meaning


def test_a_question_nothing_bears_on_gets_no_sentences_through_the_api_and_the_page(
    tmp_path: Path, url: str
) -> None:
    """The meaning floor at its shipped default: the best candidate of ``FAR`` (LONE's "Radar echoes
    arrive in small batches", by its one word) is far below it in meaning, so nothing is shown."""
    floor = SettingsModel.model_fields["evidence_min_cosine"].default
    assert floor > 0
    without = httpx.get(f"{url}/api/evidence", params={"q": FAR}).json()  # the floor off (support.py)
    assert [s["paper"] for s in _sentences(without)][:1] == [LONE]
    app = evidence_app(tmp_path, evidence_min_cosine=floor)
    shipped: Settings = app.settings  # type: ignore[assignment]
    app.close()
    with live_server(shipped) as served:
        body = httpx.get(f"{served}/api/evidence", params={"q": FAR})
        assert body.status_code == 200
        assert (body.json()["papers"], _sentences(body.json())) == ([], [])
        page = httpx.get(f"{served}/search", params={"view": "evidence", "q": FAR})
        assert page.status_code == 200
        assert "No sentences bear on" in page.text
        answered = httpx.get(f"{served}/api/evidence", params={"q": QUESTION}).json()
        assert _sentences(answered)[0]["text"] == ANSWER_RESULT  # a real question is answered as before
