"""The community pages and JSON API through the real app: buttons that work without JavaScript, the
upvoters list, submitting, comments, and the security cases (XSS in comments, CSRF, caps)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import lxml.etree
import lxml.html
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.web.security import CSRF_HEADER, SESSION_COOKIE
from tests.support.http_server import ReplayServer, Reply

from .conftest import API_PATH, DAY, add_reader, bearer, sign_in

HTML = {"accept": "text/html"}
PAPER = "2501.00202"  # 11 upvotes imported from Hugging Face


def _vote_form(html: str, paper_id: str) -> lxml.html.HtmlElement:
    doc = lxml.html.fromstring(html)
    action = f"/papers/{paper_id}/upvote"
    forms = [f for f in doc.cssselect("form.vote-form") if f.get("action", "").startswith(action)]
    assert len(forms) == 1, f"{len(forms)} vote forms for {paper_id}"
    return forms[0]


def _text(element: lxml.etree._Element) -> str:
    return "".join(str(part) for part in element.itertext())


def _pressed(form: lxml.html.HtmlElement) -> str | None:
    pressed = form.cssselect("button")[0].get("aria-pressed")
    return None if pressed is None else str(pressed)


def _shown(form: lxml.html.HtmlElement) -> str:
    return _text(form.cssselect(".count")[0])


def _post_form(client: TestClient, form: lxml.html.HtmlElement) -> Any:
    data = {i.get("name", ""): i.get("value", "") for i in form.cssselect("input[type=hidden]")}
    return client.post(form.get("action", ""), data=data, headers=HTML)


# -- upvotes --------------------------------------------------------------------------------------------


def test_anonymous_visitors_get_a_sign_in_link_and_no_cookie(site: TestClient) -> None:
    page = site.get(f"/papers/date/{DAY}", headers=HTML)
    assert page.status_code == 200
    assert "set-cookie" not in page.headers  # anonymous pages stay cookie-free and cacheable
    doc = lxml.html.fromstring(page.text)
    assert not doc.cssselect("form.vote-form")
    links = [a.get("href", "") for a in doc.cssselect("a.vote-link")]
    assert links
    assert all(link.startswith("/signin?next=") for link in links)


def test_the_upvote_button_works_without_javascript(app: App, site: TestClient) -> None:
    ada = add_reader(app, "ada@example.org", "Ada")
    sign_in(site, app, ada)
    feed = site.get(f"/papers/date/{DAY}", headers=HTML)
    form = _vote_form(feed.text, PAPER)
    assert _pressed(form) == "false"
    assert _shown(form) == "11"
    back = _post_form(site, form)
    assert back.status_code == 303
    assert back.headers["location"] == f"/papers/date/{DAY}"
    again = site.get(back.headers["location"], headers=HTML)
    form = _vote_form(again.text, PAPER)
    assert form.get("action") == f"/papers/{PAPER}/upvote/delete"
    assert _pressed(form) == "true"
    assert _shown(form) == "12"
    # the same vote form sent twice more (double click, back button) counts once
    stale = _vote_form(feed.text, PAPER)
    _post_form(site, stale)
    _post_form(site, stale)
    assert app.readers.community.votes(PAPER).local == 1
    # and taking it back
    _post_form(site, form)
    paper = site.get(f"/papers/{PAPER}", headers=HTML)
    assert _shown(_vote_form(paper.text, PAPER)) == "11"
    assert app.readers.community.votes(PAPER).local == 0


def test_old_style_ids_vote_too(app: App, site: TestClient) -> None:
    token = sign_in(site, app, add_reader(app, "ada@example.org"))
    voted = site.post("/api/papers/hep-th/9901001v2/upvote", headers={CSRF_HEADER: token})
    assert voted.json() == {
        "id": "hep-th/9901001",
        "upvotes": 1,
        "importedUpvotes": None,
        "localUpvotes": 1,
        "upvoted": True,
    }
    page = site.get("/papers/hep-th/9901001", headers=HTML)
    assert _vote_form(page.text, "hep-th/9901001").get("action") == "/papers/hep-th/9901001/upvote/delete"


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x", "javascript:alert(1)"])
def test_the_way_back_never_leaves_the_site(app: App, site: TestClient, target: str) -> None:
    token = sign_in(site, app, add_reader(app, "ada@example.org"))
    back = site.post(f"/papers/{PAPER}/upvote", data={"csrf_token": token, "next": target}, headers=HTML)
    assert back.status_code == 303
    assert back.headers["location"] == f"/papers/{PAPER}"


def test_upvoters_page_and_api_leave_hidden_readers_out(app: App, site: TestClient) -> None:
    ada = add_reader(app, "ada.secret@example.org", "Ada")
    nameless = add_reader(app, "nameless.person@example.org")
    spammer = add_reader(app, "spam@example.org", "Spammer")
    for reader in (ada, nameless, spammer):
        app.readers.community.upvote(reader, PAPER)
    app.readers.accounts.hide_user(spammer.id)
    listed = site.get(f"/api/papers/{PAPER}/upvoters").json()
    assert listed["total"] == 2
    assert sorted(u["user"]["name"] for u in listed["upvoters"]) == ["Ada", f"reader #{nameless.id}"]
    page = site.get(f"/papers/{PAPER}/upvoters", headers=HTML)
    assert page.status_code == 200
    assert "Ada" in page.text
    assert "Spammer" not in page.text
    assert "nameless.person" not in page.text  # no part of an address is ever shown
    assert "13 upvotes: 11 on Hugging Face and 2 readers here" in " ".join(page.text.split())
    paged = site.get(f"/api/papers/{PAPER}/upvoters", params={"limit": 1, "offset": 1}).json()
    assert paged["total"] == 2
    assert len(paged["upvoters"]) == 1
    assert site.get("/api/papers/2501.09999/upvoters").status_code == 404
    assert site.get("/api/papers/not-an-id/upvoters").status_code == 404


def test_a_hidden_paper_cannot_be_voted_on(app: App, site: TestClient) -> None:
    token = sign_in(site, app, add_reader(app, "ada@example.org"))
    app.readers.accounts.hide_paper(PAPER, reason="spam")
    refused = site.post(f"/api/papers/{PAPER}/upvote", headers={CSRF_HEADER: token})
    assert refused.status_code == 404
    assert refused.json()["error"] == f"No paper with id {PAPER} is in this paperfeed instance."


# -- submitting -----------------------------------------------------------------------------------------


def test_submit_page_puts_the_paper_on_todays_feed(app: App, site: TestClient, arxiv: ReplayServer) -> None:
    ada = add_reader(app, "ada@example.org", "Ada")
    token = sign_in(site, app, ada)
    form = site.get("/submit", headers=HTML)
    assert "You can submit 3 more papers today" in form.text
    done = site.post(
        "/submit", data={"csrf_token": token, "paper": "https://arxiv.org/abs/1605.08386v1"}, headers=HTML
    )
    assert done.status_code == 303
    assert done.headers["location"] == "/papers/1605.08386?submitted=1"
    page = site.get(done.headers["location"], headers=HTML)
    assert "Submitted: this paper is on today’s feed." in page.text
    (submitted,) = lxml.html.fromstring(page.text).cssselect("div#submitted")
    assert _text(submitted.cssselect("dt")[0]) == "Submitted by"
    assert " ".join(_text(submitted.cssselect("dd")[0]).split()).startswith("Ada to the feed of")
    today = app.readers.community.submission("1605.08386")
    assert today is not None
    feed = site.get(f"/papers/date/{today.day.isoformat()}", headers=HTML)
    assert "/papers/1605.08386" in feed.text
    again = site.post("/submit", data={"csrf_token": token, "paper": "1605.08386"}, headers=HTML)
    assert again.headers["location"] == "/papers/1605.08386?already=1"


@pytest.mark.parametrize(
    ("paper", "status", "message"),
    [
        ("<script>alert(1)</script>", 400, "is not an arXiv id or URL"),
        ("2501.99999", 404, "arXiv has no paper with id 2501.99999"),
    ],
)
def test_submit_page_errors_are_shown_on_the_form(
    app: App, site: TestClient, arxiv: ReplayServer, paper: str, status: int, message: str
) -> None:
    token = sign_in(site, app, add_reader(app, "ada@example.org"))
    shown = site.post("/submit", data={"csrf_token": token, "paper": paper}, headers=HTML)
    assert shown.status_code == status
    assert message in shown.text
    assert "<script>alert(1)</script>" not in shown.text  # the value is echoed escaped


def test_submit_api(app: App, site: TestClient, arxiv: ReplayServer) -> None:
    ada = add_reader(app, "ada@example.org", "Ada")
    auth = bearer(app, ada)
    made = site.post("/api/papers/submit", json={"id": "astro-ph/0601001"}, headers=auth)
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["created"] is True
    assert body["fetched"] is True
    assert body["paper"]["id"] == "astro-ph/0601001"
    assert body["paper"]["submittedOnDailyAt"] == body["submittedOnDailyAt"]
    assert body["submittedOnDailyBy"] == {"name": "Ada"}
    info = site.get("/api/papers/astro-ph/0601001").json()
    assert info["submittedOnDailyBy"]["name"] == "Ada"
    assert info["submittedOnDailyAt"] == body["submittedOnDailyAt"]
    again = site.post("/api/papers/submit", json={"id": "astro-ph/0601001v1"}, headers=auth)
    assert again.status_code == 200
    assert again.json()["created"] is False
    listed = site.post("/api/papers/submit", json={"id": "2501.00201"}, headers=auth)
    assert listed.status_code == 200
    assert listed.json()["submittedOnDailyAt"].startswith(DAY)
    assert listed.json()["submittedOnDailyBy"] is None
    bad = site.post("/api/papers/submit", json={"id": "nonsense"}, headers=auth)
    assert bad.status_code == 400
    assert "is not an arXiv id or URL" in bad.json()["error"]
    assert site.post("/api/papers/submit", json={}, headers=auth).status_code == 400


def test_arxiv_down_is_a_502_with_a_clear_message(app: App, site: TestClient, server: ReplayServer) -> None:
    server.add(API_PATH, Reply(503, b"maintenance"))
    down = site.post(
        "/api/papers/submit", json={"id": "2502.00001"}, headers=bearer(app, add_reader(app, "a@example.org"))
    )
    assert down.status_code == 502
    assert "arXiv could not be reached" in down.json()["error"]


def test_the_daily_submission_cap(app: App, site: TestClient, arxiv: ReplayServer) -> None:
    ada = add_reader(app, "ada@example.org")
    auth = bearer(app, ada)
    for paper in ("2501.00205", "hep-th/9901001", "1605.08386"):
        assert site.post("/api/papers/submit", json={"id": paper}, headers=auth).status_code == 201
    capped = site.post("/api/papers/submit", json={"id": "2104.12255"}, headers=auth)
    assert capped.status_code == 429
    assert int(capped.headers["retry-after"]) > 0
    assert capped.json()["retry_after"] == int(capped.headers["retry-after"])
    token = sign_in(site, app, ada)
    page = site.post("/submit", data={"csrf_token": token, "paper": "2104.12255"}, headers=HTML)
    assert page.status_code == 429
    assert "the most a reader may submit in a day" in page.text
    assert "You can submit 0 more papers today" in page.text
    assert app.core.store.get_paper("2104.12255") is None  # refused before fetching anything


# -- comments -------------------------------------------------------------------------------------------


def test_comment_edit_delete_through_the_pages(app: App, site: TestClient) -> None:
    ada = add_reader(app, "ada@example.org", "Ada")
    token = sign_in(site, app, ada)
    posted = site.post(
        f"/papers/{PAPER}/comments",
        data={"csrf_token": token, "body": "Great **lichen** work."},
        headers=HTML,
    )
    assert posted.status_code == 303
    location = posted.headers["location"]
    assert re.fullmatch(rf"/papers/{PAPER}#comment-\d+", location)
    comment_id = int(location.rsplit("-", 1)[1])
    page = site.get(f"/papers/{PAPER}", headers=HTML)
    (body,) = lxml.html.fromstring(page.text).cssselect(f"li#comment-{comment_id} div.comment-body")
    assert [_text(e) for e in body.cssselect("strong")] == ["lichen"]
    assert "1 comment here" in page.text
    edit = site.get(f"/comments/{comment_id}/edit", headers=HTML)
    assert edit.status_code == 200
    assert "Great **lichen** work." in edit.text
    saved = site.post(
        f"/comments/{comment_id}/edit", data={"csrf_token": token, "body": "Edited."}, headers=HTML
    )
    assert saved.headers["location"] == f"/papers/{PAPER}#comment-{comment_id}"
    assert app.readers.community.comment(comment_id).body == "Edited."
    empty = site.post(f"/papers/{PAPER}/comments", data={"csrf_token": token, "body": "   "}, headers=HTML)
    assert empty.status_code == 400
    assert "A comment cannot be empty." in empty.text
    gone = site.post(f"/comments/{comment_id}/delete", data={"csrf_token": token}, headers=HTML)
    assert gone.headers["location"] == f"/papers/{PAPER}#comments"
    assert app.readers.community.comments(PAPER)[1] == []


def test_another_reader_cannot_edit_and_admins_hide(app: App, site: TestClient) -> None:
    ada = add_reader(app, "ada@example.org", "Ada")
    bob = add_reader(app, "bob@example.org", "Bob")
    admin = add_reader(app, "root@example.org", "Root", role="admin")
    made = app.readers.community.add_comment(ada, PAPER, "Ada's comment")
    token = sign_in(site, app, bob)
    assert site.get(f"/comments/{made.id}/edit", headers=HTML).status_code == 403
    page = site.get(f"/papers/{PAPER}", headers=HTML)
    assert f'action="/comments/{made.id}/delete"' not in page.text  # no buttons on others' comments
    refused = site.post(f"/comments/{made.id}/delete", data={"csrf_token": token}, headers=HTML)
    assert refused.status_code == 403
    assert "only delete your own comments" in refused.text
    site.cookies.clear()  # a Bearer token alone: no session cookie, no CSRF token needed
    hidden = site.post(f"/api/comments/{made.id}/hide", headers=bearer(app, admin))
    assert hidden.json()["hidden"] is True
    assert "Ada&#39;s comment" not in site.get(f"/papers/{PAPER}", headers=HTML).text
    assert site.get(f"/api/papers/{PAPER}/comments").json() == []
    assert site.get(f"/api/comments/{made.id}").status_code == 404
    sign_in(site, app, admin)
    seen = site.get(f"/papers/{PAPER}", headers=HTML).text
    assert "hidden by an administrator" in seen
    assert f'action="/comments/{made.id}/unhide"' in seen
    assert site.get(f"/api/comments/{made.id}", headers=bearer(app, admin)).json()["hidden"] is True


def test_comments_api(app: App, site: TestClient) -> None:
    ada = add_reader(app, "ada@example.org", "Ada")
    auth = bearer(app, ada)
    made = site.post(f"/api/papers/{PAPER}/comments", json={"body": "First _take_."}, headers=auth)
    assert made.status_code == 201
    first = made.json()
    assert first["author"] == {"name": "Ada"}
    assert first["html"] == "<p>First <em>take</em>.</p>\n"
    assert first["editedAt"] is None
    edited = site.patch(f"/api/comments/{first['id']}", json={"body": "Second take."}, headers=auth)
    assert edited.json()["body"] == "Second take."
    assert edited.json()["editedAt"] is not None
    other = bearer(app, add_reader(app, "bob@example.org"))
    assert (
        site.patch(f"/api/comments/{first['id']}", json={"body": "mine now"}, headers=other).status_code
        == 403
    )
    assert site.delete(f"/api/comments/{first['id']}", headers=other).status_code == 403
    assert [c["id"] for c in site.get(f"/api/papers/{PAPER}/comments").json()] == [first["id"]]
    assert site.delete(f"/api/comments/{first['id']}", headers=auth).status_code == 204
    assert site.get(f"/api/comments/{first['id']}").status_code == 404
    assert site.post("/api/papers/2501.09999/comments", json={"body": "x"}, headers=auth).status_code == 404
    too_long = site.post(f"/api/papers/{PAPER}/comments", json={"body": "x" * 10_001}, headers=auth)
    assert too_long.status_code == 400
    assert "at most 10,000 characters" in too_long.json()["error"]


def test_the_hourly_comment_cap(app: App, site: TestClient) -> None:
    auth = bearer(app, add_reader(app, "ada@example.org"))
    for n in range(5):  # the cap in these tests is 5
        assert (
            site.post(f"/api/papers/{PAPER}/comments", json={"body": f"n{n}"}, headers=auth).status_code
            == 201
        )
    capped = site.post(f"/api/papers/{PAPER}/comments", json={"body": "one more"}, headers=auth)
    assert capped.status_code == 429
    assert 0 < int(capped.headers["retry-after"]) <= 3600
    assert len(app.readers.community.comments(PAPER)[1]) == 5


HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">raw link</a>',
    "[md link](javascript:alert(1))",
    "[upper](JAVASCRIPT:alert(1))",
    "[tab](java&#x09;script:alert(1))",
    "[vb](vbscript:msgbox(1))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<javascript:alert(1)>",
    "[rel](/signout)",
    '<div onclick="alert(1)">div</div>',
    '"><svg onload=alert(1)>',
    '[title](https://ok.example "x\\" onmouseover=\\"alert(1)")',
    "![img](https://tracker.example/pixel.png)",
    "<iframe src=https://evil.example></iframe>",
    "<style>body{display:none}</style>",
    "`<b>code</b>` and <!-- comment --> **bold**",
    "[ok](https://ok.example/path?q=1&r=2) [mail](mailto:ada@example.org)",
]
ALLOWED_TAGS = {
    "p", "br", "hr", "em", "strong", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a",
    "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "div",
}  # fmt: skip


def test_comments_cannot_carry_script_raw_html_or_unsafe_links(app: App, site: TestClient) -> None:
    ada = add_reader(app, "ada@example.org", "Ada")
    app.readers.community.limits = replace(
        app.readers.community.limits, comments_per_hour=100
    )  # more than the site's cap
    for body in HOSTILE[1:]:
        app.readers.community.add_comment(ada, "2501.00203", body)
    bob = add_reader(app, "bob@example.org", "Bob")
    posted = site.post("/api/papers/2501.00203/comments", json={"body": HOSTILE[0]}, headers=bearer(app, bob))
    assert posted.status_code == 201
    assert posted.json()["html"] == "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"
    page = site.get("/papers/2501.00203", headers=HTML)
    doc = lxml.html.fromstring(page.text)
    bodies = doc.cssselect("div.comment-body")
    assert len(bodies) == len(HOSTILE)
    links = 0
    for shown in bodies:
        for element in shown.iter():
            assert isinstance(element.tag, str), element  # no HTML comments or processing instructions
            assert element.tag in ALLOWED_TAGS, element.tag
            for key, raw in element.attrib.items():
                name, value = str(key), str(raw)
                assert not name.lower().startswith("on"), (element.tag, name)
                assert name in {"class", "dir", "href", "title", "rel", "start", "align"}, name
                if name == "href":
                    assert urlsplit(value).scheme in ("https", "mailto"), value
            if element.tag == "a":
                links += 1
                assert element.get("rel") == "nofollow noopener ugc"
    assert links >= 3
    ok = doc.cssselect('div.comment-body a[href="https://ok.example/path?q=1&r=2"]')
    assert len(ok) == 1
    text = " ".join(_text(b) for b in bodies)
    assert "<script>alert(1)</script>" in text  # shown as text, not run
    assert "<b>code</b>" in text
    # the API's html field is the same sanitised HTML as the page's
    api = [item["html"] for item in site.get("/api/papers/2501.00203/comments").json()]

    def serialized(element: lxml.html.HtmlElement) -> str:
        return str(lxml.html.tostring(element, encoding="unicode", with_tail=False))

    wrapped = [lxml.html.fragment_fromstring(f'<div class="comment-body" dir="auto">{h}</div>') for h in api]
    assert [serialized(b) for b in bodies] == [serialized(w) for w in wrapped]


# -- CSRF -----------------------------------------------------------------------------------------------


def test_forms_without_a_valid_csrf_token_change_nothing(app: App, site: TestClient) -> None:
    ada = add_reader(app, "ada@example.org")
    token = sign_in(site, app, ada)
    assert site.post(f"/papers/{PAPER}/upvote", data={}, headers=HTML).status_code == 403
    assert (
        site.post(f"/papers/{PAPER}/upvote", data={"csrf_token": token + "x"}, headers=HTML).status_code
        == 403
    )
    cross = site.post(
        f"/papers/{PAPER}/upvote",
        data={"csrf_token": token},
        headers={**HTML, "origin": "https://evil.example", "sec-fetch-site": "cross-site"},
    )
    assert cross.status_code == 403
    # a token minted for another reader's session does not carry over
    bob_token = sign_in(site, app, add_reader(app, "bob@example.org"))
    site.cookies.set(SESSION_COOKIE, app.readers.accounts.create_session(ada).session)
    assert (
        site.post(f"/papers/{PAPER}/upvote", data={"csrf_token": bob_token}, headers=HTML).status_code == 403
    )
    # the API with the session cookie needs the header; a Bearer token does not
    assert site.post(f"/api/papers/{PAPER}/upvote").status_code == 403
    assert site.post(f"/api/papers/{PAPER}/comments", json={"body": "x"}).status_code == 403
    assert app.readers.community.votes(PAPER).local == 0
    assert app.readers.community.comments(PAPER)[1] == []
    site.cookies.clear()
    assert site.post(f"/api/papers/{PAPER}/upvote", headers=bearer(app, ada)).status_code == 200
    revoked = {"authorization": "Bearer pf_not_a_real_token"}
    assert site.post(f"/api/papers/{PAPER}/upvote", headers=revoked).status_code == 401
