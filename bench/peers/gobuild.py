"""Builds a peer's Go program once and caches the binary under ~/.cache/kapstan/peers/.

The cache key is a hash of the module's sources (go.mod, go.sum, *.go), so an edit rebuilds and nothing
else does. A cold build of Karpenter's scheduler and its Kubernetes dependencies takes minutes on the
project's 2-core machine, so the build time is recorded beside the binary and shown in the report.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("KAPSTAN_CACHE", Path.home() / ".cache" / "kapstan")) / "peers"


@dataclass(frozen=True)
class Binary:
    path: Path
    source_hash: str
    build_seconds: float
    """How long the build that produced this binary took (0 when built before the record existed)."""
    built_now: bool


def source_hash(module: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(p for p in module.iterdir() if p.name in ("go.mod", "go.sum") or p.suffix == ".go")
    for path in files:
        if path.name.endswith("_test.go"):
            continue
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cached(name: str, module: Path | None = None) -> Binary | None:
    """The cached binary for the module's current sources, or None if it has not been built."""
    module = module or HERE / name
    key = source_hash(module)
    path = CACHE / f"{name}-{key}"
    if not path.is_file():
        return None
    record = CACHE / f"{name}-{key}.json"
    seconds = json.loads(record.read_text())["build_seconds"] if record.is_file() else 0.0
    return Binary(path, key, seconds, built_now=False)


def build(name: str, module: Path | None = None) -> Binary:
    """The cached binary, building it first if needed (from the Go module proxy, like any module)."""
    module = module or HERE / name
    found = cached(name, module)
    if found is not None:
        return found
    if shutil.which("go") is None:
        raise RuntimeError(f"building the {name} peer needs the Go toolchain (go) on PATH")
    key = source_hash(module)
    CACHE.mkdir(parents=True, exist_ok=True)
    target = CACHE / f"{name}-{key}"
    partial = target.with_suffix(".partial")
    env = {**os.environ, "CGO_ENABLED": "0"}
    print(f"building the {name} peer (Go, cold builds take minutes on 2 cores) ...", flush=True)
    started = time.perf_counter()
    subprocess.run(["go", "build", "-trimpath", "-o", str(partial), "."], cwd=module, env=env, check=True)
    seconds = time.perf_counter() - started
    partial.rename(target)
    (CACHE / f"{name}-{key}.json").write_text(json.dumps({"build_seconds": round(seconds, 1)}) + "\n")
    print(f"built {target} in {seconds:.0f} s", flush=True)
    return Binary(target, key, seconds, built_now=True)
