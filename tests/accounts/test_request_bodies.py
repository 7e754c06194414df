"""Large request bodies over real HTTP: nobody gets the server to read or spool more than a route's limit.

The attack (security finding, issue #12 round 2): a ``multipart/form-data`` POST without the
``X-CSRF-Token`` header made ``verify_csrf`` parse the form, and Starlette spooled every file part to the
temporary disk with no size limit — before the sign-in check (route dependencies run first, and a
``File()`` parameter makes FastAPI parse the body before any dependency). URL-encoded forms and JSON
bodies were read whole into memory the same way. So an anonymous client could make the server take in an
arbitrarily large body through any state-changing route.

Each test streams a 50 MB body, generated on the fly, to a real uvicorn over a raw socket whose server
side has a small fixed receive buffer, sending only while the server has not answered. The bytes the
client got onto the socket bound what the server read: had it read the whole body they would be the full
50 MB. The answer must come before the client finished sending, with the refusal's status.
"""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from paperfeed.bootstrap import App, build_app
from paperfeed.settings import Settings
from tests.support.live_server import live_server

MiB = 2**20
BODY = 50 * MiB
PIECE = 64 * 1024
SERVER_BUFFER = 64 * 1024  # the server's SO_RCVBUF (the kernel doubles it)
SLACK = MiB  # kernel buffers on both sides and uvicorn's read-ahead (about 200 kB measured), generously
BOUNDARY = "paperfeed-test-boundary-7MA4YWxkTrZu0gW"
LIBRARY_LIMIT = 2 * MiB  # PAPERFEED_LIBRARY_IMPORT_MAX_BYTES in these tests
UPLOAD_LIMIT = 64 * 1024  # PAPERFEED_UPLOAD_MAX_BYTES in these tests
DEFAULT_LIMIT = MiB  # every other route


@dataclass(frozen=True)
class Outcome:
    status: int
    head: str  # the answer's status line and headers
    sent: int  # body bytes the client got onto the socket before the answer (or the close)
    total: int  # the body's full size

    @property
    def answered_early(self) -> bool:
        return self.sent < self.total


