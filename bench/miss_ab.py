"""Page-cache misses before and after the issue #19 miss-cost changes, in ONE process, alternating the old
and new code URL by URL (and text by text), so both see the same machine load; ratios are what count.

The old code paths are kept here (copies of what the functions were before) and swapped in by patching:
``tex.segments`` (a loop over every character; used by the page markup and BibTeX), ``author_search_url``
(``urlencode`` per call, no cache; a Jinja global) and the tantivy highlighter's token-by-token loop
over a fresh analysis of each text.
Every new answer is checked equal to the old one (bodies byte for byte, spans and URLs exactly).

1. Functions: each over the real titles, abstracts, authors and load-bench queries of the store.
2. Routes: the anonymous URLs ``bench/load.py`` draws (as ``bench/miss_profile.py`` does), each rendered
   with the page cache off, old then new or new then old at random; CPU ms per route kind.

    nice -n 5 .venv/bin/python -m bench.miss_ab --data /tmp/s8-miss/data [--requests 300]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio.to_thread
from sqlalchemy import select

from bench.load import inputs, settings_for
from bench.miss_profile import Driver, _inline, draw_urls, route_kind
from paperfeed.adapters.embed.cpu import cpu_info
from paperfeed.adapters.keyword import tantivy_query
from paperfeed.adapters.keyword.folding import fold
from paperfeed.adapters.store.schema import papers
from paperfeed.bootstrap import build_app
from paperfeed.domain import citation, tex
from paperfeed.domain.query import parse_query
from paperfeed.domain.search import ParsedQuery, Span
from paperfeed.web import markup, views
from paperfeed.web.app import create_app


def old_segments(text: str) -> list[tex.Segment]:
    out: list[tex.Segment] = []
    plain_from = 0
    i = 0
    n = len(text)
    while i < n:
        if text[i] != "$" or (i > 0 and text[i - 1] == "\\"):
            i += 1
            continue
        delim = "$$" if text.startswith("$$", i) else "$"
        end = tex._closing(text, i, delim)
        if end < 0:
            i += len(delim)
            continue
        if plain_from < i:
            out.append(tex.Segment(plain_from, i, text[plain_from:i]))
        stop = end + len(delim)
        out.append(tex.Segment(i, stop, text[i:stop], text[i + len(delim) : end], delim == "$$"))
        plain_from = i = stop
    if plain_from < n:
        out.append(tex.Segment(plain_from, n, text[plain_from:]))
    return out


def old_author_search_url(name: str) -> str:
    return "/search?" + urlencode({"q": f'author:"{name}"'})


def old_highlight(self: tantivy_query.TantivyQueries, query: ParsedQuery, text: str) -> list[Span]:
    if not text:
        return []
    singles, sequences = self.highlight_terms(query)
    tokens = self._analyzer.pre_tokenize(fold(text, "latin")).tokens
    stems = [t.text for t in tokens]
    marked = [stem in singles for stem in stems]
    for seq in sequences:
        n, first = len(seq), seq[0]
        for i, stem in enumerate(stems):
            if stem == first and tuple(stems[i : i + n]) == seq:
                marked[i : i + n] = [True] * n
    spans: list[Span] = []
    for i, token in enumerate(tokens):
        if not marked[i]:
            continue
        start, end = token.char_offset_from, token.char_offset_to
        if spans and i > 0 and marked[i - 1] and tantivy_query._joined(text, spans[-1].end, start):
            spans[-1] = Span(spans[-1].start, end)
        else:
            spans.append(Span(start, end))
    return spans


NEW: dict[str, Any] = {
    "segments": markup.segments,
    "author_search_url": views.author_search_url,
    "highlight": tantivy_query.TantivyQueries.highlight,
}


@contextlib.contextmanager
def old_code(web: Any) -> Iterator[None]:
    """The old functions in every place the pages reach them; the new ones back afterwards."""
    env = web.state.renderer.env
    markup.segments = old_segments
    setattr(citation, "segments", old_segments)  # noqa: B010  # imported there by name
    views.author_search_url = old_author_search_url  # type: ignore[assignment]
    env.globals["author_search_url"] = old_author_search_url
    tantivy_query.TantivyQueries.highlight = old_highlight  # type: ignore[method-assign]
    try:
        yield
    finally:
        markup.segments = NEW["segments"]
        setattr(citation, "segments", NEW["segments"])  # noqa: B010
        views.author_search_url = NEW["author_search_url"]
        env.globals["author_search_url"] = NEW["author_search_url"]
        tantivy_query.TantivyQueries.highlight = NEW["highlight"]  # type: ignore[method-assign]


def ab(
    label: str, items: list[Any], old: Callable[[Any], Any], new: Callable[[Any], Any], rounds: int
) -> None:
    """CPU of ``old`` and ``new`` over ``items``, alternating round by round; answers checked equal."""
    spent: dict[str, list[float]] = {"old": [], "new": []}
    for r in range(rounds):
        order = [("old", old), ("new", new)] if r % 2 == 0 else [("new", new), ("old", old)]
        answers = {}
        for name, fn in order:
            c0 = time.process_time()
            answers[name] = [fn(x) for x in items]
            spent[name].append(time.process_time() - c0)
        if answers["old"] != answers["new"]:
            raise SystemExit(f"{label}: the new code answers differently")
    o, n = statistics.median(spent["old"]), statistics.median(spent["new"])
    per = 1e6 / len(items)
    print(f"  {label:44s} old {o * per:8.2f} µs  new {n * per:8.2f} µs  new/old {n / o:5.2f}")


def functions(web: Any, data: Path, rounds: int) -> None:
    container = web.state.container
    with container.core.store.engine.connect() as conn:
        rows = conn.execute(select(papers.c.title, papers.c.abstract, papers.c.authors).limit(2000)).all()
    texts = [t for r in rows for t in (r.title or "", r.abstract or "")]
    names = [str(a) for r in rows for a in (r.authors or [])]
    print(f"functions: {len(texts)} texts, {len(names)} author names; median of {rounds} rounds")
    ab("tex.segments (titles and abstracts)", texts, old_segments, NEW["segments"], rounds)
    views.author_search_url.cache_clear()
    ab(
        "author_search_url (cache filled in round 1)",
        names,
        old_author_search_url,
        views.author_search_url,
        rounds,
    )
    queries_obj = container.search.keyword.queries
    inp = inputs(data, None, random.Random(3), 100)
    qs = [parse_query(q) for q in inp.queries[:20]]
    pairs = [(q, t) for q in qs for t in texts[:400]]
    ab(
        f"tantivy highlight ({len(qs)} queries x 400 texts; kept analyses)",
        pairs,
        lambda p: old_highlight(queries_obj, *p),
        lambda p: NEW["highlight"](queries_obj, *p),
        rounds,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a prepared load-bench data folder")
    parser.add_argument("--requests", type=int, default=300, help="requests drawn (then made distinct)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each function comparison")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    settings = settings_for(args.data, None).model_copy(update={"page_cache_mb": 0})
    inp = inputs(args.data, None, random.Random(args.seed), 500)
    inp.zipf = 1.0
    urls = draw_urls(inp, args.requests, args.seed + 1)
    anyio.to_thread.run_sync = _inline  # type: ignore[assignment]  # CPU of the handler counted here
    web = create_app(lambda: build_app(settings))
    print(
        f"CPU: {cpu_info().describe()}; nice {os.getpriority(os.PRIO_PROCESS, 0)}; load "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )

    async def run() -> None:
        async with web.router.lifespan_context(web) as state:
            web.state.container = dict(state or {})["app"]
            functions(web, args.data, args.rounds)
            driver = Driver(web, dict(state or {}))
            for url in urls[:30]:  # warm: indexes opened, templates compiled, both code paths
                await driver.get(url)
                with old_code(web):
                    await driver.get(url)
            rng = random.Random(args.seed)
            cpu: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"old": [], "new": []})
            for url in urls:
                bodies = {}
                for name in rng.sample(["old", "new"], 2):
                    c0 = time.process_time()
                    if name == "old":
                        with old_code(web):
                            status, body = await driver.get(url)
                    else:
                        status, body = await driver.get(url)
                    cpu[route_kind(url)][name].append((time.process_time() - c0) * 1000)
                    bodies[name] = (status, body)
                if bodies["old"] != bodies["new"]:
                    raise SystemExit(f"{url}: the new code answers differently")
            print(f"routes: {len(urls)} distinct URLs, each old and new in random order, bodies equal")
            print(f"  {'kind':<12}{'misses':>7}{'old ms':>9}{'new ms':>9}{'new/old':>9}   (mean CPU a miss)")
            total = {"old": 0.0, "new": 0.0}
            for kind, spent in sorted(cpu.items(), key=lambda kv: -sum(kv[1]["old"])):
                o, n = statistics.fmean(spent["old"]), statistics.fmean(spent["new"])
                total["old"] += sum(spent["old"])
                total["new"] += sum(spent["new"])
                print(f"  {kind:<12}{len(spent['old']):>7}{o:>9.2f}{n:>9.2f}{n / o:>9.2f}")
            print(f"  all misses: new/old {total['new'] / total['old']:.3f}; load {os.getloadavg()[0]:.1f}")

    asyncio.run(run())


if __name__ == "__main__":
    main()
