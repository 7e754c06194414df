"""Picking topics on /map in a real browser (Debian chromium, Playwright) against a live uvicorn server.

A signed-in reader clicks a topic's label, picks it in the panel that opens (a PUT of the JSON API with
the session cookie and the page's CSRF token), sees the label marked, finds it in ``GET /api/me/topics``
and as the reason on "For you"; unpicking takes both away. An anonymous reader gets the same panel
without a pick control, and the anonymous page stays one public answer for everyone: another reader's
picks never reach it. Any console error, page error or dialog fails a test (``watch_problems``).

The instance is tests/topics' synthetic three-group store (fake embedder, real indexing and topics job).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from paperfeed.bootstrap import build_app
from paperfeed.web.security import SESSION_COOKIE
from tests.support.browser import watch_problems
from tests.support.live_server import live_server
from tests.topics.ui_instance import Instance, make_user, populate, ui_settings
from tests.web_pages.conftest import artifacts  # noqa: F401  (session fixture, shared)

pytestmark = pytest.mark.slow


@dataclass
class Site:
    url: str
    inst: Instance
    sessions: dict[str, str]  # reader -> session cookie


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    # PCA layout: where the dots sit does not matter here, and UMAP's first (JIT-compiling) run costs minutes
    folder = tmp_path_factory.mktemp("map-picks")
    inst = populate(ui_settings(folder, None, topics_layout="pca"), "sqlite")
    app = build_app(inst.settings)
    try:
        sessions = {
            who: app.readers.accounts.create_session(make_user(app, f"{who}@example.org")).session
            for who in ("ada", "bob")
        }
    finally:
        app.close()
    with live_server(inst.settings) as url:
        yield Site(url, inst, sessions)


def _tab(browser: Any, site: Site, who: str | None) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(30_000)
    if who is not None:
        context.add_cookies([{"name": SESSION_COOKIE, "value": site.sessions[who], "url": site.url}])
    page = context.new_page()
    return context, page, watch_problems(page)


def _map(page: Any, site: Site, query: str = "") -> Any:
    """/map drawn; ``?paper=`` centres it on a paper at zoom 8, where the fine topics are named."""
    page.goto(site.url + "/map" + query)
    canvas = page.locator("canvas#map-canvas[data-ready='1']")
    canvas.wait_for()
    return canvas


def _click_label(page: Any, topic_id: int) -> None:
    """Click the middle of ``topic_id``'s label as drawn on the canvas (the script lists what it drew)."""
    page.wait_for_function(
        f"() => (document.getElementById('map-canvas').paperMapLabels || []).some(l => l.id === {topic_id})"
    )
    box = page.evaluate(
        f"""() => {{
        const c = document.getElementById('map-canvas'), r = c.getBoundingClientRect();
        const l = c.paperMapLabels.find(l => l.id === {topic_id});
        return [r.left + (l.left + l.right) / 2, r.top + (l.top + l.bottom) / 2];
    }}"""
    )
    page.mouse.click(box[0], box[1])


def _picks(context: Any, site: Site) -> list[dict[str, Any]]:
    reply = context.request.get(site.url + "/api/me/topics")  # the browser's own cookies
    assert reply.status == 200
    body: list[dict[str, Any]] = reply.json()
    return body


def test_a_reader_picks_and_unpicks_a_topic_on_the_map(
    chromium_browser: Any,
    artifacts: Path,  # noqa: F811
    site: Site,
) -> None:
    protein = site.inst.topic_of_group("protein")
    label = site.inst.labels[protein]
    context, page, problems = _tab(chromium_browser, site, "ada")
    try:
        canvas = _map(page, site, "?paper=pp:protein-0003")
        page.wait_for_function("() => document.getElementById('paper-map').dataset.picked === ''")
        assert canvas.get_attribute("data-picked-labels") == "0"
        assert canvas.get_attribute("data-label-level") == "fine"
        _click_label(page, protein)
        panel = page.locator("#map-topic")
        panel.wait_for(state="visible")
        assert page.url.endswith("/map?paper=pp:protein-0003")  # a label click opens the panel, no paper
        link = panel.locator("#map-topic-link")
        assert link.inner_text() == label
        assert link.get_attribute("href") == f"/topics/{protein}"
        size = len(site.inst.members[protein])
        about = panel.locator("#map-topic-size").inner_text()
        assert about.startswith(f"{size} papers · part of ")  # the coarse topic it belongs to
        button = panel.locator("#map-topic-pick")
        assert button.get_attribute("aria-pressed") == "false"

        button.click()
        page.wait_for_function(
            "() => document.getElementById('map-topic-pick').getAttribute('aria-pressed') === 'true'"
        )
        assert "Picked" in button.inner_text()
        page.wait_for_function("() => document.getElementById('map-canvas').dataset.pickedLabels === '1'")
        drawn = page.evaluate("() => document.getElementById('map-canvas').paperMapLabels")
        assert [(d["id"], d["picked"]) for d in drawn if d["picked"]] == [(protein, True)]
        assert [p["id"] for p in _picks(context, site)] == [protein]
        page.screenshot(path=str(artifacts / "map-topic-picked.png"))

        # the pick is stored, not only drawn: a reload shows it marked again, and zoomed out (where only
        # coarse topics are named) the picked fine topic is still drawn, first
        _map(page, site)
        page.wait_for_function("() => document.getElementById('map-canvas').dataset.pickedLabels === '1'")
        assert canvas.get_attribute("data-label-level") == "coarse"

        page.goto(site.url + "/for-you")
        why = page.locator("p.why").first
        assert " ".join(why.inner_text().split()) == f"Why: from your topic: {label}"
        assert why.locator("a").get_attribute("href") == f"/topics/{protein}"

        _map(page, site)
        page.wait_for_function("() => document.getElementById('map-canvas').dataset.pickedLabels === '1'")
        _click_label(page, protein)  # now drawn as a picked pill
        button = page.locator("#map-topic-pick")
        button.wait_for(state="visible")
        assert button.get_attribute("aria-pressed") == "true"
        button.click()
        page.wait_for_function(
            "() => document.getElementById('map-topic-pick').getAttribute('aria-pressed') === 'false'"
        )
        page.wait_for_function("() => document.getElementById('map-canvas').dataset.pickedLabels === '0'")
        assert _picks(context, site) == []
        page.goto(site.url + "/for-you")
        assert "from your topic" not in page.content()
    finally:
        context.close()
    assert problems == []


