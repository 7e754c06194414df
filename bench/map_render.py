"""The map page (issue #17) with N papers (default 200,000) in a real browser: payload, first render, frames.

No 200k-paper store with topics exists on this machine, so the points are **synthetic**: N papers written
straight into the tables of a fresh SQLite store (minimal rows: id, title, a date over 3 years, one of 40
categories), laid out as 150 Gaussian blobs (fine topics) grouped into 12 coarse topics (``level`` 1), as
a topic build would leave them. Then the real app is served by uvicorn on loopback and Debian chromium
(Playwright, headless, ``--disable-gpu``: software rendering) opens ``/map``.

Measured:

* the ``/api/map/points`` answer: bytes (binary and the columnar JSON form) and server time (first
  request, before the public cache keeps it);
* **time to first render**: from navigation start to the end of the first drawn frame (the page records
  ``performance.now()`` when it has drawn; fetch, decode and draw included);
* **interaction frames**: a drag of 60 steps (pan) and 30 wheel steps (zoom) driven through the
  browser's input pipeline; for each, the page's own render times (JavaScript, per frame) and the
  intervals between ``requestAnimationFrame`` callbacks while it runs (what a reader sees as smoothness).

``--screenshots DIR`` also writes ``map.png`` (the map) and ``paper-map.png`` (a paper page's small map).

    nice -n 5 .venv/bin/python -m bench.map_render [--papers 200000] [--screenshots docs/img]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import insert

FINE, COARSE, CATEGORIES = 150, 12, 40
WORDS = [
    "graph",
    "neural",
    "network",
    "protein",
    "folding",
    "galaxy",
    "cluster",
    "language",
    "model",
    "diffusion",
    "image",
    "speech",
    "robot",
    "quantum",
    "circuit",
    "reinforcement",
    "learning",
    "dark",
    "matter",
    "causal",
    "inference",
    "optimisation",
    "kernel",
    "sparse",
    "retrieval",
    "vision",
    "transformer",
    "molecule",
    "climate",
]


def build_store(data_dir: Path, n: int, seed: int = 0) -> dict[str, Any]:
    """A fresh store with ``n`` synthetic placed papers and two levels of topics; returns a few ids."""
    from paperfeed.adapters.store.schema import papers
    from paperfeed.adapters.store.schema_topics import topic_builds, topic_papers, topics
    from paperfeed.bootstrap import build_app
    from paperfeed.settings import Settings

    rng = np.random.default_rng(seed)
    app = build_app(Settings(data_dir=data_dir, embedding_backend="fake"))
    engine = app.core.store.engine
    parents = rng.integers(0, COARSE, FINE)
    coarse_xy = rng.uniform(-10, 10, (COARSE, 2))
    fine_xy = coarse_xy[parents] + rng.normal(0, 1.6, (FINE, 2))
    sizes = rng.dirichlet(np.full(FINE, 2.0)) * n
    member = rng.choice(FINE, size=n, p=sizes / sizes.sum())
    xy = fine_xy[member] + rng.normal(0, 0.45, (n, 2))
    start = datetime(2023, 1, 1, tzinfo=UTC)
    days = rng.integers(0, 3 * 365, n)
    cats = rng.integers(0, CATEGORIES, n)
    now = datetime.now(UTC)
    ids = [f"{23 + i // 100_000:02d}01.{i % 100_000:05d}" for i in range(n)]  # valid, unique arXiv ids
    label = {t: " ".join(rng.choice(WORDS, 3, replace=False)) for t in range(FINE + COARSE)}
    with engine.begin() as conn:
        chunk = 5000
        for s in range(0, n, chunk):
            conn.execute(
                insert(papers),
                [
                    {
                        "id": ids[i],
                        "title": f"A synthetic study of {label[int(member[i])]} no. {i}",
                        "abstract": "",
                        "authors": [],
                        "categories": [f"cat.{int(cats[i])}"],
                        "primary_category": f"cat.{int(cats[i])}",
                        "published": start + timedelta(days=int(days[i])),
                        "ai_keywords": [],
                        "sources": {},
                        "content_hash": "0",
                        "created_at": now,
                        "modified_at": now,
                    }
                    for i in range(s, min(n, s + chunk))
                ],
            )
        centroid = np.zeros(4, dtype="<f4").tobytes()
        rows: list[dict[str, Any]] = [
            {
                "id": FINE + c + 1,
                "label": label[FINE + c],
                "words": [],
                "size": int((parents == c).sum()),
                "representatives": [],
                "centroid": centroid,
                "x": float(coarse_xy[c, 0]),
                "y": float(coarse_xy[c, 1]),
                "level": 1,
                "parent_id": None,
            }
            for c in range(COARSE)
        ]
        rows += [
            {
                "id": t + 1,
                "label": label[t],
                "words": [],
                "size": int((member == t).sum()),
                "representatives": [],
                "centroid": centroid,
                "x": float(fine_xy[t, 0]),
                "y": float(fine_xy[t, 1]),
                "level": 0,
                "parent_id": FINE + int(parents[t]) + 1,
            }
            for t in range(FINE)
        ]
        conn.execute(insert(topics), rows)
        for s in range(0, n, chunk):
            conn.execute(
                insert(topic_papers),
                [
                    {
                        "paper_id": ids[i],
                        "topic_id": int(member[i]) + 1,
                        "similarity": 0.5,
                        "x": float(xy[i, 0]),
                        "y": float(xy[i, 1]),
                    }
                    for i in range(s, min(n, s + chunk))
                ],
            )
        conn.execute(
            insert(topic_builds).values(
                generation=1,
                built_at=now,
                model_id="synthetic",
                method="synthetic blobs",
                papers=n,
                topics=FINE,
                noise=0,
                next_topic_id=FINE + COARSE + 1,
            )
        )
    app.close()
    return {"paper": ids[n // 2]}


def summary(values: list[float]) -> str:
    if not values:
        return "n/a"
    q = statistics.quantiles(values, n=20) if len(values) > 1 else [values[0]] * 19
    median = statistics.median(values)
    return f"median {median:6.2f} ms, p95 {q[18]:6.2f} ms, max {max(values):6.2f} ms (n={len(values)})"


RAF_PROBE = """() => {
  const marks = [];
  let on = true;
  function tick(t) { marks.push(t); if (on) requestAnimationFrame(tick); }
  requestAnimationFrame(tick);
  document.getElementById('map-canvas').rafProbe = { marks: marks, stop: () => { on = false; } };
}"""


def intervals(page: Any) -> list[float]:
    marks: list[float] = page.evaluate(
        "() => { const p = document.getElementById('map-canvas').rafProbe; p.stop(); return p.marks; }"
    )
    return [b - a for a, b in itertools.pairwise(marks)]


def renders_since(page: Any, start: int) -> list[float]:
    out: list[float] = page.evaluate(
        f"() => document.getElementById('map-canvas').paperMapStats.renders.slice({start})"
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--papers", type=int, default=200_000)
    parser.add_argument("--screenshots", type=Path, default=None)
    args = parser.parse_args()

    import httpx
    from playwright.sync_api import sync_playwright
    from tests.support.browser import CHROMIUM_ARGS
    from tests.support.live_server import live_server

    from paperfeed.adapters.embed.cpu import cpu_info
    from paperfeed.settings import Settings

    print(f"CPU: {cpu_info().describe()}; {os.cpu_count()} cores; nice {os.getpriority(os.PRIO_PROCESS, 0)}")
    print(f"load average at start: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed (scripts/ensure-browser)")
    with tempfile.TemporaryDirectory(prefix="map-bench-") as tmp:
        data_dir = Path(tmp)
        t0 = time.perf_counter()
        ids = build_store(data_dir, args.papers)
        print(
            f"synthetic store: {args.papers:,} placed papers, {FINE} fine + {COARSE} coarse topics, "
            f"written in {time.perf_counter() - t0:.1f} s"
        )
        with live_server(Settings(data_dir=data_dir, embedding_backend="fake")) as url:
            with httpx.Client(base_url=url, timeout=120) as http:
                t = time.perf_counter()
                binary = http.get("/api/map/points")
                first_ms = (time.perf_counter() - t) * 1e3
                t = time.perf_counter()
                again = http.get("/api/map/points")
                cached_ms = (time.perf_counter() - t) * 1e3
                as_json = http.get("/api/map/points", params={"format": "json"})
                title = http.get("/api/map/titles", params={"ids": ids["paper"]})
                paper = http.get(f"/api/papers/{ids['paper']}")
            assert binary.status_code == 200
            assert again.headers.get("x-paperfeed-cache") == "hit"
            print(
                f"/api/map/points binary: {len(binary.content):,} bytes "
                f"({len(binary.content) / args.papers:.1f} B/point); server {first_ms:.0f} ms uncached, "
                f"{cached_ms:.0f} ms from the public cache"
            )
            print(
                f"/api/map/points?format=json: {len(as_json.content):,} bytes "
                f"({len(as_json.content) / args.papers:.1f} B/point)"
            )
            print(
                f"hover title: /api/map/titles {len(title.content)} bytes; "
                f"/api/papers/{{id}} {len(paper.content)} bytes"
            )
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                page = context.new_page()
                errors: list[str] = []
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                firsts = []
                for _ in range(3):
                    page.goto(url + "/map")
                    page.locator("canvas#map-canvas[data-ready='1']").wait_for(timeout=120_000)
                    firsts.append(
                        page.evaluate("() => document.getElementById('map-canvas').paperMapStats.firstRender")
                    )
                canvas = page.locator("canvas#map-canvas")
                drawn = canvas.get_attribute("data-drawn")
                print(
                    f"time to first render (navigation start → first frame drawn): "
                    f"{', '.join(f'{v:.0f}' for v in firsts)} ms (3 loads; the first misses the server cache)"
                )
                print(f"points drawn: {drawn}; first frame render {renders_since(page, 0)[0]:.1f} ms")
                box = canvas.bounding_box()
                assert box is not None
                cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
                n0 = len(renders_since(page, 0))
                page.evaluate(RAF_PROBE)
                page.mouse.move(cx, cy)
                page.mouse.down()
                for i in range(60):
                    page.mouse.move(cx + 4 * i, cy + 2 * i)
                page.mouse.up()
                pan_raf = intervals(page)
                pan_render = renders_since(page, n0)
                n1 = n0 + len(pan_render)
                page.evaluate(RAF_PROBE)
                for i in range(30):
                    page.mouse.wheel(0, -120 if i < 20 else 120)
                page.wait_for_timeout(100)
                zoom_raf = intervals(page)
                zoom_render = renders_since(page, n1)
                print(f"pan  (60 drag steps): render {summary(pan_render)}")
                print(f"                      rAF interval {summary(pan_raf)}")
                print(f"zoom (30 wheel steps): render {summary(zoom_render)}")
                print(f"                      rAF interval {summary(zoom_raf)}")
                if args.screenshots:
                    args.screenshots.mkdir(parents=True, exist_ok=True)
                    page.set_viewport_size({"width": 1000, "height": 760})
                    page.goto(url + "/map")
                    page.locator("canvas#map-canvas[data-ready='1']").wait_for(timeout=120_000)
                    page.locator(".paper-map").screenshot(path=str(args.screenshots / "map.png"))
                    page.goto(url + f"/papers/{ids['paper']}", timeout=180_000)
                    page.locator("figure.place").screenshot(path=str(args.screenshots / "paper-map.png"))
                    print(
                        f"screenshots: {args.screenshots / 'map.png'}, {args.screenshots / 'paper-map.png'}"
                    )
                browser.close()
            if errors:
                raise SystemExit(f"console errors: {errors}")


if __name__ == "__main__":
    main()
