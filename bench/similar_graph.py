"""Similar papers with and without the citation-graph list (issue #16), on what can be measured offline.

Two parts, both through paperfeed's real composition (``build_app``: store, keyword engine, vector
index, the citation store and :class:`~paperfeed.services.search.HybridSearch` with
``PAPERFEED_SIMILAR_GRAPH_WEIGHT``), vectors from the benchmark cache (bench/vector_cache.py):

* ``--part identity --corpus scifact|seeds|arxiv_cats_4k``: these corpora have no citations. Every
  paper's 10 similar papers (arXiv sample: its test half) are computed without and with the graph list
  at ``--weight``; it prints how many lists differ (expected: none) and the corpus's similar-paper
  measure both ways: seed-page coherence@10 through ``GET /api/papers/{id}/similar``, arXiv primary
  category@10 (bench/similar_quality.py's measure, default settings). For SciFact only the identity is
  printed here (its co-evidence judgments are bench/similar_quality.py's; with no citations there, the
  graph cannot change them).
* ``--part s2``: the one place offline data has real citation edges: two recorded Semantic Scholar
  reference lists (``../shared/fixtures/s2_api``: CorpusID:1033682, pages 1 + 2, 156 references;
  CorpusID:49313245, 73 references), stored as edges of two citing works. Their references with an
  arXiv id and an abstract become papers of the store, beside the 4,000 papers of ``arxiv_cats_4k``.
  **Judgments** come from the citation contexts: two references cited in the same sentence of the
  citing paper are related (co-citation proximity, Gipp & Beel 2009), a finer relation than "both in
  the reference list", which is all the graph knows. For every reference with a same-sentence partner
  in the store: recall@10 of its partners and the reciprocal rank of the first, per graph weight.
  Caveat printed with the table: the partners are a subset of the list the graph promotes, and there
  are only two bibliographies, so a gain here cannot tell how the blend does on a real instance.

    nice -n 10 .venv/bin/python -m bench.similar_graph --part identity --corpus seeds
    nice -n 10 .venv/bin/python -m bench.similar_graph --part identity --corpus arxiv_cats_4k
    nice -n 10 .venv/bin/python -m bench.similar_graph --part identity --corpus scifact
    nice -n 10 .venv/bin/python -m bench.similar_graph --part s2
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from bench.similar_quality import (
    SHIPPED,
    agreement,
    instance,
    populate,
    primary_categories,
    seed_coherence,
    split_of,
)
from bench.vector_cache import SAMPLES, SHARED, Doc, VectorCache, load_corpus
from paperfeed.adapters.embed.cpu import cpu_info
from paperfeed.bootstrap import build_app
from paperfeed.domain.ids import InvalidPaperId, parse_arxiv_id
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import Citation, PaperLinks, WorkRef, work_key

TOP = 10
FIXTURES = SHARED / "fixtures" / "s2_api"
BIBLIOGRAPHIES = {
    "CorpusID:1033682": [
        "references_full_page1_offset0_next100.json",
        "references_full_page2_offset100_last.json",
    ],
    "CorpusID:49313245": ["references_full_single_page_no_next.json"],
}
WEIGHTS = [0.25, 0.5, 1.0, 2.0]


def _citing_key(name: str) -> str:
    """The fixtures do not give the citing paper's own ids; an opaque ``s2:`` key stands for it."""
    return "s2:" + hashlib.sha1(name.encode()).hexdigest()  # a name, not security


@dataclass
class Reference:
    key: str
    arxiv_id: str | None
    work: WorkRef
    doc: Doc | None  # a paper for the store (arXiv id and abstract), else None
    contexts: tuple[str, ...]


