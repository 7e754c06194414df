"""The network sources (the citation harvest's Semantic Scholar and OpenAlex, arXiv, Hugging Face) follow a
redirect only on the host they asked (#31, finding 9): a catalogue that sends the client elsewhere — a
compromised or spoofed answer steering the harvest at an internal address — is refused, and the other
host never sees a request. Two real HTTP servers on loopback: ``127.0.0.1`` redirects, ``localhost``
(another host name) and another port wait to be asked.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from paperfeed.adapters.sources.http import PoliteClient
from paperfeed.adapters.sources.semantic_scholar import SemanticScholarSource
from paperfeed.domain.errors import SourceUnavailable
from tests.support.http_server import ReplayServer, Reply, replay_server


@pytest.fixture
def elsewhere() -> Iterator[ReplayServer]:
    with replay_server() as srv:
        srv.add("/secret", Reply(200, b'{"data": "internal"}', {"Content-Type": "application/json"}))
        srv.add("/graph/v1/paper/batch", Reply(200, b"[null]", {"Content-Type": "application/json"}))
        yield srv


def _client() -> PoliteClient:
    return PoliteClient(user_agent="paperfeed-test", timeout=5.0, retries=0, min_interval={})


def _other_host(server: ReplayServer, path: str) -> str:
    return server.base_url.replace("127.0.0.1", "localhost") + path


@pytest.mark.parametrize("target", ["other host", "other port"])
def test_a_redirect_to_another_host_or_port_is_refused_and_never_followed(
    server: ReplayServer, elsewhere: ReplayServer, target: str
) -> None:
    where = _other_host(elsewhere, "/secret") if target == "other host" else elsewhere.base_url + "/secret"
    server.add("/api", Reply(302, b"", {"Location": where}))
    client = _client()
    with pytest.raises(SourceUnavailable, match=r"redirected .* to another host .*: not followed"):
        client.get(f"{server.base_url}/api")
    assert elsewhere.requests == []
    client.close()


def test_the_citation_harvests_post_is_not_redirected_elsewhere(
    server: ReplayServer, elsewhere: ReplayServer
) -> None:
    server.add(
        "/graph/v1/paper/batch",
        Reply(307, b"", {"Location": _other_host(elsewhere, "/graph/v1/paper/batch")}),
    )
    source = SemanticScholarSource(_client(), f"{server.base_url}/graph/v1", api_key=None)
    with pytest.raises(SourceUnavailable, match="not followed"):
        source.lookup(["2401.00001"])
    assert elsewhere.requests == []


def test_a_redirect_on_the_same_host_is_still_followed(server: ReplayServer) -> None:
    server.add("/old", Reply(301, b"", {"Location": "/new"}))
    server.add("/new", Reply(200, b"here"))
    got = _client().get(f"{server.base_url}/old")
    assert (got.status_code, got.content) == (200, b"here")
    server.add("/loop", Reply(302, b"", {"Location": "/loop"}))
    with pytest.raises(SourceUnavailable, match="redirected more than 5 times"):
        _client().get(f"{server.base_url}/loop")
