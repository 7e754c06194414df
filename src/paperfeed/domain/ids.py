"""arXiv identifiers: parsing every spelling users and sources give into one canonical key."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MAX_ROW_ID", "ArxivId", "InvalidPaperId", "normalize_paper_id", "parse_arxiv_id", "prefixed_id"]

MAX_ROW_ID = 2**31 - 1  # the largest id of a stored row (an SQL INTEGER: 32 bits on PostgreSQL)

# New style (2007-04 on): YYMM.NNNN (to 2014-12) or YYMM.NNNNN (2015 on), optional version.
_NEW = re.compile(r"(?P<yymm>\d{4})\.(?P<num>\d{4,5})(?:v(?P<v>\d+))?")
# Old style: archive(.SUBJ)/YYMMNNN, e.g. hep-th/9901001, math.AG/0601001, astro-ph/0601001v2.
_OLD = re.compile(
    r"(?P<archive>[a-z]+(?:-[a-z]+)*)(?:\.(?P<subj>[A-Za-z]{2}))?/(?P<num>\d{7})(?:v(?P<v>\d+))?"
)
_PREFIXES = (
    "https://arxiv.org/abs/",
    "http://arxiv.org/abs/",
    "https://arxiv.org/pdf/",
    "http://arxiv.org/pdf/",
    "https://export.arxiv.org/abs/",
    "http://export.arxiv.org/abs/",
    "oai:arxiv.org:",
    "arxiv:",
)
# Source-prefixed ids for papers that are not on arXiv, e.g. "scifact:4983".
_PREFIXED = re.compile(r"(?P<ns>[a-z][a-z0-9_-]{1,31}):(?P<local>[A-Za-z0-9._/-]{1,128})")


class InvalidPaperId(ValueError):
    """Raised when a string is not a paper id paperfeed understands; the message says why."""


@dataclass(frozen=True, slots=True)
class ArxivId:
    """An arXiv id split into its version-less key and optional version."""

    base: str
    version: int | None = None

    def __str__(self) -> str:
        return self.base if self.version is None else f"{self.base}v{self.version}"


def _strip_prefix(text: str) -> str:
    lowered = text.lower()
    for prefix in _PREFIXES:
        if lowered.startswith(prefix):
            text = text[len(prefix) :]
            break
    if text.lower().endswith(".pdf"):
        text = text[:-4]
    return text


def parse_arxiv_id(text: str) -> ArxivId:
    """Parse an arXiv id in any common spelling (bare, versioned, URL, ``arXiv:``, OAI identifier)."""
    if not isinstance(text, str):
        raise InvalidPaperId(f"arXiv id must be a string, got {type(text).__name__}")
    raw = text.strip()
    if not raw or len(raw) > 200:
        raise InvalidPaperId(f"not an arXiv id: {text[:60]!r}")
    candidate = _strip_prefix(raw)
    match = _NEW.fullmatch(candidate)
    if match:
        month = int(match["yymm"][2:])
        if not 1 <= month <= 12:
            raise InvalidPaperId(f"not an arXiv id (month {month:02d} out of range): {raw!r}")
        if int(match["yymm"]) >= 1501 and len(match["num"]) != 5:
            raise InvalidPaperId(f"not an arXiv id (ids from 2015 on have 5 digits): {raw!r}")
        if int(match["yymm"]) < 1501 and len(match["num"]) != 4:
            raise InvalidPaperId(f"not an arXiv id (ids before 2015 have 4 digits): {raw!r}")
        version = int(match["v"]) if match["v"] else None
        return ArxivId(f"{match['yymm']}.{match['num']}", _check_version(version, raw))
    match = _OLD.fullmatch(candidate)
    if match:
        month = int(match["num"][2:4])
        if not 1 <= month <= 12:
            raise InvalidPaperId(f"not an arXiv id (month {month:02d} out of range): {raw!r}")
        # The subject class (math.AG/...) is not part of the canonical id: math.AG/0601001 == math/0601001.
        version = int(match["v"]) if match["v"] else None
        return ArxivId(f"{match['archive']}/{match['num']}", _check_version(version, raw))
    raise InvalidPaperId(f"not an arXiv id: {raw[:60]!r}")


def _check_version(version: int | None, raw: str) -> int | None:
    if version is not None and not 1 <= version <= 999:
        raise InvalidPaperId(f"not an arXiv id (version out of range): {raw!r}")
    return version


def prefixed_id(namespace: str, local_id: str) -> str:
    """Build a stable source-prefixed id for a non-arXiv paper, e.g. ``scifact:4983``."""
    key = f"{namespace}:{local_id}"
    if not _PREFIXED.fullmatch(key):
        raise InvalidPaperId(f"not a valid source-prefixed id: {key[:80]!r}")
    return key


def normalize_paper_id(text: str) -> ArxivId:
    """Parse any paper id: an arXiv id, or a source-prefixed id (returned with no version)."""
    try:
        return parse_arxiv_id(text)
    except InvalidPaperId:
        if (
            isinstance(text, str)
            and _PREFIXED.fullmatch(text.strip())
            and not text.lower().startswith(("http:", "https:", "arxiv:", "oai:"))
        ):
            return ArxivId(text.strip(), None)
        raise
