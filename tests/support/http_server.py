"""A real HTTP server on loopback that replays recorded responses, for testing network sources.

Routes map a path (and optionally query parameters) to a sequence of responses; each request takes
the next one, so tests can script "503 with Retry-After, then 200". Requests (GET, and POST with its
body, as batch lookups send) are recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (to provoke client timeouts)


@dataclass
class Recorded:
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    method: str = "GET"
    body: bytes = b""


Matcher = Callable[[str, dict[str, str]], bool]


@dataclass
class ReplayServer:
    routes: list[tuple[Matcher, list[Reply]]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    base_url: str = ""

    def add(self, path: str, *replies: Reply, params: Mapping[str, str] | None = None) -> None:
        """Answer requests for ``path`` (whose query contains ``params``) with ``replies`` in turn.

        The last reply repeats once the others are used up.
        """
        want = dict(params or {})

        def match(p: str, q: dict[str, str]) -> bool:
            return p == path and all(q.get(k) == v for k, v in want.items())

        self.routes.insert(0, (match, list(replies)))

    def _answer(self, path: str, params: dict[str, str]) -> Reply:
        for match, replies in self.routes:
            if match(path, params):
                return replies.pop(0) if len(replies) > 1 else replies[0]
        return Reply(404, b"no route for " + path.encode())


@contextmanager
def replay_server() -> Iterator[ReplayServer]:
    """Start a :class:`ReplayServer` on 127.0.0.1 with a free port; stops it afterwards."""
    import time

    state = ReplayServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._reply(b"")

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            self._reply(self.rfile.read(size) if size else b"")

        def _reply(self, body: bytes) -> None:
            parts = urlsplit(self.path)
            params = dict(parse_qsl(parts.query, keep_blank_values=True))
            headers = dict(self.headers.items())
            state.requests.append(Recorded(parts.path, params, headers, self.command, body))
            reply = state._answer(parts.path, params)
            if reply.delay:
                time.sleep(reply.delay)
            try:
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
