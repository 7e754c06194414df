"""schemathesis against the OpenAPI schema as a signed-in API client (a Bearer token): the
authenticated routes (library, community, tokens, recommendations…) run their handlers, not just the
401 that tests/web_api/test_schemathesis.py sees as an anonymous caller. No 5xx, errors in the shape."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.core.result import Ok

from paperfeed.bootstrap import build_app
from tests.accounts.conftest import PAPER_IDS, load_papers, make_settings
from tests.support.authz import World
from tests.support.live_server import live_server
from tests.support.smtp_server import smtp_test_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def signed_in(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The live app's URL and an API token of a verified user."""
    with ExitStack() as stack:
        smtp = stack.enter_context(smtp_test_server())
        settings = make_settings(tmp_path_factory.mktemp("schema-auth"), smtp, debug=True)
        app = build_app(settings)
        stack.callback(app.close)
        load_papers(app)
        world = World(app=app, clients={}, users={}, tokens={}, paper_ids=list(PAPER_IDS))
        user = world.new_user("api@example.org")
        token = app.readers.accounts.create_api_token(user, "schemathesis")[1]
        url = stack.enter_context(live_server(settings))
        yield url, token


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_generated_authenticated_requests_never_get_a_server_error(
    signed_in: tuple[str, str], mode: GenerationMode
) -> None:
    url, token = signed_in
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result
        operations.append(result.ok())
    assert len(operations) >= 20
    headers = {"authorization": f"Bearer {token}"}
    for operation in operations:

        @given(case=operation.as_strategy(mode))
        @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def run(case: Case[Any]) -> None:
            response = case.call(timeout=30, headers=headers)
            assert response.status_code < 500, (case.as_curl_command(), response.text[:500])
            if response.status_code >= 400:
                body = response.json()
                assert body["status"] == response.status_code
                assert body["error"]

        try:
            run()
        except Unsatisfiable:
            assert mode == GenerationMode.NEGATIVE, operation.label
