"""bench.live's per-claim critical path on objects recorded from a 1,000-pod run (three of its claims,
their Machines, Nodes and the pods on them, trimmed by ``critical.trimmed``; one pod never bound)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from bench.live import critical, report

RECORDED = Path(__file__).parent / "data" / "live_critical.json"


def _recorded() -> dict[str, list[Any]]:
    loaded: dict[str, list[Any]] = json.loads(RECORDED.read_text())
    return loaded


def test_each_claims_path_is_read_from_its_machine_node_and_pods() -> None:
    by_claim = {path.claim: path.steps() for path in critical.paths(**_recorded())}
    # Read off the recording by hand: claim 13:06:28, Machine 06:31, Launched 06:32, bootstrap 06:34,
    # Node 07:34, Ready 07:34, Registered 07:41, the last of its 18 pods Ready 07:57.
    assert by_claim["live-16770-0-mpwn4"] == {
        "claim created -> Machine created": 3,
        "Machine created -> Launched": 1,
        "Launched -> bootstrap ready": 2,
        "bootstrap ready -> Node created": 60,
        "Node created -> Node Ready": 0,
        "Node Ready -> Registered": 7,
        "Registered -> pods Running": 16,
    }
    assert by_claim["live-16770-0-27qpg"]["bootstrap ready -> Node created"] == 8


def test_the_summary_gives_each_steps_median_and_maximum_over_the_claims() -> None:
    summary = critical.summary(critical.paths(**_recorded()))
    assert list(summary) == list(critical.STEPS)
    assert summary["claim created -> Machine created"] == {"p50": 3, "max": 15, "claims": 3}
    assert summary["bootstrap ready -> Node created"] == {"p50": 55, "max": 60, "claims": 3}
    assert summary["Registered -> pods Running"] == {"p50": 5, "max": 16, "claims": 3}


def test_a_claim_without_a_machine_or_node_yet_counts_only_the_steps_it_reached() -> None:
    recorded = _recorded()
    recorded["machines"] = [
        m for m in recorded["machines"] if m["metadata"]["name"] != "c3-32-zone-b-qlp44-s8848"
    ]
    for claim in recorded["claims"]:
        if claim["metadata"]["name"] == "live-16770-0-27qpg":
            claim["status"] = {
                "conditions": [c for c in claim["status"]["conditions"] if c["type"] == "Launched"]
            }
    by_claim = {path.claim: path.steps() for path in critical.paths(**recorded)}
    assert "claim created -> Machine created" not in by_claim["live-16770-0-mpwn4"]
    assert by_claim["live-16770-0-mpwn4"]["Node Ready -> Registered"] == 7
    assert list(by_claim["live-16770-0-27qpg"]) == [
        "claim created -> Machine created",
        "Machine created -> Launched",
        "Launched -> bootstrap ready",
    ]
    summary = critical.summary(critical.paths(**recorded))
    assert summary["claim created -> Machine created"]["claims"] == 2


def test_trimming_keeps_what_the_path_reads() -> None:
    recorded = _recorded()
    untrimmed = copy.deepcopy(recorded)
    for machine in untrimmed["machines"]:
        machine["metadata"]["annotations"]["other"] = "x"
        machine["metadata"]["labels"] = {"a": "b"}
        machine["spec"]["bootstrap"] = {"dataSecretName": "s"}
    trimmed = {kind: [critical.trimmed(obj) for obj in objects] for kind, objects in untrimmed.items()}
    assert "labels" not in trimmed["machines"][0]["metadata"]
    assert critical.paths(**trimmed) == critical.paths(**recorded)


def test_the_report_shows_the_critical_path_row() -> None:
    results = json.loads((Path(report.__file__).parents[1] / "live_results.json").read_text())
    run = copy.deepcopy(results[-1])
    run["label"] = "with-critical-path"
    run["scaleUp"]["criticalPath"] = critical.summary(critical.paths(**_recorded()))
    text = report.render([*results, run])
    line = next(line for line in text.splitlines() if line.startswith("| each claim's critical path"))
    cells = [cell.strip() for cell in line.strip("|").split("|")[1:]]
    assert cells[-1].startswith(
        "claim created -> Machine created 3 / 15 s; Machine created -> Launched 1 / 10 s"
    )
    assert "bootstrap ready -> Node created 55 / 60 s" in cells[-1]
    assert cells[0] == "not recorded"
