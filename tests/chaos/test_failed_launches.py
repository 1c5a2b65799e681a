"""Launches CAPI cannot complete: a flavor whose Machines never boot, under a short registration timeout.
The claim goes at the timeout, exactly its Machine with it, and the pod runs on the next flavor while the
broken one is backed off (no launch storm)."""

from __future__ import annotations

import datetime

import pytest

from chaos.chaos_helpers import figure, leaks, running_pods, seconds_until
from chaos.report import record
from e2e.e2e_helpers import E2E
from kapstan.api.wellknown import INSTANCE_TYPE, NODECLAIM_ANNOTATION
from kapstan.capi import contract as c
from kapstan.controllers import conditions as cond
from kapstan.kube.kinds import NODEPOOLS
from kapstan.local import article

pytestmark = [pytest.mark.sandbox, pytest.mark.chaos]

REGISTRATION_TIMEOUT = 45.0
NEVER = 100_000
"""A boot delay no test outlives: the Machine is created, its Node never comes."""


def test_a_flavor_that_never_boots_is_given_up_at_the_timeout_and_backed_off(chaos: E2E) -> None:
    run = chaos.run
    ns = run.namespace
    objects = [
        *article.standalone(ns, run.cluster, {}),
        *article.flavor_pool("broken", ns, run.cluster, "c3-4", boot_delay_seconds=NEVER),
        *article.flavor_pool("good", ns, run.cluster, "c3-8"),
    ]
    chaos(run.setup(objects, [article.deployment("inflate", ns, run.id, 1, "1")]))
    run.start_operator("--launch-timeout", "30", "--registration-timeout", f"{REGISTRATION_TIMEOUT:.0f}")
    seen: dict[str, str] = {}  # claim name to flavor, every claim the run made
    late: dict[str, float] = {}  # claim name to how long after its registration timeout it was deleted

    launched_at: dict[str, datetime.datetime] = {}

    async def pod_running() -> bool:
        claims = await run.claims()
        for claim in claims:
            name = claim["metadata"]["name"]
            seen[name] = claim["metadata"]["labels"].get(INSTANCE_TYPE, "")
            launched = cond.find(claim, "Launched")
            if launched and (started := cond.parse_time(launched.get("lastTransitionTime"))):
                launched_at[name] = started
            deleted = cond.parse_time(claim["metadata"].get("deletionTimestamp"))
            if deleted and name in launched_at and name not in late:
                late[name] = (deleted - launched_at[name]).total_seconds() - REGISTRATION_TIMEOUT
        now = datetime.datetime.now(datetime.UTC)
        for name in set(launched_at) - set(late) - {claim["metadata"]["name"] for claim in claims}:
            late[name] = (
                now - launched_at[name]
            ).total_seconds() - REGISTRATION_TIMEOUT  # gone between polls
        return len(await running_pods(run, "inflate")) == 1

    timeout = 240.0
    seconds = chaos(seconds_until(pod_running, timeout))
    broken = [name for name, flavor in seen.items() if flavor == "c3-4"]
    lateness = [late[name] for name in broken if name in late]
    pods = chaos(running_pods(run, "inflate"))
    on_good = bool(pods) and pods[0]["spec"]["nodeName"] in {
        claim["status"].get("nodeName")
        for claim in chaos(run.claims())
        if seen.get(claim["metadata"]["name"]) == "c3-8"
    }

    async def clean() -> bool:
        return not await leaks(run)

    chaos(seconds_until(clean, 90))
    left = chaos(leaks(run))
    broken_md = chaos(run.clients[1].get(c.MACHINEDEPLOYMENTS, "broken", ns))
    pool = chaos(run.clients[0].get(NODEPOOLS, run.pool))
    backed_off = cond.find(pool, "OfferingsAvailable")
    passed = (
        seconds is not None
        and on_good
        and len(broken) == 1
        and bool(lateness)
        and max(lateness) < 15
        and c.replicas(broken_md) == 0
        and not left
        and backed_off is not None
        and backed_off["status"] == cond.FALSE
    )
    record(
        "Flavor that never boots (registration timeout 45 s)",
        "claim removed at the timeout, replicas restored, pod Running on the next flavor, the flavor backed "
        "off (one launch of it)",
        f"pod Running after {figure(seconds, timeout)}; {len(broken)} c3-4 claim(s); removed "
        f"{', '.join(f'{x:+.0f} s' for x in lateness) or 'never'} after the timeout; c3-4 replicas "
        f"{c.replicas(broken_md)}; pool OfferingsAvailable="
        f"{backed_off['status'] if backed_off else 'absent'}; {'; '.join(left) or 'no leak'}",
        passed,
    )
    assert seconds is not None, f"the pod did not run within {timeout:.0f}s"
    assert on_good
    assert len(broken) == 1, f"c3-4 was launched {len(broken)} times"
    assert lateness and max(lateness) < 15
    assert c.replicas(broken_md) == 0
    assert not left
    assert backed_off is not None and backed_off["status"] == cond.FALSE


