"""The article's scenarios and the priced and limited ones, from real manifests through `kapstan simulate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kapstan.api.manifests import load_manifests, load_text
from kapstan.cli import main
from kapstan.scheduling import solve
from kapstan.scheduling.model import Plan
from kapstan.scheduling.validator import validate
from kapstan.snapshot import build_snapshot

SCENARIOS = Path(__file__).parent / "scenarios"
CATALOGS = ["article-catalog-mds.yaml", "article-catalog-clusterclass.yaml"]


def plan_of(engine: str, *files: str) -> Plan:
    snapshot = build_snapshot(load_manifests([SCENARIOS / f for f in files]))
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == []
    return plan


def flavors(plan: Plan) -> list[str]:
    return sorted(c.instance_type for c in plan.node_claims)


@pytest.mark.parametrize("catalog", CATALOGS)
def test_eight_one_cpu_pods_take_one_c3_16_and_one_c3_4(engine: str, catalog: str) -> None:
    plan = plan_of(engine, catalog, "inflate-8x1cpu.yaml")
    assert flavors(plan) == ["c3-16", "c3-4"]
    assert plan.unschedulable == {}


@pytest.mark.parametrize("catalog", CATALOGS)
def test_one_three_cpu_pod_takes_c3_8(engine: str, catalog: str) -> None:
    assert flavors(plan_of(engine, catalog, "one-3cpu-pod.yaml")) == ["c3-8"]


@pytest.mark.parametrize("catalog", CATALOGS)
def test_anti_affine_pair_takes_two_c3_4(engine: str, catalog: str) -> None:
    plan = plan_of(engine, catalog, "inflate-anti-affinity.yaml")
    assert flavors(plan) == ["c3-4", "c3-4"]
    assert {len(c.pods) for c in plan.node_claims} == {1}


def test_priced_flavors_cost_19_where_first_fit_pays_20_5(engine: str) -> None:
    plan = plan_of(engine, "priced-catalog.yaml", "priced-10x2cpu.yaml")
    assert plan.total_price_per_hour == pytest.approx(19.0)
    assert sorted(len(c.pods) for c in plan.node_claims) == [2, 2, 3, 3]


def test_limits_cap_new_capacity_and_name_the_limit(engine: str) -> None:
    files = [SCENARIOS / "limits-30x1cpu.yaml"]
    snapshot = build_snapshot(load_manifests(files))
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == []
    capacity = {it.name: it.capacity["cpu"] for it in snapshot.instance_types}
    assert sum(capacity[c.instance_type] for c in plan.node_claims) <= 20_000
    placed = sum(len(c.pods) for c in plan.node_claims)
    assert placed + len(plan.unschedulable) == 30
    assert plan.unschedulable
    assert all("cpu limit 20" in reason for reason in plan.unschedulable.values())


def test_simulate_json_follows_the_interface(engine: str) -> None:
    args = ["simulate", "-f", str(SCENARIOS / CATALOGS[0]), "-f", str(SCENARIOS / "inflate-8x1cpu.yaml")]
    result = CliRunner().invoke(main, [*args, "--engine", engine, "--output", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) == {
        "engine",
        "nodeClaims",
        "existingNodes",
        "unschedulable",
        "totalPricePerHour",
        "solveSeconds",
    }
    assert out["engine"] == engine
    pods = sorted(p for claim in out["nodeClaims"] for p in claim["pods"])
    assert pods == sorted(f"default/inflate-{i}" for i in range(8))
    assert {"nodePool", "instanceType", "pricePerHour", "pods"} <= set(out["nodeClaims"][0])


def test_simulate_table_names_the_engine_and_the_flavors() -> None:
    args = ["simulate", "-f", str(SCENARIOS / CATALOGS[0]), "-f", str(SCENARIOS / "one-3cpu-pod.yaml")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "engine:" in result.output and "c3-8" in result.output


POD_LEVEL_3CPU = """
apiVersion: v1
kind: Pod
metadata: {name: pod-level}
spec:
  resources: {requests: {cpu: "3"}}
  containers:
    - {name: a, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 500m, memory: 256Mi}}}
    - {name: b, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 500m, memory: 256Mi}}}
"""


def test_pod_level_requests_size_the_node(engine: str) -> None:
    # The containers ask 1 CPU (a c3-4); the pod asks 3 CPU at pod level, which kube-scheduler uses.
    catalog = (SCENARIOS / "article-catalog-mds.yaml").read_text()
    snapshot = build_snapshot(load_text(catalog + "\n---\n" + POD_LEVEL_3CPU))
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == []
    assert flavors(plan) == ["c3-8"]


@pytest.mark.parametrize(
    ("catalog", "marker"),
    [
        ("article-catalog-mds.yaml", 'node.cluster.x-k8s.io/karpenter-member: ""'),
        ("article-catalog-clusterclass.yaml", 'kapstan.io/managed: "true"'),
    ],
)
def test_an_unmarked_catalog_says_how_to_mark_a_flavor(engine: str, catalog: str, marker: str) -> None:
    """Issue 12 item 11: with nothing marked managed, every pod says what would give kapstan a flavor, not
    that no flavor matches its requirements."""
    text = (SCENARIOS / catalog).read_text().replace(marker, "example.com/unrelated: x")
    snapshot = build_snapshot(load_text(text + "\n---\n" + (SCENARIOS / "inflate-8x1cpu.yaml").read_text()))
    assert snapshot.instance_types == ()
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == []
    assert len(plan.unschedulable) == 8 and plan.node_claims == ()
    for reason in plan.unschedulable.values():
        assert reason.startswith("kapstan manages no flavor yet")
        assert "node.cluster.x-k8s.io/karpenter-member" in reason and 'kapstan.io/managed: "true"' in reason
