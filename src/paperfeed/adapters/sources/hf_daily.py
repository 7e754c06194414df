"""Hugging Face Daily Papers: ``GET {api}/daily_papers?date=YYYY-MM-DD``, one day per batch.

Mapping of one response item (a JSON object ``{"paper": {...}, "numComments": ..., ...}``) to a paper:

* ``paper.id`` → id; ``paper.title`` (else the item's ``title``) → title; ``paper.summary`` (else the
  item's ``summary``) → abstract; ``paper.publishedAt`` (the arXiv v1 time) → published.
* ``paper.authors[].name`` in order → authors. Entries marked ``"hidden": true`` are skipped: HF hides
  them from the paper page (mis-parsed names or authors who asked to be removed), so they are not part
  of the author list HF shows. An arXiv observation of the paper supplies arXiv's full list anyway.
* ``paper.upvotes`` → upvotes, ``numComments`` → num_comments, ``paper.githubRepo`` / ``githubStars``
  / ``projectPage`` → github_repo / github_stars / project_page, ``paper.ai_summary`` / ``ai_keywords``.
* ``organization`` (the item's, else the paper's) → its ``fullname`` (display name), else its ``name``;
  this is the same value the ``hf_daily.jsonl`` export carries, so file imports and harvests agree.
* ``submittedOnDailyAt``, ``mediaUrls``, ``thumbnail`` and submitter details are not kept: the day a
  paper was listed is the day queried, which the :class:`Listing` records.

Each accepted paper also gets a ``Listing(day, id, "hf-daily", upvotes, rank)``. ``rank`` is the 0-based
position by upvotes, highest first; ties keep the response's order (a stable sort), which is how the
page shows them. Only accepted papers are ranked, and a paper listed twice in one response keeps its
first (best) position.

An item that cannot become a paper becomes a :class:`Reject` naming ``<date>#<index> (id …)`` and the
JSON key at fault; the rest of the day goes on. A response that is not a JSON list rejects that day as a
whole with the reason. A range harvest checkpoints after every day, so a killed run resumes at the next
day; network failures (after the :class:`PoliteClient`'s retries) raise :class:`SourceUnavailable`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import orjson

from paperfeed.domain.ingest import Batch, Reject
from paperfeed.domain.models import Listing, Paper
from paperfeed.domain.validation import InvalidRecord, build_paper

from .http import PoliteClient

__all__ = [
    "HF_DAILY",
    "MAX_PAGES",
    "DayResult",
    "HfDailySource",
    "NotAList",
    "decode_day",
    "parse_day",
    "parse_item",
]

HF_DAILY = "hf-daily"
MAX_PAGES = 20  # a day has at most a few hundred papers; this bounds a server that keeps paging

# Our field names → the JSON key they come from, so a reject names what the user sees in the response.
_JSON_KEY = {
    "id": "paper.id",
    "title": "paper.title",
    "abstract": "paper.summary",
    "authors": "paper.authors",
    "published": "paper.publishedAt",
    "upvotes": "paper.upvotes",
    "num_comments": "numComments",
    "github_repo": "paper.githubRepo",
    "github_stars": "paper.githubStars",
    "project_page": "paper.projectPage",
    "organization": "organization",
    "ai_summary": "paper.ai_summary",
    "ai_keywords": "paper.ai_keywords",
}


class NotAList(ValueError):
    """A day's response body is not a JSON list of papers; the message says what it was instead."""


def _json_key(field_name: str) -> str:
    head, sep, rest = field_name.partition("[")
    return _JSON_KEY.get(head, head) + sep + rest


def _first(item: Mapping[str, Any], paper: Mapping[str, Any], key: str) -> Any:
    """The paper's value, else the item's (older responses carry some fields only at the top level)."""
    value = paper.get(key)
    return item.get(key) if value is None else value


def _authors(raw: object) -> list[str] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise InvalidRecord("authors", f"expected a list of author objects, got {type(raw).__name__}")
    names: list[str] = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise InvalidRecord(f"authors[{i}]", f"expected an author object, got {type(entry).__name__}")
        if entry.get("hidden") is True:
            continue
        name = entry.get("name")
        if not isinstance(name, str):
            raise InvalidRecord(f"authors[{i}].name", f"expected a string, got {type(name).__name__}")
        names.append(name)
    return names


def _organization(raw: object) -> object:
    if raw is None or isinstance(raw, str):
        return raw
    if not isinstance(raw, dict):
        raise InvalidRecord("organization", f"expected an object, got {type(raw).__name__}")
    for key in ("fullname", "name"):
        value = raw.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if value is not None and not isinstance(value, str):
            raise InvalidRecord(f"organization.{key}", f"expected a string, got {type(value).__name__}")
    return None


def parse_item(item: object, *, seen_at: datetime) -> Paper:
    """Turn one response item into a paper; raises :class:`InvalidRecord` naming the JSON key at fault."""
    if not isinstance(item, dict):
        raise InvalidRecord("item", f"expected a JSON object, got {type(item).__name__}")
    paper = item.get("paper")
    if paper is None:
        raise InvalidRecord("paper", "missing")
    if not isinstance(paper, dict):
        raise InvalidRecord("paper", f"expected an object, got {type(paper).__name__}")
    try:
        fields = {
            "id": paper.get("id"),
            "title": _first(item, paper, "title"),
            "abstract": _first(item, paper, "summary"),
            "authors": _authors(paper.get("authors")),
            "published": paper.get("publishedAt"),
            "upvotes": paper.get("upvotes"),
            "num_comments": item.get("numComments"),
            "github_repo": paper.get("githubRepo"),
            "github_stars": paper.get("githubStars"),
            "project_page": paper.get("projectPage"),
            "organization": _organization(item.get("organization") or paper.get("organization")),
            "ai_summary": paper.get("ai_summary"),
            "ai_keywords": paper.get("ai_keywords"),
        }
        return build_paper(fields, source=HF_DAILY, seen_at=seen_at)
    except InvalidRecord as exc:
        raise InvalidRecord(_json_key(exc.field), exc.reason) from None


