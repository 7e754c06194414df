"""Every endpoint of the app, also those inside included routers (FastAPI ≥ 0.165 keeps an included
router as one lazy entry of ``app.routes``), so tests that sweep "every GET route" see new routes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["endpoints", "get_routes"]


def endpoints(routes: Iterable[Any]) -> Iterator[Any]:
    """The routes with an endpoint (path, methods), flattened out of included routers."""
    for route in routes:
        if hasattr(route, "effective_candidates"):
            yield from endpoints(list(route.effective_candidates()))
        elif hasattr(route, "endpoint") or hasattr(route, "dependant"):
            yield route


def get_routes(app: Any) -> list[Any]:
    """The app's routes that answer GET (mounts such as /static are not routes and are not listed)."""
    return [r for r in endpoints(app.routes) if "GET" in (getattr(r, "methods", None) or ())]
