"""Past its grace, a cached anonymous answer is replaced off the reader's path.

Deep into a long import every page of the working set outlives its grace once a minute, and if each first
ask after that waited for a render, the readers would wait all the time (docs/benchmarks.md, "Load"). So
for ``page_cache_refresh_seconds`` more, the old copy is still served (``X-Paperfeed-Cache: stale``) while
the worker renders the new one in the background: one such render at a time per worker, at most half of
the worker's time. After that bound, or with a grace of 0, the reader waits for the render as before.
"""

from __future__ import annotations

import threading
import time

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.accounts import User
from paperfeed.services.topic_picks import PaperTopic
from paperfeed.settings import Settings
from tests.community.conftest import add_reader
from tests.public_cache.tuned import tuned_site

JSON = {"accept": "application/json"}
PAPER = "2501.00202"  # listed with 11 Hugging Face upvotes
OTHER = "2501.00201"


def _worker(settings: Settings, *, grace: float, refresh: float, workers: int = 1) -> TestClient:
    return tuned_site(settings, grace=grace, import_grace=grace, refresh=refresh, workers=workers)


@pytest.fixture
def ada(app: App) -> User:
    return add_reader(app, "ada@example.org", "Ada Behind")


def _upvotes(site: TestClient, paper: str = PAPER) -> tuple[int, str]:
    answer = site.get(f"/api/papers/{paper}", headers=JSON)
    assert answer.status_code == 200, answer.text
    return answer.json()["upvotes"], answer.headers.get("x-paperfeed-cache", "")


def _until_hit(site: TestClient, paper: str = PAPER, seconds: float = 10.0) -> tuple[int, str]:
    deadline = time.monotonic() + seconds
    while True:
        seen = _upvotes(site, paper)
        if seen[1] == "hit" or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def test_past_the_grace_the_old_copy_is_served_while_a_new_one_renders_behind(
    settings: Settings, app: App, ada: User
) -> None:
    with _worker(settings, grace=1.0, refresh=30.0) as site:
        before, how = _upvotes(site)
        assert how == "miss"
        app.readers.community.upvote(ada, PAPER)
        assert _upvotes(site) == (before, "stale")
        time.sleep(1.1)  # past the grace
        behind = site.get(f"/api/papers/{PAPER}", headers=JSON)
        assert behind.headers["x-paperfeed-cache"] == "stale", "past the grace the reader waited"
        assert behind.json()["upvotes"] == before
        assert int(behind.headers["x-paperfeed-stale-seconds"]) >= 1, "the lag a reader sees is not told"
        fresh = _until_hit(site)
        assert fresh == (before + 1, "hit"), "the background render never replaced the copy"
        assert "x-paperfeed-stale-seconds" not in site.get(f"/api/papers/{PAPER}", headers=JSON).headers


def test_past_the_grace_and_the_refresh_the_reader_waits_for_the_render(
    settings: Settings, app: App, ada: User
) -> None:
    with _worker(settings, grace=0.5, refresh=0.5) as site:
        before, _ = _upvotes(site)
        app.readers.community.upvote(ada, PAPER)
        time.sleep(1.1)  # nobody asked: no background render replaced it, and the bound is past
        assert _upvotes(site) == (before + 1, "miss")


class _Hold:
    """Holds a render of ``paper``'s answer inside its route until released, once armed.

    A background render is otherwise over in milliseconds, and so is the pause after it; a test that
    relied on asking again before both were over failed on a busy machine (CI, session 12). Held, the
    render is under way for as long as the test says, whatever the machine's speed.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, paper: str) -> None:
        self.monkeypatch, self.paper = monkeypatch, paper
        self.armed = False
        self.entered = threading.Event()
        self.released = threading.Event()

    def built(self, container: App) -> None:
        picks = container.catalogue.topic_picks
        real = picks.paper_topic

        def paper_topic(paper_id: str) -> PaperTopic | None:
            if self.armed and paper_id == self.paper:
                self.entered.set()
                assert self.released.wait(30), "the test never released the held render"
            return real(paper_id)

        self.monkeypatch.setattr(picks, "paper_topic", paper_topic)


def test_a_worker_renders_one_page_behind_at_a_time(
    settings: Settings, app: App, ada: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    hold = _Hold(monkeypatch, PAPER)
    with tuned_site(settings, grace=0.5, import_grace=0.5, refresh=60.0, built=hold.built) as site:
        first, _ = _upvotes(site, PAPER)
        second, _ = _upvotes(site, OTHER)
        app.readers.community.upvote(ada, PAPER)
        app.readers.community.upvote(ada, OTHER)
        _upvotes(site, PAPER)
        _upvotes(site, OTHER)  # the worker reads the new version: the grace counts from here
        time.sleep(0.6)
        hold.armed = True
        # both are past the grace: the first ask starts a render behind, held in its route ...
        assert _upvotes(site, PAPER) == (first, "stale")
        assert hold.entered.wait(10), "past the grace no render behind started"
        # ... and while it is under way, no ask of another page starts a second one beside it
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            assert _upvotes(site, OTHER) == (second, "stale"), "a second render behind ran beside the first"
            time.sleep(0.05)
        hold.released.set()
        assert _until_hit(site, PAPER) == (first + 1, "hit")
        # the held render took over a second, and so long is the pause before the next: the readers keep
        # at least half the worker
        assert _upvotes(site, OTHER) == (second, "stale")
        assert _upvotes(site, OTHER) == (second, "stale"), "a render behind started within the pause"
        assert _until_hit(site, OTHER) == (second + 1, "hit"), "a later ask did not start its render"


def test_a_removal_is_never_served_behind(settings: Settings, app: App) -> None:
    with _worker(settings, grace=0.5, refresh=300.0) as site:
        assert site.get(f"/api/papers/{PAPER}", headers=JSON).status_code == 200
        time.sleep(0.6)  # well past the grace, within the refresh
        app.readers.accounts.hide_paper(PAPER, reason="spam")
        assert site.get(f"/api/papers/{PAPER}", headers=JSON).status_code == 404


def test_a_copy_another_worker_left_in_the_shared_cache_is_refreshed_behind(
    settings: Settings, app: App, ada: User
) -> None:
    with (
        _worker(settings, grace=1.0, refresh=30.0, workers=2) as one,
        _worker(settings, grace=1.0, refresh=30.0, workers=2) as two,
    ):
        before, how = _upvotes(one)
        assert how == "miss"
        app.readers.community.upvote(ada, PAPER)
        _upvotes(two, OTHER)  # worker two reads the new version: its grace counts from here
        time.sleep(1.1)
        assert _upvotes(two) == (before, "stale"), "the shared copy past its grace was not served"
        assert _until_hit(two) == (before + 1, "hit")
