"""What evidence search costs (issue #42): the sentence indexes' size and build time per 100k papers, and
query latency at 200k papers (~1M sentences) through the served API, on this machine.

The store holds real papers from ``../shared/data`` (the arXiv category listings, the 2007-2017 OAI
sample, Hugging Face daily papers, the Paperscape abstracts; texts reused under new ids to reach
``--papers`` when they run out), each abstract split by paperfeed's own splitter and given its role by a
role classifier, through the product's own indexer passes (``IndexingService``, ``SentenceIndexer``).

**The vectors are not model-made.** Embedding a million sentences with MiniLM is days of this shared
CPU, so every paper and sentence vector is a signed hashed bag of its words (paperfeed's fake embedder,
the hashing trick, at the real model's 384 dimensions), stored under the real model's id: the indexes, their
sizes, the HNSW graphs and the query path are the shipped ones, and the query itself is embedded by the
real model (``PAPERFEED_EMBEDDING_BACKEND=torch``), so a query pays everything a user's does. Rankings
are meaningless here; speed is what is measured. (The vectors' distribution differs from MiniLM's: sparse,
with little cluster structure, so an HNSW graph's recall over them is far lower than over real vectors,
``bench/sentence_index_choice.py``, and its walk's cost differs a little.)

Measured:

* **build**: the sentence keyword index (tantivy) and the sentence vector index (HNSW above 50,000
  sentences) built from the stored sentences, as ``paperfeed index`` does for a data folder whose
  sentences exist (``EvidenceIndexes.catch_up``): wall and CPU seconds, and bytes on disk, per 100k papers;
* **queries**: ``paperfeed serve`` on the data folder; each query (question-like lines: Hugging Face's
  one-line summaries of papers) sent as ``GET /api/evidence?q=…&limit=20`` and, in the same run, as
  ``GET /api/papers/search?q=…&limit=20``, sequentially with a reader's token after a warm-up; p50 and
  p99 of the wall time, and the server's CPU seconds a query.

    HF_HUB_OFFLINE=1 .venv/bin/python -m bench.evidence_cost --data-dir /work/scratch-evidence/cost
"""

from __future__ import annotations

import argparse
import gzip
import os
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.evidence_quality import wait_for_model
from bench.sentence_roles import cpu_flags
from bench.served_quality import free_port, product_env, reader_token, wait_until_up

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SOURCES = (
    "arxiv_cats.jsonl.gz",
    "arxiv_oai_2007_2017_sample100k.jsonl.gz",
    "hf_daily.jsonl.gz",
    "paperscape_1991_1996.jsonl.gz",
)
PER = 100_000


def _day(value: Any) -> datetime | None:
    if not isinstance(value, str) or len(value) < 10:
        return None
    try:
        return datetime.fromisoformat(value[:10]).replace(tzinfo=UTC)
    except ValueError:
        return None


def real_papers(count: int) -> Iterator[Any]:
    """``count`` papers of real text: every distinct one of the shared files, then the same texts again
    under new ids."""
    from paperfeed.domain.models import Paper

    seen: set[str] = set()
    texts: list[Any] = []
    for name in SOURCES:
        with gzip.open(SHARED / name, "rb") as fh:
            for line in fh:
                row = orjson.loads(line)
                pid, abstract = str(row.get("id") or ""), row.get("abstract") or ""
                if not pid or pid in seen or len(abstract) < 200 or not row.get("title"):
                    continue
                seen.add(pid)
                paper = Paper(
                    id=pid,
                    title=" ".join(str(row["title"]).split()),
                    abstract=" ".join(str(abstract).split()),
                    authors=tuple(str(a) for a in (row.get("authors") or ())[:20]),
                    categories=tuple(str(c) for c in (row.get("categories") or ())[:6]),
                    published=_day(row.get("published")),
                    sources={"bench": "evidence_cost"},
                )
                texts.append(paper)
                yield paper
                if len(texts) >= count:
                    return
    n = 0
    while len(texts) + n < count:
        base = texts[n % len(texts)]
        yield Paper(
            id=f"bench.{n:07d}",
            title=base.title,
            abstract=base.abstract,
            authors=base.authors,
            categories=base.categories,
            published=base.published,
            sources={"bench": "evidence_cost (repeated text)"},
        )
        n += 1


def questions(n: int) -> list[str]:
    """Question-like lines: Hugging Face's one-line AI summaries (claims about papers), first ``n``."""
    out: list[str] = []
    with gzip.open(SHARED / "hf_daily.jsonl.gz", "rb") as fh:
        for line in fh:
            summary = orjson.loads(line).get("ai_summary")
            if isinstance(summary, str) and 40 <= len(summary) <= 240:
                out.append(summary)
                if len(out) >= n:
                    break
    return out


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


