"""Library pages, forms, feeds and JSON API on the real app (TestClient) over a real SQLite store."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import feedparser
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.web import create_app
from paperfeed.web.security import CSRF_HEADER, SESSION_COOKIE
from tests.support.authz import csrf_from

from .conftest import DATA

Browser = Callable[[int | None], TestClient]
HTML = {"accept": "text/html"}


@pytest.fixture
def browser(app: App) -> Iterator[Browser]:
    """``browser(user_id)`` opens a client signed in as that user (``None``: anonymous)."""
    with ExitStack() as stack:

        def open_as(user_id: int | None) -> TestClient:
            client = stack.enter_context(
                TestClient(create_app(lambda: build_app(app.settings)), follow_redirects=False)
            )
            if user_id is not None:
                user = app.readers.accounts.user_by_id(user_id)
                assert user is not None
                client.cookies.set(SESSION_COOKIE, app.readers.accounts.create_session(user).session)
            return client

        yield open_as


def post_form(client: TestClient, page: str, action: str, data: dict[str, str | list[str]]) -> Any:
    """Open ``page`` as a browser would and submit ``data`` to ``action`` with the page's CSRF token."""
    got = client.get(page, headers=HTML)
    assert got.status_code == 200, (page, got.status_code, got.text[:300])
    return client.post(action, data={**data, "csrf_token": csrf_from(got.text)}, headers=HTML)


def token_for(app: App, user_id: int) -> str:
    user = app.readers.accounts.user_by_id(user_id)
    assert user is not None
    return app.readers.accounts.create_api_token(user, "tests")[1]


def test_library_pages_need_a_signed_in_reader(browser: Browser) -> None:
    anonymous = browser(None)
    for path in (
        "/library",
        "/library/authors",
        "/library/searches",
        "/library/import",
        "/library/dismissed",
    ):
        got = anonymous.get(path, headers=HTML)
        assert got.status_code == 303, path
        assert got.headers["location"].startswith("/signin?next=")
    assert anonymous.get("/api/me/library").status_code == 401
    page = anonymous.get("/papers/2401.00001", headers=HTML)
    assert "Sign in</a> to save this paper" in page.text
    assert "set-cookie" not in page.headers  # anonymous pages stay cookie-free
    results = anonymous.get("/search?q=diffusion", headers=HTML)
    assert "library-actions" not in results.text


def test_save_with_the_tag_picker_on_the_paper_page(app: App, browser: Browser, ada: int) -> None:
    client = browser(ada)
    page = "/papers/2401.00001"
    got = post_form(
        client,
        page,
        "/library/paper-tags",
        {"paper_id": "2401.00001", "tags": ["Saved"], "new_tag": "Reading group", "next": page},
    )
    assert got.status_code == 303
    assert got.headers["location"] == page
    assert app.readers.library.state(ada, "2401.00001").tags == ("Saved", "Reading group")
    html = client.get(page, headers=HTML).text
    assert re.search(r'name="tags" value="Reading group" checked', html)
    assert "Update tags" in html
    mine = client.get("/library", headers=HTML).text
    assert "Alpha: a synthetic paper" in mine
    assert "Reading group</bdi> (1)" in mine


def test_save_and_dismiss_buttons_on_result_cards(app: App, browser: Browser, ada: int) -> None:
    client = browser(ada)
    results = client.get("/search?q=diffusion", headers=HTML).text
    assert results.count('action="/library/save"') >= 2
    got = post_form(
        client,
        "/search?q=diffusion",
        "/library/save",
        {"paper_id": "2402.00002", "next": "/search?q=diffusion"},
    )
    assert got.headers["location"] == "/search?q=diffusion"
    again = client.get("/search?q=diffusion", headers=HTML).text
    assert "Saved · Saved" in again
    post_form(client, "/search?q=diffusion", "/library/dismiss", {"paper_id": "2404.00004", "dismissed": "1"})
    assert app.readers.library.signals(ada).dismissed == {"2404.00004"}
    assert "Delta diffusion transformers" in client.get("/library/dismissed", headers=HTML).text


def test_redirect_targets_stay_on_this_site(app: App, browser: Browser, ada: int) -> None:
    client = browser(ada)
    got = post_form(
        client, "/library", "/library/save", {"paper_id": "2401.00001", "next": "https://evil.example/"}
    )
    assert got.headers["location"] == "/library"


