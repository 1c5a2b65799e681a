"""Disruption on the sandbox: empty nodes leave and their MD goes back to 0, exactly the empty Machine is
removed, under-used nodes are consolidated within a PodDisruptionBudget, one large node is replaced by two
cheaper ones, and blocks hold."""

from __future__ import annotations

import time
import urllib.request
from typing import Any

import pytest
from e2e_helpers import E2E

from kapstan.capi import contract as c
from kapstan.kube.client import Resource
from kapstan.kube.kinds import PODS
from kapstan.local import article
from kapstan.local.run import KapstanRun

pytestmark = pytest.mark.sandbox

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")


async def _pods(run: KapstanRun, app: str) -> list[dict[str, Any]]:
    wl, _ = run.clients
    found = await wl.request("GET", PODS, namespace=run.namespace, params={"labelSelector": f"app={app}"})
    return [p for p in found.get("items", []) if not p["metadata"].get("deletionTimestamp")]


async def _replicas(run: KapstanRun, md: str) -> int:
    return c.replicas(await run.clients[1].get(c.MACHINEDEPLOYMENTS, md, run.namespace))


def _spread(deployment: dict[str, Any], group: str) -> dict[str, Any]:
    """One pod per node across every deployment of ``group`` (required anti-affinity on a shared label)."""
    template = deployment["spec"]["template"]
    template["metadata"]["labels"]["group"] = group
    template["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"group": group}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    return deployment


def _metrics(run: KapstanRun) -> str:
    port = run.operators[-1].metrics_port
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as scraped:
        return str(scraped.read().decode())


def test_scale_to_zero_deleting_inflate_empties_the_md_within_90s(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    md = "capi-ovh-karpenter"
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {md: "c3-4"}, tainted=False),
            [
                article.node_agent(ns, run.id),
                article.deployment("inflate", ns, run.id, 2, "500m", anti_affinity=True),
            ],
        )
    )
    run.start_operator()

    async def both_running() -> bool:
        return await run.running_pods("inflate") == 2

    e2e(run.wait_for("both inflate pods Running", both_running, 180))
    assert e2e(_replicas(run, md)) == 2
    e2e(run.clients[0].delete(DEPLOYMENTS, "inflate", ns))
    deleted = time.monotonic()

    async def gone() -> bool:
        return not await run.claims() and not await run.machines() and await _replicas(run, md) == 0

    e2e(run.wait_for("the NodeClaims, the Machines and the MD's replicas gone", gone, 120))
    elapsed = time.monotonic() - deleted
    print(f"scale to zero: {elapsed:.1f}s from deleting inflate to MD at 0")
    assert elapsed < 90.0
    assert f'karpenter_nodeclaims_disrupted_total{{nodepool="{run.pool}",reason="empty"}} 2.0' in _metrics(
        run
    )
    assert "disrupting via empty delete: removing" in run.operators[0].log(400)


def test_exactly_the_empty_machine_is_deleted_and_the_others_keep_their_nodes(e2e: E2E) -> None:
    run = e2e.run
    ns = run.namespace
    md = "pool"
    apps = ("keep-a", "empty-b", "keep-c")
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {md: "c3-4"}),
            [_spread(article.deployment(app, ns, run.id, 1, "500m"), "one-per-node") for app in apps],
        )
    )
    run.start_operator()

    async def all_running() -> bool:
        return all([await run.running_pods(app) == 1 for app in apps])

    e2e(run.wait_for("three pods Running on three nodes", all_running, 180))
    placed = {app: e2e(_pods(run, app))[0]["spec"]["nodeName"] for app in apps}
    assert len(set(placed.values())) == 3
    machines = {m["status"]["nodeRef"]["name"]: c.name(m) for m in e2e(run.machines())}
    assert set(machines) == set(placed.values())
    emptied = machines[placed["empty-b"]]
    e2e(run.clients[0].delete(DEPLOYMENTS, "empty-b", ns))

    async def removed() -> bool:
        names = {c.name(m) for m in await run.machines()}
        return emptied not in names and await _replicas(run, md) == 2

    e2e(run.wait_for("the empty Machine removed and the MD at 2", removed, 150))
    left = {c.name(m): m for m in e2e(run.machines())}
    assert set(left) == {machines[placed["keep-a"]], machines[placed["keep-c"]]}
    assert all(not c.being_deleted(m) for m in left.values())
    for app in ("keep-a", "keep-c"):
        pods = e2e(_pods(run, app))
        assert [p["spec"]["nodeName"] for p in pods] == [placed[app]]
        assert pods[0]["status"]["phase"] == "Running"
    assert len(e2e(run.claims())) == 2
