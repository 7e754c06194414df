"""Security issue #12, finding 1: mailed links never follow the request's ``Host`` header.

Before the fix, with ``PAPERFEED_BASE_URL`` unset, POST /forgot with ``Host: evil.example`` mailed
``http://evil.example/reset?token=…``: whoever can make a victim request a mail gets their token. Now every
mailed link is built from the configured public URL only, and a non-debug server refuses to start
without one (``paperfeed run`` sets it to the address it serves on).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from paperfeed.bootstrap import App
from paperfeed.cli import cli_app as cli
from paperfeed.settings import Settings

from .conftest import Mailbox, fill, quick_sign_in

EVIL = {"host": "evil.example"}
SECRET = "s" * 40


def _urls(mailbox: Mailbox, to: str, subject_has: str) -> list[str]:
    (text,) = mailbox.wait(to, subject_has)
    return re.findall(r"https?://[^\s\"'<>]+", text)


def _ours(urls: list[str], own: str) -> bool:
    return all(u.rstrip("/") == own or u.startswith(own + "/") for u in urls)


def test_account_mails_ignore_a_forged_host(site: TestClient, app: App, mailbox: Mailbox) -> None:
    """Sign-up, sign-in link and password reset, each asked for with ``Host: evil.example``."""
    assert app.settings.base_url is None  # the case the finding is about
    own = app.core.public_url
    assert fill(site, "/signup", "/signup", {"email": "ann@example.org", "password": "pw-" * 5}, **EVIL)
    quick_sign_in(site, app, "bob@example.org")
    site.cookies.clear()
    fill(site, "/signin", "/signin/email", {"email": "bob@example.org"}, **EVIL)
    fill(site, "/forgot", "/forgot", {"email": "bob@example.org"}, **EVIL)
    for to, subject in [
        ("ann@example.org", "confirm your email"),
        ("bob@example.org", "sign-in link"),
        ("bob@example.org", "reset your"),
    ]:
        urls = _urls(mailbox, to, subject)
        assert urls, subject
        assert _ours(urls, own), (subject, urls)
    assert not any("evil.example" in m.text for m in mailbox.server.messages)


def test_digest_mails_ignore_a_forged_host(site: TestClient, app: App, mailbox: Mailbox) -> None:
    """The confirmation mail and its RFC 8058 List-Unsubscribe header."""
    reply = fill(site, "/digest", "/digest", {"email": "cy@example.org", "sections": "trending"}, **EVIL)
    assert reply.status_code == 200, reply.text
    urls = _urls(mailbox, "cy@example.org", "confirm")
    assert urls
    assert _ours(urls, app.core.public_url), urls
    (mail,) = mailbox.server.to("cy@example.org")
    assert "evil.example" not in mail.data.decode()  # headers (List-Unsubscribe), text and HTML


@pytest.mark.parametrize(
    ("base_url", "debug", "refused"),
    [
        (None, False, "PAPERFEED_BASE_URL is not set"),
        ("", False, "PAPERFEED_BASE_URL is not set"),
        ("evil.example", False, "http:// or https://"),
        ("ftp://papers.example.org", False, "http:// or https://"),
        ("https://papers.example.org/?x=1", False, "query"),
        ("https://papers.example.org", False, None),
        ("http://127.0.0.1:8000/", False, None),
        (None, True, None),
    ],
)
def test_check_base_url(tmp_path: Path, base_url: str | None, debug: bool, refused: str | None) -> None:
    from paperfeed.public_url import UnsafeBaseUrl, check_base_url

    settings = Settings(data_dir=tmp_path, base_url=base_url, debug=debug)
    if refused is None:
        check_base_url(settings)
    else:
        with pytest.raises(UnsafeBaseUrl, match=re.escape(refused)):
            check_base_url(settings)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    return {**env, **extra}


def test_serve_refuses_to_start_without_a_base_url(tmp_path: Path) -> None:
    """The real command: one clear line on stderr, exit code 2, before anything listens."""
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(tmp_path), "serve", "--port", "1"]
    env = _clean_env(PAPERFEED_SECRET_KEY=SECRET)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2, result.stderr
    said = " ".join(result.stderr.split())
    assert "PAPERFEED_BASE_URL is not set" in said
    assert "--base-url" in said
    assert "Traceback" not in result.stderr


def test_serve_checks_the_base_url_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process: no base URL, or one that is not an absolute http(s) URL, is refused before serving."""
    for key in [k for k in os.environ if k.startswith("PAPERFEED_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PAPERFEED_SECRET_KEY", SECRET)
    runner = CliRunner()
    refused = runner.invoke(cli, ["--data-dir", str(tmp_path), "serve", "--port", "1"])
    assert refused.exit_code == 2
    assert "PAPERFEED_BASE_URL is not set" in " ".join(refused.output.split())
    bad = runner.invoke(cli, ["--data-dir", str(tmp_path), "serve", "--base-url", "papers.example.org"])
    assert bad.exit_code == 2
    assert "http:// or https://" in " ".join(bad.output.split())


def test_uvicorn_factory_refuses_without_a_base_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from paperfeed.web.app import app_from_environment

    for key in [k for k in os.environ if k.startswith("PAPERFEED_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PAPERFEED_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PAPERFEED_SECRET_KEY", SECRET)
    with pytest.raises(SystemExit) as exited:
        app_from_environment()
    assert exited.value.code == 2
    monkeypatch.setenv("PAPERFEED_BASE_URL", "https://papers.example.org")
    assert app_from_environment() is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_run_serves_with_its_own_address_as_base_url(tmp_path: Path) -> None:
    """`paperfeed run` (make run) needs no configuration: it says where mailed links point, and a sign-up
    asked for with a forged Host header still mails a link to the address it serves on."""
    port = _free_port()
    data = tmp_path / "data"
    env = _clean_env(PAPERFEED_EMBEDDING_BACKEND="fake", PAPERFEED_KEYWORD_ENGINE="fts5")
    cmd = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "run", "--offline", "--no-index"]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    own = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=own, timeout=5) as client:
            deadline = time.monotonic() + 60
            page = None
            while page is None and time.monotonic() < deadline:
                try:
                    page = client.get("/signup", headers={"accept": "text/html"})
                except httpx.TransportError:
                    time.sleep(0.2)
            assert page is not None, "the server never answered"
            token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
            assert token is not None
            form = {"email": "dee@example.org", "password": "long-enough-pw", "csrf_token": token.group(1)}
            reply = client.post("/signup", data=form, headers={"accept": "text/html", **EVIL})
            assert reply.status_code == 200, reply.text[:500]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not list((data / "outbox").glob("*.eml")):
            time.sleep(0.1)
        (eml,) = (data / "outbox").glob("*.eml")
        text = eml.read_text()
        assert f"{own}/verify?token=" in text
        assert "evil.example" not in text
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    said = " ".join(out.decode().split())
    assert f"links in mail point to {own}/" in said
    assert "PAPERFEED_BASE_URL" in said