def test_a_form_without_its_csrf_token_changes_nothing(app: App, browser: Browser, ada: int) -> None:
    client = browser(ada)
    client.get("/library", headers=HTML)
    got = client.post("/library/save", data={"paper_id": "2401.00001"}, headers=HTML)
    assert got.status_code == 403
    assert app.readers.library.signals(ada).saved == ()


def test_notes_render_markdown_and_never_script(app: App, browser: Browser, ada: int, bob: int) -> None:
    client = browser(ada)
    body = (
        "**Key idea** <script>alert(1)</script> <img src=x onerror=alert(2)>\n\n"
        '[bad](javascript:alert(3)) [good](https://example.org/x) <a href="https://e.org" onclick="z">raw</a>'
    )
    got = post_form(
        client,
        "/papers/2401.00001",
        "/library/note",
        {"paper_id": "2401.00001", "body": body, "next": "/papers/2401.00001"},
    )
    assert got.status_code == 303
    html = client.get("/papers/2401.00001", headers=HTML).text
    note = html[html.index('class="note-body"') : html.index('class="library-note"')]
    assert "<strong>Key idea</strong>" in note
    assert "<script" not in note
    assert "<img" not in note
    assert "onerror" not in note.replace("onerror=alert(2)&gt;", "")  # only as escaped text
    assert 'href="javascript' not in note.lower()
    assert '<a href="https://example.org/x" rel="nofollow noopener noreferrer">good</a>' in note
    assert "onclick" not in note.replace('onclick="z"&gt;', "").replace("onclick=&#34;z&#34;&gt;", "")
    # the note is Ada's alone
    other = browser(bob).get("/papers/2401.00001", headers=HTML).text
    assert "Key idea" not in other
    assert (
        browser(bob)
        .get("/api/me/papers/2401.00001", headers={"authorization": f"Bearer {token_for(app, bob)}"})
        .json()["note"]
        is None
    )


def test_private_tags_are_404_for_everyone_else_on_pages_api_and_feeds(
    app: App, browser: Browser, ada: int, bob: int
) -> None:
    app.readers.library.save(ada, "2401.00001", ["Secret"])
    tag = app.readers.library.tags(ada)[0]
    paths = [
        f"/collections/{tag.id}",
        f"/rss/collections/{tag.id}",
        f"/atom/collections/{tag.id}",
        f"/api/collections/{tag.id}",
        f"/library?tag={tag.id}",
        f"/api/me/library?tag={tag.id}",
    ]
    for who in (None, bob):
        client = browser(who)
        for path in paths:
            got = client.get(path, headers=HTML)
            if who is None and path.startswith("/library"):
                assert got.status_code == 303, path  # sign in first
            elif who is None and path.startswith("/api/me"):
                assert got.status_code == 401, path
            else:
                assert got.status_code == 404, (who, path)
                assert "Secret" not in got.text
    owner = browser(ada)
    assert owner.get(f"/collections/{tag.id}", headers=HTML).status_code == 200
    assert owner.get(f"/rss/collections/{tag.id}").status_code == 404  # feeds are for public tags only


def test_a_public_tag_has_a_page_and_feeds(app: App, browser: Browser, ada: int) -> None:
    client = browser(ada)
    app.readers.library.save(ada, "2402.00002", ["Diffusion"])
    app.readers.library.save(ada, "2401.00001", ["Diffusion"])
    tag = app.readers.library.tags(ada)[0]
    post_form(
        client, f"/library?tag={tag.id}", f"/library/tags/{tag.id}", {"name": "Diffusion <b>", "public": "1"}
    )
    anonymous = browser(None)
    page = anonymous.get(f"/collections/{tag.id}", headers=HTML)
    assert page.status_code == 200
    assert "Diffusion &lt;b&gt;" in page.text
    assert "A collection by <bdi>Ada</bdi>" in page.text
    for kind in ("rss", "atom"):
        feed = anonymous.get(f"/{kind}/collections/{tag.id}")
        assert feed.status_code == 200
        parsed = feedparser.parse(feed.content)
        assert parsed.bozo == 0
        assert {e.link for e in parsed.entries} == {
            "http://testserver/papers/2401.00001",
            "http://testserver/papers/2402.00002",
        }
    api = anonymous.get(f"/api/collections/{tag.id}").json()
    assert (api["owner"], api["total"]) == ("Ada", 2)
    # a paper hidden by the moderators leaves the page and the feed
    app.readers.accounts.hide_paper("2401.00001")
    parsed = feedparser.parse(anonymous.get(f"/rss/collections/{tag.id}").content)
    assert [e.link for e in parsed.entries] == ["http://testserver/papers/2402.00002"]


