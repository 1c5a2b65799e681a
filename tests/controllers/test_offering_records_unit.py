"""The offering backoff survives a leader change (issue 15): the NodePool's ``OfferingsAvailable``
condition records each backed-off offering's failures and the end of its window, a new leader restores
them before its controllers start, and a launch that registers clears them. On the fake API and a fake
clock; "a new leader" is the same cluster with the backoff's memory gone."""

from __future__ import annotations

import asyncio
import copy
from datetime import timedelta

from fake_cluster import POOL, World, world
from provisioner_kit import unschedulable

from kapstan.api.wellknown import INSTANCE_TYPE, OFFERINGS_AVAILABLE
from kapstan.catalog.catalog import DEFAULT_ZONE
from kapstan.controllers import conditions as cond
from kapstan.controllers import offering_records
from kapstan.controllers.nodeclaim import Lifecycle, Timeouts
from kapstan.controllers.offerings import BackoffRecord, OfferingBackoff
from kapstan.controllers.provisioner import Provisioner
from kapstan.kube.client import Object
from kapstan.kube.kinds import NODEPOOLS, PODS

TIMEOUTS = Timeouts(launch=300.0, registration=900.0, retry=10.0, poll=5.0)
BROKEN = ("c3-4", DEFAULT_ZONE, "on-demand")


def _run(w: World, name: str) -> None:
    lifecycle = Lifecycle(w.state, w.provider, w.events, w.state.simulation_input, TIMEOUTS, clock=w.clock)
    asyncio.run(lifecycle.reconcile(w.claim_now(name)))


def _pool(w: World) -> Object:
    pool = w.state.node_pools.store.get(POOL)
    assert pool is not None
    return pool


def _planned_flavors(w: World) -> list[str]:
    created = asyncio.run(Provisioner(w.state, w.events, clock=w.clock).provision())
    return [claim["metadata"]["labels"][INSTANCE_TYPE] for claim in created]


def _failed_once(w: World) -> None:
    """A c3-4 launch that never registers: the offering is backed off."""
    name = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
    _run(w, name)
    w.clock.advance(TIMEOUTS.registration + 1)
    _run(w, name)
    assert w.state.backoff.blocked(BROKEN)


def test_a_new_leader_restores_the_backoff_and_plans_around_the_offering() -> None:
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    _failed_once(w)
    recorded = offering_records.parse(_pool(w))[BROKEN]
    assert recorded.failures == 1
    assert recorded.until == (w.clock.wall() + timedelta(seconds=60)).replace(microsecond=0)
    assert recorded.reason == "RegistrationTimeout: no Node registered within 900s of launch"

    w.state.backoff = OfferingBackoff(w.clock)  # the new leader's memory: nothing failed yet
    w.api.put(PODS, unschedulable("web"))
    assert offering_records.restore(w.state) == 1
    assert _planned_flavors(w) == ["c3-8"], "the restarted provisioner still avoids the backed-off c3-4"
    assert "after 1 failed launch(es): RegistrationTimeout" in w.state.backoff.blocked(BROKEN)
    w.clock.advance(60)  # the window the old leader started is over: one launch may try c3-4 again
    assert w.state.backoff.blocked(BROKEN) == ""


def test_without_the_record_a_restarted_provisioner_takes_the_failing_offering_again() -> None:
    # What a new leader did before the backoff was recorded: the cheapest offering, the failing one.
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    _failed_once(w)
    w.state.backoff = OfferingBackoff(w.clock)
    w.api.put(PODS, unschedulable("web"))
    assert _planned_flavors(w) == ["c3-4"]


def test_the_next_failure_after_a_restore_doubles_the_window() -> None:
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    _failed_once(w)
    w.state.backoff = OfferingBackoff(w.clock)
    offering_records.restore(w.state)
    w.clock.advance(60)
    _failed_once(w)
    assert offering_records.parse(_pool(w))[BROKEN].failures == 2
    assert "backed off for 120s more after 2 failed launch(es)" in w.state.backoff.blocked(BROKEN)


def test_a_launch_that_registers_clears_the_record() -> None:
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    _failed_once(w)
    w.clock.advance(60)
    name = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
    _run(w, name)  # the probe launch
    w.node("node-a", w.claim_now(name)["status"]["providerID"])
    _run(w, name)  # registered
    assert w.state.backoff.unavailable() == {}
    assert offering_records.parse(_pool(w)) == {}
    assert cond.is_true(_pool(w), OFFERINGS_AVAILABLE)


def test_a_leader_that_knows_more_failures_keeps_its_own_and_unreadable_lines_are_skipped() -> None:
    w = world()
    for _ in range(3):
        w.state.backoff.failed(BROKEN, "failed here")
    older = OfferingBackoff(w.clock)
    older.failed(BROKEN, "an older failure")
    pool = copy.deepcopy(_pool(w))
    text = offering_records.message(older) + "\nc3-8 backed off until soon after 1 failed launch(es): ?"
    pool["status"] = {
        "conditions": cond.with_condition([], OFFERINGS_AVAILABLE, cond.FALSE, "OfferingsBackedOff", text)
    }
    w.api.put(NODEPOOLS, pool)
    assert list(offering_records.parse(pool)) == [BROKEN]
    offering_records.restore(w.state)
    assert "after 3 failed launch(es): failed here" in w.state.backoff.blocked(BROKEN)
    until = (w.clock.wall() + timedelta(seconds=240)).replace(microsecond=0)
    assert w.state.backoff.record(BROKEN) == BackoffRecord(3, until, "failed here")
