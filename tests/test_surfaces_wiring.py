"""The surfaces (CLI, web) only parse, call and present: bootstrap wires the adapters, and a CLI start
pays for no server, database or model library until a command needs it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import paperfeed

PACKAGE = Path(paperfeed.__file__).resolve().parent
HEAVY = (
    "fastapi",
    "uvicorn",
    "starlette",
    "sqlalchemy",
    "pydantic",
    "jinja2",
    "httpx",
    "lxml",
    "torch",
    "onnxruntime",
    "faiss",
    "tantivy",
    "paperfeed.bootstrap",
    "paperfeed.web",
    "mcp",
)


def _imported_modules(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def test_cli_web_and_mcp_import_no_adapter() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}: {module}"
        for surface in ("cli", "web", "mcp")
        for path in sorted((PACKAGE / surface).rglob("*.py"))
        for module in _imported_modules(path)
        if module == "paperfeed.adapters" or module.startswith("paperfeed.adapters.")
    ]
    assert not offenders, offenders


def test_services_read_no_files_of_the_web_surface() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in sorted((PACKAGE / "services").rglob("*.py"))
        if '"web"' in path.read_text() or "web/templates" in path.read_text()
    ]
    assert not offenders, offenders


def test_the_cli_starts_without_heavy_imports() -> None:
    probe = f"import sys, paperfeed.cli\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", f"imported when the CLI starts: {done.stdout.strip()}"


def _names(module: object) -> dict[str, object]:
    """The module's globals with what it imports only for type checking (``if TYPE_CHECKING:``)."""
    import inspect

    found = dict(vars(module))
    for node in ast.parse(inspect.getsource(module)).body:  # type: ignore[arg-type]
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            exec(compile(ast.Module(body=node.body, type_ignores=[]), "<checking>", "exec"), found)
    return found


def _wing_attributes() -> dict[str, dict[str, str]]:
    """For each ``App`` attribute (the core and the wings), what each of its attributes hands out: the
    module of its annotated type (``paperfeed.services...``, ``paperfeed.adapters...``, ``builtins``)."""
    import inspect
    import sys
    import typing
    from functools import cached_property

    from paperfeed.bootstrap import App

    def hints(function: Any) -> dict[str, Any]:
        module = sys.modules[function.__module__]
        return typing.get_type_hints(function, globalns=_names(module))

    from paperfeed.bootstrap.core import Core

    wings: dict[str, type] = {"core": Core}
    for wing_name, member in inspect.getmembers(App):
        if wing_name.startswith("_") or not isinstance(member, cached_property | property):
            continue
        function = member.func if isinstance(member, cached_property) else member.fget
        assert function is not None
        wing = hints(function)["return"]
        if isinstance(wing, type) and wing.__module__.startswith("paperfeed.bootstrap"):
            wings[wing_name] = wing
    out: dict[str, dict[str, str]] = {}
    for wing_name, wing in wings.items():
        found: dict[str, str] = {}
        for name, value in inspect.getmembers(wing):
            if name.startswith("_"):
                continue
            got = value.func if isinstance(value, cached_property) else getattr(value, "fget", value)
            if not callable(got):
                continue
            returned = hints(got).get("return")
            origin = typing.get_origin(returned) or returned
            modules = [getattr(t, "__module__", "") for t in (typing.get_args(returned) or (origin,))]
            found[name] = next(
                (m for m in modules if m.startswith("paperfeed.")), modules[0] if modules else ""
            )
        out[wing_name] = found
    return out


# What a surface may take from a wing although it is an adapter or a port, each with why. Anything else
# of that kind (a store above all) is reached through a service.
SURFACE_PORTS = {
    ("catalogue", "shared_pages"): "the web's own page cache storage (web/public_cache.py keeps pages in it)",
    ("sources", "arxiv_ids"): "a source of papers, which the command hands to the ingest service",
    ("sources", "arxiv_oai_harvest"): "a source of papers, which the command hands to the ingest service",
    ("sources", "hf_daily"): "a source of papers, which the command hands to the ingest service",
    ("sources", "paper_file"): "a source of papers, which the command hands to the ingest service",
    (
        "indexes",
        "embed_workers",
    ): "worker processes `paperfeed index --workers` hands to the indexing service",
    ("indexes", "embedder_config"): "the backend's settings, which `paperfeed index` prints",
    (
        "maintenance",
        "supervisors",
    ): "the status files `paperfeed run` writes and `jobs status`, /admin/jobs read",
    ("mail", "kept_mail"): "what the outbox kept, as data (`paperfeed mail outbox`)",
}


def test_no_surface_reads_an_adapter_a_wing_holds() -> None:
    """Surfaces get services (``app.<wing>.<service>``), never adapters: an attribute of the core or of a
    wing whose type is an adapter's class or a domain port (``app.core.store``, ``app.indexes.keyword``,
    ``app.digests.records``) is for the wings and for tests. Found by the attribute chain in the source,
    whatever the receiver is called (``app``, ``c.app``, ``app_of(request)``, ``container``)."""
    wings = _wing_attributes()
    assert {"core", "mail", "indexes", "catalogue", "sources", "search", "readers", "digests"} <= set(wings)
    adapters = {
        (wing, name)
        for wing, members in wings.items()
        for name, module in members.items()
        if module.startswith(("paperfeed.adapters", "paperfeed.domain"))
    }
    assert ("core", "store") in adapters  # the scan sees them
    assert ("indexes", "keyword") in adapters
    offenders = []
    for surface in ("cli", "web", "mcp"):
        for path in sorted((PACKAGE / surface).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Attribute)
                    and (node.value.attr, node.attr) in adapters - set(SURFACE_PORTS)
                ):
                    offenders.append(
                        f"{path.relative_to(PACKAGE)}:{node.lineno}: .{node.value.attr}.{node.attr}"
                    )
    assert not offenders, offenders
    assert set(SURFACE_PORTS) <= adapters, "an exemption no longer applies"
