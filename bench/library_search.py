"""What searching one's library costs a served instance (issue #41, finding 1: 9-14 s a request before).

The probe's attack, as shipped: ``python -m paperfeed serve`` (one uvicorn worker) on a data folder with
``--papers`` real Hugging Face daily papers (``../shared/data/hf_daily.jsonl.gz``, imported by ``paperfeed
import``), a reader whose library holds all of them with a note each (the paper's HF ``ai_summary``, real
text: imported through ``POST /api/me/library/import`` as a BibTeX file with ``annote`` fields, as the probe
did; ``--noted`` of them, default all), and queries of ``--terms`` distinct four-letter words drawn from the
library's own words (each also a prefix: the worst case for matching), sent to ``GET
/api/me/library/search`` with the reader's API token. The reader's rate limit is off for the run
(``PAPERFEED_LIBRARY_SEARCH_RATE_PER_MINUTE=0``): this measures the search, not the limiter.

It prints, with this machine's CPU flags: the first search (the reader's index built, the first notes
embedded), how long the background worker took to embed every note, then ``--queries`` warm searches
(distinct queries: median and 90th percentile wall time, and the server process's CPU time per search from
``/proc/PID/stat``), and a search right after one note was edited (only that paper read again). Papers'
vectors come from the bench vector cache (``bench/vector_cache.py``, corpus ``hf_daily``) when it holds
them; otherwise the meaning part is over the notes alone, and the script says so.

``--baseline-src`` serves another checkout's ``src`` on the same folder first (e.g. main before the fix:
``git archive``), ``--baseline-queries`` searches of it, for a ratio measured in one run.

    python -m bench.library_search [--papers 10000] [--terms 50] [--queries 30]
        [--noted N] [--data-dir DIR] [--baseline-src /tmp/old/src]
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

from bench.mute_cost import cpu_flags

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PAPERFEED_SHARED", ROOT.parent / "shared"))
READER = "bench-reader@example.org"
_WORD = re.compile(r"[a-z]{4,}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def records(n: int) -> list[dict[str, object]]:
    out = []
    with gzip.open(SHARED / "data" / "hf_daily.jsonl.gz", "rb") as f:
        for line in f:
            rec = orjson.loads(line)
            if rec.get("title") and rec.get("abstract") and rec.get("ai_summary"):
                out.append(rec)
                if len(out) == n:
                    break
    return out


def _bib_value(text: str) -> str:
    return text.replace("\\", " ").replace("{", "(").replace("}", ")")


def bibtex(recs: list[dict[str, object]], noted: int) -> bytes:
    """The library as one BibTeX file; the first ``noted`` entries carry a note (``annote``)."""
    entries = [
        f"@article{{k{n},\n  title = {{{_bib_value(str(r['title']))}}},\n  eprint = {{{r['id']}}},\n"
        f"  archiveprefix = {{arXiv}},\n"
        + (f"  annote = {{{_bib_value(str(r['ai_summary']))}}}\n" if n < noted else "")
        + "}\n"
        for n, r in enumerate(recs)
    ]
    return "".join(entries).encode()


def _env(data: Path, src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env.update(
        PAPERFEED_DATA_DIR=str(data),
        PAPERFEED_DEBUG="1",
        PAPERFEED_LIBRARY_SEARCH_RATE_PER_MINUTE="0",
        PAPERFEED_LIBRARY_IMPORT_MAX_ENTRIES="10000",
        # ``auto`` keeps a provisional choice for no longer than one use until `paperfeed index` has
        # calibrated (this folder is never indexed): name the backend calibration picks on these CPUs
        PAPERFEED_EMBEDDING_BACKEND=os.environ.get("BENCH_EMBEDDING_BACKEND", "onnx"),
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(src),
    )
    return env


def build(data: Path, recs: list[dict[str, object]]) -> None:
    """Import the papers (the CLI), store the cached vectors of any, make the reader and a token."""
    env = _env(data, ROOT / "src")
    source = data.parent / "papers.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    subprocess.run([sys.executable, "-m", "paperfeed", "import", str(source)], env=env, check=True)
    script = (
        "import sys\n"
        "from bench.vector_cache import VectorCache, Doc\n"
        "from paperfeed.bootstrap import build_app\n"
        "from paperfeed.settings import Settings\n"
        "app = build_app(Settings())\n"
        "emb, model = app.indexes.embeddings, app.indexes.embedders.current().model_id\n"
        "try:\n"
        "    cached = VectorCache(app.indexes.embedders.current()).cached('hf_daily')\n"
        "except Exception:\n"
        "    cached = {}\n"
        "stored, after = 0, ''\n"
        "while True:\n"
        "    batch = emb.backlog(model, after=after, limit=512)\n"
        "    if not batch:\n"
        "        break\n"
        "    after = batch[-1].paper_id\n"
        "    have = [(p, cached[Doc(p.paper_id, p.title, p.abstract).hash]) for p in batch\n"
        "            if Doc(p.paper_id, p.title, p.abstract).hash in cached]\n"
        "    if have:\n"
        "        import numpy as np\n"
        "        emb.save_vectors(model, [p for p, _ in have], np.stack([v for _, v in have]))\n"
        "        stored += len(have)\n"
        "accounts = app.readers.accounts\n"
        "accounts.sign_up(sys.argv[1], None, None, client='bench', base_url='http://bench')\n"
        "user = accounts.user_by_email(sys.argv[1])\n"
        "accounts.store.mark_verified(user.id, accounts.clock())\n"
        "print(stored, accounts.create_api_token(accounts.user_by_email(sys.argv[1]), 'bench')[1])\n"
        "app.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, READER],
        env={**env, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"},
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout.split()
    (data / "bench-token").write_text(out[1])
    (data / "bench-vectors").write_text(out[0])


class Served:
    def __init__(self, data: Path, src: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = (data.parent / f"serve-{src.parent.name}.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "paperfeed", "serve", "--port", str(self.port), "--log-level", "warning"],
            env=_env(data, src),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=data.parent,
        )
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{self.base}/signin", timeout=2)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise SystemExit("the server did not start") from None
                time.sleep(0.2)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()


def queries(recs: list[dict[str, object]], terms: int, count: int, seed: int = 41) -> list[str]:
    words = sorted({w for r in recs for w in _WORD.findall(f"{r['title']} {r['ai_summary']}".lower())})
    four = sorted({w[:4] for w in words})  # four letters: each a word or the start of several
    rng = random.Random(seed)
    return [" ".join(rng.sample(four, terms)) for _ in range(count)]


def search(client: httpx.Client, pid: int, q: str) -> tuple[float, float, dict[str, object]]:
    cpu, wall = cpu_seconds(pid), time.perf_counter()
    got = client.get("/api/me/library/search", params={"q": q})
    wall, cpu = time.perf_counter() - wall, cpu_seconds(pid) - cpu
    if got.status_code != 200:
        raise SystemExit(f"search answered {got.status_code}: {got.text[:300]}")
    body: dict[str, object] = got.json()
    return wall, cpu, body


def waiting(body: dict[str, object]) -> bool:
    notes = body.get("notes")
    return isinstance(notes, list) and any("not searched by meaning yet" in str(n) for n in notes)


def report(label: str, walls: list[float], cpus: list[float]) -> None:
    walls_ms = sorted(w * 1000 for w in walls)
    p90 = walls_ms[min(len(walls_ms) - 1, round(0.9 * (len(walls_ms) - 1)))]
    print(
        f"{label}: {len(walls)} searches, wall median {statistics.median(walls_ms):.1f} ms, "
        f"p90 {p90:.1f} ms; server CPU {statistics.mean(cpus) * 1000:.1f} ms per search"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=10_000)
    parser.add_argument("--terms", type=int, default=50)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument(
        "--noted", type=int, default=None, help="entries with a note (default: all; the probe's had 2,000)"
    )
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="built once, reused (default: a temp dir)"
    )
    parser.add_argument("--baseline-src", type=Path, default=None, help="another checkout's src to compare")
    parser.add_argument("--baseline-queries", type=int, default=2)
    args = parser.parse_args()
    print(f"CPU flags: {cpu_flags()}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        root = args.data_dir or Path(tmp)
        data = root / "data"
        recs = records(args.papers)
        if not (data / "bench-token").is_file():
            data.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            build(data, recs)
            print(f"built {len(recs):,} papers in {time.monotonic() - started:.0f} s")
        token = (data / "bench-token").read_text().strip()
        print(f"papers with a stored vector: {int((data / 'bench-vectors').read_text()):,} of {len(recs):,}")
        headers = {"authorization": f"Bearer {token}"}
        asked = queries(recs, args.terms, args.queries + args.baseline_queries + 3)
        server = Served(data, ROOT / "src")
        try:
            with httpx.Client(base_url=server.base, headers=headers, timeout=600) as client:
                library = client.get("/api/me/library", params={"limit": 1}).json()
                if library.get("total", 0) < len(recs):
                    started = time.monotonic()
                    with (root / "library.bib").open("wb") as f:
                        f.write(bibtex(recs, len(recs) if args.noted is None else args.noted))
                    got = client.post(
                        "/api/me/library/import",
                        files={"file": ("library.bib", (root / "library.bib").read_bytes(), "text/plain")},
                        data={"with_tags": "true"},  # the entries' notes (annote) come along
                    )
                    print(f"library import: {got.status_code} in {time.monotonic() - started:.1f} s")
                    while (client.get("/api/me/library/import").json().get("job") or {}).get(
                        "state"
                    ) == "running":
                        time.sleep(1)
                pid = server.proc.pid
                wall, cpu, body = search(client, pid, asked[0])
                print(
                    f"first search ({args.terms} terms; {body['searched']:,} papers, the index built): "
                    f"{wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms server CPU; notes: {body['notes']}"
                )
                started, cpu0 = time.monotonic(), cpu_seconds(pid)
                while waiting(body):
                    time.sleep(2)
                    body = search(client, pid, asked[1])[2]
                print(
                    f"every note embedded in the background after {time.monotonic() - started:.0f} s "
                    f"({cpu_seconds(pid) - cpu0:.0f} s of server CPU)"
                )
                walls, cpus = [], []
                for q in asked[2 : 2 + args.queries]:
                    wall, cpu, body = search(client, pid, q)
                    walls.append(wall)
                    cpus.append(cpu)
                report(f"warm, {args.terms}-term queries over HTTP", walls, cpus)
                print(f"  (each searched {body['searched']:,} papers; notes {body['notes']})")
                first = client.get("/api/me/library", params={"limit": 1}).json()["items"][0]["paper"]["id"]
                client.put(f"/api/me/papers/{first}/note", json={"body": "edited for the bench: zebrafish"})
                wall, cpu, _ = search(client, pid, asked[-1])
                print(f"after one note was edited: {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms server CPU")
        finally:
            server.close()
        if args.baseline_src is not None:
            old = Served(data, args.baseline_src)
            try:
                with httpx.Client(base_url=old.base, headers=headers, timeout=3600) as client:
                    walls, cpus = [], []
                    for q in asked[2 : 2 + args.baseline_queries]:
                        wall, cpu, _ = search(client, old.proc.pid, q)
                        walls.append(wall)
                        cpus.append(cpu)
                    report(f"baseline {args.baseline_src}", walls, cpus)
            finally:
                old.close()


if __name__ == "__main__":
    main()
