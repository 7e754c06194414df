"""The map's labels and colours in a real browser at a desktop's and a phone's width (#30 item 9).

What a reader saw before: topic names cut off at the map's edges and drawn on top of each other, colours
that did not tell neighbouring clusters apart (two teals 4 ΔE apart), and at 390 px a map below the fold
that a finger could neither zoom nor hover. The instance has many crowded topics on purpose (the three
synthetic groups of tests/topics split into 12 topics), so labels compete for room at every zoom.

Every view checked (the whole map, zoomed in step by step, dragged towards each edge) must keep each drawn
label whole inside the canvas, clear of the zoom buttons, and clear of every other label.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.settings import Settings
from tests.support.live_server import live_server

pytestmark = pytest.mark.slow
WIDTHS = [(1280, 900), (390, 844)]


# Ten subjects, each its own words: the fake embedder's vectors fall into ten groups that a 2-D layout
# spreads over the whole map, and 12 topics of them leave labels little room.
SUBJECTS = (
    "graph neural networks message passing",
    "protein folding structure prediction",
    "galaxy cluster dark matter survey",
    "speech recognition acoustic model",
    "robot grasping manipulation policy",
    "quantum error correction qubits",
    "climate ocean temperature forcing",
    "compiler register allocation loops",
    "market auction pricing equilibrium",
    "cell membrane protein transport",
)


def _papers() -> list[Paper]:
    made = []
    for g, words in enumerate(SUBJECTS):
        for i in range(15):
            n = g * 15 + i + 1
            made.append(
                Paper(
                    id=f"2611.{n:05d}",
                    title=f"{words.split()[0].title()} {words.split()[1]} study {i}",
                    abstract=f"We study {words} and {words.split()[-1]} in depth, case {i}.",
                    authors=("Ada Lovelace",),
                    categories=("cs.LG",),
                    published=datetime(2026, 11, 2, tzinfo=UTC) - timedelta(days=i),
                )
            )
    return made


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("crowded-map")
    settings = Settings(
        data_dir=data_dir,
        database_url=None,
        embedding_backend="fake",
        keyword_engine="fts5",
        topics_min_papers=30,
        topics_k=12,
        topics_coarse_k=4,
        topics_layout="pca",
    )
    app = build_app(settings)
    try:
        app.core.store.apply_batch(Batch(papers=_papers()))
        app.indexes.indexer.current().run()
        app.catalogue.topics.build()
    finally:
        app.close()
    with live_server(settings) as url:
        yield url


def _open(
    browser: Any, url: str, size: tuple[int, int], *, touch: bool = False
) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": size[0], "height": size[1]}, has_touch=touch)
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(url + "/map")
    page.locator("canvas#map-canvas[data-ready='1']").wait_for()
    return context, page, problems


def _labels(page: Any) -> dict[str, Any]:
    page.wait_for_timeout(60)  # the frame requested by the last action
    found: dict[str, Any] = page.evaluate(
        """() => { const c = document.getElementById('map-canvas'); const r = c.getBoundingClientRect();
        return { width: r.width, height: r.height, labels: c.paperMapLabels || [],
                 blocked: c.paperMapBlocked || [], level: c.dataset.labelLevel }; }"""
    )
    return found


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and b["top"] < a["bottom"]
    )


def _check(view: dict[str, Any], where: str) -> int:
    labels = view["labels"]
    for label in labels:
        inside = (
            label["left"] >= 0
            and label["top"] >= 0
            and label["right"] <= view["width"]
            and label["bottom"] <= view["height"]
        )
        assert inside, (
            f"{where}: {label['label']!r} is cut by the map's edge: {label} in "
            f"{view['width']}x{view['height']}"
        )
        for block in view["blocked"]:
            assert not _overlap(label, block), f"{where}: {label['label']!r} is under the zoom buttons"
    for a, b in itertools.combinations(labels, 2):
        assert not _overlap(a, b), f"{where}: {a['label']!r} and {b['label']!r} overlap"
    return len(labels)


def _drag(page: Any, dx: float, dy: float) -> None:
    box = page.locator("#map-canvas").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx, y + dy, steps=4)
    page.mouse.up()


@pytest.mark.parametrize("size", WIDTHS, ids=lambda s: f"{s[0]}px")
def test_labels_stay_inside_the_map_and_apart_at_every_zoom(
    chromium_browser: Any, site: str, size: tuple[int, int], tmp_path: Path
) -> None:
    context, page, problems = _open(chromium_browser, site, size)
    try:
        seen = _check(_labels(page), "the whole map")
        assert seen >= 1
        levels = set()
        for step in range(1, 6):
            page.click("#map-zoom-in")
            view = _labels(page)
            levels.add(view["level"])
            seen += _check(view, f"zoomed in {step}x")
            for dx, dy in ((0.45, 0), (-0.9, 0), (0.45, 0.45), (0, -0.9), (0, 0.45)):
                _drag(page, dx * size[0], dy * size[1])
                seen += _check(_labels(page), f"zoomed in {step}x, dragged {dx:+}, {dy:+}")
        assert "fine" in levels, "zooming in shows the fine topics' names"
        assert seen > 20, "so few labels prove nothing"
        page.screenshot(path=str(tmp_path / f"map-{size[0]}.png"))
    finally:
        context.close()
    assert problems == [], problems


def _lab(hex_colour: str) -> tuple[float, float, float]:
    """CIE L*a*b* of an sRGB colour (D65), for the ΔE distance people see between two colours."""

    def linear(c: float) -> float:
        return ((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92

    r, g, b = (linear(int(hex_colour[i : i + 2], 16) / 255) for i in (1, 3, 5))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(v: float) -> float:
        return v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_neighbouring_topics_wear_colours_far_apart(chromium_browser: Any, site: str) -> None:
    context, page, problems = _open(chromium_browser, site, WIDTHS[0])
    try:
        colours = page.evaluate("() => document.getElementById('map-canvas').paperMapColors")
        topics = page.evaluate(
            """() => fetch('/api/map/points?format=json').then(r => r.json()).then(b => b.topics)"""
        )
    finally:
        context.close()
    fine = [t for t in topics if t["level"] == 0]
    assert len(fine) == 12
    assert {str(t["id"]) for t in fine} == set(colours)
    # 12 topics, 12 colours: every two are told apart (ΔE ≥ 25; the old palette had pairs 4 and 10 apart)
    for a, b in itertools.combinations(fine, 2):
        distance = math.dist(_lab(colours[str(a["id"])]), _lab(colours[str(b["id"])]))
        assert distance >= 25, f"{a['label']!r} and {b['label']!r} look alike: ΔE {distance:.1f}"
    assert problems == [], problems


def test_a_finger_pinches_to_zoom_and_taps_twice_to_open_a_paper(chromium_browser: Any, site: str) -> None:
    context, page, problems = _open(chromium_browser, site, WIDTHS[1], touch=True)
    try:
        frame = page.locator(".map-frame").bounding_box()
        assert frame["y"] < 844 * 0.6, "on a phone the map comes first, not below the tools"
        zoom = float(page.locator("#map-canvas").get_attribute("data-zoom"))
        box = page.locator("#map-canvas").bounding_box()
        cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        touch = context.new_cdp_session(page)  # two real fingers, as the browser's input pipeline sees them

        def fingers(kind: str, spread: float) -> None:
            points = (
                []
                if kind == "touchEnd"
                else [
                    {"x": cx - spread, "y": cy, "id": 1},
                    {"x": cx + spread, "y": cy, "id": 2},
                ]
            )
            touch.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

        fingers("touchStart", 20)
        for k in range(1, 7):
            fingers("touchMove", 20 + 12 * k)
        fingers("touchEnd", 0)
        page.wait_for_function(
            f"() => Number(document.getElementById('map-canvas').dataset.zoom) > {zoom * 2}"
        )
        assert page.url.endswith("/map"), "a pinch is not a tap"
        page.click("#map-reset")
        page.wait_for_function("() => document.getElementById('map-canvas').dataset.zoom === '1.000'")
        dot = page.evaluate(
            """() => { const c = document.getElementById('map-canvas');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            const r = c.getBoundingClientRect(), k = c.width / r.width, labels = c.paperMapLabels || [];
            const named = (x, y) => labels.some(l => x / k >= l.left - 16 && x / k <= l.right + 16
                                                  && y / k >= l.top - 16 && y / k <= l.bottom + 16);
            for (let y = 60; y < c.height - 20; y++) for (let x = 20; x < c.width - 90; x++) {
              const i = (y * c.width + x) * 4;
              if (d[i + 3] === 255 && !named(x, y)) return [r.left + (x + 1) / k, r.top + (y + 1) / k];
            }
            return null; }"""
        )
        assert dot is not None
        page.touchscreen.tap(dot[0], dot[1])
        tip = page.locator("#map-tip")
        tip.wait_for(state="visible")
        paper = tip.get_attribute("data-paper")
        assert paper
        assert page.url.endswith("/map"), "the first tap shows the title, it does not leave the map"
        page.touchscreen.tap(dot[0], dot[1])
        page.wait_for_url(f"**/papers/{paper}")
    finally:
        context.close()
    assert problems == [], problems


_UNDER_LABELS = """() => {
  const c = document.getElementById('map-canvas'), k = c.width / c.getBoundingClientRect().width;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const rgb = (h) => [1, 3, 5].map(i => parseInt(h.slice(i, i + 2), 16));
  const palette = Object.values(c.paperMapColors).map(rgb);
  const near = (i) => palette.some(p => Math.abs(p[0] - d[i]) + Math.abs(p[1] - d[i + 1])
    + Math.abs(p[2] - d[i + 2]) < 12);
  let dots = 0, pixels = 0;
  for (const l of (c.paperMapLabels || []).filter(l => !l.picked)) {
    for (let y = Math.ceil(l.top * k); y < Math.floor(l.bottom * k); y++) {
      for (let x = Math.ceil(l.left * k); x < Math.floor(l.right * k); x++) {
        const i = (y * c.width + x) * 4; pixels++;
        if (d[i + 3] === 255 && near(i)) dots++;
      }
    }
  }
  return {dots, pixels};
}"""


@pytest.mark.parametrize("size", WIDTHS, ids=lambda s: f"{s[0]}px")
def test_a_topics_name_sits_on_a_halo_no_dot_shows_through(
    chromium_browser: Any, site: str, size: tuple[int, int]
) -> None:
    """#40 item 10: names were drawn straight over the dots, which crossed their letters."""
    context, page, problems = _open(chromium_browser, site, size)
    try:
        for _ in range(3):  # the whole map, then the crowded fine names
            found = page.evaluate(_UNDER_LABELS)
            assert found["pixels"] > 500, "no label was drawn"
            assert found["dots"] == 0, f"{found['dots']} pixels of dots show through the names"
            page.click("#map-zoom-in")
            page.wait_for_timeout(60)
    finally:
        context.close()
    assert problems == [], problems


