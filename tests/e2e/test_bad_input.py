"""Bad input gets a clear message where the user looks, and no churn: a NodePool without its NodeClass,
an MD without a capacity source, a pod no flavor can hold, a node that never registers."""

from __future__ import annotations

import asyncio
import time

import pytest
from e2e_helpers import E2E

from kapstan.capi import contract as c
from kapstan.kube.events import list_events
from kapstan.kube.kinds import NODEPOOLS, PODS
from kapstan.local import article

pytestmark = pytest.mark.sandbox


def _condition(obj: dict, kind: str) -> dict | None:
    return next(
        (cond for cond in obj.get("status", {}).get("conditions") or [] if cond["type"] == kind), None
    )


def test_a_nodepool_without_its_nodeclass_is_not_ready_and_provisions_nothing(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"pool": "c3-8"}),
            [article.deployment("inflate", ns, run.id, 2, "1")],
            node_class=False,
        )
    )
    run.start_operator()

    async def not_ready() -> dict | None:
        pool = await run.clients[0].get(NODEPOOLS, run.pool)
        found = _condition(pool, "NodeClassReady")
        return found if found and found["status"] == "False" else None

    condition = e2e(run.wait_for("NodeClassReady=False", not_ready, 60))
    assert run.pool in condition["message"]  # the NodeClass is named after the pool in these runs
    e2e(asyncio.sleep(15))  # several batch windows
    assert e2e(run.claims()) == []
    assert e2e(run.machines()) == []


def test_an_md_without_capacity_is_left_out_with_an_event_and_the_others_still_provision(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    objects = article.standalone(ns, run.cluster, {"good": "c3-8", "bare": "c3-16"})
    for obj in objects:
        if obj["metadata"]["name"] == "bare":
            if obj["kind"] == "MachineDeployment":
                obj["metadata"]["annotations"] = {}
            if obj["kind"] == "TestMachineTemplate":
                obj["spec"]["template"]["spec"]["capacity"] = {}
    e2e(run.setup(objects, [article.deployment("inflate", ns, run.id, 1, "1")]))
    run.start_operator()

    async def running() -> bool:
        return await run.running_pods("inflate") == 1

    e2e(run.wait_for("the pod Running on the good flavor", running, 180))
    assert {c.labels_of(m)[c.DEPLOYMENT_NAME_LABEL] for m in e2e(run.machines())} == {"good"}
    bare = e2e(run.clients[1].get(c.MACHINEDEPLOYMENTS, "bare", ns))

    async def flavor_event() -> list[dict]:
        events = await list_events(run.clients[0], bare)
        return [e for e in events if e["reason"] == "FlavorUnavailable"]

    events = e2e(run.wait_for("an Event on the MD without capacity", flavor_event, 30))
    assert "capacity.cluster-autoscaler.kubernetes.io/cpu" in events[0]["message"]
    assert "capacity.cluster-autoscaler.kubernetes.io/memory" in events[0]["message"]


def test_a_pod_no_flavor_can_hold_gets_an_event_and_no_nodeclaim_for_two_minutes(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"c3-4": "c3-4", "c3-16": "c3-16"}),
            [article.deployment("huge", ns, run.id, 1, "64")],
        )
    )
    run.start_operator()

    async def failed_scheduling() -> list[dict]:
        pods = (
            await run.clients[0].request("GET", PODS, namespace=ns, params={"labelSelector": "app=huge"})
        )["items"]
        if not pods:
            return []
        events = await list_events(run.clients[0], pods[0])
        return [
            e
            for e in events
            if e["reason"] == "FailedScheduling" and e["source"].get("component") == "kapstan"
        ]

    events = e2e(run.wait_for("kapstan's Event on the pod", failed_scheduling, 60))
    assert "no flavor fits" in events[0]["message"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert e2e(run.claims()) == [], run.report()
        e2e(asyncio.sleep(5))
    assert e2e(run.machines()) == []


def test_a_node_that_never_registers_times_out_and_its_machine_goes(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"slow": "c3-8"}, boot_delay_seconds=3600),
            [article.deployment("inflate", ns, run.id, 1, "1")],
        )
    )
    run.start_operator("--registration-timeout", "8")

    async def first_claim() -> list[dict]:
        return [claim for claim in await run.claims() if _condition(claim, "Launched")]

    claim = e2e(run.wait_for("a launched NodeClaim", first_claim, 120))[0]
    machine = claim["metadata"]["annotations"]["kapstan.io/machine"].partition("/")[2]

    async def gone() -> bool:
        names = {cl["metadata"]["name"] for cl in await run.claims()}
        machines = {c.name(m) for m in await run.machines()}
        return claim["metadata"]["name"] not in names and machine not in machines

    e2e(run.wait_for("the claim and its Machine gone", gone, 120))

    async def unhealthy() -> dict | None:
        pool = await run.clients[0].get(NODEPOOLS, run.pool)
        found = _condition(pool, "NodeRegistrationHealthy")
        return found if found and found["status"] == "False" else None

    condition = e2e(run.wait_for("NodeRegistrationHealthy=False", unhealthy, 30))
    assert condition["reason"] == "RegistrationTimeout"
    assert claim["metadata"]["name"] in condition["message"]
