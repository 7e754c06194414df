"""The web app loads the MCP SDK on the first ``/mcp`` request, not at start (issue #39 item 6: an idle web
process under 300 MB; the SDK and the tools cost ~25 MB a process that no assistant ever calls)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import anyio
import httpx
from mcp_types import LATEST_PROTOCOL_VERSION
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from paperfeed.mcp import endpoint as lazy
from paperfeed.mcp.server import HttpEndpoint
from tests.mcp_server.conftest import run_async
from tests.support.fresh_python import checkout_env

ROOT = Path(__file__).resolve().parents[2]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "lazy-endpoint-test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}

# A fresh interpreter: this one has imported the SDK for the other MCP tests.
SCRIPT = """
import json, sys
from pathlib import Path
from starlette.testclient import TestClient
from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app

def sdk():
    return sorted(m for m in sys.modules if m in ("mcp", "mcp_types", "paperfeed.mcp.server"))

settings = Settings(data_dir=Path(sys.argv[1]), database_url=None, embedding_backend="fake",
                    base_url="http://testserver")
with TestClient(create_app(lambda: build_app(settings))) as client:
    pages = [client.get(p).status_code for p in ("/", "/api/daily_papers", "/search?q=graphs")]
    before = sdk()
    refused = client.get("/mcp").status_code
    answer = client.post("/mcp", json=json.loads(sys.argv[2]), headers=json.loads(sys.argv[3]))
    print(json.dumps({"pages": pages, "before": before, "refused": refused, "after": sdk(),
                      "status": answer.status_code, "body": answer.json()}))
"""


def test_a_web_app_that_served_pages_has_not_loaded_the_sdk_and_its_first_mcp_call_does(
    tmp_path: Path,
) -> None:
    env = checkout_env()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), json.dumps(INITIALIZE), json.dumps(ACCEPT)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["pages"] == [200, 200, 200]
    assert seen["before"] == []  # pages, the API and search never touch it
    assert seen["refused"] == 405  # a GET is refused by the endpoint (it loads the SDK to say so)
    assert "paperfeed.mcp.server" in seen["after"]
    assert "mcp" in seen["after"]
    assert seen["status"] == 200
    assert seen["body"]["result"]["serverInfo"]["name"] == "paperfeed"


def _refuse(
    request: Request, status: int, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    return PlainTextResponse(message, status, dict(headers or {}))


def test_first_requests_at_once_start_one_endpoint_and_a_new_lifespan_starts_afresh() -> None:
    built: list[HttpEndpoint] = []

    class Counting(lazy.LazyHttpEndpoint):
        def _build(self) -> HttpEndpoint:
            made = super()._build()
            built.append(made)
            return made

    endpoint = Counting(_refuse)

    statuses: list[int] = []

    async def main() -> None:
        transport = httpx.ASGITransport(app=endpoint)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            for _lifespan in range(2):
                async with endpoint.running():
                    assert not endpoint.loaded

                    async def call() -> None:
                        answer = await client.post("/mcp", json=INITIALIZE, headers=ACCEPT)
                        statuses.append(answer.status_code)

                    async with anyio.create_task_group() as calls:
                        for _ in range(4):
                            calls.start_soon(call)
                    assert endpoint.loaded
                assert not endpoint.loaded

    run_async(main)
    assert statuses == [200] * 8
    assert len(built) == 2  # one endpoint per lifespan, however many first requests raced
    assert built[0] is not built[1]
