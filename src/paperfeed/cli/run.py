"""``paperfeed run``: the one command that brings an instance up (what ``make run`` calls).

It imports any files given, then supervises the instance as one unit (:mod:`.supervisor`): the web
server (``paperfeed serve``) starts first, so the site is served at once; meanwhile, when the sources are
reachable, it fills the window of recent papers on a first start or catches up what is missing
(:mod:`.fill`, with progress bars); then the scheduler (``paperfeed scheduler``, the daily pipeline) and
the background indexer (``paperfeed index --follow``) start. Children are restarted with back-off if they
die, their output is relayed with their names, and one Ctrl+C stops them all. Without a network it never
hangs: the reachability check has a short timeout and no retries, and it says how to import a file
instead. It needs no configuration: without ``PAPERFEED_SECRET_KEY`` it uses the data folder's generated
secret, and without ``PAPERFEED_BASE_URL`` links in mail point to the address it serves on (it says
which), never to a request's Host header.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from paperfeed.domain.wording import count

from .context import Context, fail
from .fill import OFFLINE_HINT, fill_window
from .imports import import_paths

if TYPE_CHECKING:
    from paperfeed.settings_model import SettingsModel

    from .supervisor import ChildSpec

__all__ = ["PATH_HINT", "how_to_run_commands", "register"]

# Said in the banner when `paperfeed` alone would not be found (``make run`` installs into .venv, which no
# shell has activated); the README says the same words with .venv (tests/cli/test_first_start.py).
PATH_HINT = (
    "paperfeed is not on your PATH: run its commands as `{command} …` (e.g. `{command} --help`), "
    "or `source {activate}` first"
)


def _shown(path: Path) -> str:
    """``path`` as typed from here: relative when under the current folder (``.venv/bin/paperfeed``)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def how_to_run_commands() -> str | None:
    """How to run paperfeed's other commands from this shell, when plain ``paperfeed`` is not on PATH;
    None when it is (an activated venv, pipx) or no ``paperfeed`` script sits beside this Python."""
    argv0 = Path(sys.argv[0])
    script = argv0 if argv0.name == "paperfeed" else Path(sys.executable).parent / "paperfeed"
    if not script.is_file():
        return None
    found = shutil.which("paperfeed")
    if found is not None and os.path.samefile(found, script):
        return None
    activate = script.parent / "activate"
    if not activate.is_file():
        return f"paperfeed is not on your PATH: run its commands as `{_shown(script)} …`"
    return PATH_HINT.format(command=_shown(script), activate=_shown(activate))


def _child_specs(
    settings: SettingsModel, host: str, port: int, *, scheduler: bool, index: bool
) -> list[ChildSpec]:
    """The supervised commands: ``serve`` (web-only), ``scheduler`` and ``index --follow``."""
    from .supervisor import ChildSpec

    base = [sys.executable, "-m", "paperfeed", "--data-dir", str(settings.data_dir)]
    specs = [
        ChildSpec(
            "web",
            [
                *base,
                "serve",
                "--host",
                host,
                "--port",
                str(port),
                "--workers",
                "1",
                "--base-url",
                str(settings.base_url),
                "--log-level",
                "warning",
                "--data-folder-secret",
                "--supervised",
            ],
            style="green",
            essential=True,
        )
    ]
    if scheduler:
        specs.append(
            ChildSpec(
                "scheduler",
                [*base, "scheduler", "--nice", "5"],
                style="magenta",
                busy_exit=4,  # paperfeed scheduler's exit code when the scheduler lease is held
                busy_note="another scheduler holds the scheduler lease (a second paperfeed run or "
                "paperfeed scheduler on this database)",
            )
        )
    if index:
        specs.append(ChildSpec("indexer", [*base, "index", "--follow", "--nice", "10"], style="blue"))
    return specs


