"""The sandbox build cache is shared by every checkout on a machine: a build drops only the others' builds
that nobody has used for a day, never one another checkout is running from."""

from __future__ import annotations

import os
from pathlib import Path

from kapstan.local.build import UNUSED_FOR, _prune


def _build(root: Path, name: str, used_ago: float, now: float, *, complete: bool = True) -> Path:
    path = root / name
    (path / "bin").mkdir(parents=True)
    stamp = path / "complete" if complete else path
    if complete:
        stamp.write_text("1s\n")
    os.utime(stamp, (now - used_ago, now - used_ago))
    return path


def test_a_build_keeps_the_builds_used_lately_and_drops_the_stale_ones(tmp_path: Path) -> None:
    now = 1_000_000_000.0
    day = UNUSED_FOR
    mine = _build(tmp_path, "k8s_mine", 0, now)
    other_branch = _build(tmp_path, "k8s_other", 60, now)
    stale = _build(tmp_path, "k8s_stale", day + 60, now)
    building = _build(tmp_path, "k8s_next.partial", 30, now, complete=False)
    abandoned = _build(tmp_path, "k8s_old.partial", day + 60, now, complete=False)
    (tmp_path / ".lock").write_text("")
    _prune(mine, now)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".lock", mine.name, other_branch.name, building.name]
    )
    assert not stale.exists() and not abandoned.exists()
