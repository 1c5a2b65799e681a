"""Batches after the first: the pods a plan put on an in-flight NodeClaim stay on it (issue 14); and what
a batch says about a flavor source the catalog leaves out."""

from __future__ import annotations

import asyncio

import pytest
from fake_cluster import World, world
from provisioner_kit import arrives, initialized, unschedulable

from kapstan.controllers.provisioner import Provisioner
from kapstan.controllers.replans import REPLAN_AFTER, REPLAN_AFTER_MAX
from kapstan.kube.client import Object, Resource
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import PODS
from kapstan.kube.store import Event


def _cpu_of(claims: list[Object]) -> list[str]:
    """What each claim was made for: the requests of its pods, which the NodeClaim carries."""
    return [claim["spec"]["resources"]["requests"]["cpu"] for claim in claims]


def test_a_later_batch_plans_only_the_pods_without_a_claim() -> None:
    w = world()  # c3-4: 2 CPU
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    w.api.put(PODS, unschedulable("small", "1500m"))

    async def batches() -> tuple[list[Object], list[Object]]:
        first = await provisioner.provision()
        # "small" is still pending (its claim is launching) when a bigger pod arrives. Re-planned
        # biggest first, "big" would take the in-flight claim and "small" a new one.
        w.api.put(PODS, unschedulable("big", "1800m"))
        return first, await provisioner.provision()

    first, second = asyncio.run(batches())
    assert _cpu_of(first) == ["1500m"]
    assert _cpu_of(second) == ["1800m"], "the new claim is for the new pod; small stays on its claim"


def test_an_md_the_catalog_leaves_out_gets_the_event_on_itself_through_the_provider() -> None:
    w = world({"md-c3-4": "c3-4", "md-bare": "c3-8"})
    bare = w.state.machine_deployments.store.get_by_name("md-bare", "capi")
    assert bare is not None
    w.api.put(
        w.state.machine_deployments.resource, {**bare, "metadata": {**bare["metadata"], "annotations": {}}}
    )
    w.api.put(PODS, unschedulable("small", "1"))
    created = asyncio.run(Provisioner(w.state, w.events, clock=w.clock).provision())
    assert len(created) == 1, "the other MD still provisions"
    assert w.api.reasons("md-bare") == ["FlavorUnavailable"]
    assert w.api.reasons("md-c3-4") == []


def test_a_plans_claims_are_created_at_once_and_one_failed_create_keeps_the_others() -> None:
    """Issue 14: one create after the other, a 44-claim plan took 7 s before the first launch began."""
    w = world()  # c3-4: 2 CPU, so each pod of 1500m is a claim of its own
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    for name in ("a", "b", "c"):
        w.api.put(PODS, unschedulable(name, "1500m"))
    create = w.api.create
    calls, in_flight, most = 0, 0, 0

    async def slow_create(resource: Resource, body: Object) -> Object:
        nonlocal calls, in_flight, most
        calls += 1
        failing = calls == 2
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        if failing:
            raise ApiError("the API server is gone", status=503)
        return await create(resource, body)

    w.api.create = slow_create  # type: ignore[method-assign]
    with pytest.raises(ApiError):
        asyncio.run(provisioner.provision())
    assert most == 3, "the three creates overlap"
    assert len(w.state.node_claims.store.objects()) == 2, "the failed create does not undo the others"
    w.api.create = create  # type: ignore[method-assign]
    assert len(asyncio.run(provisioner.provision())) == 1, "the next batch plans only the pod left"


async def _opens_a_batch_after(w: World, provisioner: Provisioner, claim: Object, seconds: float) -> bool:
    """Whether the claim coming up Initialized opens a batch within ``seconds`` (and not before)."""
    provisioner.batcher._trigger.clear()
    provisioner._on_claim_initialized(Event("MODIFIED", initialized(claim), claim))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not provisioner.batcher._trigger.is_set(), "kube-scheduler is given its time first"
    w.clock.advance(seconds)
    for _ in range(5):
        await asyncio.sleep(0)
    return provisioner.batcher._trigger.is_set()


def test_a_claim_coming_up_with_a_planned_pod_still_pending_opens_a_batch_a_while_later() -> None:
    """Issue 14: kube-scheduler filled a new node with other pods; the two pods planned there stayed
    Pending for good, since nothing about them changed to open a batch once the claim was up. At once
    though, 661 pods about to be bound were planned again and bought 5 more nodes."""
    w = world()
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    arrives(w, provisioner, unschedulable("left-out", "1500m"))

    async def scenario() -> bool:
        (claim,) = await provisioner.provision()
        return await _opens_a_batch_after(w, provisioner, claim, REPLAN_AFTER)

    assert asyncio.run(scenario())