class Hashed:
    """paperfeed's fake embedder (a random projection of hashed words), at ``dimension``, as ``model_id``."""

    def __init__(self, model_id: str, dimension: int) -> None:
        from paperfeed.adapters.embed.fake import FakeEmbedder

        self._inner = FakeEmbedder(dimension, name="bench")
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Any) -> Any:
        return self._inner.embed(texts)

    def embed_spans(self, texts: Any, spans: Any, heads: Any) -> Any:
        return self._inner.embed_spans(texts, spans, heads)


def build(data_dir: Path, papers: int, *, keep_keyword: bool = False) -> dict[str, float]:
    """The store, its papers' vectors and sentences (once; a marker says it is done), then both sentence
    indexes from scratch, measured."""
    import shutil

    from paperfeed.bootstrap import build_app
    from paperfeed.domain.ingest import Batch
    from paperfeed.services.indexing import IndexingService
    from paperfeed.services.sentences import SentenceIndexer
    from paperfeed.settings_model import SettingsModel

    settings = SettingsModel(data_dir=data_dir, embedding_backend="torch")
    app = build_app(settings)
    try:
        model_id = app.indexes.embedders.current().model_id
        embedder = Hashed(model_id, 384)
        marker = data_dir / f"stored-{papers}"
        if not marker.exists():
            started = time.perf_counter()
            batch: list[Any] = []
            for paper in real_papers(papers):
                batch.append(paper)
                if len(batch) == 5000:
                    app.core.store.apply_batch(Batch(papers=batch))
                    batch = []
            if batch:
                app.core.store.apply_batch(Batch(papers=batch))
            print(f"stored {papers:,} papers in {time.perf_counter() - started:.0f} s", flush=True)
            app.indexes.keyword.opened()  # the papers' tantivy index, built from the store
            started = time.perf_counter()
            indexing = IndexingService(
                app.indexes.embeddings,
                embedder,
                app.indexes.vector_index,
                batch_size=512,
            )
            indexing.run()
            print(
                f"paper vectors (hashed) and their index in {time.perf_counter() - started:.0f} s", flush=True
            )
            from paperfeed.adapters.sentences.splitter import SentencexSplitter

            started = time.perf_counter()
            sentences = SentenceIndexer(
                app.indexes.sentences,  # the plain store: the indexes are built below, measured
                embedder,
                SentencexSplitter(),
                app.indexes.role_models,
                batch_size=512,
            )
            done = sentences.run()
            print(
                f"sentences: {done.papers:,} papers, {done.sentences:,} sentences in "
                f"{time.perf_counter() - started:.0f} s",
                flush=True,
            )
            marker.write_text("done")
        for folder in ("sentence-vectors",) if keep_keyword else ("sentence-keyword", "sentence-vectors"):
            shutil.rmtree(data_dir / folder, ignore_errors=True)
        app.indexes.__dict__.pop("sentence_keyword", None)
        app.indexes.__dict__.pop("evidence", None)
        counts = app.indexes.evidence_rows.counts(current=False)
        evidence = app.indexes.evidence
        wall, cpu = time.perf_counter(), time.process_time()
        words = evidence.keyword.catch_up()
        keyword_wall, keyword_cpu = time.perf_counter() - wall, time.process_time() - cpu
        evidence.keyword.close()
        print(  # at once: the vector index's build that follows takes far longer
            f"sentence keyword index (tantivy): {words:,} papers' {counts[1]:,} sentences in "
            f"{keyword_wall:.0f} s wall, {keyword_cpu:.0f} CPU-s, "
            f"{folder_bytes(data_dir / 'sentence-keyword') / 2**20:.0f} MiB",
            flush=True,
        )
        wall, cpu = time.perf_counter(), time.process_time()
        vectors = evidence.vectors().catch_up(save=True)
        vector_wall, vector_cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(
            f"sentence vector index: {vectors:,} papers' sentences in {vector_wall:.0f} s wall, "
            f"{vector_cpu:.0f} CPU-s ({evidence.vectors().check().indexed:,} sentences); load {load()}",
            flush=True,
        )
        checks = evidence.check()
        assert all(c.consistent for c in checks), checks
        assert vectors == counts[0], (vectors, counts)
        assert keep_keyword or words == counts[0], (words, counts)
    finally:
        app.close()
    return {
        "papers": float(counts[0]),
        "sentences": float(counts[1]),
        "keyword_wall": keyword_wall,
        "keyword_cpu": keyword_cpu,
        "keyword_bytes": float(folder_bytes(data_dir / "sentence-keyword")),
        "vector_wall": vector_wall,
        "vector_cpu": vector_cpu,
        "vector_bytes": float(folder_bytes(data_dir / "sentence-vectors")),
    }


