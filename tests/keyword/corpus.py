"""A small synthetic corpus whose every paper exists to make one ranking or filter rule observable."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper


def _p(
    pid: str,
    title: str,
    abstract: str,
    authors: tuple[str, ...] = ("Jo Doe",),
    cats: tuple[str, ...] = ("cs.LG",),
    year: int = 2022,
    repo: str | None = None,
    version: int = 1,
) -> Paper:
    return Paper(
        id=pid,
        title=title,
        abstract=abstract,
        authors=authors,
        categories=cats,
        published=datetime(year, 6, 15, 12, 0, tzinfo=UTC),
        version=version,
        github_repo=repo,
        sources={"test": "2026-01-01T00:00:00+00:00"},
    )


FILLER = "We report experiments on several benchmarks and discuss limitations of the approach."

CORPUS: list[Paper] = [
    # one rare word, once each, in the title / the abstract / an author name: weighting order
    _p("w.title", "Zephyrine estimation in practice", FILLER),
    _p("w.abstract", "Estimation in practice", f"Zephyrine appears here. {FILLER}"),
    _p("w.author", "Estimation in practice", FILLER, authors=("Zephyrine Okafor", "Li Wei")),
    # phrase vs words
    _p("ph.exact", "Large language models for code", f"Large language models write code. {FILLER}"),
    _p("ph.scattered", "Models of language", f"A large corpus and language. {FILLER}"),
    # exclusion
    _p("ex.keep", "Quokka tracking with drones", FILLER),
    _p("ex.drop", "Quokka tracking with satellites", FILLER),
    # authors
    _p("au.ada", "Analytical engines", FILLER, authors=("Ada Lovelace", "Charles Babbage")),
    _p("au.other", "Analytical engines revisited", FILLER, authors=("Ada Smith", "Mary Lovelace")),
    # categories and years
    _p("cat.cl", "Tokenizer tricks", FILLER, cats=("cs.CL", "cs.LG"), year=2019),
    _p("cat.cv", "Tokenizer tricks for images", FILLER, cats=("cs.CV",), year=2021),
    _p("cat.ag", "Tokenizer tricks for curves", FILLER, cats=("math.AG",), year=2024, repo="a/b"),
    # stemming and accents
    _p("stem.model", "A model of everything", FILLER),
    _p("acc.naive", "Naïve Bayes résumé parsing", FILLER),
]

# Many strong matches for "transformer" outside math.AG and a few weak ones inside it: a filter that
# post-filtered a top-k would return too few math.AG papers.
CROWD: list[Paper] = [
    _p(f"crowd.{i:03d}", f"Transformer transformer number {i}", f"Transformer study {i}. {FILLER}")
    for i in range(60)
] + [
    _p(f"crowd.ag{i}", f"Curves {i}", f"A transformer appears once. {FILLER}", cats=("math.AG",))
    for i in range(4)
]


def batches(papers: list[Paper], size: int = 10) -> Iterator[Batch]:
    for start in range(0, len(papers), size):
        yield Batch(papers=papers[start : start + size])
