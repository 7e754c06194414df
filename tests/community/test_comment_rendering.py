"""Comment Markdown is rendered once per text, not on every view, and a comment's size is capped.

Rendering a 10,000-character comment costs markdown-it + nh3 a tenth of a second or more; five of them
made a paper page three times slower on every view. The app renders through one bounded, content-keyed
cache that the web app makes (``create_app``); the test swaps in a renderer that counts
its calls and views the page and the API many times.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from markupsafe import Markup

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.community import MAX_COMMENT_CHARS
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.comment_markup import CommentRenderer, render_comment
from paperfeed.web.security import CSRF_HEADER

from .conftest import add_reader, bearer, sign_in

HTML = {"accept": "text/html"}
PAPER = "2501.00202"


def test_each_comment_text_is_rendered_once_however_often_it_is_shown(app: App, settings: Settings) -> None:
    calls: Counter[str] = Counter()

    def counting(source: str) -> Markup:
        calls[source] += 1
        return render_comment(source)

    def build() -> App:
        return build_app(settings)

    counted = CommentRenderer(counting)  # in place of the one create_app would make
    with TestClient(create_app(build, comment_renderer=counted), follow_redirects=False) as site:
        ada = add_reader(app, "ada@example.org", "Ada")
        token = sign_in(site, app, ada)
        bodies = [f"Comment {n}: **bold** and [a link](https://example.org/{n})." for n in range(3)]
        for body in bodies:
            posted = site.post(
                f"/papers/{PAPER}/comments", data={"csrf_token": token, "body": body}, headers=HTML
            )
            assert posted.status_code == 303, posted.text
        for _ in range(4):
            page = site.get(f"/papers/{PAPER}", headers=HTML)
            assert page.status_code == 200
            assert page.text.count("<strong>bold</strong>") == 3
            listed = site.get(f"/api/papers/{PAPER}/comments")
            assert [c["html"].count("<strong>") for c in listed.json()] == [1, 1, 1]
        # an edit renders the new text once; the old text is never rendered again
        first = listed.json()[0]["id"]
        edited = site.patch(
            f"/api/comments/{first}", json={"body": "Edited _once_."}, headers={CSRF_HEADER: token}
        )
        assert edited.status_code == 200
        for _ in range(3):
            assert "<em>once</em>" in site.get(f"/papers/{PAPER}", headers=HTML).text
    assert calls == Counter({**dict.fromkeys(bodies, 1), "Edited _once_.": 1}), calls


def test_the_cache_is_bounded() -> None:
    calls: Counter[str] = Counter()

    def counting(source: str) -> Markup:
        calls[source] += 1
        return Markup(source)

    cache = CommentRenderer(counting, max_entries=2)
    for text in ("a", "b", "a", "c", "a", "b"):
        cache(text)
    assert len(cache) == 2
    assert calls == Counter({"a": 1, "b": 2, "c": 1})  # "b" was the least recently used when "c" came


@pytest.mark.parametrize("where", ["api", "form"])
def test_an_over_long_comment_is_refused_naming_the_field(
    app: App, site: TestClient, where: str, tmp_path: Path
) -> None:
    ada = add_reader(app, "ada@example.org", "Ada")
    body = "x" * (MAX_COMMENT_CHARS + 1)
    if where == "api":
        got = site.post(f"/api/papers/{PAPER}/comments", json={"body": body}, headers=bearer(app, ada))
        assert got.status_code == 400
        answer = got.json()
        assert answer["errors"] == [{"param": "body", "message": answer["errors"][0]["message"]}]
        assert f"at most {MAX_COMMENT_CHARS:,} characters" in answer["error"]
        assert answer["error"].startswith("body: ")
    else:
        token = sign_in(site, app, ada)
        got = site.post(f"/papers/{PAPER}/comments", data={"csrf_token": token, "body": body}, headers=HTML)
        assert got.status_code == 400
        assert f"body: A comment has at most {MAX_COMMENT_CHARS:,} characters" in got.text
    assert app.readers.community.comments(PAPER)[1] == []
