"""Batches after the first: the pods a plan put on an in-flight NodeClaim stay on it (issue 14)."""

from __future__ import annotations

import asyncio

from fake_cluster import world

from kapstan.controllers.provisioner import Provisioner
from kapstan.kube.client import Object
from kapstan.kube.kinds import PODS


def _pending(name: str, cpu: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


def _cpu_of(claims: list[Object]) -> list[str]:
    """What each claim was made for: the requests of its pods, which the NodeClaim carries."""
    return [claim["spec"]["resources"]["requests"]["cpu"] for claim in claims]


def test_a_later_batch_plans_only_the_pods_without_a_claim() -> None:
    w = world()  # c3-4: 2 CPU
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    w.api.put(PODS, _pending("small", "1500m"))

    async def batches() -> tuple[list[Object], list[Object]]:
        first = await provisioner.provision()
        # "small" is still pending (its claim is launching) when a bigger pod arrives. Re-planned
        # biggest first, "big" would take the in-flight claim and "small" a new one.
        w.api.put(PODS, _pending("big", "1800m"))
        return first, await provisioner.provision()

    first, second = asyncio.run(batches())
    assert _cpu_of(first) == ["1500m"]
    assert _cpu_of(second) == ["1800m"], "the new claim is for the new pod; small stays on its claim"
