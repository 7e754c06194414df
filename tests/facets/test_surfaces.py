"""Similar papers by facet on every surface, served for real: the JSON API and the paper page's switch
(real uvicorn on loopback, the page in chromium), the MCP tool over streamable HTTP, and the CLI as a
process, all on one store whose sentences were indexed with roles by place (tests/facets/support.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from mcp import Client

from paperfeed.settings import Settings
from tests.facets.support import ME, METHOD, NO_RESULT, RESULT, TOPIC, facet_app
from tests.mcp_server.conftest import http_client, run_async
from tests.support.browser import watch_problems
from tests.support.live_server import live_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # a facet weight that puts the best match first in this six-paper store: these tests check what each
    # surface shows, the ranking itself is tests/facets/test_facet_similar.py's and the bench's
    app = facet_app(tmp_path_factory.mktemp("facets"), similar_facet_weight=4.0, similar_facet_rrf_k=1.0)
    try:
        return app.settings  # type: ignore[return-value]
    finally:
        app.close()


@pytest.fixture(scope="module")
def url(settings: Settings) -> Iterator[str]:
    with live_server(settings) as found:
        yield found


def test_api_similar_by_facet(url: str) -> None:
    plain = httpx.get(f"{url}/api/papers/{ME}/similar?limit=5")
    assert plain.status_code == 200
    assert "facet" not in plain.json()[0]  # without ?facet= the answer keeps Hugging Face's shape
    method = httpx.get(f"{url}/api/papers/{ME}/similar", params={"facet": "method", "limit": 5})
    assert method.status_code == 200
    assert "Paperfeed-Note" not in method.headers
    first = method.json()[0]
    assert (first["paper"]["id"], first["facet"]) == (METHOD, "method")
    assert first["matchedSentence"] == "We use graph neural networks."
    result = httpx.get(f"{url}/api/papers/{ME}/similar", params={"facet": "result"}).json()
    assert result[0]["paper"]["id"] == RESULT
    fallback = httpx.get(f"{url}/api/papers/{NO_RESULT}/similar", params={"facet": "result"})
    assert fallback.status_code == 200
    assert {i["facet"] for i in fallback.json()} == {"overall"}
    assert "No sentence of this paper's abstract states its result" in fallback.headers["Paperfeed-Note"]
    bad = httpx.get(f"{url}/api/papers/{ME}/similar", params={"facet": "methods"})
    assert bad.status_code == 400
    assert "facet" in bad.json()["error"]
    assert "background, method, result" in bad.json()["error"]


def test_page_switch_in_a_browser(url: str, chromium_browser: Any) -> None:
    page = chromium_browser.new_page()
    problems = watch_problems(page)
    try:
        page.goto(f"{url}/papers/{ME}")
        switch = page.locator(".similar-switch")
        assert " ".join(switch.inner_text().split()) == "Similar by: overall · background · method · result"
        assert switch.locator("[aria-current]").inner_text() == "overall"
        first = page.locator("ol.similar > li").first
        assert first.locator("a").get_attribute("href") == f"/papers/{TOPIC}"
        assert "sentence by sentence" in page.locator(".similar-explain").inner_text()
        switch.get_by_role("link", name="method").click()
        page.wait_for_url(f"**/papers/{ME}?similar=method#similar-title")
        assert page.locator(".similar-switch [aria-current]").inner_text() == "method"
        explain = page.locator(".similar-explain")
        assert explain.is_visible()  # what the facet changes, said where the list is
        assert "reordered by how well their sentences match the sentences of this paper's method" in (
            explain.inner_text()
        )
        first = page.locator("ol.similar > li").first
        assert first.locator("a").get_attribute("href") == f"/papers/{METHOD}"
        assert first.locator("q.similar-match").inner_text() == "We use graph neural networks."
        page.locator(".similar-switch").get_by_role("link", name="result").click()
        page.wait_for_url("**?similar=result#similar-title")
        assert page.locator("ol.similar > li a").first.get_attribute("href") == f"/papers/{RESULT}"
        page.goto(f"{url}/papers/{NO_RESULT}")
        overall = [a.get_attribute("href") for a in page.locator("ol.similar > li > a").all()]
        assert page.locator(".similar-note").count() == 0  # no note on the list asked for
        page.locator(".similar-switch").get_by_role("link", name="result").click()
        page.wait_for_url(f"**/papers/{NO_RESULT}?similar=result#similar-title")
        note = page.locator(".similar-note")
        assert note.is_visible()  # the reader sees why the list did not change
        assert "No sentence of this paper's abstract states its result" in note.inner_text()
        assert "overall similar papers" in note.inner_text()
        assert page.locator(".similar-switch [aria-current]").inner_text() == "result"
        assert [a.get_attribute("href") for a in page.locator("ol.similar > li > a").all()] == overall
        assert overall  # a real list, not an empty one
        assert page.locator("q.similar-match").count() == 0  # no facet sentence is claimed to match
        assert problems == []
    finally:
        page.close()
    bad = httpx.get(f"{url}/papers/{ME}?similar=colour")
    assert bad.status_code == 400
    assert "similar" in bad.text


def test_mcp_tool_takes_a_facet(url: str) -> None:
    async def body(client: Client) -> None:
        found = await client.call_tool("similar_papers", {"paper_id": ME, "facet": "method", "limit": 3})
        assert not found.is_error
        assert found.structured_content is not None
        papers = found.structured_content["papers"]
        assert papers[0]["id"] == METHOD
        assert papers[0]["reason"] == "method: “We use graph neural networks.”"
        text = found.content[0].text  # type: ignore[union-attr]
        assert "by method" in text
        assert "why: method:" in text
        fallback = await client.call_tool("similar_papers", {"paper_id": NO_RESULT, "facet": "result"})
        assert fallback.structured_content is not None
        assert "states its result" in fallback.structured_content["notes"][0]
        bad = await client.call_tool("similar_papers", {"paper_id": ME, "facet": "colour"})
        assert bad.is_error
        assert "facet" in bad.content[0].text  # type: ignore[union-attr]

    run_async(lambda: _with(url, body))


async def _with(url: str, body: Any) -> None:
    async with http_client(f"{url}/mcp") as client:
        await body(client)


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env = {
        **clean,
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PAPERFEED_DATA_DIR": str(settings.data_dir),
        "PAPERFEED_SIMILAR_FACET_WEIGHT": str(settings.similar_facet_weight),
        "PAPERFEED_SIMILAR_FACET_RRF_K": str(settings.similar_facet_rrf_k),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "paperfeed", *args], capture_output=True, text=True, timeout=180, env=env
    )


def test_cli_similar_facet(settings: Settings) -> None:
    found = _cli(settings, "similar", ME, "--facet", "method", "--json")
    assert found.returncode == 0, found.stderr
    assert orjson.loads(found.stdout.splitlines()[0])["id"] == METHOD  # --json: one object a line
    table = _cli(settings, "similar", ME, "--facet", "result", "--format", "table")
    assert table.returncode == 0
    assert "similar to 2501.00001 by result" in table.stdout
    fallback = _cli(settings, "similar", NO_RESULT, "--facet", "result", "--json")
    assert fallback.returncode == 0
    assert "states its result" in fallback.stderr
    bad = _cli(settings, "similar", ME, "--facet", "colour")
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("error: unknown facet 'colour'")
    assert "Traceback" not in bad.stderr
