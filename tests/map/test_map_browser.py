"""/map and a paper's small map in a real browser (Debian chromium, Playwright) under the real CSP.

The instance is the synthetic three-group store of tests/topics with its topics built for real. Every
test fails on any console error or uncaught page error, which is where chromium reports a CSP violation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paperfeed.bootstrap import build_app
from tests.support.live_server import live_server
from tests.topics.conftest import add_papers

from .conftest import settings_for


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("map-instance")
    settings = settings_for(data_dir, keyword_engine="fts5")
    app = build_app(settings)
    try:
        add_papers(app.core.store, 40)
        app.catalogue.topics.build()
    finally:
        app.close()
    with live_server(settings) as url:
        yield url


@pytest.fixture
def page(chromium_browser: Any) -> Iterator[Any]:
    context = chromium_browser.new_context(viewport={"width": 1100, "height": 900})
    tab = context.new_page()
    problems: list[str] = []
    tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: problems.append(str(e)))
    tab.problems = problems
    yield tab
    context.close()
    assert problems == [], problems


def _ready(page: Any, url: str) -> Any:
    page.goto(url)
    canvas = page.locator("canvas#map-canvas[data-ready='1']")
    canvas.wait_for()
    return canvas


def _a_dot(page: Any) -> tuple[float, float]:
    """The CSS position (page coordinates) of a drawn dot, read from the canvas pixels; not one under a
    topic's name (a click there opens the topic's panel: tests/map/test_map_picks_browser.py)."""
    found = page.evaluate(
        """() => {
        const c = document.getElementById('map-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const r = c.getBoundingClientRect(), k = c.width / r.width;
        const palette = new Set(Object.values(c.paperMapColors).map(h => h.slice(1)));
        const hex = (v) => v.toString(16).padStart(2, '0');
        const labels = c.paperMapLabels || [];
        const named = (x, y) => labels.some(l => x / k >= l.left - 3 && x / k <= l.right + 3
                                              && y / k >= l.top - 3 && y / k <= l.bottom + 3);
        for (let y = 40; y < c.height; y += 1) for (let x = 40; x < c.width - 80; x += 1) {
          const i = (y * c.width + x) * 4;
          if (d[i + 3] === 255 && palette.has(hex(d[i]) + hex(d[i + 1]) + hex(d[i + 2])) && !named(x, y))
            return [r.left + (x + 1) / k, r.top + (y + 1) / k];
        }
        return null;
    }"""
    )
    assert found is not None, "no coloured dot on the canvas"
    return found[0], found[1]


def test_the_map_renders_every_point(page: Any, site: str) -> None:
    canvas = _ready(page, site + "/map")
    assert canvas.get_attribute("data-points") == "120"
    assert canvas.get_attribute("data-drawn") == "120"
    coloured = page.evaluate(
        """() => {
        const c = document.getElementById('map-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] === 255) n++; return n;
    }"""
    )
    assert coloured >= 120 * 4  # every dot is at least 2x2 pixels at this size
    assert canvas.get_attribute("data-label-level") == "coarse"
    assert int(canvas.get_attribute("data-labels")) >= 1
    assert "120 papers on the map" in page.locator("#map-status").inner_text()


def test_hover_shows_the_title_and_click_opens_the_paper(page: Any, site: str) -> None:
    _ready(page, site + "/map")
    x, y = _a_dot(page)
    page.mouse.move(x, y)
    tip = page.locator("#map-tip")
    tip.wait_for(state="visible")
    paper_id = tip.get_attribute("data-paper")
    assert paper_id is not None
    assert paper_id.startswith("pp:")
    page.wait_for_function(
        "() => document.querySelector('#map-tip .map-tip-title').textContent.includes('study')"
    )
    assert paper_id in tip.inner_text()
    page.mouse.click(x, y)
    page.wait_for_url(re.compile(r"/papers/pp:"))
    assert page.url.endswith("/papers/" + paper_id)
    assert paper_id in page.locator("h1").inner_text()


def test_search_highlights_matches(page: Any, site: str) -> None:
    canvas = _ready(page, site + "/map")
    page.fill("#map-q", "galaxy")
    page.click("#map-search button[type=submit]")
    page.wait_for_function("() => Number(document.getElementById('map-canvas').dataset.highlighted) > 0")
    assert int(canvas.get_attribute("data-highlighted")) == 40
    assert "40 on the map" in page.locator("#map-status").inner_text()
    ink = page.evaluate("() => document.getElementById('map-canvas').paperMapHighlight")
    marked = page.evaluate(
        """(ink) => {
        const c = document.getElementById('map-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const rgb = [1, 3, 5].map(i => parseInt(ink.slice(i, i + 2), 16));
        let n = 0;
        for (let i = 0; i < d.length; i += 4)
          if (d[i] === rgb[0] && d[i + 1] === rgb[1] && d[i + 2] === rgb[2] && d[i + 3] === 255) n++;
        return n;
    }""",
        ink,
    )
    assert marked >= 40 * 16  # the highlighted dots are drawn bigger, in the page's ink
    page.click("#map-clear")
    page.wait_for_function("() => document.getElementById('map-canvas').dataset.highlighted === '0'")


def test_filters_zoom_levels_and_centring_on_a_paper(page: Any, site: str) -> None:
    canvas = _ready(page, site + "/map")
    # papers are published one a day back from 2026-11-26 (i % 70): from 2026-11-20 keeps i % 70 <= 6
    page.fill("#map-from", "2026-11-20")
    page.dispatch_event("#map-from", "change")
    page.wait_for_function("() => document.getElementById('map-canvas').dataset.visible === '21'")
    assert canvas.get_attribute("data-drawn") == "21"
    page.fill("#map-from", "")
    page.dispatch_event("#map-from", "change")
    page.wait_for_function("() => document.getElementById('map-canvas').dataset.visible === '120'")
    for _ in range(2):
        page.click("#map-zoom-in")
    page.wait_for_function("() => document.getElementById('map-canvas').dataset.labelLevel === 'fine'")
    page.click("#map-reset")
    page.wait_for_function("() => document.getElementById('map-canvas').dataset.labelLevel === 'coarse'")
    # a drag pans: the dots move and none is lost
    box = canvas.bounding_box()
    before = page.evaluate("() => document.getElementById('map-canvas').toDataURL()")
    page.mouse.move(box["x"] + 300, box["y"] + 300)
    page.mouse.down()
    page.mouse.move(box["x"] + 360, box["y"] + 330, steps=5)
    page.mouse.up()
    page.wait_for_function(f"() => document.getElementById('map-canvas').toDataURL() !== {before!r}")
    assert page.url.endswith("/map")  # a drag is not a click

    _ready(page, site + "/map?paper=pp:protein-0007")
    canvas = page.locator("canvas#map-canvas")
    assert canvas.get_attribute("data-focus") == "pp:protein-0007"
    assert float(canvas.get_attribute("data-zoom")) == 8
    assert "Centred on pp:protein-0007" in page.locator("#map-status").inner_text()


def test_without_javascript_the_page_says_what_it_is(chromium_browser: Any, site: str) -> None:
    context = chromium_browser.new_context(java_script_enabled=False)
    tab = context.new_page()
    tab.goto(site + "/map")
    note = tab.locator(".map-nojs")
    assert note.is_visible()
    assert "needs JavaScript" in note.inner_text()
    assert note.locator("a[href='/topics']").count() == 1
    assert not tab.locator("#paper-map").is_visible()
    context.close()


def test_the_paper_page_shows_its_small_map(page: Any, site: str) -> None:
    page.goto(site + "/papers/pp:graph-0003")
    svg = page.locator("svg.place-map")
    svg.wait_for()
    box = svg.bounding_box()
    assert box is not None
    assert box["width"] > 200
    assert box["height"] > 100
    page.locator("figure.place a[aria-label]").click()
    page.wait_for_url(re.compile(r"/map\?paper=pp:graph-0003$"))
    page.locator("canvas#map-canvas[data-focus='pp:graph-0003']").wait_for()


def test_screenshots_for_the_docs(page: Any, site: str, tmp_path: Path) -> None:
    """The page renders to an image (the docs' screenshots come from bench/map_render.py at 200k)."""
    _ready(page, site + "/map")
    shot = tmp_path / "map.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 5000
