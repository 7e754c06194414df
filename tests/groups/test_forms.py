"""The group pages' forms (issue #40 item 7), over HTTP on the real app.

Before: a malformed paper id or one not in the instance replaced the group page with a full-page 400/404,
the input lost; queueing from a paper page came back to it with ``?done=queued`` that nothing showed, the
control still offered to queue the paper again, and every form of the page copied ``done=queued`` into
its ``next``. Now a refusal is shown beside the form with what was typed kept, and the paper's control
says where it is queued.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from tests.accounts.conftest import PAPER_IDS, fill, quick_sign_in

OWNER = "owner@example.org"


def _group(app: App, site: TestClient, name: str = "Zebrafish club") -> int:
    quick_sign_in(site, app, OWNER)
    return app.readers.groups.create(app.readers.accounts.user_by_email(OWNER).id, name).id


def _queue_form(page: str) -> str:
    found = re.search(r'<form[^>]*id="queue-form".*?</form>', page, re.S)
    assert found, page
    return found.group(0)


def test_a_malformed_or_unknown_paper_id_is_shown_on_the_queue_form_with_the_input_kept(
    app: App, site: TestClient, new_browser: Callable[[], TestClient]
) -> None:
    gid = _group(app, site)
    page = f"/groups/{gid}"
    bad = fill(site, page, f"{page}/queue", {"paper_id": "not a paper id", "note": "my **why**"})
    assert bad.status_code == 400
    form = _queue_form(bad.text)
    assert 'role="alert"' in form
    assert 'value="not a paper id"' in form
    assert "my **why**</textarea>" in form
    assert 'aria-invalid="true"' in form
    assert "Zebrafish club" in bad.text  # the group's page, not an error page
    unknown = fill(site, page, f"{page}/queue", {"paper_id": "2501.99999", "note": "later"})
    assert unknown.status_code == 404
    form = _queue_form(unknown.text)
    assert "no paper with id 2501.99999 is in this instance" in form
    assert 'value="2501.99999"' in form
    assert "later</textarea>" in form
    assert "Zebrafish club" in unknown.text
    long_note = fill(site, page, f"{page}/queue", {"paper_id": PAPER_IDS[0], "note": "x" * 2001})
    assert long_note.status_code == 400
    assert "2,000" in _queue_form(long_note.text)
    # a stranger still gets the 404 of an unknown group, not the group's page
    other = new_browser()
    quick_sign_in(other, app, "stranger@example.org")
    refused = fill(other, "/groups", f"{page}/queue", {"paper_id": "not a paper id"})
    assert refused.status_code == 404
    assert "Zebrafish club" not in refused.text


def test_queueing_from_a_paper_page_says_so_and_offers_it_no_more(app: App, site: TestClient) -> None:
    gid = _group(app, site)
    paper = f"/papers/{PAPER_IDS[0]}"
    before = site.get(paper, headers={"accept": "text/html"}).text
    assert f'action="/groups/{gid}/queue"' in before
    queued = fill(site, paper, f"/groups/{gid}/queue", {"paper_id": PAPER_IDS[0], "next": paper})
    assert queued.status_code == 303
    back = queued.headers["location"]
    assert back == f"{paper}?done=queued&queued={PAPER_IDS[0]}"
    shown = site.get(back, headers={"accept": "text/html"}).text
    assert "Added to the queue." in shown
    assert "Queued ✓" in shown
    assert f'In the queue of <a href="/groups/{gid}"><bdi>Zebrafish club</bdi></a>' in shown
    assert f'action="/groups/{gid}/queue"' not in shown  # not offered again
    nexts = [html.unescape(v) for v in re.findall(r'name="next" value="([^"]*)"', shown)]
    assert nexts
    assert all("done=" not in v and "queued=" not in v for v in nexts), nexts
    again = site.get(paper, headers={"accept": "text/html"}).text  # later: no message, still queued
    assert "Added to the queue." not in again
    assert "Queued ✓" in again


def test_a_done_key_in_next_is_replaced_never_repeated(app: App, site: TestClient) -> None:
    gid = _group(app, site)
    paper = f"/papers/{PAPER_IDS[1]}?done=saved"
    queued = fill(site, paper, f"/groups/{gid}/queue", {"paper_id": PAPER_IDS[1], "next": paper})
    assert queued.headers["location"] == f"/papers/{PAPER_IDS[1]}?done=queued&queued={PAPER_IDS[1]}"
