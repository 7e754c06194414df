"""Machine-readable output of search results: ``--format json|jsonl|csv|bibtex`` (``table`` and ``lines``,
for people, are search.py's).

One place for the fields, so ``search`` and ``similar`` print the same shape and docs/cli.md can name it
once. Field names and order are part of the CLI's stable interface: add fields at the end, never rename.
"""

from __future__ import annotations

import csv
import io
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from collections.abc import Sequence

    from paperfeed.domain.results import SearchHit

__all__ = ["CSV_FIELDS", "OutputFormat", "csv_cell", "hit_json", "render"]


class OutputFormat(StrEnum):
    table = "table"
    lines = "lines"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    bibtex = "bibtex"


def hit_json(hit: SearchHit, rank: int) -> dict[str, Any]:
    """One result as the JSON object ``--format json``/``jsonl`` print (docs/cli.md lists the fields)."""
    p = hit.paper
    return {
        "rank": rank,
        "id": p.id,
        "title": p.title,
        "authors": list(p.authors),
        "published": p.published.isoformat() if p.published else None,
        "categories": list(p.categories),
        "upvotes": p.upvotes,
        "score": round(hit.score, 6),
        "keyword_rank": hit.keyword_rank,
        "dense_rank": hit.dense_rank,
        "similarity": None if hit.similarity is None else round(hit.similarity, 6),
        "abstract": p.abstract,
        "title_spans": [[s.start, s.end] for s in hit.title_spans],
        "abstract_spans": [[s.start, s.end] for s in hit.abstract_spans],
    }


CSV_FIELDS = (
    "rank",
    "id",
    "title",
    "authors",
    "published",
    "categories",
    "upvotes",
    "score",
    "keyword_rank",
    "dense_rank",
    "similarity",
    "abstract",
)


# What a spreadsheet reads as the start of a formula (OWASP "CSV Injection"): = + - @, and a tab, carriage
# return or line feed before one of them.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_cell(value: object) -> object:
    """A cell as written to CSV: text that a spreadsheet would run as a formula (a title or name from an
    imported paper such as ``=HYPERLINK(…)`` or ``@SUM(…)``) gets a leading ``'``, which spreadsheets show
    as text, per OWASP; numbers stay numbers, ``None`` is empty."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _csv(hits: Sequence[SearchHit], first_rank: int) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for rank, hit in enumerate(hits, start=first_rank):
        row = hit_json(hit, rank)
        row["authors"] = "; ".join(row["authors"])  # names contain commas, never semicolons
        row["categories"] = " ".join(row["categories"])
        writer.writerow([csv_cell(row[f]) for f in CSV_FIELDS])
    return out.getvalue()


def _bibtex(hits: Sequence[SearchHit]) -> str:
    """One ``@misc`` entry per result; a key two results share gets ``b``, ``c``… so every key is unique."""
    from paperfeed.domain.citation import bibtex, bibtex_key

    entries: list[str] = []
    seen: dict[str, int] = {}
    for hit in hits:
        entry = bibtex(hit.paper)
        key = bibtex_key(hit.paper)
        n = seen.get(key, 0)
        seen[key] = n + 1
        if n:
            suffix = chr(ord("a") + n) if n < 26 else str(n + 1)
            entry = entry.replace("{" + key + ",", "{" + key + suffix + ",", 1)
        entries.append(entry)
    return "\n\n".join(entries) + ("\n" if entries else "")


def render(fmt: OutputFormat, hits: Sequence[SearchHit], *, first_rank: int = 1) -> str:
    """The whole output for a machine-readable format (not ``table``), ending in a newline if not empty."""
    if fmt is OutputFormat.jsonl:
        return "".join(
            orjson.dumps(hit_json(h, r)).decode() + "\n" for r, h in enumerate(hits, start=first_rank)
        )
    if fmt is OutputFormat.json:
        rows = [hit_json(h, r) for r, h in enumerate(hits, start=first_rank)]
        return orjson.dumps(rows).decode() + "\n"
    if fmt is OutputFormat.csv:
        return _csv(hits, first_rank)
    if fmt is OutputFormat.bibtex:
        return _bibtex(hits)
    raise ValueError(f"{fmt} is rendered by the caller")