def test_each_claim_that_comes_up_without_the_pod_doubles_its_wait_up_to_the_maximum() -> None:
    """Issue 15, chaos scenario 4: a controller tainting every new Node NoExecute leaves the pods unbound on
    every node kapstan buys; re-planned every 20 s after each node came up, they bought 12 nodes in 5
    minutes. Each claim that comes up without the pod now doubles its wait: 20 s, 40 s, 80 s, ..."""
    w = world()
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    arrives(w, provisioner, unschedulable("refused", "1500m"))

    async def opened(seconds: float) -> bool:
        for _ in range(5):  # the look's task starts its sleep first
            await asyncio.sleep(0)
        w.clock.advance(seconds)
        for _ in range(5):
            await asyncio.sleep(0)
        return provisioner.batcher._trigger.is_set()

    async def scenario() -> list[tuple[bool, bool]]:
        seen = []
        (first,) = await provisioner.provision()
        for n, wait in enumerate((REPLAN_AFTER, 2 * REPLAN_AFTER, 4 * REPLAN_AFTER)):
            # The batches after the first would plan the pod onto a new claim, which comes up tainted too.
            claim = {**first, "metadata": {**first["metadata"], "name": f"tainted-{n}"}}
            provisioner._planned_on["default/refused"] = f"tainted-{n}"
            provisioner.batcher._trigger.clear()
            provisioner._on_claim_initialized(Event("MODIFIED", initialized(claim), claim))
            seen.append((await opened(wait - 1), await opened(1)))
        return seen

    assert asyncio.run(scenario()) == [(False, True)] * 3
    assert REPLAN_AFTER * 2**4 <= REPLAN_AFTER_MAX < REPLAN_AFTER * 2**5


def test_a_claim_coming_up_whose_pods_are_bound_by_then_opens_nothing() -> None:
    w = world()
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    arrives(w, provisioner, unschedulable("lands", "1500m"))

    async def scenario() -> bool:
        (claim,) = await provisioner.provision()
        provisioner.batcher._trigger.clear()
        provisioner._on_claim_initialized(Event("MODIFIED", initialized(claim), claim))
        bound = {**unschedulable("lands", "1500m"), "spec": {"nodeName": "node-a", "containers": []}}
        provisioner._on_pod(Event("MODIFIED", bound, unschedulable("lands", "1500m")))  # bound meanwhile
        w.clock.advance(REPLAN_AFTER)
        for _ in range(5):
            await asyncio.sleep(0)
        return provisioner.batcher._trigger.is_set()

    assert not asyncio.run(scenario())


def test_the_next_batch_waits_for_the_informer_to_show_the_claims_just_made() -> None:
    """Issue 14: with the watch seconds behind 132 creates, the next batch saw 265 pods without their
    claims and bought 17 more (bench.live, 3,000 pods)."""
    w = world()
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    w.api.put(PODS, unschedulable("a", "1500m"))

    async def batches() -> list[Object]:
        (claim,) = await provisioner.provision()
        w.state.node_claims.store.delete(claim)  # made, but the watch has not shown it yet
        second = asyncio.ensure_future(provisioner.provision())
        for _ in range(5):
            await asyncio.sleep(0)
        assert not second.done(), "the batch waits for the claim"
        w.state.node_claims.store.upsert(claim)
        w.clock.advance(0.1)
        return await second

    assert asyncio.run(batches()) == [], "the pod is on its claim: nothing new to make"


def test_a_claim_the_informer_never_shows_holds_the_next_batch_ten_seconds_at_most() -> None:
    w = world()
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    w.api.put(PODS, unschedulable("a", "1500m"))

    async def batches() -> list[Object]:
        (claim,) = await provisioner.provision()
        w.state.node_claims.store.delete(claim)  # deleted before the watch ever showed it
        second = asyncio.ensure_future(provisioner.provision())
        for _ in range(99):
            w.clock.advance(0.1)
            await asyncio.sleep(0)
            assert not second.done()
        for _ in range(3):
            w.clock.advance(0.1)
            await asyncio.sleep(0)
        return await second

    assert len(asyncio.run(batches())) == 1, "after 10 s the pod is planned again"
