"""Per-offering backoff on a fake clock (issue 15): an offering whose launch failed is unavailable for a
window that doubles from 1 to 30 minutes and resets on success; the planner takes the next-cheapest
offering meanwhile, a launch falls back past it, at most one launch tries it per window, and the NodePool
(condition, Event) and the metric say why."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from builders import article_flavors, make_pod, snapshot
from controllers.fake_cluster import POOL, World, world
from kapstan.api.wellknown import INSTANCE_TYPE, OFFERINGS_AVAILABLE
from kapstan.capi import InsufficientCapacity, LaunchBlocked, LaunchRequest, PreflightHold
from kapstan.catalog.catalog import DEFAULT_ZONE
from kapstan.controllers import conditions as cond
from kapstan.controllers.disruption import Disruption, DisruptionOptions
from kapstan.controllers.nodeclaim import Lifecycle, Timeouts
from kapstan.controllers.offerings import OfferingBackoff
from kapstan.kube.clock import FakeClock
from kapstan.observability import metrics
from kapstan.scheduling import solve

TIMEOUTS = Timeouts(launch=300.0, registration=900.0, retry=10.0, poll=5.0)
BROKEN = ("c3-4", DEFAULT_ZONE, "on-demand")


def test_the_window_doubles_from_one_minute_to_thirty_and_resets_on_success() -> None:
    clock = FakeClock()
    backoff = OfferingBackoff(clock)
    assert [backoff.failed(BROKEN, "never registered") for _ in range(7)] == [
        60,
        120,
        240,
        480,
        960,
        1800,
        1800,
    ]
    assert backoff.succeeded(BROKEN)
    assert backoff.failed(BROKEN, "never registered") == 60
    clock.advance(59)
    assert "backed off for 1s more after 1 failed launch(es): never registered" in backoff.blocked(BROKEN)
    clock.advance(1)
    assert backoff.blocked(BROKEN) == ""
    assert not backoff.succeeded(("c3-8", DEFAULT_ZONE, "on-demand"))  # never failed


def test_after_the_window_one_launch_tries_the_offering_and_holds_it_until_it_ends() -> None:
    clock = FakeClock()
    backoff = OfferingBackoff(clock)
    backoff.failed(BROKEN, "never registered")
    clock.advance(60)
    assert backoff.unavailable() == {}
    backoff.launching(BROKEN)  # the probe
    assert "being tried again by one launch" in backoff.blocked(BROKEN)
    assert backoff.failed(BROKEN, "never registered") == 120  # the probe failed too
    clock.advance(120)
    backoff.launching(BROKEN)
    backoff.succeeded(BROKEN)
    assert backoff.blocked(BROKEN) == ""


def test_the_planner_takes_the_next_cheapest_offering_while_one_is_backed_off(engine: str) -> None:
    backoff = OfferingBackoff(FakeClock())
    nova = ("c3-4", "nova", "on-demand")
    before = snapshot([make_pod("p", 1)], article_flavors())
    assert [c.instance_type for c in solve(before, engine).node_claims] == ["c3-4"]
    assert backoff.restrict(before) is before
    backoff.failed(nova, "never registered")
    after = backoff.restrict(before)
    assert [c.instance_type for c in solve(after, engine).node_claims] == ["c3-8"]
    assert [o.available for it in after.instance_types for o in it.offerings] == [False, True, True]


def _lifecycle(w: World) -> Lifecycle:
    return Lifecycle(w.state, w.provider, w.events, w.state.simulation_input, TIMEOUTS, clock=w.clock)


def _run(w: World, name: str) -> None:
    asyncio.run(_lifecycle(w).reconcile(w.claim_now(name)))


def test_a_registration_timeout_backs_the_offering_off_and_says_so() -> None:
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    name = asyncio.run(w.claim("c3-4", "c3-8"))["metadata"]["name"]
    _run(w, name)  # launched on md-c3-4; its Node never comes
    w.clock.advance(TIMEOUTS.registration + 1)
    _run(w, name)
    assert "RegistrationTimeout: no Node registered within 900s" in w.state.backoff.blocked(BROKEN)
    pool = w.state.node_pools.store.get(POOL)
    assert pool is not None
    available = cond.find(pool, OFFERINGS_AVAILABLE)
    assert available is not None and available["status"] == cond.FALSE
    until = (w.clock.wall() + timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert available["message"].startswith(
        f"c3-4/{DEFAULT_ZONE}/on-demand backed off until {until} after 1 failed launch(es): "
        "RegistrationTimeout: no Node registered within 900s"
    )
    assert w.api.reasons(POOL) == ["OfferingBackedOff"]
    gauge = metrics.REGISTRY.get_sample_value(
        "karpenter_cloudprovider_instance_type_offering_available",
        {"instance_type": "c3-4", "capacity_type": "on-demand", "zone": DEFAULT_ZONE},
    )
    assert gauge == 0


def test_a_launch_falls_back_past_a_backed_off_offering_and_success_clears_it() -> None:
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    w.state.backoff.failed(BROKEN, "never registered")
    name = asyncio.run(w.claim("c3-4", "c3-8"))["metadata"]["name"]
    _run(w, name)
    assert [c.argument.source.name for c in w.provider.calls if isinstance(c.argument, LaunchRequest)] == [
        "md-c3-8"
    ]
    launched = w.claim_now(name)
    assert launched["metadata"]["labels"][INSTANCE_TYPE] == "c3-8"
    w.state.backoff.succeeded(BROKEN)
    w.state.backoff.failed(("c3-8", DEFAULT_ZONE, "on-demand"), "an earlier failure")
    w.clock.advance(60)
    w.node("node-a", launched["status"]["providerID"])
    _run(w, name)  # registered: c3-8 works again
    assert w.state.backoff.unavailable() == {}
    pool = w.state.node_pools.store.get(POOL)
    assert pool is not None
    available = cond.find(pool, OFFERINGS_AVAILABLE)
    assert available is not None and available["status"] == cond.TRUE


def test_a_blocked_scale_up_fails_that_offering_at_once_and_the_launch_falls_back() -> None:
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    w.provider.fail_next(
        "create", LaunchBlocked("md-c3-4: Scaling up is blocked because TestMachineTemplate does not exist")
    )
    name = asyncio.run(w.claim("c3-4", "c3-8"))["metadata"]["name"]
    _run(w, name)
    assert w.claim_now(name)["metadata"]["labels"][INSTANCE_TYPE] == "c3-8"
    assert cond.is_true(w.claim_now(name), "Launched")
    assert "blocked because TestMachineTemplate does not exist" in w.state.backoff.blocked(BROKEN)


HOLD = (
    "md-c3-4: MachineSet ns/md-c3-4-x: Scaling up from 0 to 1 replicas is blocked because: * TestControlPlane "
    'ns/c is upgrading ("ControlPlaneIsStable" preflight check failed)'
)


def test_a_preflight_hold_keeps_the_offering_off_a_minute_at_a_time() -> None:
    clock = FakeClock()
    backoff = OfferingBackoff(clock)
    assert [backoff.failed(BROKEN, HOLD, hold=True) for _ in range(4)] == [60, 60, 60, 60]
    assert "after 1 failed launch(es)" in backoff.blocked(BROKEN), "a hold is not a failure in a row"
    clock.advance(60)
    assert backoff.blocked(BROKEN) == "", "tried again a minute after the hold was last seen"
    assert backoff.failed(BROKEN, "never registered") == 120, "a real failure still doubles"


def _falls_back_three_times_a_minute_apart(w: World, refusal: Exception) -> None:
    """Three claims for c3-4 or c3-8 while md-c3-4 refuses each launch with ``refusal``: each launches
    on c3-8 and keeps c3-4 off for one more minute, a first failure every time, never a doubled one."""
    for _ in range(3):
        w.provider.fail_next("create", refusal)
        name = asyncio.run(w.claim("c3-4", "c3-8"))["metadata"]["name"]
        _run(w, name)
        assert w.claim_now(name)["metadata"]["labels"][INSTANCE_TYPE] == "c3-8"
        assert "backed off for 60s more after 1 failed launch(es)" in w.state.backoff.blocked(BROKEN)
        w.clock.advance(60)


def test_a_preflight_hold_fails_the_launch_at_once_and_the_offering_is_tried_again_after_a_minute() -> None:
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    _falls_back_three_times_a_minute_apart(w, PreflightHold(HOLD))  # the control plane upgrades meanwhile
    assert w.state.backoff.blocked(BROKEN) == "", "the upgrade is over: c3-4 may launch again"
    w.provider.fail_next("create", PreflightHold(HOLD))
    only = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
    _run(w, only)  # no other flavor: the claim goes at once, not at its launch timeout
    assert [write.name for write in w.api.writes_of("delete", "nodeclaims")] == [only]
    assert w.api.reasons(only) == ["LaunchFailed"]


def test_a_full_md_keeps_its_offering_off_a_minute_at_a_time() -> None:
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    # The MD stays full through the three launches; each is refused before any write.
    _falls_back_three_times_a_minute_apart(w, InsufficientCapacity("md-c3-4 is at its max size 2"))
    assert w.state.backoff.blocked(BROKEN) == "", "a Machine of it went: tried again a minute later"


def test_consolidation_plans_without_a_backed_off_offering() -> None:
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    observer = Disruption(w.state, w.events, DisruptionOptions(), clock=w.clock).observer
    before = asyncio.run(observer._snapshot())
    assert before is not None
    w.state.backoff.failed(BROKEN, "never registered")
    after = asyncio.run(observer._snapshot())
    assert after is not None
    available = {(it.name, o.available) for it in after.instance_types for o in it.offerings}
    assert available == {("c3-4", False), ("c3-8", True)}
