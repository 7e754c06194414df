"""The environment of a fresh interpreter that runs this checkout's code: no PAPERFEED_* setting of the
test process, this worktree's ``src`` and root first on the path (tests that must see a process whose
imports no other test has made, or a server the MCP client starts)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def checkout_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    return env
