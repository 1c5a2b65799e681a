"""The order the greedy pass takes pods in when a batch leaves CPU or memory out (issue 12, item 9):
biggest first still holds, by what the pods do request, so the plan does not hang on name hashes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from builders import GI, make_flavor, make_pod, snapshot
from kapstan.scheduling import solve
from kapstan.scheduling.model import EPHEMERAL_STORAGE, PODS, Plan, Pod, Snapshot
from kapstan.scheduling.validator import validate


def plan_for(snap: Snapshot, engine: str) -> Plan:
    plan = solve(snap, engine)
    assert validate(snap, plan) == [], validate(snap, plan)
    return plan


def halves(make: Callable[[str, int], Pod], big: int, small: int, count: int) -> list[Pod]:
    """`count` big pods and `count` small ones, each big one and one small one filling a node exactly."""
    return [make(f"big-{i}", big) for i in range(count)] + [make(f"small-{i}", small) for i in range(count)]


def memory_only(name: str, gib: int) -> Pod:
    return make_pod(name, 0, gib * GI)


def storage_only(name: str, gib: int) -> Pod:
    return Pod("default", name, {EPHEMERAL_STORAGE: gib * GI * 1000, PODS: 1000})


def test_pods_without_cpu_requests_are_taken_biggest_memory_first(engine: str) -> None:
    """10 GiB and 6 GiB pods on 16 GiB nodes: biggest first pairs them, 20 nodes; in hash order two
    small pods share a node and strand a big one, 21."""
    flavors = (make_flavor("m16", 4, 16 * GI),)
    plan = plan_for(snapshot(halves(memory_only, 10, 6, 20), flavors=flavors), engine)
    assert len(plan.node_claims) == 20 and plan.unschedulable == {}


def test_pods_without_cpu_or_memory_are_taken_biggest_first_by_their_other_resources(engine: str) -> None:
    flavor = make_flavor("s16", 4, 16 * GI)
    storage = {EPHEMERAL_STORAGE: 16 * GI * 1000}
    flavor = replace(
        flavor, capacity={**flavor.capacity, **storage}, allocatable={**flavor.allocatable, **storage}
    )
    plan = plan_for(snapshot(halves(storage_only, 10, 6, 20), flavors=(flavor,)), engine)
    assert len(plan.node_claims) == 20 and plan.unschedulable == {}
