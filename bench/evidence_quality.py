"""Evidence search on real judgments: SciFact's rationale sentences (issue #42).

SciFact (``../shared/data``, CC BY-NC: evaluation only) gives, for each claim, the sentences of the
abstracts that support or contradict it (``evidence_sentences``, indices into the corpus's
``abstract_sentences``). Each claim is sent as a question and every sentence of the corpus is ranked;
the score is sentence-level nDCG@10, recall@10, recall@100 and hit@10 (a rationale in the top 10).

**Mapping the judgments onto paperfeed's sentences.** paperfeed cuts its own sentences (sentencex) out
of the stored abstract, which may differ from SciFact's ``abstract_sentences``. Each SciFact sentence is
located in the stored abstract (whitespace-insensitively, in order); a paperfeed sentence stands for every
SciFact sentence of its paper it overlaps by at least half of the shorter of the two. A ranked list of
paperfeed sentences becomes a ranked list of SciFact sentences (each at its first appearance: a
paperfeed sentence that merges two rationales finds both, one split in two is found once), scored
against SciFact's own qrels. The run prints how many of SciFact's sentences (and rationales) map exactly.

Two modes:

* ``tune`` (train claims only): in process on a copy of the instance's data folder, the three lists are
  read once per claim at their deepest, then every setting of a grid is ranked by the service's own
  :meth:`~paperfeed.services.evidence.EvidenceSearch.rank`; the best setting by nDCG@10 (hit@10 breaking
  ties) is printed, with the neighbours of each parameter. Settings are chosen here and nowhere else.
* ``served`` (test claims, the figure docs/benchmarks.md quotes): ``paperfeed import`` + ``paperfeed
  index`` on the data folder (nothing to do when it is already indexed), ``paperfeed serve`` on a copy,
  and each claim sent as ``GET /api/evidence?q=…&limit=100`` with a reader's token; beside it, measured in
  the same run on the same sentences: BM25 over SciFact's own sentences (bm25s, English stop words: the
  issue's baseline) and dense over the instance's stored sentence vectors (the claim's cosine with every
  sentence, exactly). 95 % bootstrap intervals over claims, and paired differences.

    HF_HUB_OFFLINE=1 .venv/bin/python -m bench.evidence_quality tune --data-dir D
    HF_HUB_OFFLINE=1 .venv/bin/python -m bench.evidence_quality served --data-dir D [--split test]
"""

from __future__ import annotations

import argparse
import gzip
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson

from bench.ir_metrics import ndcg_at_k, recall_at_k
from bench.served_quality import free_port, paperfeed, product_env, reader_token, wait_until_up
from paperfeed.adapters.embed.cpu import cpu_info

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
CORPUS = SHARED / "scifact_corpus.jsonl.gz"
QRELS = SHARED / "qrels_scifact.jsonl.gz"
PREFIX = "scifact:"
LIMIT = 100  # sentences asked per claim: recall@100 is whole

# -- the judgments --------------------------------------------------------------------------------------


def load_judgments(split: str) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """(claim id → text, claim id → {"<doc>:<sentence index>": 1}) for the claims of ``split`` with
    rationales (BEIR's ``beir_split``: train, or test = SciFact's validation claims)."""
    claims: dict[str, str] = {}
    rel: dict[str, dict[str, int]] = defaultdict(dict)
    with gzip.open(QRELS, "rb") as fh:
        for line in fh:
            row = orjson.loads(line)
            if row.get("beir_split") != split or not row.get("evidence_sentences"):
                continue
            claims[row["query_id"]] = row["query"]
            for index in row["evidence_sentences"]:
                rel[row["query_id"]][f"{row['doc_id']}:{index}"] = 1
    return claims, dict(rel)


def load_corpus() -> dict[str, list[str]]:
    with gzip.open(CORPUS, "rb") as fh:
        return {str(d["id"]): list(d["abstract_sentences"]) for d in map(orjson.loads, fh)}


_SPACE = re.compile(r"\s+")


