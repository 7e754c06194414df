"""What mute rules cost the day page, on a store of 200,000 papers (issue #34: goal < 10 %).

A synthetic SQLite store (built once into ``--data-dir``, reused after): ``--papers`` papers with five
authors, two categories and an abstract each, 100 of them listed on every day. Two signed-in readers ask
for the same day page through the real app (Starlette's TestClient, in this process): one with no mute
rule, one with ``--rules`` rules (authors, categories and words, a third each) that match none of the
day's papers — the worst case, as every card is still checked and still rendered. Requests alternate
between the two readers so both see the same machine; the script prints the median and mean wall time
and the CPU time of each, the ratio, and this machine's CPU flags.

    .venv/bin/python -m bench.mute_cost [--papers 200000] [--requests 300] [--rules 30]
        [--data-dir /work/bench-cache/mute-200k]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.security import SESSION_COOKIE

FIRST_DAY = date(2020, 1, 6)
PER_DAY = 100
WORDS = [
    "graph",
    "neural",
    "network",
    "diffusion",
    "transformer",
    "attention",
    "protein",
    "galaxy",
    "lattice",
    "quantum",
    "gauge",
    "string",
    "sparse",
    "dense",
    "kernel",
    "spectral",
    "manifold",
    "tensor",
    "causal",
    "robust",
    "federated",
    "contrastive",
    "generative",
]
CATEGORIES = ("cs.LG", "cs.CL", "cs.CV", "stat.ML", "math.OC", "hep-th", "astro-ph.GA", "q-bio.NC")


def _paper(n: int, rng: random.Random) -> Paper:
    day = FIRST_DAY + timedelta(days=n // PER_DAY)
    title = " ".join(rng.choice(WORDS) for _ in range(8)).capitalize()
    abstract = " ".join(rng.choice(WORDS) for _ in range(120)) + "."
    return Paper(
        id=f"{2000 + n // 100_000:04d}.{n % 100_000:05d}",
        title=title,
        abstract=abstract,
        authors=tuple(f"Author{rng.randrange(40_000)} Surname{rng.randrange(900)}" for _ in range(5)),
        categories=tuple(rng.sample(CATEGORIES, 2)),
        published=datetime.combine(day, datetime.min.time(), UTC),
        upvotes=rng.randrange(50),
        sources={"bench": "synthetic"},
    )


def build(app: App, papers: int) -> date:
    """Fill the store once (a marker file says it is done); the last listed day."""
    marker = app.settings.data_dir / f"built-{papers}"
    last = FIRST_DAY + timedelta(days=(papers - 1) // PER_DAY)
    if marker.exists():
        return last
    rng = random.Random(34)
    started = time.perf_counter()
    for start in range(0, papers, 5000):
        batch = [_paper(n, rng) for n in range(start, min(papers, start + 5000))]
        listings = [
            Listing(
                p.published.date() if p.published else FIRST_DAY,
                p.id,
                "bench",
                p.upvotes or 0,
                rank=i % PER_DAY,
            )
            for i, p in enumerate(batch, start)
        ]
        app.core.store.apply_batch(Batch(papers=batch, listings=listings))
    marker.write_text("done")
    print(f"built {papers:,} papers in {time.perf_counter() - started:.0f} s")
    return last


def _reader(app: App, email: str) -> tuple[int, str]:
    if app.readers.accounts.store.user_by_email(email) is None:
        app.readers.accounts.sign_up(email, None, None, client="bench", base_url="http://bench")
    user = app.readers.accounts.user_by_email(email)
    return user.id, app.readers.accounts.create_session(user).session


def cpu_flags() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    flags = next(
        (line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []
    )
    return " ".join(sorted(f for f in flags if f.startswith("avx"))) or "no avx"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=200_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rules", type=int, default=30)
    parser.add_argument("--data-dir", type=Path, default=Path("/work/bench-cache/mute-200k"))
    args = parser.parse_args(argv)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    settings = Settings(data_dir=args.data_dir, embedding_backend="fake", keyword_engine="fts5")
    app = build_app(settings)
    try:
        last = build(app, args.papers)
        plain_id, plain = _reader(app, "plain@bench.example")
        muter_id, muter = _reader(app, "muter@bench.example")
        for rule in app.readers.mutes.rules(muter_id):
            app.readers.mutes.remove(muter_id, rule.kind, rule.value)
        kinds = ("author", "category", "word")
        values = {
            "author": [f"Nobody Known{i}" for i in range(args.rules)],
            "category": [f"xx.{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}" for i in range(args.rules)],
            "word": [f"zzword{i}" for i in range(args.rules)],
        }
        for i in range(args.rules):
            kind = kinds[i % 3]
            app.readers.mutes.add(muter_id, kind, values[kind][i])
        assert not app.readers.mutes.rules(plain_id)
        path = f"/papers/date/{last.isoformat()}"
        times: dict[str, list[float]] = {"no rules": [], f"{args.rules} rules": []}
        cpu: dict[str, float] = dict.fromkeys(times, 0.0)
        with TestClient(create_app(lambda: build_app(settings))) as client:
            sessions = {"no rules": plain, f"{args.rules} rules": muter}
            for session in sessions.values():  # warm both (templates, caches)
                client.cookies.set(SESSION_COOKIE, session)
                for _ in range(5):
                    assert client.get(path, headers={"accept": "text/html"}).status_code == 200
            bodies = {}
            for i in range(args.requests * 2):
                name = list(sessions)[i % 2]
                client.cookies.set(SESSION_COOKIE, sessions[name])
                c0, t0 = time.process_time(), time.perf_counter()
                reply = client.get(path, headers={"accept": "text/html"})
                times[name].append(time.perf_counter() - t0)
                cpu[name] += time.process_time() - c0
                assert reply.status_code == 200
                bodies[name] = reply.text.count('class="card')
        print(f"store: {args.papers:,} papers; day page {path} ({PER_DAY} papers)")
        print(f"{args.requests} requests per reader, alternating")
        print(f"cards rendered: {bodies}")
        base_name, mute_name = list(times)
        for name, values_ in times.items():
            ms = [v * 1000 for v in values_]
            print(
                f"{name:>10}: median {statistics.median(ms):6.2f} ms, mean {statistics.fmean(ms):6.2f} ms, "
                f"CPU {cpu[name] / len(ms) * 1000:6.2f} ms/request"
            )
        ratio = statistics.median(times[mute_name]) / statistics.median(times[base_name])
        cpu_ratio = cpu[mute_name] / cpu[base_name]
        cost = f"median {100 * (ratio - 1):+.1f} %, CPU {100 * (cpu_ratio - 1):+.1f} %"
        print(f"cost of {args.rules} mute rules: {cost}")
        print(f"CPU flags: {cpu_flags()}")
    finally:
        app.close()


if __name__ == "__main__":
    main()
