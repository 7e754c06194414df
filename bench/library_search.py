"""What searching one's library costs a served instance (issue #41, finding 1: 9-14 s a request before).

The probe's attack, as shipped: ``python -m paperfeed serve`` (one uvicorn worker) on a data folder with
``--papers`` real papers imported by ``paperfeed import`` — the Hugging Face daily papers that have an HF
summary (``../shared/data/hf_daily.jsonl.gz``: 5,711), then arXiv listing papers
(``arxiv_cats.jsonl.gz``) — and a reader whose library holds all of them with a note each, real text: the
HF summary, or an arXiv paper's first sentence of its abstract (the claim a reader pastes). The library is
imported through ``POST /api/me/library/import`` as a BibTeX file with ``annote`` fields, as the probe did
(``--noted`` of them with a note, default all: the worst case). Queries are ``--terms`` distinct
four-letter words drawn from the library's own words (each also a prefix: the worst case for matching),
sent to ``GET /api/me/library/search`` with the reader's API token. The reader's rate limit is off for the
run (``PAPERFEED_LIBRARY_SEARCH_RATE_PER_MINUTE=0``): this measures the search, not the limiter.

It prints, with this machine's CPU flags and load average: the first search (the reader's index built, the
first notes embedded), how long the background worker took to embed every note, then ``--queries`` warm
searches (distinct queries: median and 90th percentile wall time, and the server process's CPU time per
search from ``/proc/PID/stat``), and a search right after one note was edited (only that note embedded
again). Papers' vectors come from the bench vector cache (``bench/vector_cache.py``, corpora ``hf_daily``
and ``arxiv_cats``) where it holds them, and the script says how many; the others take part by words and
by their note.

``--baseline-src`` then serves another checkout's ``src`` on the same folder (e.g. main before the fix:
``git archive``), measured the same way with ``--baseline-queries`` warm searches, for a ratio in one run.

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


def _first_sentence(text: str) -> str:
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def records(n: int) -> list[dict[str, object]]:
    """``n`` real papers, each with a note (``note``): Hugging Face daily papers with the HF summary as
    their note first (5,711 have one), then arXiv listing papers (``arxiv_cats``) noted with their
    abstract's first sentence, as a reader who pastes the claim they kept a paper for."""
    out: list[dict[str, object]] = []
    seen: set[str] = set()
    with gzip.open(SHARED / "data" / "hf_daily.jsonl.gz", "rb") as f:
        for line in f:
            rec = orjson.loads(line)
            if rec.get("title") and rec.get("abstract") and rec.get("ai_summary"):
                out.append({**rec, "note": rec["ai_summary"]})
                seen.add(rec["id"])
                if len(out) == n:
                    return out
    with gzip.open(SHARED / "data" / "arxiv_cats.jsonl.gz", "rb") as f:
        for line in f:
            rec = orjson.loads(line)
            if rec.get("title") and rec.get("abstract") and rec["id"] not in seen:
                out.append({**rec, "note": _first_sentence(str(rec["abstract"]))})
                seen.add(rec["id"])
                if len(out) == n:
                    return out
    return out


def _bib_value(text: str) -> str:
    return text.replace("\\", " ").replace("{", "(").replace("}", ")")


def bibtex(recs: list[dict[str, object]], noted: int) -> bytes:
    """The library as one BibTeX file; the first ``noted`` entries carry a note (``annote``)."""
    entries = [
        f"@article{{k{n},\n  title = {{{_bib_value(str(r['title']))}}},\n  eprint = {{{r['id']}}},\n"
        f"  archiveprefix = {{arXiv}},\n"
        + (f"  annote = {{{_bib_value(str(r['note']))}}}\n" if n < noted else "")
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
        "cached = {}\n"
        "for corpus in ('hf_daily', 'arxiv_cats'):\n"
        "    try:\n"
        "        cached.update(VectorCache(app.indexes.embedders.current()).cached(corpus))\n"
        "    except Exception:\n"
        "        pass\n"
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
    words = sorted({w for r in recs for w in _WORD.findall(f"{r['title']} {r['note']}".lower())})
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
    parser.add_argument("--baseline-queries", type=int, default=10)
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
        asked = queries(recs, args.terms, max(args.queries, args.baseline_queries) + 3)
        print(f"load average (1, 5, 15 min) before: {load()}")
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
                measure(client, server.proc.pid, args.terms, asked, args.queries, "warm")
                first = client.get("/api/me/library", params={"limit": 1}).json()["items"][0]["paper"]["id"]
                client.put(f"/api/me/papers/{first}/note", json={"body": "edited for the bench: zebrafish"})
                wall, cpu, _ = search(client, server.proc.pid, asked[-1])
                print(f"after one note was edited: {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms server CPU")
                noted = {str(r["id"]): str(r["note"]) for r in recs}
                client.put(f"/api/me/papers/{first}/note", json={"body": noted.get(first, "")})  # as it was
        finally:
            server.close()
        if args.baseline_src is not None:
            old = Served(data, args.baseline_src)
            try:
                with httpx.Client(base_url=old.base, headers=headers, timeout=3600) as client:
                    label = f"baseline {args.baseline_src}"
                    measure(client, old.proc.pid, args.terms, asked, args.baseline_queries, label)
            finally:
                old.close()


def measure(client: httpx.Client, pid: int, terms: int, asked: list[str], n: int, label: str) -> None:
    """A served instance's first search, the wait for its notes' vectors, then ``n`` warm searches."""
    wall, cpu, body = search(client, pid, asked[0])
    print(
        f"{label}: first search ({terms} terms; {body['searched']:,} papers, the index built): "
        f"{wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms server CPU; notes: {body['notes']}"
    )
    started, cpu0 = time.monotonic(), cpu_seconds(pid)
    while waiting(body):
        time.sleep(2)
        body = search(client, pid, asked[1])[2]
    print(
        f"{label}: every note embedded in the background after {time.monotonic() - started:.0f} s "
        f"({cpu_seconds(pid) - cpu0:.0f} s of server CPU)"
    )
    walls, cpus = [], []
    for q in asked[2 : 2 + n]:
        wall, cpu, body = search(client, pid, q)
        walls.append(wall)
        cpus.append(cpu)
    report(f"{label}, {terms}-term queries over HTTP", walls, cpus)
    print(f"  (each searched {body['searched']:,} papers; notes {body['notes']}; uptime: {load()})")


def load() -> str:
    """The load average over 1, 5 and 15 minutes (what ``uptime`` prints)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    main()
