"""The app under TestClient with its page-cache settings tuned, as the grace and refresh tests need."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app


def tuned_site(
    settings: Settings,
    *,
    grace: float,
    import_grace: float | None = None,
    refresh: float = 0.0,
    workers: int | None = None,
    built: Callable[[App], None] | None = None,
) -> TestClient:
    """``settings`` with these graces, refresh seconds (0: past the grace the reader waits for the render)
    and workers (2: the node's shared cache; None, like ``import_grace`` None: the settings' own), the data
    version read at every request; ``built`` is shown the worker's container before it serves."""
    update: dict[str, object] = {
        "page_cache_grace_seconds": grace,
        "page_cache_check_seconds": 0.0,
        "page_cache_refresh_seconds": refresh,
    }
    if workers is not None:
        update["workers"] = workers
    if import_grace is not None:
        update["page_cache_import_grace_seconds"] = import_grace
    tuned = settings.model_copy(update=update)

    def container() -> App:
        app = build_app(tuned)
        if built is not None:
            built(app)
        return app

    return TestClient(create_app(container), follow_redirects=False)
