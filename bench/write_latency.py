"""A reader's writes while the instance writes in bulk: upvotes and library saves during an import and an
indexing run, on SQLite and PostgreSQL (issue #39 item 4: ≤ 100 ms p50).

A data folder with the ~10.6k real Hugging Face papers (``../shared/data/hf_daily.jsonl.gz``) and a reader
with a personal API token is made once per backend (cached); each run copies it, starts the real server
(``paperfeed serve``, one worker) and times, client side over HTTP, a reader toggling upvotes
(``POST``/``DELETE /api/papers/{id}/upvote``) and saves (``POST /api/me/saves``,
``DELETE /api/me/saves/{id}``) on random papers, 50 ms apart, in each phase:

1. idle: nothing else runs;
2. import: ``paperfeed import`` of ``arxiv_cats.jsonl.gz`` (real arXiv listings, new papers) runs;
3. index: ``paperfeed index --rebuild`` runs niced, as ``paperfeed run``'s indexer is (``--backend``; the
   default ``fake`` writes a batch every few milliseconds: the write pressure of many fast workers);
4. index-real (``--phases`` to add it): the same with the real model.

Printed per phase: p50 / p90 / max of the writes in ms and p50 over idle, in one run, with the CPU.

    .venv/bin/python -m bench.write_latency [--backend sqlite|postgresql] [--requests 200]
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench.processes import interrupt
from bench.vector_cache import CACHE_ROOT, SHARED
from bench.web_speed import free_port, pct
from paperfeed.adapters.embed.cpu import available_cores, cpu_info

BASE_FILE = SHARED / "data" / "hf_daily.jsonl.gz"
IMPORT_FILE = SHARED / "data" / "arxiv_cats.jsonl.gz"
TEMPLATE = CACHE_ROOT / "write-latency"
SECRET = "write-latency-bench-secret-key-0123456789abcdef"


def _env(database_url: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env.update(PAPERFEED_SECRET_KEY=SECRET, PAPERFEED_EMBEDDING_BACKEND="fake", HF_HUB_OFFLINE="1", **extra)
    if database_url:
        env["PAPERFEED_DATABASE_URL"] = database_url
    return env


def _cli(data: Path, env: dict[str, str], *args: str) -> None:
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr[-2000:]}")


def _reader_token(data: Path, env: dict[str, str]) -> str:
    """A confirmed reader's personal API token, made through the account service."""
    from paperfeed.bootstrap import build_app
    from paperfeed.settings_model import SettingsModel

    settings = SettingsModel.from_environ(env, data_dir=data)
    app = build_app(settings)
    try:
        accounts = app.readers.accounts
        user = accounts.add_confirmed("writer@example.org", secrets.token_urlsafe(16))
        return accounts.create_api_token(user, "bench.write_latency")[1]
    finally:
        app.close()


def prepare(folder: Path, database_url: str | None) -> tuple[str, list[str]]:
    """The data folder (the base papers imported, a reader with a token), made once; the token and ids."""
    ready = folder / "ready.txt"
    if not ready.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        env = _env(database_url)
        _cli(folder / "data", env, "import", str(BASE_FILE))
        token = _reader_token(folder / "data", env)
        ready.write_text(token + "\n")
    from paperfeed.adapters.store import open_store

    store = open_store(database_url or f"sqlite+pysqlite:///{folder / 'data' / 'paperfeed.db'}")
    try:
        ids = [p.id for page in store.iter_papers(2000) for p in page]
    finally:
        store.close()
    return ready.read_text().strip(), ids


