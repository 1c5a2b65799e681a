"""PEERS.md's verdicts: speed as a ratio of medians (a lower bound when Karpenter was stopped), cost
against each peer with the margin, the CAPI bound; and the small instances' exact optimum."""

from __future__ import annotations

from typing import Any

import pytest
from bench.peers.report import render, verdicts


def _row(workload: str, engine: str, price: float, seconds: float | None, **extra: Any) -> dict[str, Any]:
    return {
        "workload": workload,
        "family": workload.split("-")[0],
        "engine": engine,
        "pods": 5000,
        "nodes": 10,
        "unschedulable": 0,
        "price_per_hour": price,
        "cost_ratio": price / 100,
        "median_seconds": seconds,
        "seconds": [seconds] if seconds else [],
        "valid": True,
        "violation_count": 0,
        "skipped": None,
        **extra,
    }


def _payload(results: list[dict[str, Any]]) -> dict[str, Any]:
    names = list(dict.fromkeys(r["workload"] for r in results))
    return {
        "machine": {"cores": 2, "platform": "linux", "python": "3.11", "date": "today", "commit": "abc"},
        "workloads": {w: {"family": w.split("-")[0], "pods": 5000, "description": "test"} for w in names},
        "bounds": {w: {"best": 100.0} for w in names},
        "results": results,
    }


def _by_aim(payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["aim"]: v for v in verdicts(payload)}


def test_speed_is_karpenters_median_over_kapstans() -> None:
    payload = _payload(
        [
            _row("mix-5000", "rust", 110.0, 0.25),
            _row("mix-5000", "karpenter", 120.0, 85.0),
            _row("mix-5000", "cluster-autoscaler", 105.0, None),
        ]
    )
    aims = _by_aim(payload)
    speed = aims["kapstan-rust at least 20x Karpenter's pods/s on mix-5000"]
    assert speed["status"] == "PASS" and speed["value"] == pytest.approx(340)
    assert aims["kapstan-rust no more expensive than karpenter on mix-5000"]["status"] == "PASS"
    cost = aims["kapstan-rust no more expensive than cluster-autoscaler on mix-5000"]
    assert cost["status"] == "MISS" and "4.8% more expensive" in cost["detail"]


def test_a_stopped_karpenter_gives_a_ratio_of_at_least_its_cap() -> None:
    stopped = _row("mix-20000", "karpenter", 0.0, None, skipped="stopped", stopped_after=900.0)
    payload = _payload([_row("mix-20000", "rust", 400.0, 1.5), stopped])
    speed = _by_aim(payload)["kapstan-rust at least 20x Karpenter's pods/s on mix-20000"]
    assert speed["status"] == "PASS" and speed["value"] == pytest.approx(600)
    assert speed["detail"].startswith("at least 600x")
    payload["aims"] = verdicts(payload)
    assert "| mix-20000 | 100.00 | 4.000 | stopped |" in render(payload)


def test_small_instance_optimum_is_exact() -> None:
    pytest.importorskip("scipy", reason="the MIP needs scipy (pip install -e '.[bench]')")
    from bench.peers.optimum import optimum

    from kapstan.bench.catalogs import flavor, karpenter_overhead, requests
    from kapstan.scheduling.model import NodePool, Pod, Snapshot

    # Three 1-CPU pods; 100m goes to the overhead: a 2-CPU flavor holds one, a 4-CPU flavor all three.
    flavors = (flavor("two", 2, 4 << 30, 1.0, ("z",)), flavor("four", 4, 8 << 30, 1.5, ("z",)))
    pods = tuple(Pod("ns", f"p{i}", requests(1000, 1 << 20)) for i in range(3))
    snapshot = Snapshot(pods, flavors, (NodePool("default"),), daemonsets=karpenter_overhead())
    found = optimum(snapshot)
    assert found.proven and found.cost == pytest.approx(1.5)
