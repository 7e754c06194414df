"""``Server-Timing: app;dur=<ms>`` on every response: how long the app took, as browsers' devtools show.

A pure ASGI middleware (no per-request task or body buffering), so it costs microseconds. The time runs
from the request's arrival in the app to the start of its response, i.e. the work of computing it
(responses here are rendered whole before they start). ``bench/web_speed.py`` reads it to report
server-side latency apart from the client and network.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["ServerTimingMiddleware"]


class ServerTimingMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                took = (time.perf_counter() - started) * 1000.0
                headers = [*message.get("headers", ()), (b"server-timing", f"app;dur={took:.2f}".encode())]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, timed)
