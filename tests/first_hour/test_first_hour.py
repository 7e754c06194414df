"""The first hour, end to end, as a new user meets it -- on the wheel installed in a fresh venv (issue #30).

`make test` builds paperfeed's wheel and installs it, not editable, in a venv of its own
(scripts/wheel-venv, ``PAPERFEED_WHEEL_VENV``); this test runs that installed `paperfeed` as real
processes with the real embedding model, on a real subset of Hugging Face Daily Papers:

1. `paperfeed run` on an empty folder, every source pointed at a closed loopback port: the first-run page
   says how to fill it; Ctrl+C stops every process.
2. `paperfeed run --import FILE`: once the indexer says every paper is embedded, within seconds the running
   server's search page and JSON API are hybrid (no coverage note; a query that shares no word with its
   best match finds it), similar papers come from the vectors, and the topics and the map appear with no
   command run by hand.
3. A reader made with `paperfeed users add` signs in; a sign-in link made with `users add --link` in
   another shell points to the port the server runs on (never 8000: the first start takes its port from
   `PAPERFEED_PORT`, the second from `--port`).
4. No line of any process's output holds a traceback, and Ctrl+C stops them all.

It failed on the code before issue #30: the server stayed keyword-only after the empty first start, the
topics waited for the next day's job, the wheel lacked the library templates, and `users add` did not
exist.
"""

from __future__ import annotations

import gzip
import json
import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support.authz import csrf_from

pytestmark = [pytest.mark.slow, pytest.mark.shared]

PAPERS = 300  # every 35th paper of hf_daily: 2024-2026, all the subjects of the file, enough for topics
# The query shares no word with the paper it must find (checked below): only meaning search finds it.
TARGET = "2502.01506"  # TwinMarket: A Scalable Behavioral and Social Simulation for Financial Markets
QUERY = "chatbots imitating investors"
READER = "reader@example.org"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def installed() -> Path:
    """The venv holding the installed wheel (scripts/wheel-venv, run by `make test`)."""
    venv = os.environ.get("PAPERFEED_WHEEL_VENV")
    if not venv:
        reason = "PAPERFEED_WHEEL_VENV is not set: `make test` builds and installs the wheel for this test"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    found = Path(venv)
    where = subprocess.run(
        [str(found / "bin" / "python"), "-c", "import paperfeed; print(paperfeed.__file__)"],
        capture_output=True,
        text=True,
        env=_clean_env(),
        check=True,
    ).stdout.strip()
    assert "site-packages" in where, f"paperfeed is not installed from the wheel there: {where}"
    return found


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH pointing into this checkout, the model offline."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER")
    env = {k: v for k, v in os.environ.items() if k in keep}
    return {**env, "HF_HUB_OFFLINE": "1", **extra}


