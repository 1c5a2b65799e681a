"""`python -m bench.peers --only`: what it measures is merged into OUT/peers.json, the other workloads'
rows kept, and PEERS.md rendered from the merged file. Built on fake results: no peer is run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib", reason="the peers' plots need matplotlib (pip install -e '.[bench]')")
pytest.importorskip("scipy", reason="bench.peers imports the bound's LP (pip install -e '.[bench]')")

from bench.peers import __main__ as peers

from kapstan.bench.workloads import Workload


def _row(workload: str, engine: str, price: float) -> dict[str, Any]:
    return {
        "workload": workload,
        "family": workload.split("-")[0],
        "engine": engine,
        "pods": 200,
        "nodes": 4,
        "unschedulable": 0,
        "price_per_hour": price,
        "cost_ratio": price / 10,
        "median_seconds": 0.5,
        "seconds": [0.5],
        "valid": True,
        "violation_count": 0,
        "skipped": None,
    }


def _payload(commit: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    names = list(dict.fromkeys(r["workload"] for r in rows))
    return {
        "machine": {
            "cores": 2,
            "platform": "linux",
            "python": "3.11",
            "date": f"the day of {commit}",
            "commit": commit,
            "args": "",
        },
        "workloads": {w: {"family": w.split("-")[0], "pods": 200, "description": "fake"} for w in names},
        "bounds": {w: {"best": 10.0} for w in names},
        "results": rows,
    }


@pytest.fixture
def fake_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """measure_all replaced by one that prices every workload it is given at 42/h; the names it got."""
    asked: list[list[str]] = []

    def measure_all(workloads: list[Workload], repeat: int, autoscaler: bool = True) -> dict[str, Any]:
        asked.append([w.name for w in workloads])
        rows = [_row(w.name, engine, 42.0) for w in workloads for engine in ("rust", "karpenter")]
        return _payload("new", rows)

    monkeypatch.setattr(peers, "measure_all", measure_all)
    return asked


def test_only_merges_into_peers_json_and_renders_the_merged_file(
    tmp_path: Path, fake_runs: list[list[str]]
) -> None:
    old_rows = [
        _row(w, engine, 10.0)
        for w in ("mix-1000", "capi-200")
        for engine in ("rust", "karpenter", "cluster-autoscaler")
    ]
    (tmp_path / "peers.json").write_text(json.dumps(_payload("old", old_rows)))

    assert peers.main(["--only", "capi-200", "--out", str(tmp_path)]) == 0
    assert peers.main(["--only", "small-1", "--out", str(tmp_path)]) == 0

    assert fake_runs == [["capi-200"], ["small-1"]]
    merged = json.loads((tmp_path / "peers.json").read_text())
    prices = {(r["workload"], r["engine"]): r["price_per_hour"] for r in merged["results"]}
    assert prices == {
        ("mix-1000", "rust"): 10.0,  # another workload: kept as it was
        ("mix-1000", "karpenter"): 10.0,
        ("mix-1000", "cluster-autoscaler"): 10.0,
        ("capi-200", "rust"): 42.0,  # re-measured: replaced
        ("capi-200", "karpenter"): 42.0,
        ("capi-200", "cluster-autoscaler"): 10.0,  # a system the run did not measure: kept
        ("small-1", "rust"): 42.0,  # a workload the old run did not have: added
        ("small-1", "karpenter"): 42.0,
    }
    # Workloads in the registry's order, whatever order the runs came in.
    assert list(merged["bounds"]) == ["mix-1000", "capi-200", "small-1"]
    assert list(dict.fromkeys(r["workload"] for r in merged["results"])) == list(merged["bounds"])
    assert merged["machine"]["commit"] == "old"
    assert [(m["commit"], m["workloads"], m["systems"]) for m in merged["machine"]["merges"]] == [
        ("new", ["capi-200"], ["rust", "karpenter"]),
        ("new", ["small-1"], ["rust", "karpenter"]),
    ]

    report = (tmp_path / "PEERS.md").read_text()
    assert "at commit `old`" in report
    assert "### mix-1000" in report and "### capi-200" in report and "### small-1" in report
    assert (
        "Merged in afterwards: the rust, karpenter rows of capi-200, measured by "
        "`python -m bench.peers --only capi-200 --out" in report
    )
    # The aims are recomputed over the merged rows: capi-200's now compares 42 with 42 and 10.
    assert "| PASS | kapstan-rust no more expensive than karpenter on capi-200 | 42.00 vs 42.00 /h" in report
    assert (
        "| **MISS** | kapstan-rust no more expensive than cluster-autoscaler on capi-200 | 42.00 vs 10.00"
        in (report)
    )


def test_only_without_a_peers_json_writes_just_its_workloads(
    tmp_path: Path, fake_runs: list[list[str]]
) -> None:
    assert peers.main(["--only", "capi-200", "--out", str(tmp_path)]) == 0
    written = json.loads((tmp_path / "peers.json").read_text())
    assert list(written["bounds"]) == ["capi-200"]
    assert "merges" not in written["machine"]
    assert "Merged in afterwards" not in (tmp_path / "PEERS.md").read_text()
