"""``paperfeed users …`` / ``paperfeed papers …`` and the refusal to serve with a guessable secret."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from paperfeed.bootstrap import App
from paperfeed.cli import cli_app as cli
from paperfeed.secret_key import SECRET_FILE, InsecureSecret, check_secret, resolve_secret
from paperfeed.settings import Settings

from .conftest import PAPER_IDS, add_topic


def _run(data_dir: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), *args])
    return result.exit_code, result.output


def test_promote_demote_list_hide(app: App) -> None:
    data = app.settings.data_dir
    app.readers.accounts.sign_up("root@example.org", None, "Root", client="t", base_url="http://x")
    code, out = _run(data, "users", "promote", "ROOT@example.org")
    assert code == 0, out
    assert "is now an admin" in out
    assert app.readers.accounts.user_by_email("root@example.org").is_admin
    code, out = _run(data, "users", "list", "--json")
    assert code == 0
    rows = [orjson.loads(line) for line in out.splitlines()]  # JSON lines: one object per account
    assert [(r["email"], r["role"], r["hidden"]) for r in rows] == [("root@example.org", "admin", False)]
    code, out = _run(data, "users", "hide", "root@example.org")
    assert code == 2
    assert "demote them first" in out
    assert _run(data, "users", "demote", "root@example.org")[0] == 0
    assert not app.readers.accounts.user_by_email("root@example.org").is_admin
    assert _run(data, "users", "hide", "root@example.org")[0] == 0
    assert _run(data, "users", "list")[1].count("hidden") == 1
    assert _run(data, "users", "unhide", "root@example.org")[0] == 0
    code, out = _run(data, "users", "promote", "ghost@example.org")
    assert code == 2
    assert "No account has the address ghost@example.org" in out


def test_export_and_delete_a_user(app: App, tmp_path: Path) -> None:
    data = app.settings.data_dir
    app.readers.accounts.sign_up("gone@example.org", None, None, client="t", base_url="http://x")
    app.readers.accounts.sign_up("stays@example.org", None, None, client="t", base_url="http://x")
    gone, stays = (app.readers.accounts.user_by_email(e) for e in ("gone@example.org", "stays@example.org"))
    for user in (gone, stays):
        app.readers.community.upvote(user, PAPER_IDS[0])
    add_topic(app.core.store, 4, "Glacier melt")
    app.catalogue.topic_picks.pick(gone.id, 4)
    target = tmp_path / "out.zip"
    code, out = _run(data, "users", "export", "gone@example.org", "-o", str(target))
    assert code == 0, out
    with zipfile.ZipFile(target) as archive:
        assert orjson.loads(archive.read("account.json"))["email"] == "gone@example.org"
        [pick] = orjson.loads(archive.read("topics.json"))
        assert (pick["topicId"], pick["label"]) == (4, "Glacier melt")
    refused = CliRunner().invoke(
        cli, ["--data-dir", str(data), "users", "delete", "gone@example.org"], input="n\n"
    )
    assert refused.exit_code == 2
    assert app.readers.accounts.store.user_by_email("gone@example.org") is not None
    code, out = _run(data, "users", "delete", "GONE@example.org", "--yes")
    assert code == 0, out
    assert "gone@example.org is deleted" in out
    assert app.readers.accounts.store.user_by_email("gone@example.org") is None
    assert app.readers.community.votes(PAPER_IDS[0]).local == 1
    assert _run(data, "users", "delete", "gone@example.org", "--yes")[0] == 2
    assert _run(data, "users", "export", "gone@example.org")[0] == 2


def test_hide_and_unhide_papers(app: App) -> None:
    data = app.settings.data_dir
    code, out = _run(data, "papers", "hide", f"https://arxiv.org/abs/{PAPER_IDS[1]}", "--reason", "duplicate")
    assert code == 0, out
    assert app.catalogue.feeds.paper(PAPER_IDS[1]) is None
    assert "duplicate" in _run(data, "papers", "hidden")[1]
    assert "already hidden" in _run(data, "papers", "hide", PAPER_IDS[1])[1]
    assert _run(data, "papers", "unhide", PAPER_IDS[1])[0] == 0
    assert app.catalogue.feeds.paper(PAPER_IDS[1]) is not None
    assert _run(data, "papers", "unhide", PAPER_IDS[1])[0] == 2
    assert _run(data, "papers", "hide", "2501.99999")[0] == 2
    assert _run(data, "papers", "hide", "nonsense")[0] == 2


@pytest.mark.parametrize(
    ("secret", "debug", "refused"),
    [
        (None, False, "is not set"),
        ("", False, "is not set"),
        ("change-me", False, "placeholder"),
        ("short-but-random", False, "shorter than 32"),
        ("x" * 40, False, None),
        (None, True, None),
        ("change-me", True, None),
    ],
)
def test_check_secret(tmp_path: Path, secret: str | None, debug: bool, refused: str | None) -> None:
    settings = Settings(data_dir=tmp_path, secret_key=secret, debug=debug)  # type: ignore[arg-type]
    if refused is None:
        check_secret(settings)
    else:
        with pytest.raises(InsecureSecret, match=refused):
            check_secret(settings)


def test_generated_secret_is_kept_in_the_data_folder(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "d")
    check_secret(settings, allow_generated=True)  # paperfeed run: fine without one
    first = resolve_secret(settings)
    assert first == resolve_secret(settings)
    path = tmp_path / "d" / SECRET_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    assert len(first) >= 32
    configured = Settings(data_dir=tmp_path / "d", secret_key="y" * 40)  # type: ignore[arg-type]
    assert resolve_secret(configured) == b"y" * 40


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    return {**env, **extra}


def test_serve_refuses_to_start_without_a_secret(tmp_path: Path) -> None:
    """The real command in a subprocess: one line on stderr, exit code 2, before anything listens."""
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(tmp_path), "serve", "--port", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=_clean_env())
    assert result.returncode == 2, result.stderr
    assert "PAPERFEED_SECRET_KEY is not set" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_refuses_a_placeholder_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("PAPERFEED_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PAPERFEED_SECRET_KEY", "changeme")
    code, out = _run(tmp_path, "serve", "--port", "1")
    assert code == 2
    assert "placeholder" in out
    monkeypatch.setenv("PAPERFEED_DEBUG", "1")  # debug mode accepts it (serving itself is not tested here)
    check_secret(Settings(data_dir=tmp_path))


def test_uvicorn_factory_refuses_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from paperfeed.web.app import app_from_environment

    for key in [k for k in os.environ if k.startswith("PAPERFEED_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PAPERFEED_DATA_DIR", str(tmp_path))
    with pytest.raises(SystemExit) as exited:
        app_from_environment()
    assert exited.value.code == 2
    monkeypatch.setenv("PAPERFEED_SECRET_KEY", "z" * 40)
    monkeypatch.setenv("PAPERFEED_BASE_URL", "https://papers.example.org")
    assert app_from_environment() is not None