@dataclass(slots=True)
class DayResult:
    """What one day's response yields: papers, that day's listings, and the items that were rejected."""

    papers: list[Paper] = field(default_factory=list)
    listings: list[Listing] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)


def _item_id(item: object) -> str | None:
    if isinstance(item, dict) and isinstance(item.get("paper"), dict):
        raw = item["paper"].get("id")
        if isinstance(raw, str | int) and not isinstance(raw, bool):
            return str(raw)[:60]
    return None


def parse_day(items: list[Any], day: date, *, seen_at: datetime) -> DayResult:
    """Parse one day's items into papers and ranked listings; bad items become rejects."""
    result = DayResult()
    for index, item in enumerate(items):
        try:
            result.papers.append(parse_item(item, seen_at=seen_at))
        except InvalidRecord as exc:
            rid = _item_id(item)
            where = f"{day.isoformat()}#{index}" + (f" (id {rid})" if rid else "")
            result.rejects.append(Reject(where, exc.reason, exc.field))
    ranked = sorted(result.papers, key=lambda p: -1 if p.upvotes is None else -p.upvotes)  # stable
    seen: set[str] = set()
    for paper in ranked:
        if paper.id in seen:
            continue
        seen.add(paper.id)
        result.listings.append(Listing(day, paper.id, HF_DAILY, paper.upvotes, len(result.listings)))
    return result


def decode_day(body: bytes) -> list[Any]:
    """Decode a response body that must be a JSON list; raises :class:`NotAList` saying what it was."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        snippet = body[:60].decode("utf-8", "replace")
        raise NotAList(f"response is not JSON ({exc}); it starts with {snippet!r}") from None
    if not isinstance(payload, list):
        what = type(payload).__name__
        detail = ""
        if isinstance(payload, dict) and isinstance(payload.get("error"), str):
            detail = f": {payload['error'][:200]!r}"
        raise NotAList(f"expected a JSON list of papers, got a JSON {what}{detail}")
    return payload


@dataclass
class HfDailySource:
    """Hugging Face Daily Papers for the days ``start``..``end`` (inclusive) as a paper source.

    A range of more than one day checkpoints the last finished day under a name that includes the
    range, so re-running the same range after a kill resumes at the next day. The caller clears the
    checkpoint once the range is done, so re-running a finished range harvests it again (upvotes grow).
    """

    client: PoliteClient
    api_url: str
    start: date
    end: date
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"the range ends ({self.end}) before it starts ({self.start})")

    @property
    def name(self) -> str:
        return HF_DAILY

    @property
    def checkpoint_name(self) -> str | None:
        if self.start == self.end:
            return None  # one request: nothing to resume
        return f"{HF_DAILY}:{self.start.isoformat()}..{self.end.isoformat()}"

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def resume_day(self, resume_from: str | None) -> date:
        """First day still to fetch, given the last committed checkpoint value (a finished day)."""
        if resume_from:
            try:
                done = date.fromisoformat(resume_from)
            except ValueError:
                return self.start
            if self.start <= done <= self.end:
                return done + timedelta(days=1)
        return self.start

    def url(self) -> str:
        return f"{self.api_url.rstrip('/')}/daily_papers"

    def fetch_day(self, day: date) -> list[Any]:
        """All items HF lists for ``day``, following ``Link: rel="next"`` pages on the same host."""
        url: str | None = self.url()
        params: dict[str, str] | None = {"date": day.isoformat()}
        host = urlsplit(self.url()).netloc
        items: list[Any] = []
        for _ in range(MAX_PAGES):
            if url is None:
                break
            response = self.client.get(url, params=params)
            items.extend(decode_day(response.content))
            nxt = response.links.get("next", {}).get("url")
            url, params = None, None
            if nxt:
                target = str(response.url.join(nxt))
                if urlsplit(target).netloc == host:
                    url = target
        return items

    def batches(self, resume_from: str | None = None) -> Iterator[Batch]:
        first = self.resume_day(resume_from)
        total = self.days
        day = first
        while day <= self.end:
            position = (day - self.start).days + 1
            checkpoint = (self.checkpoint_name, day.isoformat()) if self.checkpoint_name else None
            try:
                items = self.fetch_day(day)
            except NotAList as exc:
                reject = Reject(day.isoformat(), f"{self.url()}?date={day.isoformat()}: {exc}")
                yield Batch(rejects=[reject], checkpoint=checkpoint, position=position, total=total)
            else:
                parsed = parse_day(items, day, seen_at=self.now)
                yield Batch(
                    papers=parsed.papers,
                    listings=parsed.listings,
                    rejects=parsed.rejects,
                    checkpoint=checkpoint,
                    position=position,
                    total=total,
                )
            day += timedelta(days=1)
