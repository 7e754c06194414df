"""Digests for 10,000 subscribers over the real data: time to compose them all, and the send rate.

The real Hugging Face Daily Papers (../shared/data/hf_daily.jsonl.gz, ~10.6k papers with listings) and
the arXiv category sample are imported once into a cached data folder outside the repo. Then, in a fresh
copy of its database:

1. ``--subscribers`` active subscriptions are written in one transaction: every cadence, 24 send hours,
   a dozen time zones, trending and/or categories drawn from the papers' own categories, caps 10-30;
2. compose: ``DigestService.compose_due`` for all of them (goal ≤ 60 s for 10,000) — every due digest is
   composed and written to the send ledger with its papers;
3. send: ``DigestService.send_pending`` over one SMTP connection to an aiosmtpd server running in another
   process on loopback (its Sink handler accepts and drops), ``--send`` messages (goal ≥ 100 messages/s),
   each rendered from the templates and recorded in the ledger (pending → sending → handed → sent).

    .venv/bin/python bench/digest.py [--subscribers 10000] [--send 3000]
        [--data-dir /work/bench-cache/digest-data]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import func, insert, select

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store.schema import papers
from paperfeed.adapters.store.schema_digests import digest_subscriptions
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.digest import Cadence, Section
from paperfeed.settings import Settings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FILES = ["hf_daily.jsonl.gz", "arxiv_cats.jsonl.gz"]
DEFAULT_DIR = Path("/work/bench-cache/digest-data")
READY = ".digest-bench-ready"
ZONES = [
    "UTC",
    "Europe/Berlin",
    "Europe/London",
    "America/New_York",
    "America/Los_Angeles",
    "America/Sao_Paulo",
    "Asia/Tokyo",
    "Asia/Shanghai",
    "Asia/Kolkata",
    "Australia/Sydney",
    "Africa/Lagos",
    "Pacific/Auckland",
]
SECRET = "bench-digest-secret-0123456789abcdefghijkl"


def settings_for(data_dir: Path, port: int | None = None) -> Settings:
    values: dict[str, object] = {
        "data_dir": data_dir,
        "database_url": None,
        "embedding_backend": "fake",
        "keyword_engine": "fts5",
        "base_url": "https://papers.example.org",
        "secret_key": SECRET,
        "mail_from": "paperfeed <digest@papers.example.org>",
    }
    if port is not None:
        values.update(smtp_host="127.0.0.1", smtp_port=port, smtp_security="none", smtp_timeout=30.0)
    return Settings(**values)  # type: ignore[arg-type]


def prepare(cache: Path) -> None:
    """Import the real files once (by the real import code) into ``cache``."""
    if (cache / READY).exists():
        return
    shutil.rmtree(cache, ignore_errors=True)
    app = build_app(settings_for(cache))
    try:
        for name in FILES:
            started = time.perf_counter()
            summary = app.sources.ingest.run(
                JsonlFileSource(SHARED / name, batch_size=app.settings.batch_size)
            )
            print(f"imported {name}: {summary.added:,} papers in {time.perf_counter() - started:.1f} s")
    finally:
        app.close()
    (cache / READY).touch()


def add_subscribers(app: App, count: int, rng: random.Random) -> Counter[str]:
    with app.core.store.engine.connect() as conn:
        cats = Counter(c for (row,) in conn.execute(select(papers.c.categories)) for c in row)
    popular = [c for c, _ in cats.most_common(40)]
    weights = [cats[c] for c in popular]
    long_ago = datetime(2020, 1, 1, tzinfo=UTC)
    rows = []
    kinds: Counter[str] = Counter()
    for i in range(count):
        cadence = rng.choice([Cadence.daily, Cadence.daily, Cadence.weekdays, Cadence.weekly])
        picked = sorted(set(rng.choices(popular, weights, k=rng.randint(1, 4))))
        sections = rng.choice(
            [[Section.trending], [Section.categories], [Section.categories, Section.trending]]
        )
        kinds["+".join(s.value for s in sections)] += 1
        rows.append(
            {
                "email": f"reader{i:05d}@bench.example.org",
                "user_id": None,
                "status": "active",
                "cadence": cadence.value,
                "weekday": rng.randrange(7),
                "send_hour": rng.randrange(24),
                "timezone": rng.choice(ZONES),
                "sections": [s.value for s in sections],
                "categories": picked,
                "max_items": rng.choice([10, 15, 20, 30]),
                "created_at": long_ago,
                "confirmed_at": long_ago,
                "updated_at": long_ago,
            }
        )
    with app.core.store.engine.begin() as conn:
        conn.execute(insert(digest_subscriptions), rows)
    return kinds


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of another process (Linux /proc), 0 where unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_smtp(port: int) -> subprocess.Popen[bytes]:
    """aiosmtpd's own command line, in another process, with the Sink handler (accept and drop)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiosmtpd", "-n", "-c", "aiosmtpd.handlers.Sink", "-l", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                if sock.recv(100).startswith(b"220"):
                    return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("aiosmtpd did not start")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--subscribers", type=int, default=10_000)
    parser.add_argument("--send", type=int, default=3000, help="messages to send for the rate (0: all)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--now", choices=["data", "clock"], default="data", help="digest time: end of the data, or now"
    )
    args = parser.parse_args()

    prepare(args.data_dir)
    work = args.data_dir.parent / (args.data_dir.name + "-run")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copy2(args.data_dir / "paperfeed.db", work / "paperfeed.db")

    port = free_port()
    smtp = start_smtp(port)
    app = build_app(settings_for(work, port))
    try:
        kinds = add_subscribers(app, args.subscribers, random.Random(args.seed))
        print(
            f"{args.subscribers:,} subscribers: " + ", ".join(f"{k} {v:,}" for k, v in sorted(kinds.items()))
        )
        stats = app.core.store.stats()
        print(
            f"store: {stats.papers:,} papers, {stats.listing_days:,} listed days, "
            f"up to {stats.last_published}"
        )

        with app.core.store.engine.connect() as conn:
            newest = conn.execute(
                select(func.max(papers.c.published)).where(papers.c.categories != [])
            ).scalar()
        if args.now == "data" and newest is not None:
            # The newest days of the HF data carry no arXiv categories: place "now" the day after the
            # newest categorised paper, so category sections have papers to choose from.
            now = newest.replace(tzinfo=UTC) + timedelta(days=1)
            app.digests.sender.clock = lambda: now
            print(f"now: {now:%Y-%m-%d %H:%M} UTC (the day after the newest categorised paper)")

        composed = app.digests.sender.compose_due()
        rate = composed.due / composed.seconds if composed.seconds else 0.0
        print(
            f"compose: {composed.due:,} due digests in {composed.seconds:.1f} s ({rate:,.0f}/s; goal: "
            f"10,000 in ≤ 60 s): {composed.composed:,} with papers ({composed.papers:,} papers, "
            f"{composed.papers / max(composed.composed, 1):.1f} each), {composed.empty:,} empty"
        )

        limit = None if args.send == 0 else args.send
        cpu, server_cpu = time.process_time(), cpu_seconds(smtp.pid)
        sent = app.digests.sender.send_pending(limit=limit)
        cpu, server_cpu = time.process_time() - cpu, cpu_seconds(smtp.pid) - server_cpu
        print(
            f"send: {sent.sent:,} messages in {sent.seconds:.1f} s = {sent.rate:,.0f} messages/s "
            f"(goal ≥ 100/s) over one connection to aiosmtpd on loopback; "
            f"retry {sent.retry_later}, failed {sent.failed}, bounced {sent.bounced}"
        )
        per_cpu = sent.sent / cpu if cpu else 0.0
        print(
            f"send CPU: {cpu:.1f} s in this process = {per_cpu:,.0f} messages per CPU-second "
            f"(render, MIME, SMTP client, ledger; the steadier figure on a shared machine); "
            f"aiosmtpd used {server_cpu:.1f} CPU-s; load average {os.getloadavg()[0]:.1f} on "
            f"{os.cpu_count()} cores"
        )
        ledger = app.digests.records.ledger_counts()
        print("ledger: " + ", ".join(f"{k} {v:,}" for k, v in sorted(ledger.items())))
    finally:
        app.close()
        smtp.terminate()
        smtp.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
