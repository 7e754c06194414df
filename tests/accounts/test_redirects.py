"""``safe_next`` / ``redirect_back``: a form's ``next`` is followed only when it stays on this site."""

from __future__ import annotations

import pytest

from paperfeed.web.security import redirect_back, safe_next

_C0 = [chr(c) for c in range(0x20)] + ["\x7f"]


def _where_a_browser_goes(location: str) -> str | None:
    """The host a browser would leave for on ``Location: location`` (None: stays on this site).

    The WHATWG URL rules that matter here: C0 controls and spaces are trimmed from both ends, tabs and
    newlines are dropped anywhere, and ``\\`` counts as ``/`` in http(s) URLs.
    """
    text = location.strip("".join(_C0) + " ")
    text = "".join(ch for ch in text if ch not in "\t\n\r").replace("\\", "/")
    if text.startswith("/") and not text.startswith("//"):
        return None
    rest = text.split("//", 1)[-1]
    return rest.split("/", 1)[0] or "?"


OFF_SITE = [
    "//evil.com",
    "///evil.com",
    "//evil.com/path?x=1",
    "https://evil.com",
    "http://evil.com/",
    "https:evil.com",
    "javascript:alert(1)",
    "/\\evil.com",
    "\\\\evil.com",
    "\\/evil.com",
    "/\\/evil.com",
    "/a\\b",
    "/\t/evil.com",
    "/\n/evil.com",
    "/\r/evil.com",
    "/\r\nSet-Cookie: x=1",
    "\t//evil.com",
    " //evil.com",
    "evil.com",
    "",
    None,
    "/" + "a" * 2000,
]


@pytest.mark.parametrize("value", OFF_SITE)
def test_anything_that_could_leave_the_site_falls_back_to_the_default(value: str | None) -> None:
    assert safe_next(value) == "/"
    assert safe_next(value, "/library") == "/library"


@pytest.mark.parametrize(
    "value", ["/", "/library", "/library?tag=3&read=unread", "/papers/2503.10613#comments", "/%2F%2Fevil.com"]
)
def test_local_paths_are_kept(value: str) -> None:
    assert safe_next(value, "/library") == value
    assert _where_a_browser_goes(value) is None


@pytest.mark.parametrize("char", _C0, ids=[f"0x{ord(c):02x}" for c in _C0])
@pytest.mark.parametrize(
    "template", ["{c}//evil.com", "/{c}/evil.com", "/{c}\\evil.com", "//{c}evil.com", "/x{c}", "{c}/x"]
)
def test_no_control_character_turns_a_path_into_another_site(char: str, template: str) -> None:
    value = template.format(c=char)
    kept = safe_next(value, "/fallback")
    assert kept == "/fallback" or kept == value
    assert _where_a_browser_goes(kept) is None, repr(kept)
    if char in "\t\n\r":
        assert kept == "/fallback"  # dropped by browsers, so never passed through


def test_the_browser_model_of_this_test_does_see_the_attacks() -> None:
    """Guards the guard: without safe_next these values would leave the site."""
    for value in ("//evil.com", "/\\evil.com", "/\t/evil.com", "\x01//evil.com", "https://evil.com"):
        assert _where_a_browser_goes(value) == "evil.com", value


def test_redirect_back_follows_a_local_next_and_adds_the_message_key() -> None:
    response = redirect_back("/library?tag=3", "/library", "saved")
    assert response.status_code == 303
    assert response.headers["location"] == "/library?tag=3&done=saved"
    assert redirect_back("/library/authors", "/", "followed").headers["location"] == (
        "/library/authors?done=followed"
    )
    assert redirect_back("/library", "/").headers["location"] == "/library"


@pytest.mark.parametrize("value", ["//evil.com", "https://evil.com", "/\\evil.com", "", None])
def test_redirect_back_goes_to_the_default_for_anything_else(value: str | None) -> None:
    response = redirect_back(value, "/library/authors", "followed")
    assert response.status_code == 303
    assert response.headers["location"] == "/library/authors?done=followed"
