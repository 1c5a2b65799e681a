"""The MachineDeployment provider's decisions on an in-memory API: what CAPI cannot be made to do on cue
in the sandbox (a rollout in progress, a write that loses an optimistic-lock race, a crash between two
writes)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from capi.md_fake_api import SOURCE, FakeApi, bump, provider_of
from kapstan.api.wellknown import NODECLAIM_ANNOTATION
from kapstan.capi import (
    CreateError,
    LaunchBlocked,
    LaunchRequest,
    MachineRef,
    PreflightHold,
    RollingOut,
)
from kapstan.capi import contract as c
from kapstan.capi.cache import ManagementCache
from kapstan.capi.machinedeployments import MachineDeploymentProvider
from kapstan.kube.client import Object, Resource
from kapstan.kube.errors import ApiError


def _scale_writes(api: FakeApi) -> list[Any]:
    return [patch for plural, _, subresource, patch in api.patches if subresource == "scale"]


def test_scale_down_is_refused_while_the_md_rolls_out() -> None:
    api = FakeApi(replicas=1, machines=["m0"])
    api.md["status"]["conditions"] = [{"type": "RollingOut", "status": "True"}]
    with pytest.raises(RollingOut, match="deleting Machine ns/m0: MachineDeployment ns/pool is rolling out"):
        asyncio.run(provider_of(api).delete(MachineRef("ns", "m0")))
    assert api.patches == []


def test_a_delete_retried_after_marking_lowers_replicas_once() -> None:
    api = FakeApi(replicas=2, machines=["m0", "m1"])
    api.objects["machines", "m0"]["metadata"]["annotations"] = {c.DELETE_MACHINE_ANNOTATION: "true"}
    provider = provider_of(api)
    asyncio.run(provider.delete(MachineRef("ns", "m0")))
    assert api.md["spec"]["replicas"] == 1
    asyncio.run(provider.delete(MachineRef("ns", "m0")))
    assert api.md["spec"]["replicas"] == 1
    assert [p[:3] for p in api.patches] == [("machinedeployments", "pool", "scale")]


def test_a_lost_race_on_replicas_is_re_read_not_forced() -> None:
    api = FakeApi(replicas=0, machines=[])
    api.refuse_writes = 1
    launched = asyncio.run(provider_of(api).create(LaunchRequest("a", SOURCE)))
    assert launched.ref == MachineRef("ns", "pool-0"), "the other writer's Machine, found on the re-read"
    assert api.md["spec"]["replicas"] == 1, "not scaled again on top of the other writer's replica"
    assert len(_scale_writes(api)) == 1


def test_concurrent_creates_for_one_md_take_one_replica_each() -> None:
    api = FakeApi(replicas=0, machines=[])
    provider = provider_of(api)

    async def both() -> list[str]:
        launched = await asyncio.gather(*(provider.create(LaunchRequest(n, SOURCE)) for n in "abc"))
        return sorted(m.ref.name for m in launched)

    assert asyncio.run(both()) == ["pool-0", "pool-1", "pool-2"]
    assert api.md["spec"]["replicas"] == 3
    assert len(_scale_writes(api)) == 1, "three launches waiting together are one replicas increase"


def _staggered_launches(api: FakeApi, gather: float) -> int:
    """Five launches of one MD arriving 20 ms apart, as one plan's NodeClaims start theirs; the scale writes."""
    provider = provider_of(api, gather=gather)

    async def staggered() -> None:
        async def launch(i: int) -> None:
            await asyncio.sleep(0.02 * i)
            await provider.create(LaunchRequest(f"c{i}", SOURCE))

        await asyncio.gather(*(launch(i) for i in range(5)))

    asyncio.run(staggered())
    assert api.md["spec"]["replicas"] == 5
    return len(_scale_writes(api))


def test_an_idle_mds_first_round_gathers_the_launches_still_joining() -> None:
    assert _staggered_launches(FakeApi(replicas=0, machines=[]), gather=0.05) == 1, "one write of +5"
    assert _staggered_launches(FakeApi(replicas=0, machines=[]), gather=0.0) > 1, (
        "without gathering: +1, then more"
    )


def test_a_create_that_timed_out_is_retried_without_scaling_again() -> None:
    api = FakeApi(replicas=0, machines=[])
    api.stamp = False
    provider = provider_of(api)
    for _ in range(2):
        with pytest.raises(CreateError, match="launching nodeclaim a: no new Machine of ns/pool within 1s"):
            asyncio.run(provider.create(LaunchRequest("a", SOURCE)))
        assert api.md["spec"]["replicas"] == 1
    api.add_machine("late")
    launched = asyncio.run(provider.create(LaunchRequest("a", SOURCE)))
    assert (launched.ref.name, launched.nodeclaim) == ("late", "a")
    assert api.md["spec"]["replicas"] == 1


