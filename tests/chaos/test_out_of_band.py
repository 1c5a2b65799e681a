"""What someone (or a MachineHealthCheck) does under kapstan: a Machine deleted, a Node deleted, an MD scaled
up by hand. Each ends with the pods Running on capacity kapstan owns and no leaked replica or Machine."""

from __future__ import annotations

import pytest

from chaos.chaos_helpers import figure, leaks, machine_of, node_exists, running_pods, seconds_until
from chaos.report import record
from e2e.e2e_helpers import E2E
from kapstan.capi import contract as c
from kapstan.kube.kinds import NODES
from kapstan.local import article

pytestmark = [pytest.mark.sandbox, pytest.mark.chaos]

RECOVERY = 120.0
"""The issue's bar: claim and Node gone, pods Running on new capacity, within 2 minutes."""
SETTLE = 180.0
"""How long the cluster gets to reach replicas == Machines, all claimed, after recovering."""


def _one_pod_running(e2e: E2E) -> dict[str, str]:
    """A c3-8 MD, one pod Running on a node kapstan launched; returns the claim, its Node and Machine."""
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"pool": "c3-8"}),
            [article.deployment("inflate", ns, run.id, 1, "1")],
        )
    )
    run.start_operator()

    async def running() -> bool:
        return len(await running_pods(run, "inflate")) == 1

    e2e(run.wait_for("the pod Running", running, 180))
    [claim] = e2e(run.claims())
    return {
        "claim": claim["metadata"]["name"],
        "node": claim["status"]["nodeName"],
        "machine": machine_of(claim),
    }


def _recovered(e2e: E2E, before: dict[str, str]) -> float | None:
    """Seconds until the old claim and Node are gone and the pod Runs on another node."""
    run = e2e.run

    async def check() -> bool:
        if before["claim"] in {claim["metadata"]["name"] for claim in await run.claims()}:
            return False
        if await node_exists(run, before["node"]):
            return False
        pods = await running_pods(run, "inflate")
        return len(pods) == 1 and pods[0]["spec"]["nodeName"] != before["node"]

    return e2e(seconds_until(check, RECOVERY + 60))


def _settled(e2e: E2E) -> list[str]:
    async def clean() -> bool:
        return not await leaks(e2e.run)

    e2e(seconds_until(clean, SETTLE))
    return e2e(leaks(e2e.run))


def test_a_machine_deleted_out_of_band_is_replaced_within_2_minutes(chaos: E2E) -> None:
    run = chaos.run
    before = _one_pod_running(chaos)
    chaos(run.clients[1].delete(c.MACHINES, before["machine"], run.namespace))
    seconds = _recovered(chaos, before)
    left = _settled(chaos)
    passed = seconds is not None and seconds <= RECOVERY and not left
    record(
        "Machine deleted out of band",
        "claim and Node gone, pod Running on a new node within 120 s; then replicas == Machines, all claimed",
        f"{figure(seconds, RECOVERY + 60)}; {'; '.join(left) or 'no leak'}",
        passed,
    )
    assert seconds is not None and seconds <= RECOVERY, f"recovered after {figure(seconds, RECOVERY + 60)}"
    assert not left


def test_a_node_deleted_out_of_band_is_replaced_within_2_minutes(chaos: E2E) -> None:
    run = chaos.run
    before = _one_pod_running(chaos)
    chaos(run.clients[0].delete(NODES, before["node"]))
    seconds = _recovered(chaos, before)
    left = _settled(chaos)
    machines = {c.name(m) for m in chaos(run.machines())}
    passed = seconds is not None and seconds <= RECOVERY and not left and before["machine"] not in machines
    record(
        "Node deleted out of band",
        "claim gone, its Machine removed, pod Running on a new node within 120 s; replicas == Machines",
        f"{figure(seconds, RECOVERY + 60)}; {'; '.join(left) or 'no leak'}",
        passed,
    )
    assert seconds is not None and seconds <= RECOVERY, f"recovered after {figure(seconds, RECOVERY + 60)}"
    assert not left
    assert before["machine"] not in machines  # the Node's Machine went with its claim


def test_a_replica_added_by_hand_is_removed_and_the_claimed_machine_kept(chaos: E2E) -> None:
    run = chaos.run
    ns = run.namespace
    before = _one_pod_running(chaos)
    _, mgmt = run.clients
    md = chaos(mgmt.get(c.MACHINEDEPLOYMENTS, "pool", ns))
    chaos(
        mgmt.patch(
            c.MACHINEDEPLOYMENTS,
            "pool",
            {"spec": {"replicas": c.replicas(md) + 1}},
            namespace=ns,
            subresource="scale",
        )
    )

    async def extra_machine() -> bool:
        return len(await run.machines()) == 2

    chaos(run.wait_for("the hand-made Machine", extra_machine, 60))

    async def removed() -> bool:
        machines = await run.machines()
        md = await mgmt.get(c.MACHINEDEPLOYMENTS, "pool", ns)
        return c.replicas(md) == 1 and [c.name(m) for m in machines] == [before["machine"]]

    seconds = chaos(seconds_until(removed, SETTLE))
    pods = chaos(running_pods(run, "inflate"))
    kept = len(pods) == 1 and pods[0]["spec"]["nodeName"] == before["node"]
    left = chaos(leaks(run))
    record(
        "MD scaled up by hand",
        "the unclaimed Machine removed exactly (replicas back), the claimed one and its pod untouched",
        f"removed after {figure(seconds, SETTLE)}; {'pod kept' if kept else 'pod moved'}; "
        f"{'; '.join(left) or 'no leak'}",
        seconds is not None and kept and not left,
    )
    assert seconds is not None, f"the hand-made replica was not removed within {SETTLE:.0f}s"
    assert kept
    assert not left
