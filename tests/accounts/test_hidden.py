"""An administrator hides a paper: it leaves feeds, search, the API, RSS and its page, and comes back."""

from __future__ import annotations

from fastapi.testclient import TestClient

from paperfeed.bootstrap import App

from .conftest import fill, quick_sign_in

HIDDEN = "2501.00101"  # "Zebrafish locomotion with sparse transformers", top of 2025-01-06
KEPT = "2501.00104"  # "Compressing zebrafish brain atlases": also matches "zebrafish"


def _everywhere(client: TestClient) -> dict[str, str]:
    """Every surface a paper shows on, as text."""
    html = {"accept": "text/html"}
    return {
        "day page": client.get("/papers/date/2025-01-06", headers=html).text,
        "week page": client.get("/papers/week/2025-W02", headers=html).text,
        "daily API": client.get("/api/daily_papers", params={"date": "2025-01-06"}).text,
        "papers API": client.get("/api/papers").text,
        "search API": client.get("/api/papers/search", params={"q": "zebrafish"}).text,
        "search page": client.get("/search", params={"q": "zebrafish"}, headers=html).text,
        "rss": client.get("/rss/daily", params={"date": "2025-01-06"}).text,
        "rss search": client.get("/rss/search", params={"q": "zebrafish"}).text,
        "latest day API": client.get("/api/daily_papers").text,
    }


def test_hidden_paper_disappears_everywhere_and_comes_back(site: TestClient, app: App) -> None:
    before = _everywhere(site)
    for surface, body in before.items():
        if surface != "latest day API":  # (2025-01-07: a day the paper is not on)
            assert HIDDEN in body or "Zebrafish locomotion" in body, surface
    assert site.get(f"/api/papers/{HIDDEN}").status_code == 200

    quick_sign_in(site, app, "mod@example.org", role="admin")
    done = fill(site, "/admin", "/admin/papers/hide", {"paper_id": f"arXiv:{HIDDEN}v2", "reason": "spam"})
    assert done.status_code == 303
    assert [h.paper_id for h in app.readers.accounts.hidden_papers()] == [HIDDEN]
    assert "spam" in site.get("/admin", headers={"accept": "text/html"}).text

    after = _everywhere(site)
    for surface, body in after.items():
        assert HIDDEN not in body, surface
        assert "Zebrafish locomotion" not in body, surface
    assert KEPT in after["search API"]  # the other zebrafish paper still matches
    assert site.get(f"/api/papers/{HIDDEN}").status_code == 404
    assert site.get(f"/papers/{HIDDEN}", headers={"accept": "text/html"}).status_code == 404
    assert site.get(f"/api/papers/{KEPT}/similar").status_code == 200
    assert HIDDEN not in site.get(f"/api/papers/{KEPT}/similar").text

    shown = fill(site, "/admin", "/admin/papers/unhide", {"paper_id": HIDDEN})
    assert shown.status_code == 303
    assert site.get(f"/api/papers/{HIDDEN}").status_code == 200
    assert HIDDEN in site.get("/api/papers/search", params={"q": "zebrafish"}).text


def test_hiding_an_unknown_paper_says_so(site: TestClient, app: App) -> None:
    quick_sign_in(site, app, "mod@example.org", role="admin")
    missing = fill(site, "/admin", "/admin/papers/hide", {"paper_id": "2501.99999"})
    assert missing.status_code == 404
    assert "No paper with id 2501.99999" in missing.text
    bad = fill(site, "/admin", "/admin/papers/hide", {"paper_id": "not an id"})
    assert bad.status_code == 400


def test_hidden_user_is_signed_out_and_cannot_sign_in(site: TestClient, app: App) -> None:
    quick_sign_in(site, app, "troll@example.org")
    token = app.readers.accounts.create_api_token(
        app.readers.accounts.user_by_email("troll@example.org"), "t"
    )[1]
    assert site.get("/api/me").status_code == 200
    victim = app.readers.accounts.user_by_email("troll@example.org")
    app.readers.accounts.hide_user(victim.id)
    assert site.get("/api/me").status_code == 401
    assert site.get("/api/me", headers={"authorization": f"Bearer {token}"}).status_code == 401
    app.readers.accounts.unhide_user(victim.id)
    assert site.get("/api/me", headers={"authorization": f"Bearer {token}"}).status_code == 200
