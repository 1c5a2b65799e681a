"""bench.ab and bench.ir compare two checkouts: each side must run its own kapstan, whatever PYTHONPATH and
the shared venv's editable install (main's operator/) say."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from bench import ab, sides

# A kapstan whose every plan costs its checkout's identity, solving in the seconds its engine names, with the modules bench.ab's child imports.
_FAKE = {
    "__init__.py": "IDENTITY = {identity}\n",
    "bench/__init__.py": "",
    "bench/workloads.py": (
        "class _W:\n    pods = 3\n    def build(self):\n        return None\n"
        "WORKLOADS = {{'article-3cpu': _W()}}\n"
    ),
    "scheduling/__init__.py": (
        "from types import SimpleNamespace\nimport time\nimport kapstan\n"
        "def solve(snapshot, engine):\n    time.sleep(float(engine))  # the engine names how long a solve takes\n"
        "    return SimpleNamespace(node_claims=[], existing_nodes={{}}, unschedulable={{}},\n"
        "                           total_price_per_hour=float(kapstan.IDENTITY))\n"
    ),
    "scheduling/validator.py": "def validate(snapshot, plan):\n    return []\n",
}


def _checkout(root: Path, identity: int | None) -> Path:
    """A checkout linked to this venv, as every worktree's .venv links main's; its kapstan reports
    `identity` (none at all when None)."""
    root.mkdir()
    (root / ".venv").symlink_to(Path(sys.prefix))
    package = root / "operator" / "kapstan"
    package.mkdir(parents=True)
    if identity is not None:
        for name, text in _FAKE.items():
            (package / name).parent.mkdir(parents=True, exist_ok=True)
            (package / name).write_text(text.format(identity=identity))
    return root


def test_each_side_solves_with_its_own_kapstan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _checkout(tmp_path / "a", 1), _checkout(tmp_path / "b", 2)
    # The engineer's shell points at one checkout (here a), as the worktree set-up exports it.
    monkeypatch.setenv("PYTHONPATH", str(a / "operator"))
    assert ab._run(a, "article-3cpu", "0", 2, True)["price"] == 1.0
    assert ab._run(b, "article-3cpu", "0", 2, True)["price"] == 2.0


def test_a_side_that_imports_another_kapstan_fails_naming_it(tmp_path: Path) -> None:
    empty = _checkout(tmp_path / "empty", None)
    with pytest.raises(sides.SideError, match=r"imported kapstan from .* not from .*empty"):
        sides.run(empty, "print('ran')", [])


def test_short_solves_are_timed_in_batches_and_long_ones_alone(tmp_path: Path) -> None:
    side = _checkout(tmp_path / "a", 1)
    short = ab._run(side, "article-3cpu", "0", 3, False, batch=0.05)
    batches, seconds = short["batches"], short["seconds"]
    assert isinstance(batches, list) and isinstance(seconds, list) and len(batches) == 3
    for solves, wall in zip(batches, seconds, strict=True):
        assert solves > 10
        assert solves * wall >= 0.05
    long = ab._run(side, "article-3cpu", "0.06", 2, False, batch=0.05)
    seconds, cpu = long["seconds"], long["cpu"]
    assert long["batches"] == [1, 1]
    assert isinstance(seconds, list) and all(s >= 0.06 for s in seconds)
    # A sleeping solve uses no CPU: the CPU column is the process's time, not the wall clock's.
    assert isinstance(cpu, list) and all(c < 0.01 for c in cpu)
