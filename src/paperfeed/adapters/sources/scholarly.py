"""What the two scholarly APIs (Semantic Scholar, OpenAlex) share: reading their JSON answers strictly
and their loosely typed fields leniently.

An answer that is not JSON (an HTML error page, a body cut off mid-way) is a
:class:`~paperfeed.domain.errors.SourceAnswerError` naming the URL; a single field of the wrong type
(a title that is a number) is read as absent, because one odd entry must not cost a paper its list.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import httpx
import orjson

from paperfeed.domain.errors import SourceAnswerError
from paperfeed.domain.ids import InvalidPaperId, parse_arxiv_id

__all__ = ["arxiv_of", "as_date", "as_int", "as_str", "json_body", "refusal"]

_ARXIV_URL = re.compile(r"^https?://(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/([^?#]+?)(?:\.pdf)?/?$")


def json_body(response: httpx.Response, api: str) -> Any:
    """The decoded JSON of ``response``; raises :class:`SourceAnswerError` naming the URL otherwise."""
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        kind = response.headers.get("Content-Type", "no content type").split(";")[0]
        snippet = response.content[:60].decode("utf-8", "replace")
        raise SourceAnswerError(
            f"{api} answered HTTP {response.status_code} with something that is not JSON ({kind}, {exc}) "
            f"for {response.request.method} {response.request.url}; it starts with {snippet!r}"
        ) from None


def refusal(response: httpx.Response) -> str:
    """The API's own words for an error answer (``error``/``message`` of a JSON body), else its type."""
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        kind = response.headers.get("Content-Type", "no content type").split(";")[0]
        return f"a {kind} page, not the API's JSON"
    if isinstance(body, dict):
        parts = [str(body[k])[:300] for k in ("error", "message") if isinstance(body.get(k), str)]
        if parts:
            return ": ".join(dict.fromkeys(parts))
    return "no reason given"


def as_str(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_date(value: object) -> date | None:
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


def arxiv_of(value: object) -> str | None:
    """The canonical arXiv id in ``value`` (an id, or an arxiv.org abs/pdf URL), else ``None``."""
    text = as_str(value)
    if text is None:
        return None
    match = _ARXIV_URL.match(text)
    if match:
        text = match.group(1)
    try:
        return parse_arxiv_id(text).base
    except InvalidPaperId:
        return None
