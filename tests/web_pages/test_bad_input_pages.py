"""Bad ``?page=`` values and out-of-range dates are a 400 that names what was wrong, on pages and API.

Before, the HTML pages quietly showed page 1 for ``?page=abc``, and ``/papers/date/0001-01-01`` was an
empty 200 page while ``9999-12-31`` was a vague 400. Days are now limited to 1991-01-01 (arXiv's first
papers) … 2999-12-31, the same for days, weeks and months, on pages, feeds and the API.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from paperfeed.domain.feed import FIRST_DAY, LAST_DAY

HTML = {"accept": "text/html"}
PAGED = [
    "/",
    "/papers/date/2025-03-18",
    "/papers/week/2025-W12",
    "/papers/month/2025-03",
    "/search?q=diffusion",
    "/papers/2405.00001/upvoters",
]


@pytest.mark.parametrize("path", PAGED)
@pytest.mark.parametrize("value", ["abc", "0", "-1", "1.5", "", "10001", "99999999999999999999"])
def test_a_bad_page_number_is_a_400_naming_the_parameter(client: TestClient, path: str, value: str) -> None:
    url = path + ("&" if "?" in path else "?") + f"page={value}"
    got = client.get(url, headers=HTML)
    assert got.status_code == 400, (url, got.status_code)
    assert "page:" in got.text, got.text[:500]
    api = client.get(url)
    assert api.status_code == 400
    assert api.json()["errors"][0]["param"] == "page"


@pytest.mark.parametrize("path", PAGED)
def test_good_page_numbers_still_work(client: TestClient, path: str) -> None:
    for value in ("1", "2"):
        url = path + ("&" if "?" in path else "?") + f"page={value}"
        assert client.get(url, headers=HTML).status_code == 200, url


OUT_OF_RANGE = [
    ("/papers/date/0001-01-01", "0001-01-01"),
    ("/papers/date/1990-12-31", "1990-12-31"),
    ("/papers/date/9999-12-31", "9999-12-31"),
    ("/papers/week/0001-W01", "0001"),
    ("/papers/week/9999-W52", "9999"),
    ("/papers/month/0001-01", "0001"),
    ("/papers/month/9999-12", "9999"),
    ("/api/daily_papers?date=0001-01-01", "0001-01-01"),
    ("/api/daily_papers?date=9999-12-31", "9999-12-31"),
    ("/api/daily_papers?week=0001-W01", "0001"),
    ("/api/daily_papers?month=9999-12", "9999"),
    ("/rss/daily?date=0001-01-01", "0001-01-01"),
    ("/atom/daily?date=9999-12-31", "9999-12-31"),
]


@pytest.mark.parametrize(("url", "shown"), OUT_OF_RANGE)
def test_days_outside_the_range_are_a_clear_400(client: TestClient, url: str, shown: str) -> None:
    for headers in (HTML, {}):
        got = client.get(url, headers=headers)
        assert got.status_code == 400, (url, headers, got.status_code)
        assert shown in got.text
        assert FIRST_DAY.isoformat() in got.text
        assert LAST_DAY.isoformat() in got.text


def test_the_first_and_last_days_are_accepted(client: TestClient) -> None:
    for url in (
        f"/papers/date/{FIRST_DAY.isoformat()}",
        f"/papers/date/{LAST_DAY.isoformat()}",
        "/papers/month/1991-01",
        "/papers/week/2999-W01",
        f"/api/daily_papers?date={FIRST_DAY.isoformat()}",
    ):
        assert client.get(url, headers=HTML).status_code == 200, url
