"""The command line's settings (``SettingsModel.from_environ``) are exactly pydantic-settings' (``Settings``).

The CLI reads ``PAPERFEED_*`` without importing pydantic-settings (docs/cli.md, "Start-up time"); these
tests hold it to what ``Settings()`` reads from the same environment: every field, its variable's name in
any case, flags over variables, and the same validation errors for bad values.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
from pydantic import ValidationError

from paperfeed.settings import Settings
from paperfeed.settings_model import ENV_PREFIX, SettingsModel

# A valid value other than the default for the fields whose default is None (the rest use str(default)).
EXAMPLES = {
    "database_url": "sqlite:////tmp/x.db",
    "base_url": "https://papers.example.org",
    "secret_key": "k" * 40,
    "arxiv_categories": "cs.CL, hep-th",
    "contact_email": "me@example.org",
    "s2_api_key": "s2key",
    "openalex_mailto": "me@example.org",
    "openalex_api_key": "oakey",
    "embedding_model": "/models/mini",
    "embedding_threads": "3",
    "model_cache": "/tmp/models",
    "smtp_host": "mail.example.org",
    "smtp_port": "2525",
    "smtp_username": "me",
    "smtp_password": "secret",
    "smtp_ca_file": "/etc/ca.pem",
    "jobs_arxiv_set": "cs",
}


PATTERNED = {
    "citation_sources": "openalex",
    "jobs_daily_at": "06:30",
    "jobs_digests_at": ":10",
    "jobs_daily_steps": "index, digests",
}


def _env_value(name: str) -> str:
    """A valid value for field ``name`` that is not its default (so reading it is seen)."""
    if name in EXAMPLES:
        return EXAMPLES[name]
    if name in PATTERNED:
        return PATTERNED[name]
    info = SettingsModel.model_fields[name]
    default = info.get_default(call_default_factory=True)
    assert default is not None, f"add an example value for {name}"
    if isinstance(default, bool):
        return str(not default).lower()
    if get_origin(info.annotation) is Literal:
        return next(str(c) for c in get_args(info.annotation) if c != default)
    if isinstance(default, int | float):
        bounds = [getattr(m, a) for m in info.metadata for a in ("ge", "le", "gt", "lt") if hasattr(m, a)]
        low = next((getattr(m, "ge", None) for m in info.metadata if hasattr(m, "ge")), None)
        high = next((getattr(m, "le", None) for m in info.metadata if hasattr(m, "le")), None)
        for candidate in (low, high, default + 1, default / 2):
            if candidate is None or candidate == default:
                continue
            if (high is None or candidate <= high) and (low is None or candidate >= low):
                return str(candidate)
        raise AssertionError(f"no other value for {name} within {bounds}")
    if isinstance(default, Path):
        return str(default / "elsewhere")
    return f"{default}x"


def _both(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], **overrides: Any) -> tuple[Any, Any]:
    for key in [k for k in list(os.environ) if k.upper().startswith(ENV_PREFIX)]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    environ = dict(os.environ)
    return Settings(**overrides), SettingsModel.from_environ(environ, **overrides)


def _dump(settings: SettingsModel) -> dict[str, Any]:
    data = settings.model_dump()
    return {k: v.get_secret_value() if hasattr(v, "get_secret_value") else v for k, v in data.items()}


def test_every_field_is_read_from_its_variable_as_pydantic_settings_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = list(SettingsModel.model_fields)
    assert set(Settings.model_fields) == set(names)

    # every field at once, the variable names in three spellings (pydantic-settings ignores case)
    def mixed(name: str) -> str:
        return name[:1].lower() + name[1:].upper()

    spellings: list[Callable[[str], str]] = [str.upper, str.lower, mixed]
    env = {spellings[i % 3](f"{ENV_PREFIX}{n}"): _env_value(n) for i, n in enumerate(names)}
    env["PAPERFEED_NOT_A_SETTING"] = "ignored"
    ref, cli = _both(monkeypatch, env)
    assert _dump(cli) == _dump(ref)
    defaults = _dump(SettingsModel())
    assert [n for n in names if _dump(ref)[n] == defaults[n]] == []  # every variable was read


def test_flags_win_over_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env = {"PAPERFEED_DATA_DIR": "/from/env", "PAPERFEED_DATABASE_URL": "sqlite:////env.db"}
    ref, cli = _both(monkeypatch, env, data_dir=tmp_path, database_url=None)
    assert _dump(cli) == _dump(ref)
    assert cli.data_dir == tmp_path


def test_nothing_set_gives_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    ref, cli = _both(monkeypatch, {})
    assert _dump(cli) == _dump(ref)


@pytest.mark.parametrize(
    "env",
    [
        {"PAPERFEED_PORT": "0"},
        {"PAPERFEED_EMBEDDING_BACKEND": "tensorflow"},
        {"PAPERFEED_JOBS_DAILY_AT": "25:00", "PAPERFEED_HTTP_TIMEOUT": "-1"},
        {"PAPERFEED_ARXIV_CATEGORIES": "not a category!"},
        {"paperfeed_debug": "maybe"},
        {"PAPERFEED_WORKERS": ""},
    ],
    ids=lambda e: ",".join(e),
)
def test_bad_values_fail_with_the_same_errors(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for key in [k for k in list(os.environ) if k.upper().startswith(ENV_PREFIX)]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValidationError) as ref:
        Settings()
    with pytest.raises(ValidationError) as cli:
        SettingsModel.from_environ(dict(os.environ))
    assert cli.value.errors(include_url=False) == ref.value.errors(include_url=False)
