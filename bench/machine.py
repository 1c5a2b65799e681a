"""What the numbers were measured on: the machine, the commit, and which compiled core was loaded.

`build_info()` names the compiler and profile but not the source, and the core is rebuilt in place
while people work, so the report also carries the extension file's hash and whether the engine sources
had uncommitted changes.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from kapstan import _core

ROOT = Path(__file__).resolve().parent.parent
ENGINE_SOURCES = ("rust", "operator/kapstan/scheduling", "Cargo.toml")


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""


def core_fingerprint() -> str:
    """sha256 prefix and modification time of the compiled core's file."""
    path = Path(_core.__file__ or "")
    if not path.is_file():
        return "missing"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    built = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{path.name} sha256 {digest}, built {built}"


def describe(args: list[str]) -> dict[str, Any]:
    dirty = [line[3:] for line in _git("status", "--porcelain", "--", *ENGINE_SOURCES).splitlines()]
    return {
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "build_info": _core.build_info(),
        "core": core_fingerprint(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _git("rev-parse", "--short", "HEAD").strip() or "unknown",
        "dirty": dirty,
        "args": "".join(f" {a}" for a in args),
    }
