"""A flavor whose MachineSet preflight checks hold Machine creation (issue 15). Its MD is a Kubernetes minor
ahead of the control plane, so CAPI v1.14's ``KubernetesVersionSkew`` and ``KubeadmVersionSkew`` checks
fail and its MachineSet creates nothing, saying so on its own ``ScalingUp`` condition. The launch falls back
to the next flavor at once (not at the 30 s launch timeout), the held MD keeps 0 replicas, and the offering
is off for one minute; once the control plane is upgraded to that version (the hold ends), a new pod's node
is of the held flavor again."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

from chaos.chaos_helpers import figure, leaks, running_pods, seconds_until
from chaos.report import record
from e2e.e2e_helpers import E2E
from kapstan.api.wellknown import INSTANCE_TYPE, OFFERINGS_AVAILABLE
from kapstan.capi import contract as c
from kapstan.controllers import conditions as cond
from kapstan.controllers import offering_records
from kapstan.kube.client import Resource
from kapstan.kube.kinds import NODEPOOLS
from kapstan.local import article
from kapstan.local.manifests import TEST_CONTROL_PLANES, a_minor_ahead
from kapstan.local.run import KapstanRun

pytestmark = [pytest.mark.sandbox, pytest.mark.chaos]

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
LAUNCH_TIMEOUT = 30.0
RUNNING = 180.0


def _launch_seconds(claim: dict[str, Any]) -> float | None:
    """From the claim's creation to its Launched condition (both to the second), so what a loaded machine
    adds to the pod's boot does not count."""
    launched = cond.find(claim, "Launched") or {}
    start = cond.parse_time(claim["metadata"].get("creationTimestamp"))
    end = cond.parse_time(launched.get("lastTransitionTime")) if launched.get("status") == "True" else None
    return (end - start).total_seconds() if start and end else None


async def _flavors(run: KapstanRun) -> list[str]:
    return sorted(claim["metadata"]["labels"].get(INSTANCE_TYPE, "?") for claim in await run.claims())


def test_a_preflight_hold_falls_back_at_once_and_the_flavor_returns_after_the_upgrade(chaos: E2E) -> None:
    run = chaos.run
    ns = run.namespace
    wl, mgmt = run.clients
    ahead = a_minor_ahead()
    held = article.flavor_pool("held", ns, run.cluster, "c3-4")
    for obj in held:
        if obj["kind"] == "MachineDeployment":
            obj["spec"]["template"]["spec"]["version"] = ahead
    objects = [
        *article.standalone(ns, run.cluster, {}),
        *held,
        *article.flavor_pool("good", ns, run.cluster, "c3-8"),
    ]
    inflate = article.deployment("inflate", ns, run.id, 1, "1", anti_affinity=True)
    chaos(run.setup(objects, [inflate]))
    run.start_operator("--launch-timeout", f"{LAUNCH_TIMEOUT:.0f}")

    async def running(count: int) -> bool:
        return len(await running_pods(run, "inflate")) == count

    ran = chaos(seconds_until(lambda: running(1), RUNNING))
    [claim] = chaos(run.claims())
    fell_back = _launch_seconds(claim)
    first = chaos(_flavors(run))
    held_replicas = c.replicas(chaos(mgmt.get(c.MACHINEDEPLOYMENTS, "held", ns)))
    available = cond.find(chaos(wl.get(NODEPOOLS, run.pool)), OFFERINGS_AVAILABLE) or {}
    said = "preflight check failed" in str(available.get("message"))
    records = offering_records.parse(chaos(wl.get(NODEPOOLS, run.pool)))
    windows = [(r.until, r.failures) for key, r in records.items() if key[0] == "c3-4"]

    # The hold ends: the control plane reaches the MD's version. Once the minute is over, a second pod
    # (one a node) is planned onto c3-4 again, and CAPI now creates its Machine.
    chaos(mgmt.patch(TEST_CONTROL_PLANES, run.cluster, {"spec": {"version": ahead}}, namespace=ns))
    if windows:
        left = (windows[0][0] - datetime.datetime.now(datetime.UTC)).total_seconds()
        chaos(asyncio.sleep(max(0.0, left) + 2.0))
    chaos(wl.patch(DEPLOYMENTS, "inflate", {"spec": {"replicas": 2}}, namespace=ns))
    returned = chaos(seconds_until(lambda: running(2), RUNNING))
    second = chaos(_flavors(run))

    async def clean() -> bool:
        return not await leaks(run)

    chaos(seconds_until(clean, 90))
    leaked = chaos(leaks(run))
    passed = (
        ran is not None
        and fell_back is not None
        and fell_back < LAUNCH_TIMEOUT
        and first == ["c3-8"]
        and held_replicas == 0
        and said
        and [failures for _, failures in windows] == [1]
        and returned is not None
        and second == ["c3-4", "c3-8"]
        and not leaked
    )
    record(
        "MachineSet preflight checks hold a flavor (its MD a minor ahead of the control plane)",
        "the launch falls back at once (before the 30 s launch timeout), the held MD keeps 0 replicas, the "
        "offering is off for 1 minute with the checks named; after the control-plane upgrade the flavor "
        "launches again",
        f"launched {figure(fell_back, LAUNCH_TIMEOUT)} after its creation on {', '.join(first) or 'nothing'}, "
        f"pod Running after {figure(ran, RUNNING)}; held replicas "
        f"{held_replicas}; OfferingsAvailable {'names' if said else 'does not name'} the failed checks, "
        f"{len(windows)} window(s) of {windows[0][1] if windows else 0} failure(s); after the upgrade the "
        f"second pod Running {figure(returned, RUNNING)} later, claims {', '.join(second) or 'none'}; "
        f"{'; '.join(leaked) or 'no leak'}",
        passed,
    )
    assert ran is not None, f"the pod did not run within {RUNNING:.0f} s"
    assert fell_back is not None and fell_back < LAUNCH_TIMEOUT, f"launched after {fell_back} s"
    assert first == ["c3-8"], first
    assert held_replicas == 0
    assert said, available
    assert [failures for _, failures in windows] == [1], windows
    assert returned is not None, "the second pod did not run after the upgrade"
    assert second == ["c3-4", "c3-8"], second
    assert not leaked, leaked
