"""Mapping of JSON records (our JSONL and the public arXiv metadata snapshot) to paper fields.

Both formats come one JSON object per line; :func:`record_fields` tells them apart per record, so a
file may even mix them.
"""

from __future__ import annotations

import re
from datetime import date
from email.utils import parsedate_to_datetime
from typing import Any

from paperfeed.domain.ids import InvalidPaperId, parse_arxiv_id, prefixed_id
from paperfeed.domain.validation import InvalidRecord
from paperfeed.domain.versions import parse_version_label, version_span

__all__ = ["is_snapshot_record", "listing_days", "record_fields"]

_SIMPLE = (
    "title",
    "abstract",
    "authors",
    "categories",
    "published",
    "updated",
    "comment",
    "journal_ref",
    "doi",
    "license",
    "github_repo",
    "github_stars",
    "project_page",
    "upvotes",
    "num_comments",
    "organization",
    "ai_summary",
    "ai_keywords",
    "version",
)
_SNAPSHOT_KEYS = ("versions", "authors_parsed", "update_date", "journal-ref")


def is_snapshot_record(record: dict[str, Any]) -> bool:
    """True for records of arXiv's ``arxiv-metadata-oai-snapshot.json`` (Kaggle) format."""
    return any(key in record for key in _SNAPSHOT_KEYS)


def _paper_id(raw: object, namespace: str | None) -> object:
    """Keep arXiv ids; give other ids the namespace prefix when one is configured."""
    if namespace is None or not isinstance(raw, str | int) or isinstance(raw, bool):
        return raw
    text = str(raw).strip()
    try:
        parse_arxiv_id(text)
        return text
    except InvalidPaperId:
        try:
            return prefixed_id(namespace, text)
        except InvalidPaperId as exc:
            raise InvalidRecord("id", str(exc)) from None


def record_fields(record: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    """Return :func:`~paperfeed.domain.validation.build_paper` fields for one JSON record."""
    if is_snapshot_record(record):
        fields = _snapshot_fields(record)
    else:
        fields = {key: record[key] for key in _SIMPLE if key in record}
        if "categories" not in fields and isinstance(record.get("primary_category"), str):
            fields["categories"] = [record["primary_category"]]
    fields["id"] = _paper_id(record.get("id"), namespace)
    return fields


def _snapshot_fields(record: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "title": record.get("title"),
        "abstract": record.get("abstract"),
        "comment": record.get("comments"),
        "journal_ref": record.get("journal-ref"),
        "doi": record.get("doi"),
        "license": record.get("license"),
    }
    cats = record.get("categories")
    if cats is not None:
        if not isinstance(cats, str):
            raise InvalidRecord("categories", f"expected a space-separated string, got {type(cats).__name__}")
        fields["categories"] = cats.split()
    fields["authors"] = _snapshot_authors(record)
    versions = record.get("versions")
    if versions is not None:
        if not isinstance(versions, list) or not all(isinstance(v, dict) for v in versions):
            raise InvalidRecord("versions", "expected a list of {version, created} objects")
        numbered: list[tuple[int, str]] = []
        for i, item in enumerate(versions):
            number = parse_version_label(str(item.get("version", "")))
            if number is None:
                raise InvalidRecord(f"versions[{i}].version", f"not a version: {item.get('version')!r}")
            numbered.append((number, _rfc2822(item.get("created"), f"versions[{i}].created")))
        span = version_span(numbered)
        if span is not None:
            fields.update(version=span.version, published=span.published, updated=span.updated)
    if "updated" not in fields and isinstance(record.get("update_date"), str):
        fields["updated"] = record["update_date"]
    return fields


def _snapshot_authors(record: dict[str, Any]) -> Any:
    parsed = record.get("authors_parsed")
    if isinstance(parsed, list) and parsed:
        names = []
        for i, parts in enumerate(parsed):
            if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
                raise InvalidRecord(
                    f"authors_parsed[{i}]", "expected a list of strings [last, first, suffix]"
                )
            last = parts[0] if parts else ""
            first = parts[1] if len(parts) > 1 else ""
            suffix = parts[2] if len(parts) > 2 else ""
            names.append(" ".join(p for p in (first, last, suffix) if p.strip()))
        return names
    authors = record.get("authors")
    if isinstance(authors, str):
        text = re.sub(r"\s+", " ", authors)
        return [a.strip() for a in re.split(r",\s*|\s+and\s+", text) if a.strip()]
    return authors


def _rfc2822(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidRecord(field, "expected an RFC 2822 date string")
    try:
        return parsedate_to_datetime(value).isoformat()
    except (TypeError, ValueError):
        raise InvalidRecord(field, f"not an RFC 2822 date: {value[:40]!r}") from None


def listing_days(record: dict[str, Any]) -> list[date]:
    """Days a record says it was on Hugging Face Daily Papers (``daily_dates``, else ``daily_date``)."""
    raw = record.get("daily_dates")
    if raw is None and record.get("daily_date") is not None:
        raw = [record["daily_date"]]
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidRecord("daily_dates", f"expected a list of dates, got {type(raw).__name__}")
    days: list[date] = []
    for i, item in enumerate(raw):
        try:
            days.append(date.fromisoformat(str(item)[:10]))
        except ValueError:
            raise InvalidRecord(f"daily_dates[{i}]", f"not a date: {str(item)[:40]!r}") from None
    return days
