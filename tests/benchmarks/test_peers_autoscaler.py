"""The cluster-autoscaler reimplementation: least-waste on hand-computed cases, the estimator's
predicates, and the one-zone collapse that kube-scheduler's view of topology gives it."""

from __future__ import annotations

import pytest

pytest.importorskip("numpy", reason="the CA simulation needs numpy (pip install -e '.[bench]')")

from bench.catalogs import GB, MI, article_flavors, article_overhead, requests
from bench.peers import autoscaler
from bench.workloads import article_inflate

from kapstan.scheduling.model import (
    HOSTNAME,
    ZONE,
    LabelSelector,
    NodePool,
    Pod,
    PodAffinityTerm,
    Snapshot,
    TopologySpreadConstraint,
)
from kapstan.scheduling.validator import validate

C3_8_PRICE = 4 + 8 * GB / 2**30 / 4


def test_least_waste_takes_c3_8_for_eight_one_cpu_pods() -> None:
    # Templates keep 100m for the node agent: c3-4 holds 1 pod (8 nodes), c3-8 3 (3 nodes), c3-16 7 (2).
    # Waste = unused CPU share + unused memory share of capacity:
    #   c3-4:  (16-8)/16 + (32 GB - 2 GiB)/32 GB = 0.500 + 0.933 = 1.433
    #   c3-8:  (12-8)/12 + (24 GB - 2 GiB)/24 GB = 0.333 + 0.911 = 1.244   <- least
    #   c3-16: (16-8)/16 + (32 GB - 2 GiB)/32 GB = 0.500 + 0.933 = 1.433
    snapshot = article_inflate()
    plan = autoscaler.solve(snapshot)
    assert [c.instance_type for c in plan.node_claims] == ["c3-8"] * 3
    assert sorted(len(c.pods) for c in plan.node_claims) == [2, 3, 3]
    assert plan.total_price_per_hour == pytest.approx(3 * C3_8_PRICE)
    assert validate(snapshot, plan) == []


def test_waste_formula() -> None:
    group = next(g for g in autoscaler.node_groups(article_inflate()) if g.flavor == "c3-8")
    pods = list(article_inflate().pods)
    option = autoscaler._Estimate(group, [object()] * 3, pods)  # type: ignore[list-item]
    expected = (12 - 8) / 12 + (24 * GB - 8 * 256 * MI) / (24 * GB)
    assert autoscaler.waste(option) == pytest.approx(expected)


def _snapshot(pods: list[Pod]) -> Snapshot:
    return Snapshot(
        pods=tuple(pods),
        instance_types=article_flavors(),
        node_pools=(NodePool("default"),),
        daemonsets=article_overhead(),
    )


def test_hostname_anti_affinity_puts_each_pod_on_its_own_node() -> None:
    term = PodAffinityTerm(LabelSelector((("app", "db"),)), HOSTNAME, ("default",))
    pods = [
        Pod("default", f"db-{i}", requests(500, 256 * MI), {"app": "db"}, anti_affinity=(term,))
        for i in range(3)
    ]
    snapshot = _snapshot(pods)
    plan = autoscaler.solve(snapshot)
    assert sorted(len(c.pods) for c in plan.node_claims) == [1, 1, 1]
    # One 500m pod per node wastes least on the smallest flavor.
    assert {c.instance_type for c in plan.node_claims} == {"c3-4"}
    assert validate(snapshot, plan) == []


def test_zone_spread_only_sees_zones_that_have_nodes() -> None:
    # Two zones are on offer, but kube-scheduler's spread counts only domains of existing nodes: the
    # simulation's first node group is in one zone, so every pod lands there. Real CA does the same.
    # (Which zone is the tie-break's: the first node group by name.)
    two_zones = tuple(
        type(it)(
            it.name,
            it.capacity,
            it.allocatable,
            (*it.offerings, type(it.offerings[0])("nova-2", price=it.offerings[0].price)),
            it.labels,
            it.taints,
        )
        for it in article_flavors()
    )
    spread = TopologySpreadConstraint(1, ZONE, "DoNotSchedule", LabelSelector((("app", "web"),)))
    pods = [
        Pod("default", f"web-{i}", requests(1000, 256 * MI), {"app": "web"}, spread=(spread,))
        for i in range(4)
    ]
    snapshot = Snapshot(tuple(pods), two_zones, (NodePool("default"),), daemonsets=article_overhead())
    plan = autoscaler.solve(snapshot)
    assert len({c.zone for c in plan.node_claims}) == 1
    assert any("topology spread" in v for v in validate(snapshot, plan))
