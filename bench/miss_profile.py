"""Where a page-cache miss goes: the anonymous URLs ``bench/load.py`` asks for, each rendered once in this
process with the page cache off, timed (CPU) and profiled (cProfile) per route kind (issue #19).

The app runs in this process and is called as ASGI directly (no socket, no HTTP client); the handlers'
thread-pool hops run inline so cProfile sees them. The URLs are drawn exactly as ``bench/load.py`` draws
its anonymous mix (same ``--seed``, ``--sample`` and Zipf popularity) and each distinct URL is asked once
after a warm-up pass over ``--warm`` other ones (indexes opened, templates compiled). A copy of the load
bench's prepared store is used (``--data``; it is only read).

    nice -n 19 .venv/bin/python -m bench.miss_profile --data /tmp/s8-miss/data [--requests 1500]
        [--top 25] [--kinds search-api,paper-html]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread

from bench.load import Inputs, inputs, request_for, settings_for
from paperfeed.adapters.embed.cpu import cpu_info
from paperfeed.bootstrap import build_app
from paperfeed.web.app import create_app

KINDS = {"search": 30, "feed": 25, "paper": 30}


def route_kind(url: str) -> str:
    """A short name for the route family of a load-bench URL."""
    path = url.split("?", 1)[0]
    if path == "/api/papers/search":
        return "search-api"
    if path == "/search":
        return "search-html"
    if path == "/api/daily_papers":
        return "day-api"
    if path == "/":
        return "day-html" if "date=" in url else "home"
    if path == "/trending":
        return "trending"
    if path.startswith("/api/papers/"):
        return "paper-api"
    return "paper-html"


def draw_urls(inp: Inputs, count: int, seed: int) -> list[str]:
    """``count`` anonymous requests as the load bench draws them, distinct URLs in first-seen order."""
    rng = random.Random(seed)
    kinds, weights = list(KINDS), list(KINDS.values())
    seen: dict[str, None] = {}
    for _ in range(count):
        kind = rng.choices(kinds, weights)[0]
        seen.setdefault(request_for(kind, rng, inp, None)[1], None)
    return list(seen)


async def _inline(func: Callable[..., Any], *args: Any, **_: Any) -> Any:
    return func(*args)


class Driver:
    """Calls the ASGI app in this process: one GET, its status and body."""

    def __init__(self, web: Any, state: dict[str, Any]) -> None:
        self.web, self.state = web, state

    async def get(self, url: str) -> tuple[int, bytes]:
        path, _, query = url.partition("?")
        accept = b"application/json" if path.startswith("/api/") else b"text/html"
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": query.encode(),
            "headers": [(b"host", b"127.0.0.1"), (b"accept", accept)],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80),
            "state": dict(self.state),
        }
        status, chunks = 0, []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.web(scope, receive, send)
        return status, b"".join(chunks)


def top_lines(prof: cProfile.Profile, count: int) -> str:
    """The ``count`` costliest functions by cumulative CPU, below the ASGI/middleware chain (>= 90 %)."""
    stats = pstats.Stats(prof)
    entries = stats.stats  # type: ignore[attr-defined]
    total = max(ct for (_cc, _nc, _tt, ct, _callers) in entries.values())
    rows = sorted(entries.items(), key=lambda kv: -kv[1][3])
    out = []
    for (path, line, name), (_cc, calls, tottime, cumtime, _callers) in rows:
        if cumtime >= 0.9 * total or name == "_inline" or "run_in_threadpool" in name:
            continue
        short = path.split("site-packages/")[-1].split("src/")[-1]
        share = 100 * cumtime / total
        out.append(f"{cumtime:8.3f} {share:5.1f}% {tottime:7.3f} {calls:7d}  {short}:{line}({name})")
        if len(out) >= count:
            break
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a prepared load-bench data folder")
    parser.add_argument("--requests", type=int, default=1500, help="requests drawn (then made distinct)")
    parser.add_argument("--warm", type=int, default=40, help="URLs of another draw asked first, not timed")
    parser.add_argument("--sample", type=int, default=500)
    parser.add_argument("--zipf", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--top", type=int, default=22)
    parser.add_argument("--kinds", default="", help="only these route kinds (comma-separated)")
    parser.add_argument("--dump", type=Path, default=None, help="write each kind's profile to DUMP/KIND.prof")
    parser.add_argument("--no-profile", action="store_true", help="time only (cProfile adds ~2x)")
    args = parser.parse_args()
    os.environ["PAPERFEED_PAGE_CACHE_MB"] = "0"  # every request a miss
    settings = settings_for(args.data, None).model_copy(update={"page_cache_mb": 0})
    inp = inputs(args.data, None, random.Random(args.seed), args.sample)
    inp.zipf = args.zipf
    urls = draw_urls(inp, args.requests, args.seed + 1)
    warm = [u for u in draw_urls(inp, args.warm * 4, args.seed + 2) if u not in set(urls)][: args.warm]
    wanted = set(filter(None, args.kinds.split(",")))
    urls = [u for u in urls if not wanted or route_kind(u) in wanted]
    anyio.to_thread.run_sync = _inline  # type: ignore[assignment]  # handlers run where cProfile looks
    web = create_app(lambda: build_app(settings))

    async def run() -> None:
        async with web.router.lifespan_context(web) as state:
            driver = Driver(web, dict(state or {}))
            for url in warm:
                await driver.get(url)
            cpu: dict[str, list[float]] = defaultdict(list)
            profiles: dict[str, cProfile.Profile] = defaultdict(lambda: cProfile.Profile(time.process_time))
            for url in urls:
                kind = route_kind(url)
                prof = None if args.no_profile else profiles[kind]
                c0 = time.process_time()
                if prof is not None:
                    prof.enable()
                status, _ = await driver.get(url)
                if prof is not None:
                    prof.disable()
                cpu[kind].append((time.process_time() - c0) * 1000)
                if status != 200:
                    print(f"  {status} {url}", file=sys.stderr)
            print(
                f"CPU: {cpu_info().describe()}; nice {os.getpriority(os.PRIO_PROCESS, 0)}; load "
                f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {len(urls)} distinct URLs of "
                f"{args.requests} drawn; {'profiled (cProfile inflates times)' if prof else 'not profiled'}"
            )
            print(f"{'kind':<12}{'misses':>7}{'mean ms':>9}{'p50 ms':>8}{'total s':>9}")
            for kind, times in sorted(cpu.items(), key=lambda kv: -sum(kv[1])):
                ordered = sorted(times)
                print(
                    f"{kind:<12}{len(times):>7}{sum(times) / len(times):>9.2f}"
                    f"{ordered[len(ordered) // 2]:>8.2f}{sum(times) / 1000:>9.2f}"
                )
            for kind, prof in profiles.items():
                print(f"\n===== {kind}: CPU s, cumulative (the wrapper chain above the handler left out)")
                print(top_lines(prof, args.top))
                if args.dump is not None:
                    args.dump.mkdir(parents=True, exist_ok=True)
                    prof.dump_stats(args.dump / f"{kind}.prof")

    asyncio.run(run())


if __name__ == "__main__":
    main()
