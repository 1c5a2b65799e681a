"""Consolidation on the sandbox: under-used nodes are consolidated within a PodDisruptionBudget, one large
node is replaced by two cheaper ones, and an operator killed in the middle of a replace leaves no orphan
and its successor finishes or rolls back the command."""

from __future__ import annotations

import pytest
from disruption_e2e_kit import (
    DEPLOYMENTS,
    UNDERUTILIZED,
    ReadyWatch,
    live_pods,
    md_replicas,
    pdb,
    priced,
    scrape_metrics,
)
from e2e_helpers import E2E

from kapstan.api.wellknown import DISRUPTION_COMMAND_ANNOTATION, DISRUPTION_REPLACEMENT_ANNOTATION
from kapstan.capi import contract as c
from kapstan.kube.client import Object
from kapstan.kube.kinds import NODES
from kapstan.local import article
from kapstan.local.apply import apply
from kapstan.local.operator import OperatorProcess

pytestmark = pytest.mark.sandbox


def test_four_half_used_nodes_become_two_without_breaking_the_pdb(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    # "big" puts one 2-CPU pod on each of four c3-8 nodes; "web" then takes the other half of each.
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"pool": "c3-8"}),
            [article.deployment("big", ns, run.id, 4, "2", anti_affinity=True)],
            disruption=UNDERUTILIZED,
        )
    )
    run.start_operator()

    async def big_running() -> bool:
        return await run.running_pods("big") == 4

    e2e(run.wait_for("four big pods Running", big_running, 180))
    e2e(apply(run.clients[0], [pdb("web", ns, "web", 3), article.deployment("web", ns, run.id, 4, "1500m")]))

    async def web_running() -> bool:
        return await run.running_pods("web") == 4

    e2e(run.wait_for("four web pods Running", web_running, 120))
    assert len({p["spec"]["nodeName"] for p in e2e(live_pods(run, "web"))}) == 4
    watch = ReadyWatch(run, "web")
    e2e(watch.start())
    e2e(run.clients[0].delete(DEPLOYMENTS, "big", ns))

    async def two_nodes() -> bool:
        claims = await run.claims()
        return len(claims) == 2 and len(await run.machines()) == 2 and await md_replicas(run, "pool") == 2

    try:
        e2e(run.wait_for("two nodes left", two_nodes, 300))
        e2e(run.wait_for("four web pods Running", web_running, 60))
    finally:
        e2e(watch.stop())
    assert watch.fewest is not None and watch.fewest >= 3
    assert len({p["spec"]["nodeName"] for p in e2e(live_pods(run, "web"))}) == 2
    exposition = scrape_metrics(run)
    assert (
        f'karpenter_nodeclaims_disrupted_total{{nodepool="{run.pool}",reason="underutilized"}} 2.0'
        in exposition
    )
    assert "disrupting via underutilized delete: removing" in run.operators[0].log(600)


def _app_on_one_large_node(e2e: E2E) -> tuple[OperatorProcess, Object]:
    """Two 3-CPU ``app`` pods Running on one c3-16 (MD ``large``, 0.5/h) of an underutilized NodePool: the
    operator that put them there and the c3-16's NodeClaim."""
    run = e2e.run
    e2e(
        run.setup(
            priced(article.standalone(run.namespace, run.cluster, {"large": "c3-16"}), "0.5"),
            [article.deployment("app", run.namespace, run.id, 2, "3")],
            disruption=UNDERUTILIZED,
        )
    )
    operator = run.start_operator()

    async def running() -> bool:
        return await run.running_pods("app") == 2

    e2e(run.wait_for("both app pods Running on the c3-16", running, 180))
    [large] = e2e(run.claims())
    return operator, large


