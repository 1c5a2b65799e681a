"""One side of a side-by-side comparison (`bench.ab`, `bench.ir`): code run by another checkout's own kapstan.

Every checkout's `.venv` on the project's machines is a link to main's, whose editable install puts
`/work/main/operator` on `sys.path`, and an engineer's shell exports `PYTHONPATH` for their worktree; a child
that inherits either imports the same kapstan on both sides, and the table compares a checkout with itself.
So each side's child gets `PYTHONPATH=<side>/operator` alone (ahead of the editable install's entry) and runs
as `python -P` (the current directory not on `sys.path`), and before anything else it checks that the
kapstan it imported, and its `_core` extension, are that side's files: if not, it exits naming both paths.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

# Prepended to every child's code; argv[1] is the side's operator/ directory, removed before the code runs.
_CHECK = r"""
import importlib.util, os, sys
_root = os.path.realpath(sys.argv.pop(1))
import kapstan
_spec = importlib.util.find_spec("kapstan._core")
for _what, _file in (("kapstan", kapstan.__file__), ("kapstan._core", _spec and _spec.origin)):
    if _file is not None and not os.path.realpath(_file).startswith(_root + os.sep):
        raise SystemExit(f"this side imported {_what} from {_file}, not from {_root}")
del _root, _spec, _what, _file
"""


class SideError(RuntimeError):
    """A side's child failed; the message carries its stderr."""


def python_of(checkout: Path) -> Path:
    """The checkout's own interpreter, or this one when it has no `.venv`."""
    own = checkout / ".venv" / "bin" / "python"
    return own if own.exists() else Path(sys.executable)


def run(
    checkout: Path, code: str, args: Sequence[str], prefix: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """Run `code` with `args` on the checkout's own kapstan (under `prefix`, e.g. valgrind's argv); its
    output, or a `SideError` with its stderr when it fails."""
    operator = checkout.resolve() / "operator"
    argv = [*prefix, str(python_of(checkout)), "-P", "-c", _CHECK + code, str(operator), *args]
    env = {**os.environ, "PYTHONPATH": str(operator)}
    done = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SideError(f"{checkout}: exit code {done.returncode}\n{done.stderr[-2000:]}")
    return done
