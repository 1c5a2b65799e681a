"""``kapstan demo``, the main job of the README's two commands, run as a user runs it: a process with a
sandbox of its own, both acts, the teardown. The e2e tests check each flow in depth on the session's
sandbox; this one holds the command to the story the README's "The demo" tells, which nothing else runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_fixture import skip_unless_sandbox

pytestmark = pytest.mark.sandbox


def _lines(text: str, pattern: str) -> list[str]:
    return [line for line in text.splitlines() if re.search(pattern, line)]


def test_kapstan_demo_runs_both_acts_and_tears_its_sandbox_down(tmp_path: Path) -> None:
    skip_unless_sandbox()
    # -P: the current directory is not on sys.path, as the console script runs it.
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "kapstan", "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out, err = proc.stdout, proc.stderr
    assert proc.returncode == 0, f"stdout:\n{out}\nstderr:\n{err}"
    # The build (or the cache hit) is reported once, not again when the sandbox starts.
    assert len(_lines(err, r"^\[kapstan build\] (cached|done in)")) == 1, err

    act1, act2 = out.split("== Act 2")
    assert len(_lines(act1, r"NodeClaim article-\S+ created \(c3-4\)$")) == 2, act1
    assert _lines(act1, r"MachineDeployment capi-ovh-karpenter bootstrap template "), act1
    # One scale write per claim or one for both, as the two creates and the MD cache interleave.
    assert _lines(act1, r"MachineDeployment capi-ovh-karpenter replicas [01] -> 2$"), act1
    assert _lines(act1, r"pods Running 2/2$"), act1
    # One empty node at a time, as the line before says: the default budget (10% of 2 nodes) is one.
    scale_down = act1.split("deleting inflate")[1]
    steps = _lines(scale_down, r"MachineDeployment capi-ovh-karpenter replicas \d -> \d$")
    assert [line.split("replicas ")[1] for line in steps] == ["2 -> 1", "1 -> 0"], act1

    assert _lines(act2, r"pods Running 8/8$"), act2
    assert "kapstan chose 1 x c3-16, 1 x c3-4;" in act2, act2
    assert out.rstrip().endswith("tearing the sandbox down"), out
    started = _lines(out, r"^starting the sandbox in ")
    assert len(started) == 1, out
    directory = Path(started[0].split()[4])
    assert not directory.exists(), f"{directory} is left behind"
