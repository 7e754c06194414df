"""Mute rules: the accounts suite's real app and store (four synthetic papers on two listed days)."""

from __future__ import annotations

from tests.accounts.conftest import app, mailbox, new_browser, settings, site  # noqa: F401
