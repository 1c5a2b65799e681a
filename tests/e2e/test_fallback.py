"""A NodeClaim carries ranked fallback flavors: when the chosen MD is at its max size, the launch takes
the next one instead of failing the pods."""

from __future__ import annotations

import pytest
from e2e_helpers import E2E

from kapstan.capi import contract as c
from kapstan.kube.events import list_events
from kapstan.local import article

pytestmark = pytest.mark.sandbox


def test_a_full_md_makes_the_launch_fall_back_to_the_next_cheapest_flavor(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    objects = article.standalone(ns, run.cluster, {"c3-4": "c3-4", "c3-8": "c3-8", "c3-16": "c3-16"})
    for obj in objects:
        if obj["kind"] == "MachineDeployment" and obj["metadata"]["name"] == "c3-4":
            obj["metadata"]["annotations"][c.MAX_SIZE_ANNOTATION] = "0"
    e2e(run.setup(objects, [article.deployment("inflate", ns, run.id, 1, "1")]))
    run.start_operator()

    async def running() -> bool:
        return await run.running_pods("inflate") == 1

    e2e(run.wait_for("the pod Running", running, 180))
    [claim] = e2e(run.claims())
    requirement = next(
        r for r in claim["spec"]["requirements"] if r["key"] == "node.kubernetes.io/instance-type"
    )
    assert requirement["values"][:3] == ["c3-4", "c3-8", "c3-16"]  # chosen, then cheapest first
    assert claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "c3-8"
    assert {c.labels_of(m)[c.DEPLOYMENT_NAME_LABEL] for m in e2e(run.machines())} == {"c3-8"}
    assert c.replicas(e2e(run.clients[1].get(c.MACHINEDEPLOYMENTS, "c3-4", ns))) == 0
    reasons = [event["reason"] for event in e2e(list_events(run.clients[0], claim))]
    assert "FlavorFallback" in reasons