def test_json_api_with_a_bearer_token(app: App, browser: Browser, ada: int, bob: int) -> None:
    client = browser(None)
    auth = {"authorization": f"Bearer {token_for(app, ada)}"}
    saved = client.post(
        "/api/me/saves", json={"paper_id": "arXiv:2401.00001v1", "tags": ["GNN"]}, headers=auth
    )
    assert saved.status_code == 200, saved.text
    assert saved.json()["tags"] == ["GNN"]
    assert (
        client.put("/api/me/papers/2401.00001/read", json={"read": True}, headers=auth).json()["read"] is True
    )
    note = client.put(
        "/api/me/papers/2401.00001/note", json={"body": "see <script>x</script> *this*"}, headers=auth
    )
    assert note.json()["note"]["html"] == "<p>see &lt;script&gt;x&lt;/script&gt; <em>this</em></p>\n"
    old = client.post("/api/me/saves", json={"paper_id": "hep-th/9901001"}, headers=auth).json()
    assert old["tags"] == ["Saved"]
    assert client.put(
        "/api/me/papers/hep-th/9901001/dismissed", json={"dismissed": True}, headers=auth
    ).json()["dismissed"]
    listing = client.get("/api/me/library", headers=auth).json()
    assert listing["total"] == 2
    assert {i["paper"]["id"] for i in listing["items"]} == {"2401.00001", "hep-th/9901001"}
    tags = client.get("/api/me/tags", headers=auth).json()
    gnn = next(t for t in tags if t["name"] == "GNN")
    renamed = client.patch(f"/api/me/tags/{gnn['id']}", json={"public": True}, headers=auth).json()
    assert (renamed["public"], renamed["url"]) == (True, f"/collections/{gnn['id']}")
    other = {"authorization": f"Bearer {token_for(app, bob)}"}
    assert client.patch(f"/api/me/tags/{gnn['id']}", json={"public": False}, headers=other).status_code == 404
    assert client.delete(f"/api/me/tags/{gnn['id']}", headers=other).status_code == 404
    assert client.get(f"/api/me/library?tag={gnn['id']}", headers=other).status_code == 404
    assert client.post("/api/me/saves", json={"paper_id": "2501.12345"}, headers=auth).status_code == 404
    bad = client.post("/api/me/saves", json={"paper_id": "nonsense"}, headers=auth)
    assert bad.status_code == 400
    assert (
        client.post(
            "/api/me/saves", json={"paper_id": "2401.00001", "tags": ["x" * 61]}, headers=auth
        ).json()["field"]
        == "tag"
    )
    assert client.delete("/api/me/saves/2401.00001", headers=auth).json()["saved"] is False
    revoked = client.get("/api/me/library", headers={"authorization": "Bearer pf_not_a_token"})
    assert revoked.status_code == 401


def test_api_with_the_session_cookie_needs_the_csrf_header(app: App, browser: Browser, ada: int) -> None:
    client = browser(ada)
    page = client.get("/library", headers=HTML)
    token = csrf_from(page.text)
    refused = client.post("/api/me/saves", json={"paper_id": "2401.00001"})
    assert refused.status_code == 403
    ok = client.post("/api/me/saves", json={"paper_id": "2401.00001"}, headers={CSRF_HEADER: token})
    assert ok.status_code == 200


def test_followed_authors_pages_and_api(app: App, browser: Browser, ada: int) -> None:
    client = browser(ada)
    page = client.get("/author?name=Jose%20Garcia", headers=HTML)
    assert page.status_code == 200
    text = page.text
    assert text.index("Gamma graph networks") < text.index("Beta diffusion models")
    assert "Delta diffusion transformers" not in text  # Joséphine Garcia is someone else
    got = post_form(
        client,
        "/author?name=Jose%20Garcia",
        "/library/authors/follow",
        {"name": "Jose Garcia", "next": "/author?name=Jose%20Garcia"},
    )
    assert got.headers["location"] == "/author?name=Jose%20Garcia&done=followed"
    assert "Following ✓" in client.get("/author?name=Jose%20Garcia", headers=HTML).text
    assert "Jose Garcia" in client.get("/library/authors", headers=HTML).text
    auth = {"authorization": f"Bearer {token_for(app, ada)}"}
    api = browser(None)  # a program with a token, no browser cookies
    assert [a["name"] for a in api.get("/api/me/authors", headers=auth).json()] == ["Jose Garcia"]
    assert api.delete("/api/me/authors?name=JOSÉ%20garcía", headers=auth).json() == {"followed": False}
    assert browser(None).get("/author?name=", headers=HTML).status_code == 400