@dataclass
class Running:
    """A `paperfeed run` process, its output read line by line on a thread."""

    proc: subprocess.Popen[str]
    lines: queue.Queue[str] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def expect(self, pattern: str, timeout: float) -> str:
        """The first line from now on matching ``pattern`` (a regular expression)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                assert self.proc.poll() is None, "paperfeed run exited:\n" + "\n".join(self.seen[-40:])
                continue
            self.seen.append(line)
            if re.search(pattern, line):
                return line
        raise AssertionError(f"{pattern!r} never came:\n" + "\n".join(self.seen[-60:]))

    def stop(self, timeout: float = 60) -> int:
        """Ctrl+C, as in a terminal; then everything it printed is kept in :attr:`seen`."""
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=timeout)
        time.sleep(0.2)  # the reader thread drains the pipe
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return code


def _start(installed: Path, data: Path, port: int | None, env: dict[str, str], *args: str) -> Running:
    """`paperfeed run` on ``port`` (``None``: the port the settings say, ``PAPERFEED_PORT`` in ``env``)."""
    command = [str(installed / "bin" / "paperfeed"), "--data-dir", str(data), "run"]
    command += ["--port", str(port), *args] if port is not None else list(args)
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    return Running(proc)


def _wait_for_server(base: str, timeout: float = 120) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return httpx.get(f"{base}/", headers={"accept": "text/html"}, timeout=5)
        except httpx.TransportError:
            time.sleep(0.3)
    raise AssertionError("the server never answered")


def _processes_using(data: Path) -> list[str]:
    """Command lines of live processes started on this data folder (every child names it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(data) in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


def _words(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z0-9]+", text.lower())}  # five-letter stems: "trader" ~ "trading"


@pytest.fixture(scope="module")
def subset(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    with gzip.open(shared_dir / "data" / "hf_daily.jsonl.gz", "rt") as fh:
        rows = [json.loads(line) for line in fh][::35][:PAPERS]
    target = next(r for r in rows if r["id"] == TARGET)
    assert not _words(QUERY) & _words(f"{target['title']} {target['abstract']}"), "the query shares a word"
    path = tmp_path_factory.mktemp("first-hour") / "papers.jsonl.gz"
    with gzip.open(path, "wt") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    return path


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    data = tmp_path / "paperfeed-data"
    closed = f"http://127.0.0.1:{_closed_port()}"
    env = _clean_env(
        PAPERFEED_HF_API_URL=f"{closed}/api",
        PAPERFEED_ARXIV_API_URL=f"{closed}/api/query",
        PAPERFEED_ARXIV_OAI_URL=f"{closed}/oai",
        PAPERFEED_S2_API_URL=f"{closed}/graph/v1",
        PAPERFEED_OPENALEX_API_URL=closed,
        PAPERFEED_MODEL_CACHE=str(tmp_path / "model-cache"),
    )
    yield data, env
    for line in _processes_using(data):  # never leave one behind, even when the test failed
        os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)


def test_the_first_hour_on_the_installed_wheel(
    installed: Path, subset: Path, instance: tuple[Path, dict[str, str]]
) -> None:
    data, env = instance
    port = _closed_port()
    base = f"http://127.0.0.1:{port}"
    said: list[str] = []

    # 1. An empty first start, offline, on the port PAPERFEED_PORT says (never 8000, which another
    # instance may hold): the page says how to fill it; Ctrl+C stops everything.
    assert port != 8000
    first = _start(installed, data, None, {**env, "PAPERFEED_PORT": str(port)})
    try:
        page = _wait_for_server(base)
        assert page.status_code == 200
        assert "make run DATA=papers.jsonl.gz" in page.text
        first.expect(r"indexer", timeout=60)  # the indexer is up (and saw the empty store) before Ctrl+C
        time.sleep(2)
    finally:
        assert first.stop() == 0, "\n".join(first.seen)
        said += first.seen
    assert not _processes_using(data), "Ctrl+C left processes behind"

    # 2. The same folder with a file: served at once, embedded in the background, hybrid without a restart.
    second = _start(installed, data, port, env, "--import", str(subset))
    try:
        _wait_for_server(base)
        second.expect(rf"all {PAPERS} papers are embedded", timeout=1500)
        started = time.monotonic()
        while True:
            api = httpx.get(f"{base}/api/papers/search", params={"q": QUERY, "limit": 10}, timeout=30)
            assert api.status_code == 200, api.text
            if "X-Search-Notes" not in api.headers or time.monotonic() - started > 15:
                break
            time.sleep(0.5)
        assert "X-Search-Notes" not in api.headers, api.headers.get("X-Search-Notes")
        assert TARGET in [item["paper"]["id"] for item in api.json()], "meaning search did not find it"
        assert time.monotonic() - started < 15, "the server took more than a few seconds to turn hybrid"
        html = httpx.get(f"{base}/search", params={"q": QUERY}, headers={"accept": "text/html"}, timeout=30)
        assert html.status_code == 200
        assert "Meaning search covers" not in html.text
        assert f"/papers/{TARGET}" in html.text

        similar = httpx.get(f"{base}/api/papers/{TARGET}/similar", params={"limit": 5}, timeout=30).json()
        assert len(similar) == 5
        assert all(item["similarity"] is not None for item in similar), "similar papers are not from vectors"
        paper = httpx.get(f"{base}/papers/{TARGET}", headers={"accept": "text/html"}, timeout=30)
        assert paper.status_code == 200
        assert f"/papers/{similar[0]['paper']['id']}" in paper.text  # the page shows the same list

        deadline = time.monotonic() + 900  # built by the indexer or the daily job, whichever comes first
        while not httpx.get(f"{base}/api/topics", timeout=30).json():
            assert time.monotonic() < deadline, "no topics without a command by hand:\n" + "\n".join(
                second.seen
            )
            time.sleep(2)
        assert "No topics yet" not in httpx.get(f"{base}/topics", headers={"accept": "text/html"}).text
        assert "No map yet" not in httpx.get(f"{base}/map", headers={"accept": "text/html"}).text
        points = httpx.get(f"{base}/api/map/points", timeout=30)
        assert points.status_code == 200

        # 3. A reader made on the command line signs in.
        command = [str(installed / "bin" / "paperfeed"), "--data-dir", str(data), "users", "add", READER]
        added = subprocess.run(
            [*command, "--password-stdin"],
            input="correct horse battery staple\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert added.returncode == 0, added.stderr
        # a sign-in link made in another shell, whose settings know no port: where the server serves
        linked = subprocess.run(
            [*command[:-1], "second.reader@example.org", "--link"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert linked.returncode == 0, linked.stderr
        link = next(line for line in linked.stdout.splitlines() if "/signin/link" in line)
        assert link.startswith(f"{base}/signin/link?token="), link
        assert httpx.get(link, headers={"accept": "text/html"}, timeout=30).status_code == 200
        with httpx.Client(base_url=base, headers={"accept": "text/html"}, timeout=30) as client:
            form = client.get("/signin")
            signed = client.post(
                "/signin",
                data={
                    "email": READER,
                    "password": "correct horse battery staple",
                    "csrf_token": csrf_from(form.text),
                },
            )
            assert signed.status_code == 303, signed.text[:500]
            account = client.get("/account")
            assert account.status_code == 200
            assert READER in account.text
            library = client.get("/library")  # a template folder the wheel used to leave out
            assert library.status_code == 200, library.text[:300]
    finally:
        code = second.stop()
        said += second.seen
    assert code == 0, "\n".join(second.seen[-40:])
    assert not _processes_using(data), "Ctrl+C left processes behind"
    assert not [line for line in said if "Traceback" in line], "\n".join(said)
