"""Claiming a free Machine for a NodeClaim on an in-memory API: the claim is a JSON patch that tests what
it relies on, so writes of unrelated fields since the read do not refuse it and a second claimer, a
deletion mark or a deletion since the read do."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from capi.md_fake_api import SOURCE, FakeApi, bump, provider_of
from kapstan.api.wellknown import NODECLAIM_ANNOTATION
from kapstan.capi import LaunchRequest, launches
from kapstan.capi import contract as c
from kapstan.capi.mdapi import MachineDeploymentApi
from kapstan.kube.client import Client, Object, Resource


def _api(fake: FakeApi) -> MachineDeploymentApi:
    client: Client = fake  # type: ignore[assignment]  # duck-typed stand-in
    return MachineDeploymentApi(client, entry_timeout=1.0, poll_interval=0.01)


def test_a_status_write_since_the_read_does_not_fail_a_claim() -> None:
    api = FakeApi(replicas=1, machines=["m0"])
    read = copy.deepcopy(api.objects["machines", "m0"])
    bump(api.objects["machines", "m0"])  # CAPI wrote the Machine's status after kapstan read it
    claimed = asyncio.run(_api(api).claim(read, "a"))
    assert claimed is not None and claimed.nodeclaim == "a"
    assert c.annotations_of(api.objects["machines", "m0"]) == {NODECLAIM_ANNOTATION: "a"}


def test_two_claimers_of_one_machine_never_both_get_it() -> None:
    # A Machine with no annotations (the API server omits an empty map) and one with some.
    for existing in ({}, {"cluster.x-k8s.io/cloned-from-name": "t"}):
        api = FakeApi(replicas=1, machines=["m0"])
        if existing:
            api.objects["machines", "m0"]["metadata"]["annotations"] = dict(existing)
        read = copy.deepcopy(api.objects["machines", "m0"])

        async def both(read: Object = read, api: FakeApi = api) -> list[object]:
            return list(await asyncio.gather(_api(api).claim(read, "a"), _api(api).claim(read, "b")))

        won = [m for m in asyncio.run(both()) if m is not None]
        assert len(won) == 1, won
        assert c.annotations_of(api.objects["machines", "m0"]) == {**existing, NODECLAIM_ANNOTATION: "a"}


def test_a_machine_marked_for_deletion_or_deleting_since_the_read_is_not_claimed() -> None:
    for mark in (
        {"annotations": {c.DELETE_MACHINE_ANNOTATION: "true"}},
        {"deletionTimestamp": "2026-12-02T13:00:00Z"},
    ):
        api = FakeApi(replicas=1, machines=["m0"])
        api.objects["machines", "m0"]["metadata"]["annotations"] = {"other": "x"}
        read = copy.deepcopy(api.objects["machines", "m0"])
        api.objects["machines", "m0"]["metadata"].update(copy.deepcopy(mark))
        bump(api.objects["machines", "m0"])
        assert asyncio.run(_api(api).claim(read, "a")) is None
        assert NODECLAIM_ANNOTATION not in c.annotations_of(api.objects["machines", "m0"])


def test_a_round_claims_its_free_machines_in_parallel() -> None:
    api = FakeApi(
        replicas=launches.CLAIMS_AT_ONCE, machines=[f"m{i}" for i in range(launches.CLAIMS_AT_ONCE)]
    )
    in_flight, most = [0], [0]
    patch = api.patch

    async def slow_patch(resource: Resource, name: str, body: Any, **kwargs: Any) -> Object:
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        await asyncio.sleep(0.01)
        try:
            return await patch(resource, name, body, **kwargs)
        finally:
            in_flight[0] -= 1

    api.patch = slow_patch  # type: ignore[method-assign]
    provider = provider_of(api)
    names = [f"claim-{i}" for i in range(launches.CLAIMS_AT_ONCE + 2)]

    async def launch_all() -> list[str]:
        return [
            m.nodeclaim
            for m in await asyncio.gather(*(provider.create(LaunchRequest(n, SOURCE)) for n in names))
        ]

    assert sorted(asyncio.run(launch_all())) == sorted(names)
    assert most[0] == launches.CLAIMS_AT_ONCE, "the claims of one round go out together, bounded"
    owners = [
        c.annotations_of(o).get(NODECLAIM_ANNOTATION)
        for (kind, _), o in api.objects.items()
        if kind == "machines"
    ]
    assert sorted(owners) == sorted(names), "each Machine claimed by exactly one launch"
