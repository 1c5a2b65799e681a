"""Garbage collection of launched NodeClaims on the fake provider and clock (issue 15): a claim whose
Machine is gone, deleted or failed, or whose Node vanished, is deleted in the reconcile that sees it, not
at a timeout; a Machine the stores have not caught up with is confirmed before anything is deleted."""

from __future__ import annotations

import asyncio
from typing import Any

from controllers.fake_cluster import NS, World, stamp, world
from kapstan.api.wellknown import MACHINE_ANNOTATION
from kapstan.capi import MachineRef
from kapstan.controllers.nodeclaim import Lifecycle, Timeouts
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.kinds import NODES

TIMEOUTS = Timeouts(launch=300.0, registration=900.0, retry=10.0, poll=5.0)


def _run(w: World, name: str) -> Result:
    lifecycle = Lifecycle(w.state, w.provider, w.events, w.state.simulation_input, TIMEOUTS, clock=w.clock)
    return asyncio.run(lifecycle.reconcile(w.claim_now(name)))


def _launched(w: World) -> tuple[str, MachineRef]:
    name = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
    _run(w, name)
    namespace, _, machine = w.claim_now(name)["metadata"]["annotations"][MACHINE_ANNOTATION].partition("/")
    return name, MachineRef(namespace, machine)


def _registered(w: World) -> tuple[str, MachineRef]:
    name, ref = _launched(w)
    w.node("node-a", w.claim_now(name)["status"]["providerID"])
    _run(w, name)
    assert w.claim_now(name)["status"]["nodeName"] == "node-a"
    return name, ref


def _deleted_claims(w: World) -> list[str]:
    return [write.name for write in w.api.writes_of("delete", "nodeclaims")]


def _claimed_machine(w: World, claim: str, ref: MachineRef, **status: Any) -> Object:
    machine = w.machine(ref.name, f"fake://{ref.name}", claim=claim)
    machine["status"] = status
    return machine


def test_a_claim_whose_machine_is_gone_is_deleted_in_the_reconcile_that_sees_it() -> None:
    w = world()
    name, ref = _launched(w)
    w.provider.remove(ref)  # deleted by hand or remediated: CAPI removed it
    assert _run(w, name) == Result()
    assert _deleted_claims(w) == [name]
    assert w.api.reasons(name)[-1] == "MachineGone"


def test_a_claim_whose_machine_the_stores_have_not_seen_yet_is_kept() -> None:
    w = world()
    name, _ = _launched(w)  # the fake provider has the Machine; the Machine store does not (lag)
    assert _run(w, name).requeue_after == TIMEOUTS.poll
    assert _deleted_claims(w) == []


def test_a_claim_whose_machine_is_being_deleted_by_someone_else_is_deleted() -> None:
    w = world()
    name, ref = _registered(w)
    machine = _claimed_machine(w, name, ref)
    machine["metadata"]["deletionTimestamp"] = stamp(w.clock)
    w.api.put(w.state.capi.machines.resource, machine)
    _run(w, name)
    assert _deleted_claims(w) == [name]
    assert w.api.reasons(name)[-1] == "MachineDeleted"


def test_a_failed_machine_fails_the_launch_at_once_not_at_the_registration_timeout() -> None:
    w = world()
    name, ref = _launched(w)
    failure = {"deprecated": {"v1beta1": {"failureReason": "CreateError", "failureMessage": "no image"}}}
    _claimed_machine(w, name, ref, phase="Failed", **failure)
    _run(w, name)
    assert _deleted_claims(w) == [name]
    [event] = [e for e in w.api.events if e["reason"] == "LaunchFailed"]
    assert f"{NS}/{ref.name} failed: CreateError: no image" in event["message"]


def test_a_machine_whose_infrastructure_was_deleted_fails_at_once_and_one_not_ready_yet_does_not() -> None:
    # v1beta2 says InfrastructureReady=False, reason Deleted, when the infrastructure machine went away
    # after it was provisioned; NotReady is a state a booting Machine leaves.
    w = world()
    name, ref = _registered(w)
    not_ready = {"type": "InfrastructureReady", "status": "False", "reason": "NotReady", "message": "booting"}
    _claimed_machine(w, name, ref, conditions=[not_ready])
    _run(w, name)
    assert _deleted_claims(w) == []
    deleted = {**not_ready, "reason": "Deleted", "message": "TestMachine has been deleted"}
    _claimed_machine(w, name, ref, conditions=[deleted])
    _run(w, name)
    assert _deleted_claims(w) == [name]
    [event] = [e for e in w.api.events if e["reason"] == "LaunchFailed"]
    assert "failed: InfrastructureReady False (Deleted): TestMachine has been deleted" in event["message"]


def test_a_registered_claim_whose_node_vanished_is_deleted() -> None:
    w = world()
    name, _ = _registered(w)
    asyncio.run(w.api.delete(NODES, "node-a"))
    _run(w, name)
    assert _deleted_claims(w) == [name]
    assert w.api.reasons(name)[-1] == "NodeGone"


def test_a_claim_with_its_machine_and_node_is_left_alone() -> None:
    w = world()
    name, ref = _registered(w)
    _claimed_machine(w, name, ref, phase="Running")
    _run(w, name)
    assert _deleted_claims(w) == []
