"""For the group: the "For you" model trained on the group's queue and past sessions ranks recent papers,
each with why (the queued or presented paper it resembles); the group's mute rules and the reader's hold;
strangers get the unknown-group 404 (the real app, the real indexer, the deterministic fake embedder)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from tests.accounts.conftest import PAPER_IDS, quick_sign_in

ZEBRAFISH, GLACIER, SHEEP, ATLAS = PAPER_IDS


def test_recommendations_learn_from_the_queue_and_sessions_with_reasons(
    app: App, site: TestClient, new_browser: Callable[[], TestClient]
) -> None:
    app.indexes.indexer.current().run()
    quick_sign_in(site, app, "owner@example.org")
    owner = app.readers.accounts.user_by_email("owner@example.org").id
    group = app.readers.groups.create(owner, "Fish")
    app.readers.groups.queue_add(owner, group.id, ZEBRAFISH, "gaits")
    past = datetime.now(UTC) - timedelta(days=10)  # a session that took place (written as the store would)
    app.readers.groups.records.add_session(group.id, past, owner, SHEEP, past - timedelta(days=5))

    found = app.readers.groups.for_the_group(owner, group.id)
    ids = [p.paper.id for p in found.items]
    assert ZEBRAFISH not in ids  # already the group's
    assert SHEEP not in ids
    assert ids[0] == ATLAS  # the other zebrafish paper
    assert found.mode in ("model", "similarity")
    assert found.positives == 2
    queue_or_session = (
        "similar to “Zebrafish locomotion with sparse transformers” in the group's queue",
        f"similar to “Tiny language models that count sheep”, read in the session of {past:%d %b %Y}",
    )
    assert [w for w in found.items[0].why if w in queue_or_session]

    page = site.get(f"/groups/{group.id}/for-the-group", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["cache-control"] == "private, no-store"
    assert f'data-paper="{ATLAS}"' in page.text
    assert "Why: similar to" in page.text
    api = site.get(f"/api/groups/{group.id}/recommendations")
    assert api.json()["items"][0]["paper"]["id"] == ATLAS
    assert api.json()["items"][0]["reasons"]

    # the group mutes a word of the atlas paper: it leaves the group's recommendations
    app.readers.mutes.add_group(group.id, "word", "wavelet")
    assert ATLAS not in [p.paper.id for p in app.readers.groups.for_the_group(owner, group.id).items]

    stranger = new_browser()
    quick_sign_in(stranger, app, "stranger@example.org")
    assert (
        stranger.get(f"/groups/{group.id}/for-the-group", headers={"accept": "text/html"}).status_code == 404
    )
    assert stranger.get(f"/api/groups/{group.id}/recommendations").status_code == 404