def _multipart(total: int, *, field: str = "file", filename: str = "library.bib") -> Iterator[bytes]:
    """A multipart body of exactly ``total`` bytes: one file part of ``%`` lines (a BibTeX comment)."""
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()
    yield head
    line = b"% " + b"x" * 61 + b"\n"
    piece = line * (PIECE // len(line))
    left = total - len(head) - len(tail)
    while left > 0:
        yield piece[:left]
        left -= len(piece)
    yield tail


def _urlencoded(total: int) -> Iterator[bytes]:
    """``f0=xxx&f1=xxx&…``: many fields, each well under Starlette's 1 MB per-field limit."""
    n = 0
    left = total
    while left > 0:
        piece = f"{'&' if n else ''}f{n}=".encode() + b"x" * (PIECE - 16)
        yield piece[:left]
        left -= len(piece)
        n += 1


def _json(total: int) -> Iterator[bytes]:
    """``{"name": "xxx…"}``: one long JSON string."""
    head, tail = b'{"name": "', b'"}'
    yield head
    left = total - len(head) - len(tail)
    while left > 0:
        yield b"x" * min(PIECE, left)
        left -= PIECE
    yield tail


def push(
    base: str,
    path: str,
    body: Iterator[bytes],
    total: int,
    *,
    content_type: str,
    chunked: bool,
    headers: dict[str, str] | None = None,
) -> Outcome:
    """POST ``body`` over a raw socket, sending only while the server has not answered; read its answer."""
    where = urlsplit(base)
    assert where.hostname is not None
    assert where.port is not None
    sock = socket.create_connection((where.hostname, where.port), timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
    try:
        lines = [
            f"POST {path} HTTP/1.1",
            f"Host: {where.netloc}",
            f"Content-Type: {content_type}",
            "Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        sock.setblocking(False)
        sent = 0
        answered = False

        def frames() -> Iterator[tuple[bytes, int]]:
            for piece in body:
                yield ((f"{len(piece):x}\r\n".encode() + piece + b"\r\n") if chunked else piece), len(piece)
            if chunked:
                yield b"0\r\n\r\n", 0

        try:
            for frame, size in frames():
                view = memoryview(frame)
                while view:
                    readable, writable, _ = select.select([sock], [sock], [], 20)
                    if readable:
                        answered = True
                        break
                    if not writable:
                        pytest.fail(f"after {sent:,} bytes the server neither reads the body nor answers")
                    view = view[sock.send(view) :]
                if answered:
                    break
                sent += size
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed: the answer is still in our receive queue
        sock.setblocking(True)
        sock.settimeout(30)
        received = b""
        try:
            while b"\r\n\r\n" not in received:
                data = sock.recv(65536)
                if not data:
                    break
                received += data
        except ConnectionResetError:
            pass
    finally:
        sock.close()
    head = received.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    assert head.startswith("HTTP/1.1 "), f"no HTTP answer after {sent:,} body bytes: {received[:200]!r}"
    return Outcome(int(head.split()[1]), head, sent, total)


def _settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        embedding_backend="fake",
        upload_max_bytes=UPLOAD_LIMIT,
        library_import_max_bytes=LIBRARY_LIMIT,
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, App]]:
    settings = _settings(tmp_path_factory.mktemp("bodies"))
    app = build_app(settings)
    try:
        with live_server(settings, receive_buffer=SERVER_BUFFER) as url:
            yield url, app
    finally:
        app.close()


def _session(app: App, email: str, *, role: str = "user") -> str:
    """A signed-in browser's cookie header (a confirmed account, no password, no mail)."""
    accounts = app.readers.accounts
    if accounts.store.user_by_email(email) is None:
        accounts.sign_up(email, None, None, client="body-tests", base_url="http://testserver")
        user = accounts.user_by_email(email)
        accounts.store.mark_verified(user.id, accounts.clock())
        if role != "user":
            accounts.set_role(email, role)
    session = accounts.create_session(accounts.user_by_email(email)).session
    return f"pf_session={session}; pf_csrf=browser-cookie"


MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
HTML = {"Accept": "text/html"}


def _read_at_most(outcome: Outcome, limit: int) -> None:
    assert outcome.answered_early, f"the server read the whole {outcome.total:,}-byte body before answering"
    assert outcome.sent <= limit + SLACK, f"the server read {outcome.sent:,} bytes (limit {limit:,})"


# -- /library/import: a File() parameter, so FastAPI parsed the body before any dependency ----------------


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_anonymous_library_import_is_refused_without_reading_the_body(
    server: tuple[str, App], chunked: bool
) -> None:
    url, _ = server
    outcome = push(url, "/library/import", _multipart(BODY), BODY, content_type=MULTIPART, chunked=chunked)
    # A declared size over the limit is refused at once; a chunked body because nobody is signed in.
    _read_at_most(outcome, 0)
    assert outcome.status == (401 if chunked else 413), outcome.head
    assert "connection: close" in outcome.head.lower()


def test_an_anonymous_browser_library_import_goes_to_the_sign_in_page_unread(server: tuple[str, App]) -> None:
    url, _ = server
    outcome = push(
        url, "/library/import", _multipart(BODY), BODY, content_type=MULTIPART, chunked=True, headers=HTML
    )
    _read_at_most(outcome, 0)
    assert outcome.status == 303, outcome.head
    assert "location: /signin" in outcome.head.lower()


def test_a_signed_in_reader_library_import_stops_at_the_library_limit(server: tuple[str, App]) -> None:
    url, app = server
    cookie = _session(app, "reader@example.org")
    outcome = push(
        url,
        "/library/import",
        _multipart(BODY),
        BODY,
        content_type=MULTIPART,
        chunked=True,
        headers={"Cookie": cookie, **HTML},
    )
    _read_at_most(outcome, LIBRARY_LIMIT)
    assert outcome.status == 413, outcome.head


def test_the_api_library_import_refuses_an_anonymous_body_unread(server: tuple[str, App]) -> None:
    url, _ = server
    outcome = push(
        url, "/api/me/library/import", _multipart(BODY), BODY, content_type=MULTIPART, chunked=True
    )
    _read_at_most(outcome, 0)
    assert outcome.status == 401, outcome.head


# -- other CSRF-protected form routes: the form was parsed by verify_csrf or FastAPI -------------------------


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_large_multipart_post_to_a_form_route_stops_at_the_default_limit(
    server: tuple[str, App], chunked: bool
) -> None:
    url, _ = server
    outcome = push(url, "/library/save", _multipart(BODY), BODY, content_type=MULTIPART, chunked=chunked)
    _read_at_most(outcome, 0 if not chunked else DEFAULT_LIMIT)
    assert outcome.status == 413, outcome.head


def test_a_cross_site_multipart_post_is_refused_before_its_body_is_read(server: tuple[str, App]) -> None:
    url, app = server
    cookie = _session(app, "victim@example.org")
    outcome = push(
        url,
        "/library/tags",
        _multipart(BODY, field="name", filename="x"),
        BODY,
        content_type=MULTIPART,
        chunked=True,
        headers={"Cookie": cookie, "Origin": "https://evil.example", **HTML},
    )
    _read_at_most(outcome, 0)
    assert outcome.status == 403, outcome.head


def test_a_large_urlencoded_form_stops_at_the_default_limit(server: tuple[str, App]) -> None:
    url, _ = server
    outcome = push(
        url,
        "/signin",
        _urlencoded(BODY),
        BODY,
        content_type="application/x-www-form-urlencoded",
        chunked=True,
        headers=HTML,
    )
    _read_at_most(outcome, DEFAULT_LIMIT)
    assert outcome.status == 413, outcome.head


def test_a_large_json_body_to_the_api_stops_at_the_default_limit(server: tuple[str, App]) -> None:
    url, _ = server
    outcome = push(url, "/api/me/tags", _json(BODY), BODY, content_type="application/json", chunked=True)
    _read_at_most(outcome, DEFAULT_LIMIT)
    assert outcome.status == 413, outcome.head
    assert "content-type: application/json" in outcome.head.lower()


# -- /admin/import: streamed by its own handler, after the administrator check -------------------------------


def test_an_anonymous_admin_upload_is_refused_and_the_rest_is_not_read(server: tuple[str, App]) -> None:
    url, _ = server
    outcome = push(
        url,
        "/admin/import",
        _multipart(BODY, filename="papers.jsonl"),
        BODY,
        content_type=MULTIPART,
        chunked=True,
    )
    _read_at_most(outcome, 0)
    assert outcome.status == 401, outcome.head


def test_an_administrators_upload_stops_at_the_upload_limit(server: tuple[str, App]) -> None:
    url, app = server
    cookie = _session(app, "admin@example.org", role="admin")
    outcome = push(
        url,
        "/admin/import",
        _multipart(BODY, filename="papers.jsonl"),
        BODY,
        content_type=MULTIPART,
        chunked=True,
        headers={"Cookie": cookie, "Accept": "application/json"},
    )
    _read_at_most(outcome, UPLOAD_LIMIT)
    assert outcome.status == 413, outcome.head


# -- form parsing limits (web/forms.py): a small body can still hold too many fields or files ---------------


def test_a_form_with_too_many_fields_is_refused_by_name(server: tuple[str, App]) -> None:
    url, app = server
    body = "&".join(f"tags={i}" for i in range(600))  # 4 kB: under the body limit, over 500 fields
    got = httpx.post(
        f"{url}/library/paper-tags",
        content=body,
        headers={
            "Cookie": _session(app, "tagger@example.org"),
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    assert got.status_code == 400
    assert "Maximum number of fields is 500" in got.json()["error"]


def test_a_library_import_with_two_files_is_refused_by_name(server: tuple[str, App]) -> None:
    url, app = server
    got = httpx.post(
        f"{url}/api/me/library/import",
        files=[("file", ("a.bib", b"% a\n")), ("file", ("b.bib", b"% b\n"))],
        headers={"Cookie": _session(app, "twofiles@example.org")},
    )
    assert got.status_code == 400
    assert "Maximum number of files is 1" in got.json()["error"]