def start_server(data: Path, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", "1", "--log-level", "warning"]
    command += ["--base-url", f"http://127.0.0.1:{port}"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/daily_papers?limit=1", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("server did not start within 180 s")


def writes(base: str, token: str, ids: list[str], n: int, rng: random.Random) -> tuple[list[float], int]:
    """``n`` upvote and save toggles, 50 ms apart; their client-side times (ms) and the failures."""
    took: list[float] = []
    failed = 0
    voted: set[str] = set()
    saved: set[str] = set()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=60, headers=headers) as client:
        for i in range(n):
            pid = rng.choice(ids)
            started = time.perf_counter()
            if i % 2 == 0:
                url = f"/api/papers/{pid}/upvote"
                response = client.delete(url) if pid in voted else client.post(url)
                voted ^= {pid}
            elif pid in saved:
                response = client.delete(f"/api/me/saves/{pid}")
                saved.discard(pid)
            else:
                response = client.post("/api/me/saves", json={"paper_id": pid})
                saved.add(pid)
            took.append((time.perf_counter() - started) * 1000)
            if response.status_code >= 400:
                if not failed:  # a failed write is no figure: say the first, so it is seen
                    print(
                        f"    {response.request.method} {response.request.url.path}: "
                        f"{response.status_code} {response.text[:200]}",
                        flush=True,
                    )
                failed += 1
            time.sleep(0.05)
    return took, failed


def background(phase: str, data: Path, env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """The bulk writer of ``phase``, started as a user (or ``paperfeed run``) starts it."""
    base = [sys.executable, "-m", "paperfeed", "--data-dir", str(data)]
    if phase == "idle":
        return None
    if phase == "import":
        command = [*base, "import", str(IMPORT_FILE)]
        nice = 0
    elif phase == "index":
        command = [*base, "index", "--rebuild", "--no-sentences"]
        nice = 10
    elif phase == "index-real":
        command = [*base, "index", "--rebuild", "--no-sentences"]
        env = {**env, "PAPERFEED_EMBEDDING_BACKEND": "onnx"}
        nice = 10
    else:
        raise SystemExit(f"no phase {phase!r}")
    return subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=(lambda: os.nice(nice)) if nice else None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=float, default=4.0, help="seconds for the bulk writer to get going")
    parser.add_argument("--phases", nargs="*", default=["idle", "import", "index"])
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / "write-latency"
    parser.add_argument("--scratch", type=Path, default=scratch)
    args = parser.parse_args()
    server: Any = None
    database_url = None
    template = TEMPLATE / args.backend
    if args.backend == "postgresql":
        from tests.support.postgres import start_server as start_pg

        from bench.backends import PG_SETTINGS

        server = start_pg(CACHE_ROOT / "pg-write-latency", settings=PG_SETTINGS, reuse=True, timeout=300)
        import psycopg

        with psycopg.connect(host=server.host, port=server.port, user="postgres", autocommit=True) as admin:
            exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = 'writes'").fetchone()
            if exists is None or not (template / "ready.txt").exists():
                shutil.rmtree(template, ignore_errors=True)
                admin.execute("DROP DATABASE IF EXISTS writes WITH (FORCE)")
                admin.execute("DROP DATABASE IF EXISTS writes_run WITH (FORCE)")
                admin.execute("CREATE DATABASE writes")
        database_url = server.url("writes")
    token, ids = prepare(template, database_url)
    rng = random.Random(39)
    rows = []
    try:
        for phase in args.phases:
            run_url = database_url
            scratch = args.scratch / phase
            shutil.rmtree(scratch, ignore_errors=True)
            shutil.copytree(template / "data", scratch)
            if server is not None:  # a fresh copy of the database for each phase
                import psycopg

                with psycopg.connect(
                    host=server.host, port=server.port, user="postgres", autocommit=True
                ) as admin:
                    admin.execute("DROP DATABASE IF EXISTS writes_run WITH (FORCE)")
                    admin.execute("CREATE DATABASE writes_run TEMPLATE writes")
                run_url = server.url("writes_run")
            env = _env(run_url)
            port = free_port()
            web = start_server(scratch, port, env)
            bulk = None
            try:
                bulk = background(phase, scratch, env)
                if bulk is not None:
                    time.sleep(args.warmup)
                took, failed = writes(f"http://127.0.0.1:{port}", token, ids, args.requests, rng)
                note = ""
                if bulk is not None and bulk.poll() is not None:
                    note = f"(the {phase} ended during the phase)"
            finally:
                if bulk is not None and bulk.poll() is None:
                    interrupt(bulk)
                web.terminate()
                web.wait(timeout=30)
            rows.append((phase, took, failed, note))
            print(f"  {phase}: done", flush=True)
    finally:
        if server is not None:
            from tests.support.postgres import stop_server

            stop_server(server, remove=False)
    print(
        f"\nreader writes during bulk writes, {args.backend}, {len(ids):,} papers, "
        f"CPU {cpu_info().describe()}, {available_cores()} cores; {args.requests} writes a phase "
        "(upvote / save toggles), client ms\n"
    )
    print("phase        p50      p90      max   p50/idle   failed")
    idle = None
    for phase, took, failed, note in rows:
        p50 = pct(took, 0.5)
        idle = p50 if phase == "idle" else idle
        ratio = f"{p50 / idle:8.2f}x" if idle and phase != "idle" else "        -"
        print(f"{phase:<10} {p50:6.1f} {pct(took, 0.9):8.1f} {max(took):8.1f} {ratio} {failed:8d}  {note}")


if __name__ == "__main__":
    main()
