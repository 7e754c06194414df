"""Per-invocation state shared by CLI commands: settings and the lazily built app."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from paperfeed.bootstrap import App
    from paperfeed.settings_model import SettingsModel

__all__ = ["Context", "fail"]


def _console(stderr: bool = False) -> Console:
    """A rich console, imported on first use: ``paperfeed --help`` prints none.

    Not on a terminal (a pipe, a log file, ``paperfeed run``'s children) lines are never hard-wrapped:
    rich would cut every line at 80 columns there, breaking paths, links and log lines in two. Tables
    still fit the width."""
    from rich.console import Console

    console = Console(stderr=stderr)
    console.soft_wrap = not console.is_terminal
    return console


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one clean error line to stderr and return the Exit to raise."""
    _console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code)


@dataclass
class Context:
    data_dir: Path | None = None
    database_url: str | None = None
    console: Console = field(default_factory=_console)
    err: Console = field(default_factory=lambda: _console(stderr=True))
    _app: App | None = None

    @property
    def settings(self) -> SettingsModel:
        return self.app.settings

    @property
    def app(self) -> App:
        """Settings and the composition root, built on first use (``--help`` imports neither). The
        settings come from ``PAPERFEED_*`` through :meth:`SettingsModel.from_environ` (what
        pydantic-settings would read, without its import: docs/cli.md, "Start-up time")."""
        if self._app is None:
            from pydantic import ValidationError

            from paperfeed.bootstrap import build_app
            from paperfeed.settings_model import SettingsModel

            overrides: dict[str, Any] = {}
            if self.data_dir is not None:
                overrides["data_dir"] = self.data_dir
            if self.database_url is not None:
                overrides["database_url"] = self.database_url
            try:
                settings = SettingsModel.from_environ(os.environ, **overrides)
            except ValidationError as exc:
                errors = "; ".join(
                    f"PAPERFEED_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
                )
                raise fail(f"invalid settings: {errors}") from None
            self._app = build_app(settings)
        return self._app

    def close(self) -> None:
        if self._app is not None:
            self._app.close()