def test_one_large_node_is_replaced_by_two_cheaper_small_ones(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    _, large = _app_on_one_large_node(e2e)
    assert large["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "c3-16"
    # A cheaper flavor appears: two c3-8 at 0.2/h hold both pods for less than one c3-16 at 0.5/h.
    e2e(apply(run.clients[1], priced(article.flavor_pool("small", ns, run.cluster, "c3-8"), "0.2")))

    async def replaced() -> bool:
        claims = await run.claims()
        flavors = sorted(c["metadata"]["labels"]["node.kubernetes.io/instance-type"] for c in claims)
        return flavors == ["c3-8", "c3-8"] and await run.running_pods("app") == 2

    e2e(run.wait_for("the c3-16 replaced by two c3-8", replaced, 300))

    async def settled() -> bool:
        claims = await run.claims()
        if any(
            DISRUPTION_REPLACEMENT_ANNOTATION in (cl["metadata"].get("annotations") or {}) for cl in claims
        ):
            return False  # the command is complete once its replacements are ordinary NodeClaims
        return (
            await md_replicas(run, "large") == 0
            and await md_replicas(run, "small") == 2
            and len(await run.machines()) == 2
        )

    e2e(run.wait_for("the MDs at the Machines they should have", settled, 60))
    machines = e2e(run.machines())
    assert sorted(c.labels_of(m)[c.DEPLOYMENT_NAME_LABEL] for m in machines) == ["small", "small"]
    claims = {cl["status"]["nodeName"] for cl in e2e(run.claims())}
    assert {p["spec"]["nodeName"] for p in e2e(live_pods(run, "app"))} == claims
    log = run.operators[0].log(600)
    assert "disrupting via underutilized replace: removing" in log
    assert "replacing with c3-8 (0.2/h), c3-8 (0.2/h) (0.4/h); saving 0.1/h" in log
    exposition = scrape_metrics(run)
    assert (
        f'karpenter_nodeclaims_disrupted_total{{nodepool="{run.pool}",reason="underutilized"}} 1.0'
        in exposition
    )
    assert (
        f'karpenter_nodeclaims_created_total{{nodepool="{run.pool}",reason="underutilized"}} 2.0'
        in exposition
    )


def test_a_restart_in_the_middle_of_a_replace_leaves_no_orphan_and_finishes_or_rolls_back(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    first, large = _app_on_one_large_node(e2e)
    # The replacements boot 20 s after their Machines appear: the kill lands while the replace waits.
    small = article.flavor_pool("small", ns, run.cluster, "c3-8", boot_delay_seconds=20)
    e2e(apply(run.clients[1], priced(small, "0.2")))

    async def replacing() -> bool:
        claims = await run.claims()
        recorded = any(
            DISRUPTION_COMMAND_ANNOTATION in (cl["metadata"].get("annotations") or {}) for cl in claims
        )
        return recorded and len(claims) == 3 and len(await run.machines()) >= 2

    e2e(run.wait_for("the replace under way", replacing, 180))
    first.kill()
    run.start_operator()

    async def settled() -> bool:
        claims = await run.claims()
        if any(DISRUPTION_COMMAND_ANNOTATION in (cl["metadata"].get("annotations") or {}) for cl in claims):
            return False
        if any(cl["metadata"].get("deletionTimestamp") for cl in claims):
            return False
        if any(
            DISRUPTION_REPLACEMENT_ANNOTATION in (cl["metadata"].get("annotations") or {}) for cl in claims
        ):
            return False
        machines = await run.machines()
        return len(machines) == len(claims) and await run.running_pods("app") == 2

    e2e(run.wait_for("the command finished or rolled back", settled, 300))
    claims = {cl["metadata"]["name"]: cl for cl in e2e(run.claims())}
    flavors = sorted(cl["metadata"]["labels"]["node.kubernetes.io/instance-type"] for cl in claims.values())
    machines = e2e(run.machines())
    # No orphan: every Machine belongs to a live NodeClaim, and each NodeClaim has exactly one Machine.
    owners = [c.annotations_of(m).get("kapstan.io/nodeclaim") for m in machines]
    assert sorted(owners) == sorted(claims)  # type: ignore[type-var]
    for md in ("large", "small"):
        live = [m for m in machines if c.labels_of(m)[c.DEPLOYMENT_NAME_LABEL] == md]
        assert e2e(md_replicas(run, md)) == len(live)
    if flavors == ["c3-16"]:  # rolled back: the large node is back in service, untainted
        assert large["metadata"]["name"] in claims
        node = e2e(run.clients[0].get(NODES, claims[large["metadata"]["name"]]["status"]["nodeName"]))
        assert all(t["key"] != "karpenter.sh/disrupted" for t in node["spec"].get("taints") or [])
    else:  # completed
        assert flavors == ["c3-8", "c3-8"]
        assert large["metadata"]["name"] not in claims
    assert all(
        DISRUPTION_REPLACEMENT_ANNOTATION not in (cl["metadata"].get("annotations") or {})
        for cl in claims.values()
    )
