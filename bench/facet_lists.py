"""The proxies' instances and each query's candidate lists, for bench/facet_similar.py (issue #43).

Each proxy is a real paperfeed instance (store, keyword index, vector index, the papers' sentences made
by the indexer's own sentence pass), its vectors from the bench cache (bench/vector_cache.py,
bench/sentence_vectors.py), built once under ``$PAPERFEED_BENCH_CACHE/facets/``:

* ``seeds``: the four Hugging Face search pages (391 papers); judged by the pages a paper is on.
* ``scifact``: 1,800 SciFact abstracts (every judged one, then md5 order; CC BY-NC, evaluation only);
  judged by co-evidence (abstracts judged for one claim) and by claims.
* ``paperscape``: bench/similar_citations.py's instance (49,264 papers, 68,462 stored citations);
  judged by the papers 1996 cites together with a query (ODbL: Damien P. George and Robert Knegjens,
  Paperscape, doi:10.5281/zenodo.10052).
* ``csabstruct``: CSAbstruct's 2,189 computer-science abstracts; every sentence's role labelled by people.

:func:`query_lists` reads, for one query paper, what every setting of the similar lists is made of: the
first stage's ranked candidates through the real service (text and graph neighbours fused as shipped,
the sentence stage off), the keyword more-like-this list, and every candidate's stored sentences (vectors
and roles), so a grid of settings is NumPy over cached lists (bench/facet_similar.py ``grid``).
"""

from __future__ import annotations

import gzip
import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from bench.sentence_vectors import corpus_docs, fill_sentences
from bench.vector_cache import CACHE_ROOT, VectorCache
from paperfeed.domain.sentences import SENTENCE_VECTORS, sentence_model_id

if TYPE_CHECKING:
    from paperfeed.bootstrap import App
    from paperfeed.settings import Settings

F32 = npt.NDArray[np.float32]
FOLDER = CACHE_ROOT / "facets" / SENTENCE_VECTORS  # lists of one way of making sentence vectors
DEPTH = 50  # first-stage candidates kept per query: the service asks the first stage for as many, so
# its pool is PAPERFEED_SIMILAR_CANDIDATES (100), as for a list of 10
ENGINE = "tantivy"


@dataclass
class Sentences:
    """A paper's stored sentences: unit vectors (n, d) and each one's role."""

    vectors: F32
    roles: tuple[str, ...]
    spans: tuple[tuple[int, int], ...] = ()
    probabilities: tuple[tuple[float, ...], ...] = ()  # each sentence's, in ROLES order


@dataclass
class QueryLists:
    """One query's candidates: the first stage (id, score, cosine) best first, the keyword
    more-like-this list of the paper's text and of each facet's sentences, and every candidate's
    sentences (absent: none stored)."""

    query: str
    first: list[tuple[str, float, float | None]]
    keyword: list[str]
    facet_keyword: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Corpus:
    name: str
    lists: dict[str, QueryLists]
    sentences: dict[str, Sentences]
    vectors: dict[str, F32]  # paper vectors of queries and candidates


def settings_for(data_dir: Path, **overrides: object) -> Settings:
    from paperfeed.settings import Settings

    return Settings(
        data_dir=data_dir,
        keyword_engine=ENGINE,  # type: ignore[arg-type]
        embedding_backend="torch",
        **overrides,  # type: ignore[arg-type]
    )


def build_instance(name: str, cache: VectorCache) -> Path:
    """The instance of a proxy (see the module doc), built once; its data folder."""
    if name == "paperscape":
        from bench.similar_citations import cache_folder, prepare

        data_dir = prepare(cache_folder(), ENGINE, 1)
        sentences_corpus = "paperscape_sentences"
    else:
        data_dir = FOLDER / name / "instance"
        sentences_corpus = f"{name}_sentences"
    done = data_dir / "sentences-prepared"
    if done.exists():
        return data_dir
    if name != "paperscape" and not (data_dir / "prepared").exists():
        from bench.similar_quality import populate
        from paperfeed.domain.models import Paper

        docs = corpus_docs("scifact_1800" if name == "scifact" else name)
        prefix = {"seeds": "seed:", "scifact": "scifact:", "csabstruct": ""}[
            name
        ]  # csabstruct ids have theirs
        unique = list({d.id: d for d in docs}.values())
        papers = [Paper(id=prefix + d.id, title=d.title, abstract=d.abstract) for d in unique]
        vectors = cache.vectors("scifact" if name == "scifact" else name, unique, report=print)
        data_dir.mkdir(parents=True, exist_ok=True)
        populate(settings_for(data_dir), papers, vectors, cache.embedder.model_id)
        (data_dir / "prepared").write_text("ok\n")
    from paperfeed.bootstrap import build_app

    app = build_app(settings_for(data_dir))
    try:
        started = time.perf_counter()
        done_papers = fill_sentences(
            app.indexes.sentences, app.indexes.role_models, cache, sentences_corpus, report=print
        )
        print(f"{name}: sentences of {done_papers:,} papers in {time.perf_counter() - started:.0f} s")
    finally:
        app.close()
    done.write_text("ok\n")
    return data_dir


def query_lists(app: App, paper_id: str, facet_texts: dict[str, str], terms: int = 10) -> QueryLists | None:
    """The first stage and keyword lists of ``paper_id`` (None: not in the store)."""
    paper = app.catalogue.visible.paper(paper_id)
    if paper is None:
        return None
    hits = app.search.hybrid.similar_to(paper, DEPTH)
    keyword = [
        x.paper_id
        for x in app.indexes.keyword.more_like_this(paper.title, paper.abstract, DEPTH + 1, max_terms=terms)
        if x.paper_id != paper_id
    ]
    facet_keyword = {
        facet: [
            x.paper_id
            for x in app.indexes.keyword.more_like_this("", text, DEPTH + 1, max_terms=terms)
            if x.paper_id != paper_id
        ]
        for facet, text in facet_texts.items()
        if text
    }
    return QueryLists(
        paper_id, [(h.paper.id, h.score, h.similarity) for h in hits], keyword[:DEPTH], facet_keyword
    )


