"""arXiv version histories: what a list of ``(version number, date)`` says about a paper.

The snapshot's ``versions`` and OAI-PMH arXivRaw's ``<version>`` elements carry the same history; both
read it through here so "version", "published" and "updated" mean the same whatever the source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["VersionSpan", "parse_version_label", "version_span"]

D = TypeVar("D")
_LABEL = re.compile(r"v(\d{1,3})")


def parse_version_label(label: str) -> int | None:
    """The number of a label such as ``v2``; None for anything else (no trimming, no other spellings)."""
    match = _LABEL.fullmatch(label)
    return int(match[1]) if match else None


@dataclass(frozen=True, slots=True)
class VersionSpan(Generic[D]):
    version: int  # the highest version number
    published: D  # the date of the first (lowest-numbered) version, i.e. v1's
    updated: D  # the date of the highest version


def version_span(versions: Iterable[tuple[int, D]]) -> VersionSpan[D] | None:
    """Highest version, first and last date of a history in any order; None for an empty one.

    Dates are whatever the source gives (datetimes, ISO strings): they are passed through, never compared.
    Of equal version numbers the one listed first counts as the earlier.
    """
    ordered = sorted(versions, key=lambda pair: pair[0])
    if not ordered:
        return None
    return VersionSpan(ordered[-1][0], ordered[0][1], ordered[-1][1])
