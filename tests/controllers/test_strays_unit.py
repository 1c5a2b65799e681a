"""Stray Machines on the fake provider and clock (issue 15): a Machine of a managed MD that no NodeClaim
owns is removed exactly once it is older than the grace and no claim is waiting to launch; a claimed one,
one of an unmanaged MD, or one a launch claimed meanwhile is kept."""

from __future__ import annotations

import asyncio

from controllers.fake_cluster import World, stamp, world
from kapstan.capi import BelowMinSize, MachineDeploymentRef, MachineRef
from kapstan.capi.fake import FakeProvider
from kapstan.capi.provider import LaunchedMachine
from kapstan.controllers.nodeclaim import LeakedReplicas, StrayMachines
from kapstan.controllers.nodeclaim.adoption import STRAY_GRACE, STRAY_RECHECK
from kapstan.kube.controller import Result
from provider_builders import make_md, provider_with

KEY = "capi/md-c3-4-manual"
REF = MachineRef("capi", "md-c3-4-manual")


def _reconcile(w: World) -> Result:
    return asyncio.run(StrayMachines(w.state, w.provider, w.events, clock=w.clock).reconcile(KEY))


def _deletes(provider: FakeProvider) -> list[MachineRef]:
    return [call.argument for call in provider.calls if call.method == "delete"]  # type: ignore[misc]


def test_a_replica_added_by_hand_is_removed_once_the_grace_is_over() -> None:
    w = world()
    w.machine("md-c3-4-manual", "fake://manual")
    assert _reconcile(w).requeue_after == STRAY_GRACE  # a launch may be about to claim it
    assert _deletes(w.provider) == []
    w.clock.advance(STRAY_GRACE)
    assert _reconcile(w) == Result()
    assert _deletes(w.provider) == [REF]
    assert w.api.reasons("md-c3-4-manual") == ["StrayMachineRemoved"]


def test_a_machine_whose_claim_is_gone_is_a_stray_and_a_live_claims_is_not() -> None:
    w = world()
    w.machine("md-c3-4-manual", "fake://manual", claim="default-vanished")
    w.clock.advance(STRAY_GRACE)
    _reconcile(w)
    assert _deletes(w.provider) == [REF]
    claim = asyncio.run(w.claim("c3-4"))
    w.machine("md-c3-4-manual", "fake://manual", claim=claim["metadata"]["name"])
    w.provider.calls.clear()
    _reconcile(w)
    assert _deletes(w.provider) == []


def test_a_stray_waits_while_a_claim_is_waiting_to_launch() -> None:
    w = world()
    w.machine("md-c3-4-manual", "fake://manual")
    asyncio.run(w.claim("c3-4"))  # not launched yet: its launch takes a free Machine before scaling
    w.clock.advance(STRAY_GRACE)
    assert _reconcile(w).requeue_after == STRAY_RECHECK
    assert _deletes(w.provider) == []


def test_a_machine_of_an_unmanaged_md_is_left_alone() -> None:
    w = world()
    w.machine("md-c3-4-manual", "fake://manual", md="someone-elses")
    w.clock.advance(STRAY_GRACE)
    _reconcile(w)
    assert _deletes(w.provider) == []


def test_an_md_at_its_min_size_keeps_its_stray() -> None:
    w = world()
    w.machine("md-c3-4-manual", "fake://manual")
    w.clock.advance(STRAY_GRACE)
    w.provider.fail_next("delete", BelowMinSize("md-c3-4 is at its min size 1"))
    assert _reconcile(w) == Result()
    assert w.api.reasons("md-c3-4-manual") == []


def test_the_removal_is_conditional_on_the_machine_still_being_unclaimed() -> None:
    provider = FakeProvider()
    provider.machines[REF] = LaunchedMachine(REF, "default-abc", "md-c3-4")  # a launch claimed it meanwhile
    asyncio.run(provider.delete(REF, claimed_by=""))
    assert not provider.machines[REF].deleting
    asyncio.run(provider.delete(REF, claimed_by="default-abc"))
    assert provider.machines[REF].deleting


def _leak(w: World, replicas: int) -> str:
    """Give md-c3-4 ``replicas`` replicas (no Machine is made for them); returns its store key."""
    md = w.state.machine_deployments.store.get_by_name("md-c3-4", "capi")
    assert md is not None
    w.api.put(w.state.machine_deployments.resource, {**md, "spec": {**md["spec"], "replicas": replicas}})
    return "capi/md-c3-4"


def _trims(provider: FakeProvider) -> list[object]:
    return [call.argument for call in provider.calls if call.method == "trim"]


def test_replicas_no_machine_came_for_are_taken_back_once_the_gap_lasts_the_grace() -> None:
    w = world()
    key = _leak(w, 1)
    leaks = LeakedReplicas(w.state, w.provider, clock=w.clock)
    assert asyncio.run(leaks.reconcile(key)).requeue_after == STRAY_GRACE  # the MachineSet may be slow
    w.clock.advance(STRAY_GRACE)
    assert asyncio.run(leaks.reconcile(key)) == Result()
    assert _trims(w.provider) == [("capi", "md-c3-4")]


def test_replicas_are_kept_while_a_claim_waits_to_launch_or_a_machine_fills_them() -> None:
    w = world()
    key = _leak(w, 1)
    leaks = LeakedReplicas(w.state, w.provider, clock=w.clock)
    asyncio.run(w.claim("c3-4"))
    asyncio.run(leaks.reconcile(key))
    w.clock.advance(STRAY_GRACE)
    assert asyncio.run(leaks.reconcile(key)).requeue_after == STRAY_RECHECK
    w.machine("md-c3-4-0", "fake://0", claim="someone")
    assert asyncio.run(leaks.reconcile(key)) == Result()
    assert _trims(w.provider) == []


def test_a_stray_whose_node_runs_workload_pods_is_kept_until_they_are_gone() -> None:
    w = world()
    w.machine("md-c3-4-manual", "fake://manual")
    w.node("manual", "fake://manual", taints=[])
    w.pod("agent-x", "manual", daemonset=True)
    pod = w.pod("web-0", "manual")
    w.clock.advance(STRAY_GRACE)
    assert _reconcile(w).requeue_after == STRAY_GRACE
    assert _deletes(w.provider) == []
    w.state.pods.store.delete(pod)  # only the DaemonSet's pod is left
    _reconcile(w)
    assert _deletes(w.provider) == [REF]


def test_the_stray_controllers_know_machines_and_mds_only_through_the_provider() -> None:
    """A plain fake provider, no Machine or MD object behind it: what it answers is what is acted on."""
    w = world()
    fake = provider_with(make_md(MachineDeploymentRef("capi", "md-c3-4"), replicas=3, machines=3))
    fake.add(LaunchedMachine(REF, "", "md-c3-4", "fake://manual", created=stamp(w.clock, STRAY_GRACE)))
    assert asyncio.run(StrayMachines(w.state, fake, w.events, clock=w.clock).reconcile(KEY)) == Result()
    assert _deletes(fake) == [REF]
    assert w.api.reasons("md-c3-4-manual") == ["StrayMachineRemoved"]

    # Three replicas, one Machine left and it is being deleted: the gap is taken back after the grace.
    leaks = LeakedReplicas(w.state, fake, clock=w.clock)
    assert asyncio.run(leaks.reconcile("capi/md-c3-4")).requeue_after == STRAY_GRACE
    w.clock.advance(STRAY_GRACE)
    assert asyncio.run(leaks.reconcile("capi/md-c3-4")) == Result()
    assert _trims(fake) == [("capi", "md-c3-4")]