def test_a_create_waits_no_longer_than_the_request_allows() -> None:
    api = FakeApi(replicas=0, machines=[])
    api.stamp = False
    provider = MachineDeploymentProvider(
        api, ManagementCache(api, "ns", "c"), machine_timeout=60.0, poll_interval=0.01
    )  # type: ignore[arg-type]
    with pytest.raises(CreateError, match="within 0s"):
        asyncio.run(asyncio.wait_for(provider.create(LaunchRequest("a", SOURCE, wait=0.05)), 5.0))


def test_a_blocked_scale_up_fails_the_create_at_once_and_takes_its_replica_back() -> None:
    api = FakeApi(replicas=0, machines=[])
    api.stamp = False
    blocked = "Scaling up from 0 to 1 replicas is blocked because TestMachineTemplate does not exist"
    # CAPI sets the condition once it sees the new replicas; here it is there from the start.
    api.md["status"]["conditions"] = [{"type": "ScalingUp", "status": "True", "message": blocked}]
    with pytest.raises(LaunchBlocked, match="TestMachineTemplate does not exist"):
        asyncio.run(provider_of(api).create(LaunchRequest("a", SOURCE)))
    assert api.md["spec"]["replicas"] == 0  # blocked before scaling: nothing to take back
    api.md["status"]["conditions"] = []
    provider = provider_of(api)

    async def scale_then_block() -> None:
        creating = asyncio.ensure_future(provider.create(LaunchRequest("a", SOURCE)))
        while api.md["spec"]["replicas"] == 0:
            await asyncio.sleep(0.005)
        api.md["status"]["conditions"] = [{"type": "ScalingUp", "status": "True", "message": blocked}]
        await creating

    with pytest.raises(LaunchBlocked):
        asyncio.run(scale_then_block())
    assert api.md["spec"]["replicas"] == 0  # the replica it added is taken back


def _held_machine_set(api: FakeApi, observed: int) -> None:
    """The MD's MachineSet at generation 2, its ScalingUp condition as CAPI v1.14 words a preflight hold,
    written when it had seen generation ``observed``."""
    held = (
        "Scaling up from 0 to 1 replicas is blocked because:\n* TestControlPlane ns/c is upgrading "
        '("ControlPlaneIsStable" preflight check failed)'
    )
    condition = {"type": "ScalingUp", "status": "True", "message": held, "observedGeneration": observed}
    api.objects["machinesets", "pool-x"] = {
        "kind": "MachineSet",
        "metadata": {"name": "pool-x", "namespace": "ns", "generation": 2},
        "status": {"conditions": [condition]},
    }


def test_a_preflight_hold_fails_the_create_at_once_and_takes_its_replica_back() -> None:
    api = FakeApi(replicas=0, machines=[])
    api.stamp = False  # the MachineSet creates nothing while its preflight checks fail
    provider = provider_of(api)

    async def scale_then_hold() -> None:
        creating = asyncio.ensure_future(provider.create(LaunchRequest("a", SOURCE)))
        while api.md["spec"]["replicas"] == 0:
            await asyncio.sleep(0.005)
        _held_machine_set(api, observed=2)
        await creating

    with pytest.raises(PreflightHold) as raised:
        asyncio.run(scale_then_hold())
    assert str(raised.value).startswith(
        "launching nodeclaim a: MachineDeployment ns/pool: MachineSet ns/pool-x: Scaling up from 0 to 1 "
        'replicas is blocked because: * TestControlPlane ns/c is upgrading ("ControlPlaneIsStable" '
        "preflight check failed) (CAPI's MachineSet preflight checks; the "
        "machineset.cluster.x-k8s.io/skip-preflight-checks annotation on the MD skips them)"
    )
    assert isinstance(raised.value, LaunchBlocked), "a hold is a blocked launch: the next offering is tried"
    assert api.md["spec"]["replicas"] == 0, "the replica it added is taken back"
    assert len(_scale_writes(api)) == 2


def test_a_hold_written_before_the_machineset_saw_its_spec_is_not_taken() -> None:
    api = FakeApi(replicas=0, machines=[])
    api.stamp = False
    _held_machine_set(api, observed=1)  # from an earlier scale-up: the MachineSet has not looked again
    with pytest.raises(CreateError, match="no new Machine of ns/pool within 1s"):
        asyncio.run(provider_of(api).create(LaunchRequest("a", SOURCE)))
    assert api.md["spec"]["replicas"] == 1, "still waiting for its Machine, as any slow MachineSet"