FACET_ROLES = {"background": ("background", "objective"), "method": ("method",), "result": ("result",)}


def gather(name: str, queries: Sequence[str], cache: VectorCache, fresh: bool = False) -> Corpus:
    """Every query's lists and the sentences and vectors they need (cached in the proxy's folder)."""
    path = FOLDER / name / f"lists-{len(queries)}.pickle.gz"
    if path.exists() and not fresh:
        with gzip.open(path, "rb") as fh:
            found: Corpus = pickle.load(fh)
        if set(found.lists) >= set(queries):
            return found
    data_dir = build_instance(name, cache)
    from paperfeed.bootstrap import build_app

    app = build_app(settings_for(data_dir, similar_keyword_weight=0.0))
    try:
        store = app.indexes.sentences
        model_id = sentence_model_id(cache.embedder.model_id)  # the sentence rows' space (late pooled)
        own = store.sentences(list(queries), model_id)
        lists: dict[str, QueryLists] = {}
        started = time.perf_counter()
        for n, q in enumerate(queries, 1):
            row = own.get(q)
            texts: dict[str, str] = {}
            if row is not None:
                paper = app.catalogue.visible.paper(q)
                abstract = paper.abstract if paper is not None else ""
                for facet, roles in FACET_ROLES.items():
                    texts[facet] = " ".join(s.text(abstract) for s in row.sentences if s.role in roles)
            found_lists = query_lists(app, q, texts)
            if found_lists is not None:
                lists[q] = found_lists
            if n % 200 == 0:
                print(
                    f"{name}: lists of {n:,}/{len(queries):,} queries, {time.perf_counter() - started:.0f} s"
                )
        wanted = set(lists)
        for ql in lists.values():
            wanted.update(pid for pid, _, _ in ql.first)
            wanted.update(ql.keyword)
            for items in ql.facet_keyword.values():
                wanted.update(items)
        ids = sorted(wanted)
        sentences: dict[str, Sentences] = {}
        for start in range(0, len(ids), 500):
            for pid, r in store.sentences(ids[start : start + 500], model_id).items():
                if r.vectors is not None and r.sentences:
                    sentences[pid] = Sentences(
                        np.asarray(r.vectors, dtype=np.float32),
                        tuple(s.role for s in r.sentences),
                        tuple((s.start, s.end) for s in r.sentences),
                        tuple(s.probabilities for s in r.sentences),
                    )
        index = app.indexes.vectors.current()
        assert index is not None
        vectors: dict[str, F32] = {}
        for start in range(0, len(ids), 2000):
            vectors.update(index.vectors(ids[start : start + 2000]))
    finally:
        app.close()
    corpus = Corpus(name, lists, sentences, vectors)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wb") as fh:
        pickle.dump(corpus, fh, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(path)
    return corpus


def gather_claims(cache: VectorCache, fresh: bool = False) -> Corpus:
    """SciFact's claims as queries of one sentence each (a finding), against the scifact instance: the
    first stage is the claim's nearest papers by cosine, the keyword list its words' more-like-this;
    each claim's "sentences" are its own vector, its role a result (``claim:ID`` ids)."""
    from bench.facet_similar import judgments
    from bench.vector_cache import Doc

    path = FOLDER / "scifact" / "claims.pickle.gz"
    if path.exists() and not fresh:
        with gzip.open(path, "rb") as fh:
            found: Corpus = pickle.load(fh)
        return found
    claims, _, text = judgments()
    ids = sorted(claims)
    vectors = cache.vectors("scifact_claims", [Doc(c, text[c], "") for c in ids], report=print)
    data_dir = build_instance("scifact", cache)
    from paperfeed.bootstrap import build_app

    app = build_app(settings_for(data_dir))
    try:
        index = app.indexes.vectors.current()
        assert index is not None
        lists: dict[str, QueryLists] = {}
        sentences: dict[str, Sentences] = {}
        for c, v in zip(ids, vectors, strict=True):
            qid = f"claim:{c}"
            first: list[tuple[str, float, float | None]] = [
                (x.paper_id, x.score, x.score) for x in index.search(v, DEPTH)
            ]
            keyword = [
                x.paper_id for x in app.indexes.keyword.more_like_this("", text[c], DEPTH, max_terms=10)
            ]
            lists[qid] = QueryLists(qid, first, keyword, {"result": keyword})
            sentences[qid] = Sentences(v[None, :].astype(np.float32), ("result",))
        wanted = sorted({pid for ql in lists.values() for pid in [*(p for p, _, _ in ql.first), *ql.keyword]})
        store, space = app.indexes.sentences, sentence_model_id(cache.embedder.model_id)
        for start in range(0, len(wanted), 500):
            for pid, r in store.sentences(wanted[start : start + 500], space).items():
                if r.vectors is not None and r.sentences:
                    sentences[pid] = Sentences(
                        np.asarray(r.vectors, dtype=np.float32),
                        tuple(s.role for s in r.sentences),
                        tuple((s.start, s.end) for s in r.sentences),
                        tuple(s.probabilities for s in r.sentences),
                    )
    finally:
        app.close()
    corpus = Corpus("claims", lists, sentences, {})
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wb") as fh:
        pickle.dump(corpus, fh, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(path)
    return corpus
