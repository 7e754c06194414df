"""Private notes keep only absolute http(s)/mailto links, as docs/library.md says, the same rule as comments.

A relative target (``/admin``, ``settings``, ``//other.example``, ``?q=x``) would make a link in a note
point into this site or to a scheme-relative foreign host; the sanitiser drops such ``href``s.
"""

from __future__ import annotations

import lxml.html
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.web import create_app
from paperfeed.web.comment_markup import render_comment
from paperfeed.web.library_notes import render_note
from paperfeed.web.security import SESSION_COOKIE

RELATIVE = ["/admin", "settings/delete", "//other.example/x", "?q=x", "#top", "./x", "../up"]
ABSOLUTE = ["https://example.org/a", "http://example.org/b", "mailto:ada@example.org"]


def _hrefs(html: str) -> list[str | None]:
    doc = lxml.html.fragment_fromstring(html, create_parent="div")
    return [a.get("href") for a in doc.iter("a")]


@pytest.mark.parametrize("render", [render_note, render_comment], ids=["note", "comment"])
def test_only_absolute_links_survive(render: object) -> None:
    for target in RELATIVE:
        html = str(render(f"see [this]({target})"))  # type: ignore[operator]
        assert _hrefs(html) in ([None], []), (target, html)
    for target in ABSOLUTE:
        html = str(render(f"see [this]({target})"))  # type: ignore[operator]
        assert _hrefs(html) == [target], (target, html)


def test_a_note_with_a_relative_link_on_the_paper_page(app: App, ada: int) -> None:
    app.readers.library.set_note(ada, "2401.00001", "Go [here](/account) or [there](https://example.org/ok).")
    user = app.readers.accounts.user_by_id(ada)
    assert user is not None
    with TestClient(create_app(lambda: build_app(app.settings)), follow_redirects=False) as site:
        site.cookies.set(SESSION_COOKIE, app.readers.accounts.create_session(user).session)
        page = site.get("/papers/2401.00001", headers={"accept": "text/html"}).text
    doc = lxml.html.fromstring(page)
    note_links = [a.get("href") for a in doc.cssselect(".note-body a")]
    assert "https://example.org/ok" in note_links, note_links
    assert "/account" not in note_links
