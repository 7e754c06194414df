"""Two routes that fail as nothing real can on demand, for the error pages' tests (tests/web_pages/
test_error_pages.py, tests/page_walk): an unexpected bug (a 500) and the database away (a 503)."""

from __future__ import annotations

from fastapi import FastAPI

from paperfeed.domain.errors import StoreUnavailable

BOOM = "/test-only/boom"
DATABASE_AWAY = "/test-only/database-away"
SECRET = "a bug the reader must not see"  # in the exception: never in an answer


def add_failing_routes(web: FastAPI) -> None:
    def boom() -> None:
        raise RuntimeError(SECRET)

    def database_away() -> None:
        raise StoreUnavailable(f"connection refused ({SECRET})")

    web.add_api_route(BOOM, boom, methods=["GET"], include_in_schema=False)
    web.add_api_route(DATABASE_AWAY, database_away, methods=["GET"], include_in_schema=False)
