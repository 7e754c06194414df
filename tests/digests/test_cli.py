"""``paperfeed digest preview|send|status`` through the real CLI, mail to the recording SMTP server."""

from __future__ import annotations

import email
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperfeed.bootstrap import build_app
from paperfeed.cli import cli_app as cli
from tests.support.digests import BASE_URL, SECRET, digest_settings, load_papers, subscribe_active
from tests.support.smtp_server import SmtpTestServer

NOW = "2025-03-20T09:00Z"


@pytest.fixture
def data_dir(tmp_path: Path, smtp_server: SmtpTestServer) -> Path:
    folder = tmp_path / "data"
    app = build_app(digest_settings(folder, smtp_server))
    try:
        load_papers(app)
        subscribe_active(app, "one@example.org", max_items=5)
        subscribe_active(app, "two@example.org")
    finally:
        app.close()
    return folder


def env_for(smtp: SmtpTestServer) -> dict[str, str]:
    return {
        **smtp.environ(),
        "PAPERFEED_SECRET_KEY": SECRET,
        "PAPERFEED_BASE_URL": BASE_URL,
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PAPERFEED_KEYWORD_ENGINE": "fts5",
    }


def invoke(data_dir: Path, env: dict[str, str], *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "digest", *args], env=env)
    return result.exit_code, result.output


def test_preview_renders_without_recording_or_sending(
    data_dir: Path, smtp_server: SmtpTestServer, tmp_path: Path
) -> None:
    env = env_for(smtp_server)
    code, out = invoke(data_dir, env, "preview", "--to", "one@example.org", "--now", NOW)
    assert code == 0, out
    assert "Subject: 5 papers for Thursday 20 March 2025 · paperfeed" in out
    assert out.count(f"{BASE_URL}/papers/") == 5
    eml = tmp_path / "digest.eml"
    code, out = invoke(data_dir, env, "preview", "--to", "one@example.org", "--now", NOW, "--out", str(eml))
    assert code == 0, out
    message = email.message_from_bytes(eml.read_bytes())
    assert message.get_content_type() == "multipart/alternative"
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    html = tmp_path / "digest.html"
    assert invoke(data_dir, env, "preview", "--to", "nobody@example.org", "--out", str(html))[0] == 0
    assert "<table" in html.read_text()
    assert smtp_server.messages == []
    code, out = invoke(data_dir, env, "status")
    assert "digests: none yet" in out
    code, out = invoke(data_dir, env, "preview", "--to", "not an address")
    assert code == 2
    assert "--to: not a mail address" in out


def test_send_then_dry_run_and_status(data_dir: Path, smtp_server: SmtpTestServer) -> None:
    env = env_for(smtp_server)
    code, out = invoke(data_dir, env, "send", "--dry-run", "--now", NOW)
    assert code == 0, out
    assert "would compose 2 digests" in out
    assert smtp_server.messages == []
    code, out = invoke(data_dir, env, "send", "--now", NOW)
    assert code == 0, out
    assert "sent 2 in" in out
    assert sorted(m.to for m in smtp_server.wait_for(2)) == ["one@example.org", "two@example.org"]
    code, out = invoke(data_dir, env, "send", "--now", NOW)
    assert "0 due" in out
    assert "sent 0 in" in out
    code, out = invoke(data_dir, env, "status")
    assert "subscriptions: active 2" in out
    assert "digests: sent 2" in out
    code, out = invoke(data_dir, env, "send", "--now", "yesterday")
    assert code == 2
    assert "--now: not an ISO date" in out


def test_send_exits_3_when_the_mail_server_is_unreachable(
    data_dir: Path, smtp_server: SmtpTestServer
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        env = {**env_for(smtp_server), "PAPERFEED_SMTP_PORT": str(sock.getsockname()[1])}
        code, out = invoke(data_dir, env, "send", "--now", NOW)
    assert code == 3, out
    assert "is unreachable" in out
    assert "stay pending" in out
    code, out = invoke(data_dir, env_for(smtp_server), "send", "--now", NOW)  # the server is back
    assert code == 0, out
    assert "sent 2 in" in out