def _port_is_free(host: str, port: int) -> str | None:
    """None when ``host:port`` can be listened on, else why not (checked before starting the web child)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        ctx: typer.Context,
        files: Annotated[
            list[Path] | None,
            typer.Option(
                "--import", help="Import these files or folders first, as paperfeed import (repeatable)."
            ),
        ] = None,
        host: Annotated[
            str | None, typer.Option(help="Interface to listen on (default: PAPERFEED_HOST or 127.0.0.1).")
        ] = None,
        port: Annotated[
            int | None,
            typer.Option(min=1, max=65535, help="Port to listen on (default: PAPERFEED_PORT or 8000)."),
        ] = None,
        offline: Annotated[bool, typer.Option("--offline", help="Do not contact any source.")] = False,
        probe_timeout: Annotated[
            float, typer.Option(help="Seconds to wait for a source before going offline.")
        ] = 5.0,
        serve: Annotated[
            bool, typer.Option("--serve/--no-serve", help="Serve the web app afterwards.")
        ] = True,
        index: Annotated[
            bool, typer.Option("--index/--no-index", help="Embed papers in the background while serving.")
        ] = True,
        scheduler: Annotated[
            bool | None,
            typer.Option(
                "--scheduler/--no-scheduler",
                help="Run the daily pipeline at its times (PAPERFEED_JOBS_*_AT) while serving "
                "(default: yes, unless --offline, since it fetches from the sources).",
                show_default=False,
            ),
        ] = None,
    ) -> None:
        """Bring paperfeed up: import FILES, refresh from the sources when reachable, then run the web
        server, the scheduler and the background indexer as one supervised unit (one Ctrl+C stops all)."""
        from paperfeed.public_url import UnsafeBaseUrl, check_base_url, local_base_url
        from paperfeed.secret_key import SECRET_FILE, InsecureSecret, check_secret, configured_secret

        c: Context = ctx.obj
        try:  # a laptop needs no configured secret: one is generated in the data folder on first use
            check_secret(c.settings, allow_generated=True)
        except InsecureSecret as exc:
            raise fail(str(exc)) from None
        # One default, in the settings (PAPERFEED_HOST, PAPERFEED_PORT); the flags win over them.
        host = c.settings.host if host is None else host
        port = c.settings.port if port is None else port
        # Mailed links point to PAPERFEED_BASE_URL, else to the address served on here (never a Host header).
        own_url = not (c.settings.base_url or "").strip()
        serving = c.settings.model_copy(update={"host": host, "port": port})
        if own_url:
            serving = serving.model_copy(update={"base_url": local_base_url(host, port)})
        try:
            check_base_url(serving)
        except UnsafeBaseUrl as exc:
            raise fail(str(exc)) from None
        why = _port_is_free(host, port) if serve else None
        if why is not None:  # said before any import or download, not after
            raise fail(
                f"cannot serve on {host}:{port}: {why}; choose another with --port N, or PAPERFEED_PORT=N "
                "(make run PORT=N)"
            )
        if files:
            import_paths(c, files)

        def fill_and_report() -> None:
            if not offline:  # the import advice is given below, once, if the store is empty
                fill_window(c, probe_timeout=probe_timeout, hint=False)
            stats = c.app.maintenance.store.open()
            c.console.print(f"{count(stats.papers, 'paper')} in {escape(stats.location)}", highlight=False)
            if stats.papers == 0:
                c.console.print(f"[yellow]the store is empty.[/] {escape(OFFLINE_HINT)}", highlight=False)

        path_hint = how_to_run_commands()
        if not serve:
            if path_hint:
                c.console.print(path_hint, highlight=False, markup=False)
            fill_and_report()
            return
        settings = serving
        from paperfeed.services.jobs import holder_is_dead, process_identity

        from .supervisor import Supervisor

        status = c.app.maintenance.supervisors
        c.app.maintenance.store.open()  # opens (and migrates) the store before any child does
        if configured_secret(settings) is None and not settings.debug:
            c.console.print(
                f"using the secret key in {settings.data_dir / SECRET_FILE} (generated on first run); "
                "set PAPERFEED_SECRET_KEY on a public server",
                highlight=False,
                markup=False,
            )
        c.console.print(f"serving on http://{host}:{port}/  (Ctrl+C to stop)", highlight=False)
        if path_hint:
            c.console.print(path_hint, highlight=False, markup=False)
        base = (settings.base_url or "").rstrip("/")
        c.console.print(
            f"links in mail point to {base}/"
            + (" (set PAPERFEED_BASE_URL to the address others use to reach this server)" if own_url else ""),
            highlight=False,
            markup=False,
        )
        with_scheduler = not offline if scheduler is None else scheduler
        if not with_scheduler and scheduler is None:
            c.console.print("offline: the scheduler is not started (--scheduler starts it)", highlight=False)
        specs = _child_specs(settings, host, port, scheduler=with_scheduler, index=index)
        c.console.print(
            "supervising "
            + ", ".join(spec.name for spec in specs)
            + " (their lines start with the time, UTC; status: paperfeed jobs status, /admin/jobs)",
            highlight=False,
        )
        # Every child's settings say where this serves, so the scheduler's mailed links (digests) point
        # there too; the database URL may hold a password: by environment, not on a command line.
        env = {"PAPERFEED_HOST": host, "PAPERFEED_PORT": str(port), "PAPERFEED_BASE_URL": base}
        if settings.database_url:
            env["PAPERFEED_DATABASE_URL"] = settings.database_url
        supervisor = Supervisor(
            specs,
            console=c.console,
            identity=process_identity(),
            status=status,
            is_dead=holder_is_dead,
            env=env,
            url=base,
        )

        def warm_up() -> None:
            try:
                fill_and_report()  # served meanwhile: the day page shows what has arrived
            finally:
                c.close()  # the children open their own connections

        code = supervisor.run(warm_up=warm_up, first=("web",))
        if code:
            raise typer.Exit(code)