def load() -> str:
    """The machine's load averages (1, 5, 15 min): the benches share 2 cores with other jobs."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def latency(data_dir: Path, queries: list[str], warmup: int) -> dict[str, dict[str, float]]:
    env = {**product_env(data_dir), "PAPERFEED_EMBEDDING_BACKEND": "torch"}
    # The meaning floor off: the query is the model's, the stored vectors hashed words, so every cosine is
    # near 0 and the floor would empty the answers (skipping the work a real answer does).
    env["PAPERFEED_EVIDENCE_MIN_COSINE"] = "-1"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env["PAPERFEED_SECRET_KEY"] = secrets.token_hex(32)
    token = reader_token(data_dir, env["PAPERFEED_SECRET_KEY"])
    command = [
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--base-url",
        base,
        "--log-level",
        "warning",
    ]
    server = subprocess.Popen([sys.executable, "-m", "paperfeed", *command], env=env)
    out: dict[str, dict[str, float]] = {}
    try:
        wait_until_up(base, server, timeout=600)
        with httpx.Client(
            base_url=base, timeout=300.0, headers={"Authorization": f"Bearer {token}"}
        ) as client:
            print(f"the server's model loaded after {wait_for_model(client):.0f} s", flush=True)
            for path in ("/api/evidence", "/api/papers/search"):
                for q in queries[:warmup]:  # model, indexes and caches loaded
                    client.get(path, params={"q": q, "limit": 20}).raise_for_status()
            print(f"load before the queries: {load()}", flush=True)
            for path in ("/api/evidence", "/api/papers/search"):
                times: list[float] = []
                cpu = _cpu_seconds(server.pid)
                notes = 0
                for q in queries[warmup:]:
                    started = time.perf_counter()
                    answer = client.get(path, params={"q": q, "limit": 20})
                    times.append((time.perf_counter() - started) * 1000)
                    answer.raise_for_status()
                    notes += bool(path == "/api/evidence" and answer.json().get("notes"))
                cpu = _cpu_seconds(server.pid) - cpu
                print(f"{path}: {len(times)} queries done, load {load()}", flush=True)
                times.sort()
                out[path] = {
                    "p50": statistics.median(times),
                    "p99": times[min(len(times) - 1, int(0.99 * len(times)))],
                    "cpu_ms": 1000 * cpu / len(times),
                    "queries": float(len(times)),
                    "notes": float(notes),
                }
    finally:
        server.terminate()
        server.wait(timeout=60)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data-dir", type=Path, required=True, help="kept and reused (the store is built once)"
    )
    parser.add_argument("--papers", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument(
        "--skip-build", action="store_true", help="measure queries on the indexes as they are"
    )
    parser.add_argument(
        "--keep-keyword",
        action="store_true",
        help="keep the sentence keyword index as built before; rebuild and measure the vector index only",
    )
    args = parser.parse_args()
    print(
        f"CPU flags: {cpu_flags()}; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; load {load()}",
        flush=True,
    )
    args.data_dir.mkdir(parents=True, exist_ok=True)
    if not args.skip_build:
        b = build(args.data_dir, args.papers, keep_keyword=args.keep_keyword)
        scale = PER / b["papers"]
        print(
            f"\nsentence indexes built from {b['papers']:,.0f} papers' {b['sentences']:,.0f} stored sentences"
        )
        print(f"{'':28s} {'wall s':>9s} {'CPU s':>9s} {'MiB':>9s}   per 100k papers: wall s, CPU s, MiB")
        rows = (("keyword index (tantivy)", "keyword"), ("vector index (HNSW)", "vector"))
        for name, key in rows[1:] if args.keep_keyword else rows:
            wall, cpu, size = b[f"{key}_wall"], b[f"{key}_cpu"], b[f"{key}_bytes"] / 2**20
            print(
                f"{name:28s} {wall:9.0f} {cpu:9.0f} {size:9.0f}   {wall * scale:.0f}, {cpu * scale:.0f}, "
                f"{size * scale:.0f}"
            )
    queries = questions(args.queries + args.warmup)
    found = latency(args.data_dir, queries, args.warmup)
    print(
        f"\nqueries through the served API ({len(queries) - args.warmup} after {args.warmup} warm-up), "
        "limit 20"
    )
    print(f"{'':22s} {'p50 ms':>8s} {'p99 ms':>8s} {'server CPU ms/query':>20s}")
    for path, m in found.items():
        print(f"{path:22s} {m['p50']:8.0f} {m['p99']:8.0f} {m['cpu_ms']:20.0f}")
    e, s = found["/api/evidence"], found["/api/papers/search"]
    print(
        f"evidence / paper search: p50 ×{e['p50'] / s['p50']:.2f}, CPU ×{e['cpu_ms'] / s['cpu_ms']:.2f}; "
        f"{e['notes']:.0f} evidence answers carried a note"
    )


if __name__ == "__main__":
    main()