def test_a_searchs_matches_wear_a_colour_no_topic_wears_and_the_rest_fade(
    chromium_browser: Any, site: str
) -> None:
    """#40 item 10: the matches' orange was one of the topics' own colours."""
    context, page, problems = _open(chromium_browser, site, WIDTHS[0])
    try:
        canvas = page.locator("#map-canvas")
        ink = page.evaluate("() => document.getElementById('map-canvas').paperMapHighlight")
        colours = page.evaluate("() => Object.values(document.getElementById('map-canvas').paperMapColors)")
        for colour in colours:  # ΔE ≥ 40 from every topic's colour
            assert math.dist(_lab(ink), _lab(colour)) >= 40, (ink, colour)
        page.fill("#map-q", "quantum")
        page.click("#map-search button[type=submit]")
        page.wait_for_function("() => Number(document.getElementById('map-canvas').dataset.highlighted) > 0")
        assert int(canvas.get_attribute("data-highlighted") or 0) > 0  # the count: test_map_browser
        counts = page.evaluate(
            """(ink) => { const c = document.getElementById('map-canvas');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            const rgb = [1, 3, 5].map(i => parseInt(ink.slice(i, i + 2), 16));
            let matches = 0, opaque = 0;
            for (let i = 0; i < d.length; i += 4) {
              if (d[i + 3] !== 255) continue; opaque++;
              if (d[i] === rgb[0] && d[i + 1] === rgb[1] && d[i + 2] === rgb[2]) matches++;
            } return {matches, opaque}; }""",
            ink,
        )
        assert counts["matches"] >= 15 * 16  # each match drawn bigger, in the ink
        # every other dot is faded (not opaque): what stays opaque is the matches, their rims and names
        assert counts["opaque"] < 4 * counts["matches"], counts
        assert "while the others fade" in page.locator("#map-status").inner_text()
    finally:
        context.close()
    assert problems == [], problems


