"""The cluster-autoscaler reimplementation: least-waste on hand-computed cases, the estimator's
predicates, and the one-zone collapse that kube-scheduler's view of topology gives it."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip("numpy", reason="the CA simulation needs numpy (pip install -e '.[bench]')")

from bench.peers import autoscaler
from bench.peers.ca import estimator, groups
from bench.peers.ca.predicates import Cluster

from kapstan.bench.catalogs import (
    GB,
    KARPENTER_ZONES,
    MI,
    article_flavors,
    article_overhead,
    karpenter_flavors,
    karpenter_overhead,
    requests,
)
from kapstan.bench.workloads import NAMESPACE, article_inflate
from kapstan.scheduling.model import (
    CPU,
    HOSTNAME,
    MEMORY,
    ZONE,
    HostPort,
    LabelSelector,
    NodePool,
    Plan,
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
    group = next(g for g in groups.node_groups(article_inflate()) if g.flavor == "c3-8")
    pods = article_inflate().pods
    cpu, memory = sum(p.requests[CPU] for p in pods), sum(p.requests[MEMORY] for p in pods)
    option = estimator.Estimate(group, [object()] * 3, cpu, memory)  # type: ignore[list-item]
    expected = (12 - 8) / 12 + (24 * GB - 8 * 256 * MI) / (24 * GB)
    assert estimator.waste(option) == pytest.approx(expected)


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


# -- the fast paths against the straightforward ones ------------------------------------------------------


def _varied(count: int, seed: int) -> Snapshot:
    """Every predicate the simulation models, mixed with plain pods: zone and hostname spread (one with minDomains, one
    honoring a zone selector), zone self-affinity, hostname affinity to other pods (a lower bound, which
    the first-fit pointers must not skip), hostname anti-affinity, host ports."""
    rng = random.Random(seed)
    web, db = LabelSelector((("app", "web"),)), LabelSelector((("app", "db"),))
    kinds: list[dict[str, Any]] = [
        {},
        {"labels": {"app": "batch"}},  # plain: no rule reads or counts it
        {"labels": {"app": "batch"}},
        {"spread": (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", web, min_domains=2),)},
        {"spread": (TopologySpreadConstraint(1, HOSTNAME, "DoNotSchedule", web),)},
        {
            "spread": (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", web),),
            "node_selector": {ZONE: KARPENTER_ZONES[1]},
        },
        {"affinity": (PodAffinityTerm(web, ZONE, (NAMESPACE,)),)},
        {"affinity": (PodAffinityTerm(db, HOSTNAME, (NAMESPACE,)),)},
        {"anti_affinity": (PodAffinityTerm(db, HOSTNAME, (NAMESPACE,)),), "labels": {"app": "db"}},
        {"host_ports": (HostPort(8080),)},
    ]
    pods = []
    for i in range(count):
        fields = {"labels": {"app": "web"}, **rng.choice(kinds)}
        sizes = requests(rng.choice((250, 500, 1500)), rng.choice((256, 1024, 3072)) * MI)
        pods.append(Pod(NAMESPACE, f"p-{i}", sizes, **fields))
    return Snapshot(
        tuple(pods), karpenter_flavors(12), (NodePool("default"),), daemonsets=karpenter_overhead()
    )


def _claims(plan: Plan) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(c.instance_type, c.zone, c.pods) for c in plan.node_claims]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fast_first_fit_and_spread_minimum_agree_with_full_scans(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every first fit of an estimate (pointers, the shared-template shortcut) is checked against a mask
    # over all of the estimate's rows, and every spread minimum read from the histograms against one
    # recomputed over the nodes.
    fast_fit, fast_minimum = Cluster.first_fit_new, Cluster._minimum
    calls = Counter[str]()

    def checked_fit(self: Any, profile: Any, conditions: Any, start: int, pointers: dict[object, int]) -> Any:
        found = fast_fit(self, profile, conditions, start, pointers)
        assert found is self.first_fit(profile, [*conditions[0], *conditions[1]], start)
        calls["fit"] += 1
        return found

    def checked_minimum(
        self: Any, profile: Any, counter: int, key: int, min_domains: int, filtered: bool
    ) -> int:
        found = fast_minimum(self, profile, counter, key, min_domains, filtered)
        if not filtered:
            assert found == fast_minimum(self, profile, counter, key, min_domains, True)
            calls["minimum"] += 1
        return found

    monkeypatch.setattr(Cluster, "first_fit_new", checked_fit)
    monkeypatch.setattr(Cluster, "_minimum", checked_minimum)
    snapshot = _varied(120, seed)
    plan = autoscaler.solve(snapshot)
    assert calls["fit"] > 1000 and calls["minimum"] > 100
    assert plan.node_claims


@pytest.mark.parametrize("seed", [1, 2])
def test_zone_collapse_gives_the_plan_of_estimating_every_group(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot = _varied(80, seed)
    snapshot = Snapshot(  # no node selector, so groups in zones without nodes are collapsed
        tuple(replace(p, node_selector={}) for p in snapshot.pods),
        snapshot.instance_types,
        snapshot.node_pools,
        daemonsets=snapshot.daemonsets,
    )
    collapsed = autoscaler.solve(snapshot)
    monkeypatch.setattr(autoscaler, "_candidates", lambda groups, pending, cluster: groups)
    assert _claims(autoscaler.solve(snapshot)) == _claims(collapsed)


@pytest.mark.parametrize("seed", [1, 2])
def test_runs_of_plain_pods_place_as_one_by_one(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = _varied(150, seed)
    runs = autoscaler.solve(snapshot)

    def one_by_one(self: Any, first: Any, run: list[Pod]) -> None:
        profiles = {p.pod.key: p for p in self.cluster.profiles}
        for pod in run:
            self.place(profiles[pod.key])

    monkeypatch.setattr(estimator.Estimator, "place_run", one_by_one)
    assert _claims(autoscaler.solve(snapshot)) == _claims(runs)
