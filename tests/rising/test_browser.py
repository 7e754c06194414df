"""The daily page's "Rising this week" box in a real browser (Debian chromium via Playwright), served by
uvicorn on loopback under the real Content-Security-Policy: it renders, its plot is an SVG of the right
size, its link goes to the topic, and the console stays free of errors (a CSP violation is one)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from tests.support.live_server import live_server
from tests.support.rising import add_rising_world

WEEK = date(2025, 3, 17)
DAY = date(2025, 3, 18)


def test_the_box_renders_without_console_or_csp_errors(chromium_browser: Any, tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=None,
        embedding_backend="fake",
        topics_min_papers=30,
        topics_k=3,
    )
    app = build_app(settings)
    try:
        add_rising_world(app.core.store, WEEK, listed_on=DAY)
        app.catalogue.topics.build()
        galaxy = app.catalogue.topics.topic_of("rz:galaxy-w0-00")
        assert galaxy is not None
    finally:
        app.close()
    with live_server(settings) as url:
        context = chromium_browser.new_context()
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{url}/papers/date/{DAY.isoformat()}")
        box = page.locator("aside.rising-box")
        box.wait_for()
        # an archive (newest paper March 2025): "this week" is its last week, and the box says so
        assert box.locator("h2").inner_text() == "Rising this week"
        assert "count from then, not from today" in box.locator(".now-note").inner_text()
        assert box.locator("li").count() == 1
        assert "× its usual share" in box.locator(".rising-lift").inner_text()
        plot = box.locator("svg.share-bars")
        size = plot.bounding_box()
        assert size is not None
        assert size["width"] == 120
        assert size["height"] == 32
        assert plot.locator("rect.bar").count() == 9
        assert (plot.get_attribute("aria-label") or "").startswith(f"{galaxy.label}: share of all papers")
        # The box sits above the day's papers, which still render.
        cards = page.locator("ol.cards")
        card_box = cards.bounding_box()
        rising_box = box.bounding_box()
        assert card_box is not None
        assert rising_box is not None
        assert rising_box["y"] + rising_box["height"] <= card_box["y"]
        box.locator(f'a[href="/topics/{galaxy.id}"]').click()
        page.wait_for_url(f"**/topics/{galaxy.id}")
        page.locator("svg.trend-plot").wait_for()
        context.close()
    assert errors == []