def locate(abstract: str, sentences: Sequence[str]) -> list[tuple[int, int] | None]:
    """Each sentence's ``[start, end)`` in ``abstract``, found in order, whitespace runs equal to any
    other (None for one not found)."""
    kept: list[str] = []
    where: list[int] = []
    previous_space = True
    for i, ch in enumerate(abstract):
        if ch.isspace():
            if previous_space:
                continue
            kept.append(" ")
            previous_space = True
        else:
            kept.append(ch)
            previous_space = False
        where.append(i)
    flat = "".join(kept)
    spans: list[tuple[int, int] | None] = []
    at = 0
    for sentence in sentences:
        wanted = _SPACE.sub(" ", sentence).strip()
        found = flat.find(wanted, at) if wanted else -1
        if found < 0:
            spans.append(None)
            continue
        end = found + len(wanted)
        spans.append((where[found], where[end - 1] + 1))
        at = end
    return spans


@dataclass
class SentenceMap:
    """paperfeed's sentences (paper id, position) → the SciFact sentence ids they stand for."""

    of: dict[tuple[str, int], tuple[str, ...]]
    scifact_sentences: int
    located: int
    exact: int  # SciFact sentences whose span is exactly one paperfeed sentence's
    rationale_exact: int
    rationale_mapped: int
    rationales: int

    def ranked(self, sentences: Sequence[tuple[str, int]]) -> list[str]:
        """A ranked list of paperfeed sentences as a ranked list of SciFact sentence ids."""
        out: dict[str, None] = {}
        for key in sentences:
            for sid in self.of.get(key, ()):
                out.setdefault(sid, None)
        return list(out)


def build_map(
    rows: Mapping[str, Sequence[tuple[int, int]]],
    abstracts: Mapping[str, str],
    corpus: Mapping[str, list[str]],
    rationale_ids: set[str],
) -> SentenceMap:
    """``rows``: each paper's paperfeed sentence spans; ``abstracts``: its stored abstract."""
    of: dict[tuple[str, int], tuple[str, ...]] = {}
    total = located = exact = r_exact = r_mapped = 0
    for doc, sentences in corpus.items():
        pid = PREFIX + doc
        total += len(sentences)
        spans = locate(abstracts.get(pid, ""), sentences)
        mine = list(rows.get(pid, ()))
        mapped_sf: set[str] = set()
        for j, span in enumerate(spans):
            if span is None:
                continue
            located += 1
            sid = f"{doc}:{j}"
            if span in mine:
                exact += 1
                if sid in rationale_ids:
                    r_exact += 1
        for position, (a, b) in enumerate(mine):
            found = []
            for j, span in enumerate(spans):
                if span is None:
                    continue
                overlap = min(b, span[1]) - max(a, span[0])
                if overlap > 0 and overlap >= 0.5 * min(b - a, span[1] - span[0]):
                    found.append(f"{doc}:{j}")
            if found:
                of[(pid, position)] = tuple(found)
                mapped_sf.update(found)
        r_mapped += len(mapped_sf & rationale_ids)
    return SentenceMap(of, total, located, exact, r_exact, r_mapped, len(rationale_ids))


# -- scoring -------------------------------------------------------------------------------------------

METRICS = ("ndcg@10", "recall@10", "recall@100", "hit@10")


def per_claim(
    run: Mapping[str, Sequence[str]], rel: Mapping[str, Mapping[str, int]]
) -> dict[str, np.ndarray]:
    claims = sorted(rel)
    out = {m: np.zeros(len(claims)) for m in METRICS}
    for i, q in enumerate(claims):
        ranked = run.get(q, [])
        out["ndcg@10"][i] = ndcg_at_k(ranked, rel[q], 10)
        out["recall@10"][i] = recall_at_k(ranked, rel[q], 10)
        out["recall@100"][i] = recall_at_k(ranked, rel[q], 100)
        out["hit@10"][i] = float(any(rel[q].get(s, 0) > 0 for s in ranked[:10]))
    return out


