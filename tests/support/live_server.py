"""The real app under a real uvicorn, in a background thread, for clients that need HTTP on a socket."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
import uvicorn
from fastapi import FastAPI

from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app


@contextmanager
def live_server(
    settings: Settings,
    *,
    start_timeout: float = 30.0,
    receive_buffer: int | None = None,
    extend: Callable[[FastAPI], None] | None = None,
) -> Iterator[str]:
    """Serve the app for ``settings`` on a loopback socket bound here (no free-port race); yield its URL.

    ``receive_buffer`` fixes the kernel's receive buffer of every accepted connection (``SO_RCVBUF``, which
    also turns off its autotuning), so a test can tell from the bytes a client got onto the socket how
    much of a body the server really read.

    Without a ``base_url`` in ``settings`` the served URL becomes it, as ``paperfeed run`` does: mailed
    links are built from it alone (never from the request), so a browser can follow them.

    ``extend`` adds to the app before it serves (tests/page_walk: routes that fail on purpose).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    if not settings.base_url:
        settings = settings.model_copy(update={"base_url": f"http://127.0.0.1:{port}"})
    web = create_app(lambda: build_app(settings))
    if extend is not None:
        extend(web)
    config = uvicorn.Config(web, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="paperfeed-test-server", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail(f"uvicorn did not start within {start_timeout:g} s")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
