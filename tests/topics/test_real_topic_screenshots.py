"""Real topics in a real browser: 240 real Hugging Face daily papers (../shared/data/hf_daily.jsonl.gz,
spread over March–August 2026) imported through the ingest service, embedded by the bundled model
(all-MiniLM-L6-v2, the torch backend: no calibration run) through the real indexing job, and grouped by
the real topics job — then /map, /topics, a topic page and a paper page, each checked and photographed
into ``test-artifacts/web_pages/`` (real-map.png, real-topics.png, real-topic.png, real-paper-place.png).

The layout is PCA: UMAP's first run in a process JIT-compiles for a minute or more, and these pictures
are about the pages (docs/topics.md measures the layouts). Any console error, page error or dialog fails.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from tests.support.browser import watch_problems
from tests.support.live_server import live_server
from tests.web_pages.conftest import artifacts  # noqa: F401  (session fixture, shared)

pytestmark = pytest.mark.slow
PAPERS = 240


@dataclass
class Real:
    url: str
    labels: dict[int, str]  # fine topic id -> label
    sizes: dict[int, int]
    every_label: set[str]  # both levels
    titles: dict[str, str]  # paper id -> title
    member: str  # a paper of the biggest fine topic


def _slice(hf_path: Path, out: Path) -> dict[str, str]:
    """Every n-th paper published from March to August 2026, ``PAPERS`` of them, as a JSONL file."""
    with gzip.open(hf_path, "rb") as fh:
        recent = [
            r for r in map(orjson.loads, fh) if "2026-03" <= str(r.get("published", ""))[:7] <= "2026-08"
        ]
    recent.sort(key=lambda r: r["id"])
    step = max(1, len(recent) // PAPERS)
    chosen = recent[::step][:PAPERS]
    out.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in chosen))
    return {r["id"]: r["title"] for r in chosen}


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory, hf_path: Path) -> Iterator[Real]:
    folder = tmp_path_factory.mktemp("real-topics")
    titles = _slice(hf_path, folder / "papers.jsonl")
    settings = Settings(
        data_dir=folder / "data", embedding_backend="torch", topics_layout="pca", topics_min_papers=100
    )
    app = build_app(settings)
    try:
        summary = app.sources.ingest.run(
            JsonlFileSource(folder / "papers.jsonl", batch_size=app.settings.batch_size)
        )
        assert summary.rejected == 0
        app.indexes.indexer.current().run()
        app.catalogue.topics.build()
        every = app.catalogue.topics.records.topics(level=None)
        fine = [t for t in every if t.level == 0]
        biggest = max(fine, key=lambda t: t.size)
        member = next(iter(sorted(app.catalogue.topics.records.memberships()[biggest.id])))
    finally:
        app.close()
    assert len(fine) >= 4, [t.label for t in fine]
    with live_server(settings) as url:
        labels = {t.id: t.label for t in fine}
        yield Real(url, labels, {t.id: t.size for t in fine}, {t.label for t in every}, titles, member)


def test_screenshots_of_real_topics(
    chromium_browser: Any,
    artifacts: Path,  # noqa: F811
    real: Real,
) -> None:
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    problems = watch_problems(page)
    try:
        page.goto(real.url + "/map")
        canvas = page.locator("canvas#map-canvas[data-ready='1']")
        canvas.wait_for()
        assert canvas.get_attribute("data-points") == str(PAPERS)
        assert int(canvas.get_attribute("data-labels")) >= 2
        drawn = page.evaluate("() => document.getElementById('map-canvas').paperMapLabels")
        assert {d["label"] for d in drawn} <= real.every_label
        page.screenshot(path=str(artifacts / "real-map.png"))

        page.goto(real.url + "/topics")
        rows = page.locator("table.topics-table tr", has=page.locator("a[href^='/topics/']"))
        assert rows.count() >= len(real.labels)
        for label in real.labels.values():
            assert page.get_by_text(label, exact=True).count() >= 1, label
        page.screenshot(path=str(artifacts / "real-topics.png"), full_page=True)

        biggest = max(real.sizes, key=lambda t: real.sizes[t])
        page.goto(f"{real.url}/topics/{biggest}")
        assert real.labels[biggest] in page.locator("h1").inner_text()
        plot = page.locator("svg.trend-plot")
        plot.wait_for()
        assert page.locator("svg.trend-plot rect.bar").count() > 0
        titles = page.locator("main").inner_text()
        assert sum(t in titles for t in real.titles.values()) >= 5  # its real papers are listed
        page.screenshot(path=str(artifacts / "real-topic.png"), full_page=True)

        page.goto(f"{real.url}/papers/{real.member}")
        assert " ".join(page.locator("h1").inner_text().split()) == " ".join(real.titles[real.member].split())
        place = page.locator("svg.place-map")
        place.wait_for()
        assert page.locator("p.topic-line a").first.inner_text() == real.labels[biggest]
        page.screenshot(path=str(artifacts / "real-paper-place.png"), full_page=True)
        page.locator("figure.place a[aria-label]").click()
        page.wait_for_url(re.compile(r"/map\?paper="))
        page.locator(f"canvas#map-canvas[data-focus='{real.member}']").wait_for()
    finally:
        context.close()
    assert problems == []
