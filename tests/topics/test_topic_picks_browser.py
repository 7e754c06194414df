"""Picking a topic in a real browser (Debian's chromium through Playwright) against a live uvicorn server,
then seeing "For you" say which topic a paper came from; the topic page's two-panel plot and the paper
page's topic line under the real CSP. Any console error, page error or dialog fails the test.

Screenshots go to ``test-artifacts/web_pages/`` (topic-picked.png, for-you-topics.png).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paperfeed.bootstrap import build_app
from paperfeed.web.security import SESSION_COOKIE
from tests.support.browser import watch_problems
from tests.support.live_server import live_server
from tests.web_pages.conftest import artifacts  # noqa: F401  (session fixture, shared)

from .ui_instance import Instance, make_user, populate, ui_settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Instance, str]]:
    inst = populate(ui_settings(tmp_path_factory.mktemp("topic-picks-browser"), None), "sqlite")
    app = build_app(inst.settings)
    try:
        user = make_user(app, "picker@example.org")
        session = app.readers.accounts.create_session(user).session
    finally:
        app.close()
    with live_server(inst.settings) as url:
        yield url, inst, session


def test_pick_a_topic_and_see_the_for_you_reason(
    chromium_browser: Any,
    artifacts: Path,  # noqa: F811
    site: tuple[str, Instance, str],
) -> None:
    url, inst, session = site
    protein = inst.topic_of_group("protein")
    label = inst.labels[protein]
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    context.add_cookies([{"name": SESSION_COOKIE, "value": session, "url": url}])
    page = context.new_page()
    problems = watch_problems(page)  # console errors, page errors, dialogs
    try:
        page.goto(f"{url}/for-you")
        assert page.locator(".picked-topics").inner_text().count("None yet") == 1
        page.goto(f"{url}/topics")
        row = page.locator("table.topics-table tr", has=page.locator(f'a[href="/topics/{protein}"]'))
        button = row.locator("form.topic-pick button")
        assert button.get_attribute("aria-pressed") == "false"
        button.click()
        page.wait_for_url(f"{url}/topics")
        button = page.locator(
            "table.topics-table tr", has=page.locator(f'a[href="/topics/{protein}"]')
        ).locator("form.topic-pick button")
        assert button.get_attribute("aria-pressed") == "true"
        assert "Picked for you" in button.inner_text()
        page.screenshot(path=str(artifacts / "topic-picked.png"), full_page=True)

        page.goto(f"{url}/for-you")
        picked = page.locator(".picked-topics")
        assert picked.locator(f'a[href="/topics/{protein}"]').inner_text() == label
        why = page.locator("p.why").first
        assert " ".join(why.inner_text().split()) == f"Why: from your topic: {label}"
        assert why.locator("a").get_attribute("href") == f"/topics/{protein}"
        assert (
            page.locator("p.cold-start").inner_text().startswith("Recent papers from the 1 topic you picked")
        )
        page.screenshot(path=str(artifacts / "for-you-topics.png"), full_page=True)

        why.locator("a").click()  # the reason links to the topic page: its plot has both panels
        page.wait_for_url(f"{url}/topics/{protein}")
        assert page.locator("svg.trend-plot rect.bar").count() > 0
        assert (
            page.locator("svg.trend-plot rect.bar").count()
            == page.locator("svg.trend-plot rect.bar-upvotes").count()
        )
        box = page.locator("svg.trend-plot").bounding_box()
        assert box is not None
        assert box["height"] >= 250

        page.goto(f"{url}/papers/pp:protein-0003")
        assert page.locator("p.topic-line a").first.inner_text() == label

        page.goto(f"{url}/for-you")  # unpick from the For you page: the reason goes with it
        page.locator(".picked-topics form.topic-pick button").click()
        page.wait_for_url(f"{url}/for-you")
        assert "None yet" in page.locator(".picked-topics").inner_text()
        assert "from your topic" not in page.content()
    finally:
        context.close()
    assert problems == []
