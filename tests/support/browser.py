"""One Debian chromium per test process, driven by Playwright's sync API.

Playwright's sync API allows one running instance per thread, so the browser is a single session fixture
defined here (a plugin, registered in tests/conftest.py) rather than in each suite: two suites importing
their own copies would start two instances in one thread and the second would fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["CHROMIUM_ARGS", "chromium_browser", "chromium_path", "header_on_one_row", "watch_problems"]

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    """Debian's chromium; missing is a skip on a developer's machine and a failure in CI."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        reason = "chromium is not installed: run scripts/ensure-browser (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def chromium_browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("the playwright package is missing: pip install -e '.[test]'")
        pytest.skip("the playwright package is not installed (pip install -e '.[test]')")
    executable = chromium_path()
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def watch_problems(page: Any) -> list[str]:
    """What a page did wrong while a test drove it: console errors, uncaught page errors, and dialogs
    (dismissed, so a test never hangs on one). The list fills as it happens; a test asserts it empty."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))

    def on_dialog(dialog: Any) -> None:  # playwright.sync_api.Dialog (imported lazily by the caller)
        problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return problems


_HEADER_ROW = """() => {
  const parts = ['.brand', '.site-nav', '.header-search', '.account-menu']
    .map(s => document.querySelector('.site-header ' + s)).filter(Boolean)
    .map(e => { const r = e.getBoundingClientRect();
                return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; });
  const header = document.querySelector('.site-header').getBoundingClientRect();
  return {parts, height: header.height, width: document.documentElement.clientWidth,
          scroll: document.documentElement.scrollWidth};
}"""


def header_row(page: Any) -> dict[str, Any]:
    """The boxes of the site header's parts (brand, menu, search, account), its height, the page's width
    and scroll width."""
    found: dict[str, Any] = page.evaluate(_HEADER_ROW)
    return found


def header_on_one_row(page: Any, where: str) -> None:
    """Fails unless the site header's parts share one row, the header is under 70 px and none is off-screen
    (#30 item 9: at 1280 px the sign-in link or the account button had dropped to a second row)."""
    found = header_row(page)
    parts = found["parts"]
    assert len(parts) >= 3, f"{where}: the header lost its parts"
    top = max(p["top"] for p in parts)
    bottom = min(p["bottom"] for p in parts)
    assert top < bottom, f"{where}: the header's parts are not on one row: {parts}"
    assert found["height"] < 70, f"{where}: the header is {found['height']:.0f} px tall"
    assert all(p["right"] <= found["width"] for p in parts), f"{where}: a part of the header is off-screen"
