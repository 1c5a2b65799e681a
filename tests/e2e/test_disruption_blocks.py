"""What holds disruption on the sandbox: a do-not-disrupt pod keeps its node while the other node goes,
and a budget of 0 blocks, a scheduled one only inside its window."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from disruption_e2e_kit import DEPLOYMENTS, UNDERUTILIZED, live_pods, one_per_node
from e2e_helpers import E2E

from kapstan.kube.events import list_events
from kapstan.kube.kinds import NODECLAIMS, NODEPOOLS
from kapstan.local import article
from kapstan.local.apply import apply

pytestmark = pytest.mark.sandbox


def test_a_do_not_disrupt_pod_keeps_its_node_and_the_other_node_goes(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    held = article.deployment("held", ns, run.id, 1, "600m")
    held["spec"]["template"]["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    # "held" and "filler" share one c3-4; "free" then needs a second one.
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"pool": "c3-4"}),
            [held, article.deployment("filler", ns, run.id, 1, "1200m")],
            disruption={**UNDERUTILIZED, "budgets": [{"nodes": "100%"}]},
        )
    )
    run.start_operator()

    async def first_running() -> bool:
        return await run.running_pods("held") == 1 and await run.running_pods("filler") == 1

    e2e(run.wait_for("held and filler Running", first_running, 180))
    [held_pod] = e2e(live_pods(run, "held"))
    e2e(apply(run.clients[0], [article.deployment("free", ns, run.id, 1, "600m")]))

    async def free_running() -> bool:
        return await run.running_pods("free") == 1

    e2e(run.wait_for("free Running", free_running, 120))
    [free_pod] = e2e(live_pods(run, "free"))
    assert free_pod["spec"]["nodeName"] != held_pod["spec"]["nodeName"]
    # Both nodes now hold one small pod: either could go, but the held one's node may not.
    e2e(run.clients[0].delete(DEPLOYMENTS, "filler", ns))

    async def one_node() -> bool:
        return len(await run.claims()) == 1 and await run.running_pods("free") == 1

    e2e(run.wait_for("one node left", one_node, 180))
    [claim] = e2e(run.claims())
    assert claim["status"]["nodeName"] == held_pod["spec"]["nodeName"]
    [still] = e2e(live_pods(run, "held"))
    assert still["metadata"]["uid"] == held_pod["metadata"]["uid"]
    assert [p["spec"]["nodeName"] for p in e2e(live_pods(run, "free"))] == [held_pod["spec"]["nodeName"]]


def test_a_zero_budget_blocks_and_a_scheduled_one_only_inside_its_window(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    apps = ("stay", "leave")
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"pool": "c3-4"}),
            [one_per_node(article.deployment(app, ns, run.id, 1, "500m"), "spread") for app in apps],
            disruption={
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "5s",
                "budgets": [{"nodes": "0"}],
            },
        )
    )
    run.start_operator()

    async def running() -> bool:
        return all([await run.running_pods(app) == 1 for app in apps])

    e2e(run.wait_for("both pods Running", running, 180))
    [leaving_pod] = e2e(live_pods(run, "leave"))
    e2e(run.clients[0].delete(DEPLOYMENTS, "leave", ns))
    empty = next(
        cl for cl in e2e(run.claims()) if cl["status"]["nodeName"] == leaving_pod["spec"]["nodeName"]
    )

    async def consolidatable() -> bool:
        claim = await run.clients[0].get(NODECLAIMS, empty["metadata"]["name"])
        return any(
            cond["type"] == "Consolidatable" and cond["status"] == "True"
            for cond in claim["status"].get("conditions") or []
        )

    e2e(run.wait_for("the empty node Consolidatable", consolidatable, 60))
    # Consolidatable, yet a budget of 0 keeps it through more than a validation delay and two passes.
    e2e(asyncio.sleep(30))
    claims = e2e(run.claims())
    assert len(claims) == 2 and not any(cl["metadata"].get("deletionTimestamp") for cl in claims)
    pool_events = e2e(list_events(run.clients[0], e2e(run.clients[0].get(NODEPOOLS, run.pool))))
    assert [e["message"] for e in pool_events if e["reason"] == "DisruptionBlocked"] == [
        "No allowed disruptions for reason Empty: blocked by the budgets"
    ]

    # Now 0 only inside a one-minute window (the CRD takes whole minutes) that opened this minute, set
    # while at least 40 s of it remain: without the window the node would go within ~25 s.
    now = datetime.now(UTC)
    if now.second > 20:
        e2e(asyncio.sleep(61 - now.second))
        now = datetime.now(UTC)
    opened = now.replace(second=0, microsecond=0)
    closes = opened + timedelta(minutes=1)
    window = {"nodes": "0", "schedule": f"{opened.minute} {opened.hour} * * *", "duration": "1m"}
    e2e(run.clients[0].patch(NODEPOOLS, run.pool, {"spec": {"disruption": {"budgets": [window]}}}))
    gone_at: list[datetime] = []

    async def deleted() -> bool:
        claims = await run.claims()
        if any(
            cl["metadata"]["name"] == empty["metadata"]["name"]
            and not cl["metadata"].get("deletionTimestamp")
            for cl in claims
        ):
            return False
        gone_at.append(datetime.now(UTC))
        return True

    e2e(run.wait_for("the empty node deleted after the window", deleted, 120))
    assert gone_at[0] >= closes

    async def one_left() -> bool:
        return len(await run.claims()) == 1

    e2e(run.wait_for("the deleted NodeClaim gone", one_left, 60))
    [kept] = e2e(run.claims())
    [stay] = e2e(live_pods(run, "stay"))
    assert kept["status"]["nodeName"] == stay["spec"]["nodeName"]
