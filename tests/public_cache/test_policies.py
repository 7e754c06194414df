"""The cache policies are what docs/deployment.md says, and nothing clock-dependent is kept past its max-age.

The server keeps a rendered anonymous answer longer than the ``max-age`` it sends only where the data
version catches every change that matters; trending (scores decay with the clock) and the feeds built on
it are kept no longer than a browser may keep them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from paperfeed.web.public_cache import policy_for

DOC = Path(__file__).resolve().parents[2] / "docs" / "deployment.md"

# the first route of each row of the doc's table → a path that route answers
EXAMPLES = {
    "`/` (today's feed)": "/",
    "`/papers/date/…`, `/papers/week/…`, `/papers/month/…`": "/papers/week/2025-W02",
    "`/trending`": "/trending",
    "`/search?…`": "/search",
    "`/papers/<id>`": "/papers/2501.00202",
    "`/papers/<id>.md`": "/papers/2501.00202.md",
    "`/rss/…`, `/atom/…` (daily, trending, search)": "/atom/trending",
    "`/api/daily_papers`, `/api/papers`, `/api/papers/search`": "/api/papers/search",
    "`/api/papers/<id>`": "/api/papers/2501.00202",
    "`/api/papers/<id>/similar`": "/api/papers/2501.00202/similar",
    "`/map`": "/map",
    "`/api/map/points`, `/api/map/titles`": "/api/map/titles",
}


def _rows() -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("| Route | `max-age` |") :].split("\n\n", 1)[0]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def _seconds(cell: str) -> int:
    match = re.fullmatch(r"(\d+) s", cell)
    assert match, cell
    return int(match.group(1))


def test_the_doc_table_names_every_route() -> None:
    assert [row[0] for row in _rows()] == list(EXAMPLES)


@pytest.mark.parametrize(("route", "path"), EXAMPLES.items(), ids=list(EXAMPLES.values()))
def test_each_route_is_cached_as_the_doc_says(route: str, path: str) -> None:
    row = next(row for row in _rows() if row[0] == route)
    policy = policy_for(path)
    assert policy is not None, path
    assert (_seconds(row[1]), _seconds(row[2]), _seconds(row[3])) == (
        policy.max_age,
        policy.stale,
        policy.kept_for,
    ), f"docs/deployment.md and web/public_cache.py disagree on {path}"


@pytest.mark.parametrize("path", ["/trending", "/atom/trending", "/rss/trending"])
def test_what_the_clock_changes_is_kept_no_longer_than_its_max_age(path: str) -> None:
    policy = policy_for(path)
    assert policy is not None
    assert policy.kept_for <= policy.max_age
