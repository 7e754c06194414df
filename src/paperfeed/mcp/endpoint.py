"""The ``/mcp`` route as the web app mounts it: the MCP SDK loads on the first request, not at start.

The SDK and the server's tool definitions cost a web process about 25 MB of resident memory (its
pydantic models, the SDK's transports); most instances never get an assistant, and issue #39 wants an
idle web process under 300 MB. So the web mounts this light route; the first request to ``/mcp`` imports
:mod:`paperfeed.mcp.server` (in a worker thread, so the event loop keeps serving pages meanwhile) and
starts its :class:`~paperfeed.mcp.server.HttpEndpoint` inside the lifespan's task group, where it runs
until the app stops. Every later request goes straight to it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup
from starlette.types import Receive, Scope, Send

if TYPE_CHECKING:
    from .server import HttpEndpoint, Refusal

log = logging.getLogger(__name__)


class LazyHttpEndpoint:
    """An ASGI app for ``/mcp`` that starts the real endpoint on its first request.

    ``create_app`` enters :meth:`running` in its lifespan; each lifespan gets a fresh endpoint (the SDK's
    session manager runs once), so a web app can be started again (tests do)."""

    def __init__(self, refuse: Refusal) -> None:
        self._refuse = refuse
        self._tasks: TaskGroup | None = None
        self._endpoint: HttpEndpoint | None = None
        self._starting = anyio.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the SDK's endpoint runs (an assistant has called since the app started)."""
        return self._endpoint is not None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks, self._endpoint = None, None
                tasks.cancel_scope.cancel()  # leaves the SDK's session manager, if it was started

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self._endpoint or await self._start()
        await endpoint(scope, receive, send)

    async def _start(self) -> HttpEndpoint:
        async with self._starting:  # two first requests at once start one endpoint
            if self._endpoint is not None:
                return self._endpoint
            if self._tasks is None:  # pragma: no cover - only outside the app's lifespan
                raise RuntimeError("the MCP endpoint is not running: enter running() first")
            endpoint = await anyio.to_thread.run_sync(self._build)
            ready = anyio.Event()
            failed: list[Exception] = []

            async def serve() -> None:
                try:
                    async with endpoint.running():
                        ready.set()
                        await anyio.sleep_forever()
                except Exception as exc:  # never take the web app's lifespan down with it
                    log.exception("the MCP endpoint stopped")
                    failed.append(exc)
                    ready.set()

            self._tasks.start_soon(serve)
            await ready.wait()
            if failed:
                raise RuntimeError("the MCP endpoint could not start") from failed[0]
            self._endpoint = endpoint
            return endpoint

    def _build(self) -> HttpEndpoint:
        from .server import HttpEndpoint  # the SDK: loaded by the first assistant, not by every web start

        return HttpEndpoint(self._refuse)