def test_an_anonymous_reader_sees_the_topic_but_no_pick_control(chromium_browser: Any, site: Site) -> None:
    context, page, problems = _tab(chromium_browser, site, None)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    try:
        _map(page, site)
        assert page.locator("#map-topic-pick").count() == 0
        assert page.locator("#paper-map").get_attribute("data-picks-url") is None
        page.wait_for_function(
            "() => (document.getElementById('map-canvas').paperMapLabels || []).length > 0"
        )
        first = page.evaluate("() => document.getElementById('map-canvas').paperMapLabels[0]")
        _click_label(page, first["id"])  # zoomed out: a coarse topic
        panel = page.locator("#map-topic")
        panel.wait_for(state="visible")
        assert panel.locator("#map-topic-link").inner_text() == first["label"]
        assert panel.locator("#map-topic-link").get_attribute("href") == f"/topics/{first['id']}"
        assert panel.locator("#map-topic-size").inner_text().endswith("papers · a broad topic")
        assert panel.locator("button", has_text=re.compile("Pick")).count() == 0
        page.keyboard.press("Escape")
        panel.wait_for(state="hidden")
        # T over a dot opens the topic of that dot, from the keyboard
        page.goto(site.url + "/map?paper=pp:galaxy-0004")
        page.locator("canvas#map-canvas[data-focus='pp:galaxy-0004']").wait_for()
        page.locator("#map-canvas").press("t")
        panel.wait_for(state="visible")
        galaxy = site.inst.topic_of_group("galaxy")
        assert panel.get_attribute("data-topic") == str(galaxy)
        assert page.evaluate("() => document.activeElement.id") == "map-topic-link"
    finally:
        context.close()
    assert problems == []
    assert not any("/api/me/" in u for u in asked)  # nothing personal is asked for


def test_the_map_page_never_carries_one_readers_picks_to_another(chromium_browser: Any, site: Site) -> None:
    """Ada picks on the map; Bob (signed in) and anonymous readers then load the same URL."""
    galaxy = site.inst.topic_of_group("galaxy")
    with httpx.Client(base_url=site.url, headers={"accept": "text/html"}) as anonymous:
        before = anonymous.get("/map")
        assert before.status_code == 200
        assert before.headers["cache-control"].startswith("public")
        assert "Cookie" in before.headers["vary"]
        for marker in ("data-picks-url", "csrf-token", "map-topic-pick", "ada@", "bob@"):
            assert marker not in before.text, marker

        ada, ada_page, ada_problems = _tab(chromium_browser, site, "ada")
        try:
            _map(ada_page, site, "?paper=pp:galaxy-0003")
            _click_label(ada_page, galaxy)
            ada_page.locator("#map-topic-pick").click()
            ada_page.wait_for_function(
                "() => document.getElementById('map-canvas').dataset.pickedLabels === '1'"
            )
            assert [p["id"] for p in _picks(ada, site)] == [galaxy]
        finally:
            ada.close()
        assert ada_problems == []

        bob, bob_page, bob_problems = _tab(chromium_browser, site, "bob")
        signed: list[Any] = []
        bob_page.on("response", lambda r: signed.append(r) if r.url == site.url + "/map" else None)
        try:
            _map(bob_page, site)
            bob_page.wait_for_function("() => document.getElementById('paper-map').dataset.picked === ''")
            assert bob_page.locator("canvas#map-canvas").get_attribute("data-picked-labels") == "0"
            assert bob_page.locator("#map-topic-pick").count() == 1  # Bob may pick, but has picked nothing
            assert _picks(bob, site) == []
            assert signed[0].headers["cache-control"] == "private, no-store"
        finally:
            bob.close()
        assert bob_problems == []

        after = anonymous.get("/map")
        assert after.status_code == 200
        assert after.text == before.text  # the one public answer, whoever signed in and picked meanwhile
        assert after.headers["etag"] == before.headers["etag"]
        assert after.headers["cache-control"].startswith("public")

    context, page, problems = _tab(chromium_browser, site, None)
    try:
        _map(page, site)
        page.wait_for_timeout(200)  # a pick would be drawn with the first frames
        canvas = page.locator("canvas#map-canvas")
        assert canvas.get_attribute("data-picked-labels") == "0"
        assert page.locator("#paper-map").get_attribute("data-picked") is None
    finally:
        context.close()
    assert problems == []
    # clean up for the other tests of this module (order-independent): Ada unpicks through the API
    app = build_app(site.inst.settings)
    try:
        user = app.readers.accounts.store.user_by_email("ada@example.org")
        assert user is not None
        app.catalogue.topic_picks.unpick(user.user.id, galaxy)
    finally:
        app.close()