def test_a_credential_that_may_not_list_machinesets_launches_as_before() -> None:
    api = FakeApi(replicas=0, machines=[])
    api.stamp = False
    listing = api.request

    forbidden_lists = 0

    async def forbidden(method: str, resource: Resource, **kwargs: Any) -> Object:
        nonlocal forbidden_lists
        if resource.plural == "machinesets":
            forbidden_lists += 1
            raise ApiError("GET machinesets: forbidden", status=403)
        return await listing(method, resource, **kwargs)

    api.request = forbidden  # type: ignore[method-assign]
    provider = provider_of(api)
    for nodeclaim in "ab":
        with pytest.raises(CreateError, match="no new Machine of ns/pool within 1s"):
            asyncio.run(provider.create(LaunchRequest(nodeclaim, SOURCE)))
    assert forbidden_lists == 1, "asked once: each 403 makes kr8s reload the credentials"


def test_trim_takes_back_only_the_replicas_above_the_live_machines() -> None:
    api = FakeApi(replicas=3, machines=["m0"])
    api.objects["machines", "m1"] = copy.deepcopy(api.objects["machines", "m0"])
    api.objects["machines", "m1"]["metadata"].update(name="m1", deletionTimestamp="2026-01-01T00:00:00Z")
    provider = provider_of(api)
    assert asyncio.run(provider.trim("ns", "pool")) == 2
    assert api.md["spec"]["replicas"] == 1
    assert asyncio.run(provider.trim("ns", "pool")) == 0
    api.md["status"]["conditions"] = [{"type": "RollingOut", "status": "True"}]
    api.md["spec"]["replicas"] = 2
    with pytest.raises(RollingOut):
        asyncio.run(provider.trim("ns", "pool"))
    assert api.md["spec"]["replicas"] == 2


def test_launches_beyond_the_max_size_fail_and_the_rest_scale_in_one_write() -> None:
    api = FakeApi(replicas=1, machines=["m0"])
    api.objects["machines", "m0"]["metadata"]["annotations"] = {NODECLAIM_ANNOTATION: "old"}
    api.md["metadata"]["annotations"] = {c.MAX_SIZE_ANNOTATION: "3"}
    provider = provider_of(api)

    async def four() -> list[object]:
        creates = (provider.create(LaunchRequest(n, SOURCE)) for n in "abcd")
        return await asyncio.gather(*creates, return_exceptions=True)

    results = asyncio.run(four())
    assert [type(r).__name__ for r in results] == [
        "LaunchedMachine",
        "LaunchedMachine",
        "InsufficientCapacity",
        "InsufficientCapacity",
    ]
    assert str(results[2]) == "launching nodeclaim c: MachineDeployment ns/pool is at its max size 3"
    assert api.md["spec"]["replicas"] == 3
    assert len(_scale_writes(api)) == 1


def test_a_round_failure_reaches_every_waiter_in_its_own_words() -> None:
    api = FakeApi(replicas=0, machines=[])
    api.md["metadata"]["annotations"] = {c.PAUSED_ANNOTATION: "true"}
    provider = provider_of(api)

    async def both() -> list[object]:
        creates = (provider.create(LaunchRequest(n, SOURCE)) for n in "ab")
        return await asyncio.gather(*creates, return_exceptions=True)

    assert [str(r) for r in asyncio.run(both())] == [
        "launching nodeclaim a: MachineDeployment ns/pool is paused",
        "launching nodeclaim b: MachineDeployment ns/pool is paused",
    ]
    assert api.patches == []


def test_a_blocked_md_takes_back_only_the_replicas_its_rounds_added() -> None:
    api = FakeApi(replicas=2, machines=["m0"])  # one replica on its way from someone else
    api.objects["machines", "m0"]["metadata"]["annotations"] = {NODECLAIM_ANNOTATION: "old"}
    api.stamp = False
    provider = provider_of(api)
    blocked = "Scaling up from 2 to 4 replicas is blocked because TestMachineTemplate does not exist"

    async def scale_then_block() -> list[object]:
        creates = [asyncio.ensure_future(provider.create(LaunchRequest(n, SOURCE))) for n in "abc"]
        while api.md["spec"]["replicas"] == 2:
            await asyncio.sleep(0.005)
        api.md["status"]["conditions"] = [{"type": "ScalingUp", "status": "True", "message": blocked}]
        return await asyncio.gather(*creates, return_exceptions=True)

    results = asyncio.run(scale_then_block())
    assert [type(r).__name__ for r in results] == ["LaunchBlocked"] * 3
    assert [len(_scale_writes(api)), api.md["spec"]["replicas"]] == [2, 2], "+2 for b and c, then -2"


