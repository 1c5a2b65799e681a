"""Crashes and failovers: a killed operator leaves no extra Machine, and a standby takes over."""

from __future__ import annotations

import time

import pytest
from e2e_helpers import E2E

from kapstan.capi import contract as c
from kapstan.local import article
from kapstan.local.apply import apply

pytestmark = pytest.mark.sandbox


def test_a_restart_after_sigkill_mid_launch_adds_no_machine_and_completes_the_claim(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    # The Machine boots 8 s after it is created, so the kill lands after scaling and before registration.
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"pool": "c3-8"}, boot_delay_seconds=8),
            [article.deployment("inflate", ns, run.id, 1, "1")],
        )
    )
    first = run.start_operator()

    async def scaled() -> bool:
        md = await run.clients[1].get(c.MACHINEDEPLOYMENTS, "pool", ns)
        return c.replicas(md) >= 1

    e2e(run.wait_for("the MD scaled up", scaled, 120))
    first.kill()
    claims_before = e2e(run.claims())
    assert len(claims_before) == 1
    assert not any(
        cond["type"] == "Registered" for cond in claims_before[0].get("status", {}).get("conditions", [])
    )
    run.start_operator()

    async def running() -> bool:
        return await run.running_pods("inflate") == 1

    e2e(run.wait_for("the pod Running after the restart", running, 180))

    async def initialized() -> bool:
        return await run.initialized_claims() == 1

    e2e(run.wait_for("the claim Launched, Registered and Initialized", initialized, 60))
    claims = e2e(run.claims())
    assert [claim["metadata"]["name"] for claim in claims] == [claims_before[0]["metadata"]["name"]]
    assert len(e2e(run.machines())) == 1
    assert c.replicas(e2e(run.clients[1].get(c.MACHINEDEPLOYMENTS, "pool", ns))) == 1


def test_only_the_leader_acts_and_a_standby_takes_over_within_20s(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    e2e(run.setup(article.standalone(ns, run.cluster, {"pool": "c3-8"}), []))
    one, two = run.start_operator(), run.start_operator()
    holder = e2e(run.wait_for("a leader", run.lease_holder, 60))
    leader, standby = (one, two) if run.identities[holder] == one.name else (two, one)

    e2e(apply(run.clients[0], [article.deployment("first", ns, run.id, 1, "1")]))

    async def first_running() -> bool:
        return await run.running_pods("first") == 1

    e2e(run.wait_for("the first pod Running", first_running, 180))
    assert "created nodeclaim" in leader.log(400)
    assert "created nodeclaim" not in standby.log(400)

    leader.kill()
    killed = time.monotonic()

    async def standby_leads() -> bool:
        return run.identities.get(await run.lease_holder()) == standby.name

    e2e(run.wait_for("the standby to take the Lease", standby_leads, 30))
    assert time.monotonic() - killed < 20.0
    e2e(apply(run.clients[0], [article.deployment("second", ns, run.id, 1, "3500m")]))

    async def second_running() -> bool:
        return await run.running_pods("second") == 1

    e2e(run.wait_for("the second pod Running under the new leader", second_running, 180))
    assert "created nodeclaim" in standby.log(400)
