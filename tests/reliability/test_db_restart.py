"""PostgreSQL goes away under a running server and comes back: requests in between get a clean 503
(JSON for the API, a small page for browsers, ``Retry-After``), and the same server answers normally
once the database is back — no restart of paperfeed.

The test runs its own PostgreSQL (the shared one serves other tests), crashes it with SIGQUIT by its
pid, and starts it again on the same port and data folder.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from tests.support import postgres
from tests.support.live_server import live_server

from .corpus import write_jsonl
from .test_check import run

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _stop(server: postgres.PgServer) -> None:
    """Immediate shutdown, as a crash: SIGQUIT to the postmaster, then wait until it is gone."""
    os.kill(server.pid, signal.SIGQUIT)
    deadline = time.monotonic() + 30
    while postgres._alive(server.pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _start_again(server: postgres.PgServer) -> postgres.PgServer:
    """The same cluster on the same port (the URL paperfeed holds must work again)."""
    account = postgres._run_as()
    bin_dir = postgres._readable_install(postgres.find_binaries(), account)
    args = [str(bin_dir / "postgres"), "-D", server.data_dir, "-p", str(server.port), "-k", server.socket_dir]
    for key, value in postgres._SETTINGS.items():
        args += ["-c", f"{key}={value}"]
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C", "TZ": "UTC"}
    with (Path(server.root) / "postgres.log").open("ab") as log:
        proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            cwd=server.root, start_new_session=True, **postgres._demote(account),
        )  # fmt: skip
    again = dataclasses.replace(server, pid=proc.pid)
    assert postgres._wait_ready(again, proc, 60), "PostgreSQL did not come back"
    return again


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[list[postgres.PgServer]]:
    try:
        server = postgres.start_server()
    except postgres.PostgresUnavailable as exc:
        pytest.skip(str(exc))
    holder = [server]
    try:
        yield holder
    finally:
        postgres.stop_server(holder[0])


def test_requests_fail_cleanly_while_postgresql_restarts_and_recover(
    own_server: list[postgres.PgServer], tmp_path: Path
) -> None:
    server = own_server[0]
    with psycopg.connect(host=server.host, port=server.port, user="postgres", autocommit=True) as conn:
        conn.execute("CREATE DATABASE paperfeed")
    url = server.url("paperfeed")
    data = tmp_path / "data"
    assert run(data, "import", str(write_jsonl(tmp_path / "a.jsonl", range(1, 41))), url=url)[0] == 0
    settings = Settings(data_dir=data, database_url=url, embedding_backend="fake", debug=True)
    build_app(settings).close()
    paths = ["/api/papers/search?q=graph", "/api/daily_papers", "/papers/2501.00001", "/"]
    statuses: Counter[tuple[str, int]] = Counter()
    bad: list[str] = []
    stop = threading.Event()

    with live_server(settings) as base, httpx.Client(base_url=base, timeout=30) as client:

        def hammer() -> None:
            n = 0
            while not stop.is_set():
                path = paths[n % len(paths)]
                n += 1
                html = path in ("/", "/papers/2501.00001")
                reply = client.get(path, headers={"accept": "text/html"} if html else {})
                statuses[(path, reply.status_code)] += 1
                if reply.status_code == 503:
                    assert reply.headers["retry-after"] == "5"
                    if html:
                        assert "the database is unavailable right now" in reply.text  # in the layout
                    else:
                        assert reply.json()["error"].startswith("the database is unavailable")
                elif reply.status_code != 200:
                    bad.append(f"{path}: {reply.status_code} {reply.text[:200]}")

        for path in paths:
            assert client.get(path).status_code == 200
        worker = threading.Thread(target=hammer)
        worker.start()
        try:
            time.sleep(0.5)
            _stop(server)
            time.sleep(2.0)  # requests meanwhile: the database is down
            down = sum(n for (_path, code), n in statuses.items() if code == 503)
            own_server[0] = server = _start_again(server)
            time.sleep(2.0)
        finally:
            stop.set()
            worker.join(timeout=60)
        assert not bad, bad[:5]
        assert down > 0, statuses
        # The same server, never restarted, answers everything again.
        for path in paths:
            reply = client.get(path)
            assert reply.status_code == 200, (path, reply.text[:300])
