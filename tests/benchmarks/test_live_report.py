"""bench/LIVE.md's rendering of the steady-state phase and of the scale-down's 300 s target, on the
committed results plus one run that has the phase."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from bench.live import report

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "live_results.json"


def _row(text: str, name: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| {name} |"))
    return [cell.strip() for cell in line.strip("|").split("|")[1:]]


def test_runs_without_a_steady_phase_say_so_and_one_with_it_shows_its_figures() -> None:
    committed = [r for r in json.loads(RESULTS.read_text()) if "steady" not in r]
    run = copy.deepcopy([r for r in committed if r["scaleDown"] is not None][-1])
    run["label"] = "with-steady"
    run["scaleDown"].update({"settled": True, "settleSeconds": 150.0, "quietSeconds": 120})
    accounting = {"nodeClaims": 31, "machines": 31, "nodes": 31, "replicas": 31, "exact": True}
    run["steady"] = {
        "seconds": 1800.2,
        "commands": [],
        "claimsRemoved": 0,
        "claimsCreated": 1,
        "requests": {"evictions": 0},
        "longestPendingSeconds": 4.0,
        "price": 20.1,
        "accounting": {**accounting, "waitedSeconds": 6.2},
    }
    text = report.render([*committed, run])
    assert _row(text, "steady state: NodeClaims removed / created")[-2:] == ["not run", "0 / 1"]
    assert _row(text, "steady state: accounting at the end")[-1] == "31 / 31 / 31 / 31 exact (after 6 s)"
    assert _row(text, "scale-down: quiet within 300 s (last change + quiet time)")[-1] == "yes (270 s)"
    run["scaleDown"]["settleSeconds"] = 200.0
    text = report.render([*committed, run])
    assert _row(text, "scale-down: quiet within 300 s (last change + quiet time)")[-1] == "no (320 s)"