def interval(values: np.ndarray, rounds: int = 2000, seed: int = 42) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(rounds, len(values)))].mean(axis=1)
    return float(values.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def fmt(v: tuple[float, float, float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def report(name: str, scores: dict[str, np.ndarray]) -> str:
    return f"{name:44s} " + "  ".join(f"{fmt(interval(scores[m])):>21s}" for m in METRICS)


def header() -> str:
    return f"{'':44s} " + "  ".join(f"{m:>21s}" for m in METRICS)


# -- reading the instance --------------------------------------------------------------------------------


def instance_rows(data_dir: Path) -> tuple[dict[str, list[tuple[int, int]]], dict[str, str]]:
    """Each paper's stored sentence spans and abstract, read from the instance's store."""
    from paperfeed.bootstrap import build_app
    from paperfeed.settings_model import SettingsModel

    app = build_app(SettingsModel(data_dir=data_dir))
    try:
        rows = app.indexes.evidence_rows.changed(None, limit=10**7, vectors=False)
        spans = {r.paper_id: [(s.start, s.end) for s in r.sentences] for r in rows}
        abstracts = {r.paper_id: r.abstract for r in rows}
    finally:
        app.close()
    return spans, abstracts


def sentence_map(data_dir: Path, corpus: dict[str, list[str]], rationales: set[str]) -> SentenceMap:
    spans, abstracts = instance_rows(data_dir)
    mapping = build_map(spans, abstracts, corpus, rationales)
    print(
        f"mapping: {mapping.located:,} of SciFact's {mapping.scifact_sentences:,} sentences located in the "
        f"stored abstracts; {mapping.exact:,} ({mapping.exact / mapping.scifact_sentences:.1%}) are "
        f"exactly one paperfeed sentence; rationales: {mapping.rationale_exact} of {mapping.rationales} "
        f"exact, {mapping.rationale_mapped} mapped by overlap"
    )
    return mapping


# -- tune (train) ----------------------------------------------------------------------------------------

DEEP: dict[str, Any] = {"keyword_depth": 1000, "dense_depth": 1000, "paper_depth": 50}


def tune(data_dir: Path, split: str, claims_limit: int | None = None) -> None:
    from paperfeed.bootstrap import build_app
    from paperfeed.bootstrap.search import evidence_settings
    from paperfeed.domain.query import parse_query
    from paperfeed.settings_model import SettingsModel

    claims, rel = load_judgments(split)
    if claims_limit is not None:  # a quick look at the code path, never a figure
        claims = dict(list(claims.items())[:claims_limit])
        rel = {q: rel[q] for q in claims}
    corpus = load_corpus()
    mapping = sentence_map(data_dir, corpus, {s for r in rel.values() for s in r})
    with tempfile.TemporaryDirectory(prefix="pf-evidence-tune-") as tmp:
        copy = Path(tmp) / "data"
        shutil.copytree(data_dir, copy)
        settings = SettingsModel(data_dir=copy)
        app = build_app(settings)
        try:
            service = app.search.evidence
            shipped = evidence_settings(settings)
            deep = replace(shipped, **DEEP)
            started = time.process_time()
            legs = {}
            for qid, text in claims.items():
                notes: list[str] = []
                legs[qid] = service.legs(parse_query(text), None, deep, notes)
                if notes and len(legs) == 1:
                    print(f"  note: {notes}")
            print(f"legs of {len(legs)} {split} claims read in {time.process_time() - started:.0f} CPU-s")

            def score(w: Any) -> dict[str, np.ndarray]:
                run = {}
                for qid, leg in legs.items():
                    fused = service.rank(leg, w)[:LIMIT]
                    run[qid] = mapping.ranked([_split(f.key) for f in fused])
                return per_claim(run, rel)

            def mean(s: dict[str, np.ndarray]) -> tuple[float, float]:
                return float(s["ndcg@10"].mean()), float(s["hit@10"].mean())

            print(header())
            print(report(f"shipped now ({describe(shipped)})", score(shipped)))
            for name, w in (
                ("words only", replace(shipped, dense=0.0, paper=0.0, paper_depth=0)),
                ("meaning only", replace(shipped, keyword=0.0, paper=0.0, paper_depth=0)),
                ("words + meaning, no prior", replace(shipped, paper=0.0, paper_depth=0)),
            ):
                print(report(name, score(w)))
            grid: dict[str, tuple[Any, ...]] = {
                "rrf_k": (2.0, 5.0, 10.0, 20.0, 60.0),
                "keyword": (0.0, 0.5, 0.75, 1.0, 1.5, 2.0),
                "paper": (0.0, 0.5, 1.0, 1.5, 2.0, 3.0),
                "paper_k": (1.0, 2.0, 5.0, 10.0, 20.0),
                "paper_depth": (0, 5, 10, 20, 50),
                "keyword_depth": (50, 100, 200, 500, 1000),
                "dense_depth": (50, 100, 200, 500, 1000),
                "per_paper": (0, 1, 2, 3),
            }
            best = shipped
            best_score = mean(score(best))
            for round_ in range(3):  # coordinate ascent: each parameter in turn, all others fixed
                moved = False
                for name, values in grid.items():
                    for value in values:
                        trial = replace(best, **{name: value})
                        found = mean(score(trial))
                        if found > best_score:
                            best, best_score, moved = trial, found, True
                ndcg, hit = best_score
                print(f"round {round_ + 1}: {describe(best)} → nDCG@10 {ndcg:.4f}, hit@10 {hit:.4f}")
                if not moved:
                    break
            print(report(f"best on {split} ({describe(best)})", score(best)))
            print("\nneighbours of the best (nDCG@10 / hit@10):")
            for name, values in grid.items():
                cells = []
                for value in values:
                    s = mean(score(replace(best, **{name: value})))
                    cells.append(f"{value}: {s[0]:.3f}/{s[1]:.3f}")
                print(f"  {name:14s} " + "  ".join(cells))
        finally:
            app.close()


def _split(key: str) -> tuple[str, int]:
    paper_id, _, position = key.rpartition("#")
    return paper_id, int(position)


def describe(w: Any) -> str:
    return (
        f"k {w.rrf_k:g}, kw {w.keyword:g}, dense {w.dense:g}, paper {w.paper:g}/k {w.paper_k:g}, "
        f"depths {w.keyword_depth}/{w.dense_depth}/{w.paper_depth}, per paper {w.per_paper}"
    )


# -- served (test) ---------------------------------------------------------------------------------------


def wait_for_model(client: httpx.Client, timeout: float = 600.0) -> float:
    """Seconds until the server's embedding model has loaded: ``serve`` answers at once and, until then,
    searches with words only and says so (``MODEL_LOADING_NOTE``); a figure taken meanwhile would not be
    the hybrid's."""
    from paperfeed.domain.search import MODEL_LOADING_NOTE

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        answer = client.get("/api/evidence", params={"q": "does the model load", "limit": 1})
        answer.raise_for_status()
        if MODEL_LOADING_NOTE not in (answer.json().get("notes") or []):
            return time.monotonic() - started
        time.sleep(1.0)
    raise SystemExit(f"the server's embedding model did not load within {timeout:.0f} s")


def served_run(
    base: str, claims: Mapping[str, str], token: str
) -> tuple[dict[str, list[tuple[str, int]]], int, float]:
    """Each claim's ranked sentences (paper id, position) from ``GET /api/evidence``, notes, ms a claim."""
    run: dict[str, list[tuple[str, int]]] = {}
    noted = 0
    with httpx.Client(base_url=base, timeout=120.0, headers={"Authorization": f"Bearer {token}"}) as client:
        print(f"the server's model loaded after {wait_for_model(client):.0f} s", flush=True)
        started = time.perf_counter()
        for qid, text in claims.items():
            answer = client.get("/api/evidence", params={"q": text, "limit": LIMIT})
            answer.raise_for_status()
            body = orjson.loads(answer.content)
            if body.get("notes"):
                noted += 1
                if noted == 1:
                    print(f"  note on {text!r}: {body['notes']}")
            hits = [(s["rank"], p["id"], s["position"]) for p in body["papers"] for s in p["sentences"]]
            run[qid] = [(pid, pos) for _, pid, pos in sorted(hits)]
    return run, noted, (time.perf_counter() - started) * 1000 / max(len(claims), 1)


def bm25_baseline(corpus: Mapping[str, list[str]], claims: Mapping[str, str]) -> dict[str, list[str]]:
    """bm25s over SciFact's own ``abstract_sentences``, English stop words (the issue's baseline)."""
    import bm25s

    ids = [f"{doc}:{j}" for doc, sentences in corpus.items() for j in range(len(sentences))]
    texts = [s for sentences in corpus.values() for s in sentences]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    names = list(claims)
    found, _ = retriever.retrieve(
        bm25s.tokenize([claims[q] for q in names], stopwords="en", show_progress=False),
        k=LIMIT,
        show_progress=False,
    )
    return {q: [ids[i] for i in found[n]] for n, q in enumerate(names)}


def dense_baseline(data_dir: Path, claims: Mapping[str, str]) -> dict[str, list[tuple[str, int]]]:
    """The claim's cosine with every stored sentence vector of the instance, exactly (its own model)."""
    from paperfeed.bootstrap import build_app
    from paperfeed.domain.evidence import sentence_space
    from paperfeed.settings_model import SettingsModel

    app = build_app(SettingsModel(data_dir=data_dir))
    try:
        embedder = app.indexes.embedders.current()
        space = sentence_space(embedder.model_id)
        rows = app.indexes.evidence_rows.changed(None, limit=10**7, vectors=True, model_id=space)
        keys = [(r.paper_id, i) for r in rows for i in range(len(r.sentences))]
        matrix = np.concatenate([r.vectors for r in rows if r.vectors is not None and len(r.vectors)]).astype(
            np.float32
        )
        names = list(claims)
        queries = np.asarray(embedder.embed([claims[q] for q in names]), dtype=np.float32)
    finally:
        app.close()
    out: dict[str, list[tuple[str, int]]] = {}
    scores = queries @ matrix.T
    for n, q in enumerate(names):
        top = np.argpartition(-scores[n], LIMIT)[:LIMIT]
        top = top[np.argsort(-scores[n][top])]
        out[q] = [keys[i] for i in top]
    return out


def served(data_dir: Path, split: str, *, as_is: bool = False) -> None:
    claims, rel = load_judgments(split)
    corpus = load_corpus()
    rationales = {s for r in rel.values() for s in r}
    print(f"{cpu_info().describe()}, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"SciFact {split}: {len(claims)} claims with {len(rationales)} rationale sentences")
    env = product_env(data_dir)
    if as_is:  # an instance imported and indexed before, whose pending work is not the ranking's
        print("import and index: skipped (--as-is: the data folder is measured as it is)")
    else:
        took = paperfeed("import", "--id-namespace", "scifact", str(CORPUS), env=env)
        print(f"import: {took:.0f} s")
        took = paperfeed("index", env=env)
        print(f"index: {took:.0f} s")
    mapping = sentence_map(data_dir, corpus, rationales)
    server: subprocess.Popen[bytes] | None = None
    with tempfile.TemporaryDirectory(prefix="pf-evidence-served-") as tmp:
        copy = Path(tmp) / "data"
        shutil.copytree(data_dir, copy)  # serving writes (accounts, caches): never into the kept folder
        env = product_env(copy)
        try:
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            env_serve = {**env, "PAPERFEED_SECRET_KEY": secrets.token_hex(32)}
            token = reader_token(copy, env_serve["PAPERFEED_SECRET_KEY"])
            command = ["serve", "--host", "127.0.0.1", "--port", str(port), "--base-url", base]
            print(f"$ paperfeed {' '.join(command)}", flush=True)
            server = subprocess.Popen(
                [sys.executable, "-m", "paperfeed", *command, "--log-level", "warning"], env=env_serve
            )
            wait_until_up(base, server)
            run, noted, ms = served_run(base, claims, token)
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
        dense = dense_baseline(copy, claims)
    served_scores = per_claim({q: mapping.ranked(r) for q, r in run.items()}, rel)
    bm25 = per_claim(bm25_baseline(corpus, claims), rel)
    dense_scores = per_claim({q: mapping.ranked(r) for q, r in dense.items()}, rel)
    print(f"\nSciFact {split}, sentence level, {len(claims)} claims; {cpu_info().describe()}")
    print(header())
    print(report("served: GET /api/evidence", served_scores))
    print(report("BM25 over SciFact's sentences (bm25s, en stop)", bm25))
    print(report("dense over the stored sentence vectors", dense_scores))
    for name, other in (("BM25", bm25), ("dense", dense_scores)):
        diffs = "  ".join(f"{m} {fmt(interval(served_scores[m] - other[m]))}" for m in ("ndcg@10", "hit@10"))
        print(f"served − {name}: {diffs}")
    print(f"{noted} answers carried a note; {ms:.0f} ms per claim over HTTP (wall, shared machine)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("mode", choices=["tune", "served"])
    parser.add_argument("--data-dir", type=Path, required=True, help="an instance that imported SciFact")
    parser.add_argument("--split", choices=["train", "test"], default=None)
    parser.add_argument("--claims", type=int, default=None, help="tune: only N claims (a smoke run)")
    parser.add_argument(
        "--as-is",
        action="store_true",
        help="served: skip paperfeed import and index (e.g. sentences being redone for a new role model, "
        "which the unfiltered ranking does not read)",
    )
    args = parser.parse_args()
    if args.mode == "tune":
        split = args.split or "train"
        if split != "train":
            raise SystemExit("settings are chosen on the train claims only")
        tune(args.data_dir, split, args.claims)
    else:
        served(args.data_dir, args.split or "test", as_is=args.as_is)


if __name__ == "__main__":
    main()