def test_a_delete_waits_for_the_machines_a_launch_scaled_for() -> None:
    """A claim terminates while a launch on its MD waits for its new Machine: lowering replicas before
    that Machine exists would make the MachineSet drop it instead of the one marked for deletion."""
    api = FakeApi(replicas=1, machines=["m0"])
    api.objects["machines", "m0"]["metadata"]["annotations"] = {NODECLAIM_ANNOTATION: "old"}
    api.stamp = False  # the MachineSet is slow
    provider = provider_of(api)

    async def race() -> tuple[int, int, str]:
        launch = asyncio.ensure_future(provider.create(LaunchRequest("new", SOURCE)))
        while api.md["spec"]["replicas"] < 2:
            await asyncio.sleep(0.01)
        delete = asyncio.ensure_future(provider.delete(MachineRef("ns", "m0")))
        await asyncio.sleep(0.2)
        replicas_before_stamp = api.md["spec"]["replicas"]
        api.add_machine("pool-1")
        launched = await launch
        await delete
        return replicas_before_stamp, api.md["spec"]["replicas"], launched.ref.name

    before, after, machine = asyncio.run(race())
    assert before == 2, "replicas not lowered while the launch's Machine was still to come"
    assert (after, machine) == (1, "pool-1")


def test_a_cancelled_launch_leaves_the_others_waiting_on_its_md_served() -> None:
    api = FakeApi(replicas=0, machines=[])
    api.stamp = False
    provider = provider_of(api)

    async def cancel_one() -> tuple[bool, str]:
        a = asyncio.ensure_future(provider.create(LaunchRequest("a", SOURCE)))
        b = asyncio.ensure_future(provider.create(LaunchRequest("b", SOURCE)))
        while api.md["spec"]["replicas"] < 2:
            await asyncio.sleep(0.005)
        a.cancel()
        api.add_machine("pool-0")
        api.add_machine("pool-1")
        launched = await b
        return a.cancelled(), launched.nodeclaim

    assert asyncio.run(cancel_one()) == (True, "b")
    assert api.md["spec"]["replicas"] == 2 and len(_scale_writes(api)) == 1


def _before_the_machines_patch(api: FakeApi, change: Any) -> None:
    """Run ``change(machine)`` once, just before the first patch of Machine m0: another writer between the
    provider's read and its write."""
    patch = api.patch
    pending = [change]

    async def racing(resource: Resource, name: str, body: Any, **kwargs: Any) -> Object:
        if resource.plural == "machines" and name == "m0" and pending:
            pending.pop()(api.objects["machines", "m0"])
        return await patch(resource, name, body, **kwargs)

    api.patch = racing  # type: ignore[method-assign]


def _machine_patches(api: FakeApi) -> list[Any]:
    return [body for plural, name, _, body in api.patches if (plural, name) == ("machines", "m0")]


def test_a_status_write_since_the_read_does_not_refuse_marking_a_stray() -> None:
    api = FakeApi(replicas=1, machines=["m0"])
    api.objects["machines", "m0"]["metadata"]["annotations"] = {}
    _before_the_machines_patch(api, bump)  # CAPI's status write: only the resourceVersion moves
    asyncio.run(provider_of(api).delete(MachineRef("ns", "m0"), claimed_by=""))
    assert c.annotations_of(api.objects["machines", "m0"]) == {c.DELETE_MACHINE_ANNOTATION: "true"}
    assert len(_machine_patches(api)) == 1, "marked at the first try"
    assert api.md["spec"]["replicas"] == 0


def test_a_claim_since_the_read_refuses_marking_the_stray_and_it_stays() -> None:
    api = FakeApi(replicas=1, machines=["m0"])
    api.objects["machines", "m0"]["metadata"]["annotations"] = {}

    def claimed(machine: Object) -> None:
        machine["metadata"]["annotations"][NODECLAIM_ANNOTATION] = "default-x"
        bump(machine)

    _before_the_machines_patch(api, claimed)
    asyncio.run(provider_of(api).delete(MachineRef("ns", "m0"), claimed_by=""))
    assert c.annotations_of(api.objects["machines", "m0"]) == {NODECLAIM_ANNOTATION: "default-x"}
    assert api.md["spec"]["replicas"] == 1, "no longer a stray: kept"
