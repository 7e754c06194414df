"""Keyword search quality on SciFact (BEIR): tune on the *train* split, report train and test nDCG@10.

The SciFact corpus (5,183 abstracts) goes into a temporary paperfeed store; each claim is parsed by
:func:`paperfeed.domain.query.parse_query` exactly as a user's query would be and searched with the
real adapters. Settings are chosen on ``beir_split == "train"`` only; the test split is evaluated once
per setting for the report. Published BM25 anchor (BEIR paper): nDCG@10 0.665 on test.

    .venv/bin/python -m bench.keyword_quality            # grid over weights and tokenizers
    .venv/bin/python -m bench.keyword_quality --quick    # the shipped defaults only
"""

from __future__ import annotations

import argparse
import gzip
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from sqlalchemy import text

from bench.ir_metrics import evaluate, load_qrels
from paperfeed.adapters.keyword.fts5 import FieldWeights, Fts5KeywordIndex
from paperfeed.adapters.keyword.tantivy_index import TANTIVY_WEIGHTS, TantivyKeywordIndex
from paperfeed.adapters.store import SqlPaperStore, open_store
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.query import parse_query
from paperfeed.domain.search import ParsedQuery, ScoredId

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PREFIX = "scifact:"
K = 100

Search = Callable[[ParsedQuery, int], list[ScoredId]]


def load_corpus(store: SqlPaperStore, path: Path) -> int:
    papers: list[Paper] = []
    with gzip.open(path, "rb") as fh:
        for line in fh:
            row = orjson.loads(line)
            papers.append(
                Paper(id=PREFIX + str(row["id"]), title=row["title"] or "", abstract=row["abstract"])
            )
    for start in range(0, len(papers), 1000):
        store.apply_batch(Batch(papers=papers[start : start + 1000]))
    return len(papers)


def run_queries(search: Search, queries: dict[str, str]) -> tuple[dict[str, list[str]], float]:
    run: dict[str, list[str]] = {}
    started = time.perf_counter()
    for qid, claim in queries.items():
        run[qid] = [hit.paper_id for hit in search(parse_query(claim), K)]
    return run, (time.perf_counter() - started) / max(len(queries), 1) * 1000


def retokenize_fts5(store: SqlPaperStore, tokenize: str) -> None:
    """Bench only: rebuild papers_fts with another tokenizer (the shipped one is fixed by migration 0003)."""
    with store.engine.begin() as conn:
        conn.execute(text("DROP TABLE papers_fts"))
        conn.execute(
            text(
                "CREATE VIRTUAL TABLE papers_fts USING fts5(title, abstract, authors, content='papers', "
                f"content_rowid='rowid', tokenize='{tokenize}')"
            )
        )
        conn.execute(text("INSERT INTO papers_fts(papers_fts) VALUES ('rebuild')"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--quick", action="store_true", help="only the shipped defaults")
    parser.add_argument("--stem-only", action="store_true", help="tantivy: skip the unstemmed analyzer")
    parser.add_argument("--engines", nargs="+", default=["fts5", "tantivy"], choices=["fts5", "tantivy"])
    args = parser.parse_args()
    train_q, train_rel = load_qrels(args.data / "qrels_scifact.jsonl.gz", "train", PREFIX)
    test_q, test_rel = load_qrels(args.data / "qrels_scifact.jsonl.gz", "test", PREFIX)
    rows: list[tuple[str, str, float, float, float, float, float]] = []

    def measure(engine: str, setting: str, search: Search) -> None:
        run, ms = run_queries(search, train_q)
        tr = evaluate(run, train_rel)
        run, _ = run_queries(search, test_q)
        te = evaluate(run, test_rel)
        rows.append((engine, setting, tr["ndcg@10"], tr["recall@100"], te["ndcg@10"], te["recall@100"], ms))
        print(
            f"{engine:8s} {setting:44s} train nDCG@10 {tr['ndcg@10']:.4f} R@100 {tr['recall@100']:.4f} | "
            f"test nDCG@10 {te['ndcg@10']:.4f} R@100 {te['recall@100']:.4f} | {ms:5.1f} ms/q",
            flush=True,
        )

    with tempfile.TemporaryDirectory(prefix="pf-kwq-") as tmp:
        root = Path(tmp)
        store = open_store(f"sqlite+pysqlite:///{root / 'paperfeed.db'}")
        n = load_corpus(store, args.data / "scifact_corpus.jsonl.gz")
        print(f"SciFact: {n:,} docs; train {len(train_q)} queries, test {len(test_q)} queries\n")
        fts = Fts5KeywordIndex(store.engine)
        default_fts = FieldWeights()
        tokenizers = ["porter unicode61 remove_diacritics 2"] if "fts5" in args.engines else []
        if not args.quick and tokenizers:
            tokenizers.append("unicode61 remove_diacritics 2")
        for tok in tokenizers:
            if tok != tokenizers[0]:
                retokenize_fts5(store, tok)
            for title in [default_fts.title] if args.quick else [1.0, 2.0, 3.0, 4.0, 6.0, 10.0]:
                fts.weights = FieldWeights(title=title, abstract=1.0, authors=default_fts.authors)
                measure("fts5", f"{tok.split()[0]} title={title:g} abstract=1", fts.search)
        fts.close()
        for stemming in (
            [] if "tantivy" not in args.engines else [True] if args.quick or args.stem_only else [True, False]
        ):
            tv = TantivyKeywordIndex(root / f"kw-{stemming}", store.engine, stemming=stemming)
            for title in [TANTIVY_WEIGHTS.title] if args.quick else [0.1, 0.2, 0.3, 0.5, 1.0]:
                tv.weights = FieldWeights(title=title, abstract=1.0, authors=TANTIVY_WEIGHTS.authors)
                measure("tantivy", f"{'stem' if stemming else 'plain'} title={title:g} abstract=1", tv.search)
            tv.close()
        store.close()
    print("\nbest on train (chosen setting) per engine:")
    for engine in ("fts5", "tantivy"):
        tried = [r for r in rows if r[0] == engine]
        if not tried:
            continue
        best = max(tried, key=lambda r: r[2])
        print(f"  {engine:8s} {best[1]:44s} train nDCG@10 {best[2]:.4f} -> test nDCG@10 {best[4]:.4f}")
    print("  anchor   BEIR BM25 (Anserini)                         test nDCG@10 0.665")


if __name__ == "__main__":
    main()