_FILL = """() => { const c = document.getElementById('map-canvas');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, xs = [], ys = [];
  for (let y = 0; y < c.height; y += 2) for (let x = 0; x < c.width; x += 2)
    if (d[(y * c.width + x) * 4 + 3] === 255) { xs.push(x); ys.push(y); }
  xs.sort((a, b) => a - b); ys.sort((a, b) => a - b);
  const q = (a, f) => a[Math.floor(f * (a.length - 1))];
  return (q(xs, 0.99) - q(xs, 0.01)) / c.width * (q(ys, 0.99) - q(ys, 0.01)) / c.height; }"""


@pytest.mark.parametrize("size", WIDTHS, ids=lambda s: f"{s[0]}px")
def test_the_dots_fill_the_maps_box_on_a_phone_too(
    chromium_browser: Any, site: str, size: tuple[int, int]
) -> None:
    """#40 item 10: on a phone the dots filled a third of the box (a tall box, a wide layout)."""
    context, page, problems = _open(chromium_browser, site, size)
    try:
        filled = page.evaluate(_FILL)
        assert filled >= 0.55, f"the dots fill {filled:.0%} of the map's box"
    finally:
        context.close()
    assert problems == [], problems


def test_the_date_filters_are_wide_enough_for_a_whole_date(chromium_browser: Any, site: str) -> None:
    """#40 item 10: at 390 px the date fields showed "mm/dd/yyy", their last digit cut."""
    context = chromium_browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    page = context.new_page()
    try:
        page.goto(site + "/map")
        page.locator("canvas#map-canvas[data-ready='1']").wait_for()
        for field in ("#map-from", "#map-to"):
            room, need = page.locator(field).evaluate(
                """(e) => { const cs = getComputedStyle(e);
                const c = document.createElement('canvas').getContext('2d');
                c.font = cs.font;
                return [e.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight),
                        c.measureText('mm/dd/yyyy').width + 24]; }"""  # 24: the calendar button
            )
            assert room >= need, f"{field}: {room:.0f} px for a date that needs {need:.0f}"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        context.close()
