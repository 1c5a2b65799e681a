"""Disruption on the sandbox, the nodes that go: empty nodes leave and their MD goes back to 0, exactly the
empty Machine is removed, and an expired node goes even when its drain is blocked, at the termination grace
period. Consolidation is in test_disruption_consolidation.py, what blocks disruption in
test_disruption_blocks.py, drift in test_disruption_drift.py."""

from __future__ import annotations

import time

import pytest
from disruption_e2e_kit import DEPLOYMENTS, live_pods, md_replicas, one_per_node, pdb, scrape_metrics
from e2e_helpers import E2E, inflate_running

from kapstan.capi import contract as c
from kapstan.kube.events import list_events
from kapstan.kube.kinds import NODEPOOLS
from kapstan.local import article
from kapstan.local.apply import apply

pytestmark = pytest.mark.sandbox


def test_scale_to_zero_deleting_inflate_empties_the_md_within_90s(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    md = "capi-ovh-karpenter"
    inflate_running(e2e, md)
    assert e2e(md_replicas(run, md)) == 2
    e2e(run.clients[0].delete(DEPLOYMENTS, "inflate", ns))
    deleted = time.monotonic()

    async def gone() -> bool:
        return not await run.claims() and not await run.machines() and await md_replicas(run, md) == 0

    e2e(run.wait_for("the NodeClaims, the Machines and the MD's replicas gone", gone, 120))
    elapsed = time.monotonic() - deleted
    print(f"scale to zero: {elapsed:.1f}s from deleting inflate to MD at 0")
    assert elapsed < 90.0
    disrupted = [
        line for line in scrape_metrics(run).splitlines() if line.startswith("karpenter_nodeclaims_disrupted")
    ]
    assert f'karpenter_nodeclaims_disrupted_total{{nodepool="{run.pool}",reason="empty"}} 2.0' in disrupted
    assert "disrupting via empty delete: removing" in run.operators[0].log(400)


def test_exactly_the_empty_machine_is_deleted_and_the_others_keep_their_nodes(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    md = "pool"
    apps = ("keep-a", "empty-b", "keep-c")
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {md: "c3-4"}),
            [one_per_node(article.deployment(app, ns, run.id, 1, "500m"), "one-per-node") for app in apps],
        )
    )
    run.start_operator()

    async def all_running() -> bool:
        return all([await run.running_pods(app) == 1 for app in apps])

    e2e(run.wait_for("three pods Running on three nodes", all_running, 180))
    placed = {app: e2e(live_pods(run, app))[0]["spec"]["nodeName"] for app in apps}
    assert len(set(placed.values())) == 3
    machines = {m["status"]["nodeRef"]["name"]: c.name(m) for m in e2e(run.machines())}
    assert set(machines) == set(placed.values())
    emptied = machines[placed["empty-b"]]
    claims_before = e2e(run.claims())
    e2e(run.clients[0].delete(DEPLOYMENTS, "empty-b", ns))

    async def removed() -> bool:
        names = {c.name(m) for m in await run.machines()}
        return emptied not in names and await md_replicas(run, md) == 2

    e2e(run.wait_for("the empty Machine removed and the MD at 2", removed, 150))
    left = {c.name(m): m for m in e2e(run.machines())}
    assert set(left) == {machines[placed["keep-a"]], machines[placed["keep-c"]]}
    assert all(not c.being_deleted(m) for m in left.values())
    for app in ("keep-a", "keep-c"):
        pods = e2e(live_pods(run, app))
        assert [p["spec"]["nodeName"] for p in pods] == [placed[app]]
        assert pods[0]["status"]["phase"] == "Running"
    assert len(e2e(run.claims())) == 2
    # The decision left its Event on the NodeClaim it removed.
    [removed_claim] = [cl for cl in claims_before if cl["status"]["nodeName"] == placed["empty-b"]]
    reasons = {event["reason"]: event["message"] for event in e2e(list_events(run.clients[0], removed_claim))}
    assert reasons["DisruptionTerminating"].startswith("Disrupting NodeClaim: Empty/Delete")


def test_an_expired_node_goes_and_a_blocked_drain_ends_at_the_termination_grace_period(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    e2e(run.setup(article.standalone(ns, run.cluster, {"pool": "c3-4"}), []))
    template = {"expireAfter": "1m", "terminationGracePeriod": "30s"}
    e2e(run.clients[0].patch(NODEPOOLS, run.pool, {"spec": {"template": {"spec": template}}}))
    # One replica under a PDB that allows no eviction, and one the drain must not evict at all
    # (do-not-disrupt): only the grace period can move them.
    held = article.deployment("held", ns, run.id, 1, "500m")
    held["spec"]["template"]["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    app = article.deployment("app", ns, run.id, 1, "500m")
    e2e(apply(run.clients[0], [pdb("app", ns, "app", 1), app, held]))
    run.start_operator()

    async def running() -> bool:
        return await run.running_pods("app") == 1 and await run.running_pods("held") == 1

    e2e(run.wait_for("the app and held pods Running", running, 180))
    [first] = e2e(run.claims())
    assert first["spec"]["expireAfter"] == "1m"
    [pod] = e2e(live_pods(run, "app"))
    [held_pod] = e2e(live_pods(run, "held"))

    async def expired() -> bool:
        claims = {cl["metadata"]["name"]: cl for cl in await run.claims()}
        return first["metadata"]["name"] not in claims or bool(
            claims[first["metadata"]["name"]]["metadata"].get("deletionTimestamp")
        )

    e2e(run.wait_for("the NodeClaim expired", expired, 120))

    async def moved() -> bool:
        for name, before in (("app", pod), ("held", held_pod)):
            pods = await live_pods(run, name)
            if not (
                len(pods) == 1
                and pods[0]["metadata"]["uid"] != before["metadata"]["uid"]
                and pods[0].get("status", {}).get("phase") == "Running"
            ):
                return False
        return True

    e2e(run.wait_for("both pods Running on a new node after the grace period", moved, 180))

    async def first_gone() -> bool:
        return first["metadata"]["name"] not in {cl["metadata"]["name"] for cl in await run.claims()}

    e2e(run.wait_for("the expired NodeClaim and its Machine gone", first_gone, 60))
    assert first["metadata"]["annotations"]["kapstan.io/machine"].split("/")[1] not in {
        c.name(m) for m in e2e(run.machines())
    }
    assert (
        f'karpenter_nodeclaims_disrupted_total{{nodepool="{run.pool}",reason="expired"}}'
        in scrape_metrics(run)
    )
    events = e2e(list_events(run.clients[0], pod))
    assert "EvictionBlocked" in {event["reason"] for event in events}
    assert "TerminationGracePeriodExpired" in {event["reason"] for event in events}
    held_events = {event["reason"] for event in e2e(list_events(run.clients[0], held_pod))}
    assert {"EvictionWaiting", "TerminationGracePeriodExpired"} <= held_events
    assert "EvictionBlocked" not in held_events  # never evicted: the PDB does not cover it
