"""What local upvotes cost the feeds: the same feed reads with no local votes, then with many.

Counts are counted when read (a correlated ``COUNT(*)`` per paper shown, see docs/community.md), so the
cost grows with the votes of the papers on a page. This imports the real Hugging Face daily papers
(``../shared/data/hf_daily.jsonl.gz``, ~10.6k papers) into a fresh SQLite store in a temporary folder,
times the feed reads, adds ``--votes`` random votes from ``--readers`` readers spread over the listed
papers, and times them again (p50 of ``--repeat`` runs; trending with its cache emptied each time)::

    .venv/bin/python -m bench.community_feeds
    .venv/bin/python -m bench.community_feeds --votes 1000000 --readers 20000
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert, select

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store.schema import listings
from paperfeed.adapters.store.schema_accounts import users
from paperfeed.adapters.store.schema_community import paper_upvotes
from paperfeed.bootstrap import App, build_app
from paperfeed.services.feed import FeedService
from paperfeed.settings import Settings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "hf_daily.jsonl.gz"


def _p50(call: Callable[[], object], repeat: int) -> float:
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _timings(feeds: FeedService, repeat: int) -> dict[str, float]:
    latest = feeds.latest_day()
    assert latest is not None
    month = f"{latest.year}-{latest.month:02d}"

    def trending() -> object:
        feeds._trend_cache.clear()
        return feeds.trending(limit=30)

    return {
        "day": _p50(lambda: feeds.day(latest), repeat),
        f"month {month}, all": _p50(lambda: feeds.month(month), repeat),
        f"month {month}, first 50": _p50(lambda: feeds.month(month, limit=50), repeat),
        "newest 50": _p50(lambda: feeds.recent(limit=50), repeat),
        "trending (uncached)": _p50(trending, repeat),
        "cache key (data_version)": _p50(feeds.queries.data_version, repeat),
    }


def _add_votes(app: App, votes: int, readers: int, seed: int) -> int:
    now = datetime.now(UTC)
    with app.core.store.engine.begin() as conn:
        conn.execute(
            insert(users), [{"email": f"reader{n}@example.org", "created_at": now} for n in range(readers)]
        )
        ids = sorted(conn.execute(select(users.c.id)).scalars())
        listed = sorted(conn.execute(select(listings.c.paper_id).distinct()).scalars())
        rng = random.Random(seed)
        pairs = {(rng.choice(listed), rng.choice(ids)) for _ in range(votes)}
        rows = [{"paper_id": p, "user_id": u, "created_at": now} for p, u in pairs]
        for start in range(0, len(rows), 50_000):
            conn.execute(insert(paper_upvotes), rows[start : start + 50_000])
    return len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SHARED, help="Hugging Face daily papers JSONL(.gz)")
    parser.add_argument("--votes", type=int, default=100_000)
    parser.add_argument("--readers", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="paperfeed-community-bench-") as folder:
        app = build_app(Settings(data_dir=Path(folder), embedding_backend="fake", keyword_engine="fts5"))
        try:
            summary = app.sources.ingest.run(JsonlFileSource(args.data, batch_size=app.settings.batch_size))
            print(f"{summary.added:,} papers, {summary.listings:,} listings")
            before = _timings(app.catalogue.feeds, args.repeat)
            made = _add_votes(app, args.votes, args.readers, args.seed)
            print(f"{made:,} local votes from {args.readers:,} readers")
            after = _timings(app.catalogue.feeds, args.repeat)
        finally:
            app.close()
    print(f"\n| read (p50, ms) | no local votes | {made:,} local votes |\n| --- | --- | --- |")
    for name, value in before.items():
        print(f"| {name} | {value:.2f} | {after[name]:.2f} |")


if __name__ == "__main__":
    main()
