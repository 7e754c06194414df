"""A local instance without a mail server is not a dead end (#30 item 4).

Without ``PAPERFEED_SMTP_HOST`` mail is kept as ``.eml`` files in ``<data>/outbox``. The sign-up, sign-in
link and reset pages say so (and never show a mailed link); ``paperfeed users add`` makes a confirmed
account from the shell; ``paperfeed mail outbox`` lists the kept messages with their links decoded. All
through the real command in a subprocess and the real app on a socket (uvicorn), with real SQLite.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

from paperfeed.settings import Settings
from tests.support.live_server import live_server
from tests.support.smtp_server import SmtpTestServer

from .conftest import PASSWORD, csrf_from

KEPT = "No mail server is configured on this server"


def _env() -> dict[str, str]:
    """The environment without any PAPERFEED_* of the caller's (so no mail server, no other data)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}


def _command(data: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "paperfeed", "--data-dir", str(data), *args]


def _cli(data: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``paperfeed`` in a subprocess; stdin is a pipe (``stdin``) or nothing, never a terminal."""
    return subprocess.run(
        _command(data, *args),
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )


def _on_a_terminal(data: Path, args: list[str], answers: list[str]) -> tuple[int, str]:
    """Run ``paperfeed`` on a pseudo-terminal (in a session of its own, so the test runner's terminal is
    not its /dev/tty): type each answer after the next password prompt; the exit code and everything
    the terminal showed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        _command(data, *args), stdin=slave, stdout=slave, stderr=slave, env=_env(), start_new_session=True
    )
    os.close(slave)
    shown = b""

    def read(until: float) -> bool:
        nonlocal shown
        ready, _, _ = select.select([master], [], [], max(0.0, until - time.monotonic()))
        if not ready:
            return True
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            return False
        shown += chunk
        return bool(chunk)

    try:
        for n, answer in enumerate(answers, start=1):
            deadline = time.monotonic() + 60
            while shown.lower().count(b"password") < n:
                assert time.monotonic() < deadline, f"no password prompt #{n}: {shown!r}"
                if not read(deadline):
                    break
            os.write(master, answer.encode() + b"\n")
        deadline = time.monotonic() + 60
        while proc.poll() is None or read(time.monotonic() + 0.2):
            assert time.monotonic() < deadline, shown
            if not read(time.monotonic() + 0.2) and proc.poll() is not None:
                break
        code = proc.wait(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return code, shown.decode(errors="replace")


@pytest.fixture
def local(tmp_path: Path) -> Settings:
    """A laptop instance: no mail server, no PAPERFEED_* configuration but the data folder."""
    return Settings(data_dir=tmp_path / "data", embedding_backend="fake")


@pytest.fixture
def served(local: Settings) -> Iterator[str]:
    with live_server(local) as url:
        yield url


def _post_form(client: httpx.Client, page: str, action: str, data: dict[str, str]) -> httpx.Response:
    """Open ``page`` as a browser would, then post ``data`` with the page's CSRF token."""
    opened = client.get(page)
    assert opened.status_code == 200, opened.text
    return client.post(action, data={**data, "csrf_token": csrf_from(opened.text)})


def _signed_in_as(client: httpx.Client, email: str) -> bool:
    account = client.get("/account")
    return account.status_code == 200 and email in account.text


def _follow_signin_link(client: httpx.Client, link: str) -> httpx.Response:
    """Open a mailed sign-in link and press its button, as the person would."""
    parts = urlsplit(link)
    token = re.search(r"token=([^&]+)", parts.query)
    assert token is not None, link
    return _post_form(client, f"{parts.path}?{parts.query}", parts.path, {"token": token.group(1)})


def _kept(data: Path, to: str, subject_has: str, *, timeout: float = 20.0) -> dict[str, Any]:
    """The newest message ``paperfeed mail outbox --json`` lists to ``to`` about ``subject_has`` (the
    app writes mail on a background thread, so it is waited for)."""
    deadline = time.monotonic() + timeout
    while True:
        done = _cli(data, "mail", "outbox", "--json", "--to", to)
        assert done.returncode == 0, done.stderr
        rows = [orjson.loads(line) for line in done.stdout.splitlines()]
        found = [r for r in rows if subject_has.lower() in str(r["subject"]).lower()]
        if found:
            newest: dict[str, Any] = found[-1]
            return newest
        assert time.monotonic() < deadline, f"no kept mail to {to} about {subject_has!r}: {rows}"
        time.sleep(0.2)


def test_users_add_with_a_password_from_stdin_signs_in_over_http(local: Settings, served: str) -> None:
    data = local.data_dir
    made = _cli(data, "users", "add", "Reader@Example.org", "--password-stdin", stdin=PASSWORD + "\n")
    assert made.returncode == 0, made.stderr
    assert "created reader@example.org, a reader, confirmed" in made.stdout
    listed = _cli(data, "users", "list", "--json")
    [row] = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert (row["email"], row["role"], row["emailVerified"]) == ("reader@example.org", "user", True)
    with httpx.Client(base_url=served, timeout=30) as browser:
        wrong = _post_form(
            browser, "/signin", "/signin", {"email": "reader@example.org", "password": "nope" * 3}
        )
        assert wrong.status_code == 400
        reply = _post_form(
            browser, "/signin", "/signin", {"email": "reader@example.org", "password": PASSWORD}
        )
        assert reply.status_code == 303, reply.text
        assert _signed_in_as(browser, "reader@example.org")
    assert not (data / "outbox").exists()  # nothing had to be mailed


def test_users_add_asks_the_password_twice_on_the_terminal(local: Settings, served: str) -> None:
    data = local.data_dir
    code, shown = _on_a_terminal(data, ["users", "add", "root@example.org", "--admin"], [PASSWORD, PASSWORD])
    assert code == 0, shown
    assert "created root@example.org, an administrator, confirmed" in " ".join(shown.split())
    assert PASSWORD not in shown  # getpass: not echoed
    code, shown = _on_a_terminal(data, ["users", "add", "typo@example.org"], [PASSWORD, PASSWORD + "x"])
    assert code == 2, shown
    assert "the two passwords differ; nothing was created" in " ".join(shown.split())
    with httpx.Client(base_url=served, timeout=30) as browser:
        reply = _post_form(browser, "/signin", "/signin", {"email": "root@example.org", "password": PASSWORD})
        assert reply.status_code == 303, reply.text
        assert browser.get("/admin").status_code == 200  # an administrator
    assert "typo@example.org" not in _cli(data, "users", "list", "--json").stdout


def test_users_add_with_link_prints_a_one_time_sign_in_link_that_works(local: Settings, served: str) -> None:
    data = local.data_dir
    made = _cli(data, "users", "add", "linked@example.org", "--link", "--base-url", served + "/")
    assert made.returncode == 0, made.stderr
    link = made.stdout.strip().splitlines()[-1]
    assert link.startswith(f"{served}/signin/link?token="), made.stdout
    with httpx.Client(base_url=served, timeout=30) as browser:
        reply = _follow_signin_link(browser, link)
        assert reply.status_code == 303, reply.text
        assert _signed_in_as(browser, "linked@example.org")
    with httpx.Client(base_url=served, timeout=30) as other:
        parts = urlsplit(link)
        again = other.get(f"{parts.path}?{parts.query}")  # it works once only
        assert again.status_code == 400
        assert "invalid or has expired" in again.text
        assert not _signed_in_as(other, "linked@example.org")


def test_users_add_refuses_bad_input_with_one_line_and_the_right_exit_code(local: Settings) -> None:
    data = local.data_dir
    assert _cli(data, "users", "add", "taken@example.org", "--link").returncode == 0
    cases = [
        (["not-an-address", "--link"], None, 2, "not-an-address"),
        (["taken@example.org", "--link"], None, 1, "taken@example.org already has an account (confirmed)"),
        (["TAKEN@example.org", "--password-stdin"], PASSWORD, 1, "already has an account"),
        (["new@example.org", "--password-stdin"], "short\n", 2, "at least 8 characters"),
        (["new@example.org", "--password-stdin"], "", 2, "stdin held no password"),
        (["new@example.org"], None, 2, "no terminal to ask the password on"),
        (["new@example.org", "--link", "--password-stdin"], PASSWORD, 2, "choose one"),
    ]
    for args, stdin, code, says in cases:
        done = _cli(data, "users", "add", *args, stdin=stdin)
        err = " ".join(done.stderr.split())
        assert done.returncode == code, (args, done.stdout, done.stderr)
        assert says in err, (args, err)
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # one line, never wrapped
    emails = [
        orjson.loads(line)["email"] for line in _cli(data, "users", "list", "--json").stdout.splitlines()
    ]
    assert emails == ["taken@example.org"]


def test_pages_say_mail_is_kept_and_the_outbox_link_works(local: Settings, served: str) -> None:
    """Sign up on the web of an instance without a mail server: the page says where the message went
    (and shows no link); ``paperfeed mail outbox`` gives the link decoded, and it confirms the account."""
    data = local.data_dir
    with httpx.Client(base_url=served, timeout=30) as browser:
        for page in ("/signup", "/signin", "/forgot"):
            shown = browser.get(page)
            assert KEPT in shown.text, page
            assert "paperfeed mail outbox" in shown.text
        reply = _post_form(
            browser,
            "/signup",
            "/signup",
            {"email": "new@example.org", "password": PASSWORD, "display_name": ""},
        )
        assert reply.status_code == 200
        assert "Message kept for the administrator" in reply.text
        assert "Check your inbox" not in reply.text
        assert "token=" not in reply.text  # never a mailed link on a page
        kept = _kept(data, "new@example.org", "confirm your email")
        taken = _cli(data, "users", "add", "new@example.org", "--link")  # signed up, not confirmed yet
        assert taken.returncode == 1
        assert "already has an account (unconfirmed)" in taken.stderr
        assert "paperfeed mail outbox --to new@example.org" in taken.stderr
        [link] = kept["links"]
        raw = Path(str(kept["file"])).read_text()
        assert "=3D" in raw  # quoted-printable: the link as the file has it is not the link
        assert str(link) not in raw
        parts = urlsplit(str(link))
        assert f"{parts.scheme}://{parts.netloc}" == served
        token = parts.query.removeprefix("token=")
        confirmed = _post_form(browser, f"{parts.path}?{parts.query}", "/verify", {"token": token})
        assert confirmed.status_code == 303, confirmed.text
        signed_in = _post_form(
            browser, "/signin", "/signin", {"email": "new@example.org", "password": PASSWORD}
        )
        assert signed_in.status_code == 303, signed_in.text
        assert _signed_in_as(browser, "new@example.org")
    with httpx.Client(base_url=served, timeout=30) as other:  # the sign-in link, asked for on the web
        asked = _post_form(other, "/signin", "/signin/email", {"email": "new@example.org", "next": ""})
        assert asked.status_code == 200
        assert KEPT in asked.text
        assert "token=" not in asked.text
        kept = _kept(data, "new@example.org", "sign-in link")
        [signin_link] = kept["links"]
        assert _follow_signin_link(other, signin_link).status_code == 303
        assert _signed_in_as(other, "new@example.org")
        reset = _post_form(other, "/forgot", "/forgot", {"email": "new@example.org"})
        assert KEPT in reset.text
        assert "token=" not in reset.text
    listed = _cli(data, "mail", "outbox")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert any("to new@example.org  Confirm your email for paperfeed" in line for line in lines), lines
    assert f"  {link}" in lines  # the human listing: each link whole on its own line


def test_mail_outbox_on_an_empty_or_a_sending_instance(tmp_path: Path, smtp_server: SmtpTestServer) -> None:
    data = tmp_path / "data"
    done = _cli(data, "mail", "outbox")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert f"no kept mail in {data / 'outbox'}" in " ".join(done.stderr.split())
    assert _cli(data, "mail", "outbox", "--json").stdout == ""
    bad = _cli(data, "mail", "outbox", "--to", "nobody")
    assert bad.returncode == 2
    assert "--to 'nobody'" in bad.stderr


def test_pages_with_a_mail_server_say_check_your_inbox(tmp_path: Path, smtp_server: SmtpTestServer) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedding_backend="fake", **smtp_server.settings())
    with live_server(settings) as url, httpx.Client(base_url=url, timeout=30) as browser:
        for page in ("/signup", "/signin", "/forgot"):
            assert KEPT not in browser.get(page).text, page
        reply = _post_form(browser, "/forgot", "/forgot", {"email": "someone@example.org"})
        assert "Check your inbox" in reply.text
        assert KEPT not in reply.text
