"""The web workers of one node share rendered anonymous answers; nothing personal ever reaches that cache.

With ``--workers 2`` each worker kept its own page cache, so every popular page was rendered once per
worker. Now a worker that misses its own memory looks in the node's shared cache (a file under
``DATA_DIR/cache/pages``) before rendering, and each render is written there after the reply
(``X-Paperfeed-Cache: shared`` marks an answer another worker rendered). Each "worker" here is its own app
(its own middleware, memory cache and data-version reader) on the same data folder and store, as uvicorn's
worker processes are. Within one worker, requests for a page being rendered wait for that render instead
of rendering it again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from paperfeed.adapters.page_cache import DiskPageCache
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.accounts import User
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.public_cache import _shared_key, render_fingerprint
from tests.community.conftest import add_reader, sign_in
from tests.public_cache.tuned import tuned_site

HTML = {"accept": "text/html"}
JSON = {"accept": "application/json"}
PAPER = "2501.00202"  # listed with 11 Hugging Face upvotes


def _worker(settings: Settings, grace: float, refresh: float = 0.0) -> TestClient:
    return tuned_site(settings, grace=grace, import_grace=grace, refresh=refresh, workers=2)


@pytest.fixture
def workers(settings: Settings, app: App) -> Iterator[tuple[TestClient, TestClient]]:
    """Two workers of one node, no grace: a change of data reaches every answer at once."""
    with _worker(settings, 0.0) as one, _worker(settings, 0.0) as two:
        yield one, two


@pytest.fixture
def ada(app: App) -> User:
    return add_reader(app, "ada@example.org", "Ada Sharedcache")


def _how(answer: object) -> str:
    return str(answer.headers.get("x-paperfeed-cache", ""))  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("url", "accept"),
    [(f"/papers/{PAPER}", HTML), (f"/api/papers/{PAPER}", JSON), ("/search?q=lichen", HTML), ("/", HTML)],
)
def test_a_page_one_worker_rendered_serves_the_other(
    workers: tuple[TestClient, TestClient], url: str, accept: dict[str, str]
) -> None:
    one, two = workers
    first = one.get(url, headers=accept)
    assert (first.status_code, _how(first)) == (200, "miss")
    other = two.get(url, headers=accept)
    assert (other.status_code, _how(other)) == (200, "shared"), "the second worker rendered it again"
    assert other.content == first.content
    assert other.headers["etag"] == first.headers["etag"]
    assert other.headers["cache-control"] == first.headers["cache-control"]
    assert other.headers.get("vary") == first.headers.get("vary")
    assert _how(two.get(url, headers=accept)) == "hit", "then it is in the second worker's own memory"
    conditional = two.get(url, headers={**accept, "if-none-match": first.headers["etag"]})
    assert conditional.status_code == 304


def test_one_worker_alone_keeps_no_shared_cache(settings: Settings, app: App) -> None:
    assert build_app(settings).catalogue.shared_pages is None, "one worker has nobody to share with"
    turned_off = settings.model_copy(update={"workers": 2, "page_cache_shared_mb": 0})
    assert build_app(turned_off).catalogue.shared_pages is None
    with TestClient(create_app(lambda: build_app(settings))) as alone:
        assert _how(alone.get(f"/api/papers/{PAPER}", headers=JSON)) == "miss"
    assert not (settings.data_dir / "cache" / "pages").exists()


def test_a_signed_in_page_never_reaches_the_shared_cache(
    workers: tuple[TestClient, TestClient], app: App, ada: User
) -> None:
    one, two = workers
    sign_in(one, app, ada)
    mine = one.get(f"/papers/{PAPER}", headers=HTML)
    assert mine.status_code == 200
    assert "Ada Sharedcache" in mine.text, "the signed-in page names its reader"
    assert _how(mine) == ""
    seen = two.get(f"/papers/{PAPER}", headers=HTML)
    assert _how(seen) == "miss", "an anonymous reader was served what a signed-in reader's request rendered"
    assert "Ada Sharedcache" not in seen.text
    # the other way round: the anonymous copy in the shared cache never answers a signed-in reader
    sign_in(two, app, ada)
    again = two.get(f"/papers/{PAPER}", headers=HTML)
    assert _how(again) == ""
    assert "Ada Sharedcache" in again.text


def test_a_token_holders_api_read_is_everyones_and_reaches_the_other_worker(
    workers: tuple[TestClient, TestClient], app: App, ada: User
) -> None:
    """The API's reads never look at who asks: what a script's token rendered is the anonymous answer."""
    one, two = workers
    token = {"authorization": f"Bearer {app.readers.accounts.create_api_token(ada, 'tests')[1]}"}
    app.readers.community.upvote(ada, PAPER)
    mine = one.get(f"/api/papers/{PAPER}", headers={**JSON, **token})
    assert (mine.status_code, _how(mine)) == (200, "miss")
    anonymous = two.get(f"/api/papers/{PAPER}", headers=JSON)
    assert _how(anonymous) == "shared"
    assert anonymous.content == mine.content
    again = two.get(f"/api/papers/{PAPER}", headers={**JSON, **token})
    assert (_how(again), again.content) == ("hit", mine.content)
    # a page names its reader: the anonymous copy the other worker shared never answers one
    two.get(f"/papers/{PAPER}", headers=HTML)
    page = one.get(f"/papers/{PAPER}", headers={**HTML, **token})
    assert page.status_code == 200
    assert _how(page) == "", "a token holder was given the anonymous page"


def test_a_vote_moves_the_version_past_the_shared_copy(
    workers: tuple[TestClient, TestClient], app: App, ada: User
) -> None:
    one, two = workers
    before = one.get(f"/api/papers/{PAPER}", headers=JSON).json()["upvotes"]
    app.readers.community.upvote(ada, PAPER)  # a third process's write
    after = two.get(f"/api/papers/{PAPER}", headers=JSON)
    assert _how(after) == "miss", "the shared copy of the old version was served without grace"
    assert after.json()["upvotes"] == before + 1


def test_within_the_grace_the_shared_copy_of_the_old_version_is_stale(
    settings: Settings, app: App, ada: User
) -> None:
    with _worker(settings, 300.0) as one, _worker(settings, 300.0) as two:
        before = one.get(f"/api/papers/{PAPER}", headers=JSON).json()["upvotes"]
        app.readers.community.upvote(ada, PAPER)
        later = two.get(f"/api/papers/{PAPER}", headers=JSON)
        assert (_how(later), later.json()["upvotes"]) == ("shared", before)


def test_hiding_a_paper_reaches_the_other_worker_at_once_whatever_the_grace(
    settings: Settings, app: App
) -> None:
    with _worker(settings, 300.0) as one, _worker(settings, 300.0) as two:
        assert one.get(f"/api/papers/{PAPER}", headers=JSON).status_code == 200
        app.readers.accounts.hide_paper(PAPER, reason="spam")
        assert two.get(f"/api/papers/{PAPER}", headers=JSON).status_code == 404
        assert two.get(f"/papers/{PAPER}", headers=HTML).status_code == 404


@pytest.mark.parametrize("junk", [b"", b'\x00\x00\x00\x05{"a":', b"\xff" * 40, b"\x00\x00\x00\x02{}body"])
def test_a_damaged_shared_entry_is_a_miss_never_an_error(
    workers: tuple[TestClient, TestClient], settings: Settings, junk: bytes
) -> None:
    one, _two = workers
    key = ("http", "testserver", "", f"/api/papers/{PAPER}", (), "application/json")
    pages = DiskPageCache(settings.data_dir / "cache" / "pages", 16 * 1024 * 1024)
    try:
        where = _shared_key(key, render_fingerprint(settings))
        pages.put(where, junk, 60)
        assert pages.get(where) == junk, "the test put its junk where the worker looks"
    finally:
        pages.close()
    answer = one.get(f"/api/papers/{PAPER}", headers=JSON)
    assert (answer.status_code, _how(answer)) == (200, "miss")
    assert answer.json()["id"] == PAPER


def test_copies_rendered_by_another_version_of_paperfeed_are_not_found() -> None:
    key = ("http", "testserver", "", "/", (), "text/html")
    assert _shared_key(key, "f").startswith(__import__("paperfeed").__version__ + ":f:")
    assert _shared_key(key, "f") != _shared_key((*key[:4], (("q", "x"),), key[5]), "f")
    assert _shared_key(key, "f") != _shared_key(key, "g")


def test_a_restarted_server_with_the_same_code_and_settings_starts_warm(
    settings: Settings, app: App, ada: User
) -> None:
    url = f"/papers/{PAPER}"
    with _worker(settings, 0.0) as before:
        assert _how(before.get(url, headers=HTML)) == "miss"
    with _worker(settings, 10.0, refresh=30.0) as restarted:  # other graces: they change no page
        again = restarted.get(url, headers=HTML)
        assert (again.status_code, _how(again)) == (200, "shared"), "the restart lost the rendered pages"
    shown = settings.model_copy(update={"base_url": "https://papers.example.org"})
    with _worker(shown, 0.0) as other:  # a setting that may change what pages show: nothing is reused
        assert _how(other.get(url, headers=HTML)) == "miss"
    app.readers.community.upvote(
        ada, PAPER
    )  # data changed while the server was down: the version rules apply
    with _worker(settings, 0.0) as later:
        after = later.get(url, headers=HTML)
        assert _how(after) == "miss", "a copy of the data before the vote was served after a restart"


def test_the_code_fingerprint_follows_every_file_of_the_package(settings: Settings, tmp_path: Path) -> None:
    package = tmp_path / "paperfeed"
    (package / "templates").mkdir(parents=True)
    (package / "__pycache__").mkdir()
    page = package / "templates" / "paper.html"
    page.write_text("<h1>{{ title }}</h1>")
    (package / "web.py").write_text("x = 1\n")
    first = render_fingerprint(settings, package)
    assert render_fingerprint(settings, package) == first
    (package / "__pycache__" / "web.cpython-311.pyc").write_bytes(b"compiled")
    assert render_fingerprint(settings, package) == first, "bytecode is not the code"
    page.write_text("<h2>{{ title }}</h2>")
    os.utime(page, ns=(1, 1))
    edited = render_fingerprint(settings, package)
    assert edited != first, "an edited template kept the old copies"
    graced = settings.model_copy(update={"page_cache_grace_seconds": 99.0, "workers": 4, "port": 9})
    assert render_fingerprint(graced, package) == edited
    assert render_fingerprint(settings.model_copy(update={"base_url": "https://x.org"}), package) != edited


def test_concurrent_asks_for_one_page_render_it_once(settings: Settings, app: App) -> None:
    """Eight readers ask one worker for the same uncached page at once: one render, seven wait for it."""
    tuned = settings.model_copy(
        update={
            "page_cache_grace_seconds": 0.0,
            "page_cache_import_grace_seconds": 0.0,
            "page_cache_check_seconds": 60.0,
        }
    )
    with TestClient(create_app(lambda: build_app(tuned))) as worker:
        worker.get("/api/daily_papers?limit=1", headers=JSON)  # the first version read happens here
        barrier = threading.Barrier(8)

        def ask(_: int) -> tuple[int, str]:
            barrier.wait(timeout=30)
            answer = worker.get("/search?q=lichen", headers=HTML)
            return answer.status_code, _how(answer)

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(ask, range(8)))
    assert {status for status, _ in answers} == {200}
    hows = sorted(how for _, how in answers)
    assert hows.count("miss") == 1, hows
    assert set(hows) <= {"miss", "hit"}, hows


def test_the_shared_cache_file_holds_only_anonymous_answers(
    workers: tuple[TestClient, TestClient], settings: Settings, app: App, ada: User
) -> None:
    one, two = workers
    sign_in(one, app, ada)
    for url in (f"/papers/{PAPER}", "/", "/search?q=lichen", f"/api/papers/{PAPER}"):
        assert one.get(url).status_code == 200
        assert two.get(url).status_code == 200  # anonymous: kept
    folder: Path = settings.data_dir / "cache" / "pages"
    stored = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    assert b"Ada Sharedcache" not in stored
    assert stored, "nothing was shared at all"


def test_no_page_cache_means_no_shared_cache_either(settings: Settings, app: App) -> None:
    off = settings.model_copy(update={"workers": 2, "page_cache_mb": 0})
    with (
        TestClient(create_app(lambda: build_app(off))) as one,
        TestClient(create_app(lambda: build_app(off))) as two,
    ):
        assert _how(one.get(f"/api/papers/{PAPER}", headers=JSON)) == "miss"
        assert _how(two.get(f"/api/papers/{PAPER}", headers=JSON)) == "miss"
        assert _how(one.get(f"/api/papers/{PAPER}", headers=JSON)) == "miss"