def test_a_machine_that_fails_fails_its_launch_within_one_reconcile(chaos: E2E) -> None:
    """The infrastructure reports a terminal failure (quota, a missing image): CAPI keeps it in the
    Machine's ``status.deprecated.v1beta1.failureReason``. Written here as the infrastructure would have it
    copied (our test provider has no failure knob), on a Machine that would otherwise never boot."""
    run = chaos.run
    ns = run.namespace
    objects = [
        *article.standalone(ns, run.cluster, {}),
        *article.flavor_pool("broken", ns, run.cluster, "c3-4", boot_delay_seconds=NEVER),
        *article.flavor_pool("good", ns, run.cluster, "c3-8"),
    ]
    chaos(run.setup(objects, [article.deployment("inflate", ns, run.id, 1, "1")]))
    run.start_operator()
    _, mgmt = run.clients

    async def broken_machine() -> str:
        machines = [
            m for m in await run.machines() if c.labels_of(m).get(c.DEPLOYMENT_NAME_LABEL) == "broken"
        ]
        claimed = [m for m in machines if c.annotations_of(m).get(NODECLAIM_ANNOTATION)]
        return c.name(claimed[0]) if claimed else ""

    machine = chaos(run.wait_for("the broken flavor's Machine claimed", broken_machine, 120))
    [claim] = chaos(run.claims())
    failure = {"failureReason": "InsufficientQuota", "failureMessage": "quota exceeded for c3-4"}
    patch = {"status": {"deprecated": {"v1beta1": failure}}}
    chaos(mgmt.patch(c.MACHINES, machine, patch, namespace=ns, subresource="status"))

    async def claim_deleting() -> bool:
        found = {x["metadata"]["name"]: x for x in await run.claims()}
        gone = claim["metadata"]["name"] not in found
        return gone or bool(found[claim["metadata"]["name"]]["metadata"].get("deletionTimestamp"))

    handled = chaos(seconds_until(claim_deleting, 60))

    async def pod_running() -> bool:
        return len(await running_pods(run, "inflate")) == 1

    running = chaos(seconds_until(pod_running, 180))
    flavors = {x["metadata"]["labels"].get(INSTANCE_TYPE) for x in chaos(run.claims())}

    async def clean() -> bool:
        return not await leaks(run)

    chaos(seconds_until(clean, 90))
    left = chaos(leaks(run))
    broken_md = chaos(mgmt.get(c.MACHINEDEPLOYMENTS, "broken", ns))
    passed = (
        handled is not None
        and handled < 10
        and running is not None
        and flavors == {"c3-8"}
        and c.replicas(broken_md) == 0
        and not left
    )
    record(
        "Machine that fails (failureReason written on its status)",
        "the claim deleted within one reconcile (< 10 s), not at a timeout; the Machine removed, replicas "
        "restored, the pod Running on the next flavor",
        f"claim deleted {figure(handled, 60)} after the failure; pod Running {figure(running, 180)} later on "
        f"{', '.join(sorted(f or '?' for f in flavors)) or 'nothing'}; c3-4 replicas {c.replicas(broken_md)}; "
        f"{'; '.join(left) or 'no leak'}",
        passed,
    )
    assert handled is not None and handled < 10, f"the failure was handled after {figure(handled, 60)}"
    assert running is not None and flavors == {"c3-8"}
    assert c.replicas(broken_md) == 0
    assert not left


def test_a_launch_that_cannot_start_falls_back_at_once_and_leaks_no_replica(chaos: E2E) -> None:
    """The MD names an infrastructure template that does not exist, so CAPI creates no Machine for it and
    says so in the MD's ScalingUp condition."""
    run = chaos.run
    ns = run.namespace
    broken = [
        o
        for o in article.flavor_pool("broken", ns, run.cluster, "c3-4")
        if o["kind"] != "TestMachineTemplate"
    ]
    objects = [
        *article.standalone(ns, run.cluster, {}),
        *broken,
        *article.flavor_pool("good", ns, run.cluster, "c3-8"),
    ]
    chaos(run.setup(objects, [article.deployment("inflate", ns, run.id, 1, "1")]))
    run.start_operator("--launch-timeout", "30", "--registration-timeout", f"{REGISTRATION_TIMEOUT:.0f}")

    async def pod_running() -> bool:
        return len(await running_pods(run, "inflate")) == 1

    timeout = 180.0
    seconds = chaos(seconds_until(pod_running, timeout))
    flavors = {x["metadata"]["labels"].get(INSTANCE_TYPE) for x in chaos(run.claims())}

    async def clean() -> bool:
        return not await leaks(run)

    chaos(seconds_until(clean, 90))
    left = chaos(leaks(run))
    broken_md = chaos(run.clients[1].get(c.MACHINEDEPLOYMENTS, "broken", ns))
    within = seconds is not None and seconds < 30  # sooner than the launch timeout would give it up
    passed = within and flavors == {"c3-8"} and c.replicas(broken_md) == 0 and not left
    record(
        "Launch that cannot start (missing template, launch timeout 30 s)",
        "the launch falls back to the next flavor without waiting out the timeout; the broken MD keeps 0 "
        "replicas",
        f"pod Running after {figure(seconds, timeout)} on {', '.join(sorted(f or '?' for f in flavors)) or 'nothing'}; "
        f"c3-4 replicas {c.replicas(broken_md)}; {'; '.join(left) or 'no leak'}",
        passed,
    )
    assert within, f"the pod ran after {figure(seconds, timeout)}, not before the 30 s launch timeout"
    assert flavors == {"c3-8"}
    assert c.replicas(broken_md) == 0
    assert not left
