"""How a new observation of a paper combines with what the store already knows.

Rules (documented in docs/data-model.md):

* Content fields (title, abstract, authors, categories, comment, journal-ref, DOI, licence, version,
  updated) follow the *freshest* observation, ordered by ``(version, updated)``. A strictly fresher
  observation overwrites them; an equally fresh or older one only fills fields still unknown. So an
  older version never overwrites a newer one, and re-importing the same data changes nothing.
* ``published`` (first-version time) is the earliest ever seen.
* Community counts (upvotes, comments, GitHub stars) are snapshots that only grow in practice: the
  maximum is kept, which makes merging order-independent and idempotent.
* Other enrichment (GitHub repo, project page, organisation, AI summary/keywords) fills unknowns; a
  fresher observation's known value replaces an older one.
* ``sources`` is the union of source names with the earliest time each saw the paper, one entry per
  *kind* of source: a name ``kind:detail`` (``file:papers.jsonl.gz``) that meets the paper already seen by
  its kind (another file) adds no entry: the first file that brought the paper stays its provenance, with
  the earliest time. So the same records imported from a renamed file (or uploaded again, or from the next
  day's dump) change nothing, and a paper's provenance stays as small as the kinds of source there are.
"""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import datetime
from typing import Any

from .models import Paper

__all__ = ["freshness", "merge_paper", "source_kind"]

_CONTENT = (
    "title",
    "abstract",
    "authors",
    "categories",
    "version",
    "updated",
    "comment",
    "journal_ref",
    "doi",
    "license",
)
_ENRICHMENT = ("github_repo", "project_page", "organization", "ai_summary", "ai_keywords")
_COUNTS = ("upvotes", "num_comments", "github_stars")
_EPOCH = datetime.fromisoformat("1970-01-01T00:00:00+00:00")


def freshness(paper: Paper) -> tuple[int, datetime]:
    """Order observations of one paper: later version first, then later update time."""
    return (paper.version or 0, paper.updated or paper.published or _EPOCH)


def _known(value: Any) -> bool:
    return value is not None and value != () and value != ""


def merge_paper(existing: Paper | None, incoming: Paper) -> Paper:
    """Return the paper that results from adding ``incoming`` to ``existing`` (pure, idempotent)."""
    if existing is None:
        return incoming
    if existing.id != incoming.id:
        raise ValueError(f"cannot merge {incoming.id!r} into {existing.id!r}")
    fresher = freshness(incoming) > freshness(existing)
    changes: dict[str, Any] = {}
    for name in _CONTENT + _ENRICHMENT:
        old, new = getattr(existing, name), getattr(incoming, name)
        if _known(new) and (fresher or not _known(old)) and new != old:
            changes[name] = new
    for name in _COUNTS:
        old, new = getattr(existing, name), getattr(incoming, name)
        if new is not None and (old is None or new > old):
            changes[name] = new
    if incoming.published and (existing.published is None or incoming.published < existing.published):
        changes["published"] = incoming.published
    if incoming.sources:
        merged = _merge_sources(existing.sources, incoming.sources)
        if merged != existing.sources:
            changes["sources"] = merged
    return replace(existing, **changes) if changes else existing


def source_kind(name: str) -> str:
    """``file`` for ``file:papers.jsonl.gz``; a name without a colon (``hf-daily``) is its own kind."""
    return name.split(":", 1)[0]


def _merge_sources(existing: dict[str, str], incoming: dict[str, str]) -> dict[str, str]:
    """The earliest time each kind of source saw the paper, under the name that kind first had here."""
    merged = dict(existing)
    for key, seen in incoming.items():
        if key not in merged:
            kind = source_kind(key)
            same = [k for k in merged if source_kind(k) == kind]
            if same:  # seen by this kind already (another file): no second entry
                key = min(same, key=lambda k: (merged[k], k))
        if key not in merged or seen < merged[key]:
            merged[key] = seen
    return merged


def paper_field_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Paper))
