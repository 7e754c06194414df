"""The surfaces (CLI, web) only parse, call and present: bootstrap wires the adapters, and a CLI start
pays for no server, database or model library until a command needs it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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


def test_cli_and_web_import_no_adapter() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}: {module}"
        for surface in ("cli", "web")
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