def test_saved_search_alert_page_and_private_feed(app: App, browser: Browser, ada: int, bob: int) -> None:
    client = browser(ada)
    got = post_form(
        client,
        "/library/searches",
        "/library/searches",
        {"name": "Diffusion", "q": "diffusion", "cat": "cs.LG", "from": "2024-01-01"},
    )
    location = got.headers["location"]
    found = re.search(r"/library/searches/(\d+)", location)
    assert found is not None
    search_id = int(found[1])
    page = client.get(f"/library/searches/{search_id}", headers=HTML).text
    feed_link = re.search(r'href="(/rss/alerts/[^"]+)"', page)
    assert feed_link is not None
    feed_path = feed_link[1]
    assert "Beta diffusion models" in page
    parsed = feedparser.parse(browser(None).get(feed_path).content)  # feed readers have no session
    assert parsed.bozo == 0
    assert {e.link.rsplit("/", 1)[1] for e in parsed.entries} >= {"2402.00002", "2404.00004"}
    assert browser(None).get(feed_path[:-2] + "xx").status_code == 404
    assert browser(bob).get(f"/library/searches/{search_id}", headers=HTML).status_code == 404
    bad = post_form(client, "/library/searches", "/library/searches", {"name": "Diffusion", "q": "again"})
    assert bad.status_code == 400
    assert "already have a saved search" in bad.text
    seen = post_form(client, f"/library/searches/{search_id}", f"/library/searches/{search_id}/seen", {})
    assert seen.status_code == 303
    auth = {"authorization": f"Bearer {token_for(app, ada)}"}
    alert = client.get(f"/api/me/searches/{search_id}", headers=auth).json()
    assert alert["search"]["filters"] == {
        "dateFrom": "2024-01-01",
        "dateTo": None,
        "categories": ["cs.LG"],
        "hasCode": None,
    }
    assert alert["new"] == []  # everything matching was published before "seen"


def test_import_upload_on_the_web(app: App, browser: Browser, ada: int) -> None:
    client = browser(ada)
    page = client.get("/library/import", headers=HTML)
    token = csrf_from(page.text)
    files = {
        "file": ("to-read.txt", b"2401.00001\nhttps://arxiv.org/abs/2402.00002\nnonsense\n", "text/plain")
    }
    refused = client.post("/library/import", data={"tag": "Upload"}, files=files, headers=HTML)
    assert refused.status_code == 403  # no CSRF token: nothing imported
    assert app.readers.library.signals(ada).saved == ()
    got = client.post(
        "/library/import", data={"tag": "Upload", "csrf_token": token}, files=files, headers=HTML
    )
    assert got.status_code == 200, got.text[:500]
    assert "Saved 2 new to “<bdi>Upload</bdi>”" in got.text
    assert "to-read.txt:3" in got.text
    broken = (DATA / "broken.bib").read_bytes()
    bad = client.post(
        "/library/import",
        data={"csrf_token": token},
        files={"file": ("broken.bib", broken, "text/plain")},
        headers=HTML,
    )
    assert bad.status_code == 400
    assert "broken.bib:6 (unclosed2024)" in bad.text
    auth = {"authorization": f"Bearer {token_for(app, ada)}"}
    api = browser(None).post(
        "/api/me/library/import", files={"file": ("ids.txt", b"hep-th/9901001\n", "text/plain")}, headers=auth
    )
    assert api.json()["saved"] == 1


def test_hidden_papers_and_deleted_readers_do_not_break_pages(
    app: App, browser: Browser, ada: int, bob: int
) -> None:
    app.readers.library.save(ada, "2401.00001")
    app.readers.library.save(ada, "2402.00002", ["Shared"])
    shared = next(t for t in app.readers.library.tags(ada) if t.name == "Shared")
    app.readers.library.update_tag(ada, shared.id, public=True)
    app.readers.accounts.hide_paper("2401.00001")
    client = browser(ada)
    page = client.get("/library", headers=HTML)
    assert page.status_code == 200
    assert "Alpha: a synthetic paper" not in page.text
    assert "1 saved paper on this page was hidden by the moderators" in page.text
    ada_user = app.readers.accounts.user_by_id(ada)
    assert ada_user is not None
    app.readers.accounts.hide_user(ada)
    assert browser(bob).get(f"/collections/{shared.id}", headers=HTML).status_code == 404
    assert browser(None).get(f"/rss/collections/{shared.id}").status_code == 404
