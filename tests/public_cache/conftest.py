"""The real app on a real SQLite store with the community's synthetic papers and readers.

The fixtures are the community feature's (``tests/community/conftest.py``): ``settings``, ``app`` (an App
for direct service calls) and ``site`` (the app under TestClient, lifespan and all).
"""

from __future__ import annotations

from tests.community.conftest import app, settings, site

__all__ = ["app", "settings", "site"]