def _arxiv(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_arxiv_id(value).base
    except InvalidPaperId:
        return None


def load_bibliographies() -> dict[str, list[Reference]]:
    out: dict[str, list[Reference]] = {}
    for name, files in BIBLIOGRAPHIES.items():
        refs: list[Reference] = []
        for file in files:
            body = orjson.loads((FIXTURES / file).read_bytes())["body"]
            for item in body["data"]:
                cited: dict[str, Any] = item["citedPaper"]
                ids = cited.get("externalIds") or {}
                arxiv = _arxiv(ids.get("ArXiv"))
                key = work_key(arxiv_id=arxiv, doi=ids.get("DOI"), s2_id=cited.get("paperId"))
                if key is None:
                    continue  # unresolved reference: the store keeps no edge for it
                published = cited.get("publicationDate")
                work = WorkRef(
                    key=key,
                    title=cited.get("title"),
                    year=cited.get("year"),
                    published=date.fromisoformat(published) if published else None,
                    arxiv_id=arxiv,
                    doi=ids.get("DOI"),
                    citation_count=cited.get("citationCount"),
                    reference_count=cited.get("referenceCount"),
                )
                abstract = " ".join((cited.get("abstract") or "").split())
                doc = Doc(arxiv, " ".join(cited["title"].split()), abstract) if arxiv and abstract else None
                refs.append(Reference(key, arxiv, work, doc, tuple(item.get("contexts") or ())))
        out[name] = refs
    return out


def same_sentence_partners(refs: Sequence[Reference], in_store: set[str]) -> dict[str, set[str]]:
    """Paper → the other papers of the store cited in one of the same sentences."""
    by_context: dict[str, set[str]] = defaultdict(set)
    for ref in refs:
        if ref.arxiv_id in in_store:
            for context in ref.contexts:
                by_context[" ".join(context.split())].add(ref.arxiv_id)
    partners: dict[str, set[str]] = defaultdict(set)
    for group in by_context.values():
        for a, b in itertools.permutations(sorted(group), 2):
            partners[a].add(b)
    return partners


def graph_links(bibliographies: dict[str, list[Reference]]) -> list[PaperLinks]:
    out = []
    for name, refs in bibliographies.items():
        citing = _citing_key(name)
        me = WorkRef(key=citing, title=name)
        out.append(
            PaperLinks(
                paper_id=citing[:64],
                source="s2",
                work=me,
                works=(me, *(r.work for r in refs)),
                edges=tuple(Citation(citing=citing, cited=r.key, source="s2") for r in refs),
            )
        )
    return out


def _papers(docs: Sequence[Doc]) -> list[Paper]:
    return [Paper(id=d.id, title=d.title, abstract=d.abstract) for d in docs]


def part_s2(root: Path, cache: VectorCache, backend: str, engine: str, background: str) -> None:
    bibliographies = load_bibliographies()
    fixture_docs = list(
        {r.doc.id: r.doc for refs in bibliographies.values() for r in refs if r.doc is not None}.values()
    )
    back = [Doc(d.id, d.title, d.abstract) for d in load_corpus(background)]
    back = [d for d in back if _arxiv(d.id) == d.id and d.id not in {f.id for f in fixture_docs}]
    vectors = np.concatenate(
        [cache.vectors("s2_fixtures", fixture_docs, report=print), cache.vectors(background, back)]
    )
    papers = _papers([*fixture_docs, *back])
    settings = instance(root, backend, engine)
    populate(settings, papers, vectors, cache.embedder.model_id)
    app = build_app(settings)
    try:
        saved = app.catalogue.citations.save_links(
            graph_links(bibliographies), harvested_at=datetime.now(UTC)
        )
    finally:
        app.close()
    store_ids = {p.id for p in papers}
    queries: dict[str, tuple[str, set[str]]] = {}
    for name, refs in bibliographies.items():
        for paper_id, partners in same_sentence_partners(refs, store_ids).items():
            queries.setdefault(paper_id, (name, set()))[1].update(partners)
    listed = {
        name: {r.arxiv_id for r in refs if r.arxiv_id in store_ids} for name, refs in bibliographies.items()
    }
    print(
        f"store: {len(papers):,} papers ({len(fixture_docs)} from the two reference lists, "
        f"{len(back):,} of {background}); graph: {saved.edges_added} edges, {saved.works_added} works"
    )
    print(
        f"queries: {len(queries)} references with a same-sentence partner in the store "
        f"({sum(len(p) for _, p in queries.values())} partner pairs)"
    )
    header = f"{'similar papers':26s} {'recall@10':>10s} {'MRR@10':>8s} {'same list@10':>13s} {'ms':>6s}"
    print("\n" + header + "\n" + "-" * len(header))
    for weight in [0.0, *WEIGHTS]:
        app = build_app(instance(root, backend, engine, SHIPPED, weight))
        try:
            recall, rr, same, elapsed = [], [], [], 0.0
            for paper_id, (name, partners) in sorted(queries.items()):
                started = datetime.now(UTC)
                top = [h.paper.id for h in app.search.hybrid.similar(paper_id, limit=TOP)]
                elapsed += (datetime.now(UTC) - started).total_seconds()
                recall.append(len(partners & set(top)) / len(partners))
                first = next((i for i, t in enumerate(top) if t in partners), None)
                rr.append(0.0 if first is None else 1 / (first + 1))
                same.append(sum(t in listed[name] for t in top) / TOP)
        finally:
            app.close()
        label = "embedding + keyword (off)" if weight == 0 else f"+ graph, weight {weight:g}"
        ms = elapsed * 1000 / max(len(queries), 1)
        print(f"{label:26s} {np.mean(recall):10.4f} {np.mean(rr):8.4f} {np.mean(same):13.4f} {ms:6.1f}")
    print(
        "\ncaveat: the judged partners are references of the same list, which is exactly what the graph "
        "list promotes\n(every other reference of that list, ordered only by degree); two bibliographies, "
        f"{len(queries)} queries: this shows\nwhat the list does where edges exist, not how it ranks on a "
        "real instance's overlapping bibliographies."
    )


def part_identity(
    root: Path, cache: VectorCache, backend: str, engine: str, corpus: str, weight: float
) -> None:
    """Similar papers of every paper (arXiv samples: of the test half) without and with the graph list:
    how many lists differ, and the corpus's similar-paper measure both ways."""
    docs = list({d.id: d for d in load_corpus(corpus)}.values())
    category: dict[str, str] = {}
    if corpus in SAMPLES:
        primary = primary_categories(corpus)
        docs = [d for d in docs if d.id in primary]
        category = {"arxiv:" + d.id: primary[d.id] for d in docs}
    vectors = cache.vectors(corpus, docs, report=print)
    prefix = {"seeds": "seed:", "scifact": "scifact:"}.get(corpus, "arxiv:")
    papers = [Paper(id=prefix + d.id, title=d.title, abstract=d.abstract) for d in docs]
    folder = root / corpus
    populate(instance(folder, backend, engine), papers, vectors, cache.embedder.model_id)
    asked = [p.id for p in papers if not category or split_of(p.id) == "test"]
    # "off" twice: two runs of the same settings show how much the lists vary by themselves
    runs: dict[str, dict[str, list[str]]] = {}
    for label, w in (("off", 0.0), ("off again", 0.0), ("on", weight)):
        app = build_app(instance(folder, backend, engine, SHIPPED, w))
        try:
            assert bool(app.search.hybrid.similar_evidence) == (w > 0)
            runs[label] = {
                pid: [h.paper.id for h in app.search.hybrid.similar(pid, limit=TOP)] for pid in asked
            }
        finally:
            app.close()
    noise = sum(runs["off"][p] != runs["off again"][p] for p in asked)
    differ = sum(runs["off"][p] != runs["on"][p] for p in asked)
    print(
        f"{corpus}: {len(papers):,} papers; similar@{TOP} of {len(asked):,}: without vs with the graph "
        f"list (weight {weight:g}): {differ} lists differ; two runs without: {noise} differ"
    )
    if category:
        for label in runs:
            print(f"  category@{TOP} (test half), graph {label}: {agreement(runs[label], category):.4f}")
    if corpus == "seeds":
        coherence = seed_coherence(
            root,
            cache,
            backend,
            engine,
            {
                "without the graph": SHIPPED,
                "without the graph, again": SHIPPED,
                f"with the graph ({weight:g})": SHIPPED,
            },
            {f"with the graph ({weight:g})": weight},
        )
        for label, value in coherence.items():
            print(f"  seed-page coherence@{TOP} through GET /api/papers/{{id}}/similar, {label}: {value:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--part", choices=["identity", "s2"], required=True)
    parser.add_argument("--corpus", default="scifact", help="identity: the corpus (scifact, seeds)")
    parser.add_argument("--background", default="arxiv_cats_4k", help="s2: the papers beside the lists")
    parser.add_argument("--weight", type=float, default=1.0, help="identity: the graph weight tried")
    parser.add_argument("--engine", default="auto", choices=["auto", "fts5", "tantivy"])
    parser.add_argument("--backend", default="torch", help="embedding backend of the cached vectors")
    args = parser.parse_args()
    cache = VectorCache.default(args.backend, threads=1)
    print(f"model {cache.embedder.model_id} (backend {args.backend}); keyword engine {args.engine}")
    print(f"CPU: {cpu_info().describe()}")
    with tempfile.TemporaryDirectory(prefix="pf-similar-graph-") as tmp:
        if args.part == "s2":
            part_s2(Path(tmp), cache, args.backend, args.engine, args.background)
        else:
            part_identity(Path(tmp), cache, args.backend, args.engine, args.corpus, args.weight)


if __name__ == "__main__":
    main()
