"""Time to each capability after an import, through the product as a user runs it (issue #39).

A fresh data folder, real papers, the bundled model: ``paperfeed run --offline --import FILE`` (the web
server, the background indexer), and this script polling the HTTP API from outside, as a user's browser
or script would, with a reader's API token (anonymous answers may be cached and searches rate-limited).
From the end of the import it records the wall seconds and the CPU seconds of the whole process tree of
``paperfeed run`` (web, indexer and the supervisor; /proc, utime + stime, children included) until:

* **vectors**: the first, and the last, paper vector is stored (read from the SQLite file, read-only:
  when the vectors *exist*, to tell the serving delay apart);
* **(a) hybrid search served**: the search API's ``X-Search-Notes`` stops saying that meaning search
  covers only part of the papers (the first answer with any semantic part is noted too);
* **(b) topics and the map**: ``/api/topics`` lists topics and ``/api/map/points`` places papers;
* **(c) facets and one-line summaries**: every paper has its sentences stored, and the paper the indexer
  does last (the highest id) answers ``/api/papers/{id}/similar?facet=method`` without "not indexed
  yet" and has a ``oneLineSummary``;
* **a late paper**: one more real paper imported (``paperfeed import``, a process of its own) while the
  indexer is busy -- once half of the vectors are stored, or, for code that makes sentences in a pass of
  their own, once that pass writes sentences (while it writes none yet: a minute after the topics, which
  no longer wait for it, or ten minutes after the vectors, as the old code trained the role model
  first) --
  and the seconds until its vector is stored, and until search covers every paper again (the coverage
  note gone: the rest of the import's vectors included).

``--sentences-later`` makes the papers' vectors first (``paperfeed index --no-sentences``, not timed), as
a worker or an older version leaves them: ``paperfeed run`` then finds only the sentence backlog, and the
late paper arrives a minute into that pass (issue #39: "a late paper's vector <= 30 s after it arrives
while the sentence pass runs").

``--variant NAME=PYTHONPATH`` runs another checkout (e.g. main as it was: ``git worktree add
/work/scratch-pipeline/before main``) with the same interpreter and libraries, so before and after are
measured by one script on one machine. The seed pages' ids are not arXiv ids and ``paperfeed run
--import`` has no ``--id-namespace``, so they go in by ``paperfeed import --id-namespace seed`` first
(the clock starts when it ends, the model's loading in ``paperfeed run`` included). CPU flags are printed;
wall times on the shared 2 cores are inflated by other work, CPU seconds less so.

    /work/bin/heavy .venv/bin/python -m bench.time_to_capability --corpus hf1500 \\
        --variant before=/work/scratch-pipeline/before/src --variant after=src
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson

from bench.processes import interrupt
from bench.sentence_roles import cpu_flags
from bench.served_quality import reader_token
from bench.vector_cache import CACHE_ROOT, SHARED

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path(os.environ.get("PAPERFEED_BENCH_SCRATCH", "/work/scratch-pipeline/ttc"))
TICK = os.sysconf("SC_CLK_TCK")
QUERY = "language models for reasoning"


def hf_papers(n: int) -> tuple[list[bytes], bytes]:
    """``n`` Hugging Face papers with an abstract (md5 order of the id: the same on every machine) as
    JSONL lines, and the next one, the late paper."""
    found: dict[str, bytes] = {}
    with gzip.open(SHARED / "data" / "hf_daily.jsonl.gz", "rb") as fh:
        for line in fh:
            rec = orjson.loads(line)
            if rec.get("abstract") and rec.get("title") and rec["id"] not in found:
                found[rec["id"]] = line.strip()
    order = sorted(found, key=lambda i: hashlib.md5(i.encode()).hexdigest())
    return [found[i] for i in order[:n]], found[order[n]]


def process_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every live descendant (with the children each has waited for)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        pid = int(entry)
        parents[pid] = int(fields[1])
        times[pid] = sum(int(x) for x in fields[11:15]) / TICK  # utime stime cutime cstime
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo.extend(p for p, parent in parents.items() if parent == pid)
    return total


@dataclass
class Session:
    """One ``paperfeed run`` and what it reached when (seconds after the import, and CPU seconds)."""

    name: str
    papers: int
    t0: float = 0.0
    cpu0: float = 0.0
    marks: dict[str, tuple[float, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def mark(self, what: str, root: int) -> None:
        if what not in self.marks:
            self.marks[what] = (time.monotonic() - self.t0, process_cpu(root) - self.cpu0)
            print(
                f"  [{self.name}] {what}: {self.marks[what][0]:,.1f} s, {self.marks[what][1]:,.1f} CPU-s",
                flush=True,
            )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def count(db: Path, sql: str, *args: object) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute(sql, args).fetchone()[0])
    except sqlite3.Error:
        return 0


def run_session(
    name: str,
    pythonpath: Path,
    corpus: str,
    lines: list[bytes],
    late: bytes,
    *,
    cap: float,
    poll: float,
    sentences_later: bool = False,
) -> Session:
    folder = SCRATCH / (f"{corpus}-{name}" + ("-backlog" if sentences_later else ""))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    data = folder / "data"
    papers_file = folder / "papers.jsonl"
    papers_file.write_bytes(b"\n".join(lines) + b"\n")
    (folder / "late.jsonl").write_bytes(late + b"\n")
    late_id = str(orjson.loads(late)["id"])
    secret = secrets.token_hex(32)
    env = {
        **os.environ,
        "PYTHONPATH": str(pythonpath.resolve()),
        "PAPERFEED_SECRET_KEY": secret,
        "PAPERFEED_MODEL_CACHE": str(CACHE_ROOT / "models"),  # one ONNX export for every session
        "HF_HUB_OFFLINE": "1",
    }
    base = [sys.executable, "-m", "paperfeed", "--data-dir", str(data)]
    check = subprocess.run(
        [sys.executable, "-c", "import paperfeed; print(paperfeed.__file__)"],
        env=env,
        capture_output=True,
        text=True,
    )
    print(f"\n## {corpus}, {name}: paperfeed from {check.stdout.strip()}", flush=True)
    token = reader_token(data, secret)  # a reader of that instance, made before it runs
    namespace = ["--id-namespace", "seed"] if corpus == "seeds" else []
    session = Session(name, len(lines))
    port = free_port()
    command = [*base, "run", "--offline", "--port", str(port)]
    # `paperfeed run --import` takes no --id-namespace: the seed ids need one; a backlog is made first
    imported_first = bool(namespace) or sentences_later
    if imported_first:
        subprocess.run(
            [*base, "import", *namespace, str(papers_file)], env=env, check=True, capture_output=True
        )
    else:
        command += ["--import", str(papers_file)]
    if sentences_later:  # the vectors without their sentences, as a worker or an older version leaves them
        subprocess.run([*base, "index", "--no-sentences"], env=env, check=True, capture_output=True)
    log = (folder / "run.log").open("w")
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    imported = threading.Event()
    if imported_first:
        session.t0, session.cpu0 = time.monotonic(), 0.0
        imported.set()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(f"{time.monotonic() - session.t0 if imported.is_set() else 0:9.1f} {line}")
            log.flush()
            if not imported.is_set() and re.search(r"[\d,]+ papers in ", line):
                session.t0, session.cpu0 = time.monotonic(), process_cpu(proc.pid)
                imported.set()

    threading.Thread(target=read, daemon=True).start()
    if not imported.wait(600):
        proc.kill()
        raise SystemExit(f"{name}: the import did not finish (see {folder / 'run.log'})")
    db = data / "paperfeed.db"
    url = f"http://127.0.0.1:{port}"
    client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    last = ""  # the paper the indexer does last: the backlog goes in id order
    n = len(lines)
    late_at: float | None = None
    late_arrived = False
    try:
        while time.monotonic() - session.t0 < cap:
            time.sleep(poll)
            root = proc.pid
            if proc.poll() is not None:
                session.notes.append(f"paperfeed run exited with {proc.returncode}")
                break
            if not last:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                    last = str(conn.execute("SELECT max(id) FROM papers").fetchone()[0] or "")
            vectors = count(db, "SELECT count(*) FROM embeddings")
            if vectors:
                session.mark("first vector stored", root)
            if vectors >= n:
                session.mark("all vectors stored", root)
            try:
                found = client.get("/api/papers/search", params={"q": QUERY, "limit": 5})
                note = found.headers.get("X-Search-Notes", "")
                if found.status_code == 200 and "covers none" not in note:
                    session.mark("(a) first hybrid answer", root)
                    if "Meaning search covers" not in note and vectors >= n:
                        session.mark("(a) hybrid search over every paper", root)
                if "(b) topics and the map" not in session.marks:
                    topics = client.get("/api/topics")
                    points = client.get("/api/map/points", params={"format": "json"})
                    listed = topics.json() if topics.status_code == 200 else []
                    if isinstance(listed, dict):
                        listed = listed.get("topics") or []
                    placed = points.json() if points.status_code == 200 else {}
                    if listed and placed and len((placed.get("points") or {}).get("id") or []) > 0:
                        session.mark("(b) topics and the map", root)
                sentences = count(db, "SELECT count(*) FROM paper_sentences")
                if (
                    sentences >= n + (1 if late_arrived else 0)
                    and "(c) facets and one-line summaries" not in session.marks
                ):
                    similar = client.get(
                        f"/api/papers/{last}/similar", params={"facet": "method", "limit": 3}
                    )
                    paper = client.get(f"/api/papers/{last}")
                    if (
                        similar.status_code == 200
                        and "not indexed yet" not in similar.headers.get("Paperfeed-Note", "")
                        and paper.status_code == 200
                        and paper.json().get("oneLineSummary")
                    ):
                        session.mark("(c) facets and one-line summaries", root)
            except httpx.HTTPError:
                continue  # the web server is still starting
            # the late paper: while the indexer is busy with this import
            if late_at is None:
                made = count(db, "SELECT count(*) FROM paper_sentences")
                sentence_pass = "all vectors stored" in session.marks and made < n
                halfway = vectors >= n // 2 and vectors < n
                # the sentence pass: once it writes sentences; or, while it writes none yet, a minute after
                # the topics (which since issue #39 come first and no longer wait for the sentences), or
                # ten minutes after the vectors (the old code trains the role model first, for minutes)
                waited = time.monotonic() - session.t0
                topics_at = session.marks.get("(b) topics and the map")
                vectors_at = session.marks.get("all vectors stored")
                if halfway or (
                    sentence_pass
                    and (
                        made > 0
                        or (topics_at is not None and waited - topics_at[0] > 60)
                        or (topics_at is None and vectors_at is not None and waited - vectors_at[0] > 600)
                    )
                ):
                    why = "half of the vectors stored" if halfway else "during the sentence pass"
                    subprocess.run(
                        [*base, "import", *namespace, str(folder / "late.jsonl")],
                        env=env,
                        check=True,
                        capture_output=True,
                    )
                    late_at = time.monotonic()
                    late_arrived = True
                    session.notes.append(f"late paper imported at {late_at - session.t0:,.1f} s ({why})")
            else:
                stored = count(db, "SELECT count(*) FROM embeddings WHERE paper_id = ?", late_id)
                if "late paper: vector stored" not in session.marks and stored:
                    waited = time.monotonic() - late_at
                    session.marks["late paper: vector stored"] = (waited, 0.0)
                    print(f"  [{name}] late paper's vector stored {waited:,.1f} s after arriving", flush=True)
                if (
                    "late paper: vector stored" in session.marks
                    and "late paper: search covers every paper" not in session.marks
                ):
                    found = client.get("/api/papers/search", params={"q": QUERY, "limit": 5})
                    if "Meaning search covers" not in found.headers.get("X-Search-Notes", ""):
                        waited = time.monotonic() - late_at
                        session.marks["late paper: search covers every paper"] = (waited, 0.0)
            wanted = (
                "(a) hybrid search over every paper",
                "(b) topics and the map",
                "(c) facets and one-line summaries",
                "late paper: search covers every paper",
            )
            if all(w in session.marks for w in wanted):
                break
        else:
            session.notes.append(f"stopped at the cap of {cap:,.0f} s")
    finally:
        interrupt(proc)
        client.close()
        log.close()
    session.notes.append(f"log: {folder / 'run.log'}")
    return session


def report(sessions: list[Session]) -> None:
    rows = [
        "first vector stored",
        "(a) first hybrid answer",
        "all vectors stored",
        "(a) hybrid search over every paper",
        "(b) topics and the map",
        "(c) facets and one-line summaries",
    ]
    print("\n## time to each capability after the import: wall s (CPU s of paperfeed run's processes)")
    print(f"{'':<40}" + "".join(f"{s.name + f' ({s.papers})':>26}" for s in sessions))
    for row in rows:
        cells = []
        for s in sessions:
            found = s.marks.get(row)
            cells.append(f"{found[0]:>12,.1f} ({found[1]:>8,.1f})" if found else f"{'not reached':>25}")
        print(f"{row:<40}" + "".join(f"{c:>26}" for c in cells))
    for row in ("late paper: vector stored", "late paper: search covers every paper"):
        cells = [
            f"{s.marks[row][0]:,.1f} s after it arrived" if row in s.marks else "not reached"
            for s in sessions
        ]
        print(f"{row:<40}" + "".join(f"{c:>26}" for c in cells))
    print("\nafter the last vector:")
    for s in sessions:
        last = s.marks.get("all vectors stored")
        if last is None:
            continue
        parts = [
            f"{what} +{s.marks[what][0] - last[0]:,.1f} s"
            for what in (
                "(a) hybrid search over every paper",
                "(b) topics and the map",
                "(c) facets and one-line summaries",
            )
            if what in s.marks
        ]
        print(f"  {s.name}: " + "; ".join(parts))
    for s in sessions:
        for note in s.notes:
            print(f"  {s.name}: {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--corpus", nargs="*", choices=["seeds", "hf1500"], default=["hf1500"])
    parser.add_argument(
        "--variant",
        action="append",
        default=None,
        help="NAME=PYTHONPATH of a checkout's src (repeatable; default: after=this checkout's src)",
    )
    parser.add_argument("--papers", type=int, default=1500, help="Hugging Face papers (hf1500)")
    parser.add_argument("--cap", type=float, default=3600, help="give up on a session after this many s")
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between looks")
    parser.add_argument(
        "--sentences-later",
        action="store_true",
        help="the papers' vectors made first (paperfeed index --no-sentences, not timed), so paperfeed run "
        "finds only the sentence backlog: the late paper arrives a minute into that pass",
    )
    args = parser.parse_args()
    variants = [v.split("=", 1) for v in (args.variant or [f"after={ROOT / 'src'}"])]
    print(f"CPU: {os.cpu_count()} cores, {cpu_flags()}; {time.strftime('%Y-%m-%d %H:%M')}")
    for corpus in args.corpus:
        if corpus == "seeds":
            lines = [
                ln.strip()
                for ln in (SHARED / "seeds" / "seed_papers.jsonl").read_bytes().splitlines()
                if ln.strip()
            ]
            unique = {str(json.loads(ln)["id"]): ln for ln in lines}
            lines = list(unique.values())
            late_line = hf_papers(args.papers)[1]  # an HF paper: an arXiv id, which the seed namespace keeps
        else:
            lines, late_line = hf_papers(args.papers)
        sessions = [
            run_session(
                name,
                Path(path),
                corpus,
                lines,
                late_line,
                cap=args.cap,
                poll=args.poll,
                sentences_later=args.sentences_later,
            )
            for name, path in variants
        ]
        report(sessions)


if __name__ == "__main__":
    main()
